//! Output contracts against real servers on 127.0.0.1: the sandbox in chat mode speaks
//! OpenAI's Chat Completions, so answers that break a contract, contract checks and validated
//! failover can all be watched offline (SPEC §6–§8).

use crate::common;

use std::time::Duration;

use common::{add_provider, quick, sandbox, start, submit_intent, until, Ledger, OWNER};
use onejob_engine::contracts::check::Check;
use onejob_engine::sandbox::{Dials, Sandbox};
use onejob_engine::testing::{InternalCalls as _, CHAT_PATH};
use onejob_engine::{AttemptState, Engine, JobDetail, JobStatus};
use serde_json::{json, Value};

fn summary_contract() -> Value {
    serde_json::from_str(onejob_testkit::fixtures::SUMMARY_CONTRACT).expect("the contract")
}

async fn add_contract(engine: &Engine, contract: &Value) {
    engine
        .add_contract(&contract.to_string())
        .await
        .expect("contract");
}

/// An `openai` provider at a sandbox's chat endpoint.
async fn openai(engine: &Engine, name: &str, sandbox: &Sandbox, extra: Value) {
    let mut config = json!({
        "name": name, "kind": "openai", "base_url": format!("{}/v1", sandbox.url()),
        "model": "sandbox-model", "soft_timeout_ms": 2000, "hard_timeout_ms": 5000,
        "honours_idempotency_key": false
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    add_provider(engine, &config).await;
}

async fn submit(engine: &Engine, key: &str, route: &[&str], max_attempts: u32) -> String {
    let intent = json!({
        "route": route, "input": {"text": format!("text of {key}")}, "contract": "summary",
        "params": {"temperature": 0.2, "max_tokens": 200}, "max_attempts": max_attempts
    });
    submit_intent(engine, key, &intent).await
}

/// The `summary` contract checked at `provider`.
async fn summary_check(engine: &Engine, provider: &str) -> Check {
    engine
        .check_contract("summary", provider)
        .await
        .expect("check")
}

fn terminal(d: &JobDetail) -> bool {
    matches!(
        d.job.status,
        JobStatus::Succeeded | JobStatus::Failed | JobStatus::Unknown
    )
}

fn error_code(d: &JobDetail) -> Option<&str> {
    d.job.error.as_ref().map(|e| e.code.as_str())
}

/// Requests that carried this job's id as their Idempotency-Key.
fn requests_for(sandbox: &Sandbox, job_id: &str) -> usize {
    sandbox
        .log()
        .iter()
        .filter(|r| r.idempotency_key.as_deref() == Some(job_id))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_a_contract_succeeds_through_the_openai_adapter() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(quick(5)).await;
    add_contract(e, &summary_contract()).await;
    openai(e, "model-a", &server, json!({})).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "one", &["model-a"], 3).await;
    let done = until(e, &job_id, terminal).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(
        done.job.result,
        Some(json!({"summary": "sandbox", "words": 0}))
    );
    let attempt = &done.attempts[0];
    assert_eq!(attempt.request_id.as_deref(), Some("sbx-1"));
    let usage = e
        .attempt_usage(&attempt.id)
        .await
        .expect("usage")
        .expect("recorded");
    assert!(usage.get("total_tokens").is_some(), "{usage}");
    assert_eq!(server.log()[0].path, "/v1/chat/completions");
    assert_eq!(requests_for(&server, &job_id), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broken_answer_is_a_contract_violation_and_never_the_result() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    let (_executor, _stop) = start(e);
    let cases: [(&str, Dials, &str); 4] = [
        (
            "prose",
            Dials {
                prose: 1.0,
                ..quick(5)
            },
            "not JSON",
        ),
        (
            "extra",
            Dials {
                extra_key: 1.0,
                ..quick(5)
            },
            "at /unexpected",
        ),
        (
            "missing",
            Dials {
                missing_required_key: 1.0,
                ..quick(5)
            },
            "at /summary",
        ),
        (
            "wrong-type",
            Dials {
                wrong_type: 1.0,
                ..quick(5)
            },
            "at /summary",
        ),
    ];
    let mut servers = Vec::new();
    for (name, dials, path) in cases {
        let server = sandbox(dials).await;
        openai(e, name, &server, json!({})).await;
        let job_id = submit(e, name, &[name], 3).await;
        let done = until(e, &job_id, terminal).await;
        assert_eq!(done.job.status, JobStatus::Failed, "{name}: {done:#?}");
        assert_eq!(done.job.result, None, "{name}: never the job's result");
        assert_eq!(done.job.completed_by, None);
        assert_eq!(
            done.attempts.len(),
            1,
            "{name}: not retried at this provider"
        );
        let error = done.attempts[0].error.clone().expect("an error");
        assert_eq!(done.attempts[0].state, AttemptState::Failed);
        assert_eq!(error.kind, "contract_violation", "{name}");
        assert!(error.message.contains(path), "{name}: {}", error.message);
        assert_eq!(error_code(&done), Some("contract_violation"));
        servers.push(server);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_only_to_a_fallback_that_passed_its_check() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    let primary = sandbox(Dials {
        server_error: 1.0,
        ..quick(5)
    })
    .await;
    let fallback = sandbox(Dials {
        extra_key: 1.0,
        ..quick(5)
    })
    .await;
    openai(e, "primary-ai", &primary, json!({})).await;
    openai(e, "fallback-ai", &fallback, json!({})).await;

    let check = summary_check(e, "fallback-ai").await;
    assert!(!check.passed, "an extra top-level key fails the check");
    assert_eq!(check.samples.len(), 2);
    assert!(check.samples.iter().all(|s| !s.passed
        && s.reason.contains("contract_violation")
        && s.reason.contains("/unexpected")
        && s.latency_ms.is_some()));

    let (_executor, _stop) = start(e);
    let refused = submit(e, "not-validated", &["primary-ai", "fallback-ai"], 5).await;
    let done = until(e, &refused, terminal).await;
    assert_eq!(done.job.status, JobStatus::Failed);
    assert_eq!(error_code(&done), Some("fallback_not_validated"));
    assert_eq!(done.attempts.len(), 2, "two tries at the primary");
    assert!(done.attempts.iter().all(|a| a.provider == "primary-ai"));
    assert_eq!(
        requests_for(&fallback, &refused),
        0,
        "the fallback saw no request of this job"
    );

    fallback.set_dials(quick(5));
    let check = summary_check(e, "fallback-ai").await;
    assert!(check.passed, "{check:#?}");
    assert!(check.current);

    let moved = submit(e, "validated", &["primary-ai", "fallback-ai"], 5).await;
    let done = until(e, &moved, terminal).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(done.attempts.len(), 3);
    assert_eq!(done.attempts[2].provider, "fallback-ai");
    assert_eq!(requests_for(&fallback, &moved), 1);

    // A person may still run the refused job at the fallback: logged as their decision.
    let retried = e
        .retry(OWNER, &refused, Some("fallback-ai"))
        .await
        .expect("explicit retry");
    assert_eq!(retried.attempt.provider, "fallback-ai");
    let done = until(e, &refused, |d| d.job.status == JobStatus::Succeeded).await;
    assert!(done.events.iter().any(|ev| ev.kind == "job_retried"));
}

/// An `http` provider at `url`, routed first, before a validated fallback.
async fn http_primary(engine: &Engine, url: &str, honours_key: bool) {
    let config = json!({
        "name": "payee", "kind": "http", "base_url": url,
        "soft_timeout_ms": 400, "hard_timeout_ms": 2000,
        "honours_idempotency_key": honours_key
    });
    add_provider(engine, &config).await;
}

/// A fallback that passed the `summary` check, so the route may fail over to it.
async fn validated_fallback(engine: &Engine) -> Sandbox {
    let server = sandbox(quick(5)).await;
    openai(engine, "fallback-ai", &server, json!({})).await;
    let check = summary_check(engine, "fallback-ai").await;
    assert!(check.passed && check.current, "{check:#?}");
    server
}

/// SPEC §7: the whole history at a provider decides failover. A keyed `500` may have done the
/// work (only the primary knows the key); a later `503` there, which alone would permit
/// failover, does not make it safe to send the job to the fallback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_keyed_5xx_forbids_failover_after_a_later_503() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    let fallback = validated_fallback(e).await;
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = answered.clone();
    let primary = onejob_testkit::RawServer::start(move |_| {
        match count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => onejob_testkit::raw_http::json_response("500 Internal Server Error", "{}"),
            1 => onejob_testkit::raw_http::json_response("503 Service Unavailable", "{}"),
            _ => onejob_testkit::raw_http::json_response(
                "200 OK",
                r#"{"summary": "paid", "words": 1}"#,
            ),
        }
    })
    .expect("primary");
    http_primary(e, &primary.url, true).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "keyed-then-503", &["payee", "fallback-ai"], 3).await;
    let done = until(e, &job_id, terminal).await;
    let providers: Vec<_> = done.attempts.iter().map(|a| a.provider.as_str()).collect();
    assert_eq!(providers, ["payee"; 3], "{done:#?}");
    assert_eq!(
        requests_for(&fallback, &job_id),
        0,
        "the fallback never saw it"
    );
    assert_eq!(done.job.status, JobStatus::Succeeded);
    assert_eq!(primary.requests().len(), 3);
}

