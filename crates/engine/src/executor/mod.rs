//! The executor: claims work, sends attempts, classifies what comes back, completes through
//! the compare-and-swap — and never sends an attempt twice.
//!
//! Every step that decides an outcome is committed before its effect: an attempt is committed
//! `pending`, then `in_flight` with this executor's lease, before a byte is written. Only the
//! executor whose guarded `pending → in_flight` update succeeded sends it, so two executors
//! (in one process or several) never send the same attempt.
//!
//! - this file: the executor itself, its state, and its retried writes.
//! - `options.rs`: how it paces itself.
//! - `run.rs`: the loop — claim, recover, schedule; no single job stops it.
//! - `send/`: one attempt over HTTP, from `in_flight` to its outcome.
//! - `reconcile.rs`: status lookups of `unknown` attempts, beside the loop.
//! - `replay.rs`: keyed replays of `unknown` attempts, beside the loop.
//! - `contract_check.rs`, `prompt_tokens.rs`: contract checks, which send samples and count their tokens.

mod contract_check;
mod options;
mod prompt_tokens;
mod reconcile;
mod replay;
mod run;
mod send;

pub use options::{check_max_in_flight, ExecutorOptions, DEFAULT_MAX_IN_FLIGHT};
pub use reconcile::Reconciled;
#[cfg(feature = "testing")]
pub use replay::{Replayed, REPLAY_FIRST_WAIT};
pub use run::CHANGE_CHECK;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::error::{Error, Result};
use crate::sandbox::Sandbox;
use crate::Engine;

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
