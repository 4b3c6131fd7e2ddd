//! `jobs`: one row per intent; inserts arbitrated by `UNIQUE(owner_id, idempotency_key)`,
//! outcome writes guarded by `version`.

use std::time::Duration;

use sqlx::{FromRow, QueryBuilder};

use super::{json_column, millis, on_backend, Conn, Handle};
use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::model::{Job, JobError, JobSummary, ShownJob};
use crate::shown::ShownValue;

#[derive(FromRow, serde::Deserialize)]
pub struct JobRow {
    id: String,
    owner_id: String,
    idempotency_key: String,
    fingerprint: String,
    intent: String,
    status: String,
    version: i64,
    completed_by: Option<String>,
    result: Option<String>,
    error: Option<String>,
    flagged_for_review: bool,
    created_at: String,
    updated_at: String,
    finished_at: Option<String>,
    not_before: Option<String>,
}

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

    /// The row as the engine's record.
    pub fn into_job(self) -> Result<Job> {
        let status = self.status.parse::<JobStatus>().map_err(|_| {
            Error::internal(format!(
                "job {} has unknown status {}",
                self.id, self.status
            ))
        })?;
        let error = self
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<JobError>(e).ok());
        Ok(Job {
            id: self.id,
            owner_id: self.owner_id,
            idempotency_key: self.idempotency_key,
            fingerprint: self.fingerprint,
            intent: json_column(&self.intent),
            status,
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            completed_by: self.completed_by,
            result: self.result.as_deref().map(json_column),
            error,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
            not_before: self.not_before,
        })
    }
}

/// A job's row as a list shows it: no intent or result, only the intent's route.
#[derive(FromRow)]
pub struct SummaryRow {
    id: String,
    owner_id: String,
    idempotency_key: String,
    status: String,
    version: i64,
    /// The intent's `route` as JSON text.
    route: Option<String>,
    flagged_for_review: bool,
    created_at: String,
    updated_at: String,
    finished_at: Option<String>,
}

