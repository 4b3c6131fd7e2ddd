//! Before an attempt is sent: its request built from the job's intent, the provider and the
//! contract as they are now, or why it cannot be sent.

use serde_json::Value;

use crate::contracts::Contract;
use crate::error::{Error, Result};
use crate::failure::FailureKind;
use crate::intent::validate_intent;
use crate::known::SentRecord;
use crate::model::{Attempt, AttemptError, Job};
use crate::providers::{build_request, keys, Provider, ProviderConfig, ProviderKind};
use crate::sandbox::Sandbox;

use crate::executor::Executor;

/// An attempt ready to send: its request, its provider, and the contract its answer must keep.
pub(in crate::executor) struct Prepared {
    pub(in crate::executor) request: reqwest::RequestBuilder,
    pub(in crate::executor) target: Target,
    /// What is recorded of the request as it leaves (SPEC §16).
    pub(in crate::executor) sent: Option<SentRecord>,
    /// The API key read for this call, only so no response header that echoes it is recorded;
    /// dropped with the exchange.
    pub(in crate::executor) api_key: Option<String>,
}

/// Where an attempt's request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::executor) enum Destination {
    /// A first send: the configured URL, or the in-process sandbox, started if need be.
    Send,
    /// A keyed replay: the configured URL, or the in-process sandbox only if this process runs
    /// it already; a fresh one never saw the key, and would do the work again.
    Replay,
}

/// Why an attempt was not sent.
pub(in crate::executor) enum NotSent {
    /// It cannot be sent as configured (a provider or contract removed since, a missing key):
    /// a definite outcome, `pending → failed`.
    Unsendable(AttemptError),
    /// The ledger could not be read, even after retrying: no verdict at all. The attempt stays
    /// `pending` and a later pass sends it (SPEC §4).
    Storage(Error),
}

impl From<AttemptError> for NotSent {
    fn from(error: AttemptError) -> Self {
        NotSent::Unsendable(error)
    }
}

/// What the outcome of an attempt is judged by.
pub(in crate::executor) struct Target {
    pub(in crate::executor) config: ProviderConfig,
    pub(in crate::executor) contract: Option<Contract>,
    /// The job's attempt budget: an `http` 5xx on the last try is `unknown`, not retried.
    pub(in crate::executor) max_attempts: u32,
}

impl Executor {
    /// Builds the attempt's request, or says why it cannot be sent. Only what the ledger says
    /// (a provider or contract not found) is a verdict; a read that fails on storage is
    /// retried with backoff, and if it still fails, nothing is decided.
    pub(in crate::executor) async fn prepare(
        &self,
        client: &reqwest::Client,
        attempt: &Attempt,
        job: &Job,
        destination: Destination,
    ) -> std::result::Result<Prepared, NotSent> {
        let engine = &self.inner.engine;
        let misconfigured = |m: String| NotSent::Unsendable(FailureKind::Misconfigured.because(m));
        let verdict = |e: Error, m: String| match e {
            e @ Error::Storage { .. } => NotSent::Storage(e),
            e => misconfigured(format!("{m}: {e}")),
        };
        let provider = self
            .persist("provider", || engine.provider(&attempt.provider))
            .await
            .map_err(|e| verdict(e, format!("provider {}", attempt.provider)))?;
        let url = match destination {
            Destination::Send => self.url_of(&provider).await,
            Destination::Replay => self.lookup_base(&provider).await,
        }
        .map_err(|e| misconfigured(e.to_string()))?;
        let input = job.intent.get("input").cloned().unwrap_or(Value::Null);
        let params = match job.intent.get("params") {
            Some(Value::Object(params)) => params.clone(),
            _ => serde_json::Map::new(),
        };
        // The contract as it is now is the one the answer is held to.
        let contract = match job.intent.get("contract").and_then(Value::as_str) {
            Some(name) => Some(
                self.persist("contract", || engine.contract(name))
                    .await
                    .map_err(|e| verdict(e, format!("contract {name}")))?,
            ),
            None => None,
        };
        // Read at call time and dropped with the request: never stored.
        let api_key = keys::api_key(&provider.config).await?;
        let request = build_request(
            client,
            &provider.config,
            &url,
            &job.id,
            &input,
            contract.as_ref(),
            &params,
            api_key.as_deref(),
        )?;
        let sent = SentRecord::capture(
            &request,
            api_key.as_deref(),
            provider.config.honours_idempotency_key,
        );
        let max_attempts = validate_intent(job.intent.clone())
            .map_err(|e| misconfigured(format!("the job's intent: {e}")))?
            .intent
            .max_attempts();
        Ok(Prepared {
            request,
            target: Target {
                config: provider.config,
                contract,
                max_attempts,
            },
            sent,
            api_key,
        })
    }

    /// Where to send: the configured URL, or the in-process sandbox for a `sandbox` provider
    /// without one (started on first use, its dials refreshed from the configuration).
    async fn url_of(&self, provider: &Provider) -> Result<String> {
        let config = &provider.config;
        if let Some(url) = &config.base_url {
            return Ok(url.clone());
        }
        if config.kind != ProviderKind::Sandbox {
            return Err(Error::invalid_input(
                "provider.base_url",
                "is required for this kind",
            ));
        }
        let dials = config.sandbox_dials()?;
        let mut sandboxes = self.inner.sandboxes.lock().await;
        if let Some(sandbox) = sandboxes.get(&config.name) {
            sandbox.set_dials(dials);
            return Ok(sandbox.url());
        }
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let sandbox = Sandbox::start(loopback, dials).await?;
        let url = sandbox.url();
        sandboxes.insert(config.name.clone(), sandbox);
        Ok(url)
    }
}
