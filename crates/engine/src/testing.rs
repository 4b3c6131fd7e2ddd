//! The engine's calls that no face makes, for tests and benchmarks only: **not for faces**.
//!
//! A face (the command line, the HTTP API, the desktop app) calls the engine's own methods:
//! person-facing calls that take an owner, and the executor that drives the rest. The calls
//! here act on ids alone and skip the owner check: the executor's writes (claiming, sending,
//! answering, ending an attempt), reads of any owner's job or attempt, and person-facing
//! calls no face has a use for. Tests need them to put a job where only an executor can
//! (in flight, `unknown`) and to look at the ledger as it is.
//!
//! Built only with the `testing` feature, which the workspace's packages turn on in their
//! dev-dependencies alone: a face's own build has neither this module nor these calls
//! (docs/adr/0059).
//!
//! ```ignore
//! use onejob_engine::testing::InternalCalls as _;
//! let attempt = engine.claim_attempt(&job.id, "sandbox").await?;
//! ```

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

pub use crate::attempt::Cause;
pub use crate::executor::{Replayed, REPLAY_FIRST_WAIT};
pub use crate::failure::{FailureKind, RetryHere};
pub use crate::ledger::{Claim, Note, ReplayGate, ReplayWindow, TOKEN_PREFIX};
pub use crate::model::{AfterFailure, Completion, Outcome};

use crate::bulk::{BulkProgress, BulkRequest, BulkStarted};
use crate::contracts::Contract;
use crate::error::Result;
use crate::executor::Executor;
use crate::model::{Attempt, AttemptError, Job, JobAttempt};
use crate::Engine;

/// What an attempt in `state`, ended with `error_kind`, holds against a budget, in billionths,
/// given its worst case and its settled cost (SPEC §17).
pub fn held(
    state: crate::AttemptState,
    error_kind: Option<&str>,
    worst: i64,
    cost: Option<i64>,
) -> i64 {
    crate::money::held(state, error_kind, worst, cost)
}

/// The attempts a job may make when its intent names no `max_attempts`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = crate::intent::DEFAULT_MAX_ATTEMPTS;
/// The fields a provider's configuration may have.
pub const PROVIDER_FIELDS: [&str; 16] = crate::providers::PROVIDER_FIELDS;
/// The keyring service the providers' API keys are kept under.
pub const SERVICE: &str = crate::providers::keys::SERVICE;
/// The path the sandbox answers chat completions at.
pub const CHAT_PATH: &str = crate::sandbox::CHAT_PATH;

/// Hex SHA-256 of a value's canonical JSON (RFC 8785): a job's fingerprint.
pub fn canonical_sha256(value: &Value) -> String {
    crate::intent::canonical_sha256(value)
}

/// The ledger's time now, in its fixed-width UTC text form, for rows a test writes itself.
pub fn now() -> String {
    crate::store::now()
}

/// The executor's steps that run inside its loop, for a test to take one at a time. Bring it
/// into scope with `use onejob_engine::testing::ExecutorSteps as _;`.
pub trait ExecutorSteps {
    /// One pass over the ledger, as the executor's loop makes; how many attempts it started.
    fn tick(&self) -> impl Future<Output = Result<usize>> + Send;
    /// Sends an `unknown` attempt's request again under its key (SPEC §16), as the loop does
    /// once its replay is due.
    fn replay(&self, attempt: &Attempt) -> impl Future<Output = Result<Replayed>> + Send;
}

impl ExecutorSteps for Executor {
    fn tick(&self) -> impl Future<Output = Result<usize>> + Send {
        Executor::tick(self)
    }

    fn replay(&self, attempt: &Attempt) -> impl Future<Output = Result<Replayed>> + Send {
        Executor::replay(self, attempt)
    }
}

