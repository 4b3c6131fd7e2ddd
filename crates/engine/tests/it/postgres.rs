//! What only a shared PostgreSQL ledger has (SPEC §14), on a real throwaway cluster: opening
//! by URL, several engines ("hosts") on one database, changes announced with LISTEN/NOTIFY
//! across a dropped connection, migrations applied once by processes that start together, and
//! clear errors that never repeat a password. Every other rule is proven by the whole engine
//! suite, which runs on PostgreSQL as well as on SQLite.

use std::time::Duration;

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::sandbox::Sandbox;
use onejob_engine::testing::{Claim, ExecutorSteps as _, InternalCalls as _};
use onejob_engine::{AttemptState, Engine, Error, JobStatus};
use onejob_testkit::{Postgres, Relay};
use serde_json::json;

use crate::common::{quick, run, stop_and_wait};

const OWNER: &str = "local";

fn sandbox_intent(text: &str) -> String {
    json!({ "route": ["sandbox"], "input": { "text": text } }).to_string()
}

/// Submits a job to the sandbox under `key`, its text the key too; the job.
async fn submit_sandbox(engine: &Engine, key: &str) -> onejob_engine::Job {
    engine
        .submit(OWNER, key, &sandbox_intent(key))
        .await
        .expect("submit")
        .job
}

/// A new database `name` on `cluster`, opened by one host here and by another there, whose
/// change feed (checked only hourly, so that only a notification wakes it) is returned.
async fn here_and_listening_there(
    cluster: &Postgres,
    name: &str,
) -> (Engine, Engine, tokio::sync::watch::Receiver<u64>) {
    let url = cluster.database(name).expect("a database");
    let here = Engine::open(&url).await.expect("open here");
    let there = Engine::open(&url).await.expect("open there");
    let changes = there
        .changes(Duration::from_secs(3600))
        .await
        .expect("listen");
    (here, there, changes)
}

/// Waits up to `within` for the change feed to announce a change; `what` says which.
async fn announced(changes: &mut tokio::sync::watch::Receiver<u64>, within: Duration, what: &str) {
    tokio::time::timeout(within, changes.changed())
        .await
        .expect(what)
        .expect("still listening");
}

async fn psql(cluster: &Postgres, db: &str, sql: &str) -> Vec<sqlx::postgres::PgRow> {
    let url = format!("postgres://onejob@127.0.0.1:{}/{db}", cluster.port());
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    let rows = sqlx::query(sql).fetch_all(&pool).await.expect(sql);
    pool.close().await;
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_url_opens_a_shared_ledger_where_a_job_runs_to_its_one_result() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("ledger").expect("a database");
    let engine = Engine::open(&url).await.expect("open");
    assert!(engine.is_shared());
    assert_eq!(engine.location(), url);

    let first = engine
        .submit(OWNER, "k-1", &sandbox_intent("hello"))
        .await
        .expect("submit");
    let again = engine
        .submit(OWNER, "k-1", &sandbox_intent("hello"))
        .await
        .expect("the double click");
    assert_eq!(first.job.id, again.job.id);
    assert!(again.replayed);

    let executor = Executor::new(engine.clone(), Default::default()).expect("an executor");
    settle(&executor).await;
    let detail = sent_once(&engine, &first.job.id).await;
    assert_eq!(
        detail.job.completed_by.as_deref(),
        Some(detail.attempts[0].id.as_str())
    );
    // Times are the database's, in the ledger's one text form.
    assert!(
        detail.job.created_at.ends_with('Z') && detail.job.created_at.len() == 24,
        "{}",
        detail.job.created_at
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_on_one_host_is_announced_on_another_also_after_its_connection_drops() {
    let cluster = Postgres::start().expect("a cluster");
    let (here, _there, mut changes) = here_and_listening_there(&cluster, "live").await;

    submit_sandbox(&here, "a").await;
    let within = Duration::from_secs(10);
    announced(&mut changes, within, "the other host hears of the submit").await;
    // The check interval is an hour: only a notification could have brought this.
    changes.borrow_and_update();

    // The listening connection is cut, as a network drop or a server restart would.
    let cut = psql(
        &cluster,
        "live",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'",
    )
    .await;
    assert_eq!(cut.len(), 1, "one listening connection");
    // The drop itself may count as a change (notifications may have been missed meanwhile).
    tokio::time::sleep(Duration::from_millis(500)).await;
    changes.borrow_and_update();

    submit_sandbox(&here, "b").await;
    let what = "the other host hears of a change after reconnecting";
    announced(&mut changes, within, what).await;
}

/// A server that stops answering without closing its connections (a host suspended or cut
/// off) leaves a listening connection silent, not closed. The feed pings a connection that has
/// been quiet for a few seconds; one that does not answer is dropped and replaced, with
/// backoff, and the feed counts a change once it listens again, since what was announced
/// meanwhile is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_feed_whose_server_stops_answering_listens_again_once_it_answers() {
    let mut cluster = Postgres::start().expect("a cluster");
    let (here, _there, mut changes) = here_and_listening_there(&cluster, "silent").await;
    cluster.freeze().expect("frozen");
    // Past the feed's quiet time and its ping's timeout: it gives the connection up and tries
    // new ones, which nothing answers either.
    tokio::time::sleep(Duration::from_secs(9)).await;
    changes.borrow_and_update();
    cluster.thaw().expect("thawed");
    let what = "the feed says it listens again";
    announced(&mut changes, Duration::from_secs(15), what).await;
    changes.borrow_and_update();
    submit_sandbox(&here, "after").await;
    let what = "a change after the outage is announced";
    announced(&mut changes, Duration::from_secs(10), what).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_hosts_opening_a_new_database_together_apply_each_migration_once() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("together").expect("a database");
    let opens = (0..8).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { Engine::open(&url).await })
    });
    for open in opens {
        open.await.expect("task").expect("every host opens");
    }
    let applied = psql(
        &cluster,
        "together",
        "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
    )
    .await;
    let files = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../migrations/postgres"
    ))
    .expect("the migrations folder")
    .filter(|e| {
        e.as_ref()
            .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
    })
    .count();
    assert_eq!(applied.len(), files, "each migration applied exactly once");
}

