//! The `openai` kind: any OpenAI-compatible Chat Completions endpoint, at
//! `{base_url}/chat/completions` (`base_url` includes `/v1`).
//!
//! A job with a contract sends the rendered template as a system and a user message, and asks
//! for the contract's schema through `response_format` (`json_schema`, strict) where the
//! provider supports it, otherwise JSON mode with the schema in the system message. The answer
//! is `choices[0].message.content`.

use serde_json::{json, Map, Value};

use super::{Decoded, Output, ProviderConfig};
use crate::contracts::{Contract, Prompt};
use crate::model::AttemptError;

/// The Chat Completions URL of a base URL.
pub fn url(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

/// The body of a job with a contract: its rendered `prompt` as a system and a user message,
/// and the contract's schema as `response_format` asks for it (see the module's doc).
pub(super) fn contract_body(
    config: &ProviderConfig,
    contract: &Contract,
    prompt: Prompt,
) -> Map<String, Value> {
    let schema = contract.effective_schema();
    let strict = config.supports_json_schema != Some(false);
    let system = if strict {
        prompt.system
    } else {
        // JSON mode knows no schema: the model must read it, and OpenAI wants "JSON" in the prompt.
        let rule = format!("Answer with one JSON object that follows this JSON Schema: {schema}");
        if prompt.system.is_empty() {
            rule
        } else {
            format!("{}\n\n{rule}", prompt.system)
        }
    };
    let mut messages = Vec::new();
    if !system.is_empty() {
        messages.push(json!({ "role": "system", "content": system }));
    }
    messages.push(json!({ "role": "user", "content": prompt.user }));
    let response_format = if strict {
        json!({
            "type": "json_schema",
            "json_schema": { "name": schema_name(&contract.name), "strict": true, "schema": schema }
        })
    } else {
        json!({ "type": "json_object" })
    };
    Map::from_iter([
        ("messages".to_owned(), Value::Array(messages)),
        ("response_format".to_owned(), response_format),
    ])
}

/// OpenAI accepts schema names of `a-zA-Z0-9_-` only; contract names may also hold dots.
fn schema_name(name: &str) -> String {
    name.replace('.', "_")
}

/// Reads `choices[0].message.content` (or the model's refusal), the usage and the answer's id.
pub fn decode(body: &Value) -> Result<Decoded, AttemptError> {
    let message = body.pointer("/choices/0/message");
    let text = message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .or_else(|| {
            message
                .and_then(|m| m.get("refusal"))
                .and_then(Value::as_str)
        });
    let Some(text) = text else {
        return Err(AttemptError {
            kind: "invalid_answer".to_owned(),
            message: "a 2xx answer that is not a Chat Completion: no choices[0].message.content"
                .to_owned(),
        });
    };
    Ok(Decoded {
        output: Output::Text(text.to_owned()),
        usage: body.get("usage").filter(|u| !u.is_null()).cloned(),
        id: body.get("id").and_then(Value::as_str).map(str::to_owned),
    })
}
