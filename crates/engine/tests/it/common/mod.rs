//! Shared scaffolding for the engine's tests: a real ledger, a SQLite file in a temporary
//! folder or, on the PostgreSQL pass (`ONEJOB_TEST_POSTGRES`, see onejob-testkit), a fresh
//! database of its own; and a plain connection to it beside the engine.

#![allow(dead_code)]

use std::time::Duration;

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::sandbox::{Dials, Sandbox};
use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{AttemptError, Engine, JobAttempt, JobDetail, Resolution, Submitted, Verdict};
use serde_json::{json, Value};

pub const OWNER: &str = "local";

/// A fresh ledger, with providers `primary` and `fallback` configured.
pub struct Ledger {
    pub engine: Engine,
    pub dir: tempfile::TempDir,
    /// What `Engine::open` was given: the file's path, or the database's URL.
    pub location: String,
}

impl Ledger {
    pub async fn new() -> Ledger {
        let dir = tempfile::tempdir().expect("temp dir");
        let location = onejob_testkit::ledger_location(&dir.path().join("onejob.db"));
        let engine = Engine::open(&location).await.expect("open");
        for name in ["primary", "fallback"] {
            engine
                .add_provider(&provider_json(name))
                .await
                .expect("provider");
        }
        Ledger {
            engine,
            dir,
            location,
        }
    }

    /// A second engine on the same ledger, as another process would open it.
    pub async fn reopen(&self) -> Engine {
        Engine::open(&self.location).await.expect("reopen")
    }

    /// A plain connection to the ledger, beside the engine.
    pub async fn raw(&self) -> Raw {
        Raw::connect(&self.location).await
    }

    pub async fn submit(&self, key: &str) -> Submitted {
        self.engine
            .submit(OWNER, key, &intent(json!({ "text": key })))
            .await
            .expect("submit")
    }

    /// A new job with one attempt at `primary`, already `in_flight`.
    pub async fn in_flight(&self, key: &str) -> JobAttempt {
        let job = self.submit(key).await.job;
        self.next_in_flight(&job.id, "primary").await
    }

    /// The job's next attempt at `provider`, moved to `in_flight`.
    pub async fn next_in_flight(&self, job_id: &str, provider: &str) -> JobAttempt {
        let mut claimed = self
            .engine
            .claim_attempt(job_id, provider)
            .await
            .expect("claim");
        claimed.attempt = self
            .engine
            .mark_sent(
                &claimed.attempt.id,
                "executor-test",
                Duration::from_secs(10),
            )
            .await
            .expect("sent");
        claimed
    }

    /// A new job whose one attempt at `primary` was sent and then timed out: `unknown`.
    pub async fn unknown(&self, key: &str) -> JobAttempt {
        let mut sent = self.in_flight(key).await;
        sent.attempt = self
            .engine
            .mark_unknown(&sent.attempt.id, why("soft_timeout"))
            .await
            .expect("unknown");
        sent
    }

    pub async fn abandon(&self, attempt_id: &str) -> JobAttempt {
        self.engine
            .resolve(OWNER, attempt_id, Verdict::Abandoned, Resolution::default())
            .await
            .expect("abandon")
    }

    pub async fn count(&self, table: &str) -> i64 {
        let raw = self.raw().await;
        let sql = format!("SELECT count(*) FROM {table}");
        let (n,): (i64,) = raw.fetch_one(Sql::both(&sql), &[]).await.expect("count");
        raw.close().await;
        n
    }
}

/// One statement in each backend's dialect; parameters are `$1`, `$2`, … in both.
#[derive(Clone, Copy)]
pub struct Sql<'a> {
    pub sqlite: &'a str,
    pub postgres: &'a str,
}

impl<'a> Sql<'a> {
    /// A statement both backends read alike.
    pub const fn both(sql: &'a str) -> Sql<'a> {
        Sql {
            sqlite: sql,
            postgres: sql,
        }
    }
}

/// A plain connection to a ledger beside its engines, as another program would open one: for
/// what a test must see or do behind the engine's back (count rows, move the clock, write what
/// the engine never would).
pub enum Raw {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Raw {
    /// A pool on the ledger at `location`, a file's path or a `postgres://` URL.
    pub async fn connect(location: &str) -> Raw {
        if onejob_testkit::is_url(location) {
            Raw::Postgres(sqlx::PgPool::connect(location).await.expect("raw pool"))
        } else {
            let url = format!("sqlite:{location}");
            Raw::Sqlite(sqlx::SqlitePool::connect(&url).await.expect("raw pool"))
        }
    }

    /// Runs one statement with text parameters; the rows it touched.
    pub async fn execute(&self, sql: Sql<'_>, params: &[&str]) -> Result<u64, sqlx::Error> {
        match self {
            Raw::Sqlite(pool) => {
                let mut query = sqlx::query(sql.sqlite);
                for param in params {
                    query = query.bind(*param);
                }
                query.execute(pool).await.map(|r| r.rows_affected())
            }
            Raw::Postgres(pool) => {
                let mut query = sqlx::query(sql.postgres);
                for param in params {
                    query = query.bind(*param);
                }
                query.execute(pool).await.map(|r| r.rows_affected())
            }
        }
    }

