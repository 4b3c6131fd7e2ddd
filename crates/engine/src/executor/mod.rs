//! The executor: claims work, sends attempts, classifies what comes back, completes through
//! the compare-and-swap — and never sends an attempt twice.
//!
//! Every step that decides an outcome is committed before its effect: an attempt is committed
//! `pending`, then `in_flight` with this executor's lease, before a byte is written. Only the
//! executor whose guarded `pending → in_flight` update succeeded sends it, so two executors
//! (in one process or several) never send the same attempt.
//!
//! - this file: the loop — claim, recover, schedule; no single job stops it.
//! - `send/`: one attempt over HTTP, from `in_flight` to its outcome.
//! - `reconcile.rs`: status lookups of `unknown` attempts, beside the loop.
//! - `replay.rs`: keyed replays of `unknown` attempts, beside the loop.
//! - `check.rs`, `tokens.rs`: contract checks, which send samples and count their tokens.

mod check;
mod prompt_tokens;
mod reconcile;
mod replay;
mod send;

pub use reconcile::{Reconciled, LOOKUP_EVERY_CAP};
pub use replay::{Replayed, REPLAY_FIRST_WAIT, REPLAY_WAIT_CAP};

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::ledger::Claim;
use crate::model::{Attempt, Job, JobAttempt};
use crate::sandbox::Sandbox;
use crate::Engine;

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

/// How many attempts an executor sends at once unless told otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 32;

/// The most attempts one executor may be told to send at once (`onejob worker --concurrency`,
/// the app's setting): each holds a connection and a lease renewer.
pub const MAX_IN_FLIGHT: usize = 1024;

/// Checks a count of attempts sent at once as a person gave it: 1 to [`MAX_IN_FLIGHT`], else
/// `invalid_input` on field `concurrency`.
pub fn check_max_in_flight(n: usize) -> Result<()> {
    if (1..=MAX_IN_FLIGHT).contains(&n) {
        return Ok(());
    }
    Err(Error::invalid_input(
        "concurrency",
        format!("attempts sent at once must be from 1 to {MAX_IN_FLIGHT}; {n} is not"),
    ))
}

/// How an executor paces itself. The defaults are SPEC §4's.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// How long an `in_flight` attempt stays this executor's without renewal.
    pub lease: Duration,
    /// How often the lease is renewed while waiting for an answer.
    pub renew_every: Duration,
    /// How often the ledger is looked at without a wake-up (expired leases, ended backoffs,
    /// and work from other processes should their change feed be unavailable).
    pub poll_every: Duration,
    /// Attempts this executor sends at once.
    pub max_in_flight: usize,
    /// The first retry's backoff; it doubles per attempt, with jitter, up to `backoff_cap`.
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// How often an `unknown` attempt's provider status is looked up, where it has one.
    pub reconcile_every: Duration,
    /// Status lookups running at once, beside the loop; as many keyed replays may run besides.
    pub max_lookups: usize,
    /// How long a write that failed on storage (busy, locked, I/O) is retried before it is
    /// left to recovery.
    pub storage_retry_for: Duration,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions {
            lease: Duration::from_secs(10),
            renew_every: Duration::from_secs(3),
            poll_every: Duration::from_secs(1),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            backoff_base: Duration::from_millis(200),
            backoff_cap: Duration::from_secs(30),
            reconcile_every: Duration::from_secs(5),
            max_lookups: 4,
            storage_retry_for: Duration::from_secs(600),
        }
    }
}

