//! The error codes of SPEC §11: one tagged union, the same in Rust, in the CLI and in TypeScript.
//!
//! - this file: the union, its details, and its codes (wire code, exit code, HTTP status).
//! - `new.rs`: the constructors, `storage`'s wording among them.
//! - `from_sqlx.rs`: the conversions of the database driver's failures into `storage` errors
//!   that name their ledger.

mod from_sqlx;
mod new;

pub(crate) use from_sqlx::{at, is_unreachable, located, migration_words};

use serde::{Deserialize, Serialize};
use specta::Type;

/// Every way an engine call can fail. Serialises as `{ "code", "message", "details" }`.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize, Type)]
#[serde(tag = "code", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Error {
    /// A bad field; `details.field` names it.
    #[error("{message}")]
    InvalidInput {
        message: String,
        details: FieldDetails,
    },
    /// The key is taken by a job with another intent; `details.existing_job_id` names it.
    #[error("{message}")]
    IdempotencyConflict {
        message: String,
        details: ConflictDetails,
    },
    /// An open attempt exists; `details` names it and its state.
    #[error("{message}")]
    AttemptBlocked {
        message: String,
        details: BlockedDetails,
    },
    /// The requested move is not allowed from the current state.
    #[error("{message}")]
    InvalidTransition {
        message: String,
        details: TransitionDetails,
    },
    /// Unknown id, or one that belongs to another owner.
    #[error("{message}")]
    NotFound {
        message: String,
        details: NotFoundDetails,
    },
    /// Automatic failover to a provider that has not passed the contract check was refused.
    #[error("{message}")]
    FallbackNotValidated {
        message: String,
        details: FallbackDetails,
    },
    /// A missing, unknown or revoked API token (SPEC §15); the message is the same for each,
    /// so it tells nothing about which tokens exist.
    #[error("{message}")]
    Unauthorized {
        message: String,
        details: EmptyDetails,
    },
    /// The ledger is unreachable, busy, or failed a read or a write: nothing was decided, and
    /// the same request may be sent again (with its key). `details.kind` says which; the
    /// message names the ledger and what to check.
    #[error("{message}")]
    Storage {
        message: String,
        details: StorageDetails,
    },
    /// A provider failed in a way that is not an attempt's outcome.
    #[error("{message}")]
    Provider {
        message: String,
        details: EmptyDetails,
    },
    /// A bug or an impossible state.
    #[error("{message}")]
    Internal {
        message: String,
        details: EmptyDetails,
    },
}

/// Details of `invalid_input`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldDetails {
    /// The offending field, as a dotted path (`intent.route.1`, `idempotency_key`).
    pub field: String,
}

/// Details of `idempotency_conflict`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConflictDetails {
    pub existing_job_id: String,
}

/// Details of `attempt_blocked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BlockedDetails {
    pub job_id: String,
    /// The open attempt that blocks a new one.
    pub attempt_id: String,
    pub state: String,
}

/// Details of `invalid_transition`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransitionDetails {
    /// `job` or `attempt`.
    pub entity: String,
    pub id: String,
    pub from: String,
    pub to: String,
    /// True when the refused move still left a mark for a person: a late answer was
    /// dropped and the job flagged for review.
    pub flagged_for_review: bool,
}

/// Details of `not_found`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NotFoundDetails {
    /// `job`, `attempt` or `provider`.
    pub entity: String,
    pub id: String,
}

/// Details of `fallback_not_validated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FallbackDetails {
    pub job_id: String,
    pub provider: String,
}

/// Details of `storage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StorageDetails {
    pub kind: StorageKind,
}

/// What failed, so that a face can tell an outage from a busy file without reading words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum StorageKind {
    /// A PostgreSQL ledger's server cannot be reached, stopped answering, or ended the
    /// connection; onejob reconnects by itself once it is back.
    Unreachable,
    /// The ledger held a lock past its wait: a SQLite file held by another process past the
    /// busy timeout, a PostgreSQL statement that waited too long for a lock.
    Busy,
    /// A read or a write did not complete: a full disk, an I/O error, a read-only or damaged
    /// file, a refused login, a schema that cannot be brought up to date.
    Failed,
    /// The OS keyring, which holds the providers' API keys, cannot be reached or refused.
    Keyring,
}

/// Details of the codes that carry none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EmptyDetails {}

/// Shorthand for engine results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The code as it appears on the wire.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput { .. } => "invalid_input",
            Error::IdempotencyConflict { .. } => "idempotency_conflict",
            Error::AttemptBlocked { .. } => "attempt_blocked",
            Error::InvalidTransition { .. } => "invalid_transition",
            Error::NotFound { .. } => "not_found",
            Error::FallbackNotValidated { .. } => "fallback_not_validated",
            Error::Unauthorized { .. } => "unauthorized",
            Error::Storage { .. } => "storage",
            Error::Provider { .. } => "provider",
            Error::Internal { .. } => "internal",
        }
    }

    /// The CLI exit code of SPEC §11 (and 7 for `unauthorized`, which §11 does not list).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::InvalidInput { .. } => 2,
            Error::IdempotencyConflict { .. } => 3,
            Error::AttemptBlocked { .. } | Error::InvalidTransition { .. } => 4,
            Error::NotFound { .. } => 5,
            Error::FallbackNotValidated { .. } => 6,
            Error::Unauthorized { .. } => 7,
            Error::Storage { .. } | Error::Provider { .. } | Error::Internal { .. } => 1,
        }
    }

    /// The HTTP status of SPEC §11, for any face that speaks HTTP.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::InvalidInput { .. } => 400,
            Error::IdempotencyConflict { .. } => 422,
            Error::AttemptBlocked { .. } | Error::InvalidTransition { .. } => 409,
            Error::NotFound { .. } => 404,
            Error::FallbackNotValidated { .. } => 409,
            Error::Unauthorized { .. } => 401,
            Error::Storage { .. } => 503,
            Error::Provider { .. } | Error::Internal { .. } => 500,
        }
    }
}
