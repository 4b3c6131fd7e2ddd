//! The shapes of a bulk operation (SPEC §16 "Many at once"): a person's action applied to every
//! job a filter matched when it started.

use serde::{Deserialize, Serialize};
use specta::Type;

use crate::job::JobStatus;
use crate::model::Verdict;

/// The person's action a bulk operation applies to each of its jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum BulkAction {
    /// Resolve the job's `unknown` attempt with the operation's verdict (`as`).
    Resolve,
    /// Cancel the job.
    Cancel,
    /// Start the job's next attempt (at the operation's `provider`, or where the last one ran).
    Retry,
}

impl BulkAction {
    /// The action's name as the ledger records it.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkAction::Resolve => "resolve",
            BulkAction::Cancel => "cancel",
            BulkAction::Retry => "retry",
        }
    }
}

/// Which of the owner's jobs a bulk operation applies to: the Jobs list's filter. Every field
/// left out (or blank) is no filter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkFilter {
    /// Only jobs in this status; a `resolve` takes only `unknown` ones (the default for it).
    #[serde(default)]
    pub status: Option<JobStatus>,
    /// Only jobs whose route names this provider or that ran an attempt at it.
    #[serde(default)]
    pub provider: Option<String>,
    /// Only jobs whose open attempt has this error kind (the rule of SPEC §6 that made it
    /// `unknown`: `soft_timeout`, `connection_broken`, `lease_expired`, …).
    #[serde(default)]
    pub error_kind: Option<String>,
    /// Only jobs created before this time (RFC 3339, or a date `YYYY-MM-DD` for its midnight UTC).
    #[serde(default)]
    pub created_before: Option<String>,
    /// Only jobs created after this time (RFC 3339, or a date `YYYY-MM-DD`).
    #[serde(default)]
    pub created_after: Option<String>,
    /// Only jobs whose idempotency key or id starts with this text.
    #[serde(default)]
    pub search: Option<String>,
}

/// A bulk operation as asked: the action, the filter, and what the action needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkRequest {
    pub action: BulkAction,
    #[serde(default)]
    pub filter: BulkFilter,
    /// With `resolve` (and only with it): the verdict on each job's `unknown` attempt.
    #[serde(rename = "as", default)]
    pub verdict: Option<Verdict>,
    /// With `retry` (and only with it): the provider to retry each job at; left out, each job
    /// is retried where its last attempt ran. Not a filter: the filter's is `filter.provider`.
    #[serde(default)]
    pub provider: Option<String>,
    /// Counts what would match, and changes and records nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// A job a bulk operation did not change, and why: the code of the error the action gave
/// (`invalid_transition` when it had moved meanwhile, `attempt_blocked`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkSkip {
    pub job_id: String,
    pub code: String,
}

/// At most this many of an operation's providers are named; more are the first ones by name.
pub const BULK_PROVIDERS_NAMED: u32 = 10;

/// A bulk operation and how far it has come.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkOperation {
    /// The operation's id (UUIDv7); null for a dry run, which records nothing.
    pub id: Option<String>,
    /// The idempotency key it runs under; null for a dry run.
    pub key: Option<String>,
    pub action: BulkAction,
    /// How many jobs the filter matched when it started: its fixed set.
    pub matched: u32,
    /// The providers its jobs are routed to or ran at (as the Jobs list's provider filter reads
    /// a job), by name: what a confirmation names. At most [`BULK_PROVIDERS_NAMED`]; empty for a
    /// dry run, which fixes no set.
    pub providers: Vec<String>,
    /// How many of them the action changed so far.
    pub changed: u32,
    /// The ones it did not change, with the code of each (all of them once it is done).
    pub skipped: Vec<BulkSkip>,
    /// Every job of the set has been decided.
    pub done: bool,
    pub dry_run: bool,
}

/// A bulk operation started, or found under its key.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct BulkStarted {
    pub operation: BulkOperation,
    /// The key had already started this operation: nothing new was fixed.
    pub replayed: bool,
}

/// How far a running operation has come, for progress lines and bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkProgress {
    pub matched: u32,
    pub changed: u32,
    pub skipped: u32,
    /// Decided so far: changed + skipped.
    pub decided: u32,
}

/// A new key for an operation whose caller gave none: `bulk-` and a UUIDv7. Said in the
/// operation's answer, so it can be repeated under it.
pub fn generated_key() -> String {
    format!("bulk-{}", uuid::Uuid::now_v7())
}
