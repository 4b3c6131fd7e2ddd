//! The executor's loop: claim, recover, schedule. Each pass recovers expired leases, starts
//! the status lookups and keyed replays that are due, sends `pending` attempts and claims
//! queued jobs; no single job stops it.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit};

use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::ledger::Claim;
use crate::model::{Attempt, Job, JobAttempt};
use crate::sandbox::Sandbox;
use crate::Engine;

use super::{lock, Executor};

/// How often a SQLite ledger's file is looked at for other processes' writes, which wake the
/// executor (PostgreSQL announces them: `LISTEN/NOTIFY`).
pub const CHANGE_CHECK: Duration = Duration::from_millis(100);

/// The least time between the start of a pass and a pass woken by the ledger's change feed.
/// The feed also announces this executor's own writes; without a floor a busy executor would
/// run a pass per write it commits.
const FEED_GAP: Duration = Duration::from_millis(50);

/// The least time between two looks of a running executor's passes for `pending` attempts it
/// did not claim: a person's retry (in this process or another), or one a stopped host left.
/// A busy executor passes on every slot that frees, and nearly every such look found nothing;
/// a pass within this time of the last look skips it, and the loop passes again once it is due.
const LEFT_EVERY: Duration = Duration::from_millis(100);

/// How long a change feed that could not be followed is left before it is tried again.
const FEED_RETRY: Duration = Duration::from_secs(5);

/// Follows the ledger's change feed, whoever wrote (this process or another one), and wakes
/// the executor's loop on each change: one stored wake-up however many changes came. A feed
/// that cannot be followed (the server is away) is tried again, meanwhile the loop polls.
async fn follow_changes(engine: Engine, changed: Arc<Notify>) {
    loop {
        match engine.changes(CHANGE_CHECK).await {
            Ok(mut feed) => {
                while feed.changed().await.is_ok() {
                    changed.notify_one();
                }
            }
            Err(e) => eprintln!("onejob executor: cannot follow the ledger's changes: {e}"),
        }
        tokio::time::sleep(FEED_RETRY).await;
    }
}

