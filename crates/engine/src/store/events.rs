//! `job_events`: the append-only history, written in the same transaction as each transition.

use serde_json::Value;
use sqlx::FromRow;

use super::{json_column, on_backend, Handle};
use crate::events::EventKind;
use crate::model::{Actor, Event};

/// One event to append.
pub struct NewEvent<'a> {
    pub job_id: &'a str,
    pub attempt_id: Option<&'a str>,
    pub kind: EventKind,
    pub actor: Actor,
    pub detail: Value,
}

/// Appends an event; there is no statement that changes or removes one.
pub async fn append(h: &mut impl Handle, e: NewEvent<'_>) -> sqlx::Result<()> {
    let detail = e.detail.to_string();
    on_backend!(h, "events/append", |conn, sql| {
        sqlx::query(sql)
            .bind(e.job_id)
            .bind(e.attempt_id)
            .bind(e.kind.as_str())
            .bind(e.actor.as_str())
            .bind(&detail)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

#[derive(FromRow)]
struct EventRow {
    job_id: String,
    attempt_id: Option<String>,
    at: String,
    kind: String,
    actor: String,
    detail: String,
}

/// A job's history, oldest first.
pub async fn for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Vec<Event>> {
    let rows: Vec<EventRow> = on_backend!(h, "events/for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_all(conn).await
    })?;
    Ok(rows
        .into_iter()
        .map(|r| Event {
            job_id: r.job_id,
            attempt_id: r.attempt_id,
            at: r.at,
            kind: r.kind,
            actor: match r.actor.as_str() {
                "user" => Actor::User,
                "executor" => Actor::Executor,
                "provider" => Actor::Provider,
                _ => Actor::System,
            },
            detail: json_column(&r.detail),
        })
        .collect())
}
