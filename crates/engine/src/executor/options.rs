//! How an executor paces itself: its lease, its polls, how many attempts it sends at once,
//! its backoff and its retries.

use std::time::Duration;

use crate::error::{Error, Result};

/// How many attempts an executor sends at once unless told otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 32;

/// The most attempts one executor may be told to send at once (`onejob worker --concurrency`,
/// the app's setting): each holds a connection and a lease renewer.
pub const MAX_IN_FLIGHT: usize = 1024;

/// Checks a count of attempts sent at once as a person gave it: 1 to `MAX_IN_FLIGHT`, else
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
