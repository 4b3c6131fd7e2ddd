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

impl EventRow {
    fn into_event(self) -> Event {
        Event {
            job_id: self.job_id,
            attempt_id: self.attempt_id,
            at: self.at,
            kind: self.kind,
            actor: match self.actor.as_str() {
                "user" => Actor::User,
                "executor" => Actor::Executor,
                "provider" => Actor::Provider,
                _ => Actor::System,
            },
            detail: json_column(&self.detail),
        }
    }
}

/// A job's history, oldest first.
pub async fn for_job(h: &mut impl Handle, job_id: &str) -> sqlx::Result<Vec<Event>> {
    let rows: Vec<EventRow> = on_backend!(h, "events/for_job", |conn, sql| {
        sqlx::query_as(sql).bind(job_id).fetch_all(conn).await
    })?;
    Ok(rows.into_iter().map(EventRow::into_event).collect())
}

/// A place in the event feed: the writing transaction's id (PostgreSQL; always 0 on SQLite,
/// where id order is commit order), then the event's id. Events are in the order of this pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, FromRow)]
pub struct Position {
    pub tx: i64,
    pub id: i64,
}

#[derive(FromRow)]
struct FeedRow {
    #[sqlx(flatten)]
    position: Position,
    #[sqlx(flatten)]
    event: EventRow,
}

/// At most `limit` events of `owner`'s jobs after `after`, in feed order, each with its
/// position; on PostgreSQL only events that can no longer be preceded by one yet to appear.
pub async fn feed(
    h: &mut impl Handle,
    owner: &str,
    after: Position,
    limit: u32,
) -> sqlx::Result<Vec<(Position, Event)>> {
    let rows: Vec<FeedRow> = on_backend!(h, "events/feed", |conn, sql| {
        sqlx::query_as(sql)
            .bind(owner)
            .bind(after.tx)
            .bind(after.id)
            .bind(i64::from(limit))
            .fetch_all(conn)
            .await
    })?;
    Ok(rows
        .into_iter()
        .map(|r| (r.position, r.event.into_event()))
        .collect())
}

/// The last event of any owner that no event yet to appear can sort before, as it stands now
/// (a row on disk, so it outlives a crash); `None` while there is none. A page of the feed read
/// after this, and not full, holds every event of its owner up to it: the next page may start
/// there, passing over the other owners' events instead of reading them again.
pub async fn feed_passed(h: &mut impl Handle) -> sqlx::Result<Option<Position>> {
    on_backend!(h, "events/feed_passed", |conn, sql| {
        sqlx::query_as(sql).fetch_optional(conn).await
    })
}

/// The feed's end now: every event that commits afterwards sorts after it.
pub async fn feed_end(h: &mut impl Handle) -> sqlx::Result<Position> {
    on_backend!(h, "events/feed_end", |conn, sql| {
        sqlx::query_as(sql).fetch_one(conn).await
    })
}

/// Whether `at` is a position this ledger's feed could have given.
pub async fn feed_knows(h: &mut impl Handle, at: Position) -> sqlx::Result<bool> {
    on_backend!(h, "events/feed_knows", |conn, sql| {
        sqlx::query_scalar(sql)
            .bind(at.tx)
            .bind(at.id)
            .fetch_one(conn)
            .await
    })
}