/// Declares each call once: the trait's method, and the engine's implementation of it, which
/// is the engine's own (crate-private) method of the same name.
macro_rules! internal_calls {
    ($(
        $(#[$doc:meta])*
        fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $out:ty;
    )*) => {
        /// The engine's calls that no face makes (see the module). Bring it into scope with
        /// `use onejob_engine::testing::InternalCalls as _;`.
        pub trait InternalCalls {
            $(
                $(#[$doc])*
                fn $name(&self $(, $arg: $ty)*) -> impl Future<Output = $out> + Send;
            )*

            /// Whether the ledger is a shared PostgreSQL database rather than a local file.
            fn is_shared(&self) -> bool;
        }

        impl InternalCalls for Engine {
            $(
                fn $name(&self $(, $arg: $ty)*) -> impl Future<Output = $out> + Send {
                    Engine::$name(self $(, $arg)*)
                }
            )*

            fn is_shared(&self) -> bool {
                Engine::is_shared(self)
            }
        }
    };
}

internal_calls! {
    /// Claims a queued job's next attempt by its route policy (what the executor does).
    fn claim_next(&self, job_id: &str) -> Result<Claim>;
    /// Creates a `pending` attempt of the job at `provider`, outside its route policy.
    fn claim_attempt(&self, job_id: &str, provider: &str) -> Result<JobAttempt>;
    /// Moves a `pending` attempt to `in_flight` under a lease held by `executor_id`.
    fn mark_sent(&self, attempt_id: &str, executor_id: &str, lease: Duration) -> Result<Attempt>;
    /// [`InternalCalls::mark_sent`] as the executor sends a request of `body`: at a provider
    /// with a price, charged its worst case and reserved against every budget that covers it,
    /// or kept back (`budget_reached`, the attempt returned `failed`) where it would pass one.
    fn mark_sent_priced(
        &self,
        attempt_id: &str,
        executor_id: &str,
        lease: Duration,
        body: &str,
    ) -> Result<Attempt>;
    /// Records the provider's answer for an attempt.
    fn complete(&self, attempt_id: &str, answer: &Value, cause: Cause) -> Result<Completion>;
    /// [`InternalCalls::complete`], with the note of how the answer was had.
    fn complete_noted(
        &self,
        attempt_id: &str,
        answer: &Value,
        cause: Cause,
        via: &'static str,
        note: Note,
    ) -> Result<Completion>;
    /// Moves an `in_flight` attempt to `unknown`.
    fn mark_unknown(&self, attempt_id: &str, why: AttemptError) -> Result<Attempt>;
    /// Fails an attempt that was never sent.
    fn fail_unsent(&self, attempt_id: &str, why: AttemptError) -> Result<JobAttempt>;
    /// Fails an attempt the provider refused, and decides what its job does next.
    fn fail_attempt(
        &self,
        attempt_id: &str,
        why: AttemptError,
        http_status: Option<u16>,
        after: AfterFailure,
    ) -> Result<JobAttempt>;
    /// [`InternalCalls::fail_attempt`], with the note of a replay or a lookup.
    fn fail_attempt_noted(
        &self,
        attempt_id: &str,
        why: AttemptError,
        http_status: Option<u16>,
        after: AfterFailure,
        note: Option<Note>,
    ) -> Result<JobAttempt>;
    /// Fails a `pending` attempt that will never be sent.
    fn abandon_attempt(&self, attempt_id: &str, reason: &str) -> Result<JobAttempt>;
    /// Records a replay or a lookup that changed nothing: its event alone.
    fn note(&self, attempt_id: &str, note: Note) -> Result<()>;
    /// Flags an attempt that is still `unknown` for review, with the note that says why.
    fn flag_unknown(&self, attempt_id: &str, note: Note) -> Result<bool>;
    /// Whether an `unknown` attempt may be sent again under its key now (SPEC §16).
    fn replay_gate(&self, attempt_id: &str) -> Result<ReplayGate>;
    /// How long an attempt's key is still honoured by its provider.
    fn replay_window(&self, attempt_id: &str) -> Result<ReplayWindow>;
    /// `unknown` attempts the executor may send again under their keys.
    fn replayable_attempts(&self, limit: u32) -> Result<Vec<Attempt>>;
    /// `pending` attempts, oldest first.
    fn pending_attempts(&self, limit: u32) -> Result<Vec<Attempt>>;
    /// Any owner's job, by id.
    fn job_by_id(&self, job_id: &str) -> Result<Job>;
    /// Any owner's attempt, by id.
    fn attempt_by_id(&self, attempt_id: &str) -> Result<Attempt>;
    /// The token usage recorded for an attempt, if its provider reported one.
    fn attempt_usage(&self, attempt_id: &str) -> Result<Option<Value>>;
    /// One contract by name, or `not_found`.
    fn contract(&self, name: &str) -> Result<Contract>;
    /// A bulk operation started and run to its end in one call.
    fn bulk(
        &self,
        owner: &str,
        key: &str,
        request: &BulkRequest,
        progress: impl FnMut(BulkProgress) + Send,
    ) -> Result<BulkStarted>;
}
