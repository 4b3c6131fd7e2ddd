//! onejob-engine: exactly one result per intent, on an embedded SQLite ledger.
//!
//! The engine owns every rule of SPEC.md; the desktop app, the CLI and the HTTP API only call
//! it. What is public is what those faces use: person-facing calls take an owner and see only
//! that owner's jobs, and [`executor::Executor`] runs the rest. The calls meant for the
//! executor (claiming, sending, completing) act on ids alone and are the crate's own; tests
//! reach them through the `testing` feature's module, which no face builds (docs/adr/0059).

mod attempt;
pub mod bulk;
pub mod contracts;
mod doctor;
pub mod error;
mod events;
pub mod executor;
mod failure;
mod input;
pub mod intent;
mod job;
pub mod known;
mod ledger;
mod model;
pub mod money;
mod policy;
pub mod providers;
pub mod sandbox;
mod shown;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use store::{Db, Tx};

pub use attempt::AttemptState;
pub use bulk::{
    BulkAction, BulkFilter, BulkOperation, BulkProgress, BulkRequest, BulkSkip, BulkStarted,
    BULK_PROVIDERS_NAMED,
};
pub use doctor::{
    Diagnosis, LedgerBackend, LedgerInUse, PostgresServer, Risk, RiskCode, SqliteFile, StandbyInfo,
};
pub use error::{Error, Result};
pub use intent::Intent;
pub use job::JobStatus;
pub use ledger::AddedContract;
pub use model::{
    Actor, Attempt, AttemptError, Event, FeedEvent, FeedPage, Job, JobAttempt, JobDetail, JobError,
    JobPage, JobSummary, JobSummaryPage, OpenJobs, Resolution, Retried, ShownJob, ShownJobDetail,
    Submitted, TokenInfo, Usage, Verdict,
};
pub use money::{Budget, BudgetConfig, BudgetPeriod, Cost, Spend, SpendBy, SpendLine};
pub use providers::keys::KeyStatus;
pub use providers::{Provider, ProviderConfig, ProviderKind};
pub use shown::{JobPart, ShownValue};

/// The desktop app's identifier; its data directory is named after it.
pub const APP_IDENTIFIER: &str = "dev.onejob.app";
/// How long SQLite waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// The default page size of `jobs`, and the largest accepted.
pub const DEFAULT_PAGE: u32 = 50;
pub const MAX_PAGE: u32 = 1000;
/// The longest text `JobsQuery::search` accepts: an idempotency key is at most this long.
pub(crate) const MAX_SEARCH: usize = 255;

/// The database the desktop app uses, and the CLI's default: `<data dir>/dev.onejob.app/onejob.db`.
pub fn default_db_path() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join(APP_IDENTIFIER)
        .join("onejob.db")
}

/// A handle on one ledger: an embedded SQLite file or a shared PostgreSQL database. Cheap to
/// clone; every clone shares the connections.
#[derive(Clone)]
pub struct Engine {
    db: Db,
    /// The file path, or the URL without its password.
    location: String,
    work: Arc<Notify>,
    /// Where submits wait for their group commit (see `ledger/submit/`).
    submits: Arc<ledger::SubmitQueue>,
    /// Where the executor's writes wait for theirs (see `ledger/group/`).
    writes: Arc<ledger::WriteQueue>,
    /// The change feed every face of this engine shares (see [`Engine::changes`]).
    feed: Arc<tokio::sync::Mutex<Feeds>>,
}

/// The change feed handed out now, and the task of every feed started and not yet ended, with
/// the sender that asks it to stop: closing the engine stops them and waits for them before it
/// closes the ledger's other connections, so none of a feed's outlives `close`.
#[derive(Default)]
struct Feeds {
    current: Option<Feed>,
    tasks: Vec<(
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    )>,
}

