//! `attempts`: tries under a job; one open per job by a partial unique index, every move
//! guarded by the state it expects.

use std::time::Duration;

use sqlx::FromRow;

use super::queries;

use super::{millis, on_backend, Conn, Handle};
use crate::attempt::AttemptState;
use crate::model::AttemptError;

pub use super::rows::AttemptRow;
use super::rows::JobRow;

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
        super::Conn::Sqlite(conn, at) => inserted_rows(
            bound!(sql.sqlite)
                .fetch_all(conn)
                .await
                .map_err(|e| super::sqlite::named(at, e))?,
        ),
        super::Conn::Postgres(conn, watch) => {
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
        let sql = include_str!("sqlite/queries/attempts/insert_first.sql");
        let rows = sqlx::query(sql)
            .bind(id)
            .bind(job_id)
            .bind(kind)
            .bind(actor)
            .fetch_all(conn)
            .await
            .map_err(|e| super::sqlite::named(at, e))?;
        return inserted_rows(rows);
    }
    // On PostgreSQL a run of one: the first attempt's guards are written once, in
    // `attempts/insert_first_many`. An id that is not a canonical UUID names no job.
    let nothing = || Inserted {
        attempt: None,
        job: None,
    };
    if !super::ids::is_canonical_id(job_id) {
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
    let sql = include_str!("postgres/queries/attempts/insert_first_many.sql");
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
        job: super::row_in_column(&row, "job")?,
    })
}

/// An attempt by id, whoever owns its job (for the executor).
pub async fn by_id(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/by_id", |conn, sql| {
        sqlx::query_as(sql).bind(id).fetch_optional(conn).await
    })
}

/// An attempt by id if its job belongs to `owner`.
pub async fn owned(h: &mut impl Handle, owner: &str, id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/owned", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(owner)
            .fetch_optional(conn)
            .await
    })
}

/// The job's open attempt, if any.
pub async fn open_for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/open_for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_optional(conn).await
    })
}

/// The job's last attempt, if any.
pub async fn last_for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/last_for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_optional(conn).await
    })
}

/// All of a job's attempts, by number.
pub async fn for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_all(conn).await
    })
}

/// Locks the jobs of in-flight attempts whose lease has expired, passing over jobs another
/// transaction holds (PostgreSQL, `attempts/lock_expired`); recovery then reads the expired
/// attempts of the jobs it holds. On SQLite nothing runs (`BEGIN IMMEDIATE` holds the file).
/// Returns the ids of the jobs it locked; `None` on SQLite, where every job is held.
pub async fn lock_expired(h: &mut impl Handle) -> sqlx::Result<Option<Vec<String>>> {
    match h.conn() {
        super::Conn::Postgres(conn, watch) => {
            let sql = include_str!("postgres/queries/attempts/lock_expired.sql");
            let locking = sqlx::query_scalar(sql).fetch_all(conn);
            Ok(Some(watch.guard(locking).await?))
        }
        super::Conn::Sqlite(..) => Ok(None),
    }
}

/// `in_flight` attempts whose lease has run out by the database's clock.
pub async fn expired_leases(h: &mut impl Handle) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/expired_leases", |conn, sql| {
        sqlx::query_as(sql).fetch_all(conn).await
    })
}

/// Columns a transition may set alongside the state; `None` leaves a column as it is.
#[derive(Default)]
pub struct Patch<'a> {
    pub error: Option<&'a AttemptError>,
    pub http_status: Option<u16>,
    pub executor_id: Option<&'a str>,
    /// A new lease, from now by the database's clock (kept only `in_flight`).
    pub lease: Option<Duration>,
    pub sent: bool,
    pub finished: bool,
    pub flag: bool,
}

/// The event that records a move, written by the move's own statement.
pub struct MoveEvent<'a> {
    pub kind: &'a str,
    pub actor: &'a str,
    /// JSON text.
    pub detail: &'a str,
}

