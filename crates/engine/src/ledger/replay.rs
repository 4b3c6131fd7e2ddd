//! What keyed replays and status lookups leave in the ledger (SPEC §16): the attempts a replay
//! may send again, each one's window by the database's clock, and the `replayed` and
//! `looked_up` events, written alone or in the transaction of the change they cause.

use std::time::Duration;

use serde_json::Value;

use crate::attempt::AttemptState;
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{Actor, Attempt};
use crate::store::attempts as attempt_rows;
use crate::store::Handle;
use crate::Engine;

use super::group::Lock;
use super::{attempt_row, event};

/// Of a provider's key retention, the part a replay leaves unused: the provider's clock and
/// ours differ, and a replay that reaches it after it forgot the key would be done again.
pub const REPLAY_MARGIN_FRACTION: f64 = 0.1;
/// The least margin, however short the retention.
pub const REPLAY_MARGIN_FLOOR: Duration = Duration::from_secs(60);

/// An event recorded with a change (or alone, when it changes nothing): a replay's or a status
/// lookup's, under the attempt it concerns.
#[derive(Debug, Clone)]
pub(crate) struct Note {
    pub kind: EventKind,
    pub detail: Value,
}

impl Note {
    /// Appends the note under the attempt's job.
    pub(super) async fn write(
        &self,
        conn: &mut impl Handle,
        job_id: &str,
        attempt_id: &str,
    ) -> Result<()> {
        event(
            conn,
            job_id,
            Some(attempt_id),
            self.kind,
            Actor::Executor,
            self.detail.clone(),
        )
        .await
    }
}

/// When a keyed replay of one attempt may be sent, by the database's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWindow {
    /// How long the attempt's own request may still be answered (its hard deadline has not
    /// passed since it was sent); zero once it has.
    pub wait: Duration,
    /// How long the provider still keeps the key, less the margin; `None` once that ran out
    /// or when the provider states no retention.
    pub left: Option<Duration>,
}

impl Engine {
    /// For the executor: `unknown` attempts a keyed replay may send now, oldest first: not
    /// flagged, at a provider that honours `Idempotency-Key` with a `key_retention_s`, past
    /// their hard deadline and within the retention less the margin (by the ledger's clock).
    pub async fn replayable_attempts(&self, limit: u32) -> Result<Vec<Attempt>> {
        let mut conn = self.read().await?;
        attempt_rows::replayable(
            &mut conn,
            limit,
            REPLAY_MARGIN_FRACTION,
            REPLAY_MARGIN_FLOOR,
        )
        .await?
        .into_iter()
        .map(|a| a.into_attempt())
        .collect()
    }

    /// One attempt's replay window, read now from the ledger's clock.
    pub async fn replay_window(&self, attempt_id: &str) -> Result<ReplayWindow> {
        let mut conn = self.read().await?;
        let (wait, left) = attempt_rows::replay_window(
            &mut conn,
            attempt_id,
            REPLAY_MARGIN_FRACTION,
            REPLAY_MARGIN_FLOOR,
        )
        .await?
        .ok_or_else(|| Error::not_found("attempt", attempt_id))?;
        let millis = |ms: i64| Duration::from_millis(u64::try_from(ms).unwrap_or(0));
        Ok(ReplayWindow {
            wait: millis(wait),
            left: left.filter(|ms| *ms > 0).map(millis),
        })
    }

    /// Records a replay or a lookup that changed nothing: its event alone.
    pub(crate) async fn note(&self, attempt_id: &str, note: Note) -> Result<()> {
        let attempt_id = attempt_id.to_owned();
        self.group(Lock::JobOf(attempt_id.clone()), move |tx| {
            let (attempt_id, note) = (attempt_id.clone(), note.clone());
            Box::pin(async move {
                let row = attempt_row(tx, &attempt_id).await?;
                note.write(tx, &row.job_id, &attempt_id).await
            })
        })
        .await
    }

    /// Flags an attempt that is still `unknown` for review, with the note that says why, in one
    /// transaction; it stays `unknown`, and its job needs a person as every `unknown` job does
    /// (the job itself is not flagged: that mark outlives a person's verdict). One that moved
    /// meanwhile is not flagged; the note is recorded all the same. Returns whether it was
    /// flagged.
    pub(crate) async fn flag_unknown(&self, attempt_id: &str, note: Note) -> Result<bool> {
        let attempt_id = attempt_id.to_owned();
        self.group(Lock::JobOf(attempt_id.clone()), move |tx| {
            let (attempt_id, note) = (attempt_id.clone(), note.clone());
            Box::pin(async move {
                let row = attempt_row(tx, &attempt_id).await?;
                note.write(tx, &row.job_id, &attempt_id).await?;
                if row.state()? != AttemptState::Unknown {
                    return Ok(false);
                }
                attempt_rows::flag(tx, &attempt_id).await?;
                Ok(true)
            })
        })
        .await
    }
}
