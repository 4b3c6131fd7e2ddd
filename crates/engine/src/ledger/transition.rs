//! The only way ledger code changes an attempt's state or a job's status: each move is
//! checked against its table, made by one guarded `UPDATE`, its changed rows checked, and
//! recorded as an event in the same transaction.

use crate::store::Handle;
use serde_json::{json, Value};

use crate::attempt::{AttemptState, Cause};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::job::JobStatus;
use crate::model::{Actor, JobError};
use crate::store::attempts::{self as attempt_rows, AttemptRow, MoveEvent, Patch};
use crate::store::jobs::{self as job_rows, JobPatch, JobRow};

use super::{event, job_row};

/// An attempt's move and the event that records it.
pub(super) struct AttemptMove<'a> {
    pub to: AttemptState,
    pub cause: Cause,
    pub patch: Patch<'a>,
    pub event: EventKind,
    pub actor: Actor,
    pub detail: Value,
}

impl AttemptMove<'_> {
    /// The system giving up on an attempt (`→ abandoned`, finished), with `detail` saying why.
    pub(super) fn abandon(detail: Value) -> Self {
        AttemptMove {
            to: AttemptState::Abandoned,
            cause: Cause::Executor,
            patch: Patch {
                finished: true,
                ..Default::default()
            },
            event: EventKind::AttemptAbandoned,
            actor: Actor::System,
            detail,
        }
    }
}

/// Moves an attempt from the state `row` was read in, and returns it as moved (see
/// [`move_from`]).
pub(super) async fn move_attempt(
    conn: &mut impl Handle,
    row: &AttemptRow,
    m: AttemptMove<'_>,
) -> Result<AttemptRow> {
    move_from(conn, &row.id, row.state()?, m).await
}

/// Moves attempt `id` from `from`, with its event in the same statement, and returns it as
/// moved. `pending → in_flight` also requires its job to be `running` without a result. Zero
/// rows changed means another process moved it first: the move is refused, naming the state
/// it is in now, and nothing is overwritten.
pub(super) async fn move_from(
    conn: &mut impl Handle,
    id: &str,
    from: AttemptState,
    m: AttemptMove<'_>,
) -> Result<AttemptRow> {
    from.check(m.to, m.cause, id)?;
    let sending = from == AttemptState::Pending && m.to == AttemptState::InFlight;
    let detail = m.detail.to_string();
    let event = MoveEvent {
        kind: m.event.as_str(),
        actor: m.actor.as_str(),
        detail: &detail,
    };
    if let Some(moved) =
        attempt_rows::moved(conn, id, from, m.to, &m.patch, sending, &event).await?
    {
        return Ok(moved);
    }
    let row = super::attempt_row(conn, id).await?;
    let now = row.state()?;
    if now == from {
        let job = job_row(conn, &row.job_id).await?.into_job()?;
        return Err(Error::invalid_transition(
            "job",
            &job.id,
            job.status.as_str(),
            "sending",
        ));
    }
    Err(Error::invalid_transition(
        "attempt",
        id,
        now.as_str(),
        m.to.as_str(),
    ))
}

/// A job's move and the event that records it (none for the bookkeeping moves that an
/// attempt's own event already explains: `queued ⇄ running ⇄ unknown`).
pub(super) struct JobMove<'a> {
    pub to: JobStatus,
    pub patch: JobPatch<'a>,
    pub event: Option<(EventKind, Actor, Value)>,
}

/// Moves a job from `from` and returns it as moved. A job that becomes `succeeded`,
/// `cancelled` or `failed` has its open attempt closed as `abandoned` in the same transaction,
/// so nothing is sent for a job that is over and no open attempt outlives it.
pub(super) async fn move_job(
    conn: &mut impl Handle,
    job_id: &str,
    from: JobStatus,
    m: JobMove<'_>,
) -> Result<JobRow> {
    if !from.may_become(m.to) {
        return Err(Error::invalid_transition(
            "job",
            job_id,
            from.as_str(),
            m.to.as_str(),
        ));
    }
    let Some(moved) = job_rows::set_status(conn, job_id, from, m.to, &m.patch).await? else {
        let now = job_row(conn, job_id).await?.into_job()?.status;
        return Err(Error::invalid_transition(
            "job",
            job_id,
            now.as_str(),
            m.to.as_str(),
        ));
    };
    if let Some((kind, actor, detail)) = m.event {
        event(conn, job_id, None, kind, actor, detail).await?;
    }
    if m.to.is_closed() {
        close_open(conn, job_id, m.to).await?;
    }
    Ok(moved)
}

