//! Whether the app's ledger is open and answering, and what the window says when it is not:
//! a ledger that could not be opened at start (why, and what can be done), and a ledger that
//! stopped answering while the app ran (since when; retried until it answers again). On a
//! PostgreSQL ledger it also names the host written to, and since when after a failover.
//!
//! A ledger that cannot be opened never stops the app: the window opens and says which
//! ledger, what failed and what to check. A PostgreSQL server that does not answer is tried
//! again in the background and the app continues by itself once it does; a file that is not
//! a database is left as it is until a person asks to move it aside.
//!
//! - this file: the status the window shows, and why a ledger is not open.
//! - `outage.rs`: a ledger that stops answering while the app runs, watched until it answers.
//! - `reopen.rs`: opening again a ledger that was not open (tried again, chosen anew, or a
//!   new one made where an unreadable file was moved aside).

mod outage;
mod reopen;

pub use outage::{watch_outages, Outage};
pub use reopen::{aside_name, move_aside, not_opened, open_instead, try_again, MovedAside};

use std::path::Path;
use std::time::Duration;

use onejob_engine::error::StorageKind;
use onejob_engine::Error;
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager, Runtime};
use tauri_specta::Event;

use crate::AppState;

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// The longest wait between two tries of a ledger that does not answer.
const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// What the window shows about its ledger; sent whenever it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct LedgerStatus {
    /// The ledger: the file, or the PostgreSQL URL without its password.
    pub location: String,
    /// Whether it is a PostgreSQL ledger shared with other hosts.
    pub shared: bool,
    /// On an open PostgreSQL ledger, the host written to now; null on a file, or when no
    /// ledger is open.
    pub primary: Option<Primary>,
    pub state: LedgerState,
}

/// The host a PostgreSQL ledger is written to (its primary), and since when, once it moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
pub struct Primary {
    /// `host:port`.
    pub host: String,
    /// When onejob found this host the primary after another one was (RFC 3339): set after a
    /// failover to a standby, null while it is the host found when the ledger opened.
    pub since: Option<String>,
}

/// Open and answering, open but not answering, or not open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "is", rename_all = "snake_case")]
pub enum LedgerState {
    /// Open, and its last read answered.
    Open,
    /// Open, but it stopped answering at `since` (RFC 3339); tried again until it answers.
    Unreachable {
        since: String,
        /// What failed, in the engine's words.
        message: String,
    },
    /// Not open since `since` (RFC 3339): `problem` says why, `message` what failed;
    /// `retrying` when it is tried again in the background.
    NotOpen {
        problem: Problem,
        since: String,
        message: String,
        retrying: bool,
    },
}

/// Why a ledger is not open, for what the window offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// The file chosen in Settings is not there (an unmounted drive, a removed file).
    Missing,
    /// The file is there but is not a database: it can be moved aside for a new ledger.
    NotADatabase,
    /// The PostgreSQL server did not answer: tried again in the background.
    Unreachable,
    /// Anything else: a refused login, a missing database, a damaged schema.
    Failed,
}

/// A ledger that is not open, and why.
#[derive(Debug, Clone)]
pub struct NotOpen {
    /// What to open: the file or URL as named, which may carry a password (never shown).
    pub target: String,
    pub problem: Problem,
    pub message: String,
    pub since: chrono::DateTime<chrono::Local>,
}

impl NotOpen {
    /// The file chosen in Settings at `target` is gone.
    pub fn missing(target: &str) -> NotOpen {
        NotOpen {
            target: target.to_owned(),
            problem: Problem::Missing,
            message: format!(
                "the file chosen in Settings, {target}, is not there (was its drive unmounted, or \
                 the file moved?); onejob did not make a new, empty ledger in its place"
            ),
            since: chrono::Local::now(),
        }
    }

