//! A SQLite ledger held by another process past the busy timeout (SPEC §14): a `storage`
//! error that says the ledger is busy and what to check, while the executor keeps running
//! and finishes what it had once the file is free.

use crate::common;

use std::time::Duration;

use common::{quick, sandbox, until, OWNER};
use onejob_engine::{Engine, Error, JobStatus, OpenOptions};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_held_by_another_process_is_busy_not_lost() {
    if std::env::var_os(onejob_testkit::TEST_POSTGRES).is_some() {
        eprintln!("a SQLite file's lock: nothing to test on the PostgreSQL pass");
        return;
    }
    onejob_testkit::isolate_keyring();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("onejob.db");
    let options = OpenOptions {
        busy_timeout: Duration::from_millis(300),
        ..OpenOptions::default()
    };
    let e = Engine::open_with(&path, options).await.expect("open");
    // Slow enough that its answer arrives while the file is held.
    let server = sandbox(quick(800)).await;
    let provider = json!({
        "name": "slow", "kind": "http", "base_url": server.url(),
        "soft_timeout_ms": 5000, "hard_timeout_ms": 10_000, "honours_idempotency_key": false
    });
    e.add_provider(&provider.to_string())
        .await
        .expect("provider");
    let intent = |text: &str| json!({ "route": ["slow"], "input": { "text": text } }).to_string();
    let (executor, _stop, running) = common::start_with(&e, common_options());
    let first = e
        .submit(OWNER, "first", &intent("first"))
        .await
        .expect("submit");
    until(&e, &first.job.id, |d| d.job.status == JobStatus::Running).await;

    let mut holder = onejob_testkit::fixtures::hold_sqlite_file(&path);
    let refused = e
        .submit(OWNER, "second", &intent("second"))
        .await
        .expect_err("the file is held");
    let Error::Storage { message, details } = &refused else {
        panic!("{refused:?}");
    };
    assert_eq!(details.kind, onejob_engine::error::StorageKind::Busy);
    assert!(
        message.starts_with(&format!("the ledger at {} is busy", path.display()))
            && message.contains("another process"),
        "the error names the ledger, says it is busy and what to check: {message}"
    );
    assert!(!message.contains("database is locked"), "{message}");
    // Reads go on while a writer waits.
    e.job(OWNER, &first.job.id)
        .await
        .expect("a read while held");
    // The answer arrives while held; the executor keeps it until the file is free.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!running.is_finished(), "the executor keeps running");

    drop(holder.stdin.take());
    holder.wait().expect("the holder ends");
    let done = until(&e, &first.job.id, |d| d.job.status == JobStatus::Succeeded).await;
    assert_eq!(done.attempts.len(), 1, "{done:#?}");
    let second = e
        .submit(OWNER, "second", &intent("second"))
        .await
        .expect("now it goes");
    until(&e, &second.job.id, |d| d.job.status == JobStatus::Succeeded).await;
    assert_eq!(
        server.log().len(),
        2,
        "each job sent once: {:?}",
        server.log()
    );
    assert!(!running.is_finished());
    drop(executor);
}

fn common_options() -> onejob_engine::executor::ExecutorOptions {
    onejob_engine::executor::ExecutorOptions {
        poll_every: Duration::from_millis(50),
        backoff_base: Duration::from_millis(50),
        reconcile_every: Duration::from_secs(3600),
        ..onejob_engine::executor::ExecutorOptions::default()
    }
}