/// Closes the job's open attempt, if it has one, because the job became `status`: a
/// `pending` one was never sent and never will be; an `in_flight` or `unknown` one no longer
/// blocks, and its answer, should it come, is dropped and flagged for review.
pub(super) async fn close_open(
    conn: &mut impl Handle,
    job_id: &str,
    status: JobStatus,
) -> Result<()> {
    let Some(open) = attempt_rows::open_for_job(conn, job_id).await? else {
        return Ok(());
    };
    let never_sent = open.state()? == AttemptState::Pending;
    let reason = if never_sent {
        format!("the job became {status} before this attempt was sent")
    } else {
        format!("the job became {status} while this attempt was out; a late answer will be dropped and flagged for review")
    };
    let m = AttemptMove::abandon(json!({ "reason": reason, "never_sent": never_sent }));
    move_attempt(conn, &open, m).await.map(|_| ())
}

/// After an open attempt ended without a result: a job that was waiting on it is queued
/// again. A job that is over (cancelled while the attempt was out, say) stays as it is.
pub(super) async fn release_job(conn: &mut impl Handle, job_id: &str) -> Result<()> {
    let status = job_row(conn, job_id).await?.into_job()?.status;
    match status {
        JobStatus::Running | JobStatus::Unknown => {
            let m = JobMove {
                to: JobStatus::Queued,
                patch: JobPatch {
                    clear_not_before: true,
                    ..Default::default()
                },
                event: None,
            };
            move_job(conn, job_id, status, m).await.map(|_| ())
        }
        JobStatus::Queued | JobStatus::Succeeded | JobStatus::Failed | JobStatus::Cancelled => {
            Ok(())
        }
    }
}

/// After its attempt became `unknown`: a running job waits for a person or a lookup.
pub(super) async fn block_job(conn: &mut impl Handle, job_id: &str) -> Result<()> {
    let status = job_row(conn, job_id).await?.into_job()?.status;
    if status != JobStatus::Running {
        return Ok(());
    }
    let m = JobMove {
        to: JobStatus::Unknown,
        patch: JobPatch::default(),
        event: None,
    };
    move_job(conn, job_id, status, m).await.map(|_| ())
}

/// Fails a job with `error` from whatever open status it is in (the route policy's verdict).
pub(super) async fn fail_job(
    conn: &mut impl Handle,
    job_id: &str,
    error: &JobError,
    actor: Actor,
) -> Result<()> {
    let status = job_row(conn, job_id).await?.into_job()?.status;
    let m = JobMove {
        to: JobStatus::Failed,
        patch: JobPatch {
            error: Some(error),
            set_error: true,
            bump_version: true,
            finished: true,
            clear_not_before: true,
        },
        event: Some((EventKind::JobFailed, actor, json!(error))),
    };
    move_job(conn, job_id, status, m).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::store::events;
    use crate::Engine;

    /// The event rides in the move's own statement, guarded by the move: a refused move writes
    /// none, even in a transaction that goes on and commits. On either backend.
    #[tokio::test]
    async fn a_refused_move_writes_no_event_in_a_transaction_that_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let location = onejob_testkit::ledger_location(&dir.path().join("ledger.db"));
        let engine = Engine::open(&location).await.unwrap();
        let intent = r#"{"route": ["sandbox"], "input": {}}"#;
        let job = engine.submit("local", "k", intent).await.unwrap().job;
        let claimed = engine.claim_attempt(&job.id, "sandbox").await.unwrap();
        let mut tx = engine.begin().await.unwrap();
        let before = events::for_job(&mut tx, &job.id).await.unwrap().len();
        // The attempt is pending, not in flight: nothing matches the move's guard.
        let m = AttemptMove {
            to: AttemptState::Unknown,
            cause: Cause::Executor,
            patch: Patch::default(),
            event: EventKind::AttemptUnknown,
            actor: Actor::Executor,
            detail: json!({}),
        };
        let refused = move_from(&mut tx, &claimed.attempt.id, AttemptState::InFlight, m).await;
        let Err(refusal) = refused else {
            panic!("a move from the wrong state was made")
        };
        assert_eq!(refusal.code(), "invalid_transition");
        tx.commit().await.unwrap();
        let detail = engine.job("local", &job.id).await.unwrap();
        assert_eq!(detail.events.len(), before);
        assert_eq!(detail.attempts[0].state, AttemptState::Pending);
    }
}
