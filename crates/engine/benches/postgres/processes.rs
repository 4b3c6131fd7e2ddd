//! Jobs per second with 1, 2 and 4 worker processes on one ledger, at a sandbox that answers at
//! once and at one taking 50 ms: the jobs are queued first, every process opens the ledger and
//! then all start together; the time runs until the ledger says every job is settled, and the
//! ledger is checked for each job sent once. At once, each process sends 32 at a time and the
//! ledger is the bound; at 50 ms, each sends 4 at a time, so the sandbox bounds one process
//! (80 jobs/s) and what more processes add shows whether they wait for each other. Each run's
//! ledger first holds a history of settled jobs with the planner's statistics, as a ledger in
//! use does; a new database's statistics say its tables are empty, and plans read them whole.

use std::path::Path;
use std::time::{Duration, Instant};

use onejob_engine::Engine;
use onejob_testkit::Postgres;
use serde_json::json;
use sqlx::{Connection, PgConnection};

use super::workers::{check_deadline, cpu_of, Worker};
use crate::common::{ms, OWNER};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The processes of each run.
const PROCESSES: [usize; 3] = [1, 2, 4];
/// The slow sandbox's answer time, in ms.
const SLOW_MS: u64 = 50;
/// Settled jobs (each with one failed attempt) in every run's ledger before its jobs.
const HISTORY: &str = "
    INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, finished_at)
    SELECT gen_random_uuid(), 'local', 'old-' || g, 'f',
           '{\"route\": [\"sandbox\"], \"input\": {}}'::json, 'cancelled', now()
    FROM generate_series(1, 20000) AS g;
    INSERT INTO attempts (id, job_id, number, provider, state, job_version, error_kind)
    SELECT gen_random_uuid(), id, 1, 'sandbox', 'failed', 0, 'server_error' FROM jobs
    WHERE status = 'cancelled';
    ANALYZE jobs; ANALYZE attempts; ANALYZE job_events";

/// The attempts of the run's jobs, not the history's.
const THIS_RUNS: &str =
    "FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.idempotency_key LIKE 'job-%'";

/// How long one run may take before the benchmark gives up on it.
const LIMIT: Duration = Duration::from_secs(300);

/// What every run shares.
pub struct Runs<'a> {
    pub cluster: &'a Postgres,
    /// Jobs queued for each run.
    pub jobs: usize,
    /// Attempts each worker process sends at once, at the instant sandbox and at the slow one.
    pub in_flight: usize,
    pub slow_in_flight: usize,
    /// The raw INSERT rate of this benchmark's run, per second.
    pub raw_rate: f64,
    /// Where the workers' error output goes.
    pub logs: &'a Path,
}

/// Every run, then the ratios of 2 and 4 processes to one at each latency.
pub async fn scaling(runs: &Runs<'_>) -> Result<()> {
    // The slow runs queue half as many jobs: their one process is the slowest run of all.
    let kinds = [
        (0, runs.jobs, runs.in_flight),
        (SLOW_MS, runs.jobs / 2, runs.slow_in_flight),
    ];
    // ONEJOB_BENCH_LATENCY_MS runs only the runs at that sandbox latency (0 or 50).
    let only = std::env::var("ONEJOB_BENCH_LATENCY_MS").ok();
    for (latency_ms, jobs, in_flight) in kinds {
        if only
            .as_ref()
            .is_some_and(|ms| *ms != latency_ms.to_string())
        {
            continue;
        }
        let mut rates = Vec::new();
        for processes in PROCESSES {
            let kind = Kind {
                latency_ms,
                jobs,
                in_flight,
                processes,
            };
            rates.push(run(runs, &kind).await?);
        }
        let one = rates.first().copied().unwrap_or_default();
        let times =
            |i: usize| rates.get(i).copied().unwrap_or_default() / one.max(f64::MIN_POSITIVE);
        let aim = if latency_ms == 0 { 1.0 } else { 3.5 };
        println!(
            "  pg ratio processes/one, {}: 2 {:.2}x, 4 {:.2}x (aim: 4 >= {aim:.1}x)",
            sandbox_words(latency_ms),
            times(1),
            times(2),
        );
    }
    Ok(())
}

fn sandbox_words(latency_ms: u64) -> String {
    if latency_ms == 0 {
        "instant sandbox".to_owned()
    } else {
        format!("{latency_ms} ms sandbox")
    }
}

/// What one run does.
struct Kind {
    latency_ms: u64,
    jobs: usize,
    in_flight: usize,
    processes: usize,
}