/// The `storage` error opening `url` fails with, which must not repeat its password.
async fn refused(url: String) -> String {
    match Engine::open(&url).await {
        Err(Error::Storage { message, .. }) => {
            assert!(!message.contains("hunter2"), "{message}");
            message
        }
        Err(other) => panic!("expected a storage error, got {other:?}"),
        Ok(_) => panic!("{url} opened"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_fails_clearly_and_never_repeats_the_password() {
    let cluster = Postgres::start().expect("a cluster");

    // Nobody listens on this port.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a port")
        .local_addr()
        .expect("addr")
        .port();
    let unreachable = format!("postgres://alice:hunter2@127.0.0.1:{free}/ledger");
    let message = refused(unreachable.clone()).await;
    assert!(
        message.starts_with("the ledger at postgres://alice:***@127.0.0.1"),
        "{message}"
    );
    assert!(message.contains("is unreachable"), "{message}");
    let kind = Engine::open(&unreachable)
        .await
        .err()
        .and_then(|e| e.storage_kind());
    assert_eq!(kind, Some(onejob_engine::error::StorageKind::Unreachable));
    assert!(message.contains("alice:***@127.0.0.1"), "{message}");

    // A database that does not exist.
    let port = cluster.port();
    let message = refused(format!("postgres://onejob:hunter2@127.0.0.1:{port}/nosuch")).await;
    assert!(message.contains("nosuch"), "{message}");

    // A role that may log in but not create the ledger's tables (PostgreSQL 15 and later give
    // no one but the owner CREATE on a new database's public schema).
    let _ = cluster.database("locked").expect("a database");
    psql(
        &cluster,
        "locked",
        "CREATE ROLE visitor LOGIN PASSWORD 'hunter2'",
    )
    .await;
    psql(
        &cluster,
        "locked",
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
    )
    .await;
    let message = refused(format!(
        "postgres://visitor:hunter2@127.0.0.1:{port}/locked"
    ))
    .await;
    assert!(message.contains("lacks the rights"), "{message}");

    // Not a URL onejob can use at all.
    let e = Engine::open("postgres://alice:hunter2@127.0.0.1:notaport/ledger")
        .await
        .err()
        .expect("refused");
    match e {
        Error::InvalidInput { message, details } => {
            assert_eq!(details.field, "db");
            assert!(!message.contains("hunter2"), "{message}");
        }
        other => panic!("expected invalid_input, got {other:?}"),
    }
}

/// Runs `executor` until nothing is left to send, for at most a minute.
async fn settle(executor: &Executor) {
    tokio::time::timeout(Duration::from_secs(60), executor.run_until_idle())
        .await
        .expect("the executor settles")
        .expect("runs");
}

/// The job, checked to have succeeded with its one attempt.
async fn sent_once(engine: &Engine, job_id: &str) -> onejob_engine::JobDetail {
    let detail = engine.job(OWNER, job_id).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Succeeded, "{detail:?}");
    assert_eq!(detail.attempts.len(), 1, "{detail:?}");
    detail
}

/// Claims `job_id`'s next attempt, which must be there: the attempt, `pending`.
async fn claim(engine: &Engine, job_id: &str) -> onejob_engine::Attempt {
    match engine.claim_next(job_id).await.expect("claim") {
        Claim::Attempt(claimed) => claimed.attempt,
        other => panic!("expected an attempt, got {other:?}"),
    }
}

/// Opens another host on `url` and runs one pass of an executor there, which must start
/// `started` attempts (`why`), soon enough after `since` to tell a fresh claim from a stale one.
async fn a_pass_on_another_host(
    url: &str,
    since: std::time::Instant,
    started: usize,
    why: &str,
) -> (Engine, Executor) {
    let host = Engine::open(url).await.expect("open another host");
    let executor = Executor::new(host.clone(), one_pass(4)).expect("an executor");
    assert_eq!(executor.tick().await.expect("a pass"), started, "{why}");
    assert!(
        since.elapsed() < Duration::from_secs(2),
        "the pass was too slow to tell"
    );
    (host, executor)
}

fn one_pass(max_in_flight: usize) -> ExecutorOptions {
    ExecutorOptions {
        max_in_flight,
        reconcile_every: Duration::from_secs(3600),
        ..ExecutorOptions::default()
    }
}

/// Hosts claiming at once take different jobs: a pass reads the sendable jobs locked inside
/// its claiming transaction, passing over one another host is claiming, so it fills every
/// free slot with a job nobody holds instead of queueing on (or giving up) the held one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_passes_over_a_job_another_host_is_claiming_and_fills_its_slots_with_others() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("claims").expect("a database");
    let engine = Engine::open(&url).await.expect("open");
    let ids = submit_each(&engine, ["a", "b", "c"].map(String::from)).await;

    // Another host is in the middle of claiming the oldest job: its row is locked.
    let other = sqlx::PgPool::connect(&url).await.expect("connect");
    let mut claiming = other.begin().await.expect("begin");
    sqlx::query("SELECT id FROM jobs WHERE id::text = $1 FOR UPDATE")
        .bind(&ids[0])
        .fetch_one(&mut *claiming)
        .await
        .expect("lock the oldest job");

    let executor = Executor::new(engine.clone(), one_pass(2)).expect("an executor");
    let started = executor.tick().await.expect("a pass");
    assert_eq!(
        started, 2,
        "both free slots take a job nobody holds, the held one passed over"
    );
    let held = engine.job(OWNER, &ids[0]).await.expect("job");
    assert_eq!(held.job.status, JobStatus::Queued, "{held:?}");
    assert!(held.attempts.is_empty(), "{held:?}");

    claiming.rollback().await.expect("the other host lets go");
    other.close().await;
    settle(&executor).await;
    for id in &ids {
        sent_once(&engine, id).await;
    }
}

/// A `pending` attempt is its claimer's to send. Another host's pass leaves one that was
/// claimed a moment ago (driving it too would only lose the move to in-flight and roll its
/// group back), and sends one whose claimer has been gone for seconds: it is not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_attempt_is_left_to_its_claimer_and_sent_once_by_another_host_if_it_stops() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("pending").expect("a database");
    let claimer = Engine::open(&url).await.expect("open the claimer");
    let job = submit_sandbox(&claimer, "k").await;
    let attempt = claim(&claimer, &job.id).await;
    let claimed_at = std::time::Instant::now();

    let why = "an attempt claimed a moment ago is left to its claimer";
    let (host, executor) = a_pass_on_another_host(&url, claimed_at, 0, why).await;

    // The claimer stops without sending it.
    drop(claimer);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(
        executor.tick().await.expect("a pass"),
        1,
        "an attempt left for seconds is sent by another host"
    );
    settle(&executor).await;
    let detail = sent_once(&host, &job.id).await;
    assert_eq!(detail.attempts[0].id, attempt.id);
    assert_eq!(
        detail.job.completed_by.as_deref(),
        Some(attempt.id.as_str())
    );
}

