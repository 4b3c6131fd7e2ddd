//! Reads of attempts: one by id, a job's, and the executor's queues (`pending` to send,
//! `unknown` to look up), with how long a request may still be answered.

use std::time::Duration;

use crate::store::rows::AttemptRow;
use sqlx::FromRow;

use crate::store::{on_backend, Handle};

/// An attempt by id, whoever owns its job (for the executor).
pub async fn by_id(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/by_id", |conn, sql| {
        sqlx::query_as(sql).bind(id).fetch_optional(conn).await
    })
}

/// An attempt by id if its job belongs to `owner`.
pub async fn owned(h: &mut impl Handle, owner: &str, id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/owned", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(owner)
            .fetch_optional(conn)
            .await
    })
}

/// The job's open attempt, if any.
pub async fn open_for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/open_for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_optional(conn).await
    })
}

/// The job's last attempt, if any.
pub async fn last_for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/last_for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_optional(conn).await
    })
}

/// All of a job's attempts, by number.
pub async fn for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_all(conn).await
    })
}

/// Attempts committed `pending` (never sent) whose job is `running`, oldest first.
pub async fn pending(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/pending", |conn, sql| {
        sqlx::query_as(sql)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// [`pending`] for an executor's pass: on PostgreSQL, less those committed in the last
/// seconds, which another host that claimed them is about to send.
pub async fn pending_left(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    match h.conn() {
        crate::store::Conn::Postgres(conn, watch) => {
            let sql = crate::store::query!(postgres, "attempts/pending_left");
            let reading = sqlx::query_as(sql).bind(i64::from(limit)).fetch_all(conn);
            watch.guard(reading).await
        }
        crate::store::Conn::Sqlite(..) => pending(h, limit).await,
    }
}

/// Attempts in `unknown` whose request can no longer be answered (their provider's hard
/// deadline passed since they were sent, by the database's clock), oldest first, for status
/// lookups.
pub async fn unknown(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/unknown", |conn, sql| {
        sqlx::query_as(sql)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// How long attempt `id`'s request may still be answered: the time left until its provider's
/// hard deadline has passed since it was sent, by the database's clock (zero once it has);
/// `None` when the attempt or its provider is gone.
pub async fn lookup_wait(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<Duration>> {
    let left: Option<i64> = on_backend!(h, "attempts/lookup_wait", |conn, sql| {
        sqlx::query_scalar(sql).bind(id).fetch_optional(conn).await
    })?;
    Ok(left.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))))
}

/// An attempt's recorded token usage, if its provider reported one.
pub async fn usage(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<String>> {
    on_backend!(h, "attempts/usage", |conn, sql| {
        sqlx::query_scalar::<_, Option<String>>(sql)
            .bind(id)
            .fetch_optional(conn)
            .await
            .map(Option::flatten)
    })
}

/// One row of spend: a day, provider or owner (`key`) in one currency, in billionths.
#[derive(FromRow)]
pub struct SpendRow {
    pub key: String,
    pub currency: String,
    pub spent: i64,
    pub at_risk: i64,
}

/// Spend by `by` (`day`, `provider` or `owner`) and currency (`attempts/spend.sql`), of `owner`'s
/// jobs or every owner's, of attempts sent since `since`, in `currency` or each.
pub async fn spend(
    h: &mut impl Handle,
    by: &str,
    owner: Option<&str>,
    since: Option<&str>,
    currency: Option<&str>,
) -> sqlx::Result<Vec<SpendRow>> {
    let free = crate::money::free_failures_json();
    on_backend!(h, "attempts/spend", |conn, sql| {
        sqlx::query_as(sql)
            .bind(by)
            .bind(owner)
            .bind(since)
            .bind(currency)
            .bind(&free)
            .fetch_all(conn)
            .await
    })
}
