//! A person's decisions: resolve an attempt, cancel a job, retry a job (SPEC §3–§5, §12).

use serde_json::{json, Map, Value};

use crate::attempt::{AttemptState, Cause};
use crate::error::{BlockedDetails, ConflictDetails};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::failure::FailureKind;
use crate::input;
use crate::intent::{canonical_sha256, validate_key};
use crate::job::JobStatus;
use crate::model::{Actor, Job, JobAttempt, JobError, Resolution, Retried, Verdict};
use crate::store::attempts::{self as attempt_rows, Patch};
use crate::store::jobs::{self as job_rows, JobPatch};
use crate::store::retry_keys as retry_rows;
use crate::store::Tx;
use crate::Engine;

use super::answers::{settle, Via};
use super::attempts::{start_attempt, start_attempt_in_bulk, Starter};
use super::transition::{move_attempt, move_job, release_job, AttemptMove, JobMove};
use super::{finish, job_attempt, job_row, owned_attempt_row, owned_job_row, reread};

/// The longest note a person may attach.
const MAX_NOTE: usize = 4000;
/// The largest result a person may give, in bytes of compact JSON: an intent's limit (SPEC §2).
const MAX_RESULT_BYTES: usize = crate::intent::MAX_INTENT_BYTES;

impl Engine {
    /// A person's verdict on an attempt. `succeeded` goes through the same compare-and-swap as
    /// a provider's answer; `failed` and `abandoned` free the job for a new attempt, which
    /// `retry_on` creates at once in the same transaction.
    pub async fn resolve(
        &self,
        owner: &str,
        attempt_id: &str,
        verdict: Verdict,
        resolution: Resolution,
    ) -> Result<JobAttempt> {
        let attempt_id = &input::id("attempt_id", "attempt", attempt_id)?;
        check_resolution(verdict, &resolution)?;
        let mut tx = self.begin().await?;
        let outcome = async {
            job_rows::lock(&mut tx, &[], &[attempt_id.to_owned()]).await?;
            let row = owned_attempt_row(&mut tx, owner, attempt_id).await?;
            let resolved = resolve_in(&mut tx, &row, verdict, &resolution, None).await?;
            let (job, attempt) = reread(&mut tx, &row.job_id, attempt_id).await?;
            Ok((resolved, job, attempt))
        }
        .await;
        let (resolved, job, attempt) = finish(tx, outcome).await?;
        let (refusal, next_attempt) = (resolved.refusal, resolved.next_attempt);
        if let Some(e) = refusal {
            return Err(e);
        }
        self.wake_executor();
        Ok(JobAttempt {
            job,
            attempt,
            next_attempt,
        })
    }

    /// Cancels a job: terminal, bumps the version so any later answer is dropped and flagged
    /// for review. Its open attempt is closed as `abandoned`: one that was never sent never
    /// will be; the answer of one that may be out is still seen, dropped and flagged.
    pub async fn cancel(&self, owner: &str, job_id: &str) -> Result<Job> {
        let job_id = &input::id("job_id", "job", job_id)?;
        let mut tx = self.begin().await?;
        let outcome = async {
            job_rows::lock(&mut tx, &[job_id.to_owned()], &[]).await?;
            cancel_in(&mut tx, owner, job_id, None).await?;
            job_row(&mut tx, job_id).await?.into_job()
        }
        .await;
        finish(tx, outcome).await
    }

    /// A person's retry: starts the next attempt now, at `provider` or else where the last
    /// one ran (the route's primary if none has). A `failed` job is reopened first, which
    /// bumps its version. Refused with `attempt_blocked` while an attempt is open, and with
    /// `invalid_transition` on a `succeeded` or `cancelled` job.
    pub async fn retry(
        &self,
        owner: &str,
        job_id: &str,
        provider: Option<&str>,
    ) -> Result<JobAttempt> {
        let job_id = &input::id("job_id", "job", job_id)?;
        input::refuse_nul_in("provider", provider)?;
        let mut tx = self.begin().await?;
        let outcome = async {
            job_rows::lock(&mut tx, &[job_id.to_owned()], &[]).await?;
            let attempt_id = retry_in(&mut tx, owner, job_id, provider, None).await?;
            job_attempt(&mut tx, job_id, &attempt_id).await
        }
        .await;
        let done = finish(tx, outcome).await?;
        self.wake_executor();
        Ok(done)
    }