/// Whole-table reads of `jobs` and `attempts` so far, as the server counts them once every
/// other connection to the database has ended (a connection's counts are flushed when it ends).
async fn whole_table_reads(url: &str) -> (i64, i64) {
    let pool = sqlx::PgPool::connect(url).await.expect("connect");
    for _ in 0..200 {
        let others: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_one(&pool)
        .await
        .expect("activity");
        if others == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (jobs, attempts): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'jobs'), \
                (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'attempts')",
    )
    .fetch_one(&pool)
    .await
    .expect("table statistics");
    pool.close().await;
    (jobs, attempts)
}

/// Replaces the built-in `sandbox` provider with one that answers in `latency_ms`, without
/// jitter, well within its timeouts.
async fn sandbox_answering_in(engine: &Engine, latency_ms: u32) {
    let sandbox = json!({"name": "sandbox", "kind": "sandbox", "soft_timeout_ms": 30_000,
        "hard_timeout_ms": 60_000, "honours_idempotency_key": true,
        "dials": {"latency_ms": latency_ms, "jitter_ms": 0}});
    crate::common::add_provider(engine, &sandbox).await;
}

/// Submits a job to the sandbox under each key; their ids.
async fn submit_each(engine: &Engine, keys: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut ids = Vec::new();
    for key in keys {
        ids.push(submit_sandbox(engine, &key).await.id);
    }
    ids
}

/// Runs every job to its one result with an executor of four slots, then closes the engine.
async fn run_each_once(engine: Engine, ids: &[String]) {
    let executor = Executor::new(engine.clone(), one_pass(4)).expect("an executor");
    settle(&executor).await;
    for id in ids {
        sent_once(&engine, id).await;
    }
    drop(executor);
    engine.close().await;
}

/// A cluster that keeps statement statistics (with planning, if `planning`).
fn a_cluster_counting_statements(planning: bool) -> Postgres {
    let track_planning = format!("pg_stat_statements.track_planning={planning}");
    Postgres::start_with(&[
        "shared_preload_libraries=pg_stat_statements",
        "pg_stat_statements.track=top",
        &track_planning,
    ])
    .expect("a cluster")
}

/// The ledger's statement statistics from now on; first `before` (statements run before the
/// count starts).
async fn counting_statements(url: &str, before: &[&str]) -> sqlx::PgPool {
    let stats = sqlx::PgPool::connect(url).await.expect("connect");
    for sql in before.iter().chain(&[
        "CREATE EXTENSION pg_stat_statements",
        "SELECT pg_stat_statements_reset()",
    ]) {
        sqlx::query(sql).execute(&stats).await.expect(sql);
    }
    stats
}

/// The first line of `attempts/send_many.sql`, as `pg_stat_statements` keeps it.
const SEND_MANY: &str = "`move.sql` from `pending` to `in_flight` for the executor, for several";

/// What `pg_stat_statements` counted on the ledger: each statement with its calls and rows.
struct Counted(Vec<(String, i64, i64)>);

