//! `providers`: configured provider endpoints, stored as their validated JSON config.

use sqlx::{FromRow, SqliteConnection};

use super::now;

#[derive(FromRow)]
pub struct ProviderRow {
    pub name: String,
    pub config: String,
    pub created_at: String,
    pub updated_at: String,
}

/// Inserts or replaces a provider; returns true when one of that name existed.
pub async fn upsert(
    conn: &mut SqliteConnection,
    name: &str,
    kind: &str,
    config: &str,
) -> sqlx::Result<bool> {
    let at = now();
    let (created_at,): (String,) = sqlx::query_as(
        "INSERT INTO providers (name, kind, config, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, config = excluded.config, updated_at = excluded.updated_at
         RETURNING created_at",
    )
    .bind(name)
    .bind(kind)
    .bind(config)
    .bind(&at)
    .fetch_all(conn)
    .await?
    .into_iter()
    .next()
    .ok_or(sqlx::Error::RowNotFound)?;
    Ok(created_at != at)
}

/// All providers, by name.
pub async fn list(conn: &mut SqliteConnection) -> sqlx::Result<Vec<ProviderRow>> {
    sqlx::query_as("SELECT name, config, created_at, updated_at FROM providers ORDER BY name")
        .fetch_all(conn)
        .await
}

/// One provider by name.
pub async fn get(conn: &mut SqliteConnection, name: &str) -> sqlx::Result<Option<ProviderRow>> {
    sqlx::query_as("SELECT name, config, created_at, updated_at FROM providers WHERE name = ?")
        .bind(name)
        .fetch_optional(conn)
        .await
}

/// Removes a provider; returns false when there was none of that name.
pub async fn delete(conn: &mut SqliteConnection, name: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM providers WHERE name = ?")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The first of `names` that is not configured, with its position.
pub async fn first_missing(
    conn: &mut SqliteConnection,
    names: &[String],
) -> sqlx::Result<Option<(i64, String)>> {
    sqlx::query_as(
        "SELECT key, value FROM json_each(?) WHERE value NOT IN (SELECT name FROM providers) ORDER BY key LIMIT 1",
    )
    .bind(serde_json::to_string(names).unwrap_or_default())
    .fetch_optional(conn)
    .await
}
