//! An attempt that ends without an answer: failed (before sending, or after with the job
//! queued again or failed), `unknown` (no trustworthy answer), abandoned, or `unknown` once
//! its lease expired (SPEC §9).

use serde_json::json;

use crate::attempt::{AttemptState, Cause};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::failure::FailureKind;
use crate::job::JobStatus;
use crate::ledger::group::{GroupWrite, Lock, Step};
use crate::ledger::transition::{block_job, fail_job, move_attempt, release_job, AttemptMove};
use crate::ledger::{attempt_row, finish, job_attempt, job_row, Note};
use crate::model::{Actor, AfterFailure, Attempt, AttemptError, JobAttempt};
use crate::store::attempts::{self as attempt_rows, Patch};
use crate::store::jobs as job_rows;
use crate::store::{Handle, Tx};
use crate::Engine;

use super::MAX_RETRY_AFTER;

/// The attempt's row while it is `pending`; otherwise `invalid_transition` to `to`: another
/// executor sent it meanwhile, and what was not sent is not decided for it.
pub(super) async fn pending_row(
    tx: &mut Tx,
    attempt_id: &str,
    to: &str,
) -> Result<attempt_rows::AttemptRow> {
    let row = attempt_row(tx, attempt_id).await?;
    let state = row.state()?;
    if state != AttemptState::Pending {
        return Err(Error::invalid_transition(
            "attempt",
            attempt_id,
            state.as_str(),
            to,
        ));
    }
    Ok(row)
}

/// Fails an attempt and moves its job on as `after` says, in the caller's transaction.
pub(super) async fn fail_in(
    conn: &mut impl Handle,
    row: &attempt_rows::AttemptRow,
    why: &AttemptError,
    http_status: Option<u16>,
    after: &AfterFailure,
) -> Result<()> {
    let m = AttemptMove {
        to: AttemptState::Failed,
        cause: Cause::Executor,
        patch: Patch {
            error: Some(why),
            http_status,
            finished: true,
            ..Default::default()
        },
        event: EventKind::AttemptFailed,
        actor: Actor::Executor,
        detail: json!({ "kind": why.kind, "message": why.message, "http_status": http_status }),
    };
    move_attempt(conn, row, m).await?;
    match after {
        AfterFailure::Requeue => release_job(conn, &row.job_id).await,
        AfterFailure::RequeueAfter { wait, retry_after } => {
            release_job(conn, &row.job_id).await?;
            let job = job_row(conn, &row.job_id).await?.into_job()?;
            if job.status != JobStatus::Queued {
                return Ok(());
            }
            let wait = (*wait).min(MAX_RETRY_AFTER);
            // The database's clock sets the end, so hosts with skewed clocks agree on it.
            job_rows::set_backoff(conn, &row.job_id, Some(wait)).await?;
            let until = job_row(conn, &row.job_id).await?.into_job()?.not_before;
            crate::ledger::event(
                conn,
                &row.job_id,
                Some(&row.id),
                EventKind::BackoffSet,
                Actor::Executor,
                json!({
                    "not_before": until,
                    "wait_ms": wait.as_millis() as u64,
                    "retry_after_s": retry_after.map(|d| d.as_secs()),
                    "capped": retry_after.is_some_and(|d| d > MAX_RETRY_AFTER),
                }),
            )
            .await
        }
        AfterFailure::FailJob(error) => {
            let status = job_row(conn, &row.job_id).await?.into_job()?.status;
            if status.is_closed() {
                return Ok(());
            }
            fail_job(conn, &row.job_id, error, Actor::Executor).await
        }
    }
}

impl Engine {
    /// For the executor: no trustworthy answer (`in_flight → unknown`); the job waits for a
    /// person or a reconciliation.
    pub(crate) async fn mark_unknown(
        &self,
        attempt_id: &str,
        why: AttemptError,
    ) -> Result<Attempt> {
        let attempt_id = attempt_id.to_owned();
        self.group(MarkUnknown { attempt_id, why }).await
    }

    /// For the executor: a failure found before sending (a missing key, a provider removed
    /// since). It only ever moves `pending → failed`: an attempt another process already
    /// marked `in_flight` is left alone (`invalid_transition`), since its request may be out.
    pub(crate) async fn fail_unsent(
        &self,
        attempt_id: &str,
        why: AttemptError,
    ) -> Result<JobAttempt> {
        let done = self
            .group(FailAttempt {
                attempt_id: attempt_id.to_owned(),
                why,
                http_status: None,
                after: AfterFailure::Requeue,
                note: None,
                unsent_only: true,
            })
            .await?;
        self.wake_executor();
        Ok(done)
    }

    /// For the executor: a definite failure. The job is queued again or failed, as decided.
    pub(crate) async fn fail_attempt(
        &self,
        attempt_id: &str,
        why: AttemptError,
        http_status: Option<u16>,
        after: AfterFailure,
    ) -> Result<JobAttempt> {
        self.fail_attempt_noted(attempt_id, why, http_status, after, None)
            .await
    }

