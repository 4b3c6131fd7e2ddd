//! `GET /v1/events`: the owner's events as Server-Sent Events, from this process or any other
//! on the ledger. Each carries its feed position as its id, and so does the stream's opening,
//! so a client that reconnects with `Last-Event-ID` gets exactly what it missed.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use onejob_engine::FeedEvent;

use crate::long::{Caller, Held};
use crate::openapi::{CommonErrors, StreamEvent, TooManyRequests};
use crate::problem::Problem;
use crate::{Api, RECHECK};

/// The events read from the ledger at a time, and so the most a stream holds in memory.
const PAGE: u32 = 100;
/// A comment line this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where a stream stands.
struct Cursor {
    api: Api,
    caller: Caller,
    /// Counts the stream against its token's share while it is open.
    _held: Held,
    position: String,
    ready: VecDeque<FeedEvent>,
    failures: u32,
    /// The position the stream started from, until the opening has gone out with it.
    opening: Option<String>,
}

/// Opens the stream at `Last-Event-ID`, or at the feed's end for a new client, and says where
/// at once. A malformed position is refused before the stream starts; a token past its share
/// of long requests gets 429; a token revoked meanwhile ends the stream.
#[utoipa::path(
    get,
    path = "/v1/events",
    tag = "events",
    operation_id = "stream_events",
    summary = "Follow every change of the owner's jobs",
    description = "Server-Sent Events: one event per change of the owner's jobs, made by this or \
any other process on the ledger, in the order of the ledger's event feed. Each event's `data` is one JSON \
object of the `Event` schema and its `id` the place to resume from: a client that reconnects \
with that id in `Last-Event-ID` gets every event it missed, none twice. The stream opens with a \
comment carrying the `id` of its starting position, so a client that reconnects before any event \
has one to send. One token holds at most a quarter of the server's connections in streams and \
waits; a stream ends within 5 s of its token's revocation.",
    params(("Last-Event-ID" = Option<String>, Header, nullable = false,
        pattern = "^[0-9]{1,18}(-[0-9]{1,18})?$",
        description = "The `id` of the last event received; the stream resumes after it.")),
    responses(
        (status = 200, description = "The stream; it stays open until the client or the server \
ends it. Its schema is one event's, as OpenAPI 3.1 tools read a stream's",
            content_type = "text/event-stream", body = StreamEvent),
        CommonErrors,
        (status = 429, response = TooManyRequests),
    ),
)]
pub async fn stream(
    State(api): State<Api>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    let held = caller.hold(&api)?;
    let owner = caller.owner.clone();
    let position = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .map_err(|_| Problem::invalid("last_event_id", "not a position of this feed"))?
            .to_owned(),
        None => api.engine.feed_end(&owner).await?,
    };
    let first = api.engine.feed(&owner, &position, PAGE).await?;
    let cursor = Cursor {
        api,
        caller,
        _held: held,
        position: first.next,
        ready: first.events.into(),
        failures: 0,
        opening: Some(position),
    };
    let events = futures_util::stream::unfold(cursor, next);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// The next event to send, waiting for one as long as it takes; `None` once the server stops
/// or the token is revoked.
async fn next(mut cursor: Cursor) -> Option<(Result<Event, Infallible>, Cursor)> {
    let mut changes = cursor.api.changes.clone();
    let mut stopping = cursor.api.stopping.clone();
    if let Some(start) = cursor.opening.take() {
        // The headers leave with the first bytes of the body: a comment at once tells the
        // client the stream is open, and its id where to resume if it drops before any event.
        return Some((Ok(Event::default().comment("open").id(start)), cursor));
    }
    loop {
        if *stopping.borrow() || !cursor.caller.still_allowed(&cursor.api).await {
            return None;
        }
        if let Some(item) = cursor.ready.pop_front() {
            return Some((Ok(as_sse(&item)), cursor));
        }
        changes.borrow_and_update();
        match cursor
            .api
            .engine
            .feed(&cursor.caller.owner, &cursor.position, PAGE)
            .await
        {
            Ok(page) => {
                cursor.failures = 0;
                cursor.position = page.next;
                cursor.ready = page.events.into();
                if !cursor.ready.is_empty() {
                    continue;
                }
            }
            // The ledger is unreachable: the stream stays open and asks again, a little later
            // each time; nothing is skipped, since the position did not move.
            Err(_) => cursor.failures = cursor.failures.saturating_add(1),
        }
        let wait = RECHECK * cursor.failures.clamp(1, 5);
        let until_check = cursor
            .caller
            .next_check()
            .saturating_duration_since(Instant::now());
        tokio::select! {
            _ = changes.changed() => {}
            _ = stopping.changed() => {}
            () = tokio::time::sleep(wait.min(until_check)) => {}
        }
    }
}

fn as_sse(item: &FeedEvent) -> Event {
    let data = serde_json::to_string(&item.event).unwrap_or_else(|_| "{}".to_owned());
    Event::default().id(item.id.clone()).data(data)
}
