//! Sending one attempt: `pending → in_flight` (only one executor wins that), the request,
//! then the outcome. The soft timeout makes it `unknown` but keeps the connection until the
//! hard deadline, so a late answer still completes through the compare-and-swap.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use crate::attempt::{AttemptState, Cause};
use crate::contracts::Contract;
use crate::error::{Error, Result};
use crate::failure::{FailureKind, RetryHere};
use crate::intent::validate_intent;
use crate::known::{self, EndRecord, KnownReceived, SentRecord};
use crate::ledger::ResponseHead;
use crate::model::{AfterFailure, Attempt, AttemptError, Job};
use crate::providers::http::{self, Classified, Head};
use crate::providers::{
    build_request, decode, judge, keys, Provider, ProviderConfig, ProviderKind,
};
use crate::sandbox::Sandbox;

use super::Executor;

/// An attempt ready to send: its request, its provider, and the contract its answer must keep.
pub(super) struct Prepared {
    pub(super) request: reqwest::RequestBuilder,
    pub(super) target: Target,
    /// What is recorded of the request as it leaves (SPEC §16).
    pub(super) sent: Option<SentRecord>,
    /// The API key read for this call, only so no response header that echoes it is recorded;
    /// dropped with the exchange.
    pub(super) api_key: Option<String>,
}

/// Where an attempt's request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Destination {
    /// A first send: the configured URL, or the in-process sandbox, started if need be.
    Send,
    /// A keyed replay: the configured URL, or the in-process sandbox only if this process runs
    /// it already; a fresh one never saw the key, and would do the work again.
    Replay,
}

