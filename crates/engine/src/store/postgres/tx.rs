//! A write transaction on a watched connection, which never reports a commit the server
//! rolled back.

use sqlx::{PgConnection, TransactionManager};

use super::{PgConn, Watch};

/// A write transaction on a watched connection. Dropped while open, it rolls back as sqlx's
/// own does (the `ROLLBACK` goes out before the connection's next use), or, on a broken
/// connection, ends with the connection, which is closed.
pub struct PgTx {
    conn: PgConn,
    open: bool,
}

type Manager = sqlx::postgres::PgTransactionManager;

impl PgTx {
    /// `BEGIN` on `conn`.
    pub async fn begin(mut conn: PgConn) -> sqlx::Result<PgTx> {
        let (raw, watch) = conn.parts();
        watch.guard(Manager::begin(raw, None)).await?;
        watch.clear_failed();
        Ok(PgTx { conn, open: true })
    }

    /// `COMMIT`; nothing written may be reported before this returns `Ok`. A transaction one of
    /// whose statements failed (its error swallowed by a caller) is refused and rolled back:
    /// the server would answer its `COMMIT` with `ROLLBACK`, which sqlx reports as success,
    /// and a write reported durable would be gone.
    pub async fn commit(mut self) -> sqlx::Result<()> {
        let (raw, watch) = self.conn.parts();
        if watch.has_failed() {
            watch.guard(Manager::rollback(raw)).await?;
            self.open = false;
            return Err(sqlx::Error::Protocol(
                "a statement of this transaction failed, so the server rolled it back;                  nothing of it was written"
                    .to_owned(),
            ));
        }
        watch.guard(Manager::commit(raw)).await?;
        self.open = false;
        Ok(())
    }

    /// `ROLLBACK` now.
    pub async fn rollback(mut self) -> sqlx::Result<()> {
        let (raw, watch) = self.conn.parts();
        watch.guard(Manager::rollback(raw)).await?;
        self.open = false;
        Ok(())
    }

    /// The connection and its watch.
    pub fn parts(&mut self) -> (&mut PgConnection, &Watch) {
        self.conn.parts()
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        if self.open && !self.conn.watch.is_broken() {
            Manager::start_rollback(&mut self.conn.conn);
        }
    }
}
