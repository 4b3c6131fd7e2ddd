//! The connection this process writes with (see [`Writer`]): one per ledger file, taken in
//! turn by every write of the process, counting who waits for it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use sqlx::SqliteConnection;
use tokio::sync::{OwnedMappedMutexGuard, OwnedMutexGuard};

use super::named;

/// The connection this process writes with, held for the ledger's life instead of pooled: a
/// pool tests a connection with a statement of its own whenever it is given back, one more
/// round trip to SQLite's thread on every write, and the next write waits for it.
///
/// Transactions on it are begun and ended by plain statements (`BEGIN IMMEDIATE`, `COMMIT`,
/// `ROLLBACK`). A [`WriterGuard`] dropped with one possibly open has it rolled back before
/// anything else runs on the writer: by a task started at once, or by the next writer, if it
/// comes first.
#[derive(Clone)]
pub struct Writer {
    conn: Arc<tokio::sync::Mutex<Option<SqliteConnection>>>,
    /// A guard was dropped with a transaction possibly open.
    left_open: Arc<AtomicBool>,
    /// How many wait for the writer now: a long holder (a bulk operation) lets them in.
    waiting: Arc<AtomicUsize>,
    /// The ledger's file as shown.
    pub(super) location: Arc<str>,
}

/// One waiter for the writer, counted while it waits (also when its wait is given up).
struct Waiting<'w>(&'w AtomicUsize);

impl<'w> Waiting<'w> {
    fn new(count: &'w AtomicUsize) -> Waiting<'w> {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The writer, held by one user at a time.
pub struct WriterGuard {
    conn: OwnedMappedMutexGuard<Option<SqliteConnection>, SqliteConnection>,
    /// Whether a transaction may be open: rolled back if the guard is dropped so.
    open: bool,
    writer: Writer,
}

impl Writer {
    pub(super) fn new(conn: SqliteConnection, location: Arc<str>) -> Writer {
        Writer {
            conn: Arc::new(tokio::sync::Mutex::new(Some(conn))),
            left_open: Arc::new(AtomicBool::new(false)),
            waiting: Arc::new(AtomicUsize::new(0)),
            location,
        }
    }

    /// Waits for the writer; `PoolClosed` once the ledger was closed.
    pub async fn lock(&self) -> sqlx::Result<WriterGuard> {
        let held = {
            let _waiting = Waiting::new(&self.waiting);
            self.conn.clone().lock_owned().await
        };
        let mut conn = OwnedMutexGuard::try_map(held, Option::as_mut)
            .map_err(|_| named(&self.location, sqlx::Error::PoolClosed))?;
        if self.left_open.swap(false, Ordering::SeqCst) {
            // "No transaction is active" when it had ended after all.
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        }
        Ok(WriterGuard {
            conn,
            open: false,
            writer: self.clone(),
        })
    }

    /// Waits for the writer and begins a transaction holding the file's write lock.
    pub async fn begin(&self) -> sqlx::Result<WriterGuard> {
        self.lock().await?.begin().await
    }

    /// Waits for whoever holds the writer, then closes it.
    pub async fn close(&self) {
        use sqlx::Connection;
        let taken = self.conn.lock().await.take();
        if let Some(conn) = taken {
            let _ = conn.close().await;
        }
    }
}

impl WriterGuard {
    /// Begins a transaction holding the file's write lock on the writer held.
    pub async fn begin(mut self) -> sqlx::Result<WriterGuard> {
        self.open = true;
        let (conn, location) = self.parts();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(conn)
            .await
            .map_err(|e| named(location, e))?;
        Ok(self)
    }

    /// Whether anyone waits for the writer now.
    pub fn others_waiting(&self) -> bool {
        self.waiting() > 0
    }

    /// How many wait for the writer now.
    pub fn waiting(&self) -> usize {
        self.writer.waiting.load(Ordering::SeqCst)
    }

    /// The connection.
    pub fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }

    /// The connection, and the ledger's file as shown.
    pub fn parts(&mut self) -> (&mut SqliteConnection, &str) {
        (&mut self.conn, &self.writer.location)
    }

    /// Says whether a transaction may be open on it now (one the caller began by its own
    /// statements), so that dropping the guard rolls it back.
    pub fn set_open(&mut self, open: bool) {
        self.open = open;
    }

    /// Commits the transaction begun by [`Writer::begin`].
    pub async fn commit(mut self) -> sqlx::Result<()> {
        let (conn, location) = self.parts();
        sqlx::query("COMMIT")
            .execute(conn)
            .await
            .map_err(|e| named(location, e))?;
        self.open = false;
        Ok(())
    }

    /// Rolls back the transaction begun by [`Writer::begin`].
    pub async fn rollback(mut self) -> sqlx::Result<()> {
        let (conn, location) = self.parts();
        sqlx::query("ROLLBACK")
            .execute(conn)
            .await
            .map_err(|e| named(location, e))?;
        self.open = false;
        Ok(())
    }
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        // Set before the connection is let go, so whoever takes it next rolls back first.
        self.writer.left_open.store(true, Ordering::SeqCst);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let writer = self.writer.clone();
            runtime.spawn(async move {
                let _ = writer.lock().await;
            });
        }
    }
}