    /// [`Engine::retry`] under the owner's idempotency `key` (SPEC §15): a retry starts a paid
    /// attempt, so the same key again answers the attempt the first one started, as it stands
    /// now, with `replayed` true, and starts nothing, even after that attempt has ended. The
    /// same key with another job or provider is `idempotency_conflict` naming the job it
    /// retried. A retry that is refused records nothing: its key stays free.
    pub async fn retry_keyed(
        &self,
        owner: &str,
        key: &str,
        job_id: &str,
        provider: Option<&str>,
    ) -> Result<Retried> {
        validate_key(key)?;
        let job_id = &input::id("job_id", "job", job_id)?;
        input::refuse_nul_in("provider", provider)?;
        // A key taken by a retry that committed while this one ran is read on the second turn.
        for _ in 0..2 {
            let mut tx = self.begin().await?;
            // `None` when the key was taken meanwhile: what this turn wrote is rolled back.
            let outcome = async {
                job_rows::lock(&mut tx, &[job_id.to_owned()], &[]).await?;
                // The job as the ledger names it, so every form of its id asks the same.
                let job_id = owned_job_row(&mut tx, owner, job_id).await?.into_job()?.id;
                let mut asked = Map::new();
                asked.insert("job".into(), Value::String(job_id.clone()));
                if let Some(provider) = provider {
                    asked.insert("provider".into(), Value::String(provider.to_owned()));
                }
                let fingerprint = canonical_sha256(&Value::Object(asked));
                if let Some(first) = retry_rows::get(&mut tx, owner, key).await? {
                    if first.fingerprint != fingerprint {
                        return Err(retry_conflict(key, &first.job_id));
                    }
                    let done = job_attempt(&mut tx, &first.job_id, &first.attempt_id).await?;
                    return Ok(Some(Retried {
                        done,
                        replayed: true,
                    }));
                }
                let attempt_id = retry_in(&mut tx, owner, &job_id, provider, None).await?;
                if !retry_rows::insert(&mut tx, owner, key, &fingerprint, &job_id, &attempt_id)
                    .await?
                {
                    return Ok(None);
                }
                let done = job_attempt(&mut tx, &job_id, &attempt_id).await?;
                Ok(Some(Retried {
                    done,
                    replayed: false,
                }))
            }
            .await;
            let retried = match outcome {
                Ok(None) => {
                    tx.rollback().await?;
                    continue;
                }
                Ok(Some(retried)) => finish(tx, Ok(retried)).await?,
                Err(e) => return finish(tx, Err(e)).await,
            };
            if !retried.replayed {
                self.wake_executor();
            }
            return Ok(retried);
        }
        Err(Error::internal(format!(
            "the retry key {key:?} was taken and then not found"
        )))
    }
}

/// `idempotency_conflict`: the retry key already started an attempt of `job_id`, or of the same
/// job at another provider.
fn retry_conflict(key: &str, job_id: &str) -> Error {
    Error::IdempotencyConflict {
        message: format!(
            "the retry key {key:?} already retried job {job_id} with another job or provider; \
             use a new key for a new retry"
        ),
        details: ConflictDetails {
            existing_job_id: job_id.to_owned(),
        },
    }
}

