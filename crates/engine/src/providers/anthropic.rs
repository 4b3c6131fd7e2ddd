//! The `anthropic` kind: the Messages API at `{base_url}/v1/messages`, with `x-api-key` and
//! `anthropic-version` headers.
//!
//! A job with a contract holds the model to the contract's schema by tool use: one tool,
//! `answer`, whose `input_schema` is the contract's schema, and `tool_choice` forcing it. The
//! answer is that tool call's input; a reply in text instead is judged as text (prose is a
//! contract violation).

use serde_json::{json, Map, Value};

use super::{Decoded, Output, ProviderConfig};
use crate::contracts::{Contract, Prompt};
use crate::model::AttemptError;

/// The API version sent when the provider does not name one (`"anthropic_version"`).
pub const DEFAULT_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the Messages API; this is used when the intent gives none.
pub const DEFAULT_MAX_TOKENS: u64 = 1024;
/// The tool whose input is the answer.
pub const ANSWER_TOOL: &str = "answer";

/// The Messages URL of a base URL.
pub fn url(base_url: &str) -> String {
    format!("{}/v1/messages", base_url.trim_end_matches('/'))
}

/// The body of a job with a contract: its rendered `prompt`, and the contract's schema as the
/// input schema of the one tool the model is made to call (see the module's doc).
pub(super) fn contract_body(contract: &Contract, prompt: Prompt) -> Map<String, Value> {
    let mut body = Map::new();
    if !prompt.system.is_empty() {
        body.insert("system".into(), json!(prompt.system));
    }
    body.insert(
        "messages".into(),
        json!([{ "role": "user", "content": prompt.user }]),
    );
    body.insert(
        "tools".into(),
        json!([{
            "name": ANSWER_TOOL,
            "description": "Give your answer. The tool's input is the answer itself and must follow its schema exactly.",
            "input_schema": contract.effective_schema(),
        }]),
    );
    body.insert(
        "tool_choice".into(),
        json!({ "type": "tool", "name": ANSWER_TOOL }),
    );
    body
}

/// The request with the Messages API's headers; `api_key`, read for this call, goes in
/// `x-api-key`.
pub fn build(
    client: &reqwest::Client,
    config: &ProviderConfig,
    base_url: &str,
    job_id: &str,
    body: &Value,
    api_key: Option<&str>,
) -> reqwest::RequestBuilder {
    let version = config
        .anthropic_version
        .as_deref()
        .unwrap_or(DEFAULT_VERSION);
    let request = client
        .post(url(base_url))
        .header("Idempotency-Key", job_id)
        .header("anthropic-version", version)
        .json(body);
    match api_key {
        Some(key) => request.header("x-api-key", key),
        None => request,
    }
}

/// Reads the answer tool's input, or else the text blocks, the usage and the message id.
pub fn decode(body: &Value) -> Result<Decoded, AttemptError> {
    let Some(blocks) = body.get("content").and_then(Value::as_array) else {
        return Err(AttemptError {
            kind: "invalid_answer".to_owned(),
            message: "a 2xx answer that is not a Messages API message: no content array".to_owned(),
        });
    };
    let tool = blocks
        .iter()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .and_then(|b| b.get("input"));
    let output = match tool {
        Some(input) => Output::Json(input.clone()),
        None => Output::Text(
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
    };
    Ok(Decoded {
        output,
        usage: body.get("usage").filter(|u| !u.is_null()).cloned(),
        id: body.get("id").and_then(Value::as_str).map(str::to_owned),
    })
}
