//! Many finished jobs written straight into a SQLite ledger in one statement: far faster than
//! as many submits, and never executed since they are already cancelled.

use sqlx::Connection;

/// Writes `n` cancelled jobs of `owner` into the ledger file at `db`, keys `seed-1` to
/// `seed-N`, ids `01900000-0000-7000-8000-000000000001` upwards, routed to `sandbox`.
pub async fn seed_jobs(db: &std::path::Path, owner: &str, n: u32) -> sqlx::Result<()> {
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", db.display())).await?;
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
         INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version,
                           error, created_at, updated_at, finished_at)
         SELECT printf('01900000-0000-7000-8000-%012d', i), ?2, 'seed-' || i,
                printf('%064d', i), '{\"route\":[\"sandbox\"],\"input\":{\"n\":' || i || '}}',
                'cancelled', 1, '{\"code\":\"cancelled\",\"message\":\"seeded\"}',
                strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         FROM n",
    )
    .bind(n)
    .bind(owner)
    .execute(&mut conn)
    .await?;
    conn.close().await
}
