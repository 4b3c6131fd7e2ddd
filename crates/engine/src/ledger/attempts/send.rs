//! Sending an attempt: `pending → in_flight` under the executor's lease, the lease's renewal
//! while the answer is awaited, and the provider's response head as soon as it arrives.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::attempt::{AttemptState, Cause};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::failure::FailureKind;
use crate::job::JobStatus;
use crate::ledger::budgets;
use crate::ledger::group::{Fast, GroupWrite, Lock, Ran, Step, Touches};
use crate::ledger::transition::{move_from, AttemptMove};
use crate::ledger::{attempt_row, event, job_row};
use crate::model::AfterFailure;
use crate::model::{Actor, Attempt};
use crate::money::Charge;
use crate::store::jobs as job_rows;

use super::ends::{fail_in, pending_row};
use crate::store::attempts::{self as attempt_rows, Patch};
use crate::store::Tx;
use crate::Engine;

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
    /// For the executor: commits `pending → in_flight` with its lease, before a byte is sent.
    /// Refused unless the attempt is `pending` and its job `running` with no result: only the
    /// executor whose move succeeds may send it. Committed with the executor's other writes
    /// of the moment (a group commit); it returns only once that commit is durable. Only tests
    /// call it (through `testing`); the executor calls [`Engine::mark_sent_of`].
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) async fn mark_sent(
        &self,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
    ) -> Result<Attempt> {
        self.mark_sent_of(None, attempt_id, executor_id, lease, None)
            .await
    }

    /// [`Engine::mark_sent`] as the executor sends a request of `body`: at a provider with a
    /// price (as it is configured now), the attempt is charged its worst case and reserved
    /// against every budget that covers it, or kept back as `budget_reached` where it would
    /// pass one (SPEC §17). Only tests call it (through `testing`); several at once may be
    /// moved in one statement, as the executor's are (see `group/runs.rs`).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) async fn mark_sent_priced(
        &self,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
        body: &str,
    ) -> Result<Attempt> {
        let attempt = self.attempt_by_id(attempt_id).await?;
        let config = self.provider(&attempt.provider).await?.config;
        let charge = config
            .price
            .as_ref()
            .map(|price| price.charge(body, config.context_window));
        let job_id = Some(attempt.job_id.as_str());
        self.mark_sent_of(job_id, attempt_id, executor_id, lease, charge)
            .await
    }

    /// [`Engine::mark_sent`] for an attempt of `job_id`, known to the caller: on PostgreSQL
    /// the group commit may then move it in one statement with other jobs' attempts (see
    /// `group/runs.rs`). At a provider with a price, `charge` is recorded by the same write
    /// and reserved against the budgets that cover it (SPEC §17), in the run's statement or,
    /// where that leaves it out, by the write's own (docs/adr/0068).
    pub(crate) async fn mark_sent_of(
        &self,
        job_id: Option<&str>,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
        charge: Option<Charge>,
    ) -> Result<Attempt> {
        // The lease runs from the commit by the database's clock; the attempt shows its end.
        let detail = json!({ "executor_id": executor_id, "lease_ms": lease.as_millis() as u64 });
        self.group(MarkSent {
            job_id: job_id.map(str::to_owned),
            attempt_id: attempt_id.to_owned(),
            executor_id: executor_id.to_owned(),
            lease,
            detail,
            charge,
        })
        .await
    }

    /// For the executor: extends its lease on an attempt it holds in flight; false when it no
    /// longer holds one (the attempt moved on).
    pub(crate) async fn renew_lease(
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

    /// For the executor: saves the provider's request id and HTTP status as soon as headers
    /// arrive, without waiting: the write is queued at once, so a write the caller queues after
    /// it (the answer) is committed in the same group or a later one, never before it. The future commits it and gives its outcome.
    /// When the answer takes the head with it ([`ResponseHead::carried_by_answer`]) before this
    /// write runs, this write writes nothing; given the attempt's `job_id`, that answer may then
    /// run ahead of it in its group (see `group/runs.rs`).
    pub(crate) fn queue_response_head(
        &self,
        job_id: Option<&str>,
        attempt_id: &str,
        head: Arc<ResponseHead>,
    ) -> Result<impl std::future::Future<Output = Result<()>> + Send + 'static> {
        let ticket = self.writes.queue(RecordHead {
            job_id: job_id.map(str::to_owned),
            attempt_id: attempt_id.to_owned(),
            head,
        })?;
        let writes = self.writes.clone();
        Ok(async move { writes.outcome(ticket).await })
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
    /// What a priced attempt is charged, recorded by the move's own transaction.
    charge: Option<Charge>,
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
            charge: self.charge.clone(),
        })
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, Attempt> {
        Box::pin(async move {
            if let Some(charge) = &self.charge {
                if let Some(reached) = budgets::reserve(tx, &self.attempt_id, charge).await? {
                    return kept_back(tx, &self.attempt_id, charge, reached).await;
                }
            }
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
            let moved = move_from(tx, &self.attempt_id, AttemptState::Pending, m)
                .await?
                .into_attempt()?;
            match &self.charge {
                Some(charge) => attempt_rows::charge(tx, &self.attempt_id, charge)
                    .await?
                    .into_attempt(),
                None => Ok(moved),
            }
        })
    }

    fn run_after<'t>(&'t self, tx: &'t mut Tx, ran: Ran) -> Step<'t, Attempt> {
        match ran {
            Ran::Sent(Some(moved)) => Box::pin(async move { moved.into_attempt() }),
            _ => self.run(tx),
        }
    }
}

