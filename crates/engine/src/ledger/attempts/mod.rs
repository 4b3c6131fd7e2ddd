//! Executor-side transitions: claim, send, lease, unknown, fail, abandon, and recovery (§4, §9).
//! Each write the group commit runs is a type beside the call that queues it.
//!
//! - this file: starting an attempt (the executor's claim, a person's retry or choice).
//! - `send.rs`: `pending → in_flight` under a lease, the lease's renewal, the response head.
//! - `ends.rs`: an attempt that ends without an answer: failed, `unknown`, abandoned, or
//!   `unknown` once its lease expired.

mod ends;
mod send;

pub(crate) use send::ResponseHead;

use std::time::Duration;

use crate::store::Handle;

use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::job::JobStatus;
use crate::model::{Actor, Job, JobAttempt};
use crate::store::attempts as attempt_rows;
use crate::store::jobs::JobRow;
use crate::store::providers as provider_rows;
use crate::store::Tx;
use crate::Engine;

use super::group::{GroupWrite, Lock, Step};
use super::{blocked, job_row};

/// The longest wait before a retry, whatever a provider's `Retry-After` asks (SPEC §6).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// Who starts an attempt, for its event.
pub(super) struct Starter {
    pub actor: Actor,
    /// A person's explicit choice of provider (logged as such).
    pub explicit: bool,
    /// The input field that named the provider, for errors.
    pub field: &'static str,
}

/// What starting an attempt wrote.
pub(super) struct Started {
    /// The new `pending` attempt.
    pub attempt: attempt_rows::AttemptRow,
    /// The job as moved to `running`, when it was `queued`; `None` when it was running already.
    pub job: Option<JobRow>,
}

impl Started {
    /// The job and the new attempt as the caller returns them: the job is read again only when
    /// starting did not move it.
    pub(super) async fn into_job_attempt(self, conn: &mut impl Handle) -> Result<JobAttempt> {
        let job = match self.job {
            Some(job) => job,
            None => job_row(conn, &self.attempt.job_id).await?,
        };
        Ok(JobAttempt {
            job: job.into_job()?,
            attempt: self.attempt.into_attempt()?,
            next_attempt: None,
        })
    }
}

/// Inserts the job's next attempt as `pending` and moves the job to `running`, in one call.
/// A closed job refuses; an open attempt makes the index refuse (`attempt_blocked`); a provider
/// not configured is `invalid_input` naming the starter's field, the only `invalid_input` it
/// gives.
pub(super) async fn start_attempt(
    conn: &mut impl Handle,
    job: &Job,
    provider: &str,
    starter: Starter,
) -> Result<Started> {
    start_attempt_in_bulk(conn, job, provider, starter, None).await
}

/// [`start_attempt`] for a person's action that a bulk operation applies: its `attempt_created`
/// event names the operation (`"bulk": id`) when `bulk` is given.
pub(super) async fn start_attempt_in_bulk(
    conn: &mut impl Handle,
    job: &Job,
    provider: &str,
    starter: Starter,
    bulk: Option<&str>,
) -> Result<Started> {
    if job.status.is_closed() {
        return Err(Error::invalid_transition(
            "job",
            &job.id,
            job.status.as_str(),
            JobStatus::Running.as_str(),
        ));
    }
    let id = uuid::Uuid::now_v7().to_string();
    let created = (
        EventKind::AttemptCreated.as_str(),
        starter.actor.as_str(),
        starter.explicit,
        bulk,
    );
    // `queued → running` is a move the job may always make; the statement's guard holds it to
    // a job still queued.
    let queued = job.status == JobStatus::Queued;
    let version = i64::from(job.version);
    let inserted =
        attempt_rows::insert_next(conn, &id, &job.id, provider, version, created, queued).await?;
    let Some(attempt) = inserted.attempt else {
        // Nothing was written: say why.
        if provider_rows::get(conn, provider).await?.is_none() {
            return Err(Error::invalid_input(
                starter.field,
                format!("no provider named {provider} is configured"),
            ));
        }
        return Err(blocked(conn, &job.id).await?);
    };
    if queued && inserted.job.is_none() {
        return Err(Error::internal(format!(
            "job {}: read as queued in this transaction, yet not moved to running",
            job.id
        )));
    }
    Ok(Started {
        attempt,
        job: inserted.job,
    })
}

impl Engine {
    /// For the executor: creates the job's next attempt at `provider` as `pending`. Refused
    /// with `attempt_blocked` while another is open, `invalid_transition` once the job is
    /// `succeeded`, `cancelled` or `failed`. Only tests call it (through `testing`): the
    /// executor claims by the route policy ([`Engine::claim_next`]).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) async fn claim_attempt(&self, job_id: &str, provider: &str) -> Result<JobAttempt> {
        let (job_id, provider) = (job_id.to_owned(), provider.to_owned());
        self.group(ClaimAttempt { job_id, provider }).await
    }
}

/// [`Engine::claim_attempt`]'s write.
struct ClaimAttempt {
    job_id: String,
    provider: String,
}

impl GroupWrite for ClaimAttempt {
    type Out = JobAttempt;

    fn lock(&self) -> Lock {
        Lock::Job(self.job_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, JobAttempt> {
        Box::pin(async move {
            let job = job_row(tx, &self.job_id).await?.into_job()?;
            let starter = Starter {
                actor: Actor::Executor,
                explicit: false,
                field: "provider",
            };
            let started = start_attempt(tx, &job, &self.provider, starter).await?;
            started.into_job_attempt(tx).await
        })
    }
}