    /// The one row a query with text parameters returns.
    pub async fn fetch_one<T>(&self, sql: Sql<'_>, params: &[&str]) -> Result<T, sqlx::Error>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
            + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
            + Send
            + Unpin,
    {
        match self {
            Raw::Sqlite(pool) => {
                let mut query = sqlx::query_as(sql.sqlite);
                for param in params {
                    query = query.bind(*param);
                }
                query.fetch_one(pool).await
            }
            Raw::Postgres(pool) => {
                let mut query = sqlx::query_as(sql.postgres);
                for param in params {
                    query = query.bind(*param);
                }
                query.fetch_one(pool).await
            }
        }
    }

    pub async fn close(&self) {
        match self {
            Raw::Sqlite(pool) => pool.close().await,
            Raw::Postgres(pool) => pool.close().await,
        }
    }
}

pub fn provider_json(name: &str) -> String {
    json!({
        "name": name,
        "kind": "http",
        "base_url": format!("http://127.0.0.1:9/{name}"),
        "soft_timeout_ms": 1000,
        "hard_timeout_ms": 5000,
        "honours_idempotency_key": false
    })
    .to_string()
}

/// Adds (or replaces) the provider `config` describes.
pub async fn add_provider(engine: &Engine, config: &Value) {
    engine
        .add_provider(&config.to_string())
        .await
        .expect("provider");
}

/// A loopback server that reads each request whole, then says nothing for 3 s: past the hard
/// deadline of the tests' providers, so their attempts end `unknown`.
pub fn silent_past_the_deadline() -> onejob_testkit::RawServer {
    onejob_testkit::RawServer::start(|_| {
        std::thread::sleep(Duration::from_secs(3));
        Vec::new()
    })
    .expect("server")
}

/// Submits `intent` for [`OWNER`] under `key`; the new job's id.
pub async fn submit_intent(engine: &Engine, key: &str, intent: &Value) -> String {
    engine
        .submit(OWNER, key, &intent.to_string())
        .await
        .expect("submit")
        .job
        .id
}

pub fn intent(input: Value) -> String {
    json!({ "route": ["primary", "fallback"], "input": input }).to_string()
}

pub fn why(kind: &str) -> AttemptError {
    AttemptError {
        kind: kind.to_owned(),
        message: format!("{kind} in a test"),
    }
}

pub fn kinds(detail: &onejob_engine::JobDetail) -> Vec<&str> {
    detail.events.iter().map(|e| e.kind.as_str()).collect()
}

/// A sandbox's dials with no fault and a fixed `latency_ms`: what most tests want of it.
pub fn quick(latency_ms: u32) -> Dials {
    Dials {
        latency_ms,
        jitter_ms: 0,
        ..Dials::default()
    }
}

/// A sandbox on a random loopback port.
pub async fn sandbox(dials: Dials) -> Sandbox {
    Sandbox::start(([127, 0, 0, 1], 0).into(), dials)
        .await
        .expect("sandbox")
}

/// An executor paced for tests, running until the returned sender is dropped.
pub fn start(engine: &Engine) -> (Executor, tokio::sync::oneshot::Sender<()>) {
    let options = ExecutorOptions {
        poll_every: Duration::from_millis(50),
        backoff_base: Duration::from_millis(50),
        reconcile_every: Duration::from_secs(3600),
        ..ExecutorOptions::default()
    };
    let (executor, stop, _) = start_with(engine, options);
    (executor, stop)
}

/// An executor with `options`, running until the returned sender is sent to or dropped;
/// the handle ends when it has stopped.
#[allow(dead_code)]
pub fn start_with(
    engine: &Engine,
    options: ExecutorOptions,
) -> (
    Executor,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let executor = Executor::new(engine.clone(), options).expect("executor");
    let (stop, task) = run(&executor);
    (executor, stop, task)
}

/// Runs `executor` until the returned sender is sent to or dropped; the handle ends when it
/// has stopped.
pub fn run(
    executor: &Executor,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = executor.clone();
    let task = tokio::spawn(async move {
        running
            .run(async {
                let _ = stopped.await;
            })
            .await
    });
    (stop, task)
}

/// Stops an executor that [`start_with`] or [`run`] started, and waits until it has.
pub async fn stop_and_wait(
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
) {
    let _ = stop.send(());
    task.await.expect("executor");
}

/// Polls the job until `done` holds, for at most 20 s.
pub async fn until(engine: &Engine, job_id: &str, done: impl Fn(&JobDetail) -> bool) -> JobDetail {
    for _ in 0..400 {
        let detail = engine.job(OWNER, job_id).await.expect("job");
        if done(&detail) {
            return detail;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{:#?}", engine.job(OWNER, job_id).await.expect("job"));
}