impl Counted {
    /// Reads the counts through `stats` (from [`counting_statements`]), then closes it.
    async fn read(stats: sqlx::PgPool) -> Counted {
        let rows = sqlx::query_as(
            "SELECT query, calls, rows FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .fetch_all(&stats)
        .await
        .expect("statement statistics");
        stats.close().await;
        Counted(rows)
    }

    /// The calls and rows of the statements whose text holds `text`.
    fn ran(&self, text: &str) -> (i64, i64) {
        self.0
            .iter()
            .filter(|(query, ..)| query.contains(text))
            .fold((0, 0), |(calls, done), (_, c, r)| (calls + c, done + r))
    }

    /// Each statement called at least `min_calls` times, by its first line.
    fn summary(&self, min_calls: i64) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, calls, _)| *calls >= min_calls)
            .map(|(query, calls, done)| {
                let first: String = query.lines().take(1).collect();
                format!("{calls} runs, {done} rows: {first}")
            })
            .collect()
    }
}

/// A ledger of 20,000 settled jobs, its planner's statistics taken: what a team's ledger looks
/// like to the server's planner.
async fn a_large_ledger(url: &str) {
    let filler = sqlx::PgPool::connect(url).await.expect("connect");
    for sql in [
        "INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, finished_at) \
         SELECT gen_random_uuid(), 'local', 'old-' || g, 'f', \
                '{\"route\": [\"sandbox\"], \"input\": {}}'::json, 'cancelled', now() \
         FROM generate_series(1, 20000) AS g",
        "INSERT INTO attempts (id, job_id, number, provider, state, job_version, error_kind) \
         SELECT gen_random_uuid(), id, 1, 'sandbox', 'failed', 0, 'server_error' FROM jobs",
        "ANALYZE jobs",
        "ANALYZE attempts",
    ] {
        sqlx::query(sql).execute(&filler).await.expect(sql);
    }
    filler.close().await;
}

/// A team's ledger grows: no statement of a job's way from submit to its one result may read
/// a whole table. On a ledger of 20,000 settled jobs, an engine that opens it, takes submits,
/// claims, sends, answers and closes leaves the server's count of whole-table reads of `jobs`
/// and `attempts` where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_to_its_result_on_a_large_ledger_without_reading_a_table_whole() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("large").expect("a database");
    Engine::open(&url).await.expect("migrate").close().await;
    a_large_ledger(&url).await;
    let before = whole_table_reads(&url).await;

    let engine = Engine::open(&url).await.expect("open");
    let ids = submit_each(&engine, ["a", "b", "c"].map(String::from)).await;
    run_each_once(engine, &ids).await;

    let after = whole_table_reads(&url).await;
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (0, 0),
        "whole-table reads of jobs and attempts"
    );
}

/// The server plans a prepared statement anew on every run while it deems a plan for the
/// values given cheaper than one for any values: for a statement that reads arrays, or a
/// LIMIT, it always does. The statement that locks a write's jobs and the claim's read of the
/// sendable jobs did, on every write and every pass, and planning them cost several times
/// their own work (about a millisecond a job, more than any statement's execution). On a large
/// ledger, every statement an executor runs for each job is planned a few times per
/// connection, not on every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statements_of_a_jobs_way_are_planned_once_per_connection_not_on_every_run() {
    let cluster = a_cluster_counting_statements(true);
    let url = cluster.database("plans").expect("a database");
    let engine = Engine::open(&url).await.expect("open");
    a_large_ledger(&url).await;
    let jobs = 300;
    let ids = submit_each(&engine, (0..jobs).map(|i| format!("q-{i}"))).await;
    // As autovacuum would after so many submits: the backlog is in the statistics.
    let stats = counting_statements(&url, &["ANALYZE jobs"]).await;
    run_each_once(engine, &ids).await;

    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT query, calls, plans FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND calls >= $1",
    )
    .bind(jobs as i64 / 2)
    .fetch_all(&stats)
    .await
    .expect("statement statistics");
    stats.close().await;
    assert!(
        rows.iter()
            .any(|(query, ..)| query.contains("for a group of the executor's writes")),
        "the lock statement ran for every job: {rows:#?}"
    );
    let replanned: Vec<_> = rows
        .iter()
        .filter(|(_, calls, plans)| plans * 4 > *calls)
        .map(|(query, calls, plans)| {
            let first: String = query.lines().take(2).collect::<Vec<_>>().join(" ");
            format!("planned {plans} times in {calls} runs: {first}")
        })
        .collect();
    assert!(replanned.is_empty(), "{replanned:#?}");
}

/// A running executor passes on every slot that frees. Each pass looked for `pending`
/// attempts it did not claim (a person's retry, one a stopped host left), and nearly every
/// look found none: 1.5 statements a job at four slots. A running executor now looks at most
/// once every 100 ms, and still sends such an attempt: here a person's retry made on another
/// host while it is busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_executor_looks_for_attempts_it_did_not_claim_at_most_every_100ms() {
    let cluster = a_cluster_counting_statements(false);
    let url = cluster.database("looks").expect("a database");
    let engine = Engine::open(&url).await.expect("open");
    // Quick answers and eight slots: a slot frees every few milliseconds.
    sandbox_answering_in(&engine, 20).await;
    let mut ids = submit_each(&engine, (0..200).map(|i| format!("q-{i}"))).await;
    // A job a person retries on another host while the executor is busy with the others.
    let person = Engine::open(&url).await.expect("open the person's");
    let retried = submit_sandbox(&person, "retried").await;
    let stats = counting_statements(&url, &[]).await;

    let executor = Executor::new(engine.clone(), one_pass(8)).expect("an executor");
    let (stop, running) = run(&executor);
    let began = std::time::Instant::now();
    person
        .retry(OWNER, &retried.id, None)
        .await
        .expect("the person's retry");
    ids.push(retried.id.clone());
    let deadline = began + Duration::from_secs(120);
    loop {
        let open: i64 =
            sqlx::query_scalar("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")
                .fetch_one(&stats)
                .await
                .expect("open jobs");
        if open == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{open} jobs still open"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = began.elapsed();
    stop_and_wait(stop, running).await;
    for id in &ids {
        sent_once(&engine, id).await;
    }

    let looks: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements \
         WHERE query LIKE '-- pending.sql for a pass%'",
    )
    .fetch_one(&stats)
    .await
    .expect("statement statistics");
    stats.close().await;
    let most = took.as_millis() as i64 / 100 + 2;
    assert!(
        looks <= most,
        "{looks} looks for pending attempts in {took:?} (at most {most})"
    );
}

