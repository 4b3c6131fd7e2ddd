//! `providers`: configured provider endpoints, stored as their validated JSON config.

use sqlx::FromRow;

use super::{on_backend, Handle};

#[derive(FromRow)]
pub struct ProviderRow {
    pub name: String,
    pub config: String,
    pub created_at: String,
    pub updated_at: String,
}

/// Inserts or replaces a provider; returns true when one of that name existed.
pub async fn upsert(
    h: &mut impl Handle,
    name: &str,
    kind: &str,
    config: &str,
) -> sqlx::Result<bool> {
    on_backend!(h, "providers/upsert", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(name)
            .bind(kind)
            .bind(config)
            .fetch_all(conn)
            .await?
            .into_iter()
            .next()
            .ok_or(sqlx::Error::RowNotFound)
    })
}

/// All providers, by name.
pub async fn list(h: &mut impl Handle) -> sqlx::Result<Vec<ProviderRow>> {
    on_backend!(h, "providers/list", |conn, sql| {
        sqlx::query_as(sql).fetch_all(conn).await
    })
}

/// One provider by name.
pub async fn get(h: &mut impl Handle, name: &str) -> sqlx::Result<Option<ProviderRow>> {
    on_backend!(h, "providers/get", |conn, sql| {
        sqlx::query_as(sql).bind(name).fetch_optional(conn).await
    })
}

/// Removes a provider; returns false when there was none of that name.
pub async fn delete(h: &mut impl Handle, name: &str) -> sqlx::Result<bool> {
    on_backend!(h, "providers/delete", |conn, sql| {
        sqlx::query(sql)
            .bind(name)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// The first of `names` that is not configured, with its position.
pub async fn first_missing(
    h: &mut impl Handle,
    names: &[String],
) -> sqlx::Result<Option<(i64, String)>> {
    let names = serde_json::to_string(names).unwrap_or_default();
    on_backend!(h, "providers/first_missing", |conn, sql| {
        sqlx::query_as(sql).bind(&names).fetch_optional(conn).await
    })
}
