//! Submits: a lone one (one autocommitted statement), one of a group inside the group's
//! transaction, and a group's jobs in one statement, with the holders of their keys.

use sqlx::FromRow;

use crate::job::JobStatus;
use crate::store::rows::JobRow;
use crate::store::{on_backend, query, Conn, Handle};

impl JobRow {
    /// A job just inserted by `job`, queued at version 0 at `at`, as the row now reads.
    fn queued(job: &NewJob<'_>, at: String) -> JobRow {
        JobRow {
            id: job.id.to_owned(),
            owner_id: job.owner_id.to_owned(),
            idempotency_key: job.idempotency_key.to_owned(),
            fingerprint: job.fingerprint.to_owned(),
            intent: job.intent.to_owned(),
            status: JobStatus::Queued.as_str().to_owned(),
            version: 0,
            completed_by: None,
            result: None,
            error: None,
            flagged_for_review: false,
            created_at: at.clone(),
            updated_at: at,
            finished_at: None,
            not_before: None,
        }
    }
}

/// A job to insert.
pub struct NewJob<'a> {
    pub id: &'a str,
    pub owner_id: &'a str,
    pub idempotency_key: &'a str,
    pub fingerprint: &'a str,
    pub intent: &'a str,
}

/// `$query` with the new job's columns bound in the order both submit statements take them
/// (`jobs/submit.sql`, `jobs/submit_step.sql`): a macro, as `sqlx::query` and
/// `sqlx::query_as` on either backend are four types.
macro_rules! bind_job {
    ($query:expr, $job:expr) => {
        $query
            .bind($job.id)
            .bind($job.owner_id)
            .bind($job.idempotency_key)
            .bind($job.fingerprint)
            .bind($job.intent)
    };
}

/// A lone submit, committed when this returns `Ok`: inserts a `queued` job at version 0 unless
/// the owner already used the key. On both backends it is one autocommitted statement
/// (`jobs/submit.sql`), its triggers inside it. On SQLite it has no `RETURNING`: the new job is
/// the one bound, and `None` means the key was taken (read its holder then). On PostgreSQL it
/// returns the job holding the key (the new one when its id is `job.id`); `None` when the key's
/// holder committed while it ran (read it then).
pub async fn submit(h: &mut impl Handle, job: &NewJob<'_>) -> sqlx::Result<Option<JobRow>> {
    let sql = crate::store::queries!("jobs/submit");
    match h.conn() {
        // No row comes back: the job is the one bound, at the time bound (SQLite reads the
        // same clock), and its `submitted` event carries that time too.
        Conn::Sqlite(conn, ledger) => {
            let at = crate::store::now();
            let done = bind_job!(sqlx::query(sql.sqlite), job)
                .bind(&at)
                .execute(conn)
                .await
                .map_err(|e| crate::store::sqlite::named(ledger, e))?;
            Ok((done.rows_affected() == 1).then(|| JobRow::queued(job, at)))
        }
        Conn::Postgres(conn, watch) => {
            let row = watch
                .guard(bind_job!(sqlx::query(sql.postgres), job).fetch_optional(conn))
                .await?;
            row.as_ref().map(JobRow::from_row).transpose()
        }
    }
}

/// One submit of a group, inside the group's write transaction: as [`submit`], without the
/// commit. On SQLite the statements run in one call under the savepoint `onejob_step`, which
/// the caller rolls back to and releases after an error (`sqlite/…/jobs/submit_step.sql`); on
/// PostgreSQL it is the lone submit's own statement (`jobs/submit.sql`), inside the group's
/// transaction and a savepoint the caller holds around it.
pub async fn submit_step(h: &mut impl Handle, job: &NewJob<'_>) -> sqlx::Result<Option<JobRow>> {
    match h.conn() {
        Conn::Sqlite(conn, ledger) => {
            bind_job!(sqlx::query_as(query!(sqlite, "jobs/submit_step")), job)
                .fetch_all(conn)
                .await
                .map(|rows| rows.into_iter().next())
                .map_err(|e| crate::store::sqlite::named(ledger, e))
        }
        Conn::Postgres(conn, watch) => {
            let submitted =
                bind_job!(sqlx::query_as(query!(postgres, "jobs/submit")), job).fetch_all(conn);
            watch
                .guard(submitted)
                .await
                .map(|rows| rows.into_iter().next())
        }
    }
}

/// A group's jobs in one statement, each unless its owner already used its key; `group` is a
/// JSON array with one `[id, owner, key, fingerprint, intent]` per submit. One refused job (a
/// name the schema's check refuses) fails the whole statement. Run it inside a transaction.
pub async fn insert_many(h: &mut impl Handle, group: &str) -> sqlx::Result<u64> {
    on_backend!(h, "jobs/insert_many", |conn, sql| {
        sqlx::query(sql)
            .bind(group)
            .execute(conn)
            .await
            .map(|done| done.rows_affected())
    })
}

/// The jobs holding the keys of `group` (as for [`insert_many`]), one row per job.
pub async fn holders(h: &mut impl Handle, group: &str) -> sqlx::Result<Vec<JobRow>> {
    on_backend!(h, "jobs/holders", |conn, sql| {
        sqlx::query_as(sql).bind(group).fetch_all(conn).await
    })
}
