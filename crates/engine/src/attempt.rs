//! Attempts: one try at one provider, and the transitions SPEC §4 allows between their states.

use serde::{Deserialize, Serialize};
use specta::Type;

use crate::error::{Error, Result};

/// Where an attempt stands. Every move is one guarded `UPDATE … WHERE state = expected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum AttemptState {
    /// Created durably, not yet sent. Set by the executor's claim or a person's retry.
    Pending,
    /// Committed as sending by the executor that holds its lease; the request may be out.
    InFlight,
    /// No trustworthy answer: soft timeout, a connection broken after the request may have
    /// been written, or an expired lease found on recovery. Not failed; it blocks the job.
    Unknown,
    /// A valid answer that won the compare-and-swap.
    Succeeded,
    /// A valid answer that lost the compare-and-swap; its payload was dropped.
    Lost,
    /// A definite failure: rejected, never sent, a broken contract, or a person's
    /// "it did not happen".
    Failed,
    /// A person (or an out-of-band process) gave up waiting; it no longer blocks, and a
    /// late answer still races through the compare-and-swap.
    Abandoned,
}

/// Who or what causes a transition; some moves are reserved to one cause (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// An answer from the provider itself, however late.
    Answer,
    /// A provider status lookup.
    Reconciliation,
    /// A person's decision.
    Person,
    /// The executor or recovery.
    Executor,
}

impl AttemptState {
    pub const ALL: [AttemptState; 7] = [
        AttemptState::Pending,
        AttemptState::InFlight,
        AttemptState::Unknown,
        AttemptState::Succeeded,
        AttemptState::Lost,
        AttemptState::Failed,
        AttemptState::Abandoned,
    ];

    /// The open states: at most one attempt per job may be in one of them.
    pub const OPEN: [AttemptState; 3] = [
        AttemptState::Pending,
        AttemptState::InFlight,
        AttemptState::Unknown,
    ];

    /// The name used in the database, on the CLI and in the UI.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptState::Pending => "pending",
            AttemptState::InFlight => "in_flight",
            AttemptState::Unknown => "unknown",
            AttemptState::Succeeded => "succeeded",
            AttemptState::Lost => "lost",
            AttemptState::Failed => "failed",
            AttemptState::Abandoned => "abandoned",
        }
    }

    /// True for `pending`, `in_flight` and `unknown`.
    pub fn is_open(self) -> bool {
        Self::OPEN.contains(&self)
    }

    /// The transition table of SPEC §4, ignoring who causes the move.
    pub fn may_become(self, to: AttemptState) -> bool {
        use AttemptState::*;
        match self {
            Pending => matches!(to, InFlight | Failed | Abandoned),
            InFlight => matches!(to, Succeeded | Lost | Failed | Unknown | Abandoned),
            Unknown => matches!(to, Succeeded | Lost | Failed | Abandoned),
            Abandoned => matches!(to, Succeeded | Lost),
            Succeeded | Lost | Failed => false,
        }
    }

    /// The transition table with its causes: an abandoned attempt moves only by a late answer.
    pub fn check(self, to: AttemptState, cause: Cause, id: &str) -> Result<()> {
        let by_cause = self != AttemptState::Abandoned || cause == Cause::Answer;
        if self.may_become(to) && by_cause {
            Ok(())
        } else {
            Err(Error::invalid_transition(
                "attempt",
                id,
                self.as_str(),
                to.as_str(),
            ))
        }
    }
}

impl std::str::FromStr for AttemptState {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        AttemptState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| {
                Error::invalid_input(
                    "state",
                    format!(
                        "{s:?} is not an attempt state: one of {}",
                        AttemptState::ALL.map(AttemptState::as_str).join(", ")
                    ),
                )
            })
    }
}

impl std::fmt::Display for AttemptState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::AttemptState::*;
    use super::*;

    /// SPEC §4, written out pair by pair so a change to `may_become` must match it.
    const ALLOWED: [(AttemptState, AttemptState); 14] = [
        (Pending, InFlight),
        (Pending, Failed),
        (Pending, Abandoned),
        (InFlight, Succeeded),
        (InFlight, Lost),
        (InFlight, Failed),
        (InFlight, Unknown),
        (InFlight, Abandoned),
        (Unknown, Succeeded),
        (Unknown, Lost),
        (Unknown, Failed),
        (Unknown, Abandoned),
        (Abandoned, Succeeded),
        (Abandoned, Lost),
    ];

    #[test]
    fn every_pair_not_in_the_table_is_an_invalid_transition() {
        for from in AttemptState::ALL {
            for to in AttemptState::ALL {
                let allowed = ALLOWED.contains(&(from, to));
                assert_eq!(from.may_become(to), allowed, "{from} -> {to}");
                let checked = from.check(to, Cause::Answer, "a");
                match checked {
                    Ok(()) => assert!(allowed, "{from} -> {to} passed"),
                    Err(e) => {
                        assert!(!allowed, "{from} -> {to} refused");
                        assert_eq!(e.code(), "invalid_transition");
                    }
                }
            }
        }
    }

    #[test]
    fn abandoned_moves_only_by_a_late_answer() {
        for cause in [Cause::Person, Cause::Reconciliation, Cause::Executor] {
            assert!(Abandoned.check(Succeeded, cause, "a").is_err());
            assert!(Abandoned.check(Lost, cause, "a").is_err());
        }
        assert!(Abandoned.check(Succeeded, Cause::Answer, "a").is_ok());
    }
}
