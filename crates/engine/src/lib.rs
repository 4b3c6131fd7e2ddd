//! onejob-engine: exactly one result per intent, on an embedded SQLite ledger.
//!
//! The engine owns every rule of SPEC.md; the desktop app and the CLI only call it.
//! Person-facing calls take an owner and see only that owner's jobs; calls meant for the
//! executor (claiming, sending, completing) act on ids alone.

pub mod attempt;
pub mod contracts;
pub mod error;
pub mod events;
pub mod executor;
pub mod failure;
pub mod intent;
pub mod job;
mod ledger;
pub mod model;
pub mod policy;
pub mod providers;
pub mod sandbox;
pub mod store;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::sync::Notify;

pub use attempt::{AttemptState, Cause};
pub use error::{Error, Result};
pub use events::EventKind;
pub use failure::{FailureKind, RetryHere};
pub use intent::Intent;
pub use job::JobStatus;
pub use ledger::{AddedContract, Claim};
pub use model::*;
pub use providers::keys::KeyStatus;
pub use providers::{Provider, ProviderConfig, ProviderKind};

/// The desktop app's identifier; its data directory is named after it.
pub const APP_IDENTIFIER: &str = "dev.onejob.app";
/// How long SQLite waits for another writer before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// The default page size of `jobs`, and the largest accepted.
pub const DEFAULT_PAGE: u32 = 50;
pub const MAX_PAGE: u32 = 1000;
/// The longest text `JobsQuery::search` accepts: an idempotency key is at most this long.
pub const MAX_SEARCH: usize = 255;

/// The database the desktop app uses, and the CLI's default: `<data dir>/dev.onejob.app/onejob.db`.
pub fn default_db_path() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join(APP_IDENTIFIER)
        .join("onejob.db")
}

/// A handle on one ledger file. Cheap to clone; every clone shares the pools.
#[derive(Clone)]
pub struct Engine {
    /// One connection: writes in this process queue here instead of in SQLite's busy loop.
    writer: SqlitePool,
    reader: SqlitePool,
    path: PathBuf,
    work: Arc<Notify>,
    options: SqliteConnectOptions,
    /// Where submits wait for their group commit (see `ledger/submit.rs`).
    submits: Arc<ledger::SubmitQueue>,
}

/// A filter and a position for `jobs`; the filters also narrow `count_jobs`.
#[derive(Debug, Clone, Default)]
pub struct JobsQuery {
    /// Only jobs in this status.
    pub status: Option<JobStatus>,
    /// Only jobs whose idempotency key or id starts with this text (case-sensitive for the key; an id prefix is matched case-insensitively since ids are lowercase hex UUIDs).
    /// Empty or only whitespace: no filter. At most 255 characters.
    pub search: Option<String>,
    /// Only jobs that ran an attempt at this provider or whose route names it.
    /// An attempt counts wherever it ran (a person's retry may run a job outside its route),
    /// and still after the provider is removed. Empty or only whitespace: no filter.
    pub provider: Option<String>,
    /// Return jobs after this cursor (the `next` of the previous page).
    pub after: Option<String>,
    pub limit: Option<u32>,
    /// Oldest first instead of newest first: the far end of the list in one page.
    pub oldest_first: bool,
}

/// How a ledger file is opened; the defaults are what the app and the CLI use.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// How long a write waits for another process's write lock before it fails (`storage`).
    pub busy_timeout: Duration,
    /// A cap on the file's size in pages; a write past it fails with `storage` as on a full
    /// disk. `None` leaves SQLite's own limit.
    pub max_page_count: Option<u32>,
}

/// A ledger is a file path. A value that reads as a URL (`scheme://…`) is refused with
/// `invalid_input` (field `db`) instead of becoming a folder named after its scheme; the
/// message names only the scheme, so a password in the URL is never repeated.
fn refuse_urls(path: &Path) -> Result<()> {
    let Some(text) = path.to_str() else {
        return Ok(());
    };
    let Some((scheme, _)) = text.split_once("://") else {
        return Ok(());
    };
    // One letter is a drive (C://), not a scheme.
    let is_scheme = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme {
        return Ok(());
    }
    let why = if matches!(
        scheme.to_ascii_lowercase().as_str(),
        "postgres" | "postgresql"
    ) {
        format!(
            "{scheme}:// names a PostgreSQL ledger, which this version cannot open yet; \
             give a file path for an embedded SQLite ledger"
        )
    } else {
        format!("{scheme}:// is not a ledger onejob can open; give a file path")
    };
    Err(Error::invalid_input("db", why))
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            busy_timeout: BUSY_TIMEOUT,
            max_page_count: None,
        }
    }
}

