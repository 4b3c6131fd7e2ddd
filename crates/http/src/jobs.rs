//! The job and attempt endpoints: each parses, makes one engine call, and maps its answer.

use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use onejob_engine::{
    Error, Intent, Job, JobAttempt, JobDetail, JobPage, JobStatus, JobsQuery, Resolution,
    Submitted, Verdict, DEFAULT_PAGE, MAX_PAGE,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Owner;
use crate::body::{Json, Text};
use crate::long::Caller;
use crate::openapi::{
    BodyErrors, CommonErrors, Conflict, IdempotencyConflict, NotFound, TooManyRequests,
};
use crate::problem::Problem;
use crate::query::Query;
use crate::{key, Api, RECHECK};

/// The longest `?wait=` accepted, in seconds (SPEC §15).
pub const MAX_WAIT_S: f64 = 60.0;
/// The most bytes of jobs one page of `GET /v1/jobs` holds: it ends after the job that takes it
/// past this, and `next` pages on (a job may hold a 1 MiB intent and an 8 MiB result).
pub const PAGE_BYTES: usize = 4 * 1024 * 1024;
/// Jobs read from the ledger at a time while a page is written.
const READ_BATCH: u32 = 10;

/// The request's idempotency key.
pub struct IdempotencyKey(pub String);

impl FromRequestParts<Api> for IdempotencyKey {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &Api) -> Result<Self, Problem> {
        key::from_headers(&parts.headers).map(IdempotencyKey)
    }
}

/// `POST /v1/jobs`: 201 and `Location` for a new job, 200 and `Idempotent-Replayed: true` for
/// the same key and intent again. Answered only after the commit that holds the job.
#[utoipa::path(
    post, path = "/v1/jobs", tag = "jobs", operation_id = "submit_job",
    summary = "Submit an intent under an idempotency key",
    description = "Creates the job of this key, or answers the job the key already names when \
the intent is the same. Concurrent requests with one key, to one server or to several on one \
ledger, all answer the one job, which is executed once. The answer is sent only after the commit \
that holds the job.",
    params(("Idempotency-Key" = String, Header, min_length = 1,
        pattern = r#"^(?:[!#-~](?:[ -~]{0,253}[!-~])?|"(?:[ !#-\[\]-~]|\\["\\]){1,255}")$"#,
        description = "The key of this intent, the same \
on every retry: the quoted sf-string `\"order-45\"` or the bare `order-45`, one and the same key.")),
    request_body(content = Intent, description = "The intent",
        example = json!({"route": ["primary"], "input": {"amount": 100}})),
    responses(
        (status = 201, description = "A new job", body = Submitted, headers(
            ("Location" = String, description = "`/v1/jobs/{id}` of the new job"))),
        (status = 200, description = "The job this key and intent already made; `replayed` is \
true", body = Submitted, headers(("Idempotent-Replayed" = String, description = "`true`"))),
        CommonErrors,
        BodyErrors,
        (status = 422, response = IdempotencyConflict),
    ),
)]
pub async fn submit(
    State(api): State<Api>,
    Owner(owner): Owner,
    IdempotencyKey(key): IdempotencyKey,
    Text(intent): Text,
) -> Result<Response, Problem> {
    let submitted = api.engine.submit(&owner, &key, &intent).await?;
    let replayed = submitted.replayed;
    let status = if replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let location = format!("/v1/jobs/{}", submitted.job.id);
    Ok(keyed_answer(status, submitted, replayed, Some(location)))
}

/// The answer to a request under an idempotency key: `answer` with `status`, marked
/// `Idempotent-Replayed: true` on a repetition, else pointing at what it made with `Location`.
pub fn keyed_answer(
    status: StatusCode,
    answer: impl Serialize,
    replayed: bool,
    location: Option<String>,
) -> Response {
    let mut response = (status, axum::Json(answer)).into_response();
    let headers = response.headers_mut();
    if replayed {
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    } else if let Some(location) = location.and_then(|l| HeaderValue::try_from(l).ok()) {
        headers.insert(header::LOCATION, location);
    }
    response
}

