//! The retry keys of SPEC §15: which attempt a retry under an owner's key started.

use sqlx::FromRow;

use super::{on_backend, Handle};

/// A retry recorded under a key.
#[derive(Debug, Clone, FromRow)]
pub struct RetryKeyRow {
    /// Hex SHA-256 of the canonical JSON of what was asked (the job and the provider).
    pub fingerprint: String,
    pub job_id: String,
    pub attempt_id: String,
}

/// Owner `owner`'s retry under `key`, if any.
pub async fn get(h: &mut impl Handle, owner: &str, key: &str) -> sqlx::Result<Option<RetryKeyRow>> {
    on_backend!(h, "retry_keys/get", |conn, sql| {
        sqlx::query_as(sql)
            .bind(owner)
            .bind(key)
            .fetch_optional(conn)
            .await
    })
}

/// Records a retry under `key`; false when the key was taken meanwhile (by a transaction that
/// committed first), and nothing was written.
pub async fn insert(
    h: &mut impl Handle,
    owner: &str,
    key: &str,
    fingerprint: &str,
    job_id: &str,
    attempt_id: &str,
) -> sqlx::Result<bool> {
    on_backend!(h, "retry_keys/insert", |conn, sql| {
        sqlx::query(sql)
            .bind(owner)
            .bind(key)
            .bind(fingerprint)
            .bind(job_id)
            .bind(attempt_id)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}