/// A person's retry, on a transaction holding the job's lock: the id of the attempt it started.
/// Its events name the bulk operation that applied it, when `bulk` is given.
pub(super) async fn retry_in(
    tx: &mut Tx,
    owner: &str,
    job_id: &str,
    provider: Option<&str>,
    bulk: Option<&str>,
) -> Result<String> {
    let mut job = owned_job_row(tx, owner, job_id).await?.into_job()?;
    if job.status.is_terminal() {
        return Err(Error::invalid_transition(
            "job",
            job_id,
            job.status.as_str(),
            "running",
        ));
    }
    let provider = match provider {
        Some(p) => p.to_owned(),
        None => default_provider(tx, &job).await?,
    };
    if job.status == JobStatus::Failed {
        let m = JobMove {
            to: JobStatus::Queued,
            patch: JobPatch {
                set_error: true,
                bump_version: true,
                clear_not_before: true,
                ..Default::default()
            },
            event: Some((
                EventKind::JobRetried,
                Actor::User,
                with_bulk(json!({ "provider": provider }), bulk),
            )),
        };
        move_job(tx, job_id, JobStatus::Failed, m).await?;
        job = job_row(tx, job_id).await?.into_job()?;
    }
    let starter = Starter {
        actor: Actor::User,
        explicit: true,
        field: "provider",
    };
    let row = start_attempt_in_bulk(tx, &job, &provider, starter, bulk).await?;
    Ok(row.attempt.id)
}

/// What a person's resolve did: the attempt it created with `retry_on`, and the refusal of a
/// "it went through" that lost the compare-and-swap (its writes stand: the attempt is `lost`).
pub(super) struct Resolved {
    pub next_attempt: Option<crate::model::Attempt>,
    pub refusal: Option<Error>,
}

/// A person's verdict on the attempt `row`, on a transaction holding its job's lock; its
/// events name the bulk operation that applied it, when `bulk` is given.
pub(super) async fn resolve_in(
    tx: &mut Tx,
    row: &attempt_rows::AttemptRow,
    verdict: Verdict,
    resolution: &Resolution,
    bulk: Option<&str>,
) -> Result<Resolved> {
    let attempt_id = &row.id;
    let from = row.state()?;
    let mut detail = Map::from_iter([("as".into(), json!(verdict)), ("from".into(), json!(from))]);
    if let Some(note) = &resolution.note {
        detail.insert("note".into(), json!(note));
    }
    if let Some(bulk) = bulk {
        detail.insert("bulk".into(), json!(bulk));
    }
    let mut refusal = None;
    match verdict {
        Verdict::Succeeded => {
            // "It did not happen" followed by "it went through" is a change of mind, not
            // a late answer: refuse it plainly.
            from.check(AttemptState::Succeeded, Cause::Person, attempt_id)?;
            let via = Via {
                cause: Cause::Person,
                actor: Actor::User,
                win_kind: EventKind::ResolvedByPerson,
                detail,
            };
            let answer = resolution.result.clone().unwrap_or(Value::Null);
            if let Err(e) = settle(tx, row, &answer, via).await? {
                refusal = Some(e);
            }
        }
        Verdict::Failed | Verdict::Abandoned => {
            // A replay out under the attempt's key may still do the work: "it did not happen"
            // now could have it done twice, here and wherever the person sends it next.
            if from == AttemptState::Unknown {
                if let Some(until) = attempt_rows::replay_held(tx, attempt_id).await? {
                    return Err(Error::AttemptBlocked {
                        message: format!(
                            "a replay of attempt {attempt_id} under its key is out until {until}; its answer may settle it: decide after that"
                        ),
                        details: BlockedDetails {
                            job_id: row.job_id.clone(),
                            attempt_id: attempt_id.clone(),
                            state: from.as_str().to_owned(),
                        },
                    });
                }
            }
            let to = if verdict == Verdict::Failed {
                AttemptState::Failed
            } else {
                AttemptState::Abandoned
            };
            let why = FailureKind::ResolvedByPerson.because(
                resolution.note.clone().unwrap_or_else(|| match verdict {
                    Verdict::Failed => "a person said it did not happen".to_owned(),
                    _ => "a person stopped waiting for it".to_owned(),
                }),
            );
            let m = AttemptMove {
                to,
                cause: Cause::Person,
                patch: Patch {
                    error: (verdict == Verdict::Failed).then_some(&why),
                    finished: true,
                    ..Default::default()
                },
                event: EventKind::ResolvedByPerson,
                actor: Actor::User,
                detail: Value::Object(detail),
            };
            move_attempt(tx, row, m).await?;
            release_job(tx, &row.job_id).await?;
        }
    }
    let next_attempt = match &resolution.retry_on {
        Some(provider) => {
            let job = job_row(tx, &row.job_id).await?.into_job()?;
            let starter = Starter {
                actor: Actor::User,
                explicit: true,
                field: "retry_on",
            };
            let next = start_attempt(tx, &job, provider, starter).await?;
            Some(next.attempt.into_attempt()?)
        }
        None => None,
    };
    Ok(Resolved {
        next_attempt,
        refusal,
    })
}

