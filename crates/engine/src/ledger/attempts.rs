//! Executor-side transitions: claim, send, lease, unknown, fail, abandon, and recovery (§4, §9).

use std::time::Duration;

use serde_json::json;
use sqlx::SqliteConnection;

use crate::attempt::{AttemptState, Cause};
use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::model::{Actor, AfterFailure, Attempt, AttemptError, Job, JobAttempt};
use crate::store::{
    attempts as attempt_rows, jobs as job_rows, now, now_plus, providers as provider_rows,
};
use crate::Engine;

use super::{attempt_row, blocked, event, job_row, reread};

/// Who starts an attempt, for its event.
pub(super) struct Starter {
    pub actor: Actor,
    /// A person's explicit choice of provider (logged as such).
    pub explicit: bool,
    /// The input field that named the provider, for errors.
    pub field: &'static str,
}

/// Inserts the job's next attempt as `pending` and moves the job to `running`.
/// A terminal or failed job refuses; an open attempt makes the index refuse (`attempt_blocked`).
pub(super) async fn start_attempt(
    conn: &mut SqliteConnection,
    job: &Job,
    provider: &str,
    starter: Starter,
) -> Result<attempt_rows::AttemptRow> {
    if job.status.is_terminal() || job.status == JobStatus::Failed {
        return Err(Error::invalid_transition(
            "job",
            &job.id,
            job.status.as_str(),
            JobStatus::Running.as_str(),
        ));
    }
    if provider_rows::get(conn, provider).await?.is_none() {
        return Err(Error::invalid_input(
            starter.field,
            format!("no provider named {provider} is configured"),
        ));
    }
    let id = uuid::Uuid::now_v7().to_string();
    let row = match attempt_rows::insert_next(conn, &id, &job.id, provider, i64::from(job.version))
        .await
    {
        Ok(row) => row,
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            return Err(blocked(conn, &job.id).await?)
        }
        Err(e) => return Err(e.into()),
    };
    job_rows::shift(conn, &job.id, &[JobStatus::Queued], JobStatus::Running).await?;
    event(
        conn,
        &job.id,
        Some(&id),
        "attempt_created",
        starter.actor,
        json!({ "number": row.number, "provider": provider, "explicit": starter.explicit }),
    )
    .await?;
    Ok(row)
}

/// Moves an attempt in one guarded statement, or reports the move as invalid.
pub(super) async fn move_attempt(
    conn: &mut SqliteConnection,
    row: &attempt_rows::AttemptRow,
    to: AttemptState,
    cause: Cause,
    patch: &attempt_rows::Patch<'_>,
) -> Result<()> {
    let from = row.state()?;
    from.check(to, cause, &row.id)?;
    if attempt_rows::transition(conn, &row.id, from, to, patch).await? {
        Ok(())
    } else {
        // Inside a write transaction nobody can move it between our read and our write.
        Err(Error::internal(format!(
            "attempt {} left {from} inside its transaction",
            row.id
        )))
    }
}

/// After an open attempt ends without a result, a job that was waiting on it is queued again.
pub(super) async fn requeue(conn: &mut SqliteConnection, job_id: &str) -> Result<()> {
    job_rows::set_not_before(conn, job_id, None).await?;
    job_rows::shift(
        conn,
        job_id,
        &[JobStatus::Running, JobStatus::Unknown],
        JobStatus::Queued,
    )
    .await?;
    Ok(())
}

impl Engine {
    /// For the executor: creates the job's next attempt at `provider` as `pending`. Refused
    /// with `attempt_blocked` while another is open, `invalid_transition` once the job is
    /// `succeeded`, `cancelled` or `failed`.
    pub async fn claim_attempt(&self, job_id: &str, provider: &str) -> Result<JobAttempt> {
        let mut tx = self.begin().await?;
        let job = job_row(&mut tx, job_id).await?.into_job()?;
        let starter = Starter {
            actor: Actor::Executor,
            explicit: false,
            field: "provider",
        };
        let row = start_attempt(&mut tx, &job, provider, starter).await?;
        let (job, attempt) = reread(&mut tx, job_id, &row.id).await?;
        tx.commit().await?;
        Ok(JobAttempt {
            job,
            attempt,
            next_attempt: None,
        })
    }

