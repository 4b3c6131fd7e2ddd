//! The embedded backend: one SQLite file in WAL mode, the default ledger. Writers in this
//! process queue on one connection; `BEGIN IMMEDIATE` takes the file's write lock at once, so
//! what a transaction reads stays true until it commits, across processes too.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::watch;

use crate::error::{Error, Result, StorageKind};
use crate::OpenOptions;

mod writer;

pub use writer::{Writer, WriterGuard};

/// The connections of one ledger file.
#[derive(Clone)]
pub struct SqliteDb {
    /// One connection: writes in this process queue here instead of in SQLite's busy loop.
    pub writer: Writer,
    pub reader: SqlitePool,
    /// For the connection `changes` keeps of its own.
    options: Arc<SqliteConnectOptions>,
    /// The file's path as shown: every failure on it names it.
    pub location: Arc<str>,
}

impl SqliteDb {
    /// Opens (creating if needed) the file at `path` and brings its schema up to date.
    pub async fn open(path: &Path, open: &OpenOptions) -> Result<SqliteDb> {
        let location: Arc<str> = path.display().to_string().into();
        let failed = |e: sqlx::Error| Error::from(named(&location, e));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                let cause = format!("its folder {} cannot be made ({})", dir.display(), e.kind());
                Error::storage(StorageKind::Failed, Some(&location), Some(&cause))
            })?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(open.busy_timeout)
            .pragma("wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES.to_string());
        let options = match open.max_page_count {
            Some(pages) => options.pragma("max_page_count", pages.to_string()),
            None => options,
        };
        let writer = connect_one(&options, location.clone())
            .await
            .map_err(failed)?;
        migrate(&writer).await?;
        // A local file needs no liveness ping on every acquire. Readers are few and keep small
        // page caches: each reader is a connection, a thread and a cache, resident for the
        // app's life, and in WAL mode a reader's cache is dropped whenever another connection
        // commits, so a large one rarely pays for itself (docs/adr/, record 0023).
        let reader = connect(
            SqlitePoolOptions::new()
                .test_before_acquire(false)
                .max_connections(READERS),
            &options
                .clone()
                .pragma("cache_size", READER_CACHE_KIB.to_string()),
        )
        .await
        .map_err(failed)?;
        Ok(SqliteDb {
            writer,
            reader,
            options: Arc::new(options),
            location,
        })
    }

    /// A counter that rises whenever the file changes, whoever changed it: SQLite's
    /// `data_version`, read on a connection of its own every `every`, until every receiver is
    /// gone, `stop` is asked, or the ledger is closed; and the task reading it, which closes
    /// that connection before it ends.
    pub(crate) async fn changes(
        &self,
        every: Duration,
        mut stop: super::FeedStop,
    ) -> Result<(watch::Receiver<u64>, tokio::task::JoinHandle<()>)> {
        use sqlx::{ConnectOptions, Connection};
        let mut conn = self
            .options
            .connect()
            .await
            .map_err(|e| named(&self.location, e))?;
        let (tx, rx) = watch::channel(0u64);
        let closed = self.reader.close_event();
        let task = tokio::spawn(async move {
            tokio::pin!(closed);
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
                tokio::select! {
                    () = &mut closed => break,
                    () = stop.asked() => break,
                    () = tokio::time::sleep(every) => {}
                }
            }
            let _ = conn.close().await;
        });
        Ok((rx, task))
    }
}

/// How many pages the WAL holds before the commit that passes it copies them back into the
/// file: 2,500, against SQLite's default of 1,000. Each checkpoint slows two commits: the one
/// that runs it waits for the database file's fsync, and the next, which starts the WAL over,
/// for the fsync of the WAL's new header. A commit of the ledger writes about eleven pages, so
/// at 2,500 that is two commits in about 230, under 1%, and a sequential submit's p99 is an
/// ordinary commit. Measured in `docs/perf/submit.md`; decided in `docs/adr/`, record 0027.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 2_500;

/// Connections for reads at once.
const READERS: u32 = 2;

/// Each reader's page cache: 512 KiB (a negative `cache_size` is in KiB; SQLite's default is
/// 2,000 KiB).
const READER_CACHE_KIB: i32 = -512;

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// Brings the file's schema up to date on `conn`.
async fn migrate(conn: &Writer) -> Result<()> {
    let location = &conn.location;
    // Several processes may open a new file at once; the loser of a migration race finds the
    // schema applied on its next try.
    let mut tries = 0;
    loop {
        let mut writer = conn.lock().await?;
        match MIGRATOR.run_direct(writer.conn()).await {
            Ok(()) => return Ok(()),
            Err(_) if tries < 20 => {
                drop(writer);
                tries += 1;
                tokio::time::sleep(Duration::from_millis(25 * tries)).await;
            }
            Err(sqlx::migrate::MigrateError::Execute(e)) => return Err(named(location, e).into()),
            Err(e) => {
                let cause = crate::error::migration_words(&e);
                return Err(Error::storage(
                    StorageKind::Failed,
                    Some(location),
                    Some(&cause),
                ));
            }
        }
    }
}

/// `e`, a failure of the ledger file at `location`, worded to name it (a constraint's refusal
/// is kept as it is, for its caller to read).
pub fn named(location: &str, e: sqlx::Error) -> sqlx::Error {
    crate::error::located(location, false, Duration::ZERO, e)
}

