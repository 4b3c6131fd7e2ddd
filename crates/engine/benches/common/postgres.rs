//! The PostgreSQL baseline: raw single-row INSERTs, one commit each, into a table shaped like
//! the ledger's `jobs` in a database of its own on the same server.

use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};

use super::{intent, OWNER};

/// A connection to a database with a table shaped like the ledger's `jobs`: the same columns,
/// key and indexes, none of its triggers.
pub async fn raw_connection(url: &str) -> Result<PgConnection, Box<dyn std::error::Error>> {
    let mut conn = PgConnection::connect(url).await?;
    sqlx::raw_sql(
        "CREATE TABLE jobs (
            id uuid PRIMARY KEY, owner_id text NOT NULL, idempotency_key text NOT NULL,
            fingerprint text NOT NULL, intent json NOT NULL, status text NOT NULL,
            version bigint NOT NULL DEFAULT 0, completed_by uuid, result json, error json,
            flagged_for_review boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
            finished_at timestamptz, not_before timestamptz,
            UNIQUE (owner_id, idempotency_key));
         CREATE INDEX jobs_by_owner ON jobs (owner_id, id);
         CREATE INDEX jobs_by_owner_status ON jobs (owner_id, status, id);",
    )
    .execute(&mut conn)
    .await?;
    Ok(conn)
}

/// One INSERT per key, each its own commit; the latency of each.
pub async fn raw_inserts(
    conn: &mut PgConnection,
    keys: std::ops::Range<usize>,
) -> Result<Vec<Duration>, sqlx::Error> {
    const INSERT: &str =
        "INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status)
         VALUES ($1::uuid, $2, $3, $4, $5::json, 'queued')";
    timed_submits(conn, INSERT, "raw", keys).await
}

/// The lone submit's own statement, `statement` (the engine's `jobs/submit.sql` as its build
/// writes it out, which only the engine's own benches can include), one autocommit each on a
/// plain connection to a ledger: what the server does for a submit, without the engine's pool,
/// queue and parsing around it. The latency of each.
pub async fn submit_statements(
    conn: &mut PgConnection,
    statement: &str,
    keys: std::ops::Range<usize>,
) -> Result<Vec<Duration>, sqlx::Error> {
    timed_submits(conn, statement, "statement", keys).await
}

/// The least a submit must write by SPEC, by hand: the job row, its `submitted` event and its
/// route's rows in `job_providers`, in one autocommit statement on a plain connection to a
/// ledger whose triggers on `jobs` and `job_events` are off (see `hand_written_ledger`). No
/// name check, no notification, no engine around it. The latency of each.
pub async fn minimal_submits(
    conn: &mut PgConnection,
    keys: std::ops::Range<usize>,
) -> Result<Vec<Duration>, sqlx::Error> {
    const STATEMENT: &str = "WITH job AS (
            INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version,
                              created_at, updated_at)
            VALUES ($1::uuid, $2, $3, $4, $5::json, 'queued', 0, now(), now())
            RETURNING id, owner_id, intent, created_at
        ), submitted AS (
            INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail)
            SELECT id, NULL, created_at, 'submitted', 'user',
                   json_build_object('idempotency_key', $3::text, 'fingerprint', $4::text)
            FROM job
        ), route AS (
            INSERT INTO job_providers (provider, owner_id, job_id, in_route)
            SELECT r.name, job.owner_id, job.id, true
            FROM job, json_array_elements_text(job.intent -> 'route') AS r (name)
        )
        SELECT id::text FROM job";
    timed_submits(conn, STATEMENT, "hand", keys).await
}

/// Runs `statement` once per key, each its own autocommit, bound as a submit is (a new id, the
/// owner, `<prefix>-<key>` as the idempotency key, a fingerprint, the intent) and its rows read;
/// the latency of each.
async fn timed_submits(
    conn: &mut PgConnection,
    statement: &str,
    prefix: &str,
    keys: std::ops::Range<usize>,
) -> Result<Vec<Duration>, sqlx::Error> {
    let mut times = Vec::with_capacity(keys.len());
    for i in keys {
        let body = intent(i);
        let id = uuid::Uuid::now_v7().to_string();
        let start = Instant::now();
        sqlx::query(statement)
            .bind(&id)
            .bind(OWNER)
            .bind(format!("{prefix}-{i}"))
            .bind("f")
            .bind(&body)
            .fetch_all(&mut *conn)
            .await?;
        times.push(start.elapsed());
    }
    Ok(times)
}