/// An attempt whose worst case would pass `reached` is not sent (SPEC §17): it fails as
/// `budget_reached` (which counts against neither its job's attempts nor its route), and its
/// job waits, `queued`, until the budget's next period, with a `budget_reached` event naming
/// it. Only a `pending` attempt: one another executor sent meanwhile is left alone.
async fn kept_back(
    tx: &mut Tx,
    attempt_id: &str,
    charge: &Charge,
    reached: budgets::Reached,
) -> Result<Attempt> {
    let row = pending_row(tx, attempt_id, "in_flight").await?;
    let why = FailureKind::BudgetReached.because(format!(
        "not sent: its worst case would pass budget {} ({} of {} held); the job waits for its next period",
        reached.name,
        crate::money::Amount::from_nanos(reached.used),
        crate::money::Amount::from_nanos(reached.limit),
    ));
    fail_in(tx, &row, &why, None, &AfterFailure::Requeue).await?;
    if job_row(tx, &row.job_id).await?.into_job()?.status == JobStatus::Queued {
        job_rows::set_backoff(tx, &row.job_id, Some(reached.wait)).await?;
    }
    let detail = reached.detail(charge.worst_nanos);
    let kind = EventKind::BudgetReached;
    event(
        tx,
        &row.job_id,
        Some(attempt_id),
        kind,
        Actor::Executor,
        detail,
    )
    .await?;
    attempt_row(tx, attempt_id).await?.into_attempt()
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::attempt::Cause;
    use crate::model::{Completion, Outcome};

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

    /// The attempt's `answer`, recorded as the executor records one, carrying `head`.
    async fn answer_carrying(
        engine: &Engine,
        attempt: &Attempt,
        answer: serde_json::Value,
        head: &Arc<ResponseHead>,
    ) -> Completion {
        engine
            .complete_carrying(
                Some(&attempt.job_id),
                &attempt.id,
                &answer,
                Cause::Answer,
                Some(head.clone()),
            )
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
        let done = answer_carrying(&engine, &attempt, serde_json::json!({"ok": true}), &head).await;
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
        let done =
            answer_carrying(&engine, &attempt, serde_json::json!({"late": true}), &head).await;
        assert_ne!(done.outcome, Outcome::Won);
        assert_eq!(done.attempt.request_id.as_deref(), Some("req-9"));
    }
}
