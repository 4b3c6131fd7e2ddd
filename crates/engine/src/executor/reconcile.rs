//! Status lookups of `unknown` attempts (SPEC §6), run beside the executor's loop, a few at a
//! time, so a slow provider never holds up claiming or lease recovery. A lookup decides only
//! on an explicit answer; anything else leaves the attempt `unknown`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::attempt::{AttemptState, Cause};
use crate::error::{EmptyDetails, Error, Result};
use crate::events::EventKind;
use crate::failure::FailureKind;
use crate::ledger::Note;
use crate::model::{AfterFailure, Attempt, AttemptError, Completion, JobAttempt};
use crate::providers::{decode, judge, Provider};

use super::{lock, Executor};

/// The longest wait between two lookups of one attempt: from `reconcile_every`, each waits
/// twice as long as the last, up to this.
pub const LOOKUP_EVERY_CAP: Duration = Duration::from_secs(300);

/// The largest status body read; a larger one says nothing.
const MAX_STATUS_BODY: usize = 8 * 1024 * 1024;

/// What a status lookup said about an `unknown` attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciled {
    /// The provider did the work: its result went through the compare-and-swap.
    Completed(Box<Completion>),
    /// The provider says it failed, or never saw it: the attempt is `failed` and the job may
    /// continue.
    Failed(Box<JobAttempt>),
    /// No explicit answer (still at work, a bare 404, an error): the attempt stays `unknown`.
    StillUnknown,
    /// Not asked: the attempt's request may still be answered for this long (its hard deadline
    /// has not passed since it was sent), and a provider still at work could say it never saw
    /// it. The attempt stays `unknown`.
    TooEarly(Duration),
}

/// What the provider's status answer states, read strictly.
enum Stated {
    Succeeded(Value),
    Failed,
    NotFound,
    Nothing,
}

/// A status lookup's answer as its `looked_up` event records it.
struct Looked {
    stated: Stated,
    /// The HTTP status, when one came back.
    http_status: Option<u16>,
    /// The body's `state`, when it had one.
    state: Option<String>,
    /// In words, without the URL's query.
    described: String,
}

impl Looked {
    /// The `looked_up` event: what the provider answered, and whether the attempt `settled`
    /// by it or is `still_unknown`.
    fn note(&self, outcome: &str) -> Note {
        Note {
            kind: EventKind::LookedUp,
            detail: json!({
                "http_status": self.http_status,
                "state": self.state,
                "answer": self.described,
                "outcome": outcome,
            }),
        }
    }
}

impl Executor {
    /// Starts the lookups that are due, each in its own task, at most `max_lookups` at once.
    /// Only attempts whose hard deadline has passed since they were sent are read; each is
    /// first looked up one period after it is first seen so.
    pub(super) async fn start_lookups(&self) {
        let Ok(unknown) = self.inner.engine.unknown_attempts(100).await else {
            return;
        };
        let every = self.inner.options.reconcile_every;
        let cap = every.max(LOOKUP_EVERY_CAP);
        for attempt in unknown {
            let due = {
                let mut last = lock(&self.inner.last_lookup);
                let (seen, wait) = *last
                    .entry(attempt.id.clone())
                    .or_insert_with(|| (Instant::now(), every));
                let due = seen.elapsed() >= wait;
                if due {
                    // Each lookup of one attempt waits twice as long as the last, up to the cap:
                    // a long outage is not asked about, nor recorded, every few seconds.
                    last.insert(attempt.id.clone(), (Instant::now(), (wait * 2).min(cap)));
                }
                due
            };
            if !due || !lock(&self.inner.looking).insert(attempt.id.clone()) {
                continue;
            }
            let Ok(permit) = self.inner.lookups.clone().try_acquire_owned() else {
                lock(&self.inner.looking).remove(&attempt.id);
                break;
            };
            let this = self.clone();
            lock(&self.inner.tasks).spawn(async move {
                let has_status = this
                    .inner
                    .engine
                    .provider(&attempt.provider)
                    .await
                    .is_ok_and(|p| p.config.status_url.is_some());
                if has_status {
                    if let Err(e) = this.reconcile(&attempt).await {
                        eprintln!("onejob executor: reconcile {}: {e}", attempt.id);
                    }
                }
                lock(&this.inner.looking).remove(&attempt.id);
                drop(permit);
            });
        }
    }

