//! The bulk operation's hand-off to submits waiting for SQLite's writer (ADR 0057).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use super::*;
use crate::bulk::BulkFilter;
use crate::store::sqlite::WriterGuard;
use crate::store::Db;

const INTENT: &str = r#"{"route": ["sandbox"], "input": {"n": 1}}"#;

/// Yields until `n` wait for the writer `held` holds.
async fn until_waiting(held: &WriterGuard, n: usize) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while held.waiting() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("waiting for the writer");
}

/// A submit that waits for the SQLite writer while a bulk batch holds it is committed by
/// that batch (ADR 0057): answered while a third write, queued before it, holds the writer
/// after the batch. Without the hand-off it would wait for that third write to end.
#[tokio::test]
async fn a_submit_waiting_beside_a_bulk_batch_is_committed_by_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
    for i in 0..20 {
        engine
            .submit("local", &format!("queued-{i}"), INTENT)
            .await
            .unwrap();
    }
    let request = BulkRequest {
        action: BulkAction::Cancel,
        filter: BulkFilter {
            status: Some(JobStatus::Queued),
            ..Default::default()
        },
        verdict: None,
        provider: None,
        dry_run: false,
    };
    let started = engine
        .bulk_start("local", "cancel", &request)
        .await
        .unwrap();
    let id = started.operation.id.unwrap();
    let Db::Sqlite(db) = &engine.db else {
        unreachable!("a file's ledger")
    };
    let held = db.writer.lock().await.unwrap();
    let run = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.bulk_run("local", &id, |_| {}).await })
    };
    until_waiting(&held, 1).await;
    let (holding, mut holds) = tokio::sync::oneshot::channel();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let third = {
        let writer = db.writer.clone();
        tokio::spawn(async move {
            let guard = writer.lock().await.unwrap();
            holding.send(()).unwrap();
            released.await.unwrap();
            drop(guard);
        })
    };
    until_waiting(&held, 2).await;
    let submit = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.submit("local", "beside", INTENT).await })
    };
    until_waiting(&held, 3).await;
    drop(held);

    let submitted = tokio::time::timeout(Duration::from_secs(60), submit)
        .await
        .expect("the submit is answered while the third write holds the writer")
        .unwrap()
        .unwrap();
    assert!(!submitted.replayed);
    // The batch went first, and the third write holds the writer still.
    holds.try_recv().expect("the third write holds the writer");
    release.send(()).unwrap();
    third.await.unwrap();
    let done = run.await.unwrap().unwrap();
    assert_eq!((done.matched, done.changed), (20, 20));
    // Not in the operation's set, fixed before it was submitted.
    let job = engine.job("local", &submitted.job.id).await.unwrap().job;
    assert_eq!(job.status, JobStatus::Queued);
}