/// Connects a pool, retrying while another process holds the lock that switching a new file
/// to WAL needs: SQLite does not wait for that lock through the busy timeout.
async fn connect(
    pool: SqlitePoolOptions,
    options: &SqliteConnectOptions,
) -> sqlx::Result<SqlitePool> {
    busy_retried(|| {
        let (pool, options) = (pool.clone(), options.clone());
        async move { pool.connect_with(options).await }
    })
    .await
}

/// Opens one connection, retried as [`connect`] retries a pool's.
async fn connect_one(options: &SqliteConnectOptions, location: Arc<str>) -> sqlx::Result<Writer> {
    use sqlx::ConnectOptions;
    let conn = busy_retried(|| {
        let options = options.clone();
        async move { options.connect().await }
    })
    .await?;
    Ok(Writer::new(conn, location))
}

async fn busy_retried<T, F>(mut attempt: impl FnMut() -> F) -> sqlx::Result<T>
where
    F: std::future::Future<Output = sqlx::Result<T>>,
{
    let mut tries: u64 = 0;
    loop {
        match attempt().await {
            Ok(done) => return Ok(done),
            Err(sqlx::Error::Database(e)) if is_busy(&*e) && tries < 100 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(10 * tries.min(20))).await;
            }
            Err(e) => return Err(e),
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
    #![allow(clippy::unwrap_used)]

    use super::*;
    use sqlx::{ConnectOptions, Connection};

    /// A transaction dropped without its commit is undone, and the file's write lock is let go
    /// at once, not when this process next writes: another process's writer gets in.
    const INSERT: &str = "INSERT INTO providers (name, kind, config, created_at, updated_at) \
                          VALUES (?1, 'sandbox', '{}', 'now', 'now')";

    #[tokio::test]
    async fn a_transaction_dropped_unfinished_is_rolled_back_and_frees_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let db = SqliteDb::open(&path, &OpenOptions::default())
            .await
            .unwrap();
        let mut tx = db.writer.begin().await.unwrap();
        sqlx::query(INSERT)
            .bind("left")
            .execute(tx.conn())
            .await
            .unwrap();
        drop(tx);

        let other = SqliteConnectOptions::new()
            .filename(&path)
            .busy_timeout(Duration::from_secs(10));
        let mut other = other.connect().await.unwrap();
        let mut theirs = other.begin().await.unwrap();
        sqlx::query(INSERT)
            .bind("theirs")
            .execute(&mut *theirs)
            .await
            .unwrap();
        theirs.commit().await.unwrap();

        let mut writer = db.writer.lock().await.unwrap();
        let names: Vec<String> =
            sqlx::query_scalar("SELECT name FROM providers WHERE name IN ('left', 'theirs')")
                .fetch_all(writer.conn())
                .await
                .unwrap();
        assert_eq!(names, ["theirs"]);
    }

    /// The writer's commits checkpoint the WAL at the ledger's own length, and so would a
    /// reader's, were it to write.
    #[tokio::test]
    async fn every_connection_checkpoints_at_the_ledgers_wal_length() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("ledger.db"), &OpenOptions::default())
            .await
            .unwrap();
        let pragma = "PRAGMA wal_autocheckpoint";
        let mut writer = db.writer.lock().await.unwrap();
        let on_writer: i64 = sqlx::query_scalar(pragma)
            .fetch_one(writer.conn())
            .await
            .unwrap();
        drop(writer);
        let on_reader: i64 = sqlx::query_scalar(pragma)
            .fetch_one(&db.reader)
            .await
            .unwrap();
        assert_eq!(on_writer, i64::from(WAL_AUTOCHECKPOINT_PAGES));
        assert_eq!(on_reader, i64::from(WAL_AUTOCHECKPOINT_PAGES));
    }

    /// The executor's queue and the questions about open jobs find them through the one
    /// partial index of open jobs, never by scanning every job of the history: SQLite uses a
    /// partial index only for a query that names the index's condition itself.
    #[tokio::test]
    async fn the_queue_and_the_open_jobs_are_read_through_the_index_of_open_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("ledger.db"), &OpenOptions::default())
            .await
            .unwrap();
        let queries = [
            crate::store::query!(sqlite, "jobs/sendable"),
            crate::store::query!(sqlite, "jobs/next_not_before"),
            crate::store::query!(sqlite, "jobs/open_naming_contract"),
            crate::store::query!(sqlite, "jobs/open_naming_provider"),
        ];
        let mut writer = db.writer.lock().await.unwrap();
        for sql in queries {
            let explain = format!("EXPLAIN QUERY PLAN {sql}");
            let mut query = sqlx::query_as::<_, (i64, i64, i64, String)>(&explain);
            if sql.contains("?1") {
                query = query.bind("x");
            }
            let plan: Vec<String> = query
                .fetch_all(writer.conn())
                .await
                .unwrap()
                .into_iter()
                .map(|(_, _, _, detail)| detail)
                .collect();
            let jobs: Vec<&String> = plan
                .iter()
                .filter(|line| line.starts_with("SCAN j") || line.starts_with("SEARCH j"))
                .filter(|line| !line.contains("job_"))
                .collect();
            assert!(!jobs.is_empty(), "{sql}: no access to jobs in {plan:?}");
            for line in jobs {
                assert!(
                    line.contains("INDEX jobs_open_by_status"),
                    "{sql}: {line:?} in {plan:?}"
                );
            }
        }
    }
}