    /// For the executor: commits `pending → in_flight` with its lease, before a byte is sent.
    pub async fn mark_sent(
        &self,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
    ) -> Result<Attempt> {
        let mut tx = self.begin().await?;
        let row = attempt_row(&mut tx, attempt_id).await?;
        let until = now_plus(lease);
        let patch = attempt_rows::Patch {
            executor_id: Some(executor_id),
            lease_expires_at: Some(&until),
            sent: true,
            ..Default::default()
        };
        move_attempt(
            &mut tx,
            &row,
            AttemptState::InFlight,
            Cause::Executor,
            &patch,
        )
        .await?;
        event(
            &mut tx,
            &row.job_id,
            Some(attempt_id),
            "attempt_sent",
            Actor::Executor,
            json!({ "executor_id": executor_id, "lease_expires_at": until }),
        )
        .await?;
        let attempt = attempt_row(&mut tx, attempt_id).await?.into_attempt()?;
        tx.commit().await?;
        Ok(attempt)
    }

    /// For the executor: extends its lease on an attempt it holds in flight; false when it no
    /// longer holds one (the attempt moved on).
    pub async fn renew_lease(
        &self,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
    ) -> Result<bool> {
        let mut conn = self.writer.acquire().await?;
        Ok(attempt_rows::renew_lease(&mut conn, attempt_id, executor_id, &now_plus(lease)).await?)
    }

    /// For the executor: saves the provider's request id and HTTP status as soon as headers arrive.
    pub async fn record_response_head(
        &self,
        attempt_id: &str,
        request_id: Option<&str>,
        http_status: Option<u16>,
    ) -> Result<()> {
        let mut conn = self.writer.acquire().await?;
        if attempt_rows::record_response_head(&mut conn, attempt_id, request_id, http_status)
            .await?
        {
            Ok(())
        } else {
            Err(Error::not_found("attempt", attempt_id))
        }
    }

    /// For the executor: no trustworthy answer (`in_flight → unknown`); the job waits for a
    /// person or a reconciliation.
    pub async fn mark_unknown(&self, attempt_id: &str, why: AttemptError) -> Result<Attempt> {
        let mut tx = self.begin().await?;
        let row = attempt_row(&mut tx, attempt_id).await?;
        let patch = attempt_rows::Patch {
            error: Some(&why),
            ..Default::default()
        };
        move_attempt(
            &mut tx,
            &row,
            AttemptState::Unknown,
            Cause::Executor,
            &patch,
        )
        .await?;
        job_rows::shift(
            &mut tx,
            &row.job_id,
            &[JobStatus::Running],
            JobStatus::Unknown,
        )
        .await?;
        event(
            &mut tx,
            &row.job_id,
            Some(attempt_id),
            "attempt_unknown",
            Actor::Executor,
            json!({ "kind": why.kind, "reason": why.message }),
        )
        .await?;
        let attempt = attempt_row(&mut tx, attempt_id).await?.into_attempt()?;
        tx.commit().await?;
        Ok(attempt)
    }

