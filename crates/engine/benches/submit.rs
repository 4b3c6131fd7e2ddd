//! Submit throughput, printed beside baselines measured in the same run (never asserted):
//! - 10,000 durable submits with new keys, one after another, against raw single-row
//!   INSERTs into the same `jobs` table on a second file with the same pragmas;
//! - 1,000 concurrent submits with one key against 1,000 with distinct keys.
//!
//! Run: `cargo bench -p onejob-engine --bench submit` (`ONEJOB_BENCH_N` scales the first part).

use std::time::{Duration, Instant};

use onejob_engine::Engine;
use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, SqliteConnection};

const OWNER: &str = "bench";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::var("ONEJOB_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir()?;
    println!("onejob submit benchmark: {n} sequential, 1000 concurrent; synchronous=FULL, WAL");

    // Alternating blocks, so a noisy neighbour slows both sides alike.
    let mut raw_conn = raw_connection(&dir.path().join("raw.db")).await?;
    let engine = engine_with_provider(&dir.path().join("submit.db")).await?;
    let (mut raw, mut submits) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let block = (n / 10).max(1);
    for start in (0..n).step_by(block) {
        let range = start..(start + block).min(n);
        raw.extend(raw_inserts(&mut raw_conn, range.clone()).await?);
        submits.extend(sequential_submits(&engine, range).await?);
    }
    engine.close().await;
    print_latencies("raw INSERT (baseline)", &raw);
    print_latencies("engine submit", &submits);
    println!(
        "  ratio submit/raw: p50 {:.2}x, p99 {:.2}x, total time {:.2}x (aim: <= 1.3x)",
        ratio(pct(&submits, 50.0), pct(&raw, 50.0)),
        ratio(pct(&submits, 99.0), pct(&raw, 99.0)),
        ratio(total(&submits), total(&raw)),
    );

    let distinct_engine = engine_with_provider(&dir.path().join("distinct.db")).await?;
    let distinct = storm(&distinct_engine, 1000, false).await?;
    distinct_engine.close().await;
    let one_key_engine = engine_with_provider(&dir.path().join("onekey.db")).await?;
    let one_key = storm(&one_key_engine, 1000, true).await?;
    one_key_engine.close().await;
    println!(
        "1000 concurrent submits, distinct keys: {:>8.1} ms ({:.0} submits/s)",
        ms(distinct),
        1000.0 / distinct.as_secs_f64()
    );
    println!(
        "1000 concurrent submits, one key:       {:>8.1} ms ({:.0} submits/s)",
        ms(one_key),
        1000.0 / one_key.as_secs_f64()
    );
    println!(
        "  ratio one-key/distinct: {:.2}x (aim: <= 1.0x)",
        ratio(one_key, distinct)
    );
    Ok(())
}

async fn engine_with_provider(path: &std::path::Path) -> Result<Engine, onejob_engine::Error> {
    let engine = Engine::open(path).await?;
    let provider = json!({
        "name": "primary", "kind": "http", "base_url": "http://127.0.0.1:9/",
        "soft_timeout_ms": 1000, "hard_timeout_ms": 5000, "honours_idempotency_key": false
    });
    engine.add_provider(&provider.to_string()).await?;
    Ok(engine)
}

fn intent(i: usize) -> String {
    json!({
        "route": ["primary"],
        "input": { "prompt": format!("summarise ticket #{i}"), "amount": i, "currency": "PLN" },
        "params": { "temperature": 0, "max_tokens": 256 }
    })
    .to_string()
}

async fn sequential_submits(
    engine: &Engine,
    keys: std::ops::Range<usize>,
) -> Result<Vec<Duration>, onejob_engine::Error> {
    let mut times = Vec::with_capacity(keys.len());
    for i in keys {
        let body = intent(i);
        let start = Instant::now();
        engine.submit(OWNER, &format!("key-{i}"), &body).await?;
        times.push(start.elapsed());
    }
    Ok(times)
}

/// A connection to a file with the same pragmas and a table shaped like `jobs`: the same
/// columns, constraints and indexes, none of the ledger's triggers.
async fn raw_connection(
    path: &std::path::Path,
) -> Result<SqliteConnection, Box<dyn std::error::Error>> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(onejob_engine::BUSY_TIMEOUT)
        .create_if_missing(true)
        .connect()
        .await?;
    sqlx::raw_sql(RAW_TABLE).execute(&mut conn).await?;
    Ok(conn)
}

const RAW_TABLE: &str = "
CREATE TABLE jobs (
    id TEXT PRIMARY KEY NOT NULL, owner_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL, intent TEXT NOT NULL CHECK (json_valid(intent)),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'unknown', 'succeeded', 'failed', 'cancelled')),
    version INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0), completed_by TEXT,
    result TEXT CHECK (result IS NULL OR json_valid(result)), error TEXT CHECK (error IS NULL OR json_valid(error)),
    flagged_for_review INTEGER NOT NULL DEFAULT 0 CHECK (flagged_for_review IN (0, 1)),
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, finished_at TEXT,
    UNIQUE (owner_id, idempotency_key), CHECK ((status = 'succeeded') = (completed_by IS NOT NULL))
);
CREATE INDEX jobs_by_owner ON jobs (owner_id, id);
CREATE INDEX jobs_by_owner_status ON jobs (owner_id, status, id);
CREATE INDEX jobs_needing_attention ON jobs (owner_id) WHERE status = 'unknown' OR flagged_for_review = 1;
CREATE INDEX jobs_queued ON jobs (id) WHERE status = 'queued';
";

/// One autocommitted single-row INSERT a job: the floor a durable submit cannot beat.
async fn raw_inserts(
    conn: &mut SqliteConnection,
    keys: std::ops::Range<usize>,
) -> Result<Vec<Duration>, sqlx::Error> {
    let mut times = Vec::with_capacity(keys.len());
    for i in keys {
        let body = intent(i);
        let start = Instant::now();
        sqlx::query(
            "INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, 'queued', 0, ?, ?)",
        )
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(OWNER)
        .bind(format!("key-{i}"))
        .bind(format!("{i:064x}"))
        .bind(&body)
        .bind(onejob_engine::store::now())
        .bind(onejob_engine::store::now())
        .execute(&mut *conn)
        .await?;
        times.push(start.elapsed());
    }
    Ok(times)
}

async fn storm(
    engine: &Engine,
    n: usize,
    one_key: bool,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let body = intent(0);
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let engine = engine.clone();
            let body = body.clone();
            let key = if one_key {
                "storm".to_owned()
            } else {
                format!("storm-{i}")
            };
            tokio::spawn(async move { engine.submit(OWNER, &key, &body).await })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(start.elapsed())
}

fn pct(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let i = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn total(times: &[Duration]) -> Duration {
    times.iter().sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE)
}

fn print_latencies(label: &str, times: &[Duration]) {
    let secs = total(times).as_secs_f64();
    println!(
        "{label:<24} p50 {:>7.3} ms  p99 {:>7.3} ms  {:>8.0} jobs/s",
        ms(pct(times, 50.0)),
        ms(pct(times, 99.0)),
        times.len() as f64 / secs,
    );
}