impl SummaryRow {
    /// The row as a list's item.
    pub fn into_summary(self) -> Result<JobSummary> {
        let status = parse_status(&self.id, &self.status)?;
        let route = match self.route.as_deref().map(json_column) {
            Some(serde_json::Value::Array(names)) => names
                .into_iter()
                .filter_map(|n| match n {
                    serde_json::Value::String(name) => Some(name),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(JobSummary {
            id: self.id,
            owner_id: self.owner_id,
            idempotency_key: self.idempotency_key,
            status,
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            route,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
        })
    }
}

/// A job's row with its intent and result measured by the database (`jobs/shown`): each one's
/// length in bytes, and its text whole when that is at most `LARGE_BYTES`, else its first
/// characters only.
#[derive(FromRow)]
pub struct ShownRow {
    id: String,
    owner_id: String,
    idempotency_key: String,
    fingerprint: String,
    intent_bytes: i64,
    intent_text: String,
    status: String,
    version: i64,
    completed_by: Option<String>,
    result_bytes: Option<i64>,
    result_text: Option<String>,
    error: Option<String>,
    flagged_for_review: bool,
    created_at: String,
    updated_at: String,
    finished_at: Option<String>,
    not_before: Option<String>,
}

impl ShownRow {
    /// The row as a screen shows the job.
    pub fn into_shown(self) -> Result<ShownJob> {
        let status = parse_status(&self.id, &self.status)?;
        let error = self
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<JobError>(e).ok());
        let result = match (self.result_bytes, self.result_text) {
            (Some(bytes), Some(text)) => Some(ShownValue::measured(bytes, &text)),
            _ => None,
        };
        Ok(ShownJob {
            id: self.id,
            owner_id: self.owner_id,
            idempotency_key: self.idempotency_key,
            fingerprint: self.fingerprint,
            intent: ShownValue::measured(self.intent_bytes, &self.intent_text),
            status,
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            completed_by: self.completed_by,
            result,
            error,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
            not_before: self.not_before,
        })
    }
}

/// A row's status, or `internal` naming the job when the ledger holds an unknown one.
fn parse_status(id: &str, status: &str) -> Result<JobStatus> {
    status
        .parse::<JobStatus>()
        .map_err(|_| Error::internal(format!("job {id} has unknown status {status}")))
}

/// A job to insert.
pub struct NewJob<'a> {
    pub id: &'a str,
    pub owner_id: &'a str,
    pub idempotency_key: &'a str,
    pub fingerprint: &'a str,
    pub intent: &'a str,
}

/// A lone submit, committed when this returns `Ok`: inserts a `queued` job at version 0 unless
/// the owner already used the key. On both backends it is one autocommitted statement
/// (`jobs/submit.sql`), its triggers inside it. On SQLite it has no `RETURNING`: the new job is
/// the one bound, and `None` means the key was taken (read its holder then). On PostgreSQL it
/// returns the job holding the key (the new one when its id is `job.id`); `None` when the key's
/// holder committed while it ran (read it then).
pub async fn submit(h: &mut impl Handle, job: &NewJob<'_>) -> sqlx::Result<Option<JobRow>> {
    let sql = super::queries!("jobs/submit");
    macro_rules! bound {
        ($sql:expr) => {
            sqlx::query($sql)
                .bind(job.id)
                .bind(job.owner_id)
                .bind(job.idempotency_key)
                .bind(job.fingerprint)
                .bind(job.intent)
        };
    }
    match h.conn() {
        // No row comes back: the job is the one bound, at the time bound (SQLite reads the
        // same clock), and its `submitted` event carries that time too.
        Conn::Sqlite(conn, ledger) => {
            let at = super::now();
            let done = bound!(sql.sqlite)
                .bind(&at)
                .execute(conn)
                .await
                .map_err(|e| super::sqlite::named(ledger, e))?;
            Ok((done.rows_affected() == 1).then(|| JobRow::queued(job, at)))
        }
        Conn::Postgres(conn, watch) => {
            let row = watch
                .guard(bound!(sql.postgres).fetch_optional(conn))
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
    macro_rules! bound {
        ($sql:expr) => {
            sqlx::query_as($sql)
                .bind(job.id)
                .bind(job.owner_id)
                .bind(job.idempotency_key)
                .bind(job.fingerprint)
                .bind(job.intent)
        };
    }
    match h.conn() {
        Conn::Sqlite(conn, ledger) => bound!(include_str!("sqlite/queries/jobs/submit_step.sql"))
            .fetch_all(conn)
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| super::sqlite::named(ledger, e)),
        Conn::Postgres(conn, watch) => {
            let submitted =
                bound!(include_str!("postgres/queries/jobs/submit.sql")).fetch_all(conn);
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

/// Locks the jobs `job_ids` and the jobs of the attempts `attempt_ids` until the transaction
/// ends, in id order, waiting for any other transaction that holds one (PostgreSQL,
/// `jobs/lock`). On SQLite nothing runs: `BEGIN IMMEDIATE` already holds the whole file.
pub async fn lock(
    h: &mut impl Handle,
    job_ids: &[String],
    attempt_ids: &[String],
) -> sqlx::Result<()> {
    if let Conn::Postgres(conn, watch) = h.conn() {
        let sql = include_str!("postgres/queries/jobs/lock.sql");
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
            let sql = include_str!("postgres/queries/jobs/lock_free.sql");
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

/// Whether `id` is a UUID in its canonical form (lowercase, hyphenated), as `onejob_uuid`
/// reads one: any other text names no job or attempt.
pub(crate) fn is_canonical_id(id: &str) -> bool {
    id.len() == LOWEST_ID.len() && fits_id_text(id)
}

/// Locks job `id` until the transaction ends unless another transaction holds it: false then,
/// or when there is no such job (PostgreSQL, `jobs/lock_skipping`). Always true on SQLite,
/// whose `BEGIN IMMEDIATE` already holds the whole file.
pub async fn lock_skipping(h: &mut impl Handle, id: &str) -> sqlx::Result<bool> {
    match h.conn() {
        Conn::Postgres(conn, watch) => {
            let sql = include_str!("postgres/queries/jobs/lock_skipping.sql");
            let locking = sqlx::query_scalar(sql).bind(id).fetch_optional(conn);
            let locked: Option<String> = watch.guard(locking).await?;
            Ok(locked.is_some())
        }
        Conn::Sqlite(..) => Ok(true),
    }
}

/// Ends a transaction left open on the SQLite writer, if any; nothing when none is. A lone
/// [`submit`] is one autocommitted statement and leaves none open, so after it this is a
/// safeguard only (the lone submit was once `BEGIN IMMEDIATE` … `COMMIT` in one call).
pub async fn rollback(h: &mut impl Handle) {
    if let Conn::Sqlite(conn, _) = h.conn() {
        // "No transaction is active" is the common case: a lone submit begins none, and
        // SQLite rolls back a statement that fails by itself.
        let _ = sqlx::query("ROLLBACK").execute(conn).await;
    }
}

/// The owner's job holding `key`.
pub async fn by_key(h: &mut impl Handle, owner: &str, key: &str) -> sqlx::Result<Option<JobRow>> {
    on_backend!(h, "jobs/by_key", |conn, sql| {
        sqlx::query_as(sql)
            .bind(owner)
            .bind(key)
            .fetch_optional(conn)
            .await
    })
}

/// A job by id, whoever owns it, with its attempts by number: on SQLite one call
/// (`jobs/with_attempts`), on PostgreSQL the two reads.
pub async fn with_attempts(
    h: &mut impl Handle,
    id: &str,
) -> sqlx::Result<Option<(JobRow, Vec<super::attempts::AttemptRow>)>> {
    use super::attempts::{self as attempt_rows, AttemptRow};
    if let Conn::Sqlite(conn, at) = h.conn() {
        let sql = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/store/sqlite/queries/jobs/with_attempts.sql"
        ));
        let rows = sqlx::query(sql)
            .bind(id)
            .fetch_all(conn)
            .await
            .map_err(|e| super::sqlite::named(at, e))?;
        let mut rows = rows.iter();
        let Some(job) = rows.next() else {
            return Ok(None);
        };
        let attempts = rows
            .map(AttemptRow::from_row)
            .collect::<sqlx::Result<_>>()?;
        return Ok(Some((JobRow::from_row(job)?, attempts)));
    }
    let Some(job) = by_id(h, id).await? else {
        return Ok(None);
    };
    Ok(Some((job, attempt_rows::for_job(h, id).await?)))
}

/// A job by id, whoever owns it (for the executor).
pub async fn by_id(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<JobRow>> {
    on_backend!(h, "jobs/by_id", |conn, sql| {
        sqlx::query_as(sql).bind(id).fetch_optional(conn).await
    })
}

/// The owner's job by id; another owner's is indistinguishable from a missing one.
pub async fn owned(h: &mut impl Handle, owner: &str, id: &str) -> sqlx::Result<Option<JobRow>> {
    on_backend!(h, "jobs/owned", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(owner)
            .fetch_optional(conn)
            .await
    })
}

/// The owner's job by id with its intent and result measured (see [`ShownRow`]).
pub async fn shown(h: &mut impl Handle, owner: &str, id: &str) -> sqlx::Result<Option<ShownRow>> {
    on_backend!(h, "jobs/shown", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(owner)
            .bind(crate::shown::LARGE_BYTES as i64)
            .bind(crate::shown::FIRST_PART_CHARS as i64)
            .fetch_optional(conn)
            .await
    })
}

/// Which of an owner's jobs a page or a count covers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub status: Option<JobStatus>,
    /// A prefix of the idempotency key (as given), or of the id (lowercased); non-empty.
    pub search: Option<&'a str>,
    /// A provider the job's route names or one of its attempts ran at.
    pub provider: Option<&'a str>,
    /// The error kind of the job's open attempt (an `unknown` one's rule of SPEC §6).
    pub error_kind: Option<&'a str>,
    /// Created strictly before this time, in the ledger's text form (`…T…:…:….mmmZ`).
    pub created_before: Option<&'a str>,
    /// Created strictly after this time, in the ledger's text form.
    pub created_after: Option<&'a str>,
}

/// The lowest and highest ids in their canonical text (lowercase, hyphenated).
const LOWEST_ID: &str = "00000000-0000-0000-0000-000000000000";
const HIGHEST_ID: &str = "ffffffff-ffff-ffff-ffff-ffffffffffff";

/// Whether each character of `text` is what an id's canonical text holds at that position:
/// `text` is such an id, or the start of one.
fn fits_id_text(text: &str) -> bool {
    text.len() <= LOWEST_ID.len()
        && text.bytes().zip(LOWEST_ID.bytes()).all(|(c, slot)| {
            if slot == b'-' {
                c == b'-'
            } else {
                c.is_ascii_digit() || (b'a'..=b'f').contains(&c)
            }
        })
}

/// The ids a prefix of an id's canonical text covers, as the lowest and highest id it could
/// start: a range both backends' indexes serve. `None` when no id can start with it.
fn id_range(prefix: &str) -> Option<(String, String)> {
    let prefix = prefix.trim().to_ascii_lowercase();
    (!prefix.is_empty() && fits_id_text(&prefix)).then(|| {
        (
            format!("{prefix}{}", &LOWEST_ID[prefix.len()..]),
            format!("{prefix}{}", &HIGHEST_ID[prefix.len()..]),
        )
    })
}

/// Builds `SELECT <what> FROM … WHERE …` for the owner's jobs that pass `filter`, on either
/// backend (`pg` says which), with the keyset `cursor`, order and limit when `page` is given.
/// Prefixes of ids become ranges (`id_range`) so the indexes serve them; a key prefix is a
/// range on SQLite (`>= prefix AND < prefix + U+10FFFF`, bytewise) and `starts_with` on
/// PostgreSQL, whose text order follows the database's collation.
pub(super) fn build<'q, DB>(
    q: &mut QueryBuilder<'q, DB>,
    pg: bool,
    owner: &'q str,
    filter: &Filter<'q>,
    page: Option<(Option<&'q str>, u32, bool)>,
) where
    DB: sqlx::Database,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let as_id = if pg { "::uuid" } else { "" };
    let order = match filter.provider {
        Some(provider) => {
            // Driven from `job_providers`, whose key gives one owner's jobs at one provider in id order.
            q.push(" FROM job_providers p JOIN jobs j ON j.id = p.job_id WHERE p.provider = ");
            q.push_bind(provider);
            q.push(" AND p.owner_id = ");
            q.push_bind(owner);
            "p.job_id"
        }
        // With a search, each of its two ranges names the owner itself: a separate
        // `owner_id = ?` would let the planner walk every job of the owner in id order instead.
        None if filter.search.is_some() => {
            q.push(" FROM jobs j WHERE 1 = 1");
            "j.id"
        }
        None => {
            q.push(" FROM jobs j WHERE j.owner_id = ");
            q.push_bind(owner);
            "j.id"
        }
    };
    if let Some(status) = filter.status {
        q.push(" AND j.status = ");
        q.push_bind(status.as_str());
    }
    if let Some(kind) = filter.error_kind {
        q.push(
            " AND EXISTS (SELECT 1 FROM attempts a WHERE a.job_id = j.id \
             AND a.state IN ('pending', 'in_flight', 'unknown') AND a.error_kind = ",
        );
        q.push_bind(kind);
        q.push(")");
    }
    let as_time = if pg { "::timestamptz" } else { "" };
    if let Some(before) = filter.created_before {
        q.push(" AND j.created_at < ");
        q.push_bind(before);
        q.push(as_time);
    }
    if let Some(after) = filter.created_after {
        q.push(" AND j.created_at > ");
        q.push_bind(after);
        q.push(as_time);
    }
    if let Some(search) = filter.search {
        q.push(" AND ((j.owner_id = ");
        q.push_bind(owner);
        if pg {
            q.push(" AND starts_with(j.idempotency_key, ");
            q.push_bind(search.to_owned());
            q.push(")");
        } else {
            q.push(" AND j.idempotency_key >= ");
            q.push_bind(search.to_owned());
            q.push(" AND j.idempotency_key < ");
            q.push_bind(format!("{search}{}", char::MAX));
        }
        q.push(")");
        if let Some((low, high)) = id_range(search) {
            q.push(" OR (j.owner_id = ");
            q.push_bind(owner);
            q.push(" AND j.id >= ");
            q.push_bind(low);
            q.push(as_id);
            q.push(" AND j.id <= ");
            q.push_bind(high);
            q.push(as_id);
            q.push(")");
        }
        q.push(")");
    }
    if let Some((cursor, limit, oldest_first)) = page {
        let (beyond, direction) = if oldest_first {
            (" > ", " ASC")
        } else {
            (" < ", " DESC")
        };
        if let Some(cursor) = cursor {
            q.push(format!(" AND {order}{beyond}"));
            q.push_bind(cursor);
            q.push(as_id);
        }
        q.push(format!(" ORDER BY {order}{direction} LIMIT "));
        q.push_bind(i64::from(limit));
    }
}

/// The columns of a page's rows, as `JobRow` reads them.
const PAGE_COLUMNS_SQLITE: &str = "SELECT j.id, j.owner_id, j.idempotency_key, j.fingerprint, \
    j.intent, j.status, j.version, j.completed_by, j.result, j.error, j.flagged_for_review, \
    j.created_at, j.updated_at, j.finished_at, j.not_before";
const PAGE_COLUMNS_POSTGRES: &str = "SELECT j.id::text AS id, j.owner_id, j.idempotency_key, \
    j.fingerprint, j.intent::text AS intent, j.status, j.version, \
    j.completed_by::text AS completed_by, j.result::text AS result, j.error::text AS error, \
    j.flagged_for_review, onejob_time(j.created_at) AS created_at, \
    onejob_time(j.updated_at) AS updated_at, onejob_time(j.finished_at) AS finished_at, \
    onejob_time(j.not_before) AS not_before";

/// Up to `limit` of the owner's jobs that pass `filter`, newest first and strictly older than
/// `cursor` (or oldest first and strictly newer, with `oldest_first`).
pub async fn page(
    h: &mut impl Handle,
    owner: &str,
    filter: &Filter<'_>,
    cursor: Option<&str>,
    limit: u32,
    oldest_first: bool,
) -> sqlx::Result<Vec<JobRow>> {
    let columns = [PAGE_COLUMNS_SQLITE, PAGE_COLUMNS_POSTGRES];
    keyset(h, columns, owner, filter, (cursor, limit, oldest_first)).await
}

/// One keyset page of the owner's jobs that pass `filter`, each read as `R` from `columns`
/// (SQLite's, PostgreSQL's).
async fn keyset<R>(
    h: &mut impl Handle,
    columns: [&'static str; 2],
    owner: &str,
    filter: &Filter<'_>,
    page: (Option<&str>, u32, bool),
) -> sqlx::Result<Vec<R>>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
        + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
        + Send
        + Unpin,
{
    match h.conn() {
        Conn::Sqlite(conn, at) => {
            let mut q = QueryBuilder::new(columns[0]);
            build(&mut q, false, owner, filter, Some(page));
            q.build_query_as()
                .fetch_all(conn)
                .await
                .map_err(|e| super::sqlite::named(at, e))
        }
        Conn::Postgres(conn, watch) => {
            let mut q = QueryBuilder::new(columns[1]);
            build(&mut q, true, owner, filter, Some(page));
            watch.guard(q.build_query_as().fetch_all(conn)).await
        }
    }
}

/// The columns of a page of summaries, as `SummaryRow` reads them: the intent only as its
/// route, the result not at all.
const SUMMARY_COLUMNS_SQLITE: &str = "SELECT j.id, j.owner_id, j.idempotency_key, j.status, \
    j.version, json_extract(j.intent, '$.route') AS route, j.flagged_for_review, \
    j.created_at, j.updated_at, j.finished_at";
const SUMMARY_COLUMNS_POSTGRES: &str = "SELECT j.id::text AS id, j.owner_id, \
    j.idempotency_key, j.status, j.version, (j.intent -> 'route')::text AS route, \
    j.flagged_for_review, onejob_time(j.created_at) AS created_at, \
    onejob_time(j.updated_at) AS updated_at, onejob_time(j.finished_at) AS finished_at";

/// [`page`] as a list shows it: summaries, with neither intent nor result read.
pub async fn summaries(
    h: &mut impl Handle,
    owner: &str,
    filter: &Filter<'_>,
    cursor: Option<&str>,
    limit: u32,
    oldest_first: bool,
) -> sqlx::Result<Vec<SummaryRow>> {
    let columns = [SUMMARY_COLUMNS_SQLITE, SUMMARY_COLUMNS_POSTGRES];
    keyset(h, columns, owner, filter, (cursor, limit, oldest_first)).await
}

/// How many of the owner's jobs pass `filter`.
pub async fn count(h: &mut impl Handle, owner: &str, filter: &Filter<'_>) -> sqlx::Result<i64> {
    match h.conn() {
        Conn::Sqlite(conn, at) => {
            let mut q = QueryBuilder::new("SELECT count(*)");
            build(&mut q, false, owner, filter, None);
            q.build_query_scalar()
                .fetch_one(conn)
                .await
                .map_err(|e| super::sqlite::named(at, e))
        }
        Conn::Postgres(conn, watch) => {
            let mut q = QueryBuilder::new("SELECT count(*)");
            build(&mut q, true, owner, filter, None);
            watch.guard(q.build_query_scalar().fetch_one(conn)).await
        }
    }
}

/// What a status change writes beside the status.
#[derive(Default)]
pub struct JobPatch<'a> {
    /// Replaces `error` (with `None` when `set_error` is true and this is `None`).
    pub error: Option<&'a JobError>,
    pub set_error: bool,
    /// The move decides the outcome (failed, cancelled, a person's retry): `version + 1`.
    pub bump_version: bool,
    /// Sets `finished_at` to now.
    pub finished: bool,
    /// Clears the backoff.
    pub clear_not_before: bool,
}

/// Moves a job from exactly `from` to `to` and returns it as moved; `None` when it was not in
/// `from` (someone moved it first). The caller has checked the move against [`JobStatus::may_become`].
pub async fn set_status(
    h: &mut impl Handle,
    id: &str,
    from: JobStatus,
    to: JobStatus,
    patch: &JobPatch<'_>,
) -> sqlx::Result<Option<JobRow>> {
    let error = patch.error.and_then(|e| serde_json::to_string(e).ok());
    on_backend!(h, "jobs/set_status", |conn, sql| {
        sqlx::query_as(sql)
            .bind(to.as_str())
            .bind(patch.set_error)
            .bind(&error)
            .bind(i64::from(patch.bump_version))
            .bind(patch.finished)
            .bind(patch.clear_not_before)
            .bind(id)
            .bind(from.as_str())
            .fetch_optional(conn)
            .await
    })
}

/// The compare-and-swap of SPEC §5: claims the job's result for `attempt_id` only if the job
/// is still at `version`, nobody has claimed it, and it is not closed. Returns the job as it then
/// stands; `None` when the answer lost.
pub async fn claim_result(
    h: &mut impl Handle,
    id: &str,
    version: i64,
    attempt_id: &str,
    result: &str,
) -> sqlx::Result<Option<JobRow>> {
    on_backend!(h, "jobs/claim_result", |conn, sql| {
        sqlx::query_as(sql)
            .bind(result)
            .bind(attempt_id)
            .bind(id)
            .bind(version)
            .fetch_optional(conn)
            .await
    })
}

/// What [`claim_answer`] wrote: the job that holds the answer now, and its attempt as moved to
/// `succeeded` (`None` only if the attempt could not be moved with it: the caller must not
/// commit that).
pub struct ClaimedAnswer {
    pub job: JobRow,
    pub attempt: Option<super::attempts::AttemptRow>,
}

/// The compare-and-swap of SPEC §5 for the answer of `attempt_id` while it is `in_flight` or
/// `unknown`, in one call with the attempt's move to `succeeded` and that move's event (whose
/// detail gains the state moved from, as `from`), and the response `head` (request id, HTTP
/// status) recorded when the answer carries it. `None`, with nothing written, when the answer
/// did not win that way: it lost, or the attempt is in another state; the caller reads which.
pub async fn claim_answer(
    h: &mut impl Handle,
    attempt_id: &str,
    result: &str,
    event: &super::attempts::MoveEvent<'_>,
    head: Option<(Option<&str>, Option<u16>)>,
) -> sqlx::Result<Option<ClaimedAnswer>> {
    use super::attempts::AttemptRow;
    if let Conn::Sqlite(conn, at) = h.conn() {
        let (request_id, http_status) = head.unwrap_or_default();
        let sql = include_str!("sqlite/queries/jobs/claim_answer.sql");
        let rows = sqlx::query(sql)
            .bind(attempt_id)
            .bind(result)
            .bind(event.kind)
            .bind(event.actor)
            .bind(event.detail)
            .bind(request_id)
            .bind(http_status.map(i64::from))
            .fetch_all(conn)
            .await
            .map_err(|e| super::sqlite::named(at, e))?;
        // The statements' rows, in order: the job as claimed, then the attempt as moved.
        let mut rows = rows.iter();
        let Some(job) = rows.next().map(JobRow::from_row).transpose()? else {
            return Ok(None);
        };
        let attempt = rows.next().map(AttemptRow::from_row).transpose()?;
        return Ok(Some(ClaimedAnswer { job, attempt }));
    }
    // On PostgreSQL a run of one: the compare-and-swap is written once, in
    // `jobs/claim_answers`. An id that is not a canonical UUID names no attempt.
    if !is_canonical_id(attempt_id) {
        return Ok(None);
    }
    let answer = Answering {
        attempt_id,
        result,
        detail: event.detail,
        head,
    };
    let claimed = claim_answers(h, &[answer], event.kind, event.actor).await?;
    Ok(claimed.and_then(|mut claimed| claimed.remove(attempt_id)))
}

/// One answer of [`claim_answers`].
pub struct Answering<'a> {
    pub attempt_id: &'a str,
    /// The result, JSON text.
    pub result: &'a str,
    /// The winning move's event detail, JSON text (the state moved from is added).
    pub detail: &'a str,
    /// The response head the answer carries: request id and HTTP status.
    pub head: Option<(Option<&'a str>, Option<u16>)>,
}

/// [`claim_answer`] for several answers, each for an attempt of another job, in one statement
/// (PostgreSQL, `jobs/claim_answers`), the winning moves' events of kind `kind` by `actor`.
/// What each answer that won wrote, by its attempt's id; an answer missing wrote nothing, and
/// its caller reads why. `None` on SQLite, where each answer runs its own statement.
pub async fn claim_answers(
    h: &mut impl Handle,
    answers: &[Answering<'_>],
    kind: &str,
    actor: &str,
) -> sqlx::Result<Option<std::collections::HashMap<String, ClaimedAnswer>>> {
    let Conn::Postgres(conn, watch) = h.conn() else {
        return Ok(None);
    };
    let sql = include_str!("postgres/queries/jobs/claim_answers.sql");
    let claiming = sqlx::query(sql)
        .bind(answers.iter().map(|a| a.attempt_id).collect::<Vec<_>>())
        .bind(answers.iter().map(|a| a.result).collect::<Vec<_>>())
        .bind(answers.iter().map(|a| a.detail).collect::<Vec<_>>())
        .bind(
            answers
                .iter()
                .map(|a| a.head.and_then(|h| h.0))
                .collect::<Vec<_>>(),
        )
        .bind(
            answers
                .iter()
                .map(|a| a.head.and_then(|h| h.1).map(i64::from))
                .collect::<Vec<_>>(),
        )
        .bind(kind)
        .bind(actor)
        .fetch_all(conn);
    let mut claimed = std::collections::HashMap::new();
    for row in watch.guard(claiming).await? {
        let job = JobRow::from_row(&row)?;
        let attempt = super::row_in_column(&row, "attempt")?;
        if let Some(winner) = job.completed_by.clone() {
            claimed.insert(winner, ClaimedAnswer { job, attempt });
        }
    }
    Ok(Some(claimed))
}

/// Marks a job for a person's review (a late answer or a contradiction).
pub async fn flag(h: &mut impl Handle, id: &str) -> sqlx::Result<()> {
    on_backend!(h, "jobs/flag", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
    })
}

/// How many of the owner's jobs need a person: `unknown`, or flagged for review.
pub async fn needing_attention(h: &mut impl Handle, owner: &str) -> sqlx::Result<i64> {
    on_backend!(h, "jobs/needing_attention", |conn, sql| {
        sqlx::query_scalar(sql).bind(owner).fetch_one(conn).await
    })
}

/// Ids of queued jobs whose backoff has passed by the database's clock, oldest first.
pub async fn sendable(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<String>> {
    on_backend!(h, "jobs/sendable", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// [`sendable`] inside a claiming transaction: on PostgreSQL the ids are locked, passing over
/// jobs another host holds, so hosts claiming at once take different jobs.
pub async fn sendable_locking(h: &mut impl Handle, limit: u32) -> sqlx::Result<Vec<String>> {
    match h.conn() {
        Conn::Postgres(conn, watch) => {
            let sql = include_str!("postgres/queries/jobs/sendable_locking.sql");
            let reading = sqlx::query_scalar(sql)
                .bind(i64::from(limit))
                .fetch_all(conn);
            watch.guard(reading).await
        }
        Conn::Sqlite(..) => sendable(h, limit).await,
    }
}

/// Whether the job waits on a backoff that has not ended by the database's clock.
pub async fn backing_off(h: &mut impl Handle, id: &str) -> sqlx::Result<bool> {
    on_backend!(h, "jobs/backing_off", |conn, sql| {
        sqlx::query_scalar(sql).bind(id).fetch_one(conn).await
    })
}

/// When the next queued job's backoff ends, if any job waits on one.
pub async fn next_not_before(h: &mut impl Handle) -> sqlx::Result<Option<String>> {
    on_backend!(h, "jobs/next_not_before", |conn, sql| {
        sqlx::query_scalar(sql).fetch_one(conn).await
    })
}

/// Sets a job's backoff to end `wait` from now by the database's clock, or clears it.
pub async fn set_backoff(
    h: &mut impl Handle,
    id: &str,
    wait: Option<Duration>,
) -> sqlx::Result<()> {
    on_backend!(h, "jobs/set_backoff", |conn, sql| {
        sqlx::query(sql)
            .bind(wait.map(millis))
            .bind(id)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

/// Up to `limit` of the owner's jobs that need a person (`unknown`, or flagged for review),
/// most recently updated first.
pub async fn needing_attention_list(
    h: &mut impl Handle,
    owner: &str,
    limit: u32,
) -> sqlx::Result<Vec<JobRow>> {
    on_backend!(h, "jobs/needing_attention_list", |conn, sql| {
        sqlx::query_as(sql)
            .bind(owner)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })
}

/// Open jobs (`queued`, `running`, `unknown`) of every owner, counted by status, whose route
/// names `provider` or whose open attempt is at it.
pub async fn open_naming_provider(
    h: &mut impl Handle,
    provider: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    on_backend!(h, "jobs/open_naming_provider", |conn, sql| {
        sqlx::query_as(sql).bind(provider).fetch_all(conn).await
    })
}

/// Open jobs (`queued`, `running`, `unknown`) of every owner, counted by status, whose intent
/// names `contract`.
pub async fn open_naming_contract(
    h: &mut impl Handle,
    contract: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    on_backend!(h, "jobs/open_naming_contract", |conn, sql| {
        sqlx::query_as(sql).bind(contract).fetch_all(conn).await
    })
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
