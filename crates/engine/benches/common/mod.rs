//! What the benchmarks share: the ledger with one provider, the intent they submit, the raw
//! durable INSERT that is every figure's baseline (SQLite here, PostgreSQL in `postgres`), and
//! how figures are printed. The HTTP benchmark of the command line's package uses it too.

// Each benchmark uses its own part.
#![allow(dead_code)]

pub mod executor;
pub mod postgres;

use std::time::{Duration, Instant};

use onejob_engine::Engine;
use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, SqliteConnection};

pub const OWNER: &str = "bench";

/// A count from the environment variable `name`, or `default` when it is unset or not a number.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs a benchmark on two worker threads, as many as this machine has cores.
pub fn block_on(
    bench: impl std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>,
) -> Result<(), Box<dyn std::error::Error>> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(bench)
}

pub async fn engine_with_provider(path: &std::path::Path) -> Result<Engine, onejob_engine::Error> {
    let engine = Engine::open(path).await?;
    let provider = json!({
        "name": "primary", "kind": "http", "base_url": "http://127.0.0.1:9/",
        "soft_timeout_ms": 1000, "hard_timeout_ms": 5000, "honours_idempotency_key": false
    });
    engine.add_provider(&provider.to_string()).await?;
    Ok(engine)
}

pub fn intent(i: usize) -> String {
    json!({
        "route": ["primary"],
        "input": { "prompt": format!("summarise ticket #{i}"), "amount": i, "currency": "PLN" },
        "params": { "temperature": 0, "max_tokens": 256 }
    })
    .to_string()
}

/// A connection to a file with the same durability pragmas and a table shaped like `jobs`: the
/// same columns, constraints and indexes, none of the ledger's triggers. It keeps SQLite's
/// default checkpoint interval: it stands for a plain INSERT, and the ledger's longer one is
/// the ledger's choice (docs/adr/, record 0027).
pub async fn raw_connection(
    path: &std::path::Path,
) -> Result<SqliteConnection, Box<dyn std::error::Error>> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(onejob_engine::OpenOptions::default().busy_timeout)
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
CREATE INDEX jobs_open_by_status ON jobs (status, id) WHERE status IN ('queued', 'running', 'unknown');
";

/// One autocommitted single-row INSERT a job: the floor a durable submit cannot beat.
pub async fn raw_inserts(
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
        .bind(onejob_engine::testing::now())
        .bind(onejob_engine::testing::now())
        .execute(&mut *conn)
        .await?;
        times.push(start.elapsed());
    }
    Ok(times)
}

pub fn pct(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let i = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

pub fn total(times: &[Duration]) -> Duration {
    times.iter().sum()
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The rates of storms of 1,000 submits that took `times`, in submits/s, in the order run.
pub fn storm_rates(times: &[Duration]) -> String {
    let rates: Vec<String> = times
        .iter()
        .map(|t| format!("{:.0}", 1000.0 / t.as_secs_f64()))
        .collect();
    rates.join(", ")
}

pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE)
}

pub fn print_latencies(label: &str, times: &[Duration]) {
    let secs = total(times).as_secs_f64();
    println!(
        "{label:<24} p50 {:>7.3} ms  p99 {:>7.3} ms  {:>8.0} jobs/s",
        ms(pct(times, 50.0)),
        ms(pct(times, 99.0)),
        times.len() as f64 / secs,
    );
}

/// `engine.submit` with new keys `key-<i>`, one after another; the latency of each.
pub async fn sequential_submits(
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

/// `n` submits at once, with distinct keys or all with one key; how long until all answered.
pub async fn storm(
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
