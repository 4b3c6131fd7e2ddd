//! What attempts cost (SPEC §17), against real providers on 127.0.0.1: an answered attempt at
//! what it used, at the price it was sent at; an `unknown` one at its worst case as money at
//! risk, until a person resolves it; nothing for one that did not happen.

use crate::common;

use common::{start, until, Ledger, OWNER};
use onejob_engine::{AttemptState, Cost, Engine, JobStatus, Resolution, SpendBy, Verdict};
use onejob_testkit::RawServer;
use serde_json::json;

/// An HTTP answer with a JSON body.
fn answer(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn cost(currency: &str, spent: &str, at_risk: &str) -> Cost {
    Cost {
        currency: currency.to_owned(),
        spent: spent.to_owned(),
        at_risk: at_risk.to_owned(),
    }
}

async fn submit(engine: &Engine, key: &str, route: &str) -> String {
    let intent = json!({ "route": [route], "input": { "key": key }, "max_attempts": 1 });
    common::submit_intent(engine, key, &intent).await
}

/// An `http` provider at `url` at 0.25 EUR a request and 1 EUR a thousand input tokens: every
/// byte sent is a possible token, so its worst case grows with the body.
async fn priced_http(engine: &Engine, name: &str, url: &str) {
    let provider = json!({
        "name": name, "kind": "http", "base_url": url,
        "soft_timeout_ms": 300, "hard_timeout_ms": 900, "honours_idempotency_key": false,
        "price": { "currency": "EUR", "per_request": "0.25", "per_1k_input_tokens": "1" }
    });
    engine
        .add_provider(&provider.to_string())
        .await
        .expect("provider");
}

/// The worst case of a request of `bytes` at [`priced_http`]'s price, as a decimal string:
/// 0.25 and a thousandth a byte.
fn worst(bytes: u32) -> String {
    let nanos = 250_000_000 + i64::from(bytes) * 1_000_000;
    onejob_engine::money::Amount::from_nanos(nanos).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_attempt_is_counted_at_risk_not_as_free() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // Reads the request, then says nothing until long past the hard deadline.
    let server = common::silent_past_the_deadline();
    priced_http(e, "slow", &server.url).await;
    let (failed_job, abandoned_job) = (
        submit(e, "cost-timeout-1", "slow").await,
        submit(e, "cost-timeout-2", "slow").await,
    );
    let (_executor, _stop) = start(e);
    let unknown = |d: &onejob_engine::JobDetail| {
        d.attempts.first().map(|a| a.state) == Some(AttemptState::Unknown)
            && d.known.first().is_some_and(|k| k.sent.is_some())
    };
    for job in [&failed_job, &abandoned_job] {
        let detail = until(e, job, unknown).await;
        let bytes = detail.known[0].sent.as_ref().expect("sent").body_bytes;
        let at_risk = worst(bytes);
        assert_eq!(
            detail.attempts[0].cost,
            Some(cost("EUR", "0.00", &at_risk)),
            "an unknown attempt is its worst case at risk, not free"
        );
        assert_eq!(detail.cost, vec![cost("EUR", "0.00", &at_risk)]);
    }

    // "It did not happen": nothing was spent, and nothing is at risk any more.
    let attempt = until(e, &failed_job, unknown).await.attempts[0].id.clone();
    e.resolve(OWNER, &attempt, Verdict::Failed, Resolution::default())
        .await
        .expect("resolve failed");
    let detail = e.job(OWNER, &failed_job).await.expect("job");
    assert_eq!(detail.cost, vec![cost("EUR", "0.00", "0.00")]);

    // Abandoned: the provider may have done the work, so its worst case counts as spent.
    let detail = until(e, &abandoned_job, unknown).await;
    let bytes = detail.known[0].sent.as_ref().expect("sent").body_bytes;
    let attempt = detail.attempts[0].id.clone();
    e.resolve(OWNER, &attempt, Verdict::Abandoned, Resolution::default())
        .await
        .expect("resolve abandoned");
    let detail = e.job(OWNER, &abandoned_job).await.expect("job");
    assert_eq!(detail.cost, vec![cost("EUR", &worst(bytes), "0.00")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_attempt_costs_what_it_used_at_the_price_it_was_sent_at() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let completion = json!({
        "id": "chatcmpl-cost", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": "{\"ok\": true}" },
                      "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500 }
    })
    .to_string();
    let server = RawServer::start(move |_| answer(200, &completion)).expect("server");
    std::env::set_var("ONEJOB_TEST_COST_KEY", "sk-cost-test");
    let mut provider = json!({
        "name": "llm", "kind": "openai", "base_url": format!("{}/v1", server.url),
        "model": "gpt-4o-mini", "api_key_env": "ONEJOB_TEST_COST_KEY",
        "soft_timeout_ms": 5000, "hard_timeout_ms": 10000, "honours_idempotency_key": false,
        "context_window": 8000,
        "price": { "currency": "USD", "per_request": "0.01", "per_1k_input_tokens": "0.15",
                   "per_1k_output_tokens": "0.60" }
    });
    e.add_provider(&provider.to_string())
        .await
        .expect("provider");
    let intent = json!({
        "route": ["llm"], "max_attempts": 1,
        "input": { "messages": [{ "role": "user", "content": "Say ok." }] }
    });
    let job = common::submit_intent(e, "cost-answered", &intent).await;
    let (_executor, stop) = start(e);
    let detail = until(e, &job, |d| d.job.status == JobStatus::Succeeded).await;
    drop(stop);
    // 0.01 + 1.2 × 0.15 + 0.3 × 0.60
    let spent = cost("USD", "0.37", "0.00");
    assert_eq!(detail.attempts[0].cost, Some(spent.clone()));
    assert_eq!(detail.cost, vec![spent.clone()]);

    // A later price changes nothing spent.
    provider["price"]["per_1k_output_tokens"] = json!("6.00");
    e.add_provider(&provider.to_string())
        .await
        .expect("new price");
    let detail = e.job(OWNER, &job).await.expect("job");
    assert_eq!(detail.cost, vec![spent]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_refused_before_any_effect_costs_nothing_and_one_without_a_price_has_no_cost() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server =
        RawServer::start(|_| answer(422, r#"{"error": "no such account"}"#)).expect("server");
    priced_http(e, "refusing", &server.url).await;
    let plain = json!({
        "name": "plain", "kind": "http", "base_url": server.url,
        "soft_timeout_ms": 2000, "hard_timeout_ms": 4000, "honours_idempotency_key": false
    });
    e.add_provider(&plain.to_string()).await.expect("provider");
    let (refused, unpriced) = (
        submit(e, "cost-refused", "refusing").await,
        submit(e, "cost-unpriced", "plain").await,
    );
    let (_executor, _stop) = start(e);
    let failed = |d: &onejob_engine::JobDetail| d.job.status == JobStatus::Failed;
    let detail = until(e, &refused, failed).await;
    assert_eq!(
        detail.cost,
        vec![cost("EUR", "0.00", "0.00")],
        "{detail:#?}"
    );
    let detail = until(e, &unpriced, failed).await;
    assert_eq!(detail.attempts[0].cost, None);
    assert!(detail.cost.is_empty());
}

/// A thousand answered attempts at 0.001 each: their spend is exactly 1.00, summed by the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn money_is_exact() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = RawServer::start(|_| answer(200, r#"{"charged": true}"#)).expect("server");
    let provider = json!({
        "name": "thousandth", "kind": "http", "base_url": server.url,
        "soft_timeout_ms": 5000, "hard_timeout_ms": 10000, "honours_idempotency_key": false,
        "price": { "currency": "USD", "per_request": "0.001" }
    });
    e.add_provider(&provider.to_string())
        .await
        .expect("provider");
    let mut jobs = Vec::new();
    for i in 0..1000 {
        jobs.push(submit(e, &format!("thousandth-{i}"), "thousandth").await);
    }
    let (_executor, _stop) = start(e);
    for job in &jobs {
        until(e, job, |d| d.job.status == JobStatus::Succeeded).await;
    }
    let spend = e
        .spend(Some(OWNER), SpendBy::Provider, None, None)
        .await
        .expect("spend");
    assert_eq!(spend.total, Some(cost("USD", "1.00", "0.00")));
    assert_eq!(spend.lines.len(), 1);
    assert_eq!(spend.lines[0].key, "thousandth");
    let by_day = e
        .spend(None, SpendBy::Day, Some("2000-01-01".into()), Some("USD"))
        .await
        .expect("spend by day");
    assert_eq!(by_day.total, Some(cost("USD", "1.00", "0.00")));
    let none = e
        .spend(Some(OWNER), SpendBy::Day, None, Some("EUR"))
        .await
        .expect("no spend in EUR");
    assert_eq!(none.total, None);
    assert!(none.lines.is_empty());
}
