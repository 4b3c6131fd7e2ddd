//! What keyed replays and status lookups leave in the ledger (SPEC §16): the attempts a replay
//! may send again, each one's window by the database's clock, and the `replayed` and
//! `looked_up` events, written alone or in the transaction of the change they cause.

use std::time::Duration;

use serde_json::Value;

use serde_json::json;

use crate::attempt::AttemptState;
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{Actor, Attempt, AttemptError};
use crate::providers::Provider;
use crate::store::attempts as attempt_rows;
use crate::store::{Handle, Tx};
use crate::Engine;

use super::group::{GroupWrite, Lock, Step};
use super::{attempt_row, event};

/// Of a provider's key retention, the part a replay leaves unused: the provider's clock and
/// ours differ, and a replay that reaches it after it forgot the key would be done again.
pub const REPLAY_MARGIN_FRACTION: f64 = 0.1;
/// The least margin, however short the retention.
pub const REPLAY_MARGIN_FLOOR: Duration = Duration::from_secs(60);

/// An event recorded with a change (or alone, when it changes nothing): a replay's or a status
/// lookup's, under the attempt it concerns. Reached through `testing` by the model-based test,
/// which records a replay as the executor does.
#[derive(Debug, Clone)]
pub struct Note {
    pub kind: EventKind,
    pub detail: Value,
}

impl Note {
    /// A `replayed` event: what came back (`http_status`, and for anything but a valid answer
    /// its `error_kind` and `message`), the `outcome` (`settled`, `retries_later` or
    /// `flagged`), when the next replay is due (`retry_in_ms`, for `retries_later`), and how
    /// long the provider still keeps the key, less the margin (`window_left_ms`).
    pub fn replayed(
        outcome: &str,
        error: Option<&AttemptError>,
        http_status: Option<u16>,
        left: Duration,
        retry_in: Option<Duration>,
    ) -> Note {
        Note {
            kind: EventKind::Replayed,
            detail: json!({
                "outcome": outcome,
                "http_status": http_status,
                "error_kind": error.map(|e| e.kind.clone()),
                "message": error.map(|e| e.message.clone()),
                "retry_in_ms": retry_in.map(|w| w.as_millis() as u64),
                "window_left_ms": left.as_millis() as u64,
            }),
        }
    }

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

/// Whether an attempt may be replayed now (SPEC §16): what a replay checks before it sends.
#[derive(Debug, Clone)]
pub enum ReplayGate {
    /// It may be sent again now: the attempt and its provider as they are, and how long the
    /// provider still keeps the key, less the margin.
    Now {
        attempt: Box<Attempt>,
        provider: Box<Provider>,
        left: Duration,
    },
    /// Not yet: the attempt's own request may still be answered for this long (its hard
    /// deadline has not passed since it was sent, by the ledger's clock).
    TooEarly(Duration),
}

impl Engine {
    /// Whether attempt `attempt_id` may be sent again under its key now (SPEC §16), read as it
    /// is now (a person may have resolved it since it was listed): `invalid_transition` when it
    /// is no longer `unknown`; `invalid_input`, saying why, at a provider that does not honour
    /// `Idempotency-Key` or states no `key_retention_s`, when it is flagged for review, or when
    /// the retention less the margin has passed since the key's first use at that provider (the
    /// earliest send of any of the job's attempts there); [`ReplayGate::TooEarly`]
    /// before its hard deadline has.
    pub(crate) async fn replay_gate(&self, attempt_id: &str) -> Result<ReplayGate> {
        let attempt = self.attempt_by_id(attempt_id).await?;
        if attempt.state != AttemptState::Unknown {
            return Err(Error::invalid_transition(
                "attempt",
                &attempt.id,
                attempt.state.as_str(),
                "replayed",
            ));
        }
        let provider = self.provider(&attempt.provider).await?;
        let config = &provider.config;
        let never = |why: String| Err(Error::invalid_input("attempt", why));
        if !config.honours_idempotency_key {
            return never(format!(
                "provider {} does not honour Idempotency-Key, so nothing is sent to it again; a person must resolve this attempt",
                config.name
            ));
        }
        if config.key_retention_s.is_none() {
            return never(format!(
                "provider {} states no key_retention_s, so onejob cannot know it still keeps the key; a person must resolve this attempt",
                config.name
            ));
        }
        if attempt.flagged_for_review {
            return never(format!(
                "attempt {} is flagged for review; a person must resolve it",
                attempt.id
            ));
        }
        let window = self.replay_window(&attempt.id).await?;
        if !window.wait.is_zero() {
            return Ok(ReplayGate::TooEarly(window.wait));
        }
        let Some(left) = window.left else {
            return never(format!(
                "provider {} may have forgotten the key by now (key_retention_s {} less the margin has passed since the job was first sent to it under the key), so nothing is sent again; a person must resolve this attempt",
                config.name,
                config.key_retention_s.unwrap_or_default()
            ));
        };
        Ok(ReplayGate::Now {
            attempt: Box::new(attempt),
            provider: Box::new(provider),
            left,
        })
    }