/// What a person starts is not an executor's claim: a retry's attempt is sent at once by
/// whichever host passes next, not left for seconds to a claimer that does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_retry_is_sent_at_once_by_another_host() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("retry").expect("a database");
    let person = Engine::open(&url).await.expect("open the person's");
    let job = submit_sandbox(&person, "k").await;
    person.retry(OWNER, &job.id, None).await.expect("retry now");
    let retried_at = std::time::Instant::now();

    let why = "a person's attempt is sent at once";
    let (host, executor) = a_pass_on_another_host(&url, retried_at, 1, why).await;
    settle(&executor).await;
    sent_once(&host, &job.id).await;
}

/// A new database `name` on `cluster`, opened through a [`Relay`] to the cluster.
async fn relayed(cluster: &Postgres, name: &str) -> (Relay, Engine) {
    let direct = cluster.database(name).expect("a database");
    let relay = Relay::start(cluster.port()).expect("a relay");
    let engine = Engine::open(&relay.url_for(&direct))
        .await
        .expect("open through the relay");
    (relay, engine)
}

/// Runs one job at a provider on 127.0.0.1 through a relay that loses the answer to the commit
/// of the first transaction binding `needle`; the job's detail once the executor has settled,
/// checked to have succeeded with one attempt, sent once.
async fn one_commit_answer_lost(needle: &str) -> onejob_engine::JobDetail {
    let cluster = Postgres::start().expect("a cluster");
    let (relay, engine) = relayed(&cluster, "unanswered").await;
    let server = Sandbox::start(([127, 0, 0, 1], 0).into(), quick(5))
        .await
        .expect("a sandbox");
    let config = json!({
        "name": "payee", "kind": "http", "base_url": server.url(),
        "soft_timeout_ms": 5000, "hard_timeout_ms": 8000,
        "honours_idempotency_key": false
    });
    engine
        .add_provider(&config.to_string())
        .await
        .expect("provider");
    let job = engine
        .submit(
            OWNER,
            "unanswered",
            &json!({ "route": ["payee"], "input": 1 }).to_string(),
        )
        .await
        .expect("submit")
        .job;

    relay.lose_commit_answer(needle);
    let executor = Executor::new(engine.clone(), one_pass(1)).expect("an executor");
    settle(&executor).await;
    assert_eq!(relay.cut(), 1, "the commit answer was lost");
    let detail = sent_once(&engine, &job.id).await;
    assert_eq!(server.log().len(), 1, "sent once");
    for kind in ["attempt_sent", "attempt_succeeded"] {
        let n = detail.events.iter().filter(|e| e.kind == kind).count();
        assert_eq!(n, 1, "one {kind}: {detail:#?}");
    }
    detail
}

/// A commit whose answer never came may have been made. The server commits an attempt's move
/// to in flight and the connection goes before its answer: the executor cannot tell from the
/// error whether the move was made, so it asks the ledger (a lease renews only on an attempt
/// it holds in flight) and sends the attempt, once. It is not left in flight unsent, to turn
/// `unknown` when its lease runs out as if it might have been sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_to_in_flight_committed_without_an_answer_is_sent_once_not_left_unknown() {
    // The event a move to in flight writes is bound only by that move's statement.
    one_commit_answer_lost("attempt_sent").await;
}

/// The answer's write is committed and its commit's answer lost: the write is tried again and
/// finds the job completed by this very attempt. That is not a race lost, nor an error to
/// report: the one result stands, recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_committed_without_an_answer_is_recorded_once_and_loses_no_race() {
    let detail = one_commit_answer_lost("attempt_succeeded").await;
    assert_eq!(
        detail.job.completed_by.as_deref(),
        Some(detail.attempts[0].id.as_str())
    );
    assert!(
        !detail.events.iter().any(|e| e.kind == "race_lost"),
        "{detail:#?}"
    );
}

/// The claim's commit is made and its answer lost: the executor took nothing, and the job has
/// a `pending` attempt nobody is sending. A later pass finds it, as it finds one whose claimer
/// stopped, and sends it once; the job gets no second attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_committed_without_an_answer_is_sent_once_by_a_later_pass() {
    one_commit_answer_lost("attempt_created").await;
}

