//! The error codes of SPEC §11: one tagged union, the same in Rust, in the CLI and in TypeScript.

use std::time::Duration;

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
    /// `invalid_input` naming `field`.
    pub fn invalid_input(field: impl Into<String>, message: impl Into<String>) -> Self {
        let field = field.into();
        let message = message.into();
        Error::InvalidInput {
            message: format!("{field}: {message}"),
            details: FieldDetails { field },
        }
    }

    /// `not_found` for an entity kind and id.
    pub fn not_found(entity: &str, id: &str) -> Self {
        Error::NotFound {
            message: format!("no {entity} with id {id}"),
            details: NotFoundDetails {
                entity: entity.to_owned(),
                id: id.to_owned(),
            },
        }
    }

    /// `invalid_transition` of an entity from one state to another.
    pub fn invalid_transition(entity: &str, id: &str, from: &str, to: &str) -> Self {
        Error::InvalidTransition {
            message: format!("{entity} {id} cannot move from {from} to {to}"),
            details: TransitionDetails {
                entity: entity.to_owned(),
                id: id.to_owned(),
                from: from.to_owned(),
                to: to.to_owned(),
                flagged_for_review: false,
            },
        }
    }

    /// `unauthorized`: the one answer to every token that does not let its bearer in.
    pub fn unauthorized() -> Self {
        Error::Unauthorized {
            message: "a valid API token is required".to_owned(),
            details: EmptyDetails {},
        }
    }

    /// `internal`, for states the engine should never reach.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Internal {
            message: message.into(),
            details: EmptyDetails {},
        }
    }

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

/// What a person should check, and expect, while a PostgreSQL ledger is unreachable.
const UNREACHABLE_CHECK: &str = "Check that its PostgreSQL server is running and that this \
     host can reach it (host, port, firewall); onejob reconnects by itself, so the same request \
     can be sent again in a few seconds";

/// What to check when a SQLite file is busy.
const SQLITE_BUSY_CHECK: &str = "Check for another onejob process on this file (the app, a \
     worker, onejob serve) or a tool holding it open in a transaction (sqlite3, a backup), then \
     try again; nothing was written";

/// What to check when a PostgreSQL ledger is busy.
const POSTGRES_BUSY_CHECK: &str = "Check the server for a long transaction or a lock held by \
     another program; nothing was decided, so the same request can be sent again in a moment";

/// What to check when a SQLite file failed a read or a write.
const SQLITE_FAILED_CHECK: &str = "Check that its disk has space, that the file and its \
     folder may be written, and that the file is not damaged; nothing was decided, so the same \
     request can be sent again (with its key) once that is fixed";

/// What to check when a PostgreSQL ledger failed a read or a write.
const POSTGRES_FAILED_CHECK: &str = "Check the server's log for why, that its disk has space, \
     and that the role in the URL may write onejob's tables; nothing was decided, so the same \
     request can be sent again (with its key) once that is fixed";

/// What to check when the kind of ledger is not known.
const ANY_FAILED_CHECK: &str = "Check that the ledger's disk has space and that it may be \
     written; nothing was decided, so the same request can be sent again (with its key)";

impl Error {
    /// `storage` of `kind` for the ledger at `ledger` (its file, or its URL without the
    /// password; `None` where the ledger is not known), `cause` saying what happened in
    /// onejob's words. The one place a storage failure is worded: the message names the
    /// ledger and what to check, never the driver's text or a statement.
    pub fn storage(kind: StorageKind, ledger: Option<&str>, cause: Option<&str>) -> Self {
        let shared = ledger.map(crate::store::postgres::is_url);
        let at = match ledger {
            Some(ledger) => format!("the ledger at {ledger}"),
            None => "the ledger".to_owned(),
        };
        let (state, usual, check) = match (kind, shared) {
            (StorageKind::Unreachable, _) => (
                "is unreachable",
                "its server does not answer",
                UNREACHABLE_CHECK,
            ),
            (StorageKind::Busy, Some(true)) => (
                "is busy",
                "a statement waited too long for a lock, or its server cancelled it",
                POSTGRES_BUSY_CHECK,
            ),
            (StorageKind::Busy, _) => (
                "is busy",
                "another process has held its write lock past the busy timeout",
                SQLITE_BUSY_CHECK,
            ),
            (StorageKind::Failed | StorageKind::Keyring, Some(true)) => (
                "failed",
                "a read or a write did not complete",
                POSTGRES_FAILED_CHECK,
            ),
            (StorageKind::Failed | StorageKind::Keyring, Some(false)) => (
                "failed",
                "a read or a write did not complete",
                SQLITE_FAILED_CHECK,
            ),
            (StorageKind::Failed | StorageKind::Keyring, None) => (
                "failed",
                "a read or a write did not complete",
                ANY_FAILED_CHECK,
            ),
        };
        let cause = cause.unwrap_or(usual);
        Error::Storage {
            message: format!("{at} {state}: {cause}. {check}"),
            details: StorageDetails { kind },
        }
    }

