//! `jobs`: one row per intent; inserts arbitrated by `UNIQUE(owner_id, idempotency_key)`,
//! outcome writes guarded by `version`.

use sqlx::{FromRow, QueryBuilder, Sqlite, SqliteConnection};

use super::{json_column, now};
use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::model::{Job, JobError};

const COLUMNS: &str =
    "id, owner_id, idempotency_key, fingerprint, intent, status, version, completed_by, \
     result, error, flagged_for_review, created_at, updated_at, finished_at, not_before";

#[derive(FromRow)]
pub struct JobRow {
    id: String,
    owner_id: String,
    idempotency_key: String,
    fingerprint: String,
    intent: String,
    status: String,
    version: i64,
    completed_by: Option<String>,
    result: Option<String>,
    error: Option<String>,
    flagged_for_review: bool,
    created_at: String,
    updated_at: String,
    finished_at: Option<String>,
    not_before: Option<String>,
}

impl JobRow {
    /// The row as the engine's record.
    pub fn into_job(self) -> Result<Job> {
        let status = self.status.parse::<JobStatus>().map_err(|_| {
            Error::internal(format!(
                "job {} has unknown status {}",
                self.id, self.status
            ))
        })?;
        let error = self
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<JobError>(e).ok());
        Ok(Job {
            id: self.id,
            owner_id: self.owner_id,
            idempotency_key: self.idempotency_key,
            fingerprint: self.fingerprint,
            intent: json_column(&self.intent),
            status,
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            completed_by: self.completed_by,
            result: self.result.as_deref().map(json_column),
            error,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
            not_before: self.not_before,
        })
    }
}

/// A job to insert.
pub struct NewJob<'a> {
    pub id: &'a str,
    pub owner_id: &'a str,
    pub idempotency_key: &'a str,
    pub fingerprint: &'a str,
    pub intent: &'a str,
}

/// Inserts a `queued` job at version 0 unless the owner already used the key; `None` then.
/// The unique constraint decides; nothing is read first. Run it inside a transaction: an
/// autocommit `RETURNING` hands its row back before its commit has succeeded.
pub async fn insert_if_new(
    conn: &mut SqliteConnection,
    job: &NewJob<'_>,
) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(&format!(
        "INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', 0, ?6, ?6)
         ON CONFLICT (owner_id, idempotency_key) DO NOTHING
         RETURNING {COLUMNS}"
    ))
    .bind(job.id)
    .bind(job.owner_id)
    .bind(job.idempotency_key)
    .bind(job.fingerprint)
    .bind(job.intent)
    .bind(now())
    // Stepped to its end: the caller commits, and reports nothing before that commit.
    .fetch_all(conn)
    .await
    .map(|rows| rows.into_iter().next())
}

/// The owner's job holding `key`.
pub async fn by_key(
    conn: &mut SqliteConnection,
    owner: &str,
    key: &str,
) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE owner_id = ? AND idempotency_key = ?"
    ))
    .bind(owner)
    .bind(key)
    .fetch_optional(conn)
    .await
}

/// A job by id, whoever owns it (for the executor).
pub async fn by_id(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM jobs WHERE id = ?"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The owner's job by id; another owner's is indistinguishable from a missing one.
pub async fn owned(
    conn: &mut SqliteConnection,
    owner: &str,
    id: &str,
) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE id = ? AND owner_id = ?"
    ))
    .bind(id)
    .bind(owner)
    .fetch_optional(conn)
    .await
}

/// Which of an owner's jobs a page or a count covers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub status: Option<JobStatus>,
    /// A prefix of the idempotency key (as given), or of the id (lowercased); non-empty.
    pub search: Option<&'a str>,
    /// A provider the job's route names or one of its attempts ran at.
    pub provider: Option<&'a str>,
}

