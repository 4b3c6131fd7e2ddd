//! What the executor reads to claim work: the queued jobs it may send now, and the backoff
//! that holds a job back.

use std::time::Duration;

use crate::store::{millis, on_backend, Conn, Handle};

/// Ids of queued jobs whose backoff has passed by the database's clock, oldest first.
pub async fn sendable(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<String>> {
    on_backend!(h, "jobs/sendable", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// [`sendable`] inside a claiming transaction: on PostgreSQL the ids are locked, passing over
/// jobs another host holds, so hosts claiming at once take different jobs.
pub async fn sendable_locking(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<String>> {
    match h.conn() {
        Conn::Postgres(conn, watch) => {
            let sql = crate::store::query!(postgres, "jobs/sendable_locking");
            let reading = sqlx::query_scalar(sql)
                .bind(i64::from(limit))
                .fetch_all(conn);
            watch.guard(reading).await
        }
        Conn::Sqlite(..) => sendable(h, limit).await,
    }
}

/// Whether the job waits on a backoff that has not ended by the database's clock.
pub async fn backing_off(h: &mut impl Handle, id: &str) -> sqlx::Result<bool> {
    on_backend!(h, "jobs/backing_off", |conn, sql| {
        sqlx::query_scalar(sql).bind(id).fetch_one(conn).await
    })
}

/// When the next queued job's backoff ends, if any job waits on one.
pub async fn next_not_before(h: &mut impl Handle) -> sqlx::Result<Option<String>> {
    on_backend!(h, "jobs/next_not_before", |conn, sql| {
        sqlx::query_scalar(sql).fetch_one(conn).await
    })
}

/// Sets a job's backoff to end `wait` from now by the database's clock, or clears it.
pub async fn set_backoff(
    h: &mut impl Handle,
    id: &str,
    wait: Option<Duration>,
) -> sqlx::Result<()> {
    on_backend!(h, "jobs/set_backoff", |conn, sql| {
        sqlx::query(sql)
            .bind(wait.map(millis))
            .bind(id)
            .execute(conn)
            .await
            .map(|_| ())
    })
}
