//! `tokens`: the HTTP API's bearer tokens, kept as their SHA-256 only (SPEC §15).

use std::time::Duration;

use sqlx::FromRow;

use super::{millis, on_backend, Handle};
use crate::model::TokenInfo;

/// What authenticating needs of a token found by its hash.
#[derive(FromRow)]
pub struct TokenUse {
    pub id: String,
    pub owner_id: String,
    pub revoked: bool,
    /// Its last use was recorded longer ago than asked, or never.
    pub stale: bool,
}

/// Adds a token by its hash; returns when it was created.
pub async fn insert(
    h: &mut impl Handle,
    id: &str,
    owner: &str,
    name: Option<&str>,
    sha256: &str,
) -> sqlx::Result<String> {
    on_backend!(h, "tokens/insert", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(id)
            .bind(owner)
            .bind(name)
            .bind(sha256)
            .fetch_one(conn)
            .await
    })
}

/// Every token, oldest first.
pub async fn list(h: &mut impl Handle) -> sqlx::Result<Vec<TokenInfo>> {
    on_backend!(h, "tokens/list", |conn, sql| {
        sqlx::query_as(sql).fetch_all(conn).await
    })
}

/// Revokes a token (a second time keeps the first time); `None` when there is no such id.
pub async fn revoke(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<TokenInfo>> {
    on_backend!(h, "tokens/revoke", |conn, sql| {
        sqlx::query_as(sql).bind(id).fetch_optional(conn).await
    })
}

/// The token with this hash, and whether its last use is older than `every`.
pub async fn by_hash(
    h: &mut impl Handle,
    sha256: &str,
    every: Duration,
) -> sqlx::Result<Option<TokenUse>> {
    on_backend!(h, "tokens/by_hash", |conn, sql| {
        sqlx::query_as(sql)
            .bind(sha256)
            .bind(millis(every))
            .fetch_optional(conn)
            .await
    })
}

/// Records a use now, unless one within `every` already was; true when it wrote.
pub async fn touch(h: &mut impl Handle, id: &str, every: Duration) -> sqlx::Result<bool> {
    on_backend!(h, "tokens/touch", |conn, sql| {
        sqlx::query(sql)
            .bind(id)
            .bind(millis(every))
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}