    /// Resolves an `unknown` attempt by what its provider's status URL reports (SPEC §6): a
    /// 2xx `{"state": "succeeded", "result": …}` completes it through the compare-and-swap;
    /// a 2xx `{"state": "failed"}`, or `{"state": "not_found"}` with a 2xx or a 404, fails it;
    /// anything else leaves it `unknown`. Nothing is asked before the attempt's hard deadline
    /// has passed since it was sent, by the ledger's clock ([`Reconciled::TooEarly`]). A template whose variables cannot all be filled
    /// (no request id came back) is not looked up: `invalid_input` says why.
    pub async fn reconcile(&self, attempt: &Attempt) -> Result<Reconciled> {
        let engine = &self.inner.engine;
        if attempt.state != AttemptState::Unknown {
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
        let url = fill(template, &base, attempt)?;
        let wait = engine.lookup_wait(&attempt.id).await?;
        if !wait.is_zero() {
            return Ok(Reconciled::TooEarly(wait));
        }
        let looked = self.look_up(&url, &provider).await;
        let settled = looked.note("settled");
        match looked.stated {
            Stated::Succeeded(result) => {
                // A looked-up answer is held to the job's contract like a live one.
                let job = engine.job_by_id(&attempt.job_id).await?;
                let contract = match job.intent.get("contract").and_then(Value::as_str) {
                    Some(name) => Some(engine.contract(name).await?),
                    None => None,
                };
                let judged = decode(provider.config.kind, contract.as_ref(), result)
                    .and_then(|decoded| judge(decoded.output, contract.as_ref()));
                let result = match judged {
                    Ok(result) => result,
                    Err(why) => return self.fail_looked_up(attempt, why, settled).await,
                };
                let done = self
                    .persist("lookup", || {
                        engine.complete_noted(
                            &attempt.id,
                            &result,
                            Cause::Reconciliation,
                            "reconciliation",
                            settled.clone(),
                        )
                    })
                    .await?;
                Ok(Reconciled::Completed(Box::new(done)))
            }
            Stated::Failed | Stated::NotFound => {
                let why = FailureKind::ReconciledFailed.because(format!(
                    "the provider's status lookup says it did not happen ({})",
                    looked.described
                ));
                self.fail_looked_up(attempt, why, settled).await
            }
            Stated::Nothing => {
                let note = looked.note("still_unknown");
                self.persist("lookup", || engine.note(&attempt.id, note.clone()))
                    .await?;
                Ok(Reconciled::StillUnknown)
            }
        }
    }

    /// Fails an attempt by what its lookup said, with the lookup's event. One that moved
    /// meanwhile (a person's verdict) keeps it, and the event is recorded alone.
    async fn fail_looked_up(
        &self,
        attempt: &Attempt,
        why: AttemptError,
        note: Note,
    ) -> Result<Reconciled> {
        let engine = &self.inner.engine;
        let failed = self
            .persist("lookup", || {
                engine.fail_attempt_noted(
                    &attempt.id,
                    why.clone(),
                    None,
                    AfterFailure::Requeue,
                    Some(note.clone()),
                )
            })
            .await;
        match failed {
            Ok(done) => Ok(Reconciled::Failed(Box::new(done))),
            Err(e @ Error::InvalidTransition { .. }) => {
                self.persist("lookup", || engine.note(&attempt.id, note.clone()))
                    .await?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Asks the status URL; what it states, and a description without the URL's query.
    async fn look_up(&self, url: &str, provider: &Provider) -> Looked {
        let timeout = Duration::from_millis(provider.config.hard_timeout_ms);
        let nothing = |http_status: Option<u16>, described: String| Looked {
            stated: Stated::Nothing,
            http_status,
            state: None,
            described,
        };
        let client = match self.client() {
            Ok(client) => client,
            Err(e) => return nothing(None, e.to_string()),
        };
        let response = match client.get(url).timeout(timeout).send().await {
            Ok(response) => response,
            Err(e) => return nothing(None, format!("no answer: {}", e.without_url())),
        };
        let status = response.status();
        let body = match read_limited(response).await {
            Some(body) => body,
            None => {
                return nothing(
                    Some(status.as_u16()),
                    format!("{status}, an unreadable body"),
                )
            }
        };
        let state = body.get("state").and_then(Value::as_str);
        let described = format!("{status}, state {}", state.unwrap_or("absent"));
        let stated = match (
            status.is_success(),
            status == reqwest::StatusCode::NOT_FOUND,
            state,
        ) {
            (true, _, Some("succeeded")) => match body.get("result") {
                Some(result) => Stated::Succeeded(result.clone()),
                None => Stated::Nothing,
            },
            (true, _, Some("failed")) => Stated::Failed,
            (true, _, Some("not_found")) | (_, true, Some("not_found")) => Stated::NotFound,
            _ => Stated::Nothing,
        };
        Looked {
            stated,
            http_status: Some(status.as_u16()),
            state: state.map(str::to_owned),
            described,
        }
    }

    /// The base URL a status lookup or a replay goes to. An in-process sandbox is only asked by
    /// the process that runs it: another process's fresh sandbox never saw the key, and would
    /// answer "not found" for work that was done, or do a replay's work again.
    pub(super) async fn lookup_base(&self, provider: &Provider) -> Result<String> {
        let config = &provider.config;
        if let Some(url) = &config.base_url {
            return Ok(url.clone());
        }
        match self.inner.sandboxes.lock().await.get(&config.name) {
            Some(sandbox) => Ok(sandbox.url()),
            None => Err(Error::invalid_input(
                "attempt",
                format!(
                    "provider {} runs inside the process that sent this attempt; only that process can ask it about it",
                    config.name
                ),
            )),
        }
    }
}

/// Fills the status URL template; a variable without a value (no request id came back)
/// means there is nothing to ask about.
fn fill(template: &str, base: &str, attempt: &Attempt) -> Result<String> {
    let request_id = attempt.request_id.as_deref().filter(|id| !id.is_empty());
    if template.contains("{request_id}") && request_id.is_none() {
        return Err(Error::invalid_input(
            "attempt",
            format!(
                "attempt {} has no provider request id (no response headers came back), so its status_url cannot name it; a person must resolve it",
                attempt.id
            ),
        ));
    }
    let url = template
        .replace("{base_url}", base.trim_end_matches('/'))
        .replace("{idempotency_key}", &attempt.job_id)
        .replace("{job_id}", &attempt.job_id)
        .replace("{request_id}", request_id.unwrap_or(""));
    if url.contains('{') || url.contains('}') {
        return Err(Error::Provider {
            message: "the provider's status_url has a variable onejob cannot fill".to_owned(),
            details: EmptyDetails {},
        });
    }
    Ok(url)
}

/// Reads a JSON body of at most `MAX_STATUS_BODY` bytes.
async fn read_limited(mut response: reqwest::Response) -> Option<Value> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_STATUS_BODY {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).ok()
}
