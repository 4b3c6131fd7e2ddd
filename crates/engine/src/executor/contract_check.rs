//! The contract check of SPEC §8: every sample at temperature 0 against one provider, each
//! answer held to the contract, and the rendered prompt held to the provider's context window.
//! It sends requests, so it lives beside the executor's sending, not in the ledger.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::prompt_tokens;
use crate::contracts::check::{Check, SampleResult};
use crate::contracts::Contract;
use crate::error::{Error, Result};
use crate::providers::http::{self, Classified};
use crate::providers::{build_request, decode, judge, keys, Provider, ProviderKind};
use crate::sandbox::Sandbox;
use crate::Engine;

impl Engine {
    /// Runs the contract check (SPEC §8) of `contract` against `provider` and stores it.
    /// Every sample is sent at temperature 0; the check passes only if every answer keeps the
    /// contract and every rendered prompt fits the provider's context window. A `sandbox`
    /// provider is asked at its Chat Completions endpoint; one without a `base_url` is checked
    /// against a sandbox started for the check.
    pub async fn check_contract(&self, contract: &str, provider: &str) -> Result<Check> {
        let contract = self.contract(contract).await?;
        let provider = self.provider(provider).await?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::internal(format!("cannot build the HTTP client: {e}")))?;
        let id = uuid::Uuid::now_v7().to_string();
        let (base_url, sandbox) = match &provider.config.base_url {
            Some(url) => (url.clone(), None),
            None if provider.config.kind == ProviderKind::Sandbox => {
                let dials = provider.config.sandbox_dials()?;
                let sandbox = Sandbox::start(([127, 0, 0, 1], 0).into(), dials).await?;
                (sandbox.url(), Some(sandbox))
            }
            None => {
                return Err(Error::invalid_input(
                    "provider.base_url",
                    "is required for this kind",
                ))
            }
        };
        let samples = run(&client, &contract, &provider, &base_url, &id).await;
        if let Some(sandbox) = sandbox {
            sandbox.stop().await;
        }
        let row = crate::store::checks::CheckRow {
            id,
            contract: contract.name.clone(),
            contract_hash: contract.hash.clone(),
            provider: provider.config.name.clone(),
            provider_updated_at: provider.updated_at.clone(),
            passed: samples.iter().all(|s| s.passed),
            samples: serde_json::to_string(&samples).map_err(|e| Error::internal(e.to_string()))?,
            // Stamped by the database's clock when the check is recorded.
            checked_at: String::new(),
        };
        self.record_check(row).await
    }
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
    // Every kind but `http` is sent the rendered prompt (a `sandbox` at its chat endpoint).
    if config.kind != ProviderKind::Http {
        let count = prompt_tokens::count(client, config, base_url, &prompt).await;
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
    // Read for each sample, as for each attempt: a key set meanwhile is used at once.
    let request = keys::api_key(config).await.and_then(|api_key| {
        build_request(
            client,
            config,
            base_url,
            key,
            sample,
            Some(contract),
            &params,
            api_key.as_deref(),
        )
    });
    let request =
        request.map(|r| r.timeout(std::time::Duration::from_millis(config.hard_timeout_ms)));
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
        Classified::Answer(body) => decode(config.kind, Some(contract), body).and_then(|decoded| {
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