/// Why an attempt was not sent.
pub(super) enum NotSent {
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
pub(super) struct Target {
    pub(super) config: ProviderConfig,
    pub(super) contract: Option<Contract>,
    /// The job's attempt budget: an `http` 5xx on the last try is `unknown`, not retried.
    pub(super) max_attempts: u32,
}

impl Executor {
    /// Sends one attempt and records its outcome. A failure found before sending only ever
    /// fails a `pending` attempt; once `in_flight`, only the exchange decides.
    pub(super) async fn drive(
        &self,
        attempt: Attempt,
        job: Option<Job>,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Result<()> {
        let engine = &self.inner.engine;
        let _slot = match slot {
            Some(slot) => slot,
            None => self
                .inner
                .permits
                .clone()
                .acquire_owned()
                .await
                .map_err(|e| Error::internal(e.to_string()))?,
        };
        // What is sent comes from the job's intent, which never changes.
        let job = match job {
            Some(job) => job,
            None => {
                self.persist("job", || engine.job_by_id(&attempt.job_id))
                    .await?
            }
        };
        // A client that cannot be built sends nothing: the attempt stays `pending`.
        let client = self.client()?;
        let prepared = self
            .prepare(client, &attempt, &job, Destination::Send)
            .await;
        let Prepared {
            request,
            target,
            sent,
            api_key,
        } = match prepared {
            Ok(prepared) => prepared,
            Err(NotSent::Storage(e)) => return Err(e),
            Err(NotSent::Unsendable(why)) => {
                // Nothing was sent by us; another executor may have sent it meanwhile, and
                // then the ledger refuses this (`pending → failed` only).
                match engine.fail_unsent(&attempt.id, why).await {
                    Ok(_) | Err(Error::InvalidTransition { .. }) => {}
                    Err(e) => return Err(e),
                }
                return Ok(());
            }
        };
        if !self.marked_sent(&attempt.job_id, &attempt.id).await {
            return Ok(());
        }
        if let Some(sent) = &sent {
            self.record_sent(&attempt.id, sent).await;
        }
        let renewer = self.renew_lease(&attempt.id);
        let (head, came) = (OnceLock::new(), OnceLock::new());
        let (outcome, soft) = self
            .exchange(&attempt, request, &target.config, &head, &came)
            .await;
        renewer.abort();
        let soft = soft.then_some(FailureKind::SoftTimeout);
        match outcome {
            Some(outcome) => {
                let outcome = self
                    .judge(&attempt, outcome, &target.config, target.contract.as_ref())
                    .await?;
                if sent.is_some() {
                    if let Some(kind) = soft.or_else(|| unknown_by(&outcome, &attempt, &target)) {
                        let came = came.get();
                        self.record_end(
                            &attempt.id,
                            kind,
                            &target.config,
                            came,
                            api_key.as_deref(),
                        )
                        .await;
                    }
                }
                self.settle(&attempt, outcome, &target, head.get()).await
            }
            // The hard deadline passed: the connection is dropped and the attempt stays unknown.
            None => {
                if sent.is_some() {
                    let kind = soft.unwrap_or(FailureKind::SoftTimeout);
                    let came = came.get();
                    self.record_end(&attempt.id, kind, &target.config, came, api_key.as_deref())
                        .await;
                }
                Ok(())
            }
        }
    }

    /// Records what is sent for the attempt as the request leaves. A record that cannot be
    /// written is said on stderr and the attempt is sent all the same: it is already in flight
    /// under this executor's lease, and left unsent it would turn `unknown` for nothing.
    async fn record_sent(&self, attempt_id: &str, sent: &SentRecord) {
        let (engine, id) = (&self.inner.engine, &self.inner.id);
        if let Err(e) = self
            .persist("evidence", || engine.record_sent(attempt_id, id, sent))
            .await
        {
            eprintln!("onejob executor: attempt {attempt_id}: what was sent is not recorded: {e}");
        }
    }

    /// Records how an exchange ended without a trustworthy answer: the rule `kind` names, and
    /// the response's status, headers (secrets left out) and the body bytes that came.
    async fn record_end(
        &self,
        attempt_id: &str,
        kind: FailureKind,
        config: &ProviderConfig,
        came: Option<&Head>,
        api_key: Option<&str>,
    ) {
        let engine = &self.inner.engine;
        let end = EndRecord {
            rule: known::rule(kind, config.honours_idempotency_key).map(|r| r.code),
            received: came.map(|head| KnownReceived {
                status: head.status,
                headers: known::kept_headers(&head.headers, api_key),
                bytes: u32::try_from(head.received.load(Ordering::Relaxed)).unwrap_or(u32::MAX),
            }),
        };
        if let Err(e) = self
            .persist("evidence", || engine.record_end(attempt_id, &end))
            .await
        {
            eprintln!("onejob executor: attempt {attempt_id}: what came back is not recorded: {e}");
        }
    }

    /// Commits the attempt's `pending → in_flight` under this executor's lease; whether it
    /// may now be sent. Another executor sent it, or the job moved on: false, nothing is sent.
    /// A storage error says nothing of the commit: the server may have committed the move and
    /// then gone away before answering. The attempt is then this executor's in flight, and
    /// left so it would turn `unknown` when its lease ran out, though nothing was sent. So the
    /// lease is renewed, which holds only for an attempt this executor has in flight: renewed,
    /// the move was committed and the attempt is sent now, once; not renewed, the move was not
    /// (the attempt stays `pending`, for a later pass) or the attempt moved on.
    async fn marked_sent(&self, job_id: &str, attempt_id: &str) -> bool {
        let (engine, id, lease) = (&self.inner.engine, &self.inner.id, self.inner.options.lease);
        match engine
            .mark_sent_of(Some(job_id), attempt_id, id, lease)
            .await
        {
            Ok(_) => true,
            Err(Error::InvalidTransition { .. }) => false,
            Err(e @ Error::Storage { .. }) => {
                eprintln!("onejob executor: attempt {attempt_id}: {e}; was it marked sent?");
                self.persist("lease", || engine.renew_lease(attempt_id, id, lease))
                    .await
                    .unwrap_or_else(|e| {
                        eprintln!("onejob executor: attempt {attempt_id}: {e}");
                        false
                    })
            }
            Err(e) => {
                eprintln!("onejob executor: attempt {attempt_id}: {e}");
                false
            }
        }
    }

    /// The exchange with its soft timeout and hard deadline: its outcome, `None` when the hard
    /// deadline passed with none, and whether the soft timeout passed first. The response head,
    /// once it arrived, is in `seen` for the ledger and in `came` as it came.
    async fn exchange(
        &self,
        attempt: &Attempt,
        request: reqwest::RequestBuilder,
        config: &ProviderConfig,
        seen: &OnceLock<Arc<ResponseHead>>,
        came: &OnceLock<Head>,
    ) -> (Option<Classified>, bool) {
        let engine = &self.inner.engine;
        let (job_id, attempt_id) = (attempt.job_id.clone(), attempt.id.clone());
        // The head is queued for the next group commit and the body read meanwhile: the
        // answer's write, queued after it, commits with it or after it.
        let exchange = http::exchange(request, config, async |head: Head| {
            let _ = came.set(head.clone());
            let head = ResponseHead::new(head.request_id, Some(head.status));
            let _ = seen.set(head.clone());
            let queued = engine.queue_response_head(Some(&job_id), &attempt_id, head);
            let attempt_id = attempt_id.clone();
            let recorded = async move {
                match queued {
                    Ok(recorded) => recorded.await,
                    Err(e) => Err(e),
                }
            };
            tokio::spawn(async move {
                if let Err(e) = recorded.await {
                    eprintln!("onejob executor: attempt {attempt_id}: {e}");
                }
            });
        });
        tokio::pin!(exchange);
        let soft = Duration::from_millis(config.soft_timeout_ms);
        let hard = Duration::from_millis(config.hard_timeout_ms);
        if let Ok(outcome) = tokio::time::timeout(soft, &mut exchange).await {
            return (Some(outcome), false);
        }
        let why = FailureKind::SoftTimeout.because(format!(
            "no answer within {} ms; the request may have been processed",
            config.soft_timeout_ms
        ));
        // Recorded beside the wait, retried on storage errors; a person may have moved the
        // attempt already (abandoned it, say), and the answer is still awaited.
        let (this, sent) = (self.clone(), attempt.clone());
        tokio::spawn(async move {
            if let Err(e) = this.mark_unknown_if_in_flight(&sent, why).await {
                eprintln!("onejob executor: attempt {}: {e}", sent.id);
            }
        });
        let outcome = tokio::time::timeout(hard.saturating_sub(soft), &mut exchange)
            .await
            .ok();
        (outcome, true)
    }

    /// Builds the attempt's request, or says why it cannot be sent. Only what the ledger says
    /// (a provider or contract not found) is a verdict; a read that fails on storage is
    /// retried with backoff, and if it still fails, nothing is decided.
    pub(super) async fn prepare(
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

    /// Reads an answer out of its kind's envelope and holds it to the job's contract, before
    /// it may reach the compare-and-swap: an invalid answer becomes a failure of the attempt
    /// (`invalid_answer`, `contract_violation`), never the job's result. Token usage is kept.
    pub(super) async fn judge(
        &self,
        attempt: &Attempt,
        outcome: Classified,
        config: &ProviderConfig,
        contract: Option<&Contract>,
    ) -> Result<Classified> {
        let Classified::Answer(body) = outcome else {
            return Ok(outcome);
        };
        let decoded = match decode(config.kind, contract, body) {
            Ok(decoded) => decoded,
            Err(error) => return Ok(answered_but(error)),
        };
        if decoded.usage.is_some() || decoded.id.is_some() {
            let engine = &self.inner.engine;
            let (id, usage) = (decoded.id.as_deref(), decoded.usage.as_ref());
            self.persist("usage", || engine.record_usage(&attempt.id, id, usage))
                .await?;
        }
        Ok(match judge(decoded.output, contract) {
            Ok(result) => Classified::Answer(result),
            Err(error) => answered_but(error),
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

    /// Renews the lease every `renew_every` while the answer is awaited. A renewal that fails
    /// on storage is tried again until the lease would really have expired; it stops when the
    /// attempt is no longer this executor's `in_flight` one.
    fn renew_lease(&self, attempt_id: &str) -> tokio::task::JoinHandle<()> {
        let (engine, id) = (self.inner.engine.clone(), self.inner.id.clone());
        let (attempt_id, options) = (attempt_id.to_owned(), self.inner.options.clone());
        tokio::spawn(async move {
            let mut held_until = Instant::now() + options.lease;
            let mut every = options.renew_every;
            loop {
                tokio::time::sleep(every).await;
                let asked = Instant::now();
                match engine.renew_lease(&attempt_id, &id, options.lease).await {
                    Ok(true) => {
                        held_until = asked + options.lease;
                        every = options.renew_every;
                    }
                    // It left `in_flight` (unknown, answered): nothing left to hold.
                    Ok(false) => break,
                    Err(e) if Instant::now() < held_until => {
                        eprintln!("onejob executor: lease of {attempt_id}: {e}; retrying");
                        every = (options.renew_every / 4).max(Duration::from_millis(10));
                    }
                    Err(_) => break,
                }
            }
        })
    }

    /// Records what the exchange amounted to, by SPEC §6's table; storage errors are retried,
    /// so an answer that arrived is not lost because one write failed.
    async fn settle(
        &self,
        attempt: &Attempt,
        outcome: Classified,
        target: &Target,
        head: Option<&Arc<ResponseHead>>,
    ) -> Result<()> {
        let engine = &self.inner.engine;
        match outcome {
            Classified::Answer(answer) => {
                // A head whose own write has not run yet goes with the answer's.
                let carried = head.filter(|h| h.carried_by_answer()).cloned();
                self.persist("answer", || {
                    engine.complete_carrying(
                        Some(&attempt.job_id),
                        &attempt.id,
                        &answer,
                        Cause::Answer,
                        carried.clone(),
                    )
                })
                .await?;
            }
            Classified::Failed {
                error,
                http_status,
                retry_after,
            } => {
                let kind = error.failure();
                let last = kind.on_last_try();
                if last_keyed_try(kind, attempt, target) {
                    // The last try at a provider that honours the key: nobody will send it
                    // again, so what happened must be found out, not assumed.
                    let why = last.because(format!(
                        "{}; it was the job's last attempt, so it may have been processed",
                        error.message
                    ));
                    return self.mark_unknown_if_in_flight(attempt, why).await;
                }
                let after = match kind.retry_here() {
                    RetryHere::Yes => AfterFailure::RequeueAfter {
                        wait: self.backoff(attempt.number, retry_after),
                        retry_after,
                    },
                    RetryHere::NotHere | RetryHere::Blocked => AfterFailure::Requeue,
                };
                let failed = self
                    .persist("failure", || {
                        engine.fail_attempt(&attempt.id, error.clone(), http_status, after.clone())
                    })
                    .await;
                match failed {
                    // A person resolved it meanwhile: their verdict stands.
                    Ok(_) | Err(Error::InvalidTransition { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Classified::Unknown { error, .. } => {
                self.mark_unknown_if_in_flight(attempt, error).await?;
            }
        }
        Ok(())
    }

    /// `in_flight → unknown`; after the soft timeout it is already unknown, and a person may
    /// have moved it: that stays as it is.
    async fn mark_unknown_if_in_flight(&self, attempt: &Attempt, why: AttemptError) -> Result<()> {
        let engine = &self.inner.engine;
        let current = self
            .persist("unknown", || engine.attempt_by_id(&attempt.id))
            .await?;
        if current.state != AttemptState::InFlight {
            return Ok(());
        }
        match self
            .persist("unknown", || engine.mark_unknown(&attempt.id, why.clone()))
            .await
        {
            Ok(_) | Err(Error::InvalidTransition { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Exponential backoff with jitter, never shorter than the provider's `Retry-After` (the
    /// ledger caps any wait at an hour).
    pub(super) fn backoff(&self, number: u32, retry_after: Option<Duration>) -> Duration {
        let options = &self.inner.options;
        let doubled = options
            .backoff_base
            .saturating_mul(1u32 << number.saturating_sub(1).min(16));
        let capped = doubled.min(options.backoff_cap);
        let jittered = capped.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
        jittered.max(retry_after.unwrap_or_default())
    }
}

/// Whether a failure at a provider that honours the key is the job's last try: nobody will send
/// it again, so it is `unknown` rather than failed.
fn last_keyed_try(kind: FailureKind, attempt: &Attempt, target: &Target) -> bool {
    kind.on_last_try() != kind && attempt.number >= target.max_attempts
}

/// The failure kind that makes the attempt `unknown` by this outcome (SPEC §6), if it does.
fn unknown_by(outcome: &Classified, attempt: &Attempt, target: &Target) -> Option<FailureKind> {
    match outcome {
        Classified::Unknown { error, .. } => Some(error.failure()),
        Classified::Failed { error, .. } if last_keyed_try(error.failure(), attempt, target) => {
            Some(error.failure().on_last_try())
        }
        _ => None,
    }
}

/// A complete 2xx answer that cannot be the result: a definite failure of the attempt.
fn answered_but(error: AttemptError) -> Classified {
    Classified::Failed {
        error,
        http_status: None,
        retry_after: None,
    }
}
