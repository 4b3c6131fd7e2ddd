//! A new attempt: the job's next one (a person's retry, the executor's claim), or a queued
//! job's first, several at once on PostgreSQL.

use sqlx::FromRow;

use crate::store::queries;
use crate::store::rows::{AttemptRow, JobRow};
use crate::store::{Conn, Handle};

/// What [`insert_next`] wrote: nothing, or the attempt and, when asked, its job as moved.
pub struct Inserted {
    pub attempt: Option<AttemptRow>,
    pub job: Option<JobRow>,
}

/// Inserts the job's next attempt as `pending`, with its `attempt_created` event written by the
/// same call (`created` says who created it, whether a person chose the provider, and the bulk
/// operation that applied the person's action, which the event names), and with
/// `move_job` the job moved from `queued` to `running`. Nothing is written while another
/// attempt is open (the partial unique index refuses it, and that refusal is the only check) or
/// when `provider` is not configured.
pub async fn insert_next(
    h: &mut impl Handle,
    id: &str,
    job_id: &str,
    provider: &str,
    job_version: i64,
    created: (&str, &str, bool, Option<&str>),
    move_job: bool,
) -> sqlx::Result<Inserted> {
    let (kind, actor, explicit, bulk) = created;
    macro_rules! bound {
        ($sql:expr) => {
            sqlx::query($sql)
                .bind(id)
                .bind(job_id)
                .bind(provider)
                .bind(job_version)
                .bind(kind)
                .bind(actor)
                .bind(explicit)
                .bind(move_job)
                .bind(bulk)
        };
    }
    let sql = queries!("attempts/insert_next");
    match h.conn() {
        Conn::Sqlite(conn, at) => inserted_rows(
            bound!(sql.sqlite)
                .fetch_all(conn)
                .await
                .map_err(|e| crate::store::sqlite::named(at, e))?,
        ),
        Conn::Postgres(conn, watch) => {
            let row = watch
                .guard(bound!(sql.postgres).fetch_optional(&mut *conn))
                .await?;
            inserted_row(row)
        }
    }
}

/// Inserts a queued job's first attempt, `pending` at its route's primary, with its
/// `attempt_created` event (`created` says who created it) and the job moved to `running`, in
/// one call: the route policy's first step, for a job with no attempt yet. Nothing is written
/// unless the job is `queued` with no backoff set and no attempt, and its primary and its
/// contract (if it names one) are configured; the caller then decides by the policy.
pub async fn insert_first(
    h: &mut impl Handle,
    id: &str,
    job_id: &str,
    created: (&str, &str),
) -> sqlx::Result<Inserted> {
    let (kind, actor) = created;
    if let Conn::Sqlite(conn, at) = h.conn() {
        let sql = crate::store::query!(sqlite, "attempts/insert_first");
        let rows = sqlx::query(sql)
            .bind(id)
            .bind(job_id)
            .bind(kind)
            .bind(actor)
            .fetch_all(conn)
            .await
            .map_err(|e| crate::store::sqlite::named(at, e))?;
        return inserted_rows(rows);
    }
    // On PostgreSQL a run of one: the first attempt's guards are written once, in
    // `attempts/insert_first_many`. An id that is not a canonical UUID names no job.
    let nothing = || Inserted {
        attempt: None,
        job: None,
    };
    if !crate::store::ids::is_canonical_id(job_id) {
        return Ok(nothing());
    }
    let firsts = [(id.to_owned(), job_id.to_owned())];
    let inserted = insert_first_many(h, &firsts, created).await?;
    Ok(inserted
        .and_then(|mut inserted| inserted.remove(job_id))
        .unwrap_or_else(nothing))
}

/// [`insert_first`] for several queued jobs, each given its first attempt's id, in one
/// statement (PostgreSQL, `attempts/insert_first_many`): what was written for each job, by the
/// job's id; a job missing had nothing written. `None` on SQLite, where each job is claimed
/// with its own statements.
pub async fn insert_first_many(
    h: &mut impl Handle,
    firsts: &[(String, String)],
    created: (&str, &str),
) -> sqlx::Result<Option<std::collections::HashMap<String, Inserted>>> {
    let Conn::Postgres(conn, watch) = h.conn() else {
        return Ok(None);
    };
    let (kind, actor) = created;
    let sql = crate::store::query!(postgres, "attempts/insert_first_many");
    let inserting = sqlx::query(sql)
        .bind(firsts.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>())
        .bind(
            firsts
                .iter()
                .map(|(_, job)| job.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(kind)
        .bind(actor)
        .fetch_all(conn);
    let mut inserted = std::collections::HashMap::new();
    for row in watch.guard(inserting).await? {
        let one = inserted_row(Some(row))?;
        if let Some(attempt) = &one.attempt {
            inserted.insert(attempt.job_id.clone(), one);
        }
    }
    Ok(Some(inserted))
}

/// An insert's rows on SQLite, in order: the attempt, then the job as moved.
fn inserted_rows(rows: Vec<sqlx::sqlite::SqliteRow>) -> sqlx::Result<Inserted> {
    let mut rows = rows.iter();
    let attempt = rows.next().map(AttemptRow::from_row).transpose()?;
    let job = rows.next().map(JobRow::from_row).transpose()?;
    Ok(Inserted { attempt, job })
}

/// An insert's row on PostgreSQL: the attempt, beside its job as moved (column `job`, none
/// when it was not).
fn inserted_row(row: Option<sqlx::postgres::PgRow>) -> sqlx::Result<Inserted> {
    let Some(row) = row else {
        return Ok(Inserted {
            attempt: None,
            job: None,
        });
    };
    Ok(Inserted {
        attempt: Some(AttemptRow::from_row(&row)?),
        job: crate::store::row_in_column(&row, "job")?,
    })
}
