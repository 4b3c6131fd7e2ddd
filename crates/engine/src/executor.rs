//! The executor: claims work, sends attempts, classifies what comes back, completes through
//! the compare-and-swap — and never sends an attempt twice.
//!
//! Every step that decides an outcome is committed before its effect: an attempt is committed
//! `pending`, then `in_flight` with this executor's lease, before a byte is written. Only the
//! executor whose guarded `pending → in_flight` update succeeded sends it, so two executors
//! (in one process or several) never send the same attempt.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::attempt::Cause;
use crate::contracts::Contract;
use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::ledger::Claim;
use crate::model::{AfterFailure, Attempt, AttemptError, Job, JobError};
use crate::policy::NOT_RETRYABLE_HERE;
use crate::providers::http::{self, Classified, Head};
use crate::providers::sandbox::{Dials, Sandbox};
use crate::providers::{build_request, decode, judge, Provider, ProviderConfig, ProviderKind};
use crate::Engine;

/// How an executor paces itself. The defaults are SPEC §4's.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// How long an `in_flight` attempt stays this executor's without renewal.
    pub lease: Duration,
    /// How often the lease is renewed while waiting for an answer.
    pub renew_every: Duration,
    /// How often the ledger is looked at without a wake-up (work from other processes,
    /// expired leases, ended backoffs).
    pub poll_every: Duration,
    /// Attempts this executor sends at once.
    pub max_in_flight: usize,
    /// The first retry's backoff; it doubles per attempt, with jitter, up to `backoff_cap`.
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// How often an `unknown` attempt's provider status is looked up, where it has one.
    pub reconcile_every: Duration,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions {
            lease: Duration::from_secs(10),
            renew_every: Duration::from_secs(3),
            poll_every: Duration::from_secs(1),
            max_in_flight: 32,
            backoff_base: Duration::from_millis(200),
            backoff_cap: Duration::from_secs(30),
            reconcile_every: Duration::from_secs(5),
        }
    }
}

/// What a status lookup said about an `unknown` attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciled {
    /// The provider did the work: its result went through the compare-and-swap.
    Completed(Box<crate::model::Completion>),
    /// The provider did not do it: the attempt is `failed` and the job may continue.
    Failed(Box<crate::model::JobAttempt>),
    /// The provider does not know yet; the attempt stays `unknown`.
    StillUnknown,
}

/// How a wait for one job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    Succeeded,
    /// `failed` or `cancelled`.
    Failed,
    Unknown,
    /// The caller's deadline passed first.
    TimedOut,
}

/// The job as a wait left it, and how the wait ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Waited {
    pub job: Job,
    pub end: WaitEnd,
}

/// A running executor. Cheap to clone; clones share their attempts and sandboxes.
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    id: String,
    client: reqwest::Client,
    options: ExecutorOptions,
    permits: Arc<Semaphore>,
    tasks: Mutex<JoinSet<()>>,
    /// Attempts this executor is driving, so a pass does not start one twice.
    driving: Mutex<HashSet<String>>,
    sandboxes: tokio::sync::Mutex<HashMap<String, Sandbox>>,
    last_recovery: Mutex<Option<Instant>>,
    last_lookup: Mutex<HashMap<String, Instant>>,
}

