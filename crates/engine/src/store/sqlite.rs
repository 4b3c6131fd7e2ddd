//! The embedded backend: one SQLite file in WAL mode, the default ledger. Writers in this
//! process queue on one connection; `BEGIN IMMEDIATE` takes the file's write lock at once, so
//! what a transaction reads stays true until it commits, across processes too.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::OpenOptions;

/// The pools of one ledger file.
#[derive(Clone)]
pub struct SqliteDb {
    /// One connection: writes in this process queue here instead of in SQLite's busy loop.
    pub writer: SqlitePool,
    pub reader: SqlitePool,
    /// For the connection `changes` keeps of its own.
    options: Arc<SqliteConnectOptions>,
}

impl SqliteDb {
    /// Opens (creating if needed) the file at `path` and brings its schema up to date.
    pub async fn open(path: &Path, open: &OpenOptions) -> Result<SqliteDb> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::Storage {
                message: format!("cannot create {}: {e}", dir.display()),
                details: crate::error::EmptyDetails {},
            })?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
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
        let db = SqliteDb {
            writer,
            reader,
            options: Arc::new(options),
        };
        db.migrate().await?;
        Ok(db)
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

    /// A counter that rises whenever the file changes, whoever changed it: SQLite's
    /// `data_version`, read on a connection of its own every `every`.
    pub async fn changes(&self, every: Duration) -> Result<watch::Receiver<u64>> {
        use sqlx::{ConnectOptions, Connection};
        let mut conn = self.options.connect().await?;
        let (tx, rx) = watch::channel(0u64);
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
