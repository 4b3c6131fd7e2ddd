//! `contract_checks`: every run of a contract's samples against a provider, kept as made.

use sqlx::FromRow;

use super::{on_backend, Handle};

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

/// Appends a check, stamped by the database's clock; returns that time.
pub async fn insert(h: &mut impl Handle, check: &CheckRow) -> sqlx::Result<String> {
    on_backend!(h, "checks/insert", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(&check.id)
            .bind(&check.contract)
            .bind(&check.contract_hash)
            .bind(&check.provider)
            .bind(&check.provider_updated_at)
            .bind(check.passed)
            .bind(&check.samples)
            .fetch_one(conn)
            .await
    })
}

/// The last check of a contract against a provider.
pub async fn latest(
    h: &mut impl Handle,
    contract: &str,
    provider: &str,
) -> sqlx::Result<Option<CheckRow>> {
    on_backend!(h, "checks/latest", |conn, sql| {
        sqlx::query_as(sql)
            .bind(contract)
            .bind(provider)
            .fetch_optional(conn)
            .await
    })
}

/// The last check of a contract against each provider it was checked with, by provider.
pub async fn latest_per_provider(
    h: &mut impl Handle,
    contract: &str,
) -> sqlx::Result<Vec<CheckRow>> {
    on_backend!(h, "checks/latest_per_provider", |conn, sql| {
        sqlx::query_as(sql).bind(contract).fetch_all(conn).await
    })
}

/// Removes every check of a contract (with the contract itself: a contract added again under
/// the name starts with no checks).
pub async fn delete_for_contract(h: &mut impl Handle, contract: &str) -> sqlx::Result<()> {
    on_backend!(h, "checks/delete_for_contract", |conn, sql| {
        sqlx::query(sql)
            .bind(contract)
            .execute(conn)
            .await
            .map(|_| ())
    })
}
