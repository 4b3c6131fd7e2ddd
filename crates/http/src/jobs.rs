//! The job and attempt endpoints: each parses, makes one engine call, and maps its answer.

use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use onejob_engine::{Job, JobDetail, JobStatus, JobsQuery, Resolution, Verdict};
use serde::Deserialize;
use serde_json::json;

use crate::auth::Owner;
use crate::body::{Json, Text};
use crate::problem::Problem;
use crate::{key, Api};

/// The longest `?wait=` accepted, in seconds (SPEC §15).
pub const MAX_WAIT_S: f64 = 60.0;

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
pub async fn submit(
    State(api): State<Api>,
    Owner(owner): Owner,
    IdempotencyKey(key): IdempotencyKey,
    Text(intent): Text,
) -> Result<Response, Problem> {
    let submitted = api.engine.submit(&owner, &key, &intent).await?;
    let replayed = submitted.replayed;
    let location = format!("/v1/jobs/{}", submitted.job.id);
    let mut response = axum::Json(submitted).into_response();
    let headers = response.headers_mut();
    if replayed {
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    } else {
        *response.status_mut() = StatusCode::CREATED;
        if let Ok(location) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(header::LOCATION, location);
        }
    }
    Ok(response)
}

/// The query of `GET /v1/jobs/{id}`.
#[derive(Deserialize)]
pub struct WaitQuery {
    /// Seconds to hold the answer until the job settles.
    wait: Option<String>,
}

/// `GET /v1/jobs/{id}`: the job, its attempts and its history; with `?wait=S` the answer waits
/// until the job is terminal or `unknown`, or S seconds have passed.
pub async fn show(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<axum::Json<JobDetail>, Problem> {
    let wait = match query.wait.as_deref() {
        None => Duration::ZERO,
        Some(text) => parse_wait(text)?,
    };
    let deadline = Instant::now() + wait;
    let mut changes = api.changes.clone();
    let mut stopping = api.stopping.clone();
    loop {
        // Marked seen before the read, so a change after it wakes the wait below.
        changes.borrow_and_update();
        let detail = api.engine.job(&owner, &id).await?;
        if settled(detail.job.status) || *stopping.borrow() {
            return Ok(axum::Json(detail));
        }
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return Ok(axum::Json(detail));
        };
        if left.is_zero() {
            return Ok(axum::Json(detail));
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = stopping.changed() => {}
            () = tokio::time::sleep(left) => {}
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
#[derive(Deserialize)]
pub struct ListQuery {
    status: Option<String>,
    provider: Option<String>,
    search: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

/// `GET /v1/jobs`: the owner's jobs, newest first, a page at a time.
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
        None => None,
        Some(text) => Some(text.parse::<u32>().map_err(|_| {
            Problem::invalid("limit", format!("{text:?} is not a whole number of jobs"))
        })?),
    };
    let query = JobsQuery {
        status,
        search: query.search,
        provider: query.provider,
        after: query.after,
        limit,
        oldest_first: false,
    };
    let page = api.engine.jobs(&owner, &query).await?;
    Ok(axum::Json(page).into_response())
}

/// `POST /v1/jobs/{id}/cancel`.
pub async fn cancel(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let job: Job = api.engine.cancel(&owner, &id).await?;
    Ok(axum::Json(json!({ "job": job })).into_response())
}

/// The body of `POST /v1/jobs/{id}/retry`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RetryBody {
    provider: Option<String>,
}

/// `POST /v1/jobs/{id}/retry`.
pub async fn retry(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(id): Path<String>,
    Json(body): Json<RetryBody>,
) -> Result<Response, Problem> {
    let done = api
        .engine
        .retry(&owner, &id, body.provider.as_deref())
        .await?;
    Ok(axum::Json(done).into_response())
}

/// The body of `POST /v1/attempts/{id}/resolve`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    #[serde(rename = "as")]
    verdict: Verdict,
    result: Option<serde_json::Value>,
    note: Option<String>,
    retry_on: Option<String>,
}

/// `POST /v1/attempts/{id}/resolve`: a person's verdict on an attempt.
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