/// The query of `GET /v1/jobs/{id}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Seconds to hold the answer until the job is terminal or `unknown` (at most 60).
    #[param(value_type = Option<f64>, minimum = 0, maximum = 60)]
    wait: Option<String>,
}

/// `GET /v1/jobs/{id}`: the job, its attempts and its history; with `?wait=S` the answer waits
/// until the job is terminal or `unknown`, or S seconds have passed.
#[utoipa::path(
    get, path = "/v1/jobs/{id}", tag = "jobs", operation_id = "get_job",
    summary = "A job, its attempts and its history",
    description = "For each `unknown` attempt, `known` says what is known of it (SPEC §16): when \
it was sent and by which executor, what was sent (method, URL without its query, headers without \
secrets, the body's size and SHA-256), what came back, the rule that made it `unknown`, and every \
status lookup and replay since. With `wait`, the answer is held until the job is terminal or `unknown`, or \
that many seconds have passed, whichever comes first. One token holds at most a quarter of the \
server's connections in waits and event streams (429 past that), and a wait ends with 401 within \
5 s of its token's revocation.",
    params(("id" = String, Path, description = "The job's id"), WaitQuery),
    responses(
        (status = 200, description = "The job", body = JobDetail),
        CommonErrors,
        (status = 404, response = NotFound),
        (status = 429, response = TooManyRequests),
    ),
)]
pub async fn show(
    State(api): State<Api>,
    mut caller: Caller,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<axum::Json<JobDetail>, Problem> {
    let wait = match query.wait.as_deref() {
        None => Duration::ZERO,
        Some(text) => parse_wait(text)?,
    };
    // Only a wait is long; a plain read takes no share.
    let _held = if wait.is_zero() {
        None
    } else {
        Some(caller.hold(&api)?)
    };
    let owner = caller.owner.clone();
    let deadline = Instant::now() + wait;
    let mut changes = api.changes.clone();
    let mut stopping = api.stopping.clone();
    // Marked seen before each read, so a change after it wakes the wait below.
    changes.borrow_and_update();
    // The first read's failure is the answer; later ones are the ledger gone for a moment.
    let mut detail = api.engine.job(&owner, &id).await?;
    let mut failure = None;
    loop {
        let over = settled(detail.job.status) || *stopping.borrow();
        let left = deadline.saturating_duration_since(Instant::now());
        if over || left.is_zero() {
            return match failure {
                // What it last read is stale: say why it could not be read again.
                Some(error) if !over => Err(Problem::from(error)),
                _ => Ok(axum::Json(detail)),
            };
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = stopping.changed() => {}
            // Read again within a second even without news: a notification can be lost.
            () = tokio::time::sleep(left.min(RECHECK)) => {}
        }
        if !caller.still_allowed(&api).await {
            return Err(onejob_engine::Error::unauthorized().into());
        }
        changes.borrow_and_update();
        match api.engine.job(&owner, &id).await {
            Ok(read) => (detail, failure) = (read, None),
            Err(error) => failure = Some(error),
        }
    }
}

/// Whether a wait is over: the job is terminal, failed, or needs a person.
fn settled(status: JobStatus) -> bool {
    !matches!(status, JobStatus::Queued | JobStatus::Running)
}

fn parse_wait(text: &str) -> Result<Duration, Problem> {
    let seconds: f64 = text
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0)
        .ok_or_else(|| Problem::invalid("wait", format!("{text:?} is not a number of seconds")))?;
    if seconds > MAX_WAIT_S {
        return Err(Problem::invalid(
            "wait",
            format!("{seconds} seconds is longer than the limit of {MAX_WAIT_S}"),
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The query of `GET /v1/jobs`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only jobs in this status (a `JobStatus`); empty is no filter.
    #[param(
        value_type = Option<String>,
        pattern = "^(queued|running|unknown|succeeded|failed|cancelled)?$"
    )]
    status: Option<String>,
    /// Only jobs that ran an attempt at this provider or whose route names it.
    provider: Option<String>,
    /// Only jobs whose idempotency key or id starts with this text.
    #[param(max_length = 255)]
    search: Option<String>,
    /// Only jobs whose open attempt has this error kind (the rule of SPEC §6 that made it
    /// `unknown`: `soft_timeout`, `connection_broken`, `lease_expired`, …); empty is no filter.
    error_kind: Option<String>,
    /// Only jobs created before this time (RFC 3339, or a date `YYYY-MM-DD` for its midnight
    /// UTC); empty is no filter.
    created_before: Option<String>,
    /// Only jobs created after this time (RFC 3339, or a date `YYYY-MM-DD`); empty is no
    /// filter.
    created_after: Option<String>,
    /// Jobs in one page at most (50 when not given); a page of large jobs ends sooner, after
    /// about 4 MiB, and its `next` pages on.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
    /// The `next` of the page before.
    #[param(
        pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    after: Option<String>,
}

/// `GET /v1/jobs`: the owner's jobs, newest first, a page at a time.
#[utoipa::path(
    get, path = "/v1/jobs", tag = "jobs", operation_id = "list_jobs",
    summary = "The owner's jobs, newest first, a page at a time",
    params(ListQuery),
    responses(
        (status = 200, description = "One page: at most `limit` jobs, ending after the job \
that takes it past 4 MiB; `next` is null on the last", body = JobPage),
        CommonErrors,
    ),
)]
pub async fn list(
    State(api): State<Api>,
    Owner(owner): Owner,
    Query(query): Query<ListQuery>,
) -> Result<Response, Problem> {
    let status = match query.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(
            JobStatus::ALL
                .into_iter()
                .find(|s| s.as_str() == text)
                .ok_or_else(|| {
                    let all: Vec<&str> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
                    Problem::invalid(
                        "status",
                        format!("{text:?} is not a job status; one of {}", all.join(", ")),
                    )
                })?,
        ),
    };
    let limit = match query.limit.as_deref() {
        None => DEFAULT_PAGE,
        Some(text) => text.parse::<u32>().map_err(|_| {
            Problem::invalid("limit", format!("{text:?} is not a whole number of jobs"))
        })?,
    };
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(Problem::invalid(
            "limit",
            format!("{limit} is outside 1-{MAX_PAGE}"),
        ));
    }
    let query = JobsQuery {
        status,
        search: query.search,
        provider: query.provider,
        error_kind: query.error_kind,
        created_before: query.created_before,
        created_after: query.created_after,
        after: query.after,
        ..JobsQuery::default()
    };
    let page = bounded_page(&api, &owner, query, limit).await?;
    let mut response = Response::new(axum::body::Body::from(page));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// The JSON bytes of one page (`{"jobs", "next"}`) of at most `limit` jobs, ending after the job