/// One run on a new ledger; its jobs per second.
async fn run(runs: &Runs<'_>, kind: &Kind) -> Result<f64> {
    let Runs {
        cluster,
        raw_rate,
        logs,
        ..
    } = *runs;
    let Kind {
        latency_ms,
        jobs,
        in_flight,
        processes,
    } = *kind;
    let name = format!("processes_{latency_ms}ms_{processes}");
    let url = cluster.database(&name)?;
    let engine = Engine::open(&url).await?;
    let sandbox = json!({"name": "sandbox", "kind": "sandbox", "soft_timeout_ms": 30_000,
        "hard_timeout_ms": 60_000, "honours_idempotency_key": true,
        "dials": {"latency_ms": latency_ms, "jitter_ms": 0}});
    engine.add_provider(&sandbox.to_string()).await?;
    queue(&engine, jobs).await?;
    engine.close().await;

    let mut workers = Vec::with_capacity(processes);
    for i in 0..processes {
        workers.push(Worker::start(&url, in_flight, None, logs, &format!("{name}_{i}")).await?);
    }
    let mut ledger = PgConnection::connect(&url).await?;
    // A ledger in use: a history of settled jobs, and the planner's statistics that
    // autovacuum keeps. A new database's say its tables are empty, and plans read them whole.
    sqlx::raw_sql(HISTORY).execute(&mut ledger).await?;
    let profiling = std::env::var("ONEJOB_BENCH_STATS").is_ok();
    let before = if profiling {
        Some(stats::start(&mut ledger).await?)
    } else {
        None
    };
    for worker in &mut workers {
        worker.go().await?;
    }
    let start = Instant::now();
    loop {
        // The history holds no open job: the run's are settled when none is open. (Asked of
        // the index of open jobs, which stops at the first one, so the watching stays off the
        // processors: counting them all every 10 ms took a few percent of a core.)
        let open: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('queued', 'running'))",
        )
        .fetch_one(&mut ledger)
        .await?;
        if !open {
            break;
        }
        check_deadline(start + LIMIT, LIMIT, "every job settled")?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = start.elapsed();
    // Processor time per job: the workers', and the server's for the ledger's connections.
    let workers_cpu: Duration = workers.iter().filter_map(Worker::cpu).sum();
    let backends: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut ledger)
    .await?;
    let server_cpu: Duration = backends
        .iter()
        .filter_map(|pid| u32::try_from(*pid).ok().and_then(cpu_of))
        .sum();
    let listeners: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    )
    .fetch_one(&mut ledger)
    .await?;
    for worker in workers {
        worker.stop().await?;
    }

    let succeeded: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE status = 'succeeded'")
        .fetch_one(&mut ledger)
        .await?;
    let (attempts, jobs_sent): (i64, i64) = sqlx::query_as(&format!(
        "SELECT count(*), count(DISTINCT job_id) {THIS_RUNS}"
    ))
    .fetch_one(&mut ledger)
    .await?;
    let shares: Vec<i64> = sqlx::query_scalar(&format!(
        "SELECT count(*) {THIS_RUNS} GROUP BY executor_id ORDER BY count(*) DESC"
    ))
    .fetch_all(&mut ledger)
    .await?;
    ledger.close().await?;
    if let Some(before) = before {
        stats::report(&url, &before, jobs, backends.len(), listeners).await?;
    }
    let once = if attempts == jobs_sent && jobs_sent as usize == jobs {
        "each sent once".to_owned()
    } else {
        format!("NOT EACH ONCE: {attempts} attempts for {jobs_sent} jobs")
    };
    let shares: Vec<String> = shares.iter().map(i64::to_string).collect();
    let rate = jobs as f64 / took.as_secs_f64();
    // What the sandbox's time and the slots allow, whatever the ledger does.
    let ceiling = if latency_ms == 0 {
        String::new()
    } else {
        let most = (processes * in_flight) as f64 * 1000.0 / latency_ms as f64;
        format!(", the slots allow {most:.0}")
    };
    println!(
        "pg {processes} worker process{}, {}: {rate:>6.0} jobs/s, {:.1}% of raw INSERT{ceiling} ({succeeded} of {jobs} succeeded in {:.1} ms, {once}; per process {}; {in_flight} at once each; processor per job: workers {:.2} ms, server {:.2} ms)",
        if processes == 1 { "" } else { "es" },
        sandbox_words(latency_ms),
        100.0 * rate / raw_rate.max(f64::MIN_POSITIVE),
        took.as_secs_f64() * 1000.0,
        shares.join("/"),
        ms(workers_cpu) / jobs as f64,
        ms(server_cpu) / jobs as f64,
    );
    Ok(rate)
}