    /// `storage` for the OS keyring that holds the providers' API keys, which is not the
    /// ledger: `message` says what failed there.
    pub fn keyring(message: String) -> Self {
        Error::Storage {
            message,
            details: StorageDetails {
                kind: StorageKind::Keyring,
            },
        }
    }

    /// What failed, when this is a `storage` error.
    pub fn storage_kind(&self) -> Option<StorageKind> {
        match self {
            Error::Storage { details, .. } => Some(details.kind),
            _ => None,
        }
    }

    /// `storage` for a failure of the PostgreSQL ledger at `location` (its URL without the
    /// password). `connect_timeout` is how long a connection was waited for.
    pub fn from_postgres(location: &str, connect_timeout: Duration, e: sqlx::Error) -> Self {
        located(location, true, connect_timeout, e).into()
    }
}

/// `e` carrying the ledger it happened at (`location`, a PostgreSQL one when `postgres`), so
/// that it converts to a `storage` error naming it. Kept as it is: a refusal by one of the
/// schema's constraints, which the caller reads (a key taken, a provider not configured), and
/// a failure that already names its ledger.
pub(crate) fn located(
    location: &str,
    postgres: bool,
    connect_timeout: Duration,
    e: sqlx::Error,
) -> sqlx::Error {
    if is_constraint(&e) || at_ledger(&e).is_some() {
        return e;
    }
    let (kind, cause) = classify(&e, postgres, connect_timeout);
    at(kind, location, cause)
}

/// A failure at the ledger at `location`, of `kind`, `cause` in onejob's words, as a `sqlx`
/// error that converts to the `storage` error naming it.
pub(crate) fn at(kind: StorageKind, location: &str, cause: Option<String>) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(AtLedger {
        kind,
        ledger: location.to_owned(),
        cause,
    }))
}

/// A failure already said in onejob's words, naming its ledger.
#[derive(Debug)]
struct AtLedger {
    kind: StorageKind,
    ledger: String,
    cause: Option<String>,
}

impl std::fmt::Display for AtLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            &Error::storage(self.kind, Some(&self.ledger), self.cause.as_deref()).to_string(),
        )
    }
}

impl std::error::Error for AtLedger {}

/// The failure `e` already names its ledger.
fn at_ledger(e: &sqlx::Error) -> Option<&AtLedger> {
    let sqlx::Error::Io(io) = e else {
        return None;
    };
    io.get_ref()?.downcast_ref::<AtLedger>()
}

/// Whether `e` says its ledger's server is unreachable, in words that name the ledger.
pub(crate) fn is_unreachable(e: &sqlx::Error) -> bool {
    at_ledger(e).is_some_and(|at| at.kind == StorageKind::Unreachable)
}

/// Whether a schema constraint refused the statement (PostgreSQL's class 23, SQLite's
/// `SQLITE_CONSTRAINT` and its extended codes), a refusal the caller reads, not a failure.
fn is_constraint(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    match db.code() {
        Some(code) if is_postgres(e) => code.starts_with("23"),
        Some(code) => code.parse::<i32>().is_ok_and(|c| c & 0xff == 19),
        None => false,
    }
}

fn is_postgres(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>().is_some())
}

