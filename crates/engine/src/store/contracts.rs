//! `contracts`: output contracts by name, each with the hash of its content.

use sqlx::{FromRow, SqliteConnection};

use super::now;

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

const COLUMNS: &str = "name, schema, template, samples, hash, created_at, updated_at";

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
    conn: &mut SqliteConnection,
    name: &str,
    schema: &str,
    template: &str,
    samples: &str,
    hash: &str,
) -> sqlx::Result<Upserted> {
    let before: Option<(String,)> = sqlx::query_as("SELECT hash FROM contracts WHERE name = ?")
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?;
    let at = now();
    sqlx::query(
        "INSERT INTO contracts (name, schema, template, samples, hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
         ON CONFLICT (name) DO UPDATE SET schema = excluded.schema, template = excluded.template,
             samples = excluded.samples, hash = excluded.hash,
             updated_at = CASE WHEN contracts.hash = excluded.hash THEN contracts.updated_at ELSE excluded.updated_at END",
    )
    .bind(name)
    .bind(schema)
    .bind(template)
    .bind(samples)
    .bind(hash)
    .bind(&at)
    .execute(conn)
    .await?;
    Ok(match before {
        None => Upserted::Created,
        Some((old,)) if old == hash => Upserted::Unchanged,
        Some(_) => Upserted::Changed,
    })
}

/// One contract by name.
pub async fn get(conn: &mut SqliteConnection, name: &str) -> sqlx::Result<Option<ContractRow>> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM contracts WHERE name = ?"))
        .bind(name)
        .fetch_optional(conn)
        .await
}

/// All contracts, by name.
pub async fn list(conn: &mut SqliteConnection) -> sqlx::Result<Vec<ContractRow>> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM contracts ORDER BY name"))
        .fetch_all(conn)
        .await
}

/// Removes a contract; returns false when there was none of that name.
pub async fn delete(conn: &mut SqliteConnection, name: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM contracts WHERE name = ?")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