/// A connection cut in the middle of a statement is said as a failed connect is: `storage`,
/// naming the ledger and what to check, not the driver's bare words. Nothing was written, the
/// connection is not handed out again, and the same submit a moment later goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_mid_statement_names_the_ledger_and_the_next_request_goes_through() {
    let cluster = Postgres::start().expect("a cluster");
    let (relay, engine) = relayed(&cluster, "cut").await;

    relay.cut_statement("cut-here");
    let cut = engine
        .submit(OWNER, "cut-here", &sandbox_intent("cut"))
        .await
        .expect_err("the statement's connection was cut");
    assert_eq!(relay.cut(), 1);
    assert_eq!(
        cut.storage_kind(),
        Some(onejob_engine::error::StorageKind::Unreachable)
    );
    match &cut {
        Error::Storage { message, .. } => {
            assert!(
                message.contains(&format!(
                    "the ledger at {} is unreachable",
                    engine.location()
                )),
                "{message}"
            );
            assert!(
                message.contains("Check that its PostgreSQL server"),
                "{message}"
            );
        }
        other => panic!("expected storage, got {other:?}"),
    }

    let again = engine
        .submit(OWNER, "cut-here", &sandbox_intent("cut"))
        .await
        .expect("the same submit, a moment later");
    assert!(!again.replayed, "the cut statement wrote nothing");
}

/// A stream's end position is never passed by events that commit after a crash. The end is
/// where the transactions still to start begin; transactions that took an id and rolled back
/// just before it leave nothing durable, so a server that crashed before writing them out
/// would hand their ids out again, below the end, and a stream resuming from it would skip
/// those events for ever. The feed's end is made durable before it is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_end_given_just_before_a_crash_misses_no_event_committed_after_it() {
    // The WAL writer stays asleep, so only a commit writes the WAL out.
    let mut cluster = Postgres::start_with(&["max_connections=200", "wal_writer_delay=10000ms"])
        .expect("a cluster");
    let url = cluster.database("feed_crash").expect("a database");
    let engine = Engine::open(&url).await.expect("open");
    engine
        .submit(OWNER, "before", &sandbox_intent("before"))
        .await
        .expect("submit");
    // Transactions that take an id and roll back, as a failed write does.
    for _ in 0..5 {
        cluster
            .sql("feed_crash", "BEGIN; SELECT pg_current_xact_id(); ROLLBACK")
            .expect("a transaction rolled back");
    }
    let end = engine.feed_end(OWNER).await.expect("the feed's end");
    cluster.restart_immediately().expect("a crash and recovery");

    let mut after = None;
    for _ in 0..50 {
        match engine
            .submit(OWNER, "after", &sandbox_intent("after"))
            .await
        {
            Ok(submitted) => {
                after = Some(submitted.job.id);
                break;
            }
            Err(Error::Storage { .. }) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("submit after the crash: {e:?}"),
        }
    }
    let after = after.expect("a submit after the crash");
    let page = engine.feed(OWNER, &end, 100).await.expect("the feed");
    assert!(
        page.events
            .iter()
            .any(|e| e.event.job_id == after && e.event.kind == "submitted"),
        "the job submitted after the crash is in the feed after {end}: {page:#?}"
    );
}

/// A server that stops answering while a ledger is opened (suspended half-way through bringing
/// the schema up to date) fails the open in seconds with `storage`, naming the ledger. A frozen
/// server never ends the waiting statement itself, and its kernel still answers keepalives, so
/// without the watch the open would wait for as long as the server stays frozen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_whose_server_freezes_while_migrating_fails_in_seconds() {
    let mut cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("frozen_open").expect("a database");
    Engine::open(&url)
        .await
        .expect("a first open")
        .close()
        .await;
    // Another session holds the migrations' table, so the next open waits inside them.
    let mut holder = cluster.session("frozen_open").expect("a session");
    holder
        .send("BEGIN; LOCK TABLE _sqlx_migrations IN ACCESS EXCLUSIVE MODE;")
        .expect("the table held");
    let locks = |granted: bool| {
        let sql = format!(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
             WHERE c.relname = '_sqlx_migrations' AND l.granted = {granted}"
        );
        let counted = cluster.sql("frozen_open", &sql).expect("pg_locks");
        counted.trim().parse::<u32>().expect("a count")
    };
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: not within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    until("the table held", &|| locks(true) > 0);
    let opening = {
        let url = url.clone();
        tokio::spawn(async move { Engine::open(&url).await.map(|e| e.location().to_owned()) })
    };
    until("the open waiting for the table", &|| locks(false) > 0);

    cluster.freeze().expect("the server frozen");
    let opened = tokio::time::timeout(Duration::from_secs(30), opening).await;
    cluster.thaw().expect("the server thawed");
    drop(holder);
    match opened
        .expect("the open gave up within 30 s")
        .expect("the task")
    {
        Err(Error::Storage { message, .. }) => {
            assert!(message.contains("stopped answering"), "{message}");
            assert!(
                message.contains(&format!("the ledger at {url}")),
                "names the ledger: {message}"
            );
        }
        other => panic!("expected storage, got {other:?}"),
    }
}

