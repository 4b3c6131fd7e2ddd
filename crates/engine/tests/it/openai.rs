//! The openai adapter against a real OpenAI-compatible server that this project does not
//! implement: `@dwmkerr/mock-llm` from npm, installed into `tests/mock-llm/` by the setup
//! script and started here on a free 127.0.0.1 port. The server answers only a request that
//! carries the rendered messages, the contract's schema (strict) and an Idempotency-Key, and
//! echoes the key back inside its answer.

use crate::common;

use std::time::Duration;

use common::{Ledger, OWNER};
use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{JobStatus, Usage};
use onejob_testkit::MockLlm;
use serde_json::{json, Value};

/// Answers 400 unless the request is exactly what the openai adapter should send for the
/// job below; then a chat completion whose content echoes the request's Idempotency-Key.
fn config() -> Value {
    let expected = [
        "body.model == 'gpt-4o-mini'",
        "body.messages[0].role == 'system'",
        "body.messages[0].content == 'You summarise text.'",
        "body.messages[1].role == 'user'",
        "body.messages[1].content == 'Summarise: hello world'",
        "body.temperature == `0.2`",
        "body.max_tokens == `50`",
        "body.response_format.type == 'json_schema'",
        "body.response_format.json_schema.strict == `true`",
        "body.response_format.json_schema.schema.additionalProperties == `false`",
        "body.response_format.json_schema.schema.required == `[\"summary\", \"key\"]`",
        "headers.authorization == 'Bearer test-key-for-mock-llm'",
        "headers.\"idempotency-key\" != null",
    ]
    .join(" && ");
    let content =
        r#"{\"summary\": \"hello\", \"key\": \"{{jmes request headers."idempotency-key"}}\"}"#;
    let answer = format!(
        r#"{{"id": "chatcmpl-mock", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{{"index": 0, "message": {{"role": "assistant", "content": "{content}"}}, "finish_reason": "stop"}}],
            "usage": {{"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}}}}"#
    );
    json!({
        "rules": [
            {
                "path": "/v1/chat/completions",
                "method": "POST",
                "match": "@",
                "response": {
                    "status": 400,
                    "content": "{\"error\": {\"message\": \"the request lacked the rendered messages, the schema or the Idempotency-Key\"}}"
                }
            },
            {
                "path": "/v1/chat/completions",
                "method": "POST",
                "match": expected,
                "response": { "status": 200, "content": answer }
            }
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_a_contract_succeeds_against_a_third_party_openai_compatible_server() {
    std::env::set_var("ONEJOB_TEST_MOCK_LLM_KEY", "test-key-for-mock-llm");
    let server = MockLlm::start(&config().to_string()).expect("mock-llm runs");
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let contract = json!({
        "name": "echo-summary",
        "schema": {"type": "object", "properties": {"summary": {"type": "string"}, "key": {"type": "string"}},
                   "required": ["summary", "key"]},
        "template": {"system": "You summarise text.", "user": "Summarise: {{text}}"},
        "samples": [{"text": "hello world"}]
    });
    e.add_contract(&contract.to_string())
        .await
        .expect("contract");
    let provider = json!({
        "name": "mock-llm", "kind": "openai", "base_url": format!("{}/v1", server.url),
        "model": "gpt-4o-mini", "api_key_env": "ONEJOB_TEST_MOCK_LLM_KEY",
        "soft_timeout_ms": 5000, "hard_timeout_ms": 10000, "honours_idempotency_key": false
    });
    e.add_provider(&provider.to_string())
        .await
        .expect("provider");
    let intent = json!({
        "route": ["mock-llm"], "input": {"text": "hello world"}, "contract": "echo-summary",
        "params": {"temperature": 0.2, "max_tokens": 50}, "max_attempts": 1
    });
    let job = e
        .submit(OWNER, "mock-llm-1", &intent.to_string())
        .await
        .expect("submit")
        .job;
    let executor = Executor::new(e.clone(), ExecutorOptions::default()).expect("executor");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let waited = executor
        .run_job(&job.id, Some(deadline))
        .await
        .expect("run");
    let detail = e.job(OWNER, &job.id).await.expect("job");
    assert_eq!(waited.status, JobStatus::Succeeded, "{detail:#?}");
    assert_eq!(
        waited.result,
        Some(json!({"summary": "hello", "key": job.id})),
        "the server saw the job id as the Idempotency-Key"
    );
    let attempt = &detail.attempts[0];
    assert_eq!(attempt.request_id.as_deref(), Some("chatcmpl-mock"));
    let usage = e.attempt_usage(&attempt.id).await.expect("usage");
    assert_eq!(
        usage,
        Some(json!({"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}))
    );
    let tokens = Usage {
        prompt_tokens: 21,
        completion_tokens: 9,
    };
    assert_eq!(attempt.usage, Some(tokens));
    assert_eq!(
        detail.usage,
        Some(tokens),
        "one attempt: the job's total is its usage"
    );
}
