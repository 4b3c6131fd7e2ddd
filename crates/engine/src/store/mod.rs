//! Every SQL statement of the engine; nothing outside `store` writes SQL.
//!
//! One interface, two backends: a module per table (`jobs`, `attempts`, …) is what the ledger
//! calls, and each of its operations runs the statement of the ledger's backend, kept in its
//! own file, `sqlite/queries/<table>/<operation>.sql` or `postgres/queries/<table>/<operation>.sql`,
//! so the two can be read side by side. The operations bind the same values in the same
//! order on both; where the dialects differ (placeholders, JSON, time), the files say how.
//! The columns of a whole job or attempt, which many statements return, are written once per
//! backend, in `queries/columns/job.sql` and `queries/columns/attempt.sql`, and a statement
//! names them by a placeholder, `{job_columns}` or `{a.attempt_columns}` (each taken from `a`),
//! which the build fills in (`crates/engine/build.rs`, docs/adr/0058); the statements are
//! included as it writes them out (`query!`).
//! The rows both `jobs` and `attempts` return are in `rows`, and the ids' canonical text in
//! `ids`, so those two modules depend one way: `jobs` uses `attempts`, never the reverse.
//!
//! Times that decide (leases, backoff) are taken from the database's clock: operations take
//! durations, never instants computed on a host.

pub(crate) mod attempts;
pub(crate) mod budgets;
pub(crate) mod bulk;
pub(crate) mod checks;
pub(crate) mod contracts;
pub(crate) mod doctor;
pub(crate) mod events;
pub(crate) mod evidence;
mod ids;
pub(crate) mod jobs;
pub mod postgres;
pub(crate) mod providers;
pub(crate) mod retry_keys;
pub(crate) mod rows;
pub(crate) mod sqlite;
pub(crate) mod tokens;

/// How the build fills in the queries' column lists (`crates/engine/build.rs`), compiled here
/// only for its tests.
#[cfg(test)]
#[path = "../../build/columns.rs"]
mod columns;

use std::sync::Arc;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Sqlite, SqliteConnection};

use postgres::{PgConn, PgTx, Watch};

use crate::error::{Error, Result};

/// How a change feed's task is told to stop before the ledger's other connections close (see
/// `Engine::close`). A feed whose sender is dropped unsent runs on, until every receiver of its
/// changes is gone or the ledger is closed.
pub(crate) struct FeedStop(tokio::sync::oneshot::Receiver<()>);

impl FeedStop {
    /// A signal and the sender that gives it.
    pub(crate) fn new() -> (tokio::sync::oneshot::Sender<()>, FeedStop) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (tx, FeedStop(rx))
    }

    /// Returns once asked to stop; never when the sender was dropped unsent. Not awaited again
    /// after it returned.
    pub(crate) async fn asked(&mut self) {
        if (&mut self.0).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The current time in the ledger's fixed-width UTC text form.
pub(crate) fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A duration as whole milliseconds for a statement, saturating.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A JSON column's text parsed back; the schema's checks make failure a bug.
pub(crate) fn json_column(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or(serde_json::Value::String(text.to_owned()))
}

/// A row that a PostgreSQL statement returns inside one of its columns, as JSON text with the
/// columns the row's own read returns (so a write's statement gives back a second table's row
/// without a second statement); none when the column is NULL.
pub(crate) fn row_in_column<T: serde::de::DeserializeOwned>(
    row: &sqlx::postgres::PgRow,
    column: &str,
) -> sqlx::Result<Option<T>> {
    use sqlx::Row;
    let Some(text) = row.try_get::<Option<String>, _>(column)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| sqlx::Error::ColumnDecode {
            index: column.to_owned(),
            source: Box::new(e),
        })
}

/// One connection of either backend, borrowed for the statements of one operation. A
/// PostgreSQL connection comes with its [`Watch`], which every statement on it runs under; a
/// SQLite one with its file as shown, which its failures name.
pub(crate) enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection, &'c str),
    Postgres(&'c mut PgConnection, &'c Watch),
}

