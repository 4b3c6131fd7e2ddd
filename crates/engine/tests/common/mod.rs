//! Shared scaffolding for the engine's tests: a real ledger file in a temporary folder.

#![allow(dead_code)]

use std::time::Duration;

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::sandbox::{Dials, Sandbox};
use onejob_engine::{AttemptError, Engine, JobAttempt, JobDetail, Resolution, Submitted, Verdict};
use serde_json::{json, Value};

pub const OWNER: &str = "local";

/// A ledger on a fresh file, with providers `primary` and `fallback` configured.
pub struct Ledger {
    pub engine: Engine,
    pub dir: tempfile::TempDir,
}

impl Ledger {
    pub async fn new() -> Ledger {
        let dir = tempfile::tempdir().expect("temp dir");
        let engine = Engine::open(dir.path().join("onejob.db"))
            .await
            .expect("open");
        for name in ["primary", "fallback"] {
            engine
                .add_provider(&provider_json(name))
                .await
                .expect("provider");
        }
        Ledger { engine, dir }
    }

    pub fn db_path(&self) -> std::path::PathBuf {
        self.dir.path().join("onejob.db")
    }

    /// A second engine on the same file, as another process would open it.
    pub async fn reopen(&self) -> Engine {
        Engine::open(self.db_path()).await.expect("reopen")
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

    pub async fn abandon(&self, attempt_id: &str) -> JobAttempt {
        self.engine
            .resolve(OWNER, attempt_id, Verdict::Abandoned, Resolution::default())
            .await
            .expect("abandon")
    }

    pub async fn count(&self, table: &str) -> i64 {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}", self.db_path().display()))
            .await
            .expect("pool");
        let (n,): (i64,) = sqlx::query_as(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&pool)
            .await
            .expect("count");
        pool.close().await;
        n
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
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = executor.clone();
    let task = tokio::spawn(async move {
        running
            .run(async {
                let _ = stopped.await;
            })
            .await
    });
    (executor, stop, task)
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
