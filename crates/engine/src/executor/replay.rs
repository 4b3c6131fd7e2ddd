//! Keyed replays (SPEC §16): an `unknown` attempt at a provider that honours `Idempotency-Key`
//! and says how long it keeps a key is sent again — the same body, the same key, under the same
//! attempt — once its hard deadline has passed since it was sent, with backoff, until an answer
//! settles it or the key's retention (less a margin) runs out, every time by the ledger's clock.
//! Replays run beside the executor's loop, a few at a time, like status lookups.
//!
//! What came back decides: a 2xx is an answer judged as a live one (through the
//! compare-and-swap); 409 (the key still in progress), 408, 429, 5xx, a timeout or a cut
//! connection leave the attempt `unknown` and it is replayed later; any other answer (a 4xx: a
//! provider that does not know its own key) leaves it `unknown` and flags it for review, and it
//! is not replayed again. Each replay is a `replayed` event, written with the change it causes.

use std::time::{Duration, Instant};

use crate::attempt::Cause;
use crate::error::{Error, Result};
use crate::failure::{FailureKind, RetryHere};
use crate::ledger::{Note, ReplayGate};
use crate::model::{AfterFailure, Attempt, AttemptError, Completion, JobAttempt};
use crate::providers::http::{self, Classified};
use rand::Rng;

use super::send::{Destination, NotSent, Prepared};
use super::{lock, Executor};

/// The wait before an attempt's second replay; it doubles after each one that leaves the
/// attempt `unknown`, with jitter, up to [`REPLAY_WAIT_CAP`]. The first is sent as soon as the
/// hard deadline has passed.
pub const REPLAY_FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait between two replays of one attempt (a provider's longer `Retry-After` is
/// held to it too).
pub const REPLAY_WAIT_CAP: Duration = Duration::from_secs(300);

/// How much longer than its request's hard deadline a replay holds its attempt: time to build
/// the request and to record what came back.
pub const REPLAY_HOLD_MARGIN: Duration = Duration::from_secs(10);

/// The most replayable attempts one pass reads.
const REPLAYS_READ: u32 = 1000;

/// What a replay came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Replayed {
    /// A 2xx answer went through the compare-and-swap (won, lost or dropped).
    Completed(Box<Completion>),
    /// A 2xx that cannot be the result (unreadable, not the kind's envelope, breaking the
    /// contract), judged as a live answer would be: the attempt failed.
    Failed(Box<JobAttempt>),
    /// 409, 408, 429, 5xx, a timeout, a cut connection, or nothing sent: still `unknown`, to be
    /// replayed after this wait.
    RetriesLater(Duration),
    /// Another answer (a 4xx): still `unknown`, flagged for review, not replayed again.
    Flagged,
    /// Not sent: the attempt's own request may still be answered for this long (its hard
    /// deadline has not passed since it was sent, by the ledger's clock), or another
    /// executor's replay of it is out (asked again after this wait).
    TooEarly(Duration),
}

/// How a replay's exchange is read.
enum ReplayReading {
    /// A valid answer: to the compare-and-swap.
    Answer(serde_json::Value),
    /// A 2xx that cannot be the result.
    Broken(AttemptError, Option<u16>),
    /// Still unknown; try again later (after the provider's `Retry-After`, if it gave one).
    Later(AttemptError, Option<u16>, Option<Duration>),
    /// Still unknown, and a person must look.
    Flag(AttemptError, Option<u16>),
}

impl Executor {
    /// Starts the replays that are due, each in its own task, at most `max_lookups` at once.
    pub(super) async fn start_replays(&self) {
        let Ok(due) = self.inner.engine.replayable_attempts(REPLAYS_READ).await else {
            return;
        };
        if due.len() < REPLAYS_READ as usize {
            // What is no longer replayable (settled, past its retention) is forgotten.
            let ids: std::collections::HashSet<&str> = due.iter().map(|a| a.id.as_str()).collect();
            lock(&self.inner.replay_at).retain(|id, _| ids.contains(id.as_str()));
        }
        for attempt in due {
            let now = Instant::now();
            let is_due = lock(&self.inner.replay_at)
                .get(&attempt.id)
                .is_none_or(|(at, _)| now >= *at);
            if !is_due || !lock(&self.inner.replaying).insert(attempt.id.clone()) {
                continue;
            }
            let Ok(permit) = self.inner.replays.clone().try_acquire_owned() else {
                lock(&self.inner.replaying).remove(&attempt.id);
                break;
            };
            let this = self.clone();
            lock(&self.inner.tasks).spawn(async move {
                match this.replay(&attempt).await {
                    Ok(Replayed::RetriesLater(_) | Replayed::TooEarly(_)) => {}
                    Ok(_) => {
                        lock(&this.inner.replay_at).remove(&attempt.id);
                    }
                    // Not replayable by this executor (another process's sandbox), or moved on
                    // meanwhile: asked again after the backoff, quietly.
                    Err(Error::InvalidInput { .. } | Error::InvalidTransition { .. }) => {
                        this.next_replay_wait(&attempt.id, None);
                    }
                    Err(e) => {
                        eprintln!("onejob executor: replay {}: {e}", attempt.id);
                        this.next_replay_wait(&attempt.id, None);
                    }
                }
                lock(&this.inner.replaying).remove(&attempt.id);
                drop(permit);
            });
        }
    }

