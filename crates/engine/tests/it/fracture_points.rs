//! The seed's fracture points, each a scenario a user meets: a double click, a reused key,
//! and answers that finish in reverse order.

use crate::common;

use common::{intent, kinds, Ledger, OWNER};
use onejob_engine::testing::{Cause, InternalCalls as _, Outcome};
use onejob_engine::{AttemptState, Engine, JobStatus};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn double_click_returns_one_job() {
    let ledger = Ledger::new().await;
    // Four engines on one file stand in for several processes sharing the database.
    let mut engines = vec![ledger.engine.clone()];
    for _ in 0..3 {
        engines.push(ledger.reopen().await);
    }
    let body = intent(json!({ "prompt": "ticket #45" }));
    let mut tasks = Vec::new();
    for i in 0..64 {
        let engine: Engine = engines[i % engines.len()].clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            engine.submit(OWNER, "draft-45", &body).await
        }));
    }
    let mut ids = Vec::new();
    let mut replayed = 0;
    for task in tasks {
        let submitted = task.await.expect("task").expect("submit");
        ids.push(submitted.job.id);
        replayed += usize::from(submitted.replayed);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "64 clicks, one job id");
    assert_eq!(replayed, 63);
    assert_eq!(ledger.count("jobs").await, 1);
    let detail = ledger.engine.job(OWNER, &ids[0]).await.expect("job");
    assert_eq!(
        kinds(&detail),
        ["submitted"],
        "one job, one submission event"
    );
    assert_eq!(detail.job.status, JobStatus::Queued);
    assert_eq!(detail.job.version, 0);
}

#[tokio::test]
async fn same_key_other_payload_conflicts() {
    let ledger = Ledger::new().await;
    let first = ledger
        .engine
        .submit(OWNER, "k", &intent(json!({ "a": 1, "b": 2 })))
        .await
        .expect("first");
    let err = ledger
        .engine
        .submit(OWNER, "k", &intent(json!({ "a": 1, "b": 3 })))
        .await
        .expect_err("another intent under the same key");
    match &err {
        onejob_engine::Error::IdempotencyConflict { details, message } => {
            assert_eq!(details.existing_job_id, first.job.id);
            assert!(message.contains(&first.job.id), "{message}");
        }
        other => panic!("expected idempotency_conflict, got {other:?}"),
    }
    let after = ledger.engine.job(OWNER, &first.job.id).await.expect("job");
    assert_eq!(after.job, first.job, "the existing job is untouched");
    assert_eq!(ledger.count("jobs").await, 1);

    // Key order and insignificant whitespace are the same intent.
    let same = r#"{ "input": {"b": 2, "a": 1},
                    "route": ["primary", "fallback"] }"#;
    let again = ledger
        .engine
        .submit(OWNER, "k", same)
        .await
        .expect("same intent");
    assert!(again.replayed);
    assert_eq!(again.job.id, first.job.id);
}

/// A (primary, created first) is abandoned, B (fallback) is created; B answers first, then A.
#[tokio::test]
async fn reverse_order_completion_second_loses() {
    for primary_answers_last in [true, false] {
        let ledger = Ledger::new().await;
        let a = ledger.in_flight("ticket").await.attempt;
        let job_id = a.job_id.clone();
        ledger.abandon(&a.id).await;
        let b = ledger.next_in_flight(&job_id, "fallback").await.attempt;

        let (first, second) = if primary_answers_last {
            (&b, &a)
        } else {
            (&a, &b)
        };
        let won = ledger
            .engine
            .complete(&first.id, &json!({ "from": first.provider }), Cause::Answer)
            .await
            .expect("first answer");
        assert_eq!(won.outcome, Outcome::Won);
        let lost = ledger
            .engine
            .complete(
                &second.id,
                &json!({ "from": second.provider }),
                Cause::Answer,
            )
            .await
            .expect("second answer");
        assert_eq!(lost.outcome, Outcome::Lost, "the second to finish loses");

        let detail = ledger.engine.job(OWNER, &job_id).await.expect("job");
        let job = &detail.job;
        assert_eq!(job.status, JobStatus::Succeeded);
        assert_eq!(job.completed_by.as_deref(), Some(first.id.as_str()));
        assert_eq!(job.result, Some(json!({ "from": first.provider })));
        assert_eq!(job.version, 1, "the version rose exactly once");
        let state = |id: &str| detail.attempts.iter().find(|x| x.id == id).map(|x| x.state);
        assert_eq!(state(&first.id), Some(AttemptState::Succeeded));
        assert_eq!(state(&second.id), Some(AttemptState::Lost));
        let race = detail
            .events
            .iter()
            .find(|e| e.kind == "race_lost")
            .expect("a race_lost event");
        assert_eq!(race.detail["winner"], json!(first.id));
        assert_eq!(race.detail["loser"], json!(second.id));
        let sha = onejob_engine::testing::canonical_sha256(&json!({ "from": second.provider }));
        assert_eq!(race.detail["payload_sha256"], json!(sha));
        assert!(
            !serde_json::to_string(&detail)
                .expect("json")
                .contains(&format!("\"from\":\"{}\"", second.provider)),
            "the loser's payload is dropped, not stored"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_answers_have_exactly_one_winner() {
    let ledger = Ledger::new().await;
    let job_id = ledger.submit("storm").await.job.id;
    let mut attempts = Vec::new();
    for i in 0..16 {
        let provider = if i % 2 == 0 { "primary" } else { "fallback" };
        let attempt = ledger.next_in_flight(&job_id, provider).await.attempt;
        if i < 15 {
            ledger.abandon(&attempt.id).await;
        }
        attempts.push(attempt);
    }
    let second = ledger.reopen().await;
    let mut tasks = Vec::new();
    for (i, attempt) in attempts.iter().enumerate() {
        let engine = if i % 2 == 0 {
            ledger.engine.clone()
        } else {
            second.clone()
        };
        let id = attempt.id.clone();
        tasks.push(tokio::spawn(async move {
            engine
                .complete(&id, &json!({ "n": i }), Cause::Answer)
                .await
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let done = task.await.expect("task").expect("complete");
        if done.outcome == Outcome::Won {
            winners.push(done.attempt.id);
        } else {
            assert_eq!(done.outcome, Outcome::Lost);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner");
    let detail = ledger.engine.job(OWNER, &job_id).await.expect("job");
    assert_eq!(detail.job.completed_by.as_ref(), winners.first());
    assert_eq!(detail.job.version, 1);
    let lost = detail
        .attempts
        .iter()
        .filter(|a| a.state == AttemptState::Lost)
        .count();
    assert_eq!(lost, 15);
    assert_eq!(
        kinds(&detail).iter().filter(|k| **k == "race_lost").count(),
        15
    );
}
