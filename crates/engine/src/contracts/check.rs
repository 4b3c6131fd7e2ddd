//! The contract check of SPEC §8: every sample at temperature 0 against one provider, each
//! answer held to the contract, and the rendered prompt held to the provider's context window.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{tokens, Contract};
use crate::providers::http::{self, Classified};
use crate::providers::{build_request, decode, judge, Provider, ProviderKind};

/// One sample's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleResult {
    pub passed: bool,
    /// Why it failed, or what passing meant.
    pub reason: String,
    /// From sending to the whole answer; `None` when nothing was sent.
    pub latency_ms: Option<u64>,
    /// The rendered prompt's tokens by the provider's tokenizer; `None`: not checked.
    pub prompt_tokens: Option<u64>,
    /// What counted `prompt_tokens`, or why nothing did.
    pub tokenizer: String,
    /// The provider's context window, when it declares one.
    pub context_window: Option<u64>,
    /// The token usage the provider reported for its answer.
    pub usage: Option<Value>,
}

/// A stored check: whether every sample passed, and how each fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub id: String,
    pub contract: String,
    /// The contract's hash when it was checked.
    pub contract_hash: String,
    pub provider: String,
    /// The provider's `updated_at` when it was checked.
    pub provider_updated_at: String,
    pub passed: bool,
    pub samples: Vec<SampleResult>,
    pub checked_at: String,
    /// Whether it still counts for automatic failover: neither the contract nor the provider
    /// changed since, and it passed.
    pub current: bool,
}

/// Runs every sample of `contract` against `provider` at `base_url`, one after another.
/// Idempotency keys are `check-<check id>-<sample number>`, so a check's requests are told apart
/// from jobs'.
pub async fn run(
    client: &reqwest::Client,
    contract: &Contract,
    provider: &Provider,
    base_url: &str,
    check_id: &str,
) -> Vec<SampleResult> {
    let mut results = Vec::with_capacity(contract.samples.len());
    for (i, sample) in contract.samples.iter().enumerate() {
        let key = format!("check-{check_id}-{}", i + 1);
        results.push(run_sample(client, contract, provider, base_url, sample, &key).await);
    }
    results
}

async fn run_sample(
    client: &reqwest::Client,
    contract: &Contract,
    provider: &Provider,
    base_url: &str,
    sample: &Value,
    key: &str,
) -> SampleResult {
    let config = &provider.config;
    let mut result = SampleResult {
        passed: false,
        reason: String::new(),
        latency_ms: None,
        prompt_tokens: None,
        tokenizer: "not checked: this kind sends the input, not a prompt".to_owned(),
        context_window: config.context_window,
        usage: None,
    };
    let prompt = match contract.render(sample) {
        Ok(prompt) => prompt,
        Err(why) => {
            result.reason = why;
            return result;
        }
    };
    if matches!(config.kind, ProviderKind::Openai | ProviderKind::Anthropic) {
        let count = tokens::count(client, config, base_url, &prompt).await;
        result.prompt_tokens = count.tokens;
        result.tokenizer = count.by.clone();
        if let (Some(tokens), Some(window)) = (count.tokens, config.context_window) {
            if tokens > window {
                result.reason = format!(
                    "the rendered prompt is {tokens} tokens by {}; {}'s context window is {window} tokens",
                    count.by, config.name
                );
                return result;
            }
        }
    }
    let params = Map::from_iter([("temperature".to_owned(), json!(0))]);
    let request = build_request(
        client,
        config,
        base_url,
        key,
        sample,
        Some(contract),
        &params,
    )
    .map(|r| r.timeout(std::time::Duration::from_millis(config.hard_timeout_ms)));
    let request = match request {
        Ok(request) => request,
        Err(error) => {
            result.reason = format!("{}: {}", error.kind, error.message);
            return result;
        }
    };
    let started = Instant::now();
    let classified = http::exchange(request, config, async |_| {}).await;
    result.latency_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    let judged = match classified {
        Classified::Answer(body) => decode(config.kind, body).and_then(|decoded| {
            result.usage = decoded.usage.clone();
            judge(decoded.output, Some(contract))
        }),
        Classified::Failed { error, .. } | Classified::Unknown { error, .. } => Err(error),
    };
    match judged {
        Ok(_) => {
            result.passed = true;
            result.reason = "the answer kept the contract".to_owned();
        }
        Err(error) => result.reason = format!("{}: {}", error.kind, error.message),
    }
    result
}