/// Moves an attempt from `from` to `to` in one guarded statement that also appends the move's
/// event, and returns the attempt as moved; `None`, with nothing written, when it was no longer
/// in `from` (someone moved it first: re-read, never overwrite), or when `job_must_run` and its
/// job is not `running` without a result.
pub async fn moved(
    h: &mut impl Handle,
    id: &str,
    from: AttemptState,
    to: AttemptState,
    patch: &Patch<'_>,
    job_must_run: bool,
    event: &MoveEvent<'_>,
) -> sqlx::Result<Option<AttemptRow>> {
    on_backend!(h, "attempts/move", |conn, sql| {
        sqlx::query_as(sql)
            .bind(to.as_str())
            .bind(patch.error.map(|e| e.kind.as_str()))
            .bind(patch.error.map(|e| e.message.as_str()))
            .bind(patch.http_status.map(i64::from))
            .bind(patch.executor_id)
            .bind(patch.lease.map(millis))
            .bind(patch.sent)
            .bind(patch.finished)
            .bind(patch.flag)
            .bind(id)
            .bind(from.as_str())
            .bind(job_must_run)
            .bind(event.kind)
            .bind(event.actor)
            .bind(event.detail)
            // Stepped to its end: on SQLite the event's statement runs after the move's.
            .fetch_all(conn)
            .await
            .map(|rows| rows.into_iter().next())
    })
}

/// One attempt of [`send_many`].
pub struct Sending<'a> {
    pub id: &'a str,
    pub executor_id: &'a str,
    pub lease: Duration,
    /// The move's event detail, JSON text.
    pub detail: &'a str,
}

/// [`moved`] from `pending` to `in_flight` for the executor, for several attempts of different
/// jobs in one statement (PostgreSQL, `attempts/send_many`): each moves only while `pending`
/// with its job `running` without a result, and gets its event (`kind`, `actor`). The
/// attempts that moved; one missing wrote nothing. `None` on SQLite, where each move runs its
/// own statement.
pub async fn send_many(
    h: &mut impl Handle,
    sending: &[Sending<'_>],
    kind: &str,
    actor: &str,
) -> sqlx::Result<Option<Vec<AttemptRow>>> {
    let Conn::Postgres(conn, watch) = h.conn() else {
        return Ok(None);
    };
    let sql = include_str!("postgres/queries/attempts/send_many.sql");
    let sent = sqlx::query_as(sql)
        .bind(sending.iter().map(|s| s.id).collect::<Vec<_>>())
        .bind(sending.iter().map(|s| s.executor_id).collect::<Vec<_>>())
        .bind(sending.iter().map(|s| millis(s.lease)).collect::<Vec<_>>())
        .bind(sending.iter().map(|s| s.detail).collect::<Vec<_>>())
        .bind(kind)
        .bind(actor)
        .fetch_all(conn);
    watch.guard(sent).await.map(Some)
}

/// Flags an attempt for review without moving it.
pub async fn flag(h: &mut impl Handle, id: &str) -> sqlx::Result<()> {
    on_backend!(h, "attempts/flag", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
    })
}

