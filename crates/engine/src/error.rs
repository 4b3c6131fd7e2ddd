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
    /// The database failed.
    #[error("{message}")]
    Storage {
        message: String,
        details: EmptyDetails,
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
            Error::Storage { .. } | Error::Provider { .. } | Error::Internal { .. } => 500,
        }
    }
}

impl Error {
    /// `storage` for a failure of the PostgreSQL ledger at `location` (its URL without the
    /// password): a server that cannot be reached, or that ended the connection, is said in
    /// words, naming the ledger and what to check; any other failure as `From` words it.
    /// `connect_timeout` is how long a connection was waited for.
    pub fn from_postgres(location: &str, connect_timeout: Duration, e: sqlx::Error) -> Self {
        match unreachable_cause(&e, connect_timeout) {
            Some(cause) => Error::Storage {
                message: unreachable_words(location, &cause),
                details: EmptyDetails {},
            },
            None => e.into(),
        }
    }

    /// `e` worded as [`Error::from_postgres`] words it, naming the ledger at `location`, when
    /// it says the server is unreachable and does not name its ledger yet; kept a `sqlx`
    /// error, which converts to that `storage`: statements fail mid-way where only their
    /// connection knows which ledger it is. `None` for any other failure.
    pub(crate) fn unreachable_at(
        location: &str,
        connect_timeout: Duration,
        e: &sqlx::Error,
    ) -> Option<sqlx::Error> {
        let cause = unreachable_cause(e, connect_timeout)?;
        Some(sqlx::Error::Io(std::io::Error::other(Unreachable(
            unreachable_words(location, &cause),
        ))))
    }
}

/// What a person reads when the PostgreSQL ledger at `location` is unreachable for `cause`.
fn unreachable_words(location: &str, cause: &str) -> String {
    format!("the ledger at {location} is unreachable: {cause}. {UNREACHABLE_CHECK}")
}

/// A failure that already says, in full, that a named ledger is unreachable.
#[derive(Debug)]
struct Unreachable(String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

/// The words of a failure that already names its unreachable ledger.
fn named_unreachable(e: &sqlx::Error) -> Option<String> {
    let sqlx::Error::Io(io) = e else {
        return None;
    };
    io.get_ref()?
        .downcast_ref::<Unreachable>()
        .map(|u| u.0.clone())
}

/// What a person should check, and expect, while a PostgreSQL ledger is unreachable.
const UNREACHABLE_CHECK: &str = "Check that its PostgreSQL server is running and that this \
     host can reach it (host, port, firewall); onejob reconnects by itself, so the same request \
     can be sent again in a few seconds";

/// Why a PostgreSQL ledger's server is unreachable, when `e` says it is: no connection within
/// the timeout, a connection that failed or was cut, or the server ending its sessions (a
/// shutdown, a crash, a start not yet finished: SQLSTATE class 08 and 57P01–57P03). `None`
/// also for a failure that already names its ledger.
fn unreachable_cause(e: &sqlx::Error, connect_timeout: Duration) -> Option<String> {
    if named_unreachable(e).is_some() {
        // Said already, naming its ledger: `From` words it as it is.
        return None;
    }
    match e {
        sqlx::Error::PoolTimedOut => Some(format!(
            "no connection to its server within {} s",
            connect_timeout.as_secs()
        )),
        sqlx::Error::Io(io) => Some(format!("the connection to its server failed ({io})")),
        sqlx::Error::Database(_) if ends_the_connection(e) => Some(format!(
            "its server ended the connection ({})",
            database_message(e)
        )),
        _ => None,
    }
}

/// Whether PostgreSQL reported that it ended, or cannot take, the session.
fn ends_the_connection(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some()
        && db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")
        })
}

fn database_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => db.message().to_owned(),
        other => other.to_string(),
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        let message = if let Some(named) = named_unreachable(&e) {
            named
        } else if is_busy(&e) {
            "the ledger is busy: another process has held its write lock past the busy \
             timeout. Check for another onejob process on this file (the app, a worker, \
             onejob serve) or a tool holding it open in a transaction (sqlite3, a backup), \
             then try again; nothing was written"
                .to_owned()
        } else if ends_the_connection(&e) {
            // Mid-statement, where the ledger's location is not at hand.
            format!(
                "the ledger is unreachable: its PostgreSQL server ended the connection ({}). \
                 {UNREACHABLE_CHECK}",
                database_message(&e)
            )
        } else {
            format!("database: {e}")
        };
        Error::Storage {
            message,
            details: EmptyDetails {},
        }
    }
}

/// Whether SQLite gave up waiting for another connection's lock (`SQLITE_BUSY` and its
/// extended codes: the primary code is the low byte).
fn is_busy(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    // Only SQLite's codes: PostgreSQL's are SQLSTATEs.
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
        && db
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == 5)
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Error::Storage {
            message: format!("migration: {e}"),
            details: EmptyDetails {},
        }
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
            assert_eq!(error.http_status(), 500);
        }
    }

    #[test]
    fn other_failures_of_a_postgres_ledger_keep_their_own_words() {
        let error = Error::from_postgres(LEDGER, Duration::from_secs(5), sqlx::Error::RowNotFound);
        let text = message(&error);
        assert!(text.starts_with("database: "), "{text}");
        assert!(!text.contains("unreachable"), "{text}");
    }
}
