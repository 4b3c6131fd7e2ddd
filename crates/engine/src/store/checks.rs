//! `contract_checks`: every run of a contract's samples against a provider, kept as made.

use sqlx::{FromRow, SqliteConnection};

#[derive(FromRow, Clone)]
pub struct CheckRow {
    pub id: String,
    pub contract: String,
    pub contract_hash: String,
    pub provider: String,
    pub provider_updated_at: String,
    pub passed: bool,
    pub samples: String,
    pub checked_at: String,
}

const COLUMNS: &str =
    "id, contract, contract_hash, provider, provider_updated_at, passed, samples, checked_at";

/// Appends a check.
pub async fn insert(conn: &mut SqliteConnection, check: &CheckRow) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO contract_checks (id, contract, contract_hash, provider, provider_updated_at, passed, samples, checked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&check.id)
    .bind(&check.contract)
    .bind(&check.contract_hash)
    .bind(&check.provider)
    .bind(&check.provider_updated_at)
    .bind(check.passed)
    .bind(&check.samples)
    .bind(&check.checked_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The last check of a contract against a provider.
pub async fn latest(
    conn: &mut SqliteConnection,
    contract: &str,
    provider: &str,
) -> sqlx::Result<Option<CheckRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM contract_checks WHERE contract = ? AND provider = ? ORDER BY id DESC LIMIT 1"
    ))
    .bind(contract)
    .bind(provider)
    .fetch_optional(conn)
    .await
}

/// The last check of a contract against each provider it was checked with, by provider.
pub async fn latest_per_provider(
    conn: &mut SqliteConnection,
    contract: &str,
) -> sqlx::Result<Vec<CheckRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM contract_checks c WHERE contract = ?1
           AND id = (SELECT max(id) FROM contract_checks WHERE contract = ?1 AND provider = c.provider)
         ORDER BY provider"
    ))
    .bind(contract)
    .fetch_all(conn)
    .await
}

/// Removes every check of a contract (with the contract itself: a contract added again under
/// the name starts with no checks).
pub async fn delete_for_contract(conn: &mut SqliteConnection, contract: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM contract_checks WHERE contract = ?")
        .bind(contract)
        .execute(conn)
        .await?;
    Ok(())
}