/// A pass starts its jobs' first attempts in one statement, and a group commit runs its
/// commonest writes for many jobs at once: the moves to in flight of the attempts a pass
/// claimed, and the compare-and-swaps of answers that came back together (past the response
/// heads they carry), each run one statement with each row under its own write's guard. Every job still gets its one result, sent once, with the history and the
/// attempt it would have had with each write alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_moves_its_attempts_in_flight_and_claims_their_answers_one_statement_a_run() {
    let cluster = a_cluster_counting_statements(false);
    let url = cluster.database("runs").expect("a database");
    let engine = Engine::open(&url).await.expect("open");
    // Instant answers and 32 slots: answers come back together.
    sandbox_answering_in(&engine, 0).await;
    let jobs = 300;
    let ids = submit_each(&engine, (0..jobs).map(|i| format!("r-{i}"))).await;
    let stats = counting_statements(&url, &[]).await;
    let executor = Executor::new(engine.clone(), one_pass(32)).expect("an executor");
    settle(&executor).await;
    for id in &ids {
        let detail = sent_once(&engine, id).await;
        let attempt = &detail.attempts[0];
        assert_eq!(attempt.request_id.is_some(), attempt.http_status.is_some());
        assert!(attempt.sent_at.is_some() && attempt.finished_at.is_some());
        let kinds: Vec<&str> = detail.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "submitted",
                "attempt_created",
                "attempt_sent",
                "attempt_succeeded"
            ],
            "{detail:?}"
        );
        let won = &detail.events[3].detail;
        assert_eq!(won["from"], "in_flight", "{won}");
        assert_eq!(won["via"], "answer", "{won}");
        assert!(won["payload_sha256"].is_string(), "{won}");
        assert!(detail.events[2].detail["lease_ms"].is_u64());
    }
    drop(executor);
    engine.close().await;

    let counted = Counted::read(stats).await;
    let (sends, sent) = counted.ran(SEND_MANY);
    let (claims, claimed) = counted.ran("The compare-and-swap of SPEC §5 for answers");
    let (passes, started) = counted.ran("Queued jobs' first attempts");
    let summary = counted.summary(10);
    // Runs of more than one write, and a good share of the jobs moved in them.
    assert!(sent > sends && sent >= jobs / 4, "{summary:#?}");
    assert!(claimed > claims && claimed >= jobs / 4, "{summary:#?}");
    assert!(started > passes && started >= jobs / 4, "{summary:#?}");
}

/// SPEC §17 in a group's run: priced attempts sent at once move to `in_flight` in the group's
/// one statement, each charged, and reserved against every budget that covers it after the run
/// has taken the budgets' rows. A budget of exactly 25 requests lets 25 of 60 attempts sent
/// together go and keeps the rest back with `budget_reached`; the 60 attempts at a priced
/// provider no budget covers all go, charged. Most of them move in runs of more than one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_priced_sends_charges_each_and_passes_no_budget() {
    let cluster = a_cluster_counting_statements(false);
    let url = cluster.database("priced_runs").expect("a database");
    let engine = Engine::open(&url).await.expect("open");
    for name in ["capped", "uncapped"] {
        let provider = json!({"name": name, "kind": "sandbox", "soft_timeout_ms": 30_000,
            "hard_timeout_ms": 60_000, "honours_idempotency_key": true,
            "dials": {"latency_ms": 0, "jitter_ms": 0},
            "price": {"currency": "USD", "per_request": "0.01"}});
        crate::common::add_provider(&engine, &provider).await;
    }
    let budget = r#"{"provider": "capped", "limit": "0.25", "currency": "USD", "period": "day"}"#;
    engine
        .set_budget("capped-a-day", budget, None)
        .await
        .expect("a budget");
    let jobs = 60;
    let mut claimed = Vec::new();
    for i in 0..jobs {
        for provider in ["capped", "uncapped"] {
            let key = format!("{provider}-{i}");
            let intent = json!({"route": [provider], "input": {"i": i}, "max_attempts": 1});
            let id = crate::common::submit_intent(&engine, &key, &intent).await;
            claimed.push((provider, claim(&engine, &id).await.id));
        }
    }
    let stats = counting_statements(&url, &[]).await;
    let sends: Vec<_> = claimed
        .iter()
        .map(|(provider, attempt)| {
            let (engine, attempt) = (engine.clone(), attempt.clone());
            let send = async move {
                let lease = Duration::from_secs(60);
                engine.mark_sent_priced(&attempt, "x", lease, "{}").await
            };
            (*provider, tokio::spawn(send))
        })
        .collect();
    let (mut sent, mut kept_back) = (0, 0);
    for (provider, send) in sends {
        let attempt = send.await.expect("joined").expect("sent or kept back");
        match attempt.state {
            AttemptState::InFlight => {
                sent += usize::from(provider == "capped");
                let cost = attempt.cost.as_ref().expect("charged");
                assert_eq!(cost.currency, "USD", "{attempt:?}");
            }
            AttemptState::Failed if provider == "capped" => {
                kept_back += 1;
                let error = attempt.error.as_ref().expect("why");
                assert_eq!(error.kind, "budget_reached", "{attempt:?}");
                assert!(attempt.sent_at.is_none(), "{attempt:?}");
            }
            _ => panic!("{provider}: {attempt:?}"),
        }
    }
    assert_eq!(
        (sent, kept_back),
        (25, jobs - 25),
        "the budget's 25 requests and no more"
    );
    let budgets = engine.budgets(None).await.expect("budgets");
    assert_eq!(budgets[0].used, "0.25");
    engine.close().await;

    let counted = Counted::read(stats).await;
    let (runs, moved) = counted.ran(SEND_MANY);
    let (locks, _) = counted.ran("the budgets that cover any of attempts");
    let summary = counted.summary(0);
    // Of the 85 that went, most in runs of more than one, each run taking the budgets first.
    assert!(
        moved > runs && moved >= 85 / 2,
        "{runs} runs moved {moved}: {summary:#?}"
    );
    assert!(locks >= runs, "{summary:#?}");
}