/// Anything the store's operations run on: a transaction, a pooled connection, a borrowed one.
pub(crate) trait Handle: Send {
    /// The connection to run the next statement on.
    fn conn(&mut self) -> Conn<'_>;
}

impl<'c> From<(&'c mut SqliteConnection, &'c str)> for Conn<'c> {
    /// A SQLite connection with its file as shown, as a writer's `parts` gives them.
    fn from((c, at): (&'c mut SqliteConnection, &'c str)) -> Self {
        Conn::Sqlite(c, at)
    }
}

impl<'c> From<(&'c mut PgConnection, &'c Watch)> for Conn<'c> {
    /// A PostgreSQL connection with its watch, as a transaction's or pooled one's `parts`
    /// give them.
    fn from((c, watch): (&'c mut PgConnection, &'c Watch)) -> Self {
        Conn::Postgres(c, watch)
    }
}

impl Handle for Conn<'_> {
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Conn::Sqlite(c, at) => Conn::Sqlite(c, at),
            Conn::Postgres(c, watch) => Conn::Postgres(c, watch),
        }
    }
}

/// A write transaction of either backend; dropped without `commit`, it rolls back.
pub(crate) enum Tx {
    Sqlite(sqlite::WriterGuard),
    Postgres(PgTx),
}

impl Tx {
    /// Commits; nothing the transaction wrote may be reported before this returns `Ok`.
    pub async fn commit(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }

    /// Whether another write of this process waits for this one to end: on SQLite, where the
    /// process writes through one connection, a long writer (a bulk operation) commits what it
    /// has and lets it in. Never on PostgreSQL, whose writers wait only for the rows they share.
    pub fn others_waiting(&self) -> bool {
        match self {
            Tx::Sqlite(tx) => tx.others_waiting(),
            Tx::Postgres(_) => false,
        }
    }

    /// Rolls back at once (dropping it does too, a moment later).
    pub async fn rollback(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.rollback().await,
            Tx::Postgres(tx) => tx.rollback().await,
        }
    }
}

impl Handle for Tx {
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Tx::Sqlite(tx) => tx.parts().into(),
            Tx::Postgres(tx) => tx.parts().into(),
        }
    }
}

impl Tx {
    /// Marks where [`Tx::rollback_to_savepoint`] returns to (one level; each call replaces it).
    pub async fn savepoint(&mut self) -> sqlx::Result<()> {
        self.simple("SAVEPOINT onejob_step").await
    }

    /// Undoes what was written since the savepoint; the transaction goes on, and a statement
    /// that failed since then no longer stands in the way of its commit.
    pub async fn rollback_to_savepoint(&mut self) -> sqlx::Result<()> {
        self.simple("ROLLBACK TO SAVEPOINT onejob_step").await?;
        if let Tx::Postgres(tx) = self {
            tx.parts().1.clear_failed();
        }
        Ok(())
    }

    /// Forgets the savepoint, keeping what was written since.
    pub async fn release_savepoint(&mut self) -> sqlx::Result<()> {
        self.simple("RELEASE SAVEPOINT onejob_step").await
    }

    /// Releases the savepoint and marks a new one, in one round trip.
    pub async fn next_savepoint(&mut self) -> sqlx::Result<()> {
        self.run("RELEASE SAVEPOINT onejob_step; SAVEPOINT onejob_step", true)
            .await
    }

    /// One statement of fixed text on the transaction.
    async fn simple(&mut self, statement: &'static str) -> sqlx::Result<()> {
        self.run(statement, false).await
    }

    /// Runs fixed text on the transaction's connection, its failure named as the backend's
    /// are: one statement as a prepared one, or `several` unprepared in one round trip.
    async fn run(&mut self, sql: &'static str, several: bool) -> sqlx::Result<()> {
        use sqlx::Executor;
        match self {
            Tx::Sqlite(tx) => {
                let (conn, at) = tx.parts();
                let done = if several {
                    conn.execute(sqlx::raw_sql(sql)).await
                } else {
                    sqlx::query(sql).execute(conn).await
                };
                done.map(|_| ()).map_err(|e| sqlite::named(at, e))
            }
            Tx::Postgres(tx) => {
                let (conn, watch) = tx.parts();
                let done = if several {
                    watch.guard(conn.execute(sqlx::raw_sql(sql))).await
                } else {
                    watch.guard(sqlx::query(sql).execute(conn)).await
                };
                done.map(|_| ())
            }
        }
    }
}