impl Executor {
    /// An executor over `engine` with a fresh id.
    pub fn new(engine: Engine, options: ExecutorOptions) -> Result<Executor> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::internal(format!("cannot build the HTTP client: {e}")))?;
        Ok(Executor {
            inner: Arc::new(Inner {
                id: format!("executor-{}", uuid::Uuid::now_v7()),
                permits: Arc::new(Semaphore::new(options.max_in_flight.max(1))),
                engine,
                client,
                options,
                tasks: Mutex::new(JoinSet::new()),
                driving: Mutex::new(HashSet::new()),
                sandboxes: tokio::sync::Mutex::new(HashMap::new()),
                last_recovery: Mutex::new(None),
                last_lookup: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// This executor's id, as recorded on the attempts it sends.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Runs until `stop` completes: a pass on every wake-up and at least every `poll_every`.
    pub async fn run(&self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            if let Err(e) = self.tick().await {
                eprintln!("onejob executor: {e}");
            }
            tokio::select! {
                () = &mut stop => break,
                () = self.inner.engine.work_available() => {}
                () = tokio::time::sleep(self.inner.options.poll_every) => {}
            }
        }
        self.shutdown().await;
    }

    /// Runs passes until nothing is left to send and every attempt it started has ended
    /// (with an answer, or at its hard deadline).
    pub async fn run_until_idle(&self) -> Result<()> {
        loop {
            let started = self.tick().await?;
            self.reap();
            let busy = !self.lock_driving().is_empty();
            let waiting = self.inner.engine.next_backoff_end().await?;
            if started == 0 && !busy && waiting.is_none() {
                let pending = self.inner.engine.pending_attempts(1).await?;
                if pending.is_empty() {
                    break;
                }
            }
            tokio::select! {
                () = self.inner.engine.work_available() => {}
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        self.shutdown().await;
        Ok(())
    }

    /// Drives one job until it is terminal, `failed` or `unknown`, or `deadline` passes
    /// (`submit --wait`). Returns as soon as the job is `unknown`: it does not wait for the
    /// hard deadline. The job's `error` says why it is not `succeeded`.
    pub async fn run_job(&self, job_id: &str, deadline: Option<Instant>) -> Result<Waited> {
        loop {
            let job = self.inner.engine.job_by_id(job_id).await?;
            let end = match job.status {
                JobStatus::Succeeded => Some(WaitEnd::Succeeded),
                JobStatus::Failed | JobStatus::Cancelled => Some(WaitEnd::Failed),
                JobStatus::Unknown => Some(WaitEnd::Unknown),
                _ if deadline.is_some_and(|d| Instant::now() >= d) => Some(WaitEnd::TimedOut),
                _ => None,
            };
            if let Some(end) = end {
                return self.waited(job, end).await;
            }
            self.tick_job(&job).await?;
            tokio::select! {
                () = self.inner.engine.work_available() => {}
                () = tokio::time::sleep(Duration::from_millis(25)) => {}
            }
        }
    }

    /// The job as a wait ends, with the reason in `error` when it did not succeed.
    async fn waited(&self, mut job: Job, end: WaitEnd) -> Result<Waited> {
        let reason = |code: &str, message: String| JobError {
            code: code.to_owned(),
            message,
        };
        match end {
            WaitEnd::Unknown => {
                let detail = self.inner.engine.job(&job.owner_id, &job.id).await?;
                let open = detail.attempts.iter().rev().find(|a| a.state.is_open());
                let why = open
                    .and_then(|a| {
                        a.error
                            .as_ref()
                            .map(|e| format!("attempt {} {}: {}", a.number, e.kind, e.message))
                    })
                    .unwrap_or_else(|| "an attempt's outcome is unknown".to_owned());
                job.error = Some(reason(
                    "unknown",
                    format!("{why}; resolve it before another attempt"),
                ));
            }
            WaitEnd::TimedOut => {
                job.error = Some(reason(
                    "wait_timeout",
                    format!(
                        "still {} when the wait ended; an attempt this process was sending is left to its lease and becomes unknown unless its answer was recorded",
                        job.status
                    ),
                ));
            }
            WaitEnd::Succeeded | WaitEnd::Failed => {}
        }
        Ok(Waited { job, end })
    }

    /// One pass over the ledger: recover expired leases (about once a second), look up the
    /// status of `unknown` attempts where the provider offers it, send `pending` attempts
    /// and claim queued jobs. Returns how many attempts it started.
    pub async fn tick(&self) -> Result<usize> {
        self.recover_if_due().await?;
        self.reconcile_due().await;
        let mut started = 0;
        let room = self.inner.permits.available_permits() as u32;
        for attempt in self.inner.engine.pending_attempts(room.max(1)).await? {
            started += usize::from(self.spawn_drive(attempt));
        }
        let room = self.inner.permits.available_permits() as u32;
        if room > 0 {
            for job_id in self.inner.engine.sendable_jobs(room).await? {
                started += usize::from(self.claim_and_drive(&job_id).await?);
            }
        }
        Ok(started)
    }

    async fn tick_job(&self, job: &Job) -> Result<()> {
        self.recover_if_due().await?;
        match job.status {
            JobStatus::Queued => {
                let due = job
                    .not_before
                    .as_deref()
                    .is_none_or(|at| at <= crate::store::now().as_str());
                if due {
                    self.claim_and_drive(&job.id).await?;
                }
            }
            JobStatus::Running => {
                for attempt in self.inner.engine.pending_attempts(1000).await? {
                    if attempt.job_id == job.id {
                        self.spawn_drive(attempt);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn claim_and_drive(&self, job_id: &str) -> Result<bool> {
        // Only a provider whose current contract check passed takes over by itself; a job
        // without a contract has none.
        let validated = self.inner.engine.validated_fallbacks(job_id).await?;
        let allowed = |provider: &str, contract: Option<&str>| {
            contract.is_some() && validated.contains(provider)
        };
        match self.inner.engine.claim_next(job_id, allowed).await? {
            Claim::Attempt(claimed) => Ok(self.spawn_drive(claimed.attempt)),
            Claim::Failed(_) | Claim::Skipped => Ok(false),
        }
    }

    /// Starts driving an attempt unless this executor already is.
    fn spawn_drive(&self, attempt: Attempt) -> bool {
        if !self.lock_driving().insert(attempt.id.clone()) {
            return false;
        }
        let this = self.clone();
        let mut tasks = self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.spawn(async move {
            let id = attempt.id.clone();
            if let Err(e) = this.drive(attempt).await {
                eprintln!("onejob executor: attempt {id}: {e}");
            }
            this.lock_driving().remove(&id);
        });
        true
    }

    fn lock_driving(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.inner.driving.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops finished tasks from the set.
    fn reap(&self) {
        let mut tasks = self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner());
        while tasks.try_join_next().is_some() {}
    }

    /// Waits for every attempt task, then stops the in-process sandboxes.
    async fn shutdown(&self) {
        let mut tasks =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        while tasks.join_next().await.is_some() {}
        let sandboxes: Vec<Sandbox> = self
            .inner
            .sandboxes
            .lock()
            .await
            .drain()
            .map(|(_, s)| s)
            .collect();
        for sandbox in sandboxes {
            sandbox.stop().await;
        }
    }

    async fn recover_if_due(&self) -> Result<()> {
        {
            let mut last = self
                .inner
                .last_recovery
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
                return Ok(());
            }
            *last = Some(Instant::now());
        }
        self.inner.engine.recover_expired_leases().await?;
        Ok(())
    }

    /// Sends one attempt: `pending → in_flight` (only one executor wins that), the request,
    /// then the outcome. The soft timeout makes it `unknown` but keeps the connection until
    /// the hard deadline, so a late answer still completes through the compare-and-swap.
    async fn drive(&self, attempt: Attempt) -> Result<()> {
        let engine = &self.inner.engine;
        let _permit = self
            .inner
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| Error::internal(e.to_string()))?;
        let job = engine.job_by_id(&attempt.job_id).await?;
        let request = match self.prepare(&attempt, &job).await {
            Ok(request) => request,
            Err(why) => {
                // Nothing was sent: a definite failure of this attempt, not of the job.
                engine
                    .fail_attempt(&attempt.id, why, None, AfterFailure::Requeue)
                    .await?;
                return Ok(());
            }
        };
        let Prepared {
            request,
            config,
            contract,
        } = request;
        if engine
            .mark_sent(&attempt.id, &self.inner.id, self.inner.options.lease)
            .await
            .is_err()
        {
            return Ok(()); // another executor sent it, or the job moved on
        }
        let renewer = self.renew_lease(&attempt.id);
        let attempt_id = attempt.id.clone();
        let exchange = http::exchange(request, &config, async |head: Head| {
            let recorded = engine
                .record_response_head(&attempt_id, head.request_id.as_deref(), Some(head.status))
                .await;
            if let Err(e) = recorded {
                eprintln!("onejob executor: attempt {attempt_id}: {e}");
            }
        });
        tokio::pin!(exchange);
        let soft = Duration::from_millis(config.soft_timeout_ms);
        let hard = Duration::from_millis(config.hard_timeout_ms);
        let classified = tokio::select! {
            c = &mut exchange => Some(c),
            () = tokio::time::sleep(soft) => None,
        };
        let classified = match classified {
            Some(c) => Some(c),
            None => {
                let why = AttemptError {
                    kind: "soft_timeout".to_owned(),
                    message: format!(
                        "no answer within {} ms; the request may have been processed",
                        config.soft_timeout_ms
                    ),
                };
                // A person may have moved it already (abandoned it, say); the answer is still awaited.
                if let Err(e) = engine.mark_unknown(&attempt.id, why).await {
                    eprintln!("onejob executor: attempt {}: {e}", attempt.id);
                }
                tokio::time::timeout(hard.saturating_sub(soft), &mut exchange)
                    .await
                    .ok()
            }
        };
        renewer.abort();
        match classified {
            Some(outcome) => {
                let outcome = self
                    .judge(&attempt, outcome, &config, contract.as_ref())
                    .await?;
                self.settle(&attempt, outcome).await
            }
            // The hard deadline passed: the connection is dropped and the attempt stays unknown.
            None => Ok(()),
        }
    }

    /// Builds the attempt's request, or says why it cannot be sent.
    async fn prepare(
        &self,
        attempt: &Attempt,
        job: &Job,
    ) -> std::result::Result<Prepared, AttemptError> {
        let provider = self
            .inner
            .engine
            .provider(&attempt.provider)
            .await
            .map_err(|e| misconfigured(format!("provider {}: {e}", attempt.provider)))?;
        let url = self
            .url_of(&provider)
            .await
            .map_err(|e| misconfigured(e.to_string()))?;
        let input = job.intent.get("input").cloned().unwrap_or(Value::Null);
        let params = match job.intent.get("params") {
            Some(Value::Object(params)) => params.clone(),
            _ => serde_json::Map::new(),
        };
        // The contract as it is now is the one the answer is held to.
        let contract = match job.intent.get("contract").and_then(Value::as_str) {
            Some(name) => Some(
                self.inner
                    .engine
                    .contract(name)
                    .await
                    .map_err(|e| misconfigured(format!("contract {name}: {e}")))?,
            ),
            None => None,
        };
        let request = build_request(
            &self.inner.client,
            &provider.config,
            &url,
            &job.id,
            &input,
            contract.as_ref(),
            &params,
        )?;
        Ok(Prepared {
            request,
            config: provider.config,
            contract,
        })
    }

    /// Reads an answer out of its kind's envelope and holds it to the job's contract, before
    /// it may reach the compare-and-swap: an invalid answer becomes a failure of the attempt
    /// (`invalid_answer`, `contract_violation`), never the job's result. Token usage is kept.
    async fn judge(
        &self,
        attempt: &Attempt,
        outcome: Classified,
        config: &ProviderConfig,
        contract: Option<&Contract>,
    ) -> Result<Classified> {
        let Classified::Answer(body) = outcome else {
            return Ok(outcome);
        };
        let decoded = match decode(config.kind, body) {
            Ok(decoded) => decoded,
            Err(error) => return Ok(answered_but(error)),
        };
        if decoded.usage.is_some() || decoded.id.is_some() {
            self.inner
                .engine
                .record_usage(&attempt.id, decoded.id.as_deref(), decoded.usage.as_ref())
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
        let dials = sandbox_dials(config)?;
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

    /// The base URL a status lookup goes to. An in-process sandbox is only asked by the process
    /// that runs it: another process's fresh sandbox never saw the key and would answer
    /// "not found" for work that was done.
    async fn lookup_base(&self, provider: &Provider) -> Result<String> {
        let config = &provider.config;
        if let Some(url) = &config.base_url {
            return Ok(url.clone());
        }
        match self.inner.sandboxes.lock().await.get(&config.name) {
            Some(sandbox) => Ok(sandbox.url()),
            None => Err(Error::invalid_input(
                "attempt",
                format!(
                    "provider {} runs inside the process that sent this attempt; only that process can look it up",
                    config.name
                ),
            )),
        }
    }

    fn renew_lease(&self, attempt_id: &str) -> tokio::task::JoinHandle<()> {
        let (engine, id) = (self.inner.engine.clone(), self.inner.id.clone());
        let (attempt_id, options) = (attempt_id.to_owned(), self.inner.options.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(options.renew_every).await;
                match engine.renew_lease(&attempt_id, &id, options.lease).await {
                    Ok(true) => {}
                    // It left `in_flight` (unknown, answered): nothing left to hold.
                    Ok(false) | Err(_) => break,
                }
            }
        })
    }

    /// Records what the exchange amounted to.
    async fn settle(&self, attempt: &Attempt, outcome: Classified) -> Result<()> {
        let engine = &self.inner.engine;
        match outcome {
            Classified::Answer(answer) => {
                engine.complete(&attempt.id, &answer, Cause::Answer).await?;
            }
            Classified::Failed {
                error,
                http_status,
                retry_after,
            } => {
                let after = if NOT_RETRYABLE_HERE.contains(&error.kind.as_str()) {
                    AfterFailure::Requeue
                } else {
                    AfterFailure::RequeueAfter(self.backoff(attempt.number, retry_after))
                };
                engine
                    .fail_attempt(&attempt.id, error, http_status, after)
                    .await?;
            }
            Classified::Unknown { error, .. } => {
                // After the soft timeout it is already unknown; that stays as it is.
                let current = engine.attempt_by_id(&attempt.id).await?;
                if current.state == crate::AttemptState::InFlight {
                    engine.mark_unknown(&attempt.id, error).await?;
                }
            }
        }
        Ok(())
    }

    /// Exponential backoff with jitter, never shorter than the provider's `Retry-After`.
    fn backoff(&self, number: u32, retry_after: Option<Duration>) -> Duration {
        let options = &self.inner.options;
        let doubled = options
            .backoff_base
            .saturating_mul(1u32 << number.saturating_sub(1).min(16));
        let capped = doubled.min(options.backoff_cap);
        let jittered = capped.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
        jittered.max(retry_after.unwrap_or_default())
    }

    async fn reconcile_due(&self) {
        let Ok(unknown) = self.inner.engine.unknown_attempts(100).await else {
            return;
        };
        for attempt in unknown {
            let due = {
                // First looked up one period after it is first seen unknown: right after a
                // timeout the provider is likely still at work.
                let mut last = self
                    .inner
                    .last_lookup
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let seen = *last.entry(attempt.id.clone()).or_insert_with(Instant::now);
                let due = seen.elapsed() >= self.inner.options.reconcile_every;
                if due {
                    last.insert(attempt.id.clone(), Instant::now());
                }
                due
            };
            if due {
                let has_status = self
                    .inner
                    .engine
                    .provider(&attempt.provider)
                    .await
                    .is_ok_and(|p| p.config.status_url.is_some());
                if has_status {
                    if let Err(e) = self.reconcile(&attempt).await {
                        eprintln!("onejob executor: reconcile {}: {e}", attempt.id);
                    }
                }
            }
        }
    }

    /// Resolves an `unknown` attempt by what its provider's status URL reports (SPEC §6):
    /// `{"state": "succeeded", "result": …}` completes it through the compare-and-swap;
    /// `{"state": "failed"}` or a 404 fails it; anything else leaves it `unknown`.
    pub async fn reconcile(&self, attempt: &Attempt) -> Result<Reconciled> {
        let engine = &self.inner.engine;
        if attempt.state != crate::AttemptState::Unknown {
            return Err(Error::invalid_transition(
                "attempt",
                &attempt.id,
                attempt.state.as_str(),
                "reconciled",
            ));
        }
        let provider = engine.provider(&attempt.provider).await?;
        let Some(template) = &provider.config.status_url else {
            return Err(Error::invalid_input(
                "attempt",
                format!(
                    "provider {} declares no status_url; a person must resolve this attempt",
                    provider.config.name
                ),
            ));
        };
        let base = self.lookup_base(&provider).await?;
        let url = template
            .replace("{base_url}", base.trim_end_matches('/'))
            .replace("{idempotency_key}", &attempt.job_id)
            .replace("{job_id}", &attempt.job_id)
            .replace("{request_id}", attempt.request_id.as_deref().unwrap_or(""));
        let lookup_failed = |e: String| Error::Provider {
            message: format!("status lookup at {url} failed: {e}"),
            details: crate::error::EmptyDetails {},
        };
        let response = self
            .inner
            .client
            .get(&url)
            .timeout(Duration::from_millis(provider.config.hard_timeout_ms))
            .send()
            .await
            .map_err(|e| lookup_failed(e.to_string()))?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let state = body.get("state").and_then(Value::as_str).unwrap_or("");
        if state == "succeeded" {
            let result = body.get("result").cloned().unwrap_or(Value::Null);
            // A looked-up answer is held to the job's contract like a live one.
            let job = engine.job_by_id(&attempt.job_id).await?;
            let contract = match job.intent.get("contract").and_then(Value::as_str) {
                Some(name) => Some(engine.contract(name).await?),
                None => None,
            };
            let judged = decode(provider.config.kind, result)
                .and_then(|decoded| judge(decoded.output, contract.as_ref()));
            let result = match judged {
                Ok(result) => result,
                Err(why) => {
                    let done = engine
                        .fail_attempt(&attempt.id, why, None, AfterFailure::Requeue)
                        .await?;
                    return Ok(Reconciled::Failed(Box::new(done)));
                }
            };
            let done = engine
                .complete(&attempt.id, &result, Cause::Reconciliation)
                .await?;
            return Ok(Reconciled::Completed(Box::new(done)));
        }
        if state == "failed" || state == "not_found" || status == reqwest::StatusCode::NOT_FOUND {
            let why = AttemptError {
                kind: "reconciled_failed".to_owned(),
                message: format!(
                    "the provider's status lookup says it did not happen ({status}, {state:?})"
                ),
            };
            let done = engine
                .fail_attempt(&attempt.id, why, None, AfterFailure::Requeue)
                .await?;
            return Ok(Reconciled::Failed(Box::new(done)));
        }
        Ok(Reconciled::StillUnknown)
    }
}

/// An attempt ready to send: its request, its provider, and the contract its answer must keep.
struct Prepared {
    request: reqwest::RequestBuilder,
    config: ProviderConfig,
    contract: Option<Contract>,
}

fn misconfigured(message: String) -> AttemptError {
    AttemptError {
        kind: "misconfigured".to_owned(),
        message,
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

/// The sandbox dials of a provider's configuration (`"dials": {…}`), defaults when absent.
pub fn sandbox_dials(config: &ProviderConfig) -> Result<Dials> {
    match &config.dials {
        None | Some(Value::Null) => Ok(Dials::default()),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|e| Error::invalid_input("provider.dials", e.to_string())),
    }
}
