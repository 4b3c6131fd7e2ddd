//! Whether the ledger's server answers, asked on a new connection when a statement waits long,
//! and the watch every statement of a connection runs under: a statement given up on fails
//! with `storage` and its connection is closed, never handed out again.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{Connection, PgConnection, Postgres};

use crate::error::StorageKind;

use super::{PgDb, CONNECT_TIMEOUT, PATIENCE, PROBE_TIMEOUT};

/// How long one answer serves every statement that waits at once, so a hundred of them ask once.
const PROBE_FRESH: Duration = Duration::from_secs(1);

/// Whether the ledger's server answers, asked on a new connection of its own: one question at a
/// time for the whole process, its answer shared for [`PROBE_FRESH`].
pub(super) struct Liveness {
    /// The ledger's hosts, and the one written to now.
    pub(super) hosts: Arc<super::Hosts>,
    pub(super) location: String,
    pub(super) last: tokio::sync::Mutex<Option<(Instant, bool)>>,
}

impl Liveness {
    /// Whether the server answered a new connection and a `SELECT 1` within [`PROBE_TIMEOUT`]. A
    /// refusal said by the server (too many connections, say) is an answer.
    async fn answers(&self) -> bool {
        let mut last = self.last.lock().await;
        if let Some((at, answered)) = *last {
            if at.elapsed() < PROBE_FRESH {
                return answered;
            }
        }
        let asked = async {
            let mut conn = PgConnection::connect_with(&self.hosts.options()).await?;
            sqlx::query("SELECT 1").execute(&mut conn).await?;
            conn.close().await
        };
        let answered = matches!(
            tokio::time::timeout(PROBE_TIMEOUT, asked).await,
            Ok(Ok(()) | Err(sqlx::Error::Database(_)))
        );
        *last = Some((Instant::now(), answered));
        answered
    }

    /// Waits for `work`. While it waits past [`PATIENCE`], asks whether the server answers,
    /// again every [`PATIENCE`]; `None`, the work given up on, when the server does not.
    pub(super) async fn patiently<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                done = &mut work => return Some(done),
                () = tokio::time::sleep(PATIENCE) => {}
            }
            let answers = tokio::select! {
                biased;
                done = &mut work => return Some(done),
                answers = self.answers() => answers,
            };
            if !answers {
                return None;
            }
        }
    }

    /// The error of a statement given up on.
    fn not_answering(&self) -> sqlx::Error {
        let cause = format!(
            "its server is not answering: a statement had no reply for {} s and a new \
             connection none within {} s. The connection was dropped; what was asked may or may \
             not have been done (a submit of the same key again is recorded once)",
            PATIENCE.as_secs(),
            PROBE_TIMEOUT.as_secs()
        );
        crate::error::at(StorageKind::Unreachable, &self.location, Some(cause))
    }
}

/// What a connection of the ledger carries for the statements run on it: the server's
/// liveness, and whether a statement on it was given up on.
pub struct Watch {
    live: Arc<Liveness>,
    broken: AtomicBool,
    /// A statement failed on the server since the transaction began or last went back to its
    /// savepoint: the server has aborted the transaction, and will answer its `COMMIT` with a
    /// `ROLLBACK` that sqlx reports as success.
    failed: AtomicBool,
}

impl Watch {
    /// Runs one statement (or `BEGIN`, `COMMIT`) on the watched connection. While it waits past
    /// [`PATIENCE`], the server is asked whether it answers, again every [`PATIENCE`]: a wait
    /// on a lock goes on (the database ends a frozen host's transaction after 10 s, and any
    /// statement after 30 s); a server that does not answer fails it with `storage`, and marks
    /// the connection broken so that it is closed instead of given back. A statement that
    /// fails because its connection failed or was ended by the server names the ledger, as a
    /// failed connect does, and its connection is closed too.
    pub async fn guard<T>(
        &self,
        statement: impl Future<Output = sqlx::Result<T>>,
    ) -> sqlx::Result<T> {
        match self.live.patiently(statement).await {
            Some(done) => self.named(done),
            None => {
                self.broken.store(true, Ordering::Relaxed);
                Err(self.live.not_answering())
            }
        }
    }

    /// `done`, with a failure worded to name the ledger (a constraint's refusal is kept as it
    /// is, for its caller to read); a connection whose server is unreachable is then broken.
    fn named<T>(&self, done: sqlx::Result<T>) -> sqlx::Result<T> {
        if let Err(sqlx::Error::Database(_)) = &done {
            self.failed.store(true, Ordering::Relaxed);
        }
        done.map_err(|e| {
            // A host that went read-only was demoted: another may be the primary now.
            if read_only(&e) {
                self.live.hosts.suspect();
            }
            let named = crate::error::located(&self.live.location, true, CONNECT_TIMEOUT, e);
            if crate::error::is_unreachable(&named) {
                self.broken.store(true, Ordering::Relaxed);
                self.live.hosts.suspect();
            }
            named
        })
    }

    /// Forgets a failed statement: the transaction began anew, or went back to its savepoint.
    pub(crate) fn clear_failed(&self) {
        self.failed.store(false, Ordering::Relaxed);
    }

    /// Whether a statement failed on the server since [`Watch::clear_failed`].
    pub(super) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether a statement on this connection was given up on.
    pub(super) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }
}

/// Whether `e` is the server refusing a write because it is read-only (a standby).
fn read_only(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().as_deref() == Some("25006"))
}

/// A connection from the ledger's pool with its [`Watch`]: closed instead of given back when a
/// statement on it was given up on, since what it would answer next is anyone's guess.
pub struct PgConn {
    pub(super) conn: PoolConnection<Postgres>,
    pub(super) watch: Watch,
}

impl PgConn {
    /// The connection and its watch, for the statements of one operation.
    pub fn parts(&mut self) -> (&mut PgConnection, &Watch) {
        (&mut self.conn, &self.watch)
    }

    /// Closes the connection when dropped instead of giving it back to the pool.
    pub fn close_on_drop(&mut self) {
        self.conn.close_on_drop();
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        if self.watch.is_broken() {
            self.conn.close_on_drop();
        }
    }
}

impl PgDb {
    /// A connection from the pool, watched while statements run on it.
    /// Where the URL names several hosts and the one written to may have gone, they are asked
    /// again first; a connection that cannot be had makes them asked again, and is tried once
    /// more on the host found.
    pub async fn acquire(&self) -> sqlx::Result<PgConn> {
        let hosts = &self.live.hosts;
        if hosts.suspected() {
            let _ = hosts.find().await;
        }
        let conn = match self.pool.acquire().await {
            Ok(conn) => conn,
            Err(_) if hosts.several() && matches!(hosts.find().await, Ok(true)) => {
                self.pool.acquire().await?
            }
            Err(e) => {
                hosts.suspect();
                return Err(e);
            }
        };
        Ok(PgConn {
            conn,
            watch: Watch {
                live: self.live.clone(),
                broken: AtomicBool::new(false),
                failed: AtomicBool::new(false),
            },
        })
    }
}