/// A connection from a pool, for reads outside a transaction.
pub(crate) enum Pooled {
    /// A reader, and the ledger's file as shown.
    Sqlite(PoolConnection<Sqlite>, Arc<str>),
    Postgres(PgConn),
}

impl Handle for Pooled {
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Pooled::Sqlite(c, at) => Conn::Sqlite(c, at),
            Pooled::Postgres(c) => c.parts().into(),
        }
    }
}

/// The connection for writes outside a group's transaction (see [`Db::write`]). Marked
/// unsettled while its statements may leave a transaction open, and dropped so (its caller went
/// away mid-call), that transaction ends unanswered: rolled back on SQLite's writer before
/// anything else runs on it; on PostgreSQL by closing the connection instead of giving it back.
pub(crate) struct Writing {
    conn: WritingConn,
    settled: bool,
}

enum WritingConn {
    Sqlite(sqlite::WriterGuard),
    Postgres(PgConn),
}

impl Writing {
    /// Says whether the statements run on it have ended every transaction they began.
    pub fn settle(&mut self, settled: bool) {
        self.settled = settled;
        if let WritingConn::Sqlite(writer) = &mut self.conn {
            writer.set_open(!settled);
        }
    }
}

impl Handle for Writing {
    fn conn(&mut self) -> Conn<'_> {
        match &mut self.conn {
            WritingConn::Sqlite(c) => c.parts().into(),
            WritingConn::Postgres(c) => c.parts().into(),
        }
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        if let (false, WritingConn::Postgres(c)) = (self.settled, &mut self.conn) {
            c.close_on_drop();
        }
    }
}

/// The text of query `$file` of one backend (`sqlite` or `postgres`): the file
/// `$file.sql` under that backend's `queries/` folder, with its column lists filled in, as the
/// build wrote it (`crates/engine/build.rs`; a query spells a row's columns as a placeholder,
/// `{job_columns}`, which `queries/columns/job.sql` holds once per backend).
macro_rules! query {
    (sqlite, $file:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/sqlite/queries/", $file, ".sql"))
    };
    (postgres, $file:literal) => {
        include_str!(concat!(
            env!("OUT_DIR"),
            "/postgres/queries/",
            $file,
            ".sql"
        ))
    };
}
pub(crate) use query;

/// Runs `$body` on the handle's backend: `$conn` is that backend's connection and `$sql` the
/// text of `$file` under its `queries/` folder (see [`query!`]). The body is written once and
/// compiled for each backend, so both bind the same values in the same order. On PostgreSQL it
/// runs under the connection's [`Watch`], so a server that stopped answering fails it in
/// seconds; on either, a failure names the ledger.
macro_rules! on_backend {
    ($handle:expr, $file:literal, |$conn:ident, $sql:ident| $body:expr) => {
        match $crate::store::Handle::conn(&mut *$handle) {
            $crate::store::Conn::Sqlite($conn, at) => {
                let $sql: &'static str = $crate::store::query!(sqlite, $file);
                let done: sqlx::Result<_> = async { $body }.await;
                done.map_err(|e| $crate::store::sqlite::named(at, e))
            }
            $crate::store::Conn::Postgres($conn, watch) => {
                let $sql: &'static str = $crate::store::query!(postgres, $file);
                watch.guard(async { $body }).await
            }
        }
    };
}
pub(crate) use on_backend;

/// Both backends' text of `$file`, for an operation whose backends read its rows differently.
macro_rules! queries {
    ($file:literal) => {
        $crate::store::Queries {
            sqlite: $crate::store::query!(sqlite, $file),
            postgres: $crate::store::query!(postgres, $file),
        }
    };
}
pub(crate) use queries;

