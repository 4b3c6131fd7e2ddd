//! SPEC §6 as one table: for every way an attempt can end without a result, the state it
//! takes, whether the executor may try the same provider again, and whether the route may
//! fail over to the next provider.

use serde::{Deserialize, Serialize};

use crate::attempt::AttemptState;
use crate::model::AttemptError;

/// Why an attempt ended without a result, or what made it `unknown`. Stored as text in
/// `attempts.error_kind`; the producer of each is named on the variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The executor could not connect: nothing was written.
    NeverSent,
    /// Found before sending by the executor: the provider was removed, its key is missing,
    /// the request cannot be built. Nothing was sent.
    Misconfigured,
    /// Found by the ledger as the attempt was to be sent: its worst case would pass a budget
    /// (SPEC §17). Nothing was sent; the job waits for the budget's next period, and the
    /// attempt counts against neither its attempts nor the route.
    BudgetReached,
    /// The provider refused it (400, 401, 403, 404, 422 and other 4xx, 3xx).
    Rejected,
    /// 408, 429 or 503: try again after a backoff (the provider's `Retry-After` when given).
    Throttled,
    /// Another 5xx from an `openai`/`anthropic` provider.
    ServerError,
    /// Another 5xx from an `http` provider that honours `Idempotency-Key`: retried at the
    /// same provider with the same key, never another (which does not know the key).
    ServerErrorKeyed,
    /// A complete 2xx body that is not JSON, or not the kind's envelope, from an
    /// `openai`/`anthropic` provider: received and judged, so it proves nothing was done
    /// for the job that counts.
    InvalidAnswer,
    /// The same from an `http` provider that honours `Idempotency-Key`: its 2xx says the work
    /// was done, so it is retried only at the same provider with the same key, like its 5xx.
    InvalidAnswerKeyed,
    /// The same from an `http` provider that does not honour `Idempotency-Key` (or the last
    /// try at one that does): the work was done and its answer cannot be read.
    InvalidAnswerUnknown,
    /// An answer that breaks the job's contract.
    ContractViolation,
    /// A status lookup said the provider failed it, or never saw it.
    ReconciledFailed,
    /// A person said "it did not happen".
    ResolvedByPerson,
    /// The job was cancelled before the attempt was sent (a ledger from before pending
    /// attempts were closed as abandoned).
    Cancelled,
    /// The soft timeout passed with no answer (the executor).
    SoftTimeout,
    /// The client's own timeout fired after the request may have been written.
    Timeout,
    /// The connection broke after the request may have been written.
    ConnectionBroken,
    /// A 2xx answer cut off mid-body: the work was done.
    CutOff,
    /// A 2xx answer larger than the executor reads: the work was done.
    AnswerTooLarge,
    /// A 5xx from an `http` provider that does not honour `Idempotency-Key` (or the last
    /// try at one that does): the work may have happened.
    ServerErrorUnknown,
    /// Recovery found the attempt `in_flight` with an expired lease.
    LeaseExpired,
}

/// Whether the executor may try the same provider again after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryHere {
    /// Yes, after the usual backoff.
    Yes,
    /// Not at this provider; the route may move on.
    NotHere,
    /// No attempt at all until a person or a status lookup resolves the open one.
    Blocked,
}

impl FailureKind {
    pub const ALL: [FailureKind; 21] = [
        FailureKind::NeverSent,
        FailureKind::ServerErrorKeyed,
        FailureKind::Misconfigured,
        FailureKind::BudgetReached,
        FailureKind::Rejected,
        FailureKind::Throttled,
        FailureKind::ServerError,
        FailureKind::InvalidAnswer,
        FailureKind::InvalidAnswerKeyed,
        FailureKind::InvalidAnswerUnknown,
        FailureKind::ContractViolation,
        FailureKind::ReconciledFailed,
        FailureKind::ResolvedByPerson,
        FailureKind::Cancelled,
        FailureKind::SoftTimeout,
        FailureKind::Timeout,
        FailureKind::ConnectionBroken,
        FailureKind::CutOff,
        FailureKind::AnswerTooLarge,
        FailureKind::ServerErrorUnknown,
        FailureKind::LeaseExpired,
    ];

    /// SPEC §6 and §7 in one place: (the attempt's state, retry at the same provider,
    /// failover to the next provider permitted).
    pub fn rule(self) -> (AttemptState, RetryHere, bool) {
        use AttemptState::{Failed, Unknown};
        use FailureKind::*;
        use RetryHere::*;
        match self {
            // Proven not to have happened: retry, and the route may move on.
            NeverSent | Throttled | ReconciledFailed | ResolvedByPerson | Cancelled
            | BudgetReached => (Failed, Yes, true),
            Misconfigured | Rejected => (Failed, NotHere, true),
            // Received and judged; an AI provider's 5xx is retried like one.
            InvalidAnswer | ServerError => (Failed, Yes, true),
            ContractViolation => (Failed, NotHere, true),
            // An `http` 5xx proves nothing about the effect, and an `http` 2xx says it
            // happened: the same provider and key only.
            ServerErrorKeyed | InvalidAnswerKeyed => (Failed, Yes, false),
            SoftTimeout | Timeout | ConnectionBroken | CutOff | AnswerTooLarge
            | ServerErrorUnknown | InvalidAnswerUnknown | LeaseExpired => (Unknown, Blocked, false),
        }
    }