    /// For the executor: `unknown` attempts a keyed replay may send now, oldest first: not
    /// flagged, at a provider that honours `Idempotency-Key` with a `key_retention_s`, past
    /// their hard deadline and within the retention less the margin since the key's first use at
    /// that provider (by the ledger's clock).
    pub(crate) async fn replayable_attempts(&self, limit: u32) -> Result<Vec<Attempt>> {
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
    pub(crate) async fn replay_window(&self, attempt_id: &str) -> Result<ReplayWindow> {
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

    /// Holds an `unknown` attempt for a keyed replay for `hold` (its request's hard deadline and
    /// a margin), under its job's lock: while held, a person's "it did not happen" or "stop
    /// waiting" is refused (`attempt_blocked`), since the replay may still do the work the
    /// person would have done elsewhere. Returns whether it is held; not when it moved, is
    /// flagged, or another executor's replay holds it still.
    pub(crate) async fn hold_replay(&self, attempt_id: &str, hold: Duration) -> Result<bool> {
        let attempt_id = attempt_id.to_owned();
        self.group(HoldReplay { attempt_id, hold }).await
    }

    /// Lets go of a replay's hold once its answer is recorded (an answer that settles the
    /// attempt lets go by itself: only an `unknown` attempt is held).
    pub(crate) async fn release_replay(&self, attempt_id: &str) -> Result<()> {
        let attempt_id = attempt_id.to_owned();
        self.group(ReleaseReplay { attempt_id }).await
    }

    /// Records a replay or a lookup that changed nothing: its event alone.
    pub(crate) async fn note(&self, attempt_id: &str, note: Note) -> Result<()> {
        let attempt_id = attempt_id.to_owned();
        self.group(WriteNote { attempt_id, note }).await
    }

    /// Flags an attempt that is still `unknown` for review, with the note that says why, in one
    /// transaction; it stays `unknown`, and its job needs a person as every `unknown` job does
    /// (the job itself is not flagged: that mark outlives a person's verdict). One that moved
    /// meanwhile is not flagged; the note is recorded all the same. Returns whether it was
    /// flagged.
    pub(crate) async fn flag_unknown(&self, attempt_id: &str, note: Note) -> Result<bool> {
        let attempt_id = attempt_id.to_owned();
        self.group(FlagUnknown { attempt_id, note }).await
    }
}

/// [`Engine::hold_replay`]'s write.
struct HoldReplay {
    attempt_id: String,
    hold: Duration,
}

impl GroupWrite for HoldReplay {
    type Out = bool;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, bool> {
        Box::pin(
            async move { Ok(attempt_rows::hold_replay(tx, &self.attempt_id, self.hold).await?) },
        )
    }
}

/// [`Engine::release_replay`]'s write.
struct ReleaseReplay {
    attempt_id: String,
}

impl GroupWrite for ReleaseReplay {
    type Out = ();

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, ()> {
        Box::pin(async move { Ok(attempt_rows::release_replay(tx, &self.attempt_id).await?) })
    }
}

/// [`Engine::note`]'s write.
struct WriteNote {
    attempt_id: String,
    note: Note,
}

impl GroupWrite for WriteNote {
    type Out = ();

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, ()> {
        Box::pin(async move {
            let row = attempt_row(tx, &self.attempt_id).await?;
            self.note.write(tx, &row.job_id, &self.attempt_id).await
        })
    }
}

/// [`Engine::flag_unknown`]'s write.
struct FlagUnknown {
    attempt_id: String,
    note: Note,
}

impl GroupWrite for FlagUnknown {
    type Out = bool;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, bool> {
        Box::pin(async move {
            let attempt_id = &self.attempt_id;
            let row = attempt_row(tx, attempt_id).await?;
            self.note.write(tx, &row.job_id, attempt_id).await?;
            if row.state()? != AttemptState::Unknown {
                return Ok(false);
            }
            attempt_rows::flag(tx, attempt_id).await?;
            Ok(true)
        })
    }
}
