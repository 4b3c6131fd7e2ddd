//! `job_events`: the append-only history, written in the same transaction as each transition.

use serde_json::Value;
use sqlx::{FromRow, SqliteConnection};

use super::{json_column, now};
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
pub async fn append(conn: &mut SqliteConnection, e: NewEvent<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(e.job_id)
    .bind(e.attempt_id)
    .bind(now())
    .bind(e.kind.as_str())
    .bind(e.actor.as_str())
    .bind(e.detail.to_string())
    .execute(conn)
    .await?;
    Ok(())
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
pub async fn for_job(conn: &mut SqliteConnection, job_id: &str) -> sqlx::Result<Vec<Event>> {
    let rows: Vec<EventRow> = sqlx::query_as(
        "SELECT job_id, attempt_id, at, kind, actor, detail FROM job_events WHERE job_id = ? ORDER BY id",
    )
    .bind(job_id)
    .fetch_all(conn)
    .await?;
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
