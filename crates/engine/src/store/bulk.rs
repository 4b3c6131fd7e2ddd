//! Bulk operations of SPEC §16: a person's action over the jobs a filter matched when it
//! started, one `bulk_items` row per job, each decided once.

use sqlx::{FromRow, QueryBuilder};

use super::jobs::{build, Filter};
use super::{on_backend, Conn, Handle};

/// The lowest id: the keyset's start.
pub const FIRST_CURSOR: &str = "00000000-0000-0000-0000-000000000000";

/// An operation as recorded.
#[derive(Debug, Clone, FromRow)]
pub struct BulkRow {
    pub id: String,
    pub idempotency_key: String,
    /// Hex SHA-256 of the canonical JSON of the request (action, filter, as, provider).
    pub fingerprint: String,
    pub action: String,
    /// The request as JSON text.
    pub params: String,
    /// `running` or `done`.
    pub state: String,
    pub matched: i64,
}

/// How far an operation has come.
#[derive(Debug, Clone, Copy, FromRow)]
pub struct Counts {
    pub matched: i64,
    pub changed: i64,
    pub skipped: i64,
    pub undecided: i64,
}

/// A new operation's row.
pub struct NewBulk<'a> {
    pub id: &'a str,
    pub owner: &'a str,
    pub key: &'a str,
    pub fingerprint: &'a str,
    pub action: &'a str,
    pub params: &'a str,
}

/// Records a new operation, running and empty; false when the owner's key was taken meanwhile
/// (by a transaction that committed first), and nothing was written.
pub async fn insert(h: &mut impl Handle, op: &NewBulk<'_>) -> sqlx::Result<bool> {
    on_backend!(h, "bulk/insert", |conn, sql| {
        sqlx::query(sql)
            .bind(op.id)
            .bind(op.owner)
            .bind(op.key)
            .bind(op.fingerprint)
            .bind(op.action)
            .bind(op.params)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// Owner `owner`'s operation under `key`, if any.
pub async fn by_key(h: &mut impl Handle, owner: &str, key: &str) -> sqlx::Result<Option<BulkRow>> {
    on_backend!(h, "bulk/by_key", |conn, sql| {
        sqlx::query_as(sql)
            .bind(owner)
            .bind(key)
            .fetch_optional(conn)
            .await
    })
}

/// Operation `id` if `owner` holds it.
pub async fn owned(h: &mut impl Handle, owner: &str, id: &str) -> sqlx::Result<Option<BulkRow>> {
    on_backend!(h, "bulk/owned", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(owner)
            .fetch_optional(conn)
            .await
    })
}

/// Fixes operation `id`'s set: one undecided item per owner's job that passes `filter` now, in
/// one statement; returns how many, also recorded as the operation's `matched`.
pub async fn fill(
    h: &mut impl Handle,
    id: &str,
    owner: &str,
    filter: &Filter<'_>,
) -> sqlx::Result<i64> {
    let inserted = match h.conn() {
        Conn::Sqlite(conn, at) => {
            let mut q = QueryBuilder::new("INSERT INTO bulk_items (operation_id, job_id) SELECT ");
            q.push_bind(id);
            q.push(", j.id");
            build(&mut q, false, owner, filter, None);
            q.build()
                .execute(conn)
                .await
                .map_err(|e| super::sqlite::named(at, e))?
                .rows_affected()
        }
        Conn::Postgres(conn, watch) => {
            let mut q = QueryBuilder::new("INSERT INTO bulk_items (operation_id, job_id) SELECT ");
            q.push_bind(id);
            q.push("::uuid, j.id");
            build(&mut q, true, owner, filter, None);
            watch.guard(q.build().execute(conn)).await?.rows_affected()
        }
    };
    let matched = i64::try_from(inserted).unwrap_or(i64::MAX);
    on_backend!(h, "bulk/set_matched", |conn, sql| {
        sqlx::query(sql)
            .bind(id)
            .bind(matched)
            .execute(conn)
            .await
            .map(|_| ())
    })?;
    Ok(matched)
}

/// Up to `limit` of operation `id`'s undecided jobs, in id order after `cursor`.
pub async fn undecided(
    h: &mut impl Handle,
    id: &str,
    cursor: &str,
    limit: u32,
) -> sqlx::Result<Vec<String>> {
    on_backend!(h, "bulk/left", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(id)
            .bind(cursor)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// Decides operation `id`'s job `job_id` as `outcome` (`changed` or a skip's code) unless it
/// was decided already: true when this call decided it.
pub async fn decide(
    h: &mut impl Handle,
    id: &str,
    job_id: &str,
    outcome: &str,
) -> sqlx::Result<bool> {
    on_backend!(h, "bulk/decide", |conn, sql| {
        sqlx::query(sql)
            .bind(id)
            .bind(job_id)
            .bind(outcome)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// How far operation `id` has come.
pub async fn counts(h: &mut impl Handle, id: &str) -> sqlx::Result<Counts> {
    on_backend!(h, "bulk/counts", |conn, sql| {
        sqlx::query_as(sql).bind(id).fetch_one(conn).await
    })
}

/// The providers operation `id`'s jobs are routed to or ran at, by name, at most `limit`.
pub async fn providers(h: &mut impl Handle, id: &str, limit: u32) -> sqlx::Result<Vec<String>> {
    on_backend!(h, "bulk/providers", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(id)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// Up to `limit` of operation `id`'s skipped jobs with their codes, in id order after `cursor`.
pub async fn skipped(
    h: &mut impl Handle,
    id: &str,
    cursor: &str,
    limit: u32,
) -> sqlx::Result<Vec<(String, String)>> {
    on_backend!(h, "bulk/skipped", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(cursor)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// Marks operation `id` done when nothing of it is left.
pub async fn finish(h: &mut impl Handle, id: &str) -> sqlx::Result<()> {
    on_backend!(h, "bulk/finish", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
    })
}

/// Records operation `id`'s job `job_id`, which this transaction decided, as skipped with
/// `code` after all (the action was refused, yet what it wrote stands).
pub async fn recode(h: &mut impl Handle, id: &str, job_id: &str, code: &str) -> sqlx::Result<()> {
    on_backend!(h, "bulk/recode", |conn, sql| {
        sqlx::query(sql)
            .bind(id)
            .bind(job_id)
            .bind(code)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

/// Takes operation `id`'s undecided jobs out of any run, in the transaction that discards it:
/// how many it took.
pub async fn withdraw(h: &mut impl Handle, id: &str) -> sqlx::Result<u64> {
    on_backend!(h, "bulk/withdraw", |conn, sql| {
        sqlx::query(sql)
            .bind(id)
            .execute(conn)
            .await
            .map(|done| done.rows_affected())
    })
}

/// Removes operation `id` and its set.
pub async fn remove(h: &mut impl Handle, id: &str) -> sqlx::Result<()> {
    on_backend!(h, "bulk/drop_items", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
    })?;
    on_backend!(h, "bulk/drop", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
    })
}
