//! `budgets`: limits on what attempts may spend in a period (SPEC §17). What a budget holds is
//! what the attempts it covers hold in its period (docs/adr/0063, 0064).

use sqlx::FromRow;

use super::{on_backend, Handle};

#[derive(FromRow)]
pub struct BudgetRow {
    pub name: String,
    pub owner_id: Option<String>,
    pub provider: Option<String>,
    pub currency: String,
    pub limit_nanos: i64,
    pub period: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A budget that covers an attempt about to be sent: its name, its limit, how long until its
/// next period, and what it holds now (read after its row is taken).
#[derive(FromRow)]
pub struct Covering {
    pub name: String,
    pub limit_nanos: i64,
    pub next_in_ms: i64,
    pub used: i64,
}

/// What a budget is set to.
pub struct NewBudget<'a> {
    pub name: &'a str,
    pub owner: Option<&'a str>,
    pub provider: Option<&'a str>,
    pub currency: &'a str,
    pub limit_nanos: i64,
    pub period: &'a str,
}

/// Sets a budget, replacing one of the same name.
pub async fn upsert(h: &mut impl Handle, b: &NewBudget<'_>) -> sqlx::Result<()> {
    on_backend!(h, "budgets/upsert", |conn, sql| {
        sqlx::query(sql)
            .bind(b.name)
            .bind(b.owner)
            .bind(b.provider)
            .bind(b.currency)
            .bind(b.limit_nanos)
            .bind(b.period)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

/// The budgets of `owner` (`None`: every budget), by name.
pub async fn list(h: &mut impl Handle, owner: Option<&str>) -> sqlx::Result<Vec<BudgetRow>> {
    on_backend!(h, "budgets/list", |conn, sql| {
        sqlx::query_as(sql).bind(owner).fetch_all(conn).await
    })
}

/// The budget named `name`, whoever owns it.
pub async fn named(h: &mut impl Handle, name: &str) -> sqlx::Result<Option<BudgetRow>> {
    on_backend!(h, "budgets/named", |conn, sql| {
        sqlx::query_as(sql).bind(name).fetch_optional(conn).await
    })
}

/// Removes a budget (only `owner`'s, when given); whether one was removed.
pub async fn delete(h: &mut impl Handle, name: &str, owner: Option<&str>) -> sqlx::Result<bool> {
    on_backend!(h, "budgets/delete", |conn, sql| {
        sqlx::query(sql)
            .bind(name)
            .bind(owner)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() > 0)
    })
}

/// The budgets that cover attempt `attempt_id` charged in `currency`, by name, each with what
/// it holds now; on PostgreSQL each one's row is taken until the transaction ends, before what
/// it holds is read.
pub async fn covering(
    h: &mut impl Handle,
    attempt_id: &str,
    currency: &str,
) -> sqlx::Result<Vec<Covering>> {
    on_backend!(h, "budgets/covering", |conn, sql| {
        sqlx::query_as(sql)
            .bind(attempt_id)
            .bind(currency)
            .fetch_all(conn)
            .await
    })
}

/// The names of the budgets that cover any of `sending` (those with a charge), each one's row
/// taken until the transaction ends, in name order (PostgreSQL, before a run of sends:
/// `attempts/send_many.sql`); none on SQLite, where the writer holds the whole file.
pub async fn lock_covering_many(
    h: &mut impl Handle,
    sending: &[super::attempts::Sending<'_>],
) -> sqlx::Result<Vec<String>> {
    let super::Conn::Postgres(conn, watch) = h.conn() else {
        return Ok(Vec::new());
    };
    let sql = crate::store::query!(postgres, "budgets/lock_covering_many");
    let names = sqlx::query_scalar(sql)
        .bind(sending.iter().map(|s| s.id).collect::<Vec<_>>())
        .bind(sending.iter().map(|s| s.currency()).collect::<Vec<_>>())
        .fetch_all(conn);
    watch.guard(names).await
}

/// What budget `name` holds in its period now, in billionths (`budgets/used.sql`): the totals
/// the ledger keeps per day of what attempts hold (docs/adr/0064).
pub async fn used(h: &mut impl Handle, name: &str) -> sqlx::Result<i64> {
    on_backend!(h, "budgets/used", |conn, sql| {
        sqlx::query_scalar(sql).bind(name).fetch_one(conn).await
    })
}