/// Appends `FROM … WHERE …` for the owner's jobs that pass `filter`; returns the column that
/// orders them by id. Prefixes become ranges (`>= prefix AND < prefix + U+10FFFF`) so that
/// `UNIQUE(owner_id, idempotency_key)` and `jobs_by_owner` serve them: `LIKE` would scan.
fn push_filter<'q>(
    q: &mut QueryBuilder<'q, Sqlite>,
    owner: &'q str,
    filter: &Filter<'q>,
) -> &'static str {
    let order = match filter.provider {
        Some(provider) => {
            // Driven from `job_providers`, whose key gives one owner's jobs at one provider in id order.
            q.push(" FROM job_providers p JOIN jobs j ON j.id = p.job_id WHERE p.provider = ");
            q.push_bind(provider);
            q.push(" AND p.owner_id = ");
            q.push_bind(owner);
            "p.job_id"
        }
        // With a search, each of its two ranges names the owner itself: a separate
        // `owner_id = ?` would let the planner walk every job of the owner in id order instead.
        None if filter.search.is_some() => {
            q.push(" FROM jobs j WHERE 1");
            "j.id"
        }
        None => {
            q.push(" FROM jobs j WHERE j.owner_id = ");
            q.push_bind(owner);
            "j.id"
        }
    };
    if let Some(status) = filter.status {
        q.push(" AND j.status = ");
        q.push_bind(status.as_str());
    }
    if let Some(search) = filter.search {
        let upper = |prefix: &str| format!("{prefix}{}", char::MAX);
        q.push(" AND ((j.owner_id = ");
        q.push_bind(owner);
        q.push(" AND j.idempotency_key >= ");
        q.push_bind(search.to_owned());
        q.push(" AND j.idempotency_key < ");
        q.push_bind(upper(search));
        q.push(")");
        // Ids are lowercase hex and dashes: other text cannot start one.
        let id = search.trim().to_ascii_lowercase();
        if !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            q.push(" OR (j.owner_id = ");
            q.push_bind(owner);
            q.push(" AND j.id >= ");
            q.push_bind(id.clone());
            q.push(" AND j.id < ");
            q.push_bind(upper(&id));
            q.push(")");
        }
        q.push(")");
    }
    order
}