/// The same for an attempt a person abandoned after it was sent: a `never_sent` retry at the
/// same provider afterwards proves nothing about the abandoned one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_attempt_forbids_failover_after_a_later_never_sent() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    let fallback = validated_fallback(e).await;
    // Takes one request and never answers it, then stops listening: every later connection
    // is refused, so nothing more is sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let held = std::thread::spawn(move || {
        let taken = listener.accept().map(|(stream, _)| stream);
        drop(listener);
        std::thread::sleep(Duration::from_secs(3));
        drop(taken);
    });
    http_primary(e, &url, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "abandoned-then-refused", &["payee", "fallback-ai"], 4).await;
    let unknown = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;
    ledger.abandon(&unknown.attempts[0].id).await;
    let done = until(e, &job_id, |d| {
        matches!(d.job.status, JobStatus::Succeeded | JobStatus::Failed)
    })
    .await;
    let providers: Vec<_> = done.attempts.iter().map(|a| a.provider.as_str()).collect();
    assert_eq!(providers, ["payee"; 4], "{done:#?}");
    assert_eq!(
        requests_for(&fallback, &job_id),
        0,
        "the fallback never saw it"
    );
    assert_eq!(done.job.status, JobStatus::Failed);
    assert_eq!(error_code(&done), Some("attempts_exhausted"));
    held.join().expect("held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_schema_template_or_provider_invalidates_earlier_checks() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(quick(5)).await;
    let mut contract = summary_contract();
    add_contract(e, &contract).await;
    openai(e, "model-a", &server, json!({})).await;
    let current = async |e: &Engine| {
        let checks = e.contract_checks("summary").await.expect("checks");
        checks.iter().any(|c| c.provider == "model-a" && c.current)
    };
    assert!(summary_check(e, "model-a").await.passed);
    assert!(current(e).await);

    let same = e
        .add_contract(&contract.to_string())
        .await
        .expect("same contract");
    assert!(same.replaced && !same.changed);
    assert!(current(e).await, "the same content keeps its checks");

    contract["schema"]["properties"]["words"] = json!({"type": "number"});
    let changed = e.add_contract(&contract.to_string()).await.expect("schema");
    assert!(changed.changed);
    assert!(!current(e).await, "a new schema invalidates the check");

    assert!(summary_check(e, "model-a").await.passed);
    assert!(current(e).await);
    contract["template"]["user"] = json!("Summarise briefly: {{text}}");
    add_contract(e, &contract).await;
    assert!(!current(e).await, "a new template invalidates the check");

    assert!(summary_check(e, "model-a").await.passed);
    openai(
        e,
        "model-a",
        &server,
        json!({"supports_json_schema": false}),
    )
    .await;
    assert!(
        !current(e).await,
        "a changed provider invalidates the check"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_longer_than_the_context_window_fails_the_check_with_both_counts() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(quick(5)).await;
    add_contract(e, &summary_contract()).await;
    openai(
        e,
        "small",
        &server,
        json!({"model": "gpt-4o", "context_window": 12}),
    )
    .await;
    let check = summary_check(e, "small").await;
    assert!(!check.passed);
    for sample in &check.samples {
        let tokens = sample.prompt_tokens.expect("counted");
        assert!(tokens > 12);
        assert!(
            sample.reason.contains(&format!("{tokens} tokens"))
                && sample.reason.contains("12 tokens"),
            "{}",
            sample.reason
        );
        assert!(
            sample.tokenizer.contains("o200k_base"),
            "{}",
            sample.tokenizer
        );
        assert_eq!(sample.latency_ms, None, "nothing was sent");
    }
    assert!(server.log().is_empty());

    // A model no tokenizer is known for is "not checked", which does not fail the check.
    openai(e, "unknown-model", &server, json!({"context_window": 12})).await;
    let check = summary_check(e, "unknown-model").await;
    assert!(check.passed, "{check:#?}");
    assert!(check
        .samples
        .iter()
        .all(|s| s.prompt_tokens.is_none() && s.tokenizer.starts_with("not checked")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_at_an_openai_provider_is_unknown_and_not_retried() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(Dials {
        never_answer: 1.0,
        ..quick(5)
    })
    .await;
    add_contract(e, &summary_contract()).await;
    openai(
        e,
        "silent",
        &server,
        json!({"soft_timeout_ms": 200, "hard_timeout_ms": 600}),
    )
    .await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "timeout", &["silent"], 5).await;
    let unknown = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;
    assert_eq!(unknown.attempts[0].state, AttemptState::Unknown);
    tokio::time::sleep(Duration::from_millis(900)).await;
    let later = e.job(OWNER, &job_id).await.expect("job");
    assert_eq!(later.job.status, JobStatus::Unknown);
    assert_eq!(later.attempts.len(), 1, "not retried automatically");
    assert_eq!(server.log().len(), 1, "sent once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_may_name_only_a_configured_contract() {
    let ledger = Ledger::new().await;
    let intent = json!({"route": ["primary"], "input": {}, "contract": "nowhere"});
    let err = ledger
        .engine
        .submit(OWNER, "k", &intent.to_string())
        .await
        .expect_err("no such contract");
    assert_eq!(err.code(), "invalid_input");
    assert!(err.to_string().contains("intent.contract"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_api_key_appears_nowhere() {
    const VAR: &str = "ONEJOB_TEST_PLANTED_KEY_ENGINE";
    const KEY: &str = "sk-planted-0123456789abcdef-secret";
    std::env::set_var(VAR, KEY);
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    let good = sandbox(quick(5)).await;
    let bad = sandbox(Dials {
        extra_key: 1.0,
        ..quick(5)
    })
    .await;
    let keyed = json!({"api_key_env": VAR});
    openai(e, "good", &good, keyed.clone()).await;
    openai(e, "bad", &bad, keyed).await;
    let (_executor, stop) = start(e);
    let ok = submit(e, "ok", &["good"], 2).await;
    let broken = submit(e, "broken", &["bad"], 2).await;
    let mut seen = Vec::new();
    for job_id in [&ok, &broken] {
        seen.push(serde_json::to_string(&until(e, job_id, terminal).await).expect("json"));
    }
    for provider in ["good", "bad"] {
        let check = summary_check(e, provider).await;
        seen.push(serde_json::to_string(&check).expect("json"));
    }
    seen.push(format!("{:?}", e.providers().await.expect("providers")));
    let missing = json!({"name": "nokey", "kind": "openai", "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "ONEJOB_TEST_UNSET_VAR", "soft_timeout_ms": 100, "hard_timeout_ms": 100,
        "honours_idempotency_key": false});
    add_provider(e, &missing).await;
    seen.push(format!("{:?}", e.check_contract("summary", "nokey").await));
    drop(stop);
    e.close().await;
    // Everything the ledger wrote: its files, or a dump of its database.
    for (_, bytes) in onejob_testkit::ledger_contents(&ledger.location) {
        seen.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    assert!(seen.iter().all(|text| !text.contains(KEY)));
    assert!(seen
        .iter()
        .any(|text| text.contains("ONEJOB_TEST_UNSET_VAR")));
}

/// A llama.cpp-style server on loopback: `/apply-template`, `/tokenize` (one token per word)
/// and a chat endpoint whose answers keep the summary contract.
async fn llama_server() -> String {
    use http_body_util::{BodyExt, Full};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |request: hyper::Request<hyper::body::Incoming>| async move {
                        let path = request.uri().path().to_owned();
                        let bytes = request.into_body().collect().await?.to_bytes();
                        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        let answer = match path.as_str() {
                            "/apply-template" => {
                                let texts: Vec<&str> = body["messages"]
                                    .as_array()
                                    .map(|m| {
                                        m.iter().filter_map(|m| m["content"].as_str()).collect()
                                    })
                                    .unwrap_or_default();
                                json!({ "prompt": format!("<s> {} </s>", texts.join(" | ")) })
                            }
                            "/tokenize" => {
                                let words = body["content"]
                                    .as_str()
                                    .unwrap_or("")
                                    .split_whitespace()
                                    .count();
                                json!({ "tokens": (0..words).collect::<Vec<_>>() })
                            }
                            _ => json!({
                                "id": "chatcmpl-llama", "object": "chat.completion",
                                "choices": [{"index": 0, "message": {"role": "assistant",
                                    "content": "{\"summary\": \"s\", \"words\": 1}"}, "finish_reason": "stop"}]
                            }),
                        };
                        Ok::<_, hyper::Error>(hyper::Response::new(Full::new(bytes::Bytes::from(
                            answer.to_string(),
                        ))))
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llama_server_counts_the_prompt_with_its_own_tokenize() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    let url = llama_server().await;
    for (name, window) in [("llama-small", 5), ("llama-large", 4096)] {
        let config = json!({
            "name": name, "kind": "openai", "base_url": format!("{url}/v1"), "model": "local",
            "tokenizer": "llama_tokenize", "context_window": window,
            "soft_timeout_ms": 2000, "hard_timeout_ms": 5000, "honours_idempotency_key": false
        });
        add_provider(e, &config).await;
    }
    // "<s> You summarise text in one sentence. | Summarise: The cat sat on the mat. </s>"
    let small = summary_check(e, "llama-small").await;
    assert!(!small.passed);
    let first = &small.samples[0];
    assert_eq!(first.prompt_tokens, Some(16));
    assert_eq!(first.tokenizer, "llama_tokenize");
    assert!(
        first.reason.contains("16 tokens") && first.reason.contains("5 tokens"),
        "{}",
        first.reason
    );
    let large = summary_check(e, "llama-large").await;
    assert!(large.passed, "{large:#?}");
    assert_eq!(large.samples[0].prompt_tokens, Some(16));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_usage_is_read_per_attempt_and_summed_per_job() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // The first answer breaks the contract: failed, yet billed, so its tokens count.
    let server = sandbox(Dials {
        extra_key: 1.0,
        ..quick(5)
    })
    .await;
    add_contract(e, &summary_contract()).await;
    openai(e, "model-a", &server, json!({})).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "usage", &["model-a"], 1).await;
    let failed = until(e, &job_id, terminal).await;
    assert_eq!(failed.job.status, JobStatus::Failed, "{failed:#?}");
    // The retry carries the same Idempotency-Key: a fresh answer, not the first one replayed.
    server.set_dials(Dials {
        honour_idempotency_key: false,
        ..quick(5)
    });
    e.retry(OWNER, &job_id, None).await.expect("retry");
    let done = until(e, &job_id, |d| d.job.status == JobStatus::Succeeded).await;

    assert_eq!(done.attempts.len(), 2);
    let mut sum = (0, 0);
    for attempt in &done.attempts {
        // What the server said, as stored, against what the record shows.
        let raw = e
            .attempt_usage(&attempt.id)
            .await
            .expect("usage")
            .expect("recorded");
        let reported = |key: &str| raw[key].as_u64().expect(key) as u32;
        let usage = attempt.usage.expect("usage on the record");
        assert_eq!(usage.prompt_tokens, reported("prompt_tokens"), "{raw}");
        assert_eq!(
            usage.completion_tokens,
            reported("completion_tokens"),
            "{raw}"
        );
        assert!(
            usage.prompt_tokens > 0 && usage.completion_tokens > 0,
            "{raw}"
        );
        sum.0 += usage.prompt_tokens;
        sum.1 += usage.completion_tokens;
    }
    let total = done.usage.expect("the job's total");
    assert_eq!((total.prompt_tokens, total.completion_tokens), sum);
    let shown = serde_json::to_value(&done).expect("json");
    assert_eq!(shown["usage"]["prompt_tokens"], json!(sum.0));
    assert_eq!(
        shown["attempts"][0]["usage"]["completion_tokens"]
            .as_u64()
            .map(|n| n as u32),
        Some(done.attempts[0].usage.expect("usage").completion_tokens)
    );

    // A job whose provider reports no tokens has none.
    let plain = ledger.submit("no-usage").await.job;
    let detail = e.job(OWNER, &plain.id).await.expect("job");
    assert_eq!(detail.usage, None);
}

/// A `sandbox` provider: its own in-process sandbox with `dials`, or the one at `base_url`.
async fn sandbox_provider(engine: &Engine, name: &str, base_url: Option<&str>, dials: Value) {
    let mut config = json!({
        "name": name, "kind": "sandbox", "soft_timeout_ms": 2000, "hard_timeout_ms": 5000,
        "honours_idempotency_key": true
    });
    match base_url {
        Some(url) => config["base_url"] = json!(url),
        None => config["dials"] = dials,
    }
    add_provider(engine, &config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_a_contract_at_a_sandbox_provider_is_answered_by_its_chat_endpoint() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(quick(5)).await;
    add_contract(e, &summary_contract()).await;
    sandbox_provider(e, "sbx", Some(&server.url()), json!({})).await;
    let (_executor, _stop) = start(e);

    let job_id = submit(e, "by-contract", &["sbx"], 3).await;
    let done = until(e, &job_id, terminal).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(
        done.job.result,
        Some(json!({"summary": "sandbox", "words": 0})),
        "the content of the chat answer, held to the contract"
    );
    let usage = e
        .attempt_usage(&done.attempts[0].id)
        .await
        .expect("usage")
        .expect("recorded");
    assert!(usage.get("total_tokens").is_some(), "{usage}");
    let asked = server.log();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].path, CHAT_PATH);
    assert_eq!(asked[0].idempotency_key.as_deref(), Some(job_id.as_str()));

    // Without a contract the same provider echoes the input, as before.
    let plain = json!({"route": ["sbx"], "input": {"order": 7}});
    let plain = submit_intent(e, "plain", &plain).await;
    let done = until(e, &plain, terminal).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(
        done.job.result.expect("result")["echo"],
        json!({"order": 7})
    );
    assert_eq!(server.log()[1].path, "/");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_sandbox_passes_a_contract_check_and_answers_its_jobs() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    // The provider every new ledger has: in-process, no base_url, default dials.
    let check = summary_check(e, "sandbox").await;
    assert!(check.passed, "{check:#?}");
    assert_eq!(check.samples.len(), 2);
    assert!(check.samples.iter().all(|s| s.passed && s.usage.is_some()));
    assert!(check.current);

    let (_executor, _stop) = start(e);
    let job_id = submit(e, "built-in", &["sandbox"], 3).await;
    let done = until(e, &job_id, terminal).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(
        done.job.result,
        Some(json!({"summary": "sandbox", "words": 0}))
    );
    assert!(done.attempts[0]
        .request_id
        .as_deref()
        .is_some_and(|id| id.starts_with("sbx-")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_providers_dials_break_its_contract_answers() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    add_contract(e, &summary_contract()).await;
    let (_executor, _stop) = start(e);
    let quick = json!({"latency_ms": 5, "jitter_ms": 0});
    let cases = [
        ("extra_key", "at /unexpected"),
        ("prose", "not JSON"),
        ("missing_required_key", "at /summary"),
        ("wrong_type", "at /summary"),
    ];
    for (dial, path) in cases {
        let mut dials = quick.clone();
        dials[dial] = json!(1.0);
        let name = dial.replace('_', "-");
        sandbox_provider(e, &name, None, dials).await;
        let job_id = submit(e, &name, &[&name], 3).await;
        let done = until(e, &job_id, terminal).await;
        assert_eq!(done.job.status, JobStatus::Failed, "{dial}: {done:#?}");
        assert_eq!(done.job.result, None, "{dial}: never the job's result");
        assert_eq!(done.attempts.len(), 1, "{dial}: not retried here");
        let error = done.attempts[0].error.clone().expect("an error");
        assert_eq!(error.kind, "contract_violation", "{dial}");
        assert!(error.message.contains(path), "{dial}: {}", error.message);
        assert_eq!(error_code(&done), Some("contract_violation"));

        let check = summary_check(e, &name).await;
        assert!(!check.passed, "{dial}: {check:#?}");
        assert!(
            check
                .samples
                .iter()
                .all(|s| s.reason.contains("contract_violation")),
            "{dial}: {check:#?}"
        );
    }
}
