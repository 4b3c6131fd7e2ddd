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
