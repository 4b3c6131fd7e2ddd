//! Executor-side transitions: claim, send, lease, unknown, fail, abandon, and recovery (§4, §9).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::store::Handle;
use serde_json::json;

use crate::attempt::{AttemptState, Cause};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::failure::FailureKind;
use crate::job::JobStatus;
use crate::model::{Actor, AfterFailure, Attempt, AttemptError, Job, JobAttempt};
use crate::store::attempts::{self as attempt_rows, Patch};
use crate::store::jobs::{self as job_rows, JobRow};
use crate::store::providers as provider_rows;
use crate::store::Tx;
use crate::Engine;

use super::group::{Fast, GroupWrite, Lock, Ran, Step, Touches};
use super::transition::{block_job, fail_job, move_attempt, move_from, release_job, AttemptMove};
use super::{attempt_row, blocked, finish, job_attempt, job_row, Note};

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

/// Fails an attempt and moves its job on as `after` says, in the caller's transaction.
async fn fail_in(
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
            super::event(
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

/// A provider's response head on its way to the ledger: its request id and HTTP status (SPEC
/// §4). A write of its own is queued the moment it arrives; when the answer is settled before
/// that write has run, the answer's write takes the head instead and the head's own write
/// writes nothing. Both were queued before the group that would hold the head's write began,
/// so the head is committed no later than it would have been, and one statement fewer runs.
pub(crate) struct ResponseHead {
    pub request_id: Option<String>,
    pub http_status: Option<u16>,
    writer: AtomicU8,
}

impl ResponseHead {
    /// Nobody has written it yet.
    const WAITING: u8 = 0;
    /// Its own write has run, and runs again should its group run again.
    const OWN: u8 = 1;
    /// The answer's write carries it; its own write writes nothing.
    const ANSWER: u8 = 2;

    pub(crate) fn new(request_id: Option<String>, http_status: Option<u16>) -> Arc<ResponseHead> {
        Arc::new(ResponseHead {
            request_id,
            http_status,
            writer: AtomicU8::new(Self::WAITING),
        })
    }

    /// For its own write, as it runs: whether to write the head (no once the answer took it).
    fn written_by_own_write(&self) -> bool {
        match self.writer.compare_exchange(
            Self::WAITING,
            Self::OWN,
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => true,
            Err(now) => now == Self::OWN,
        }
    }

    /// For the answer, before its write is queued: whether that write must carry the head,
    /// because the head's own write has not run (and now will write nothing).
    pub(crate) fn carried_by_answer(&self) -> bool {
        self.writer
            .compare_exchange(
                Self::WAITING,
                Self::ANSWER,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
    }
}

impl Engine {
    /// For the executor: creates the job's next attempt at `provider` as `pending`. Refused
    /// with `attempt_blocked` while another is open, `invalid_transition` once the job is
    /// `succeeded`, `cancelled` or `failed`.
    pub async fn claim_attempt(&self, job_id: &str, provider: &str) -> Result<JobAttempt> {
        let (job_id, provider) = (job_id.to_owned(), provider.to_owned());
        self.group(ClaimAttempt { job_id, provider }).await
    }

    /// For the executor: commits `pending → in_flight` with its lease, before a byte is sent.
    /// Refused unless the attempt is `pending` and its job `running` with no result: only the
    /// executor whose move succeeds may send it. Committed with the executor's other writes
    /// of the moment (a group commit); it returns only once that commit is durable.
    pub async fn mark_sent(
        &self,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
    ) -> Result<Attempt> {
        self.mark_sent_of(None, attempt_id, executor_id, lease)
            .await
    }

    /// [`Engine::mark_sent`] for an attempt of `job_id`, known to the caller: on PostgreSQL
    /// the group commit may then move it in one statement with other jobs' attempts (see
    /// `group/runs.rs`).
    pub(crate) async fn mark_sent_of(
        &self,
        job_id: Option<&str>,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
    ) -> Result<Attempt> {
        // The lease runs from the commit by the database's clock; the attempt shows its end.
        let detail = json!({ "executor_id": executor_id, "lease_ms": lease.as_millis() as u64 });
        self.group(MarkSent {
            job_id: job_id.map(str::to_owned),
            attempt_id: attempt_id.to_owned(),
            executor_id: executor_id.to_owned(),
            lease,
            detail,
        })
        .await
    }

    /// For the executor: extends its lease on an attempt it holds in flight; false when it no
    /// longer holds one (the attempt moved on).
    pub async fn renew_lease(
        &self,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
    ) -> Result<bool> {
        let (attempt_id, executor_id) = (attempt_id.to_owned(), executor_id.to_owned());
        self.group(RenewLease {
            attempt_id,
            executor_id,
            lease,
        })
        .await
    }

    /// For the executor: saves the provider's request id and HTTP status as soon as headers arrive.
    pub async fn record_response_head(
        &self,
        attempt_id: &str,
        request_id: Option<&str>,
        http_status: Option<u16>,
    ) -> Result<()> {
        let head = ResponseHead::new(request_id.map(str::to_owned), http_status);
        self.queue_response_head(None, attempt_id, head)?.await
    }

    /// For the executor: [`Engine::record_response_head`] without waiting: the write is queued
    /// at once, so a write the caller queues after it (the answer) is committed in the same
    /// group or a later one, never before it. The future commits it and gives its outcome.
    /// When the answer takes the head with it ([`ResponseHead::carried_by_answer`]) before this
    /// write runs, this write writes nothing; given the attempt's `job_id`, that answer may then
    /// run ahead of it in its group (see `group/runs.rs`).
    pub(crate) fn queue_response_head(
        &self,
        job_id: Option<&str>,
        attempt_id: &str,
        head: Arc<ResponseHead>,
    ) -> Result<impl std::future::Future<Output = Result<()>> + Send + 'static> {
        let pending = self.writes.queue(RecordHead {
            job_id: job_id.map(str::to_owned),
            attempt_id: attempt_id.to_owned(),
            head,
        })?;
        let writes = self.writes.clone();
        Ok(async move { writes.outcome(pending).await })
    }

    /// For the executor: no trustworthy answer (`in_flight → unknown`); the job waits for a
    /// person or a reconciliation.
    pub async fn mark_unknown(&self, attempt_id: &str, why: AttemptError) -> Result<Attempt> {
        let attempt_id = attempt_id.to_owned();
        self.group(MarkUnknown { attempt_id, why }).await
    }

    /// For the executor: a failure found before sending (a missing key, a provider removed
    /// since). It only ever moves `pending → failed`: an attempt another process already
    /// marked `in_flight` is left alone (`invalid_transition`), since its request may be out.
    pub async fn fail_unsent(&self, attempt_id: &str, why: AttemptError) -> Result<JobAttempt> {
        let attempt_id = attempt_id.to_owned();
        let done = self.group(FailUnsent { attempt_id, why }).await?;
        self.wake_executor();
        Ok(done)
    }

    /// For the executor: a definite failure. The job is queued again or failed, as decided.
    pub async fn fail_attempt(
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
    #[doc(hidden)]
    pub async fn fail_attempt_noted(
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
            })
            .await?;
        self.wake_executor();
        Ok(done)
    }

    /// For an out-of-band process: gives up waiting on an attempt without a person.
    pub async fn abandon_attempt(&self, attempt_id: &str, reason: &str) -> Result<JobAttempt> {
        let mut tx = self.begin().await?;
        let outcome = async {
            job_rows::lock(&mut tx, &[], &[attempt_id.to_owned()]).await?;
            let row = attempt_row(&mut tx, attempt_id).await?;
            let m = AttemptMove {
                to: AttemptState::Abandoned,
                cause: Cause::Executor,
                patch: Patch {
                    finished: true,
                    ..Default::default()
                },
                event: EventKind::AttemptAbandoned,
                actor: Actor::System,
                detail: json!({ "reason": reason }),
            };
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

/// [`Engine::mark_sent_of`]'s write: `pending → in_flight`, in one statement with other
/// jobs' attempts when its `job_id` is known (PostgreSQL).
struct MarkSent {
    job_id: Option<String>,
    attempt_id: String,
    executor_id: String,
    lease: Duration,
    detail: serde_json::Value,
}

impl GroupWrite for MarkSent {
    type Out = Attempt;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn fast(&self) -> Option<Fast> {
        Some(Fast::Send {
            job_id: self.job_id.clone()?,
            attempt_id: self.attempt_id.clone(),
            executor_id: self.executor_id.clone(),
            lease: self.lease,
            detail: self.detail.to_string(),
        })
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, Attempt> {
        Box::pin(async move {
            let m = AttemptMove {
                to: AttemptState::InFlight,
                cause: Cause::Executor,
                patch: Patch {
                    executor_id: Some(&self.executor_id),
                    lease: Some(self.lease),
                    sent: true,
                    ..Default::default()
                },
                event: EventKind::AttemptSent,
                actor: Actor::Executor,
                detail: self.detail.clone(),
            };
            // Only a pending attempt is sent: the move's guard is the only check.
            move_from(tx, &self.attempt_id, AttemptState::Pending, m)
                .await?
                .into_attempt()
        })
    }

    fn run_after<'t>(&'t self, tx: &'t mut Tx, ran: Ran) -> Step<'t, Attempt> {
        match ran {
            Ran::Sent(Some(moved)) => Box::pin(async move { moved.into_attempt() }),
            _ => self.run(tx),
        }
    }
}

/// [`Engine::renew_lease`]'s write.
struct RenewLease {
    attempt_id: String,
    executor_id: String,
    lease: Duration,
}

impl GroupWrite for RenewLease {
    type Out = bool;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, bool> {
        Box::pin(async move {
            let (attempt_id, executor_id) = (&self.attempt_id, &self.executor_id);
            Ok(attempt_rows::renew_lease(tx, attempt_id, executor_id, self.lease).await?)
        })
    }
}

/// [`Engine::queue_response_head`]'s write: nothing when the answer took the head with it.
struct RecordHead {
    job_id: Option<String>,
    attempt_id: String,
    head: Arc<ResponseHead>,
}

impl GroupWrite for RecordHead {
    type Out = ();

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn touches(&self) -> Option<Touches> {
        Some(match &self.job_id {
            Some(job) => Touches::Head {
                job: job.clone(),
                attempt: self.attempt_id.clone(),
            },
            None => Touches::Anything,
        })
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, ()> {
        Box::pin(async move {
            let (attempt_id, head) = (&self.attempt_id, &self.head);
            if !head.written_by_own_write() {
                return Ok(());
            }
            let recorded = attempt_rows::record_response_head(
                tx,
                attempt_id,
                head.request_id.as_deref(),
                head.http_status,
            )
            .await?;
            match recorded {
                true => Ok(()),
                false => Err(Error::not_found("attempt", attempt_id)),
            }
        })
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

/// [`Engine::fail_unsent`]'s write.
struct FailUnsent {
    attempt_id: String,
    why: AttemptError,
}

impl GroupWrite for FailUnsent {
    type Out = JobAttempt;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, JobAttempt> {
        Box::pin(async move {
            let attempt_id = &self.attempt_id;
            let row = attempt_row(tx, attempt_id).await?;
            let state = row.state()?;
            if state != AttemptState::Pending {
                return Err(Error::invalid_transition(
                    "attempt",
                    attempt_id,
                    state.as_str(),
                    "failed before sending",
                ));
            }
            fail_in(tx, &row, &self.why, None, &AfterFailure::Requeue).await?;
            job_attempt(tx, &row.job_id, attempt_id).await
        })
    }
}

/// [`Engine::fail_attempt_noted`]'s write.
struct FailAttempt {
    attempt_id: String,
    why: AttemptError,
    http_status: Option<u16>,
    after: AfterFailure,
    note: Option<Note>,
}

impl GroupWrite for FailAttempt {
    type Out = JobAttempt;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, JobAttempt> {
        Box::pin(async move {
            let attempt_id = &self.attempt_id;
            let row = attempt_row(tx, attempt_id).await?;
            if let Some(note) = &self.note {
                note.write(tx, &row.job_id, attempt_id).await?;
            }
            fail_in(tx, &row, &self.why, self.http_status, &self.after).await?;
            job_attempt(tx, &row.job_id, attempt_id).await
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{Cause, Outcome};

    /// A ledger on either backend, as the test run chooses.
    async fn open(dir: &tempfile::TempDir) -> Engine {
        let location = onejob_testkit::ledger_location(&dir.path().join("ledger.db"));
        Engine::open(&location).await.unwrap()
    }

    async fn in_flight(engine: &Engine) -> Attempt {
        let intent = r#"{"route": ["sandbox"], "input": {}}"#;
        let job = engine.submit("local", "k", intent).await.unwrap().job;
        let claimed = engine.claim_attempt(&job.id, "sandbox").await.unwrap();
        let lease = Duration::from_secs(10);
        engine
            .mark_sent(&claimed.attempt.id, "x", lease)
            .await
            .unwrap()
    }

    /// The answer took the head before the head's own write ran: that write writes nothing,
    /// and the head is recorded all the same, by the answer's write, in the same commit.
    #[tokio::test]
    async fn a_head_the_answer_carries_is_recorded_by_the_answers_write() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(&dir).await;
        let attempt = in_flight(&engine).await;
        let head = ResponseHead::new(Some("req-7".into()), Some(200));
        let own = engine
            .queue_response_head(Some(&attempt.job_id), &attempt.id, head.clone())
            .unwrap();
        assert!(head.carried_by_answer());
        let answer = serde_json::json!({"ok": true});
        let done = engine
            .complete_carrying(
                Some(&attempt.job_id),
                &attempt.id,
                &answer,
                Cause::Answer,
                Some(head.clone()),
            )
            .await
            .unwrap();
        own.await.unwrap();
        assert_eq!(done.outcome, Outcome::Won);
        assert_eq!(done.attempt.request_id.as_deref(), Some("req-7"));
        assert_eq!(done.attempt.http_status, Some(200));
        let read = engine.attempt_by_id(&attempt.id).await.unwrap();
        assert_eq!(read.request_id.as_deref(), Some("req-7"));
        assert_eq!(read.http_status, Some(200));
    }

    /// The head's own write ran first: the answer may no longer take it, and the head stays
    /// as that write recorded it.
    #[tokio::test]
    async fn a_head_written_on_its_own_is_not_carried_again() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(&dir).await;
        let attempt = in_flight(&engine).await;
        let head = ResponseHead::new(Some("req-8".into()), Some(200));
        engine
            .queue_response_head(Some(&attempt.job_id), &attempt.id, head.clone())
            .unwrap()
            .await
            .unwrap();
        assert!(!head.carried_by_answer());
        let read = engine.attempt_by_id(&attempt.id).await.unwrap();
        assert_eq!(read.request_id.as_deref(), Some("req-8"));
    }

    /// An answer that loses still records the head it carries: the request id is how a person
    /// finds the work at the provider.
    #[tokio::test]
    async fn a_losing_answer_records_the_head_it_carries() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(&dir).await;
        let attempt = in_flight(&engine).await;
        engine.cancel("local", &attempt.job_id).await.unwrap();
        let head = ResponseHead::new(Some("req-9".into()), Some(200));
        assert!(head.carried_by_answer());
        let answer = serde_json::json!({"late": true});
        let done = engine
            .complete_carrying(
                Some(&attempt.job_id),
                &attempt.id,
                &answer,
                Cause::Answer,
                Some(head),
            )
            .await
            .unwrap();
        assert_ne!(done.outcome, Outcome::Won);
        assert_eq!(done.attempt.request_id.as_deref(), Some("req-9"));
    }
}
