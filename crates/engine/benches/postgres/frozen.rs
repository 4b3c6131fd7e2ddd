//! A submit's latency while another host is frozen inside a transaction, beside its latency
//! when none is. The frozen host is a worker process driving one job at a sandbox taking 1.5 s:
//! while the answer is on the way the benchmark holds that job's row, so the worker's write of
//! the answer waits inside its transaction with whatever it took before; the worker is stopped
//! (SIGSTOP) there and the row let go, leaving its transaction open and idle, as a suspended
//! host's would be. Then submits from this process, one after another.

use std::path::Path;
use std::time::{Duration, Instant};

use onejob_testkit::Postgres;
use serde_json::json;
use sqlx::{Connection, PgConnection};

use super::workers::{check_deadline, Worker};
use crate::common::postgres::{raw_connection, raw_inserts};
use crate::common::{engine_with_provider, ms, pct, print_latencies, ratio, OWNER};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// How long one submit may wait while a host is frozen before it counts as held up.
const HELD_UP: Duration = Duration::from_secs(5);
/// How long the submits while frozen may take in all: below the 10 s after which the server
/// ends a transaction left idle, so the host stays frozen throughout.
const FROZEN_FOR: Duration = Duration::from_secs(7);
/// How long each step of setting the scene may take.
const STEP: Duration = Duration::from_secs(30);

/// `n` submits with no host frozen, then up to `n` with one frozen, each followed by a raw
/// INSERT; all printed.
pub async fn frozen_host(cluster: &Postgres, n: usize, logs: &Path) -> Result<()> {
    let url = cluster.database("frozen")?;
    let engine = engine_with_provider(Path::new(&url)).await?;
    let slow = json!({"name": "slow", "kind": "sandbox", "soft_timeout_ms": 30_000,
        "hard_timeout_ms": 60_000, "honours_idempotency_key": true,
        "dials": {"latency_ms": 1500, "jitter_ms": 0}});
    engine.add_provider(&slow.to_string()).await?;
    let body = json!({"route": ["slow"], "input": {"frozen": true}}).to_string();
    let job = engine.submit(OWNER, "frozen", &body).await?.job.id;

    // The submits' jobs wait at a provider nobody calls: the worker drives only its own job.
    // The first ones warm the engine's connections and are not counted.
    let mut raw = raw_connection(&cluster.database("frozen_raw")?).await?;
    submits(&engine, &mut raw, 2 * n..2 * n + 50, None).await?;
    let calm = submits(&engine, &mut raw, 0..n, None).await?;

    let mut worker = Worker::start(&url, 1, Some(&job), logs, "frozen").await?;
    worker.go().await?;
    let mut watch = PgConnection::connect(&url).await?;
    let start = Instant::now();
    loop {
        let sent: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM attempts WHERE job_id = $1::uuid AND state = 'in_flight'",
        )
        .bind(&job)
        .fetch_one(&mut watch)
        .await?;
        if sent > 0 {
            break;
        }
        check_deadline(start + STEP, STEP, "the frozen job sent")?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut holder = PgConnection::connect(&url).await?;
    let holder_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut holder)
        .await?;
    let mut held = holder.begin().await?;
    sqlx::query("SELECT 1 FROM jobs WHERE id = $1::uuid FOR UPDATE")
        .bind(&job)
        .execute(&mut *held)
        .await?;
    let start = Instant::now();
    let waiting: i32 = loop {
        let waiting: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND state = 'active' \
             AND pid <> pg_backend_pid() AND pid <> $1 LIMIT 1",
        )
        .bind(holder_pid)
        .fetch_optional(&mut watch)
        .await?;
        if let Some(pid) = waiting {
            break pid;
        }
        check_deadline(
            start + STEP,
            STEP,
            "the worker waiting inside a transaction",
        )?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    worker.signal("STOP")?;
    held.commit().await?;
    let start = Instant::now();
    let idle = loop {
        let state: Option<String> =
            sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
                .bind(waiting)
                .fetch_optional(&mut watch)
                .await?;
        if state.as_deref() == Some("idle in transaction") {
            break true;
        }
        if start.elapsed() >= STEP {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };

    let frozen = if idle {
        let until = Instant::now() + FROZEN_FOR;
        Some(submits(&engine, &mut raw, n..2 * n, Some(until)).await?)
    } else {
        println!("pg submit, a host frozen in a transaction: not measured (the worker's connection did not stay idle in its transaction)");
        None
    };
    // Whether the frozen transaction was still open when the submits ended.
    let state: Option<String> =
        sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
            .bind(waiting)
            .fetch_optional(&mut watch)
            .await?;
    worker.signal("CONT")?;

    print_latencies("pg submit, none frozen", &calm.submits);
    print_latencies("  raw INSERT meanwhile", &calm.raws);
    if let Some(frozen) = frozen {
        if frozen.held_up {
            println!(
                "pg submit, a host frozen  held up: {} answered, then one had no answer after {:.1} s",
                frozen.submits.len(),
                HELD_UP.as_secs_f64()
            );
        } else {
            print_latencies("pg submit, a host frozen", &frozen.submits);
            print_latencies("  raw INSERT meanwhile", &frozen.raws);
            let open = if state.as_deref() == Some("idle in transaction") {
                "stayed open throughout"
            } else {
                "had ended before the last submit"
            };
            println!(
                "  pg ratio frozen/none: p50 {:.2}x, p99 {:.2}x; submit/raw: none {:.2}x, frozen {:.2}x at p50 (the frozen transaction {open}; aim: no wait)",
                ratio(pct(&frozen.submits, 50.0), pct(&calm.submits, 50.0)),
                ratio(pct(&frozen.submits, 99.0), pct(&calm.submits, 99.0)),
                ratio(pct(&calm.submits, 50.0), pct(&calm.raws, 50.0)),
                ratio(pct(&frozen.submits, 50.0), pct(&frozen.raws, 50.0)),
            );
        }
        if let Some(first) = frozen.submits.first() {
            println!(
                "  pg the first submit after the freeze: {:.3} ms",
                ms(*first)
            );
        }
    }

    // Thawed, the worker settles its job; it must have been sent once.
    let start = Instant::now();
    loop {
        let status: String = sqlx::query_scalar("SELECT status FROM jobs WHERE id = $1::uuid")
            .bind(&job)
            .fetch_one(&mut watch)
            .await?;
        if status != "queued" && status != "running" {
            let sends: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM attempts WHERE job_id = $1::uuid AND sent_at IS NOT NULL",
            )
            .bind(&job)
            .fetch_one(&mut watch)
            .await?;
            println!(
                "  pg the frozen host, thawed: its job {status} {:.1} s later, sent {sends} time{}",
                start.elapsed().as_secs_f64(),
                if sends == 1 { "" } else { "s" }
            );
            break;
        }
        check_deadline(
            start + STEP * 2,
            STEP * 2,
            "the thawed worker's job settled",
        )?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.stop().await?;
    engine.close().await;
    Ok(())
}