    /// For the executor: a definite failure. The job is queued again or failed, as decided.
    pub async fn fail_attempt(
        &self,
        attempt_id: &str,
        why: AttemptError,
        http_status: Option<u16>,
        after: AfterFailure,
    ) -> Result<JobAttempt> {
        let mut tx = self.begin().await?;
        let row = attempt_row(&mut tx, attempt_id).await?;
        let patch = attempt_rows::Patch {
            error: Some(&why),
            http_status,
            finished: true,
            ..Default::default()
        };
        move_attempt(&mut tx, &row, AttemptState::Failed, Cause::Executor, &patch).await?;
        event(
            &mut tx,
            &row.job_id,
            Some(attempt_id),
            "attempt_failed",
            Actor::Executor,
            json!({ "kind": why.kind, "message": why.message, "http_status": http_status }),
        )
        .await?;
        match after {
            AfterFailure::Requeue => requeue(&mut tx, &row.job_id).await?,
            AfterFailure::RequeueAfter(wait) => {
                requeue(&mut tx, &row.job_id).await?;
                job_rows::set_not_before(&mut tx, &row.job_id, Some(&now_plus(wait))).await?;
            }
            AfterFailure::FailJob(error) => {
                let from = [JobStatus::Running, JobStatus::Unknown, JobStatus::Queued];
                if job_rows::decide(&mut tx, &row.job_id, &from, JobStatus::Failed, Some(&error))
                    .await?
                {
                    event(
                        &mut tx,
                        &row.job_id,
                        None,
                        "job_failed",
                        Actor::Executor,
                        json!(error),
                    )
                    .await?;
                }
            }
        }
        let (job, attempt) = reread(&mut tx, &row.job_id, attempt_id).await?;
        tx.commit().await?;
        self.wake_executor();
        Ok(JobAttempt {
            job,
            attempt,
            next_attempt: None,
        })
    }

    /// For an out-of-band process: gives up waiting on an attempt without a person.
    pub async fn abandon_attempt(&self, attempt_id: &str, reason: &str) -> Result<JobAttempt> {
        let mut tx = self.begin().await?;
        let row = attempt_row(&mut tx, attempt_id).await?;
        let patch = attempt_rows::Patch {
            finished: true,
            ..Default::default()
        };
        move_attempt(
            &mut tx,
            &row,
            AttemptState::Abandoned,
            Cause::Executor,
            &patch,
        )
        .await?;
        requeue(&mut tx, &row.job_id).await?;
        event(
            &mut tx,
            &row.job_id,
            Some(attempt_id),
            "attempt_abandoned",
            Actor::System,
            json!({ "reason": reason }),
        )
        .await?;
        let (job, attempt) = reread(&mut tx, &row.job_id, attempt_id).await?;
        tx.commit().await?;
        self.wake_executor();
        Ok(JobAttempt {
            job,
            attempt,
            next_attempt: None,
        })
    }

    /// Turns every `in_flight` attempt whose lease has expired into `unknown` (SPEC §9): its
    /// request may be out, so it is never sent again by itself. Runs on every `open`, and
    /// running executors call it about once a second. Returns how many it moved.
    pub async fn recover_expired_leases(&self) -> Result<usize> {
        let mut tx = self.begin().await?;
        let expired = attempt_rows::expired_leases(&mut tx, &now()).await?;
        for row in &expired {
            let why = AttemptError {
                kind: "lease_expired".to_owned(),
                message: format!(
                    "executor {} stopped renewing its lease (expired {}); the request may have been sent",
                    row.executor_id.as_deref().unwrap_or("?"),
                    row.lease_expires_at.as_deref().unwrap_or("?"),
                ),
            };
            let patch = attempt_rows::Patch {
                error: Some(&why),
                ..Default::default()
            };
            move_attempt(&mut tx, row, AttemptState::Unknown, Cause::Executor, &patch).await?;
            job_rows::shift(
                &mut tx,
                &row.job_id,
                &[JobStatus::Running],
                JobStatus::Unknown,
            )
            .await?;
            event(
                &mut tx,
                &row.job_id,
                Some(&row.id),
                "recovered_unknown",
                Actor::System,
                json!({
                    "reason": why.message,
                    "executor_id": row.executor_id,
                    "lease_expires_at": row.lease_expires_at,
                }),
            )
            .await?;
        }
        tx.commit().await?;
        Ok(expired.len())
    }
}