    /// Sends an `unknown` attempt's request again under its key (SPEC §16) and records what
    /// came back as a `replayed` event, with the change it causes. Nothing is sent before the
    /// attempt's hard deadline has passed since it was sent ([`Replayed::TooEarly`]); an attempt
    /// at a provider that does not honour keys or states no `key_retention_s`, one past that
    /// retention less the margin, one flagged for review, or one at an in-process sandbox that
    /// another process runs is never sent again: `invalid_input` says why.
    pub(crate) async fn replay(&self, attempt: &Attempt) -> Result<Replayed> {
        let engine = &self.inner.engine;
        // As it is now: a person may have resolved or abandoned it since it was read.
        let (attempt, provider, left) = match engine.replay_gate(&attempt.id).await? {
            ReplayGate::Now {
                attempt,
                provider,
                left,
            } => (*attempt, *provider, left),
            ReplayGate::TooEarly(wait) => return Ok(Replayed::TooEarly(wait)),
        };
        let attempt = &attempt;
        // An in-process sandbox that another process runs is never asked: nothing to record.
        self.lookup_base(&provider).await?;
        // Held in the ledger while it is out, so no person says "it did not happen" meanwhile
        // and no other executor replays it at the same time.
        let hold = Duration::from_millis(provider.config.hard_timeout_ms) + REPLAY_HOLD_MARGIN;
        if !engine.hold_replay(&attempt.id, hold).await? {
            return Ok(Replayed::TooEarly(REPLAY_FIRST_WAIT));
        }
        let replayed = self.send_replay(attempt, left).await;
        // An answer that settled it let go already; a failure to let go lets the hold run out.
        if let Err(e) = engine.release_replay(&attempt.id).await {
            eprintln!(
                "onejob executor: replay {}: its hold stays until it runs out: {e}",
                attempt.id
            );
        }
        replayed
    }

    /// The replay itself, once the attempt is held: the request built again, sent under its
    /// key, and what came back recorded.
    async fn send_replay(&self, attempt: &Attempt, left: Duration) -> Result<Replayed> {
        let engine = &self.inner.engine;
        let job = engine.job_by_id(&attempt.job_id).await?;
        let client = self.client()?;
        let prepared = self
            .prepare(client, attempt, &job, Destination::Replay)
            .await;
        let Prepared {
            request, target, ..
        } = match prepared {
            Ok(prepared) => prepared,
            Err(NotSent::Storage(e)) => return Err(e),
            // Nothing was sent (a provider or contract changed, a key missing): later.
            Err(NotSent::Unsendable(why)) => {
                return self
                    .retry_later(attempt, ReplayReading::Later(why, None, None), left)
                    .await
            }
        };
        let hard = Duration::from_millis(target.config.hard_timeout_ms);
        let status = std::sync::OnceLock::new();
        let outcome = http::exchange(request.timeout(hard), &target.config, async |head| {
            let _ = status.set(head.status);
        })
        .await;
        let status = status.get().copied();
        let reading = match outcome {
            Classified::Answer(body) => {
                let judged = self
                    .judge(
                        attempt,
                        Classified::Answer(body),
                        &target.config,
                        target.contract.as_ref(),
                    )
                    .await?;
                match judged {
                    Classified::Answer(result) => ReplayReading::Answer(result),
                    Classified::Failed { error, .. } | Classified::Unknown { error, .. } => {
                        ReplayReading::Broken(error, status)
                    }
                }
            }
            Classified::Failed {
                error,
                http_status,
                retry_after,
            } => match http_status {
                Some(200..=299) => ReplayReading::Broken(error, http_status),
                Some(408 | 409 | 429 | 500..=599) | None => {
                    ReplayReading::Later(error, http_status, retry_after)
                }
                Some(_) => ReplayReading::Flag(error, http_status),
            },
            // The 2xx said the work was done, yet it cannot be read; the stored answer will
            // not read better the next time.
            Classified::Unknown { error, http_status }
                if matches!(
                    error.failure(),
                    FailureKind::AnswerTooLarge | FailureKind::InvalidAnswerUnknown
                ) =>
            {
                ReplayReading::Flag(error, http_status)
            }
            Classified::Unknown { error, http_status } => {
                ReplayReading::Later(error, http_status, None)
            }
        };
        match reading {
            ReplayReading::Answer(result) => {
                let note = Note::replayed("settled", None, status, left, None);
                let done = self
                    .persist("replay", || {
                        engine.complete_noted(
                            &attempt.id,
                            &result,
                            Cause::Answer,
                            "replay",
                            note.clone(),
                        )
                    })
                    .await?;
                Ok(Replayed::Completed(Box::new(done)))
            }
            ReplayReading::Broken(error, http_status) => {
                self.broken(attempt, error, http_status, target.max_attempts, left)
                    .await
            }
            reading @ ReplayReading::Later(..) => self.retry_later(attempt, reading, left).await,
            ReplayReading::Flag(error, http_status) => {
                self.flag(attempt, &error, http_status, left).await
            }
        }
    }