/// What a series of submits measured.
struct Series {
    /// Each answered submit's latency.
    submits: Vec<Duration>,
    /// A raw INSERT's after each: the disk's and the server's pace meanwhile.
    raws: Vec<Duration>,
    /// Whether the last submit had no answer within [`HELD_UP`].
    held_up: bool,
}

/// Submits with keys `key-<i>`, one after another, each given [`HELD_UP`] to answer and each
/// followed by a raw INSERT on `raw`; with `until`, it stops early once that instant has passed.
async fn submits(
    engine: &onejob_engine::Engine,
    raw: &mut PgConnection,
    keys: std::ops::Range<usize>,
    until: Option<Instant>,
) -> Result<Series> {
    let mut series = Series {
        submits: Vec::with_capacity(keys.len()),
        raws: Vec::with_capacity(keys.len()),
        held_up: false,
    };
    for i in keys {
        if until.is_some_and(|t| Instant::now() >= t) {
            break;
        }
        let body = crate::common::intent(i);
        let key = format!("key-{i}");
        let start = Instant::now();
        let submit = engine.submit(OWNER, &key, &body);
        match tokio::time::timeout(HELD_UP, submit).await {
            Ok(submitted) => {
                submitted?;
                series.submits.push(start.elapsed());
            }
            Err(_) => {
                series.held_up = true;
                break;
            }
        }
        series.raws.extend(raw_inserts(raw, i..i + 1).await?);
    }
    Ok(series)
}