/// Holds `unknown` attempt `id` for a keyed replay for `hold` from now, unless it moved, is
/// flagged, or another replay holds it still; returns whether it is held.
pub async fn hold_replay(h: &mut impl Handle, id: &str, hold: Duration) -> sqlx::Result<bool> {
    on_backend!(h, "attempts/hold_replay", |conn, sql| {
        sqlx::query(sql)
            .bind(id)
            .bind(millis(hold))
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// Lets go of a replay's hold on `unknown` attempt `id`.
pub async fn release_replay(h: &mut impl Handle, id: &str) -> sqlx::Result<()> {
    on_backend!(h, "attempts/release_replay", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
    })
}

/// Until when a keyed replay holds `unknown` attempt `id`, by the ledger's clock; `None` when
/// none does.
pub async fn replay_held(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<String>> {
    on_backend!(h, "attempts/replay_held", |conn, sql| {
        sqlx::query_scalar(sql).bind(id).fetch_optional(conn).await
    })
}

/// Extends the lease of an attempt the executor still holds in flight to `lease` from now.
pub async fn renew_lease(
    h: &mut impl Handle,
    id: &str,
    executor_id: &str,
    lease: Duration,
) -> sqlx::Result<bool> {
    on_backend!(h, "attempts/renew_lease", |conn, sql| {
        sqlx::query(sql)
            .bind(millis(lease))
            .bind(id)
            .bind(executor_id)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// Saves the provider's request id (and status) as soon as response headers arrive.
pub async fn record_response_head(
    h: &mut impl Handle,
    id: &str,
    request_id: Option<&str>,
    http_status: Option<u16>,
) -> sqlx::Result<bool> {
    on_backend!(h, "attempts/record_response_head", |conn, sql| {
        sqlx::query(sql)
            .bind(request_id)
            .bind(http_status.map(i64::from))
            .bind(id)
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// Attempts committed `pending` (never sent) whose job is `running`, oldest first.
pub async fn pending(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/pending", |conn, sql| {
        sqlx::query_as(sql)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// [`pending`] for an executor's pass: on PostgreSQL, less those committed in the last
/// seconds, which another host that claimed them is about to send.
pub async fn pending_left(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    match h.conn() {
        crate::store::Conn::Postgres(conn, watch) => {
            let sql = include_str!("postgres/queries/attempts/pending_left.sql");
            let reading = sqlx::query_as(sql).bind(i64::from(limit)).fetch_all(conn);
            watch.guard(reading).await
        }
        crate::store::Conn::Sqlite(..) => pending(h, limit).await,
    }
}

/// Attempts in `unknown` whose request can no longer be answered (their provider's hard
/// deadline passed since they were sent, by the database's clock), oldest first, for status
/// lookups.
pub async fn unknown(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<AttemptRow>> {
    on_backend!(h, "attempts/unknown", |conn, sql| {
        sqlx::query_as(sql)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// How long attempt `id`'s request may still be answered: the time left until its provider's
/// hard deadline has passed since it was sent, by the database's clock (zero once it has);
/// `None` when the attempt or its provider is gone.
pub async fn lookup_wait(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<Duration>> {
    let left: Option<i64> = on_backend!(h, "attempts/lookup_wait", |conn, sql| {
        sqlx::query_scalar(sql).bind(id).fetch_optional(conn).await
    })?;
    Ok(left.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))))
}

/// Up to `limit` `unknown` attempts a keyed replay may send again now (see
/// `attempts/replayable.sql`): the margin is `fraction` of the provider's key retention, at
/// least `floor`.
pub async fn replayable(
    h: &mut impl Handle,
    limit: u32,
    fraction: f64,
    floor: Duration,
) -> sqlx::Result<Vec<AttemptRow>> {
    let floor_ms = floor.as_millis() as f64;
    on_backend!(h, "attempts/replayable", |conn, sql| {
        sqlx::query_as(sql)
            .bind(i64::from(limit))
            .bind(fraction)
            .bind(floor_ms)
            .fetch_all(conn)
            .await
    })
}

/// Attempt `id`'s replay window by the database's clock: milliseconds until its hard deadline
/// has passed since it was sent (0 once it has), and until its provider's key retention less
/// the margin runs out, counted from the key's first use there (the earliest send of the job's
/// attempts at that provider; negative once it has; `None` without a retention). `None` when
/// the attempt or its provider is gone.
pub async fn replay_window(
    h: &mut impl Handle,
    id: &str,
    fraction: f64,
    floor: Duration,
) -> sqlx::Result<Option<(i64, Option<i64>)>> {
    let floor_ms = floor.as_millis() as f64;
    on_backend!(h, "attempts/replay_window", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(fraction)
            .bind(floor_ms)
            .fetch_optional(conn)
            .await
    })
}

/// Keeps an AI provider's answer metadata: its token usage, and the answer's own id as the
/// request id when the response headers carried none.
pub async fn record_usage(
    h: &mut impl Handle,
    id: &str,
    request_id: Option<&str>,
    usage: Option<&str>,
) -> sqlx::Result<()> {
    on_backend!(h, "attempts/record_usage", |conn, sql| {
        sqlx::query(sql)
            .bind(request_id)
            .bind(usage)
            .bind(id)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

/// An attempt's recorded token usage, if its provider reported one.
pub async fn usage(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<String>> {
    on_backend!(h, "attempts/usage", |conn, sql| {
        sqlx::query_scalar::<_, Option<String>>(sql)
            .bind(id)
            .fetch_optional(conn)
            .await
            .map(Option::flatten)
    })
}