/// SPEC §14: a host that froze inside a transaction moving an attempt to `in_flight` holds that
/// job's row. Another host that drives the same attempt (left `pending`, as far as it can see)
/// must not wait for that row inside its group commit: its own lease renewals, answers and
/// claims would queue behind it, its healthy attempts' leases would run out and turn `unknown`,
/// and a status lookup could then ask a provider still at work. The write steps aside and is
/// tried again; every other write of the host goes on, and the attempt is sent once when the
/// frozen transaction has ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_frozen_while_moving_an_attempt_costs_another_host_no_lease() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("frozen").expect("a database");
    // The other host's own attempt is at this provider for the whole freeze.
    let slow = Sandbox::start(([127, 0, 0, 1], 0).into(), quick(10_000))
        .await
        .expect("a sandbox");
    let frozen = Engine::open(&url)
        .await
        .expect("open the host that freezes");
    let config = json!({
        "name": "slow", "kind": "http", "base_url": slow.url(),
        "soft_timeout_ms": 20_000, "hard_timeout_ms": 30_000, "honours_idempotency_key": true
    });
    frozen
        .add_provider(&config.to_string())
        .await
        .expect("provider");
    // The frozen host claims a job: its attempt is committed `pending`.
    let held = submit_sandbox(&frozen, "held").await;
    let pending = claim(&frozen, &held.id).await;

    // The other host sends a job of its own, renewing a short lease while it waits.
    let host = Engine::open(&url).await.expect("open another host");
    let intent = json!({ "route": ["slow"], "input": { "own": true } }).to_string();
    let own = host
        .submit(OWNER, "own", &intent)
        .await
        .expect("submit")
        .job;
    let options = ExecutorOptions {
        lease: Duration::from_millis(1500),
        renew_every: Duration::from_millis(300),
        poll_every: Duration::from_millis(50),
        reconcile_every: Duration::from_secs(3600),
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(host.clone(), options).expect("an executor");
    let (stop, task) = run(&executor);
    let ledger = sqlx::PgPool::connect(&url).await.expect("connect");
    let lease_held = |attempt_job: &str| {
        let sql = format!(
            "SELECT a.state = 'in_flight' AND a.lease_expires_at > clock_timestamp() \
             FROM attempts a WHERE a.job_id::text = '{attempt_job}'"
        );
        let ledger = ledger.clone();
        async move {
            sqlx::query_scalar::<_, bool>(&sql)
                .fetch_optional(&ledger)
                .await
                .expect("read the lease")
                .unwrap_or(false)
        }
    };
    for _ in 0..200 {
        if lease_held(&own.id).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        lease_held(&own.id).await,
        "the host's own attempt is in flight"
    );

    // The frozen host is inside its move of the attempt to in flight: the job's row is locked
    // and the move written, uncommitted, and nothing more happens on that transaction.
    let mut moving = ledger.begin().await.expect("begin");
    sqlx::query(&format!(
        "SELECT 1 FROM jobs WHERE id::text = '{}' FOR NO KEY UPDATE",
        held.id
    ))
    .execute(&mut *moving)
    .await
    .expect("lock the job");
    sqlx::query(&format!(
        "UPDATE attempts SET state = 'in_flight', executor_id = 'frozen', sent_at = now(), \
         lease_expires_at = now() + interval '10 seconds' WHERE id::text = '{}'",
        pending.id
    ))
    .execute(&mut *moving)
    .await
    .expect("move the attempt");

    // The other host finds the attempt left `pending` after 2 s and drives it. For 5 s from
    // the freeze (more than three of its leases), its own attempt's lease is held all along.
    let froze = std::time::Instant::now();
    let mut samples = 0;
    while froze.elapsed() < Duration::from_secs(5) {
        assert!(
            lease_held(&own.id).await,
            "the host's own attempt lost its lease {:?} into the freeze",
            froze.elapsed()
        );
        samples += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(samples > 20, "sampled {samples} times");

    // The database ends the frozen transaction (it would after 10 s idle): its move is undone.
    moving.rollback().await.expect("end the frozen transaction");
    let settled = |id: String| {
        let host = host.clone();
        async move {
            for _ in 0..400 {
                let detail = host.job(OWNER, &id).await.expect("job");
                if detail.job.status.is_terminal() {
                    return detail;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("{:#?}", host.job(OWNER, &id).await.expect("job"));
        }
    };
    let own_done = settled(own.id.clone()).await;
    let held_done = settled(held.id.clone()).await;
    stop_and_wait(stop, task).await;
    ledger.close().await;

    assert_eq!(own_done.job.status, JobStatus::Succeeded, "{own_done:#?}");
    assert_eq!(own_done.attempts.len(), 1, "{own_done:#?}");
    assert!(
        !own_done
            .events
            .iter()
            .any(|e| e.kind == "recovered_unknown"),
        "{own_done:#?}"
    );
    assert_eq!(slow.log().len(), 1, "the host's own attempt was sent once");
    assert_eq!(held_done.job.status, JobStatus::Succeeded, "{held_done:#?}");
    assert_eq!(held_done.attempts.len(), 1, "{held_done:#?}");
    assert_eq!(held_done.attempts[0].id, pending.id);
    let sends = held_done
        .events
        .iter()
        .filter(|e| e.kind == "attempt_sent")
        .count();
    assert_eq!(sends, 1, "the attempt was sent once: {held_done:#?}");
}