/// Up to `limit` of the owner's jobs that pass `filter`, newest first and strictly older than
/// `cursor` (or oldest first and strictly newer, with `oldest_first`).
pub async fn page(
    conn: &mut SqliteConnection,
    owner: &str,
    filter: &Filter<'_>,
    cursor: Option<&str>,
    limit: u32,
    oldest_first: bool,
) -> sqlx::Result<Vec<JobRow>> {
    let (beyond, direction) = if oldest_first {
        (" > ", " ASC")
    } else {
        (" < ", " DESC")
    };
    let columns = COLUMNS
        .split(", ")
        .map(|c| format!("j.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut q = QueryBuilder::new(format!("SELECT {columns}"));
    let order = push_filter(&mut q, owner, filter);
    if let Some(cursor) = cursor {
        q.push(format!(" AND {order}{beyond}"));
        q.push_bind(cursor);
    }
    q.push(format!(" ORDER BY {order}{direction} LIMIT "));
    q.push_bind(i64::from(limit));
    q.build_query_as().fetch_all(conn).await
}

/// How many of the owner's jobs pass `filter`.
pub async fn count(
    conn: &mut SqliteConnection,
    owner: &str,
    filter: &Filter<'_>,
) -> sqlx::Result<i64> {
    let mut q = QueryBuilder::new("SELECT count(*)");
    push_filter(&mut q, owner, filter);
    q.build_query_scalar().fetch_one(conn).await
}

/// What a status change writes beside the status.
#[derive(Default)]
pub struct JobPatch<'a> {
    /// Replaces `error` (with `None` when `set_error` is true and this is `None`).
    pub error: Option<&'a JobError>,
    pub set_error: bool,
    /// The move decides the outcome (failed, cancelled, a person's retry): `version + 1`.
    pub bump_version: bool,
    /// Sets `finished_at` to now.
    pub finished: bool,
    /// Clears the backoff.
    pub clear_not_before: bool,
}

/// Moves a job from exactly `from` to `to`; false when it was not in `from` (someone moved it
/// first). The caller has checked the move against [`JobStatus::may_become`].
pub async fn set_status(
    conn: &mut SqliteConnection,
    id: &str,
    from: JobStatus,
    to: JobStatus,
    patch: &JobPatch<'_>,
) -> sqlx::Result<bool> {
    let at = now();
    let done = sqlx::query(
        "UPDATE jobs SET status = ?1,
            error = CASE WHEN ?2 THEN ?3 ELSE error END,
            version = version + ?4,
            finished_at = CASE WHEN ?5 THEN ?6 ELSE finished_at END,
            not_before = CASE WHEN ?7 THEN NULL ELSE not_before END,
            updated_at = ?6
         WHERE id = ?8 AND status = ?9",
    )
    .bind(to.as_str())
    .bind(patch.set_error)
    .bind(patch.error.and_then(|e| serde_json::to_string(e).ok()))
    .bind(i64::from(patch.bump_version))
    .bind(patch.finished)
    .bind(&at)
    .bind(patch.clear_not_before)
    .bind(id)
    .bind(from.as_str())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The compare-and-swap of SPEC §5: claims the job's result for `attempt_id` only if the job
/// is still at `version`, nobody has claimed it, and it is not closed.
pub async fn claim_result(
    conn: &mut SqliteConnection,
    id: &str,
    version: i64,
    attempt_id: &str,
    result: &str,
) -> sqlx::Result<bool> {
    let at = now();
    let done = sqlx::query(
        "UPDATE jobs SET status = 'succeeded', result = ?1, completed_by = ?2, error = NULL,
                version = version + 1, not_before = NULL, updated_at = ?3, finished_at = ?3
         WHERE id = ?4 AND version = ?5 AND completed_by IS NULL
           AND status IN ('queued', 'running', 'unknown')",
    )
    .bind(result)
    .bind(attempt_id)
    .bind(&at)
    .bind(id)
    .bind(version)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks a job for a person's review (a late answer or a contradiction).
pub async fn flag(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET flagged_for_review = 1, updated_at = ? WHERE id = ?")
        .bind(now())
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// How many of the owner's jobs need a person: `unknown`, or flagged for review.
pub async fn needing_attention(conn: &mut SqliteConnection, owner: &str) -> sqlx::Result<i64> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM jobs WHERE owner_id = ? AND (status = 'unknown' OR flagged_for_review = 1)",
    )
    .bind(owner)
    .fetch_one(conn)
    .await?;
    Ok(n)
}

/// Ids of queued jobs whose backoff has passed, oldest first.
pub async fn sendable(
    conn: &mut SqliteConnection,
    at: &str,
    limit: u32,
) -> sqlx::Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM jobs WHERE status = 'queued' AND (not_before IS NULL OR not_before <= ?)
         ORDER BY id LIMIT ?",
    )
    .bind(at)
    .bind(i64::from(limit))
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// When the next queued job's backoff ends, if any job waits on one.
pub async fn next_not_before(conn: &mut SqliteConnection) -> sqlx::Result<Option<String>> {
    let (at,): (Option<String>,) =
        sqlx::query_as("SELECT min(not_before) FROM jobs WHERE status = 'queued'")
            .fetch_one(conn)
            .await?;
    Ok(at)
}

/// Sets (or clears) a job's backoff.
pub async fn set_not_before(
    conn: &mut SqliteConnection,
    id: &str,
    at: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET not_before = ? WHERE id = ?")
        .bind(at)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Up to `limit` of the owner's jobs that need a person (`unknown`, or flagged for review),
/// most recently updated first. The `jobs_needing_attention` index holds only those few.
pub async fn needing_attention_list(
    conn: &mut SqliteConnection,
    owner: &str,
    limit: u32,
) -> sqlx::Result<Vec<JobRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM jobs INDEXED BY jobs_needing_attention
         WHERE owner_id = ? AND (status = 'unknown' OR flagged_for_review = 1)
         ORDER BY updated_at DESC, id DESC LIMIT ?"
    ))
    .bind(owner)
    .bind(i64::from(limit))
    .fetch_all(conn)
    .await
}

/// Open jobs (`queued`, `running`, `unknown`) of every owner, counted by status, whose route
/// names `provider` or whose open attempt is at it. Walks the open jobs (`jobs_open`), which
/// are few, rather than every job that ever named the provider.
pub async fn open_naming_provider(
    conn: &mut SqliteConnection,
    provider: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT j.status, count(*) FROM jobs j
         WHERE j.status IN ('queued', 'running', 'unknown')
           AND (EXISTS (SELECT 1 FROM job_providers p
                         WHERE p.provider = ?1 AND p.owner_id = j.owner_id AND p.job_id = j.id
                           AND p.in_route = 1)
                OR EXISTS (SELECT 1 FROM attempts a
                            WHERE a.job_id = j.id AND a.provider = ?1
                              AND a.state IN ('pending', 'in_flight', 'unknown')))
         GROUP BY j.status",
    )
    .bind(provider)
    .fetch_all(conn)
    .await
}

/// Open jobs (`queued`, `running`, `unknown`) of every owner, counted by status, whose intent
/// names `contract`; served by the partial `jobs_open_by_contract` index.
pub async fn open_naming_contract(
    conn: &mut SqliteConnection,
    contract: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT status, count(*) FROM jobs
         WHERE json_extract(intent, '$.contract') = ?
           AND status IN ('queued', 'running', 'unknown')
         GROUP BY status",
    )
    .bind(contract)
    .fetch_all(conn)
    .await
}
