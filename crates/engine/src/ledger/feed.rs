//! The event feed (SPEC §15, `GET /v1/events`): the events of an owner's jobs in one order that
//! a client can leave and resume from a position without missing any.

use crate::error::{Error, Result};
use crate::intent::validate_owner;
use crate::model::{FeedEvent, FeedPage};
use crate::store::events::{self, Position};
use crate::{Engine, MAX_PAGE};

/// The field a position is refused on: the HTTP API takes it from the `Last-Event-ID` header.
const FIELD: &str = "last_event_id";

impl Engine {
    /// The feed's end now, as a position: a client that starts here gets every event that
    /// commits afterwards (on PostgreSQL perhaps also a few that committed just before, while
    /// a transaction that had started earlier was still open).
    pub async fn feed_end(&self, owner: &str) -> Result<String> {
        validate_owner(owner)?;
        let mut conn = self.read().await?;
        let end = events::feed_end(&mut conn).await?;
        Ok(self.position_text(end))
    }

    /// At most `limit` (taken as 1 to 1000) events of `owner`'s jobs after position `after`, in
    /// feed order; `next` is the position to ask from next time: the last event's id, or
    /// `after` when there is none yet. Asking again from `next` never misses an event and
    /// never repeats one: on SQLite the order is commit order; on PostgreSQL, where an id
    /// sequence is not, an event is returned only once every transaction that began writing
    /// before its own has ended, so one that commits late still sorts after all returned.
    ///
    /// A position that is malformed, or that this ledger's feed never gave (another ledger's),
    /// is `invalid_input` on field `last_event_id`.
    ///
    /// A face that streams the feed asks again on each tick of [`Engine::changes`] *and* at
    /// least every second: on PostgreSQL an event is held back while a transaction that started
    /// earlier is still open (on any database of the server), and the transaction whose end
    /// releases it may be one that rolled back, which announces nothing.
    ///
    /// A page that is not full also passes over the other owners' events: `next` is then at
    /// least the last event of any owner that was settled before the page was read, so a stream
    /// that waits on an idle owner reads only what is new each time, whatever the ledger's
    /// history (SPEC §15).
    pub async fn feed(&self, owner: &str, after: &str, limit: u32) -> Result<FeedPage> {
        validate_owner(owner)?;
        let from = self.parse_position(after)?;
        let limit = limit.clamp(1, MAX_PAGE);
        let mut conn = self.read().await?;
        // Read first: the page, read after it, holds every event of the owner up to it.
        let passed = events::feed_passed(&mut conn).await?;
        let found = events::feed(&mut conn, owner, from, limit).await?;
        // Only an empty page can hide a position past the feed's end; asked only then.
        if found.is_empty() && !events::feed_knows(&mut conn, from).await? {
            return Err(Error::invalid_input(
                FIELD,
                format!(
                    "{after} is not a position this ledger's event feed gave: it comes from \
                     another ledger; ask without one to start at the feed's end"
                ),
            ));
        }
        let last = found.last().map_or(from, |(at, _)| *at);
        let next = match passed {
            Some(passed) if found.len() < limit as usize && passed > last => passed,
            _ => last,
        };
        let events: Vec<FeedEvent> = found
            .into_iter()
            .map(|(at, event)| FeedEvent {
                id: self.position_text(at),
                event,
            })
            .collect();
        let next = self.position_text(next);
        Ok(FeedPage { events, next })
    }

    /// A position as its clients see it: the event's id on SQLite, `<transaction>-<id>` on
    /// PostgreSQL.
    fn position_text(&self, at: Position) -> String {
        if self.is_shared() {
            format!("{}-{}", at.tx, at.id)
        } else {
            at.id.to_string()
        }
    }

    /// The position a client sent back, in this ledger's form.
    fn parse_position(&self, text: &str) -> Result<Position> {
        let parsed = if self.is_shared() {
            text.split_once('-').and_then(|(tx, id)| {
                Some(Position {
                    tx: number(tx)?,
                    id: number(id)?,
                })
            })
        } else {
            number(text).map(|id| Position { tx: 0, id })
        };
        parsed.ok_or_else(|| {
            let shown: String = text.chars().take(64).collect();
            Error::invalid_input(
                FIELD,
                format!(
                    "{shown:?} is not a position in the event feed: resume from the id of an \
                     event it sent, or ask without one to start at its end"
                ),
            )
        })
    }
}

/// A decimal number of digits only, that fits a position's part.
fn number(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}
