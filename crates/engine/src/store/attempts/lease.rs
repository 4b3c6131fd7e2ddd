//! An `in_flight` attempt's lease: renewed by the executor that holds it, and, once expired,
//! found for recovery (SPEC §9).

use std::time::Duration;

use crate::store::rows::AttemptRow;
use crate::store::{millis, on_backend, Handle};

/// Extends the lease of an attempt the executor still holds in flight to `lease` from now.
pub async fn renew_lease(
    h: &mut impl Handle,
    id: &str,
    executor_id: &str,
    lease: Duration,
) -> sqlx::Result<bool> {
    on_backend!(h, "attempts/renew_lease", |conn, sql| {
        sqlx::query(sql)
            .bind(millis(lease))
            .bind(id)
            .bind(executor_id)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// Locks the jobs of in-flight attempts whose lease has expired, passing over jobs another
/// transaction holds (PostgreSQL, `attempts/lock_expired`); recovery then reads the expired
/// attempts of the jobs it holds. On SQLite nothing runs (`BEGIN IMMEDIATE` holds the file).
/// Returns the ids of the jobs it locked; `None` on SQLite, where every job is held.
pub async fn lock_expired(h: &mut impl Handle) -> sqlx::Result<Option<Vec<String>>> {
    match h.conn() {
        crate::store::Conn::Postgres(conn, watch) => {
            let sql = crate::store::query!(postgres, "attempts/lock_expired");
            let locking = sqlx::query_scalar(sql).fetch_all(conn);
            Ok(Some(watch.guard(locking).await?))
        }
        crate::store::Conn::Sqlite(..) => Ok(None),
    }
}

/// `in_flight` attempts whose lease has run out by the database's clock.
pub async fn expired_leases(h: &mut impl Handle) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/expired_leases", |conn, sql| {
        sqlx::query_as(sql).fetch_all(conn).await
    })
}