/// A person's cancel, on a transaction holding the job's lock; its event names the bulk
/// operation that applied it, when `bulk` is given.
pub(super) async fn cancel_in(
    tx: &mut Tx,
    owner: &str,
    job_id: &str,
    bulk: Option<&str>,
) -> Result<()> {
    let job = owned_job_row(tx, owner, job_id).await?.into_job()?;
    if job.status.is_terminal() {
        return Err(Error::invalid_transition(
            "job",
            job_id,
            job.status.as_str(),
            "cancelled",
        ));
    }
    // The open attempt is closed as abandoned by the move itself; the answer of one that
    // may be out is still seen, dropped and flagged for review.
    let error = JobError {
        code: "cancelled".to_owned(),
        message: "cancelled by a person".to_owned(),
    };
    let m = JobMove {
        to: JobStatus::Cancelled,
        patch: JobPatch {
            error: Some(&error),
            set_error: true,
            bump_version: true,
            finished: true,
            clear_not_before: true,
        },
        event: Some((
            EventKind::JobCancelled,
            Actor::User,
            with_bulk(json!({ "from": job.status }), bulk),
        )),
    };
    move_job(tx, job_id, job.status, m).await.map(|_| ())
}

/// An event's detail with `"bulk": id` added when a bulk operation applied the action.
fn with_bulk(mut detail: Value, bulk: Option<&str>) -> Value {
    if let (Some(bulk), Value::Object(map)) = (bulk, &mut detail) {
        map.insert("bulk".into(), json!(bulk));
    }
    detail
}

async fn default_provider(conn: &mut impl crate::store::Handle, job: &Job) -> Result<String> {
    if let Some(last) = attempt_rows::last_for_job(conn, &job.id).await? {
        return Ok(last.provider);
    }
    job.intent
        .get("route")
        .and_then(|r| r.get(0))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::internal(format!("job {} has no route", job.id)))
}

fn check_resolution(verdict: Verdict, resolution: &Resolution) -> Result<()> {
    if resolution.result.is_some() && verdict != Verdict::Succeeded {
        return Err(Error::invalid_input(
            "result",
            "a result is given only with --as succeeded",
        ));
    }
    if resolution.retry_on.is_some() && verdict == Verdict::Succeeded {
        return Err(Error::invalid_input(
            "retry_on",
            "a succeeded attempt needs no new one; use it with failed or abandoned",
        ));
    }
    input::refuse_nul_in("note", resolution.note.as_deref())?;
    input::refuse_nul_in("retry_on", resolution.retry_on.as_deref())?;
    if let Some(result) = &resolution.result {
        input::refuse_nul_in_json("result", result)?;
    }
    if let Some(note) = &resolution.note {
        if note.chars().count() > MAX_NOTE {
            return Err(Error::invalid_input(
                "note",
                format!("is longer than {MAX_NOTE} characters"),
            ));
        }
    }
    if let Some(result) = &resolution.result {
        let text = result.to_string();
        if text.len() > MAX_RESULT_BYTES {
            return Err(Error::invalid_input(
                "result",
                format!(
                    "is {} bytes serialized; the limit is {MAX_RESULT_BYTES} bytes (1 MiB)",
                    text.len()
                ),
            ));
        }
        crate::intent::check_depth(&text, "result")?;
    }
    Ok(())
}
