//! What goes over the wire to a provider: a job's request built by the provider's kind, and an
//! answer's body read and judged against the job's contract.

use super::*;

/// Reads the answer out of a 2xx JSON body by the provider's kind; a body that is not the
/// kind's envelope is `invalid_answer`. A `sandbox` answers a job with a contract as a Chat
/// Completion (see [`build_request`]), so that answer is read as an `openai` one.
pub(crate) fn decode(
    kind: ProviderKind,
    contract: Option<&Contract>,
    body: Value,
) -> std::result::Result<Decoded, AttemptError> {
    match kind {
        ProviderKind::Openai => openai::decode(&body),
        ProviderKind::Sandbox if contract.is_some() => openai::decode(&body),
        ProviderKind::Anthropic => anthropic::decode(&body),
        ProviderKind::Http | ProviderKind::Sandbox => Ok(Decoded {
            output: Output::Json(body),
            usage: None,
            id: None,
        }),
    }
}

/// The job's result from a decoded answer: held to the contract when the job has one (text
/// that is not JSON, a schema violation or an extra key is `contract_violation`); without a
/// contract, message text is kept as JSON when it parses and as a string otherwise.
pub(crate) fn judge(
    output: Output,
    contract: Option<&Contract>,
) -> std::result::Result<Value, AttemptError> {
    match (contract, output) {
        (Some(contract), Output::Text(text)) => contract.judge_text(&text),
        (Some(contract), Output::Json(value)) => contract.judge(&value).map(|()| value),
        (None, Output::Text(text)) => {
            Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
        }
        (None, Output::Json(value)) => Ok(value),
    }
}

/// Builds an attempt's request for the provider's kind, to `base_url` as configured: the
/// job's input as the body for `http` and `sandbox`, the rendered contract prompt (or the
/// input's own messages) for `openai` and `anthropic`. A job with a contract at a `sandbox`
/// goes to the sandbox's Chat Completions endpoint as an `openai` job would, so its answer is
/// made to the contract's schema and its dials can break it. `params` are the intent's;
/// `api_key` is the one [`keys::api_key`] read for this call, and goes only into a header.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_request(
    client: &reqwest::Client,
    config: &ProviderConfig,
    base_url: &str,
    job_id: &str,
    input: &Value,
    contract: Option<&Contract>,
    params: &Map<String, Value>,
    api_key: Option<&str>,
) -> std::result::Result<reqwest::RequestBuilder, AttemptError> {
    match config.kind {
        ProviderKind::Sandbox if contract.is_some() => {
            let body = chat_body(ProviderKind::Openai, config, contract, input, params)?;
            let url = sandbox::chat_url(base_url).ok_or_else(|| {
                misconfigured(
                    "the sandbox's base_url is not a URL its chat endpoint can be found from",
                )
            })?;
            Ok(http::build(client, &url, job_id, &body, api_key))
        }
        ProviderKind::Http | ProviderKind::Sandbox => {
            Ok(http::build(client, base_url, job_id, input, api_key))
        }
        ProviderKind::Openai => {
            let body = chat_body(ProviderKind::Openai, config, contract, input, params)?;
            Ok(http::build(
                client,
                &openai::url(base_url),
                job_id,
                &body,
                api_key,
            ))
        }
        ProviderKind::Anthropic => {
            let body = chat_body(ProviderKind::Anthropic, config, contract, input, params)?;
            Ok(anthropic::build(
                client, config, base_url, job_id, &body, api_key,
            ))
        }
    }
}

/// The request body of a job at a chat kind (`openai`, or `anthropic`): its contract's prompt
/// as the kind asks for it, or else the job's own `input.messages`; then the provider's model
/// (and for `anthropic` the default `max_tokens`) where the body names none, and the intent's
/// `params` but the reserved ones.
fn chat_body(
    kind: ProviderKind,
    config: &ProviderConfig,
    contract: Option<&Contract>,
    input: &Value,
    params: &Map<String, Value>,
) -> std::result::Result<Value, AttemptError> {
    let anthropic = kind == ProviderKind::Anthropic;
    let mut body = match contract {
        Some(contract) => {
            let prompt = contract
                .render(input)
                .map_err(|why| misconfigured(format!("contract {}: {why}", contract.name)))?;
            if anthropic {
                anthropic::contract_body(contract, prompt)
            } else {
                openai::contract_body(config, contract, prompt)
            }
        }
        None => match input {
            Value::Object(fields) if fields.contains_key("messages") => fields.clone(),
            _ => {
                let api = if anthropic {
                    "Messages API"
                } else {
                    "Chat Completions"
                };
                return Err(misconfigured(format!(
                    "an {} job without a contract needs input.messages ({api} messages)",
                    kind.as_str()
                )));
            }
        },
    };
    if let Some(model) = &config.model {
        body.entry("model").or_insert_with(|| json!(model));
    }
    if anthropic {
        body.entry("max_tokens")
            .or_insert_with(|| json!(anthropic::DEFAULT_MAX_TOKENS));
    }
    for (key, value) in params {
        if !RESERVED_PARAMS.contains(&key.as_str()) {
            body.insert(key.clone(), value.clone());
        }
    }
    Ok(Value::Object(body))
}

/// Parameters the adapters set themselves; the intent's `params` cannot override them.
pub(crate) const RESERVED_PARAMS: [&str; 7] = [
    "model",
    "messages",
    "system",
    "response_format",
    "stream",
    "tools",
    "tool_choice",
];

/// A misconfiguration of a job or provider found before sending: nothing was sent.
pub(crate) fn misconfigured(message: impl Into<String>) -> AttemptError {
    AttemptError {
        kind: "misconfigured".to_owned(),
        message: message.into(),
    }
}
