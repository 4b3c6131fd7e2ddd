//! The anthropic adapter against a small loopback server speaking the Messages API: the same
//! contract scenario as the openai one — a job that keeps its contract, a check, a broken answer
//! that is a contract violation, and a validated failover.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{quick, Ledger, OWNER};
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::sandbox::{Dials, Sandbox};
use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{Engine, JobDetail, JobStatus, Usage};
use serde_json::{json, Value};

/// What the server's answers look like.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// A tool call whose input keeps the schema.
    Valid,
    /// A tool call whose input has an extra top-level key.
    ExtraKey,
    /// Text instead of a tool call.
    Prose,
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    api_key: Option<String>,
    version: Option<String>,
    idempotency_key: Option<String>,
    body: Value,
}

#[derive(Clone)]
struct Messages {
    url: String,
    mode: Arc<Mutex<Mode>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Messages {
    async fn start() -> Messages {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let server = Messages {
            url: format!("http://{}", listener.local_addr().expect("addr")),
            mode: Arc::new(Mutex::new(Mode::Valid)),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let shared = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| shared.clone().answer(request));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        server
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().expect("mode") = mode;
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }

    async fn answer(
        self,
        request: Request<hyper::body::Incoming>,
    ) -> Result<Response<Full<Bytes>>, hyper::Error> {
        let header = |name: &str| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let seen = Seen {
            path: request.uri().path().to_owned(),
            api_key: header("x-api-key"),
            version: header("anthropic-version"),
            idempotency_key: header("idempotency-key"),
            body: Value::Null,
        };
        let bytes = request.into_body().collect().await?.to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        self.seen.lock().expect("seen").push(Seen {
            body: body.clone(),
            ..seen
        });
        let content = match *self.mode.lock().expect("mode") {
            Mode::Valid => json!([{"type": "tool_use", "id": "toolu_1", "name": "answer",
                                   "input": {"summary": "short", "words": 1}}]),
            Mode::ExtraKey => json!([{"type": "tool_use", "id": "toolu_1", "name": "answer",
                                      "input": {"summary": "short", "words": 1, "mood": "chatty"}}]),
            Mode::Prose => json!([{"type": "text", "text": "Here is a short summary: it rained."}]),
        };
        let answer = json!({
            "id": "msg_loopback", "type": "message", "role": "assistant",
            "model": body.get("model").cloned().unwrap_or(Value::Null),
            "content": content, "stop_reason": "tool_use",
            "usage": {"input_tokens": 17, "output_tokens": 6}
        });
        let mut response = Response::new(Full::new(Bytes::from(answer.to_string())));
        response.headers_mut().insert(
            "content-type",
            hyper::header::HeaderValue::from_static("application/json"),
        );
        response.headers_mut().insert(
            "request-id",
            hyper::header::HeaderValue::from_static("req_loopback"),
        );
        Ok(response)
    }
}

fn contract() -> Value {
    json!({
        "name": "summary",
        "schema": {"type": "object", "properties": {"summary": {"type": "string"}, "words": {"type": "integer"}},
                   "required": ["summary", "words"]},
        "template": {"system": "You summarise text.", "user": "Summarise: {{text}}"},
        "samples": [{"text": "It rained all day."}]
    })
}

async fn anthropic(engine: &Engine, server: &Messages) {
    let config = json!({
        "name": "claude", "kind": "anthropic", "base_url": server.url, "model": "claude-test",
        "api_key_env": "ONEJOB_TEST_ANTHROPIC_KEY", "soft_timeout_ms": 2000,
        "hard_timeout_ms": 5000, "honours_idempotency_key": false
    });
    engine
        .add_provider(&config.to_string())
        .await
        .expect("provider");
}

async fn run(engine: &Engine, key: &str, route: &[&str]) -> JobDetail {
    let intent = json!({
        "route": route, "input": {"text": "It rained all day."}, "contract": "summary",
        "params": {"temperature": 0.5, "max_tokens": 300}
    });
    let job = engine
        .submit(OWNER, key, &intent.to_string())
        .await
        .expect("submit")
        .job;
    let options = ExecutorOptions {
        backoff_base: Duration::from_millis(10),
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(engine.clone(), options).expect("executor");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    executor
        .run_job(&job.id, Some(deadline))
        .await
        .expect("run");
    engine.job(OWNER, &job.id).await.expect("job")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_adapter_keeps_the_contract_scenario() {
    std::env::set_var("ONEJOB_TEST_ANTHROPIC_KEY", "anthropic-test-key");
    let server = Messages::start().await;
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    e.add_contract(&contract().to_string())
        .await
        .expect("contract");
    anthropic(e, &server).await;

    // A job with the contract succeeds with the tool call's input as its result.
    let done = run(e, "claude-ok", &["claude"]).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(
        done.job.result,
        Some(json!({"summary": "short", "words": 1}))
    );
    assert_eq!(done.attempts[0].request_id.as_deref(), Some("req_loopback"));
    let seen = server.seen();
    let request = &seen[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.api_key.as_deref(), Some("anthropic-test-key"));
    assert_eq!(request.version.as_deref(), Some("2023-06-01"));
    assert_eq!(
        request.idempotency_key.as_deref(),
        Some(done.job.id.as_str())
    );
    assert_eq!(request.body["system"], json!("You summarise text."));
    assert_eq!(
        request.body["messages"],
        json!([{"role": "user", "content": "Summarise: It rained all day."}])
    );
    assert_eq!(request.body["temperature"], json!(0.5));
    assert_eq!(request.body["max_tokens"], json!(300));
    assert_eq!(
        request.body["tool_choice"],
        json!({"type": "tool", "name": "answer"})
    );
    assert_eq!(
        request.body["tools"][0]["input_schema"]["additionalProperties"],
        json!(false)
    );
    let usage = e.attempt_usage(&done.attempts[0].id).await.expect("usage");
    assert_eq!(usage, Some(json!({"input_tokens": 17, "output_tokens": 6})));
    let tokens = Usage {
        prompt_tokens: 17,
        completion_tokens: 6,
    };
    assert_eq!(
        done.attempts[0].usage,
        Some(tokens),
        "input/output read as prompt/completion"
    );
    assert_eq!(done.usage, Some(tokens));

    // Prose and an extra key are contract violations, never the result.
    for (mode, path) in [(Mode::Prose, "not JSON"), (Mode::ExtraKey, "/mood")] {
        server.set(mode);
        let done = run(e, &format!("claude-{path}"), &["claude"]).await;
        assert_eq!(done.job.status, JobStatus::Failed);
        assert_eq!(done.job.result, None);
        let error = done.attempts[0].error.clone().expect("error");
        assert_eq!(error.kind, "contract_violation");
        assert!(error.message.contains(path), "{}", error.message);
    }

    // The check fails on an extra key, and passes on valid answers at temperature 0.
    let check = e.check_contract("summary", "claude").await.expect("check");
    assert!(!check.passed);
    server.set(Mode::Valid);
    let check = e.check_contract("summary", "claude").await.expect("check");
    assert!(check.passed, "{check:#?}");
    let last = server.seen().pop().expect("a request");
    assert_eq!(last.body["temperature"], json!(0));

    // Validated, it takes over from a failing primary by itself.
    let primary = Sandbox::start(
        ([127, 0, 0, 1], 0).into(),
        Dials {
            server_error: 1.0,
            ..quick(5)
        },
    )
    .await
    .expect("sandbox");
    let config = json!({
        "name": "gpt", "kind": "openai", "base_url": format!("{}/v1", primary.url()),
        "soft_timeout_ms": 2000, "hard_timeout_ms": 5000, "honours_idempotency_key": false
    });
    e.add_provider(&config.to_string()).await.expect("provider");
    let done = run(e, "failover", &["gpt", "claude"]).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    let providers: Vec<&str> = done.attempts.iter().map(|a| a.provider.as_str()).collect();
    assert_eq!(providers, ["gpt", "gpt", "claude"]);
}
