//! Reads of one job (by key, by id, with its attempts, measured for a screen) and of the jobs
//! that need a person or name a provider or contract.

use sqlx::FromRow;

use super::ShownRow;
use crate::store::attempts;
use crate::store::rows::{AttemptRow, JobRow};
use crate::store::{on_backend, Conn, Handle};

/// The owner's job holding `key`.
pub async fn by_key(h: &mut impl Handle, owner: &str, key: &str) -> sqlx::Result<Option<JobRow>> {
    on_backend!(h, "jobs/by_key", |conn, sql| {
        sqlx::query_as(sql)
            .bind(owner)
            .bind(key)
            .fetch_optional(conn)
            .await
    })
}

/// A job by id, whoever owns it, with its attempts by number: on SQLite one call
/// (`jobs/with_attempts`), on PostgreSQL the two reads.
pub async fn with_attempts(
    h: &mut impl Handle,
    id: &str,
) -> sqlx::Result<Option<(JobRow, Vec<AttemptRow>)>> {
    if let Conn::Sqlite(conn, at) = h.conn() {
        let sql = crate::store::query!(sqlite, "jobs/with_attempts");
        let rows = sqlx::query(sql)
            .bind(id)
            .fetch_all(conn)
            .await
            .map_err(|e| crate::store::sqlite::named(at, e))?;
        let mut rows = rows.iter();
        let Some(job) = rows.next() else {
            return Ok(None);
        };
        let attempts = rows
            .map(AttemptRow::from_row)
            .collect::<sqlx::Result<_>>()?;
        return Ok(Some((JobRow::from_row(job)?, attempts)));
    }
    let Some(job) = by_id(h, id).await? else {
        return Ok(None);
    };
    Ok(Some((job, attempts::for_job(h, id).await?)))
}

/// A job by id, whoever owns it (for the executor).
pub async fn by_id(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<JobRow>> {
    on_backend!(h, "jobs/by_id", |conn, sql| {
        sqlx::query_as(sql).bind(id).fetch_optional(conn).await
    })
}

/// The owner's job by id; another owner's is indistinguishable from a missing one.
pub async fn owned(h: &mut impl Handle, owner: &str, id: &str) -> sqlx::Result<Option<JobRow>> {
    on_backend!(h, "jobs/owned", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(owner)
            .fetch_optional(conn)
            .await
    })
}

/// The owner's job by id with its intent and result measured (see [`ShownRow`]).
pub async fn shown(h: &mut impl Handle, owner: &str, id: &str) -> sqlx::Result<Option<ShownRow>> {
    on_backend!(h, "jobs/shown", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(owner)
            .bind(crate::shown::LARGE_BYTES as i64)
            .bind(crate::shown::FIRST_PART_CHARS as i64)
            .fetch_optional(conn)
            .await
    })
}

/// How many of the owner's jobs need a person: `unknown`, or flagged for review.
pub async fn needing_attention(h: &mut impl Handle, owner: &str) -> sqlx::Result<i64> {
    on_backend!(h, "jobs/needing_attention", |conn, sql| {
        sqlx::query_scalar(sql).bind(owner).fetch_one(conn).await
    })
}

/// Up to `limit` of the owner's jobs that need a person (`unknown`, or flagged for review),
/// most recently updated first.
pub async fn needing_attention_list(
    h: &mut impl Handle,
    owner: &str,
    limit: u32,
) -> sqlx::Result<Vec<JobRow>> {
    on_backend!(h, "jobs/needing_attention_list", |conn, sql| {
        sqlx::query_as(sql)
            .bind(owner)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// Open jobs (`queued`, `running`, `unknown`) of every owner, counted by status, whose route
/// names `provider` or whose open attempt is at it.
pub async fn open_naming_provider(
    h: &mut impl Handle,
    provider: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    on_backend!(h, "jobs/open_naming_provider", |conn, sql| {
        sqlx::query_as(sql).bind(provider).fetch_all(conn).await
    })
}

/// Open jobs (`queued`, `running`, `unknown`) of every owner, counted by status, whose intent
/// names `contract`.
pub async fn open_naming_contract(
    h: &mut impl Handle,
    contract: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    on_backend!(h, "jobs/open_naming_contract", |conn, sql| {
        sqlx::query_as(sql).bind(contract).fetch_all(conn).await
    })
}