/// A running change feed: how often it checks a SQLite file (zero on PostgreSQL, which
/// announces each change), and a receiver to hand out copies of.
struct Feed {
    every: Duration,
    changes: tokio::sync::watch::Receiver<u64>,
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
    /// Only jobs whose open attempt has this error kind (the rule of SPEC §6 that made it
    /// `unknown`: `soft_timeout`, `connection_broken`, …). Empty or only whitespace: no filter.
    pub error_kind: Option<String>,
    /// Only jobs created before this time (RFC 3339, or a date `YYYY-MM-DD` for its midnight
    /// UTC). Empty or only whitespace: no filter.
    pub created_before: Option<String>,
    /// Only jobs created after this time (RFC 3339, or a date `YYYY-MM-DD`).
    pub created_after: Option<String>,
    /// Return jobs after this cursor (the `next` of the previous page).
    pub after: Option<String>,
    pub limit: Option<u32>,
    /// Oldest first instead of newest first: the far end of the list in one page.
    pub oldest_first: bool,
}

impl JobsQuery {
    /// The first page of the jobs a bulk operation's filter matches: the Jobs list's filter
    /// and a bulk operation's are one.
    pub fn matching(filter: BulkFilter) -> JobsQuery {
        JobsQuery {
            status: filter.status,
            search: filter.search,
            provider: filter.provider,
            error_kind: filter.error_kind,
            created_before: filter.created_before,
            created_after: filter.created_after,
            ..JobsQuery::default()
        }
    }

    /// The filter of this query, as a bulk operation takes it: its position and size are not
    /// filters.
    pub fn filter(&self) -> BulkFilter {
        BulkFilter {
            status: self.status,
            provider: self.provider.clone(),
            error_kind: self.error_kind.clone(),
            created_before: self.created_before.clone(),
            created_after: self.created_after.clone(),
            search: self.search.clone(),
        }
    }
}

/// How a ledger file is opened; the defaults are what the app and the CLI use.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// How long a write waits for another process's write lock before it fails (`storage`).
    pub busy_timeout: Duration,
    /// A cap on the file's size in pages; a write past it fails with `storage` as on a full
    /// disk. `None` leaves SQLite's own limit.
    pub max_page_count: Option<u32>,
    /// Whether opening turns expired leases into `unknown` before it returns (SPEC §9). A face
    /// that must first see the ledger as it was opens without, then calls
    /// [`Engine::recover_expired_leases`] itself.
    pub recover: bool,
}

/// A ledger is a file path or a `postgres://` URL. Any other value that reads as a URL
/// (`scheme://…`) is refused with `invalid_input` (field `db`) instead of becoming a folder
/// named after its scheme; the message names only the scheme, so a password in the URL is
/// never repeated.
fn refuse_other_urls(text: &str) -> Result<()> {
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
    Err(Error::invalid_input(
        "db",
        format!(
            "{scheme}:// is not a ledger onejob can open; give a file path (an embedded SQLite \
             ledger) or a postgres:// URL (a ledger shared by a team)"
        ),
    ))
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            busy_timeout: BUSY_TIMEOUT,
            max_page_count: None,
            recover: true,
        }
    }
}

impl Engine {
    /// Opens the ledger at `path` and brings its schema up to date: a file path is an embedded
    /// SQLite ledger (created if needed), a `postgres://` or `postgresql://` URL a PostgreSQL
    /// database shared by a team (SPEC §14). Then turns `in_flight` attempts whose lease
    /// expired into `unknown` (SPEC §9).
    pub async fn open(path: impl AsRef<Path>) -> Result<Engine> {
        Engine::open_with(path, OpenOptions::default()).await
    }

    /// [`Engine::open`] with options (`recover` applies to every ledger, the others to a SQLite
    /// file).
    pub async fn open_with(path: impl AsRef<Path>, open: OpenOptions) -> Result<Engine> {
        let path = path.as_ref();
        let text = path.to_str().unwrap_or_default();
        let (db, location) = if store::postgres::is_url(text) {
            let db = store::postgres::PgDb::open(text).await?;
            let location = db.location.clone();
            (Db::Postgres(db), location)
        } else {
            refuse_other_urls(text)?;
            let db = store::sqlite::SqliteDb::open(path, &open).await?;
            (Db::Sqlite(db), path.display().to_string())
        };
        let work = Arc::new(Notify::new());
        let submits = Arc::new(ledger::SubmitQueue::new(db.clone(), work.clone()));
        let writes = Arc::new(ledger::WriteQueue::new(db.clone()));
        let engine = Engine {
            db,
            location,
            work,
            submits,
            writes,
            feed: Arc::default(),
        };
        if open.recover {
            engine.recover_expired_leases().await?;
        }
        Ok(engine)
    }