impl Engine {
    /// Opens (creating if needed) the ledger at `path`, brings its schema up to date, and
    /// turns `in_flight` attempts whose lease expired into `unknown` (SPEC §9).
    pub async fn open(path: impl AsRef<Path>) -> Result<Engine> {
        Engine::open_with(path, OpenOptions::default()).await
    }

    /// [`Engine::open`] with options.
    pub async fn open_with(path: impl AsRef<Path>, open: OpenOptions) -> Result<Engine> {
        let path = path.as_ref().to_path_buf();
        refuse_urls(&path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::Storage {
                message: format!("cannot create {}: {e}", dir.display()),
                details: error::EmptyDetails {},
            })?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(open.busy_timeout);
        let options = match open.max_page_count {
            Some(pages) => options.pragma("max_page_count", pages.to_string()),
            None => options,
        };
        // A local file needs no liveness ping on every acquire.
        let writer = connect(
            SqlitePoolOptions::new()
                .test_before_acquire(false)
                .max_connections(1),
            &options,
        )
        .await?;
        let reader = connect(
            SqlitePoolOptions::new()
                .test_before_acquire(false)
                .max_connections(4),
            &options,
        )
        .await?;
        let work = Arc::new(Notify::new());
        let submits = Arc::new(ledger::SubmitQueue::new(writer.clone(), work.clone()));
        let engine = Engine {
            writer,
            reader,
            path,
            work,
            options,
            submits,
        };
        engine.migrate().await?;
        engine.recover_expired_leases().await?;
        Ok(engine)
    }

    /// The ledger file this engine uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Resolves when there may be new work for the executor (a submit, a resolution).
    pub async fn work_available(&self) {
        self.work.notified().await;
    }

    fn wake_executor(&self) {
        wake(&self.work);
    }

    /// A counter that rises whenever the ledger changes, whoever changed it (this process or
    /// another one sharing the file); it is checked every `every`. Faces use it to refresh
    /// what they show instead of polling the tables.
    pub async fn changes(&self, every: Duration) -> Result<tokio::sync::watch::Receiver<u64>> {
        use sqlx::{ConnectOptions, Connection};
        let mut conn = self.options.clone().connect().await?;
        let (tx, rx) = tokio::sync::watch::channel(0u64);
        tokio::spawn(async move {
            let mut seen: Option<i64> = None;
            loop {
                let version = sqlx::query_scalar::<_, i64>("PRAGMA data_version")
                    .fetch_one(&mut conn)
                    .await;
                match version {
                    Ok(v) if seen != Some(v) => {
                        if seen.is_some() {
                            tx.send_modify(|n| *n += 1);
                        }
                        seen = Some(v);
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
                if tx.is_closed() {
                    break;
                }
                tokio::time::sleep(every).await;
            }
            let _ = conn.close().await;
        });
        Ok(rx)
    }

    /// Closes both pools, waiting for running statements.
    pub async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
    }

    async fn migrate(&self) -> Result<()> {
        // Several processes may open a new file at once; the loser of a migration race
        // finds the schema applied on its next try.
        let mut tries = 0;
        loop {
            match sqlx::migrate!("../../migrations").run(&self.writer).await {
                Ok(()) => return Ok(()),
                Err(_) if tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(25 * tries)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Starts a write transaction holding SQLite's write lock from its first statement, so
    /// what it reads stays true until it commits.
    async fn begin(&self) -> Result<Transaction<'static, Sqlite>> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }
}

/// Wakes every executor of this process waiting for work, and the next one to wait.
fn wake(work: &Notify) {
    work.notify_waiters();
    work.notify_one();
}

/// Connects a pool, retrying while another process holds the lock that switching a new file
/// to WAL needs: SQLite does not wait for that lock through the busy timeout.
async fn connect(pool: SqlitePoolOptions, options: &SqliteConnectOptions) -> Result<SqlitePool> {
    let mut tries: u64 = 0;
    loop {
        match pool.clone().connect_with(options.clone()).await {
            Ok(pool) => return Ok(pool),
            Err(sqlx::Error::Database(e)) if is_busy(&*e) && tries < 100 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(10 * tries.min(20))).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn is_busy(e: &dyn sqlx::error::DatabaseError) -> bool {
    // SQLITE_BUSY is 5; extended codes keep it in the low byte.
    e.code()
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| c & 0xff == 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_database_lives_in_the_app_data_dir() {
        let path = default_db_path();
        assert!(
            path.ends_with("dev.onejob.app/onejob.db"),
            "{}",
            path.display()
        );
    }
}
