//! Budgets through the command line (SPEC §17): set, listed and removed; and two worker
//! processes on one ledger that together never send past one.

use crate::common;

use std::time::Duration;

use common::processes::{
    add_http_provider, details, event_kinds, poll, submit_many, Running, SandboxProcess,
};
use common::Ledger;
use serde_json::{json, Value};

/// Sent and answered, or kept back by a budget until its next period.
fn sent_or_kept_back(detail: &Value) -> bool {
    let status = &detail["job"]["status"];
    status == "succeeded"
        || (status == "queued"
            && !detail["job"]["not_before"].is_null()
            && event_kinds(detail).iter().any(|k| k == "budget_reached"))
}

#[test]
fn two_hosts_never_spend_past_a_budget() {
    let ledger = Ledger::empty();
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 500, "jitter_ms": 0 }));
    let price = json!({ "price": { "currency": "USD", "per_request": "0.01" } });
    add_http_provider(&ledger, "paid", &sandbox.url, 5_000, 10_000, price);
    let budget = r#"{"limit": "0.20", "currency": "USD", "period": "day"}"#;
    let set = ledger
        .run(&["budget", "set", "twenty-a-day", "--json", budget])
        .ok();
    assert_eq!(set["budget"]["limit"], "0.20", "{set}");
    assert_eq!(set["replaced"], false);
    // Twice the budget's worth, so each worker alone could claim all it holds at once.
    let jobs = submit_many(&ledger, 40, "paid");

    // Two executors on one ledger, racing for the same jobs under the same budget.
    let mut one = Running::spawn(&ledger, &["worker"]);
    let mut two = Running::spawn(&ledger, &["worker"]);
    let all = poll(
        Duration::from_secs(60),
        "every job sent or kept back",
        || {
            let all = details(&ledger, &jobs);
            all.iter().all(sent_or_kept_back).then_some(all)
        },
    );
    one.terminate(Duration::from_secs(10));
    two.terminate(Duration::from_secs(10));

    let sent = all
        .iter()
        .filter(|d| d["job"]["status"] == "succeeded")
        .count();
    assert_eq!(sent, 20, "the budget's worth was sent");
    assert_eq!(
        sandbox.log().len(),
        20,
        "and nothing more reached the provider"
    );
    let budgets = ledger.run(&["budget", "list"]).ok();
    assert_eq!(budgets["budgets"][0]["used"], "0.20", "{budgets}");
    let spend = ledger.run(&["spend", "--by", "provider"]).ok();
    assert_eq!(spend["total"]["spent"], "0.20", "{spend}");

    let removed = ledger.run(&["budget", "remove", "twenty-a-day"]).ok();
    assert_eq!(removed["removed"], "twenty-a-day");
    assert_eq!(
        ledger.run(&["budget", "list"]).ok(),
        json!({ "budgets": [] })
    );
}

#[test]
fn a_budget_is_refused_by_the_part_at_fault() {
    let ledger = Ledger::empty();
    for (json, field) in [
        (
            r#"{"limit": 5, "currency": "USD", "period": "day"}"#,
            "budget",
        ),
        (
            r#"{"limit": "5", "currency": "usd", "period": "day"}"#,
            "budget.currency",
        ),
        (
            r#"{"limit": "5", "currency": "USD", "period": "week"}"#,
            "budget",
        ),
        (
            r#"{"limit": "5", "currency": "USD", "period": "day", "cap": 1}"#,
            "budget",
        ),
    ] {
        let error = ledger.run(&["budget", "set", "b", "--json", json]).err(2);
        assert_eq!(error["details"]["field"], field, "{json}: {error}");
    }
    let error = ledger
        .run(&["budget", "set", "no spaces", "--json", "{}"])
        .err(2);
    assert_eq!(error["details"]["field"], "budget.name", "{error}");
    assert_eq!(
        ledger.run(&["budget", "list"]).ok(),
        json!({ "budgets": [] })
    );
}
