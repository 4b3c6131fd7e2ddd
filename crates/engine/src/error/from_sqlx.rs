//! The database driver's failures as `storage` errors: classified by what failed, worded in
//! onejob's terms, and naming the ledger they happened at; a constraint's refusal is kept as
//! it is, for its caller to read.

use std::time::Duration;

use super::{Error, StorageKind};

impl Error {
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
