//! The rules of SPEC §2–§5 and §9 as engine calls: each one transaction, each transition
//! guarded by its expected state and recorded as an event in the same transaction.

mod answers;
mod attempts;
pub(crate) use attempts::ResponseHead;
mod claim;
mod transition;
pub use claim::Claim;
mod contracts;
pub use contracts::AddedContract;
mod budgets;
mod bulk;
mod evidence;
mod feed;
mod group;
mod person;
mod providers;
mod read;
mod replay;
mod spend;
pub use replay::{Note, ReplayGate};
mod submit;
mod tokens;
pub(crate) use group::WriteQueue;
pub(crate) use submit::SubmitQueue;
#[cfg(feature = "testing")]
pub use {replay::ReplayWindow, tokens::TOKEN_PREFIX};

use crate::store::Handle;
use serde_json::Value;

use crate::error::{BlockedDetails, Error, Result};
use crate::events::EventKind;
use crate::intent::validate_owner;
use crate::model::{Actor, Attempt, Job};
use crate::store::{attempts as attempt_rows, events, jobs as job_rows};

/// Loads a job for the executor, or `not_found`.
async fn job_row(conn: &mut impl Handle, id: &str) -> Result<job_rows::JobRow> {
    job_rows::by_id(conn, id)
        .await?
        .ok_or_else(|| Error::not_found("job", id))
}

/// Loads the owner's job, or `not_found` (also for another owner's).
async fn owned_job_row(conn: &mut impl Handle, owner: &str, id: &str) -> Result<job_rows::JobRow> {
    validate_owner(owner)?;
    job_rows::owned(conn, owner, id)
        .await?
        .ok_or_else(|| Error::not_found("job", id))
}

/// Loads an attempt for the executor, or `not_found`.
async fn attempt_row(conn: &mut impl Handle, id: &str) -> Result<attempt_rows::AttemptRow> {
    attempt_rows::by_id(conn, id)
        .await?
        .ok_or_else(|| Error::not_found("attempt", id))
}

/// Loads an attempt whose job the owner holds, or `not_found`.
async fn owned_attempt_row(
    conn: &mut impl Handle,
    owner: &str,
    id: &str,
) -> Result<attempt_rows::AttemptRow> {
    validate_owner(owner)?;
    attempt_rows::owned(conn, owner, id)
        .await?
        .ok_or_else(|| Error::not_found("attempt", id))
}

/// Re-reads a job and an attempt after a write.
async fn reread(conn: &mut impl Handle, job_id: &str, attempt_id: &str) -> Result<(Job, Attempt)> {
    let job = job_row(conn, job_id).await?.into_job()?;
    let attempt = attempt_row(conn, attempt_id).await?.into_attempt()?;
    Ok((job, attempt))
}

/// The job and the attempt an action touched, read again after its writes.
async fn job_attempt(
    conn: &mut impl Handle,
    job_id: &str,
    attempt_id: &str,
) -> Result<crate::model::JobAttempt> {
    let (job, attempt) = reread(conn, job_id, attempt_id).await?;
    Ok(crate::model::JobAttempt {
        job,
        attempt,
        next_attempt: None,
    })
}

impl crate::Engine {
    /// Runs one of the executor's writes in the next group commit (see `group/`); its
    /// outcome is returned once the commit that holds it is durable.
    async fn group<W: group::GroupWrite>(&self, write: W) -> Result<W::Out> {
        self.writes.run(write).await
    }
}

/// Ends a write transaction by its outcome: commits it on `Ok` (nothing is returned before the
/// commit that holds it has succeeded); on `Err`, rolls it back before the error is returned.
/// A transaction that is only dropped is rolled back a moment later, by a task of its own, and
/// until then still holds the job locks it took: a refused call would leave its job locked
/// past its answer, and another host's claim meanwhile would pass over the job.
async fn finish<T>(tx: crate::store::Tx, outcome: Result<T>) -> Result<T> {
    match outcome {
        Ok(value) => {
            tx.commit().await?;
            Ok(value)
        }
        Err(e) => {
            // The refusal is the answer; a rollback that fails ends with its connection.
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// Appends one event.
async fn event(
    conn: &mut impl Handle,
    job_id: &str,
    attempt_id: Option<&str>,
    kind: EventKind,
    actor: Actor,
    detail: Value,
) -> Result<()> {
    events::append(
        conn,
        events::NewEvent {
            job_id,
            attempt_id,
            kind,
            actor,
            detail,
        },
    )
    .await?;
    Ok(())
}

/// `attempt_blocked` naming the job's open attempt, read after the index refused a new one.
async fn blocked(conn: &mut impl Handle, job_id: &str) -> Result<Error> {
    let open = attempt_rows::open_for_job(conn, job_id)
        .await?
        .ok_or_else(|| {
            Error::internal(format!(
                "job {job_id}: a new attempt was refused, yet none is open"
            ))
        })?;
    Ok(Error::AttemptBlocked {
        message: format!(
            "job {job_id} has an open attempt {} ({}); resolve it before starting another",
            open.id, open.state
        ),
        details: BlockedDetails {
            job_id: job_id.to_owned(),
            attempt_id: open.id,
            state: open.state,
        },
    })
}
