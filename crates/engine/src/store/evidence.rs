//! `attempt_evidence`: what an executor sent for an attempt and what came back (SPEC §16).

use sqlx::FromRow;

use super::{on_backend, Handle};

/// What was sent, as the executor records it when the request leaves.
pub struct NewSent<'a> {
    pub attempt_id: &'a str,
    pub executor_id: &'a str,
    pub method: &'a str,
    pub url: &'a str,
    /// A JSON object, secrets already left out.
    pub headers: &'a str,
    pub body_bytes: i64,
    pub body_sha256: &'a str,
    pub body: &'a str,
    pub keyed: bool,
}

/// How the exchange ended: the rule that made the attempt unknown, and what came back.
pub struct NewEnd<'a> {
    pub attempt_id: &'a str,
    pub rule: Option<&'a str>,
    pub status: Option<i32>,
    /// A JSON object, secrets already left out.
    pub headers: Option<&'a str>,
    pub bytes: Option<i64>,
}

/// One attempt's record, its body left out.
#[derive(Debug, Clone, FromRow)]
pub struct EvidenceRow {
    pub attempt_id: String,
    pub executor_id: String,
    pub method: String,
    pub url: String,
    pub request_headers: String,
    pub body_bytes: i64,
    pub body_sha256: String,
    pub keyed: i64,
    pub watched: i64,
    pub rule: Option<String>,
    pub response_status: Option<i64>,
    pub response_headers: Option<String>,
    pub response_bytes: Option<i64>,
}

/// Records what was sent; an attempt already recorded keeps its record.
pub async fn record_sent(h: &mut impl Handle, s: &NewSent<'_>) -> sqlx::Result<()> {
    on_backend!(h, "evidence/record_sent", |conn, sql| {
        sqlx::query(sql)
            .bind(s.attempt_id)
            .bind(s.executor_id)
            .bind(s.method)
            .bind(s.url)
            .bind(s.headers)
            .bind(s.body_bytes)
            .bind(s.body_sha256)
            .bind(s.body)
            .bind(s.keyed)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

/// Records how the exchange ended; nothing when the attempt has no record of what was sent.
pub async fn record_end(h: &mut impl Handle, e: &NewEnd<'_>) -> sqlx::Result<()> {
    on_backend!(h, "evidence/record_end", |conn, sql| {
        sqlx::query(sql)
            .bind(e.attempt_id)
            .bind(e.rule)
            .bind(e.status)
            .bind(e.headers)
            .bind(e.bytes)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

/// The records of a job's attempts, by attempt number.
pub async fn for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Vec<EvidenceRow>> {
    on_backend!(h, "evidence/for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_all(conn).await
    })
}

/// The body sent for attempt `number` of a job, if it was recorded.
pub async fn body(h: &mut impl Handle, job_id: &str, number: u32) -> sqlx::Result<Option<String>> {
    let number = i64::from(number);
    let row: Option<(String,)> = on_backend!(h, "evidence/body", |conn, sql| {
        sqlx::query_as(sql)
            .bind(job_id)
            .bind(number)
            .fetch_optional(conn)
            .await
    })?;
    Ok(row.map(|(body,)| body))
}