/// A running executor. Cheap to clone; clones share their attempts and sandboxes.
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    id: String,
    /// Built on the first request: an executor that sends nothing (an idle app) never sets up
    /// the TLS library and its root certificates.
    client: std::sync::OnceLock<reqwest::Client>,
    options: ExecutorOptions,
    permits: Arc<Semaphore>,
    /// How many attempts it may send at once now: `options.max_in_flight` until changed.
    max_in_flight: Mutex<usize>,
    tasks: Mutex<JoinSet<()>>,
    /// Attempts this executor is driving, so a pass does not start one twice.
    driving: Mutex<HashSet<String>>,
    sandboxes: tokio::sync::Mutex<HashMap<String, Sandbox>>,
    last_recovery: Mutex<Option<Instant>>,
    /// When a pass of `run` last looked for `pending` attempts it did not claim.
    last_left: Mutex<Option<Instant>>,
    /// When `unknown` attempts were last looked over for status lookups due.
    last_lookups: Mutex<Option<Instant>>,
    /// When each `unknown` attempt was last looked up (or first seen), and how long until the
    /// next lookup.
    last_lookup: Mutex<HashMap<String, (Instant, Duration)>>,
    /// Attempts whose status lookup is running now.
    looking: Mutex<HashSet<String>>,
    lookups: Arc<Semaphore>,
    /// When each attempt due for a keyed replay is next replayed, and the backoff that set it.
    replay_at: Mutex<HashMap<String, (Instant, Duration)>>,
    /// Attempts whose replay is running now.
    replaying: Mutex<HashSet<String>>,
    replays: Arc<Semaphore>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

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
    /// An executor over `engine` with a fresh id.
    pub fn new(engine: Engine, options: ExecutorOptions) -> Result<Executor> {
        Ok(Executor {
            inner: Arc::new(Inner {
                id: format!("executor-{}", uuid::Uuid::now_v7()),
                permits: Arc::new(Semaphore::new(options.max_in_flight.max(1))),
                max_in_flight: Mutex::new(options.max_in_flight.max(1)),
                lookups: Arc::new(Semaphore::new(options.max_lookups.max(1))),
                replays: Arc::new(Semaphore::new(options.max_lookups.max(1))),
                engine,
                client: std::sync::OnceLock::new(),
                options,
                tasks: Mutex::new(JoinSet::new()),
                driving: Mutex::new(HashSet::new()),
                sandboxes: tokio::sync::Mutex::new(HashMap::new()),
                last_recovery: Mutex::new(None),
                last_left: Mutex::new(None),
                last_lookups: Mutex::new(None),
                last_lookup: Mutex::new(HashMap::new()),
                looking: Mutex::new(HashSet::new()),
                replay_at: Mutex::new(HashMap::new()),
                replaying: Mutex::new(HashSet::new()),
            }),
        })
    }

    /// The HTTP client every request of this executor goes through, built on first use. An
    /// error (the TLS library cannot start) leaves the attempt as it is, to be tried again.
    fn client(&self) -> Result<&reqwest::Client> {
        if let Some(client) = self.inner.client.get() {
            return Ok(client);
        }
        let built = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::internal(format!("cannot build the HTTP client: {e}")))?;
        // Two first requests at once may both build one; the first kept serves both.
        Ok(self.inner.client.get_or_init(|| built))
    }

    /// How many attempts this executor sends at once.
    pub fn max_in_flight(&self) -> usize {
        *lock(&self.inner.max_in_flight)
    }

    /// Changes how many attempts this executor sends at once (at least one), while it runs:
    /// more slots are used at its next pass; with fewer, attempts already out finish and no
    /// new one starts until the count is below the new limit.
    pub fn set_max_in_flight(&self, n: usize) {
        let n = n.max(1);
        let mut max = lock(&self.inner.max_in_flight);
        if n > *max {
            self.inner.permits.add_permits(n - *max);
            self.inner.engine.wake_executor();
        } else if n < *max {
            // Slots are taken back as they come free.
            let (permits, fewer) = (self.inner.permits.clone(), *max - n);
            tokio::spawn(async move {
                let fewer = u32::try_from(fewer).unwrap_or(u32::MAX);
                if let Ok(taken) = permits.acquire_many_owned(fewer).await {
                    taken.forget();
                }
            });
        }
        *max = n;
    }

    /// This executor's id, as recorded on the attempts it sends.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

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
    /// Returns how many attempts it started.
    pub async fn tick(&self) -> Result<usize> {
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

    /// Runs a ledger write until it is stored: a storage error (busy, locked, I/O) is retried
    /// with backoff for up to `storage_retry_for`, never turned into an outcome. Any other
    /// error is returned at once.
    async fn persist<T, F, Fut>(&self, what: &str, mut write: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let started = Instant::now();
        let mut wait = Duration::from_millis(20);
        loop {
            match write().await {
                Err(e @ Error::Storage { .. })
                    if started.elapsed() < self.inner.options.storage_retry_for =>
                {
                    eprintln!("onejob executor: {what}: {e}; retrying");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
                other => return other,
            }
        }
    }
}
