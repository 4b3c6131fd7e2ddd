//! The constructors of the error union, each wording its message; `storage`'s says which
//! ledger failed and what to check.

use super::{
    EmptyDetails, Error, FieldDetails, NotFoundDetails, StorageDetails, StorageKind,
    TransitionDetails,
};

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
}