    /// Where this engine's ledger is: the file path, or the PostgreSQL URL without its
    /// password. Safe to show and to log.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// On a PostgreSQL ledger, the host written to now and, after a failover, since when
    /// (SPEC §14); `None` on a file.
    pub fn primary(&self) -> Option<store::postgres::Primary> {
        match &self.db {
            Db::Postgres(db) => Some(db.primary()),
            Db::Sqlite(_) => None,
        }
    }

    /// Whether the ledger is a shared PostgreSQL database rather than a local file.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.db, Db::Postgres(_))
    }

    /// Resolves when there may be new work for the executor (a submit, a resolution).
    pub(crate) async fn work_available(&self) {
        self.work.notified().await;
    }

    fn wake_executor(&self) {
        wake(&self.work);
    }

    /// A counter that rises whenever the ledger changes, whoever changed it (this process or
    /// another one sharing the ledger). Faces use it to refresh what they show instead of
    /// polling the tables. A SQLite file is checked every `every`; PostgreSQL announces each
    /// change (`LISTEN/NOTIFY`).
    ///
    /// Every caller of one engine (its clones included) shares one feed: one connection
    /// checking the file, or one listening, however many faces watch (the window, its
    /// notifications, the executor, the HTTP API's streams). A caller asking a SQLite file to
    /// be checked more often than the running feed does gets a feed of its own, which later
    /// callers then share. A copy handed out starts at the feed's current count: it announces
    /// changes after the call, not before. The feed ends when the engine is closed (every
    /// copy's `changed` then returns an error), or once every copy and the engine are dropped.
    pub async fn changes(&self, every: Duration) -> Result<tokio::sync::watch::Receiver<u64>> {
        let mut feeds = self.feed.lock().await;
        if let Some(running) = feeds.current.as_ref() {
            // A feed whose task ended (its connection failed for good) is not handed out.
            if running.every <= every && running.changes.has_changed().is_ok() {
                let mut copy = running.changes.clone();
                copy.borrow_and_update();
                return Ok(copy);
            }
        }
        let (stop, stopped) = store::FeedStop::new();
        let ((changes, task), every) = match &self.db {
            Db::Sqlite(db) => (db.changes(every, stopped).await?, every),
            Db::Postgres(db) => (db.changes(stopped).await?, Duration::ZERO),
        };
        feeds.tasks.retain(|(_, task)| !task.is_finished());
        feeds.tasks.push((stop, task));
        feeds.current = Some(Feed {
            every,
            changes: changes.clone(),
        });
        Ok(changes)
    }

    /// Closes every connection, waiting for running statements, and returns once every
    /// connection is closed, a change feed's too. The feeds end first, then the ledger's other
    /// connections one by one: on SQLite the last to close then finds itself alone and removes
    /// the WAL and its index, so nothing of the ledger changes after `close` returns.
    pub async fn close(&self) {
        // A later call to `changes` starts another feed.
        let tasks = {
            let mut feeds = self.feed.lock().await;
            feeds.current = None;
            std::mem::take(&mut feeds.tasks)
        };
        for (stop, task) in tasks {
            let _ = stop.send(());
            let _ = task.await;
        }
        self.db.close().await;
    }

    /// Starts a write transaction (see `Db::begin`: on PostgreSQL the caller locks the job it
    /// concerns before it reads to decide).
    async fn begin(&self) -> Result<Tx> {
        self.db.begin().await
    }

    /// A connection for reads outside a transaction.
    async fn read(&self) -> Result<store::Pooled> {
        self.db.read().await
    }
}

