//! `attempts`: tries under a job; one open per job by a partial unique index, every move
//! guarded by the state it expects.

use sqlx::{FromRow, SqliteConnection};

use super::now;
use crate::attempt::AttemptState;
use crate::error::{Error, Result};
use crate::model::{Attempt, AttemptError, Usage};

const COLUMNS: &str =
    "a.id, a.job_id, a.number, a.provider, a.state, a.job_version, a.request_id, \
     a.http_status, a.error_kind, a.error_message, a.executor_id, a.lease_expires_at, \
     a.flagged_for_review, a.created_at, a.sent_at, a.finished_at, a.usage";

#[derive(FromRow, Clone)]
pub struct AttemptRow {
    pub id: String,
    pub job_id: String,
    pub number: i64,
    pub provider: String,
    pub state: String,
    pub job_version: i64,
    pub request_id: Option<String>,
    pub http_status: Option<i64>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub executor_id: Option<String>,
    pub lease_expires_at: Option<String>,
    pub flagged_for_review: bool,
    pub created_at: String,
    pub sent_at: Option<String>,
    pub finished_at: Option<String>,
    pub usage: Option<String>,
}

impl AttemptRow {
    /// The attempt's state as the enum.
    pub fn state(&self) -> Result<AttemptState> {
        self.state.parse().map_err(|_| {
            Error::internal(format!(
                "attempt {} has unknown state {}",
                self.id, self.state
            ))
        })
    }

    /// The row as the engine's record.
    pub fn into_attempt(self) -> Result<Attempt> {
        let state = self.state()?;
        let error = self.error_kind.map(|kind| AttemptError {
            kind,
            message: self.error_message.unwrap_or_default(),
        });
        Ok(Attempt {
            id: self.id,
            job_id: self.job_id,
            number: u32::try_from(self.number).unwrap_or(u32::MAX),
            provider: self.provider,
            state,
            job_version: u32::try_from(self.job_version).unwrap_or(u32::MAX),
            request_id: self.request_id,
            http_status: self.http_status.and_then(|s| u16::try_from(s).ok()),
            error,
            executor_id: self.executor_id,
            lease_expires_at: self.lease_expires_at,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            sent_at: self.sent_at,
            finished_at: self.finished_at,
            usage: self
                .usage
                .as_deref()
                .and_then(|u| serde_json::from_str::<serde_json::Value>(u).ok())
                .as_ref()
                .and_then(Usage::from_reported),
        })
    }
}

/// Inserts the job's next attempt as `pending`. While another is open the partial unique
/// index refuses it: that refusal is the only check.
pub async fn insert_next(
    conn: &mut SqliteConnection,
    id: &str,
    job_id: &str,
    provider: &str,
    job_version: i64,
) -> sqlx::Result<AttemptRow> {
    sqlx::query_as(&format!(
        "INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
         VALUES (?1, ?2, (SELECT coalesce(max(number), 0) + 1 FROM attempts WHERE job_id = ?2), ?3, 'pending', ?4, ?5)
         RETURNING {}",
        COLUMNS.replace("a.", "")
    ))
    .bind(id)
    .bind(job_id)
    .bind(provider)
    .bind(job_version)
    .bind(now())
    .fetch_all(conn)
    .await?
    .into_iter()
    .next()
    .ok_or(sqlx::Error::RowNotFound)
}

/// An attempt by id, whoever owns its job (for the executor).
pub async fn by_id(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM attempts a WHERE a.id = ?"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// An attempt by id if its job belongs to `owner`.
pub async fn owned(
    conn: &mut SqliteConnection,
    owner: &str,
    id: &str,
) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.id = ? AND j.owner_id = ?"
    ))
    .bind(id)
    .bind(owner)
    .fetch_optional(conn)
    .await
}

/// The job's open attempt, if any.
pub async fn open_for_job(
    conn: &mut SqliteConnection,
    job_id: &str,
) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attempts a WHERE a.job_id = ? AND a.state IN ('pending', 'in_flight', 'unknown')"
    ))
    .bind(job_id)
    .fetch_optional(conn)
    .await
}

/// The job's last attempt, if any.
pub async fn last_for_job(
    conn: &mut SqliteConnection,
    job_id: &str,
) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attempts a WHERE a.job_id = ? ORDER BY a.number DESC LIMIT 1"
    ))
    .bind(job_id)
    .fetch_optional(conn)
    .await
}

/// All of a job's attempts, by number.
pub async fn for_job(conn: &mut SqliteConnection, job_id: &str) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attempts a WHERE a.job_id = ? ORDER BY a.number"
    ))
    .bind(job_id)
    .fetch_all(conn)
    .await
}