    /// [`Engine::fail_attempt`] with a replay's or a status lookup's event, recorded in the
    /// same transaction before the failure's.
    pub(crate) async fn fail_attempt_noted(
        &self,
        attempt_id: &str,
        why: AttemptError,
        http_status: Option<u16>,
        after: AfterFailure,
        note: Option<Note>,
    ) -> Result<JobAttempt> {
        let attempt_id = attempt_id.to_owned();
        let done = self
            .group(FailAttempt {
                attempt_id,
                why,
                http_status,
                after,
                note,
                unsent_only: false,
            })
            .await?;
        self.wake_executor();
        Ok(done)
    }

    /// For an out-of-band process: gives up waiting on an attempt without a person. Only tests
    /// call it (through `testing`).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) async fn abandon_attempt(
        &self,
        attempt_id: &str,
        reason: &str,
    ) -> Result<JobAttempt> {
        let mut tx = self.begin().await?;
        let outcome = async {
            job_rows::lock(&mut tx, &[], &[attempt_id.to_owned()]).await?;
            let row = attempt_row(&mut tx, attempt_id).await?;
            let m = AttemptMove::abandon(json!({ "reason": reason }));
            move_attempt(&mut tx, &row, m).await?;
            release_job(&mut tx, &row.job_id).await?;
            job_attempt(&mut tx, &row.job_id, attempt_id).await
        }
        .await;
        let done = finish(tx, outcome).await?;
        self.wake_executor();
        Ok(done)
    }

    /// Turns every `in_flight` attempt whose lease has expired into `unknown` (SPEC §9): its
    /// request may be out, so it is never sent again by itself. Runs on every `open`, and
    /// running executors call it about once a second. Returns how many it moved.
    pub async fn recover_expired_leases(&self) -> Result<usize> {
        let mut tx = self.begin().await?;
        let outcome = async {
            // Only the jobs this transaction could lock: one another host holds is left to the
            // next pass, so recovery never waits for a host (a frozen one included).
            let held = attempt_rows::lock_expired(&mut tx).await?;
            let mut expired = attempt_rows::expired_leases(&mut tx).await?;
            if let Some(held) = held {
                let held: std::collections::HashSet<String> = held.into_iter().collect();
                expired.retain(|row| held.contains(&row.job_id));
            }
            for row in &expired {
                let why = FailureKind::LeaseExpired.because(format!(
                    "executor {} stopped renewing its lease (expired {}); the request may have been sent",
                    row.executor_id.as_deref().unwrap_or("?"),
                    row.lease_expires_at.as_deref().unwrap_or("?"),
                ));
                let m = AttemptMove {
                    to: AttemptState::Unknown,
                    cause: Cause::Executor,
                    patch: Patch {
                        error: Some(&why),
                        ..Default::default()
                    },
                    event: EventKind::RecoveredUnknown,
                    actor: Actor::System,
                    detail: json!({
                        "reason": why.message,
                        "executor_id": row.executor_id,
                        "lease_expires_at": row.lease_expires_at,
                    }),
                };
                move_attempt(&mut tx, row, m).await?;
                block_job(&mut tx, &row.job_id).await?;
            }
            Ok(expired.len())
        }
        .await;
        finish(tx, outcome).await
    }
}

/// [`Engine::mark_unknown`]'s write.
struct MarkUnknown {
    attempt_id: String,
    why: AttemptError,
}

impl GroupWrite for MarkUnknown {
    type Out = Attempt;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, Attempt> {
        Box::pin(async move {
            let why = &self.why;
            let row = attempt_row(tx, &self.attempt_id).await?;
            let m = AttemptMove {
                to: AttemptState::Unknown,
                cause: Cause::Executor,
                patch: Patch {
                    error: Some(why),
                    ..Default::default()
                },
                event: EventKind::AttemptUnknown,
                actor: Actor::Executor,
                detail: json!({ "kind": why.kind, "reason": why.message }),
            };
            let moved = move_attempt(tx, &row, m).await?;
            block_job(tx, &row.job_id).await?;
            moved.into_attempt()
        })
    }
}

/// [`Engine::fail_attempt_noted`]'s write, and [`Engine::fail_unsent`]'s.
struct FailAttempt {
    attempt_id: String,
    why: AttemptError,
    http_status: Option<u16>,
    after: AfterFailure,
    note: Option<Note>,
    /// Only a `pending` attempt may fail so (`fail_unsent`): any other is refused as an
    /// invalid transition, with nothing written, since its request may be out.
    unsent_only: bool,
}

impl GroupWrite for FailAttempt {
    type Out = JobAttempt;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, JobAttempt> {
        Box::pin(async move {
            let attempt_id = &self.attempt_id;
            let row = if self.unsent_only {
                pending_row(tx, attempt_id, "failed before sending").await?
            } else {
                attempt_row(tx, attempt_id).await?
            };
            if let Some(note) = &self.note {
                note.write(tx, &row.job_id, attempt_id).await?;
            }
            fail_in(tx, &row, &self.why, self.http_status, &self.after).await?;
            job_attempt(tx, &row.job_id, attempt_id).await
        })
    }
}