/// that takes it past [`PAGE_BYTES`]: the ledger is read [`READ_BATCH`] jobs at a time, each job
/// written out as it comes, so neither the jobs nor their text pile up in memory.
async fn bounded_page(
    api: &Api,
    owner: &str,
    mut query: JobsQuery,
    limit: u32,
) -> Result<Vec<u8>, Problem> {
    let mut out = b"{\"jobs\":[".to_vec();
    let mut count = 0;
    let mut next = None;
    'pages: loop {
        query.limit = Some(READ_BATCH.min(limit - count));
        let page = api.engine.jobs(owner, &query).await?;
        let more = page.next.is_some();
        let mut jobs = page.jobs.into_iter().peekable();
        while let Some(job) = jobs.next() {
            if count > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, &job)
                .map_err(|e| Error::internal(format!("a job could not be written: {e}")))?;
            count += 1;
            if out.len() >= PAGE_BYTES || count == limit {
                if more || jobs.peek().is_some() {
                    next = Some(job.id);
                }
                break 'pages;
            }
        }
        if !more {
            break;
        }
        query.after = page.next;
    }
    out.extend_from_slice(b"],\"next\":");
    serde_json::to_writer(&mut out, &next)
        .map_err(|e| Error::internal(format!("a cursor could not be written: {e}")))?;
    out.push(b'}');
    Ok(out)
}

/// The answer of `POST /v1/jobs/{id}/cancel`.
#[derive(Serialize, ToSchema)]
pub struct Cancelled {
    /// The job, now `cancelled`.
    job: Job,
}