/// `in_flight` attempts whose lease ran out before `at`.
pub async fn expired_leases(
    conn: &mut SqliteConnection,
    at: &str,
) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attempts a WHERE a.state = 'in_flight' AND a.lease_expires_at < ? ORDER BY a.id"
    ))
    .bind(at)
    .fetch_all(conn)
    .await
}

/// Columns a transition may set alongside the state; `None` leaves a column as it is.
#[derive(Default)]
pub struct Patch<'a> {
    pub error: Option<&'a AttemptError>,
    pub http_status: Option<u16>,
    pub executor_id: Option<&'a str>,
    pub lease_expires_at: Option<&'a str>,
    pub sent: bool,
    pub finished: bool,
    pub flag: bool,
}

/// Moves an attempt from `from` to `to` in one guarded statement; false when it was no
/// longer in `from` (someone moved it first: re-read, never overwrite), or when
/// `job_must_run` and its job is not `running` without a result.
pub async fn transition(
    conn: &mut SqliteConnection,
    id: &str,
    from: AttemptState,
    to: AttemptState,
    patch: &Patch<'_>,
    job_must_run: bool,
) -> sqlx::Result<bool> {
    let at = now();
    let done = sqlx::query(
        "UPDATE attempts SET state = ?1,
            error_kind = coalesce(?2, error_kind), error_message = coalesce(?3, error_message),
            http_status = coalesce(?4, http_status), executor_id = coalesce(?5, executor_id),
            lease_expires_at = CASE WHEN ?1 = 'in_flight' THEN coalesce(?6, lease_expires_at) ELSE NULL END,
            sent_at = CASE WHEN ?7 THEN ?9 ELSE sent_at END,
            finished_at = CASE WHEN ?8 THEN ?9 ELSE finished_at END,
            flagged_for_review = max(flagged_for_review, ?10)
         WHERE id = ?11 AND state = ?12
           AND (NOT ?13 OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = attempts.job_id
                                   AND j.status = 'running' AND j.completed_by IS NULL))",
    )
    .bind(to.as_str())
    .bind(patch.error.map(|e| e.kind.as_str()))
    .bind(patch.error.map(|e| e.message.as_str()))
    .bind(patch.http_status.map(i64::from))
    .bind(patch.executor_id)
    .bind(patch.lease_expires_at)
    .bind(patch.sent)
    .bind(patch.finished)
    .bind(&at)
    .bind(patch.flag)
    .bind(id)
    .bind(from.as_str())
    .bind(job_must_run)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Flags an attempt for review without moving it.
pub async fn flag(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE attempts SET flagged_for_review = 1 WHERE id = ?")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Extends the lease of an attempt the executor still holds in flight.
pub async fn renew_lease(
    conn: &mut SqliteConnection,
    id: &str,
    executor_id: &str,
    until: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE attempts SET lease_expires_at = ? WHERE id = ? AND state = 'in_flight' AND executor_id = ?",
    )
    .bind(until)
    .bind(id)
    .bind(executor_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Saves the provider's request id (and status) as soon as response headers arrive.
pub async fn record_response_head(
    conn: &mut SqliteConnection,
    id: &str,
    request_id: Option<&str>,
    http_status: Option<u16>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE attempts SET request_id = coalesce(?, request_id), http_status = coalesce(?, http_status) WHERE id = ?",
    )
    .bind(request_id)
    .bind(http_status.map(i64::from))
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Attempts committed `pending` (never sent) whose job is `running`, oldest first.
pub async fn pending(conn: &mut SqliteConnection, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attempts a JOIN jobs j ON j.id = a.job_id
         WHERE a.state = 'pending' AND j.status = 'running' ORDER BY a.id LIMIT ?"
    ))
    .bind(i64::from(limit))
    .fetch_all(conn)
    .await
}

/// Attempts in `unknown`, oldest first, for reconciliation.
pub async fn unknown(conn: &mut SqliteConnection, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attempts a WHERE a.state = 'unknown' ORDER BY a.id LIMIT ?"
    ))
    .bind(i64::from(limit))
    .fetch_all(conn)
    .await
}

/// Keeps an AI provider's answer metadata: its token usage, and the answer's own id as the
/// request id when the response headers carried none.
pub async fn record_usage(
    conn: &mut SqliteConnection,
    id: &str,
    request_id: Option<&str>,
    usage: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE attempts SET request_id = coalesce(request_id, ?), usage = coalesce(?, usage) WHERE id = ?",
    )
    .bind(request_id)
    .bind(usage)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// An attempt's recorded token usage, if its provider reported one.
pub async fn usage(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<Option<String>> {
    let row: Option<(Option<String>,)> = sqlx::query_as("SELECT usage FROM attempts WHERE id = ?")
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(row.and_then(|(u,)| u))
}
