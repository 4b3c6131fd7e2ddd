//! Writes to an attempt that is there: its guarded moves (one, or the executor's sends of
//! several jobs' at once), its flag, and what its provider said (the response head, the
//! token usage).

use std::time::Duration;

use crate::attempt::AttemptState;
use crate::model::AttemptError;
use crate::store::rows::AttemptRow;
use crate::store::{millis, on_backend, Conn, Handle};

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
    /// What a priced attempt is charged (SPEC §17).
    pub charge: Option<&'a crate::money::Charge>,
}

impl<'a> Sending<'a> {
    /// The currency it is charged in; `None` at a provider without a price.
    pub fn currency(&self) -> Option<&'a str> {
        self.charge.map(|c| c.currency.as_str())
    }
}

/// [`moved`] from `pending` to `in_flight` for the executor, for several attempts of different
/// jobs in one statement (PostgreSQL, `attempts/send_many`): each moves only while `pending`
/// with its job `running` without a result, and gets its event (`kind`, `actor`). The
/// attempts that moved; one missing wrote nothing. `None` on SQLite, where each move runs its
/// own statement.
pub async fn send_many(
    h: &mut impl Handle,
    sending: &[Sending<'_>],
    locked: &[String],
    kind: &str,
    actor: &str,
) -> sqlx::Result<Option<Vec<AttemptRow>>> {
    let Conn::Postgres(conn, watch) = h.conn() else {
        return Ok(None);
    };
    let sql = crate::store::query!(postgres, "attempts/send_many");
    let sent = sqlx::query_as(sql)
        .bind(sending.iter().map(|s| s.id).collect::<Vec<_>>())
        .bind(sending.iter().map(|s| s.executor_id).collect::<Vec<_>>())
        .bind(sending.iter().map(|s| millis(s.lease)).collect::<Vec<_>>())
        .bind(sending.iter().map(|s| s.detail).collect::<Vec<_>>())
        .bind(kind)
        .bind(actor)
        .bind(sending.iter().map(|s| s.currency()).collect::<Vec<_>>())
        .bind(
            sending
                .iter()
                .map(|s| s.charge.map(|c| c.price.as_str()))
                .collect::<Vec<_>>(),
        )
        .bind(
            sending
                .iter()
                .map(|s| s.charge.map(|c| c.worst_nanos))
                .collect::<Vec<_>>(),
        )
        .bind(locked)
        .fetch_all(conn);
    watch.guard(sent).await.map(Some)
}

/// Flags an attempt for review without moving it.
pub async fn flag(h: &mut impl Handle, id: &str) -> sqlx::Result<()> {
    on_backend!(h, "attempts/flag", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
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

/// Keeps an AI provider's answer metadata: its token usage, and the answer's own id as the
/// request id when the response headers carried none.
pub async fn record_usage(
    h: &mut impl Handle,
    id: &str,
    request_id: Option<&str>,
    usage: Option<&str>,
    cost_nanos: Option<i64>,
) -> sqlx::Result<()> {
    on_backend!(h, "attempts/record_usage", |conn, sql| {
        sqlx::query(sql)
            .bind(request_id)
            .bind(usage)
            .bind(id)
            .bind(cost_nanos)
            .execute(conn)
            .await
            .map(|_| ())
    })
}

/// Records what the attempt is charged as it moves to `in_flight` (SPEC §17); the attempt as
/// charged.
pub async fn charge(
    h: &mut impl Handle,
    id: &str,
    charge: &crate::money::Charge,
) -> sqlx::Result<AttemptRow> {
    on_backend!(h, "attempts/charge", |conn, sql| {
        sqlx::query_as(sql)
            .bind(&charge.currency)
            .bind(&charge.price)
            .bind(charge.worst_nanos)
            .bind(id)
            .fetch_one(conn)
            .await
    })
}