/// What `e` says failed on a ledger (a PostgreSQL one when `postgres`), and why in onejob's
/// words where they add something: never the driver's own text.
fn classify(
    e: &sqlx::Error,
    postgres: bool,
    connect_timeout: Duration,
) -> (StorageKind, Option<String>) {
    use StorageKind::{Busy, Failed, Unreachable};
    let said = |kind, cause: &str| (kind, Some(cause.to_owned()));
    match e {
        sqlx::Error::PoolTimedOut if postgres => (
            Unreachable,
            Some(format!(
                "no connection to its server within {} s",
                connect_timeout.as_secs()
            )),
        ),
        sqlx::Error::PoolTimedOut => said(Busy, "no connection to its file was free in time"),
        sqlx::Error::Io(io) if postgres => (
            Unreachable,
            Some(format!(
                "the connection to its server failed ({})",
                io.kind()
            )),
        ),
        sqlx::Error::Tls(_) => said(
            Unreachable,
            "a secure (TLS) connection to its server could not be made",
        ),
        sqlx::Error::PoolClosed => said(Failed, "it was closed"),
        sqlx::Error::Database(db) if is_postgres(e) => {
            let code = db.code().unwrap_or_default();
            match code.as_ref() {
                c if c.starts_with("08") => {
                    said(Unreachable, "the connection to its server failed")
                }
                "57P01" | "57P02" | "57P03" => said(
                    Unreachable,
                    "its server ended the connection (it is shutting down, restarting, or \
                     ended this session)",
                ),
                "53300" => said(Busy, "its server has no connection left for this host"),
                "55P03" | "40001" | "40P01" | "57014" => (Busy, None),
                "53100" => said(Failed, "its server's disk is full"),
                c if c.starts_with("53") => said(Failed, "its server is out of resources"),
                "25006" => said(Failed, "its server is read-only (a standby)"),
                _ => (Failed, None),
            }
        }
        sqlx::Error::Database(db) => {
            let primary = db
                .code()
                .and_then(|code| code.parse::<i32>().ok())
                .map(|code| code & 0xff);
            match primary {
                // SQLITE_BUSY, SQLITE_LOCKED
                Some(5 | 6) => (Busy, None),
                // SQLITE_FULL
                Some(13) => said(
                    Failed,
                    "its disk is full, or the file reached its size limit",
                ),
                // SQLITE_READONLY, SQLITE_PERM, SQLITE_CANTOPEN
                Some(8 | 3 | 14) => said(Failed, "the file cannot be written or opened"),
                // SQLITE_IOERR
                Some(10) => said(Failed, "reading or writing the file failed (an I/O error)"),
                // SQLITE_CORRUPT, SQLITE_NOTADB
                Some(11 | 26) => said(Failed, "the file is damaged, or is not a ledger"),
                _ => (Failed, None),
            }
        }
        _ => (Failed, None),
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        if let Some(at) = at_ledger(&e) {
            return Error::storage(at.kind, Some(&at.ledger), at.cause.as_deref());
        }
        // Not named by its connection: said as well as can be without the ledger's name.
        let postgres = is_postgres(&e) || matches!(e, sqlx::Error::Io(_));
        let (kind, cause) = classify(&e, postgres, Duration::from_secs(5));
        Error::storage(kind, None, cause.as_deref())
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        match e {
            sqlx::migrate::MigrateError::Execute(e) => e.into(),
            other => Error::storage(StorageKind::Failed, None, Some(&migration_words(&other))),
        }
    }
}

/// Why a ledger's schema could not be brought up to date, in onejob's words.
pub(crate) fn migration_words(e: &sqlx::migrate::MigrateError) -> String {
    use sqlx::migrate::MigrateError as M;
    match e {
        M::VersionMissing(version) => format!(
            "its schema has change {version}, which this onejob does not know: it was written by \
             a newer onejob, which can open it"
        ),
        M::VersionMismatch(version) => format!(
            "its schema's change {version} differs from this onejob's: it was written by another \
             build of onejob"
        ),
        M::Dirty(version) => format!(
            "its schema's change {version} was left half-applied; a newer onejob or a person \
             must repair it"
        ),
        _ => "its schema could not be brought up to date".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEDGER: &str = "postgres://alice:***@db.example:5432/ledger";

    fn message(e: &Error) -> &str {
        match e {
            Error::Storage { message, .. } => message,
            other => panic!("not storage: {other:?}"),
        }
    }

    #[test]
    fn a_server_that_cannot_be_reached_is_an_unreachable_ledger_named_by_its_location() {
        let timeout = Duration::from_secs(5);
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        for (e, cause) in [
            (
                sqlx::Error::PoolTimedOut,
                "no connection to its server within 5 s",
            ),
            (
                sqlx::Error::Io(refused),
                "the connection to its server failed",
            ),
        ] {
            let error = Error::from_postgres(LEDGER, timeout, e);
            let text = message(&error);
            assert!(
                text.starts_with(&format!("the ledger at {LEDGER} is unreachable: {cause}")),
                "{text}"
            );
            assert!(
                text.contains("Check that its PostgreSQL server is running"),
                "{text}"
            );
            assert!(!text.contains("pool timed out"), "{text}");
            assert_eq!(error.code(), "storage");
            assert_eq!(error.http_status(), 503);
            assert_eq!(error.storage_kind(), Some(StorageKind::Unreachable));
        }
    }

    #[test]
    fn other_failures_of_a_postgres_ledger_name_it_without_the_drivers_words() {
        let driver = sqlx::Error::RowNotFound.to_string();
        let error = Error::from_postgres(LEDGER, Duration::from_secs(5), sqlx::Error::RowNotFound);
        let text = message(&error);
        assert!(
            text.starts_with(&format!("the ledger at {LEDGER} failed")),
            "{text}"
        );
        assert!(text.contains("Check the server's log"), "{text}");
        assert!(!text.contains(&driver), "{text}");
        assert!(!text.contains("unreachable"), "{text}");
        assert_eq!(error.storage_kind(), Some(StorageKind::Failed));
        assert_eq!(error.http_status(), 503);
    }
}
