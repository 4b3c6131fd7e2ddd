//! Writes to a job once it is in, each one guarded statement: a status move from the status
//! it expects, the compare-and-swaps of SPEC §5 that claim its result, and its review flag.

use sqlx::FromRow;

use crate::job::JobStatus;
use crate::model::JobError;
use crate::store::attempts::MoveEvent;
use crate::store::ids::is_canonical_id;
use crate::store::rows::{AttemptRow, JobRow};
use crate::store::{on_backend, Conn, Handle};

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
    pub attempt: Option<AttemptRow>,
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
    event: &MoveEvent<'_>,
    head: Option<(Option<&str>, Option<u16>)>,
) -> sqlx::Result<Option<ClaimedAnswer>> {
    if let Conn::Sqlite(conn, at) = h.conn() {
        let (request_id, http_status) = head.unwrap_or_default();
        let sql = crate::store::query!(sqlite, "jobs/claim_answer");
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
            .map_err(|e| crate::store::sqlite::named(at, e))?;
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
    let sql = crate::store::query!(postgres, "jobs/claim_answers");
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
        let attempt = crate::store::row_in_column(&row, "attempt")?;
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