/// `POST /v1/jobs/{id}/cancel`.
#[utoipa::path(
    post, path = "/v1/jobs/{id}/cancel", tag = "jobs", operation_id = "cancel_job",
    summary = "Cancel a job",
    description = "No attempt starts after it; an answer that arrives later is dropped and the \
job flagged for review.",
    params(("id" = String, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The cancelled job", body = Cancelled),
        CommonErrors,
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
    ),
)]
pub async fn cancel(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let job: Job = api.engine.cancel(&owner, &id).await?;
    Ok(axum::Json(Cancelled { job }).into_response())
}

/// The body of `POST /v1/jobs/{id}/retry`; an empty body is `{}`.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryBody {
    /// The provider of the new attempt; the job's route decides without it.
    provider: Option<String>,
}

/// `POST /v1/jobs/{id}/retry`.
#[utoipa::path(
    post, path = "/v1/jobs/{id}/retry", tag = "jobs", operation_id = "retry_job",
    summary = "Start a new attempt of a job, under an idempotency key",
    description = "A retry starts a paid attempt, so it carries a key of its own: the same key \
again answers the attempt the first retry started, as it stands now, with \
`Idempotent-Replayed: true`, and starts nothing, even after that attempt has ended. The same key \
with another job or provider is `idempotency_conflict`. A refused retry records nothing.",
    params(
        ("id" = String, Path, description = "The job's id"),
        ("Idempotency-Key" = String, Header, description = "The key of this retry, the same on \
every repetition of it: the quoted sf-string `\"retry-45-1\"` or the bare `retry-45-1`."),
    ),
    request_body(content = Option<RetryBody>, description = "May be empty"),
    responses(
        (status = 200, description = "The job and the attempt this retry started; with \
`Idempotent-Replayed: true`, the attempt the key's first retry started", body = JobAttempt,
            headers(("Idempotent-Replayed" = String, description = "`true` on a repetition"))),
        CommonErrors,
        BodyErrors,
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 422, response = IdempotencyConflict),
    ),
)]
pub async fn retry(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(id): Path<String>,
    IdempotencyKey(key): IdempotencyKey,
    Json(body): Json<RetryBody>,
) -> Result<Response, Problem> {
    let retried = api
        .engine
        .retry_keyed(&owner, &key, &id, body.provider.as_deref())
        .await?;
    Ok(keyed_answer(
        StatusCode::OK,
        retried.done,
        retried.replayed,
        None,
    ))
}

/// The body of `POST /v1/attempts/{id}/resolve`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    /// The verdict.
    #[serde(rename = "as")]
    verdict: Verdict,
    /// With `succeeded`: the result to record.
    result: Option<serde_json::Value>,
    /// Why, for the job's history.
    note: Option<String>,
    /// With `failed` or `abandoned`: the provider of the next attempt, made in the same commit.
    retry_on: Option<String>,
}

/// `POST /v1/attempts/{id}/resolve`: a person's verdict on an attempt.
#[utoipa::path(
    post, path = "/v1/attempts/{id}/resolve", tag = "jobs", operation_id = "resolve_attempt",
    summary = "A person's verdict on an attempt",
    description = "`succeeded` records the result through the same compare-and-swap as a \
provider's answer; `failed` and `abandoned` end the wait, and with `retry_on` start the next \
attempt in the same commit.",
    params(("id" = String, Path, description = "The attempt's id")),
    request_body(content = ResolveBody),
    responses(
        (status = 200, description = "The job and the attempt; `next_attempt` with `retry_on`",
            body = JobAttempt),
        CommonErrors,
        BodyErrors,
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
    ),
)]
pub async fn resolve(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(id): Path<String>,
    Json(body): Json<ResolveBody>,
) -> Result<Response, Problem> {
    let resolution = Resolution {
        result: body.result,
        note: body.note,
        retry_on: body.retry_on,
    };
    let done = api
        .engine
        .resolve(&owner, &id, body.verdict, resolution)
        .await?;
    Ok(axum::Json(done).into_response())
}
