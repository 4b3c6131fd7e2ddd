//! Budgets (SPEC §17): an attempt whose worst case would pass a budget is not sent, and its job
//! waits for the budget's next period; an `unknown` attempt keeps its worst case reserved until
//! a person resolves it.

use crate::common;

use common::{start, until, Ledger, OWNER};
use onejob_engine::{AttemptState, Engine, JobDetail, JobStatus, Resolution, Verdict};
use serde_json::json;

/// A sandbox provider `name` answering at once at 0.01 USD a request, its soft and hard
/// timeouts as given.
async fn priced_sandbox(engine: &Engine, name: &str, dials: serde_json::Value, soft: u64) {
    let provider = json!({
        "name": name, "kind": "sandbox", "soft_timeout_ms": soft, "hard_timeout_ms": soft * 2,
        "honours_idempotency_key": false, "dials": dials,
        "price": { "currency": "USD", "per_request": "0.01" }
    });
    common::add_provider(engine, &provider).await;
}

async fn submit(engine: &Engine, key: &str, provider: &str) -> String {
    let intent = json!({ "route": [provider], "input": { "key": key }, "max_attempts": 1 });
    common::submit_intent(engine, key, &intent).await
}

fn kept_back(detail: &JobDetail) -> bool {
    detail.job.status == JobStatus::Queued
        && detail.job.not_before.is_some()
        && detail.events.iter().any(|e| e.kind == "budget_reached")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_sends_what_it_holds_and_the_rest_wait_for_its_next_period() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    priced_sandbox(e, "priced", json!({"latency_ms": 0, "jitter_ms": 0}), 5000).await;
    let (budget, replaced) = e
        .set_budget(
            "two-a-day",
            r#"{"limit": "0.02", "currency": "USD", "period": "day"}"#,
            None,
        )
        .await
        .expect("budget");
    assert!(!replaced);
    assert_eq!(
        (budget.limit.as_str(), budget.used.as_str()),
        ("0.02", "0.00")
    );
    let first = submit(e, "budget-1", "priced").await;
    let (_executor, stop) = start(e);
    until(e, &first, |d| d.job.status == JobStatus::Succeeded).await;
    let second = submit(e, "budget-2", "priced").await;
    until(e, &second, |d| d.job.status == JobStatus::Succeeded).await;
    let third = submit(e, "budget-3", "priced").await;
    let detail = until(e, &third, kept_back).await;
    drop(stop);

    let attempt = &detail.attempts[0];
    assert_eq!(attempt.state, AttemptState::Failed);
    let error = attempt.error.as_ref().expect("why it was not sent");
    assert_eq!(error.kind, "budget_reached");
    assert!(error.message.contains("two-a-day"), "{}", error.message);
    assert_eq!(attempt.sent_at, None, "never sent");
    let event = detail
        .events
        .iter()
        .find(|e| e.kind == "budget_reached")
        .expect("the event");
    assert_eq!(event.detail["budget"], "two-a-day");
    // Tomorrow, UTC, at the earliest.
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let not_before = detail.job.not_before.clone().expect("a wait");
    assert!(not_before >= tomorrow, "{not_before} before {tomorrow}");

    let budgets = e.budgets(None).await.expect("budgets");
    assert_eq!(budgets[0].used, "0.02", "two sent, none past the limit");
    // The kept-back attempt used none of the job's one attempt.
    assert_eq!(detail.job.status, JobStatus::Queued);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_attempt_keeps_its_worst_case_reserved_until_resolved() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // Never answers in time: every attempt ends `unknown`.
    let silent = json!({"latency_ms": 5000, "jitter_ms": 0});
    priced_sandbox(e, "silent", silent, 300).await;
    priced_sandbox(e, "quick", json!({"latency_ms": 0, "jitter_ms": 0}), 5000).await;
    e.set_budget(
        "one-at-a-time",
        r#"{"limit": "0.01", "currency": "USD", "period": "month"}"#,
        None,
    )
    .await
    .expect("budget");
    let stuck = submit(e, "reserved-1", "silent").await;
    let (_executor, _stop) = start(e);
    let detail = until(e, &stuck, |d| {
        d.attempts.first().map(|a| a.state) == Some(AttemptState::Unknown)
    })
    .await;
    assert_eq!(detail.cost[0].at_risk, "0.01");
    assert_eq!(e.budgets(None).await.expect("budgets")[0].used, "0.01");

    // While it is unknown, its worst case is held: nothing else is sent under the budget.
    let waiting = submit(e, "reserved-2", "quick").await;
    until(e, &waiting, kept_back).await;

    // "It did not happen": its reservation goes, and the next job is sent at once.
    let attempt = detail.attempts[0].id.clone();
    e.resolve(OWNER, &attempt, Verdict::Failed, Resolution::default())
        .await
        .expect("resolve");
    assert_eq!(e.budgets(None).await.expect("budgets")[0].used, "0.00");
    let next = submit(e, "reserved-3", "quick").await;
    until(e, &next, |d| d.job.status == JobStatus::Succeeded).await;
    assert_eq!(e.budgets(None).await.expect("budgets")[0].used, "0.01");
}

/// A budget's limit is any amount onejob can count, not a price's bound; setting it again
/// replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_of_millions_is_kept_and_replaced_by_name() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let big = r#"{"limit": "2500000.00", "currency": "EUR", "period": "month"}"#;
    let (budget, replaced) = e.set_budget("yearly-llm", big, None).await.expect("set");
    assert_eq!((budget.limit.as_str(), replaced), ("2500000.00", false));
    let smaller = r#"{"limit": "10", "currency": "EUR", "period": "day"}"#;
    let (budget, replaced) = e
        .set_budget("yearly-llm", smaller, None)
        .await
        .expect("set");
    assert_eq!((budget.limit.as_str(), replaced), ("10.00", true));
    assert_eq!(e.budgets(None).await.expect("list").len(), 1);
}