/// Queues `jobs` jobs at the sandbox, many submits at once.
async fn queue(engine: &Engine, jobs: usize) -> Result<()> {
    let tasks: Vec<_> = (0..jobs)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let body = json!({"route": ["sandbox"], "input": {"n": i}}).to_string();
                engine.submit(OWNER, &format!("job-{i}"), &body).await
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// A profile of one run from the server's statistics (`ONEJOB_BENCH_STATS`).
mod stats {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use sqlx::{Connection, PgConnection};

    type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;
    pub type Snapshot = BTreeMap<String, f64>;

    const COUNTERS: &str = "
        SELECT 'db.' || k, v::float8 FROM pg_stat_database d,
          LATERAL (VALUES ('xact_commit', xact_commit), ('xact_rollback', xact_rollback),
                          ('blks_hit', blks_hit), ('blks_read', blks_read),
                          ('tup_returned', tup_returned), ('tup_fetched', tup_fetched),
                          ('tup_inserted', tup_inserted), ('tup_updated', tup_updated),
                          ('tup_deleted', tup_deleted), ('deadlocks', deadlocks)) AS x(k, v)
          WHERE d.datname = current_database()
        UNION ALL
        SELECT 'wal.' || k, v::float8 FROM pg_stat_wal,
          LATERAL (VALUES ('records', wal_records), ('bytes', wal_bytes::bigint),
                          ('write', wal_write), ('sync', wal_sync), ('fpi', wal_fpi)) AS x(k, v)
        UNION ALL
        SELECT 'tab.' || relname || '.' || k, v::float8 FROM pg_stat_user_tables t,
          LATERAL (VALUES ('seq_scan', seq_scan), ('seq_tup_read', seq_tup_read),
                          ('idx_scan', coalesce(idx_scan, 0)), ('ins', n_tup_ins),
                          ('upd', n_tup_upd), ('hot_upd', n_tup_hot_upd), ('del', n_tup_del))
                  AS x(k, v)
        UNION ALL
        SELECT 'fn.' || funcname || '.' || k, v::float8 FROM pg_stat_user_functions f,
          LATERAL (VALUES ('calls', calls::float8), ('self_ms', self_time)) AS x(k, v)";

    async fn counters(db: &mut PgConnection) -> Result<Snapshot> {
        sqlx::query("SELECT pg_stat_clear_snapshot()")
            .execute(&mut *db)
            .await?;
        let rows: Vec<(String, f64)> = sqlx::query_as(COUNTERS).fetch_all(&mut *db).await?;
        Ok(rows.into_iter().collect())
    }

    /// Resets the statement statistics and takes the counters before the workers go.
    pub async fn start(db: &mut PgConnection) -> Result<Snapshot> {
        sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .execute(&mut *db)
            .await?;
        // Let the queueing connections' counters reach the shared statistics first.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let before = counters(db).await?;
        sqlx::query("SELECT pg_stat_statements_reset()")
            .execute(&mut *db)
            .await?;
        Ok(before)
    }

    /// Prints the run's statements and counters per job.
    pub async fn report(
        url: &str,
        before: &Snapshot,
        jobs: usize,
        connections: usize,
        listeners: i64,
    ) -> Result<()> {
        // The workers' backends flush their counters as they exit.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let mut db = PgConnection::connect(url).await?;
        let after = counters(&mut db).await?;
        let n = jobs as f64;
        println!("  -- profile: {connections} connections to the ledger at the end, {listeners} listening");
        let rows: Vec<(String, i64, f64, f64, i64, f64, i64)> = sqlx::query_as(
            "SELECT regexp_replace(query, '\\s+', ' ', 'g'), calls, total_exec_time, mean_exec_time, rows,
                    total_plan_time, plans
             FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             ORDER BY calls DESC",
        )
        .fetch_all(&mut db)
        .await?;
        let calls: i64 = rows.iter().map(|r| r.1).sum();
        let time: f64 = rows.iter().map(|r| r.2).sum();
        let planning: f64 = rows.iter().map(|r| r.5).sum();
        println!(
            "  -- statements: {calls} ({:.1}/job), {time:.0} ms executing ({:.3} ms/job), {planning:.0} ms planning ({:.3} ms/job), {} distinct",
            calls as f64 / n,
            time / n,
            planning / n,
            rows.len()
        );
        for (query, calls, total, mean, rows, plan, plans) in rows.iter().take(20) {
            let short: String = query.chars().take(150).collect();
            println!(
                "  {calls:>7} ({:>5.2}/job) total {total:>8.1} ms mean {mean:>7.3} ms, planned {plans:>6} times {plan:>7.1} ms, rows {rows:>7} | {short}",
                *calls as f64 / n
            );
        }
        for (key, value) in &after {
            let delta = value - before.get(key).copied().unwrap_or_default();
            if delta.abs() > 0.0 {
                println!("  {key:<40} {delta:>12.0} ({:>8.3}/job)", delta / n);
            }
        }
        db.close().await?;
        Ok(())
    }
}
