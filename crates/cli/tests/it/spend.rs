//! `onejob spend` and the cost in `onejob job` (SPEC §17), on a real ledger with the built-in
//! sandbox at a price.

use crate::common::{self, Ledger};
use serde_json::json;

#[test]
fn spend_sums_what_answered_attempts_cost_and_a_job_shows_its_own() {
    let ledger = Ledger::empty();
    let empty = ledger.run(&["spend"]).ok();
    assert_eq!(
        empty,
        json!({"spend": [], "total": null}),
        "nothing charged yet"
    );

    let priced = json!({
        "name": "priced", "kind": "sandbox", "soft_timeout_ms": 5000, "hard_timeout_ms": 10000,
        "honours_idempotency_key": true, "dials": {"latency_ms": 0, "jitter_ms": 0},
        "price": {"currency": "USD", "per_request": "0.05"}
    });
    ledger
        .run(&["provider", "add", "--json", &priced.to_string()])
        .ok();
    let mut jobs = Vec::new();
    for key in ["spend-1", "spend-2"] {
        let intent = json!({"route": ["priced"], "input": {"n": key}});
        let submitted = ledger
            .run(&[
                "submit",
                "--key",
                key,
                "--intent",
                &intent.to_string(),
                "--wait",
            ])
            .ok();
        jobs.push(common::id(&submitted["job"]));
    }
    let shown = ledger.run(&["job", &jobs[0]]).ok();
    assert_eq!(shown["job"]["status"], "succeeded", "{shown}");
    let one = json!({"currency": "USD", "spent": "0.05", "at_risk": "0.00"});
    assert_eq!(shown["attempts"][0]["cost"], one, "{shown}");
    assert_eq!(shown["cost"], json!([one]));

    let by_provider = ledger.run(&["spend", "--by", "provider"]).ok();
    assert_eq!(
        by_provider,
        json!({
            "spend": [{"provider": "priced", "currency": "USD", "spent": "0.10", "at_risk": "0.00"}],
            "total": {"currency": "USD", "spent": "0.10", "at_risk": "0.00"}
        })
    );
    let by_owner = ledger
        .run(&["spend", "--by", "owner", "--currency", "USD"])
        .ok();
    assert_eq!(by_owner["spend"][0]["owner"], "local", "{by_owner}");

    // A time that is not one is refused naming the flag's field.
    let refused = ledger.run(&["spend", "--since", "last tuesday"]).err(2);
    assert_eq!(refused["code"], "invalid_input", "{refused}");
    assert_eq!(refused["details"]["field"], "since", "{refused}");
}