/// Wakes every executor of this process waiting for work, and the next one to wait.
fn wake(work: &Notify) {
    work.notify_waiters();
    work.notify_one();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::store::{Conn, Handle};

    /// Runs `sql` on the transaction, either backend.
    async fn run(tx: &mut Tx, sql: &str) -> sqlx::Result<()> {
        match tx.conn() {
            Conn::Sqlite(c, _) => sqlx::query(sql).execute(c).await.map(|_| ()),
            Conn::Postgres(c, _) => sqlx::query(sql).execute(c).await.map(|_| ()),
        }
    }

    /// Runs `sql` on the transaction through the store's watch, as every statement of the
    /// store runs on PostgreSQL.
    async fn watched(tx: &mut Tx, sql: &'static str) -> sqlx::Result<()> {
        match tx.conn() {
            Conn::Sqlite(c, _) => sqlx::query(sql).execute(c).await.map(|_| ()),
            Conn::Postgres(c, watch) => watch.guard(sqlx::query(sql).execute(c)).await.map(|_| ()),
        }
    }

    const WRITE: &str = "INSERT INTO providers (name, kind, config, created_at, updated_at) \
         VALUES ('{name}', 'http', '{}', '2026-12-03T00:00:00.000Z', '2026-12-03T00:00:00.000Z')";
    const FAILS: &str = "INSERT INTO providers (name, kind, config, created_at, updated_at) \
         VALUES ('bad', 'no such kind', '{}', '2026-12-03T00:00:00.000Z', '2026-12-03T00:00:00.000Z')";

    async fn written(engine: &Engine, name: &str) -> bool {
        let mut conn = engine.read().await.unwrap();
        let sql = format!("SELECT count(*) FROM providers WHERE name = '{name}'");
        let n: i64 = match conn.conn() {
            Conn::Sqlite(c, _) => sqlx::query_scalar(&sql).fetch_one(c).await.unwrap(),
            Conn::Postgres(c, _) => sqlx::query_scalar(&sql).fetch_one(c).await.unwrap(),
        };
        n == 1
    }

    /// A statement that fails on PostgreSQL aborts its transaction, and the server answers the
    /// `COMMIT` with `ROLLBACK`, which sqlx reports as success. Should a caller ever swallow such
    /// an error, the store refuses the commit, so nothing rolled back is reported written (an
    /// acknowledged move to in flight that was not kept would be sent a second time). A
    /// savepoint the transaction went back to clears the failure. On SQLite a failed statement
    /// undoes itself alone, and the rest of the transaction commits as reported.
    #[tokio::test]
    async fn a_commit_after_a_swallowed_statement_error_never_reports_what_was_rolled_back() {
        let dir = tempfile::tempdir().unwrap();
        let location = onejob_testkit::ledger_location(&dir.path().join("ledger.db"));
        let engine = Engine::open(&location).await.unwrap();
        let postgres = location.starts_with("postgres://");

        let mut tx = engine.begin().await.unwrap();
        run(&mut tx, &WRITE.replace("{name}", "first"))
            .await
            .unwrap();
        let swallowed = watched(&mut tx, FAILS).await;
        assert!(swallowed.is_err(), "the statement fails");
        let committed = tx.commit().await;
        if postgres {
            assert!(
                committed.is_err(),
                "a commit the server rolled back is refused"
            );
            assert!(
                !written(&engine, "first").await,
                "and nothing of it is there"
            );
        } else {
            committed.unwrap();
            assert!(written(&engine, "first").await);
        }

        // Gone back to a savepoint, the failed statement is undone alone on both backends.
        let mut tx = engine.begin().await.unwrap();
        run(&mut tx, &WRITE.replace("{name}", "second"))
            .await
            .unwrap();
        tx.savepoint().await.unwrap();
        assert!(watched(&mut tx, FAILS).await.is_err());
        tx.rollback_to_savepoint().await.unwrap();
        tx.commit().await.unwrap();
        assert!(written(&engine, "second").await);
    }

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
