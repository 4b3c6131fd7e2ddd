//! Behaviours the model-based test (`model.rs`) found at odds with SPEC.md, each reproduced
//! on its own, deterministically.

mod common;

use common::{why, Ledger, OWNER};
use onejob_engine::{Cause, JobStatus};
use serde_json::json;

/// A status lookup starts while an attempt is `unknown`; before it returns, the person cancels
/// the job (which closes the attempt as `abandoned`). The lookup then says the provider did the
/// work. SPEC §5: an answer that arrives after the job was cancelled is dropped and flagged for
/// review, "the side effect may have happened, and the person must be able to see that".
#[tokio::test]
async fn a_lookup_that_finds_the_work_done_after_a_cancel_is_flagged_for_review() {
    let ledger = Ledger::new().await;
    let attempt = ledger.in_flight("lookup-after-cancel").await.attempt;
    let e = &ledger.engine;
    e.mark_unknown(&attempt.id, why("timeout"))
        .await
        .expect("unknown");
    e.cancel(OWNER, &attempt.job_id).await.expect("cancel");

    let looked_up = e
        .complete(&attempt.id, &json!({ "done": true }), Cause::Reconciliation)
        .await;

    let refused = looked_up.expect_err("an abandoned attempt moves only by a late answer");
    assert_eq!(refused.code(), "invalid_transition");
    let detail = e.job(OWNER, &attempt.job_id).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Cancelled);
    assert!(
        detail.job.flagged_for_review,
        "the lookup found the work done after the cancel ({refused:?}), yet the job is not flagged for review"
    );
    assert!(detail.attempts[0].flagged_for_review);
    assert!(detail
        .events
        .iter()
        .any(|ev| ev.kind == "late_answer_flagged"));
}

/// On PostgreSQL, a statement that fails aborts its whole transaction. A person's second retry
/// while the first retry's attempt is open was refused by the one-open-attempt index as an
/// error, and the ledger's next statement (reading the open attempt, to name it) then failed
/// with `storage` instead of the `attempt_blocked` SPEC §4 promises (the model test's schedule:
/// submit, retry, retry). The refusal is now a row not inserted, on both backends.
#[tokio::test]
async fn a_second_retry_while_one_is_open_is_attempt_blocked_naming_it_on_every_backend() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let job = ledger.submit("retry-twice").await.job;
    let first = e
        .retry(OWNER, &job.id, None)
        .await
        .expect("the first retry");
    let second = e
        .retry(OWNER, &job.id, None)
        .await
        .expect_err("a second attempt while the first is open");
    assert_eq!(second.code(), "attempt_blocked", "{second:?}");
    match second {
        onejob_engine::Error::AttemptBlocked { details, .. } => {
            assert_eq!(details.attempt_id, first.attempt.id);
        }
        other => panic!("{other:?}"),
    }
}