/// One operation's statement text on each backend.
pub(crate) struct Queries {
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

impl postgres::PgDb {
    /// A failure of this ledger as a `storage` error that names it when its server is
    /// unreachable.
    fn failure(&self, e: sqlx::Error) -> Error {
        Error::from_postgres(&self.location, postgres::CONNECT_TIMEOUT, e)
    }
}

/// The ledger's database, either backend.
#[derive(Clone)]
pub(crate) enum Db {
    Sqlite(sqlite::SqliteDb),
    Postgres(postgres::PgDb),
}

impl Db {
    /// Starts a write transaction. On SQLite it holds the file's write lock from its first
    /// statement (`BEGIN IMMEDIATE`), so what it reads stays true until it commits. On
    /// PostgreSQL it holds nothing by itself (READ COMMITTED, no ledger-wide lock): a
    /// transaction that reads to decide first locks the one job it concerns
    /// (`jobs::lock`, `jobs::lock_skipping`), and every other decision is one guarded
    /// statement. docs/adr/, record 0035, lists each write transaction and why it holds.
    ///
    /// A PostgreSQL server that cannot be reached is a `storage` error naming the ledger
    /// (see [`Error::from_postgres`]), as for `read` and `write`.
    pub async fn begin(&self) -> Result<Tx> {
        Ok(match self {
            Db::Sqlite(db) => Tx::Sqlite(db.writer.begin().await?),
            Db::Postgres(db) => Tx::Postgres(
                PgTx::begin(db.acquire().await.map_err(|e| db.failure(e))?)
                    .await
                    .map_err(|e| db.failure(e))?,
            ),
        })
    }

    /// A connection for reads outside a transaction.
    pub async fn read(&self) -> Result<Pooled> {
        Ok(match self {
            Db::Sqlite(db) => Pooled::Sqlite(
                db.reader
                    .acquire()
                    .await
                    .map_err(|e| sqlite::named(&db.location, e))?,
                db.location.clone(),
            ),
            Db::Postgres(db) => Pooled::Postgres(db.acquire().await.map_err(|e| db.failure(e))?),
        })
    }

    /// A connection for writes outside a group's transaction; on SQLite the writer, so the
    /// write queues in this process instead of in SQLite's busy loop.
    pub async fn write(&self) -> Result<Writing> {
        self.write_held(None).await
    }

    /// On SQLite, waits for the writer and holds it, with nothing begun, for
    /// [`Db::begin_held`] or [`Db::write_held`]; `None` on PostgreSQL, which has no one writer.
    pub async fn hold(&self) -> Result<Option<sqlite::WriterGuard>> {
        Ok(match self {
            Db::Sqlite(db) => Some(db.writer.lock().await?),
            Db::Postgres(_) => None,
        })
    }

    /// [`Db::begin`] on the writer [`Db::hold`] gave, if it gave one.
    pub async fn begin_held(&self, held: Option<sqlite::WriterGuard>) -> Result<Tx> {
        match (self, held) {
            (Db::Sqlite(_), Some(writer)) => Ok(Tx::Sqlite(writer.begin().await?)),
            _ => self.begin().await,
        }
    }

    /// [`Db::write`] on the writer [`Db::hold`] gave, if it gave one.
    pub async fn write_held(&self, held: Option<sqlite::WriterGuard>) -> Result<Writing> {
        Ok(Writing {
            conn: match (self, held) {
                (Db::Sqlite(_), Some(writer)) => WritingConn::Sqlite(writer),
                (Db::Sqlite(db), None) => WritingConn::Sqlite(db.writer.lock().await?),
                (Db::Postgres(db), _) => {
                    WritingConn::Postgres(db.acquire().await.map_err(|e| db.failure(e))?)
                }
            },
            settled: true,
        })
    }

    /// Waits for running statements, then closes every connection.
    pub async fn close(&self) {
        match self {
            Db::Sqlite(db) => {
                db.writer.close().await;
                db.reader.close().await;
            }
            Db::Postgres(db) => db.pool.close().await,
        }
    }
}

#[cfg(test)]
mod query_trees;