/// The task following the change feed, ended with the loop however the loop ends (a caller
/// may drop it mid-pass).
struct Following(tokio::task::JoinHandle<()>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether a chore run at most once `every`, whose last run is kept in `last`, is due; if so,
/// it counts as run now.
fn due(last: &Mutex<Option<Instant>>, every: Duration) -> bool {
    let mut last = lock(last);
    if last.is_some_and(|t| t.elapsed() < every) {
        return false;
    }
    *last = Some(Instant::now());
    true
}

impl Executor {
    /// Runs until `stop` completes: a pass on every wake-up and at least every `poll_every`.
    /// Besides this process's own submits and resolutions, the ledger's change feed wakes it,
    /// so work another process submits is claimed at once rather than at the next poll.
    pub async fn run(&self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let changed = Arc::new(Notify::new());
        let _feed = Following(tokio::spawn(follow_changes(
            self.inner.engine.clone(),
            changed.clone(),
        )));
        loop {
            let began = Instant::now();
            let look = due(&self.inner.last_left, LEFT_EVERY);
            if let Err(e) = self.pass(look).await {
                eprintln!("onejob executor: {e}");
            }
            // Changes while the pass ran, or during the gap, wake it once; but not while every
            // slot is taken, as no claim could be made: the pass would only read. The slot an
            // attempt frees wakes it (`work_available`), and the change is then still noted.
            let full = self.inner.permits.available_permits() == 0;
            let woken_by_feed = async {
                if full {
                    std::future::pending::<()>().await;
                }
                changed.notified().await;
                tokio::time::sleep_until((began + FEED_GAP).into()).await;
            };
            // A look skipped is made as soon as it is due, unless every slot is taken: the
            // slot an attempt frees wakes the loop anyway.
            let last_look = *lock(&self.inner.last_left);
            let look_due = async {
                match last_look {
                    Some(last) if !look && !full => {
                        tokio::time::sleep_until((last + LEFT_EVERY).into()).await
                    }
                    _ => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = &mut stop => break,
                () = self.inner.engine.work_available() => {}
                () = woken_by_feed => {}
                () = look_due => {}
                () = tokio::time::sleep(self.inner.options.poll_every) => {}
            }
        }
        self.shutdown().await;
    }

    /// Runs passes until nothing is left to send and every attempt it started has ended
    /// (with an answer, or at its hard deadline). A pass that fails on storage is retried.
    pub async fn run_until_idle(&self) -> Result<()> {
        loop {
            let started = match self.tick().await {
                Ok(n) => n,
                Err(e @ Error::Storage { .. }) => {
                    eprintln!("onejob executor: {e}; retrying");
                    1
                }
                Err(e) => return Err(e),
            };
            self.reap();
            let busy = !lock(&self.inner.driving).is_empty();
            // Idle only when nothing is out, waiting or sendable: a pass that found no free
            // slot to claim with may have run just before the last attempt ended.
            if started == 0 && !busy {
                match self.idle().await {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(e @ Error::Storage { .. }) => {
                        eprintln!("onejob executor: {e}; retrying");
                    }
                    Err(e) => return Err(e),
                }
            }
            tokio::select! {
                () = self.inner.engine.work_available() => {}
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        self.shutdown().await;
        Ok(())
    }

    /// Whether nothing waits in the ledger: no backoff, no pending attempt, no sendable job.
    async fn idle(&self) -> Result<bool> {
        let engine = &self.inner.engine;
        Ok(engine.next_backoff_end().await?.is_none()
            && engine.pending_attempts(1).await?.is_empty()
            && engine.sendable_jobs(1).await?.is_empty())
    }

    /// Drives one job until it is `succeeded`, `failed`, `cancelled` or `unknown`, or until
    /// `deadline` passes, and returns it as it then is. It returns as soon as the job is
    /// `unknown`: it does not wait for the hard deadline.
    pub async fn run_job(&self, job_id: &str, deadline: Option<Instant>) -> Result<Job> {
        loop {
            let job = self.inner.engine.job_by_id(job_id).await?;
            let settled = matches!(
                job.status,
                JobStatus::Succeeded
                    | JobStatus::Failed
                    | JobStatus::Cancelled
                    | JobStatus::Unknown
            );
            if settled || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(job);
            }
            if let Err(e) = self.tick_job(&job).await {
                eprintln!("onejob executor: job {job_id}: {e}");
            }
            tokio::select! {
                () = self.inner.engine.work_available() => {}
                () = tokio::time::sleep(Duration::from_millis(25)) => {}
            }
        }
    }

    /// One pass over the ledger: recover expired leases (about once a second), start status
    /// lookups and keyed replays of `unknown` attempts that are due, send `pending` attempts and claim queued
    /// jobs. A job whose claim fails is logged and passed over; every other job goes on.
    /// Returns how many attempts it started. Only tests call it by itself (through `testing`).
    pub(crate) async fn tick(&self) -> Result<usize> {
        self.pass(true).await
    }

    /// [`Executor::tick`]; `look` says whether it looks for `pending` attempts it did not
    /// claim (see [`LEFT_EVERY`]).
    async fn pass(&self, look: bool) -> Result<usize> {
        self.recover_if_due().await?;
        let every = self
            .inner
            .options
            .reconcile_every
            .min(Duration::from_secs(1));
        if due(&self.inner.last_lookups, every) {
            self.start_lookups().await;
            self.start_replays().await;
        }
        let mut started = 0;
        let room = self.inner.permits.available_permits() as u32;
        if look {
            for attempt in self.inner.engine.left_pending_attempts(room.max(1)).await? {
                started += usize::from(self.spawn_drive(attempt, None, None));
            }
        }
        // A slot for each claim, taken before claiming: the jobs claimed are sent at once, and
        // claimed together in one transaction.
        let slots: Vec<OwnedSemaphorePermit> =
            std::iter::from_fn(|| self.inner.permits.clone().try_acquire_owned().ok()).collect();
        if slots.is_empty() {
            return Ok(started);
        }
        // One transaction reads the sendable jobs locked and claims them all. Should one claim
        // fail (a job whose intent no longer validates), the write fails whole: the jobs are
        // then claimed one by one, so that one fails alone and the others go on.
        let claims = match self.inner.engine.claim_sendable(slots.len() as u32).await {
            Ok(claims) => claims.into_iter().map(|(id, c)| (id, Ok(c))).collect(),
            Err(e @ Error::Storage { .. }) => return Err(e),
            Err(_) => {
                let ids = self.inner.engine.sendable_jobs(slots.len() as u32).await?;
                let claims = self.inner.engine.claim_many(&ids).await?;
                ids.into_iter().zip(claims).collect::<Vec<_>>()
            }
        };
        let mut slots = slots.into_iter();
        for (job_id, claim) in claims {
            match claim {
                Ok(Claim::Attempt(claimed)) => {
                    let JobAttempt { job, attempt, .. } = *claimed;
                    started += usize::from(self.spawn_drive(attempt, Some(job), slots.next()));
                }
                Ok(Claim::Failed(_) | Claim::Skipped) => {}
                Err(e) => eprintln!("onejob executor: job {job_id}: {e}"),
            }
        }
        Ok(started)
    }

    async fn tick_job(&self, job: &Job) -> Result<()> {
        self.recover_if_due().await?;
        match job.status {
            JobStatus::Queued => {
                self.claim_and_drive(&job.id).await?;
            }
            JobStatus::Running => {
                for attempt in self.inner.engine.pending_attempts(1000).await? {
                    if attempt.job_id == job.id {
                        self.spawn_drive(attempt, Some(job.clone()), None);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn claim_and_drive(&self, job_id: &str) -> Result<bool> {
        match self.inner.engine.claim_next(job_id).await? {
            Claim::Attempt(claimed) => {
                let JobAttempt { job, attempt, .. } = *claimed;
                Ok(self.spawn_drive(attempt, Some(job), None))
            }
            Claim::Failed(_) | Claim::Skipped => Ok(false),
        }
    }

    /// Starts driving an attempt unless this executor already is: with its job when the
    /// caller has it at hand, and with a slot already taken, or it waits for one.
    fn spawn_drive(
        &self,
        attempt: Attempt,
        job: Option<Job>,
        slot: Option<OwnedSemaphorePermit>,
    ) -> bool {
        if !lock(&self.inner.driving).insert(attempt.id.clone()) {
            return false;
        }
        let this = self.clone();
        lock(&self.inner.tasks).spawn(async move {
            let id = attempt.id.clone();
            if let Err(e) = this.drive(attempt, job, slot).await {
                eprintln!("onejob executor: attempt {id}: {e}");
            }
            lock(&this.inner.driving).remove(&id);
            // Its permit is free again: the loop may claim the next job now, not at its
            // next poll.
            this.inner.engine.wake_executor();
        });
        true
    }

    /// Drops finished tasks from the set.
    fn reap(&self) {
        let mut tasks = lock(&self.inner.tasks);
        while tasks.try_join_next().is_some() {}
    }

    /// Waits for every attempt task and lookup, then stops the in-process sandboxes.
    async fn shutdown(&self) {
        loop {
            let mut tasks = std::mem::take(&mut *lock(&self.inner.tasks));
            if tasks.is_empty() {
                break;
            }
            while tasks.join_next().await.is_some() {}
        }
        let sandboxes: Vec<Sandbox> = self
            .inner
            .sandboxes
            .lock()
            .await
            .drain()
            .map(|(_, s)| s)
            .collect();
        for sandbox in sandboxes {
            sandbox.stop().await;
        }
    }

    async fn recover_if_due(&self) -> Result<()> {
        if due(&self.inner.last_recovery, Duration::from_secs(1)) {
            self.inner.engine.recover_expired_leases().await?;
        }
        Ok(())
    }
}
