//! `contracts`: output contracts by name, each with the hash of its content.

use sqlx::FromRow;

use super::{on_backend, Handle};

#[derive(FromRow, Clone)]
pub struct ContractRow {
    pub name: String,
    pub schema: String,
    pub template: String,
    pub samples: String,
    pub hash: String,
    pub created_at: String,
    pub updated_at: String,
}

/// What `upsert` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    Created,
    /// The content changed: the hash and `updated_at` are new.
    Changed,
    /// The same content again: nothing changed, earlier checks still hold.
    Unchanged,
}

/// Inserts a contract or replaces one of the same name. `updated_at` moves only when the
/// hash changes, so adding the same contract twice keeps its checks valid.
pub async fn upsert(
    h: &mut impl Handle,
    name: &str,
    schema: &str,
    template: &str,
    samples: &str,
    hash: &str,
) -> sqlx::Result<Upserted> {
    let before: Option<String> = on_backend!(h, "contracts/hash", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(name)
            .fetch_optional(conn)
            .await
    })?;
    on_backend!(h, "contracts/upsert", |conn, sql| {
        sqlx::query(sql)
            .bind(name)
            .bind(schema)
            .bind(template)
            .bind(samples)
            .bind(hash)
            .execute(conn)
            .await
            .map(|_| ())
    })?;
    Ok(match before {
        None => Upserted::Created,
        Some(old) if old == hash => Upserted::Unchanged,
        Some(_) => Upserted::Changed,
    })
}

/// One contract by name.
pub async fn get(h: &mut impl Handle, name: &str) -> sqlx::Result<Option<ContractRow>> {
    on_backend!(h, "contracts/get", |conn, sql| {
        sqlx::query_as(sql).bind(name).fetch_optional(conn).await
    })
}

/// All contracts, by name.
pub async fn list(h: &mut impl Handle) -> sqlx::Result<Vec<ContractRow>> {
    on_backend!(h, "contracts/list", |conn, sql| {
        sqlx::query_as(sql).fetch_all(conn).await
    })
}

/// Removes a contract; returns false when there was none of that name.
pub async fn delete(h: &mut impl Handle, name: &str) -> sqlx::Result<bool> {
    on_backend!(h, "contracts/delete", |conn, sql| {
        sqlx::query(sql)
            .bind(name)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}