    /// Opening `target` failed with `error`: why, as far as can be told without changing it.
    pub fn failed(target: &str, error: &Error) -> NotOpen {
        let message = error.to_string();
        let problem = if onejob_engine::store::postgres::is_url(target) {
            // A server that refused or did not answer the connection is tried again.
            if error.storage_kind() == Some(StorageKind::Unreachable) {
                Problem::Unreachable
            } else {
                Problem::Failed
            }
        } else if is_not_a_database(Path::new(target)) {
            Problem::NotADatabase
        } else {
            Problem::Failed
        };
        NotOpen {
            target: target.to_owned(),
            problem,
            message,
            since: chrono::Local::now(),
        }
    }

    /// The ledger as it may be shown: a URL without its password.
    pub fn location(&self) -> String {
        onejob_engine::store::postgres::redact(&self.target)
    }

    /// The error every command but Settings' answers while no ledger is open.
    pub fn error(&self) -> Error {
        let kind = match self.problem {
            Problem::Unreachable => StorageKind::Unreachable,
            Problem::Missing | Problem::NotADatabase | Problem::Failed => StorageKind::Failed,
        };
        crate::ledger::storage(
            kind,
            format!(
            "no ledger is open: the ledger at {} could not be opened ({}); the window says what \
             can be done",
            self.location(),
            self.message
        ),
        )
    }
}

/// Whether the file at `path` is there, holds something, and is not a SQLite database. An
/// empty file is a new database to SQLite, so it does not count.
pub fn is_not_a_database(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(SQLITE_HEADER.len());
    match file
        .by_ref()
        .take(SQLITE_HEADER.len() as u64)
        .read_to_end(&mut head)
    {
        Ok(0) | Err(_) => false,
        Ok(_) => head.as_slice() != SQLITE_HEADER.as_slice(),
    }
}

impl AppState {
    /// The open ledger's primary, when it is a PostgreSQL ledger.
    fn primary(&self) -> Option<Primary> {
        let primary = self.engine().ok()?.primary()?;
        Some(Primary {
            host: primary.host,
            since: primary
                .since
                .map(|at| chrono::DateTime::<chrono::Local>::from(at).to_rfc3339()),
        })
    }

    /// Whether the ledger's primary is another than the one the window was last told of (a
    /// failover since).
    pub(crate) fn primary_moved(&self) -> bool {
        let told = self.told_primary.lock().unwrap_or_else(|p| p.into_inner());
        self.primary() != *told
    }

    /// The status the window shows; every status computed goes to the window, so its primary
    /// is the one the window was last told of.
    pub fn status(&self) -> LedgerStatus {
        let location = self.location();
        let shared = onejob_engine::store::postgres::is_url(&location);
        let state = match self.not_open() {
            Some(why) => LedgerState::NotOpen {
                problem: why.problem,
                since: why.since.to_rfc3339(),
                message: why.message,
                retrying: why.problem == Problem::Unreachable,
            },
            None => match self.outage.current() {
                Some((since, message)) => LedgerState::Unreachable {
                    since: since.to_rfc3339(),
                    message,
                },
                None => LedgerState::Open,
            },
        };
        let primary = self.primary();
        self.told_primary
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone_from(&primary);
        LedgerStatus {
            location,
            shared,
            primary,
            state,
        }
    }
}

/// Tells the window the ledger's status.
pub fn announce<R: Runtime>(app: &AppHandle<R>) {
    let status = app.state::<AppState>().status();
    if let Err(e) = status.emit(app) {
        eprintln!("onejob: cannot tell the window the ledger's status: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_with_something_other_than_sqlite_in_it_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("noise"), b"\x07\x99 not a database at all").unwrap();
        std::fs::write(path("short"), b"abc").unwrap();
        std::fs::write(path("empty"), b"").unwrap();
        let mut sqlite = SQLITE_HEADER.to_vec();
        sqlite.extend([0u8; 84]);
        std::fs::write(path("sqlite"), &sqlite).unwrap();
        assert!(is_not_a_database(&path("noise")));
        assert!(is_not_a_database(&path("short")));
        assert!(!is_not_a_database(&path("empty")), "SQLite makes one there");
        assert!(!is_not_a_database(&path("sqlite")));
        assert!(!is_not_a_database(&path("absent")));
    }
}
