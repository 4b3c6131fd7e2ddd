//! The bulk endpoints (SPEC §16 "Many at once"): `POST /v1/bulk` fixes an operation's set of
//! jobs and answers at once, while the server decides them in the background; `GET
//! /v1/bulk/{id}` shows how far it has come. A request's own work stays bounded however many
//! jobs match: only fixing the set (one statement) happens before the answer.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use onejob_engine::{BulkOperation, BulkRequest, Engine};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Owner;
use crate::body::Json;
use crate::jobs::{keyed_answer, IdempotencyKey};
use crate::openapi::{BodyErrors, CommonErrors, IdempotencyConflict, NotFound};
use crate::problem::Problem;
use crate::Api;

/// The operations this server is deciding now, so a repeated request does not start a second
/// run of one beside the first (which would be safe, each job being decided once, but idle).
#[derive(Default)]
pub struct Running {
    ids: Mutex<HashSet<String>>,
}

impl Running {
    /// Decides what is left of operation `id` in the background, unless this server already is.
    fn run(self: &Arc<Self>, engine: Engine, owner: String, id: String) {
        if !self.lock().insert(id.clone()) {
            return;
        }
        let running = Arc::clone(self);
        tokio::spawn(async move {
            // A failure (the ledger went away) leaves the rest undecided: the same request
            // again, under its key, runs it on.
            let _ = engine.bulk_run(&owner, &id, |_| {}).await;
            running.lock().remove(&id);
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.ids
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The answer of `POST /v1/bulk`.
#[derive(Serialize, ToSchema)]
pub struct BulkStartedAnswer {
    /// The operation as it stands: just started, or as far as it has come on a repetition.
    bulk: BulkOperation,
    /// The key had already started this operation.
    replayed: bool,
}

/// The answer of `GET /v1/bulk/{id}`.
#[derive(Serialize, ToSchema)]
pub struct BulkShown {
    bulk: BulkOperation,
}

/// `POST /v1/bulk`.
#[utoipa::path(
    post, path = "/v1/bulk", tag = "bulk", operation_id = "start_bulk",
    summary = "Resolve, cancel or retry every job a filter matches, under an idempotency key",
    description = "Fixes the set of the owner's jobs that pass `filter` now (a job that matches \
later is not touched) and answers `202` with the operation while the server decides its jobs in \
the background; `GET /v1/bulk/{id}` shows its progress. Each job is changed as the single action \
would change it, and every change records an event naming the operation (`detail.bulk`); a job \
that moved meanwhile is skipped with the code that action gives. The same key and body again \
answer `200` with `Idempotent-Replayed: true` and the operation as far as it has come, and run \
on what is left (after a crash or a stop); another body under the key is `422`. `dry_run` \
answers `200` with how many jobs match, and records nothing.",
    params(("Idempotency-Key" = String, Header, description = "The key of this operation, the \
same on every repetition of it: the quoted sf-string `\"outage-7\"` or the bare `outage-7`.")),
    request_body(content = BulkRequest, description = "The action, the filter, and what the \
action needs: `as` with `resolve`, an optional `provider` to retry at with `retry` (the filter's \
own `provider` selects the jobs)",
        example = json!({"action": "resolve", "as": "abandoned",
            "filter": {"provider": "primary", "error_kind": "soft_timeout"}})),
    responses(
        (status = 202, description = "A new operation, its set fixed, running in the background",
            body = BulkStartedAnswer, headers(
            ("Location" = String, description = "`/v1/bulk/{id}` of the new operation"))),
        (status = 200, description = "A dry run's count, or the operation this key already \
started, as far as it has come", body = BulkStartedAnswer,
            headers(("Idempotent-Replayed" = String, description = "`true` on a repetition"))),
        CommonErrors,
        BodyErrors,
        (status = 422, response = IdempotencyConflict),
    ),
)]
pub async fn start(
    State(api): State<Api>,
    Owner(owner): Owner,
    IdempotencyKey(key): IdempotencyKey,
    Json(body): Json<BulkRequest>,
) -> Result<Response, Problem> {
    let started = api.engine.bulk_start(&owner, &key, &body).await?;
    let (operation, replayed) = (started.operation, started.replayed);
    let id = operation.id.clone();
    if let (Some(id), false) = (&id, operation.done) {
        api.bulk
            .run(api.engine.clone(), owner.clone(), id.to_owned());
    }
    let status = match (&id, replayed) {
        (Some(_), false) => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    let answer = BulkStartedAnswer {
        bulk: operation,
        replayed,
    };
    let location = id.map(|id| format!("/v1/bulk/{id}"));
    Ok(keyed_answer(status, answer, replayed, location))
}

/// `GET /v1/bulk/{id}`.
#[utoipa::path(
    get, path = "/v1/bulk/{id}", tag = "bulk", operation_id = "get_bulk",
    summary = "A bulk operation's progress",
    description = "How many jobs it matched when it started, how many it changed so far, the ones \
it skipped with their codes, and whether every job has been decided (`done`).",
    params(("id" = String, Path, description = "The operation's id")),
    responses(
        (status = 200, description = "The operation as far as it has come", body = BulkShown),
        CommonErrors,
        (status = 404, response = NotFound),
    ),
)]
pub async fn show(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let bulk = api.engine.bulk_operation(&owner, &id).await?;
    Ok(axum::Json(BulkShown { bulk }).into_response())
}