    /// A 2xx that cannot be the result, as a live answer: the attempt fails and the job goes
    /// on by its route — unless it is the job's last attempt at a provider that would be asked
    /// again under the key, where nobody will send it again: then a person decides.
    async fn broken(
        &self,
        attempt: &Attempt,
        error: AttemptError,
        http_status: Option<u16>,
        max_attempts: u32,
        left: Duration,
    ) -> Result<Replayed> {
        let engine = &self.inner.engine;
        let kind = error.failure();
        if kind.on_last_try() != kind && attempt.number >= max_attempts {
            return self.flag(attempt, &error, http_status, left).await;
        }
        let after = match kind.retry_here() {
            RetryHere::Yes => AfterFailure::RequeueAfter {
                wait: self.backoff(attempt.number, None),
                retry_after: None,
            },
            RetryHere::NotHere | RetryHere::Blocked => AfterFailure::Requeue,
        };
        let note = Note::replayed("settled", Some(&error), http_status, left, None);
        let failed = self
            .persist("replay", || {
                engine.fail_attempt_noted(
                    &attempt.id,
                    error.clone(),
                    http_status,
                    after.clone(),
                    Some(note.clone()),
                )
            })
            .await;
        match failed {
            Ok(done) => Ok(Replayed::Failed(Box::new(done))),
            // A person decided meanwhile: their verdict stands, and the replay is recorded.
            Err(e @ Error::InvalidTransition { .. }) => {
                self.persist("replay", || engine.note(&attempt.id, note.clone()))
                    .await?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Still `unknown`: the replay is recorded alone, with when the next one is due.
    async fn retry_later(
        &self,
        attempt: &Attempt,
        reading: ReplayReading,
        left: Duration,
    ) -> Result<Replayed> {
        let ReplayReading::Later(error, http_status, retry_after) = reading else {
            return Err(Error::internal(
                "a replay to retry later without its reason",
            ));
        };
        let wait = self.next_replay_wait(&attempt.id, retry_after);
        let note = Note::replayed("retries_later", Some(&error), http_status, left, Some(wait));
        let engine = &self.inner.engine;
        self.persist("replay", || engine.note(&attempt.id, note.clone()))
            .await?;
        Ok(Replayed::RetriesLater(wait))
    }

    /// Still `unknown`, and flagged for review with the replay's event; not replayed again.
    async fn flag(
        &self,
        attempt: &Attempt,
        error: &AttemptError,
        http_status: Option<u16>,
        left: Duration,
    ) -> Result<Replayed> {
        let note = Note::replayed("flagged", Some(error), http_status, left, None);
        let engine = &self.inner.engine;
        self.persist("replay", || engine.flag_unknown(&attempt.id, note.clone()))
            .await?;
        Ok(Replayed::Flagged)
    }

    /// Sets when an attempt is next replayed and returns the wait: from
    /// [`REPLAY_FIRST_WAIT`], doubling after each replay, with jitter (half to all of it), up to
    /// [`REPLAY_WAIT_CAP`]; never shorter than the provider's `Retry-After`, held to the cap.
    /// Kept in memory: after a restart an attempt is replayed at once, and its backoff starts
    /// again.
    fn next_replay_wait(&self, attempt_id: &str, retry_after: Option<Duration>) -> Duration {
        let mut at = lock(&self.inner.replay_at);
        let backoff = match at.get(attempt_id) {
            Some((_, last)) => (*last * 2).min(REPLAY_WAIT_CAP),
            None => REPLAY_FIRST_WAIT,
        };
        let jittered = backoff.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
        let wait = jittered.max(retry_after.unwrap_or_default().min(REPLAY_WAIT_CAP));
        at.insert(attempt_id.to_owned(), (Instant::now() + wait, backoff));
        wait
    }
}