    /// The state an attempt takes for this kind: `failed` or `unknown`.
    pub fn state(self) -> AttemptState {
        self.rule().0
    }

    /// What a kind retried at the same provider under the same key becomes on the job's last
    /// attempt: nobody will send it again, so what happened must be found out, not assumed.
    pub fn on_last_try(self) -> FailureKind {
        match self {
            FailureKind::ServerErrorKeyed => FailureKind::ServerErrorUnknown,
            FailureKind::InvalidAnswerKeyed => FailureKind::InvalidAnswerUnknown,
            other => other,
        }
    }

    /// Whether the same provider may be tried again by itself.
    pub fn retry_here(self) -> RetryHere {
        self.rule().1
    }

    /// Whether the route may fail over to the next provider after this outcome.
    pub fn permits_failover(self) -> bool {
        self.rule().2
    }

    /// The name stored in `attempts.error_kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::NeverSent => "never_sent",
            FailureKind::Misconfigured => "misconfigured",
            FailureKind::BudgetReached => "budget_reached",
            FailureKind::Rejected => "rejected",
            FailureKind::Throttled => "throttled",
            FailureKind::ServerError => "server_error",
            FailureKind::ServerErrorKeyed => "server_error_keyed",
            FailureKind::InvalidAnswer => "invalid_answer",
            FailureKind::InvalidAnswerKeyed => "invalid_answer_keyed",
            FailureKind::InvalidAnswerUnknown => "invalid_answer_unknown",
            FailureKind::ContractViolation => "contract_violation",
            FailureKind::ReconciledFailed => "reconciled_failed",
            FailureKind::ResolvedByPerson => "resolved_by_person",
            FailureKind::Cancelled => "cancelled",
            FailureKind::SoftTimeout => "soft_timeout",
            FailureKind::Timeout => "timeout",
            FailureKind::ConnectionBroken => "connection_broken",
            FailureKind::CutOff => "cut_off",
            FailureKind::AnswerTooLarge => "answer_too_large",
            FailureKind::ServerErrorUnknown => "server_error_unknown",
            FailureKind::LeaseExpired => "lease_expired",
        }
    }

    /// The kind stored under `name`; `None` for a name this version does not know.
    pub fn parse(name: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// An attempt error of this kind.
    pub fn because(self, message: impl Into<String>) -> AttemptError {
        AttemptError {
            kind: self.as_str().to_owned(),
            message: message.into(),
        }
    }
}

impl AttemptError {
    /// The error's kind as the enum; an unknown name (from a newer version, or a test) is
    /// read as the most careful one: `unknown`, no retry, no failover.
    pub fn failure(&self) -> FailureKind {
        FailureKind::parse(&self.kind).unwrap_or(FailureKind::ServerErrorUnknown)
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_by_name() {
        for kind in FailureKind::ALL {
            assert_eq!(FailureKind::parse(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn no_unknown_outcome_permits_a_retry_or_a_failover() {
        for kind in FailureKind::ALL {
            let (state, retry, failover) = kind.rule();
            if state == AttemptState::Unknown {
                assert_eq!(retry, RetryHere::Blocked, "{kind}");
                assert!(!failover, "{kind}");
            } else {
                assert_eq!(state, AttemptState::Failed, "{kind}");
                assert_ne!(retry, RetryHere::Blocked, "{kind}");
            }
        }
    }

    #[test]
    fn an_http_server_error_never_fails_over() {
        assert!(!FailureKind::ServerErrorKeyed.permits_failover());
        assert!(!FailureKind::ServerErrorUnknown.permits_failover());
        assert!(!FailureKind::Timeout.permits_failover());
    }

    #[test]
    fn an_unreadable_http_2xx_is_never_retried_elsewhere_nor_without_the_key() {
        assert_eq!(
            FailureKind::InvalidAnswerUnknown.state(),
            AttemptState::Unknown
        );
        assert_eq!(FailureKind::InvalidAnswerKeyed.retry_here(), RetryHere::Yes);
        assert!(!FailureKind::InvalidAnswerKeyed.permits_failover());
        assert_eq!(
            FailureKind::InvalidAnswerKeyed.on_last_try(),
            FailureKind::InvalidAnswerUnknown
        );
        // The AI kinds' unreadable answer is judged and retried, as before.
        assert_eq!(FailureKind::InvalidAnswer.state(), AttemptState::Failed);
        assert!(FailureKind::InvalidAnswer.permits_failover());
    }
}
