//! Row locks on PostgreSQL, where a transaction that reads to decide first locks the jobs it
//! concerns (docs/adr/, record 0035); on SQLite `BEGIN IMMEDIATE` already holds the whole
//! file, and these do nothing. And the safeguard that ends a transaction left open on SQLite's
//! writer.

use crate::store::ids::is_canonical_id;
use crate::store::{Conn, Handle};

/// Locks the jobs `job_ids` and the jobs of the attempts `attempt_ids` until the transaction
/// ends, in id order, waiting for any other transaction that holds one (PostgreSQL,
/// `jobs/lock`). On SQLite nothing runs: `BEGIN IMMEDIATE` already holds the whole file.
pub async fn lock(
    h: &mut impl Handle,
    job_ids: &[String],
    attempt_ids: &[String],
) -> sqlx::Result<()> {
    if let Conn::Postgres(conn, watch) = h.conn() {
        let sql = crate::store::query!(postgres, "jobs/lock");
        let locking = sqlx::query(sql)
            .bind(canonical_uuids(job_ids))
            .bind(canonical_uuids(attempt_ids))
            .fetch_all(conn);
        watch.guard(locking).await?;
    }
    Ok(())
}

/// [`lock`] for a group of the executor's writes, which never waits for another host: the jobs
/// no other transaction holds are locked, and the held ones are returned as
/// `(job id, attempt id it was asked for by)`, for their writes to step aside (PostgreSQL,
/// `jobs/lock_free`). On SQLite nothing runs and nothing is held.
pub async fn lock_free(
    h: &mut impl Handle,
    job_ids: &[String],
    attempt_ids: &[String],
) -> sqlx::Result<Vec<(String, Option<String>)>> {
    match h.conn() {
        Conn::Postgres(conn, watch) => {
            let sql = crate::store::query!(postgres, "jobs/lock_free");
            let locking = sqlx::query_as(sql)
                .bind(canonical_uuids(job_ids))
                .bind(canonical_uuids(attempt_ids))
                .fetch_all(conn);
            watch.guard(locking).await
        }
        Conn::Sqlite(..) => Ok(Vec::new()),
    }
}

/// The ids among `ids` that are UUIDs in their canonical form (lowercase, hyphenated), as
/// `onejob_uuid` reads them: any other text names no job or attempt, and is passed over.
fn canonical_uuids(ids: &[String]) -> Vec<&str> {
    ids.iter()
        .map(String::as_str)
        .filter(|id| is_canonical_id(id))
        .collect()
}

/// Locks job `id` until the transaction ends unless another transaction holds it: false then,
/// or when there is no such job (PostgreSQL, `jobs/lock_skipping`). Always true on SQLite,
/// whose `BEGIN IMMEDIATE` already holds the whole file.
pub async fn lock_skipping(h: &mut impl Handle, id: &str) -> sqlx::Result<bool> {
    match h.conn() {
        Conn::Postgres(conn, watch) => {
            let sql = crate::store::query!(postgres, "jobs/lock_skipping");
            let locking = sqlx::query_scalar(sql).bind(id).fetch_optional(conn);
            let locked: Option<String> = watch.guard(locking).await?;
            Ok(locked.is_some())
        }
        Conn::Sqlite(..) => Ok(true),
    }
}

/// Ends a transaction left open on the SQLite writer, if any; nothing when none is. A lone
/// [`submit`](fn@super::submit) is one autocommitted statement and leaves none open, so after
/// it this is a safeguard only (the lone submit was once `BEGIN IMMEDIATE` … `COMMIT` in one
/// call).
pub async fn rollback(h: &mut impl Handle) {
    if let Conn::Sqlite(conn, _) = h.conn() {
        // "No transaction is active" is the common case: a lone submit begins none, and
        // SQLite rolls back a statement that fails by itself.
        let _ = sqlx::query("ROLLBACK").execute(conn).await;
    }
}

#[cfg(test)]
mod tests {
    use super::canonical_uuids;

    #[test]
    fn only_canonical_uuids_name_jobs_to_lock() {
        let given = [
            "0192b7a4-5c3e-7d10-8f2a-1b2c3d4e5f60", // canonical
            "0192B7A4-5C3E-7D10-8F2A-1B2C3D4E5F60", // upper case: onejob_uuid names nothing
            "{0192b7a4-5c3e-7d10-8f2a-1b2c3d4e5f60}",
            "0192b7a45c3e7d108f2a1b2c3d4e5f60",
            "0192b7a4-5c3e-7d10-8f2a-1b2c3d4e5f6g",
            "0192b7a4-5c3e-7d10-8f2a+1b2c3d4e5f60",
            "",
            "not a job",
        ]
        .map(String::from);
        assert_eq!(
            canonical_uuids(&given),
            ["0192b7a4-5c3e-7d10-8f2a-1b2c3d4e5f60"]
        );
    }
}
