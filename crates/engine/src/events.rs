//! The kinds of event in a job's append-only history (SPEC §10), and who writes each.

use serde::{Deserialize, Serialize};

/// One kind of history entry. Each is written in the same transaction as the change it records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A new job; written by the schema's trigger on `submit`'s insert.
    Submitted,
    /// An attempt was created `pending`: by the executor's claim, or a person's retry or `--retry-on`.
    AttemptCreated,
    /// The executor committed `pending → in_flight` with its lease, before sending.
    AttemptSent,
    /// A provider's answer (or a status lookup) won the compare-and-swap.
    AttemptSucceeded,
    /// A definite failure: the provider's, one found before sending, or a status lookup's.
    AttemptFailed,
    /// The executor lost track of the outcome (timeout, broken connection, unreadable answer).
    AttemptUnknown,
    /// An attempt stopped blocking without a person: an out-of-band process gave up on it, or
    /// its job became terminal while it was still `pending`.
    AttemptAbandoned,
    /// A valid answer arrived after another had won; its payload was dropped.
    RaceLost,
    /// An answer that contradicts what is recorded (after a cancel, a failure, a person's
    /// verdict); dropped and flagged for a person.
    LateAnswerFlagged,
    /// A person cancelled the job.
    JobCancelled,
    /// The executor's route policy allows no further attempt.
    JobFailed,
    /// A person reopened a failed job.
    JobRetried,
    /// A person's verdict on an attempt.
    ResolvedByPerson,
    /// Recovery found an `in_flight` attempt whose lease had expired.
    RecoveredUnknown,
    /// The executor waits before the job's next attempt (a backoff or the provider's
    /// `Retry-After`).
    BackoffSet,
    /// The executor sent an `unknown` attempt's request again under its key (SPEC §16); the
    /// detail says what came back and whether it settled, retries later, or was flagged.
    Replayed,
    /// The executor asked the provider's status URL about an `unknown` attempt; the detail
    /// says what it answered.
    LookedUp,
    /// An attempt's worst case would have passed a budget (SPEC §17): it was not sent, and the
    /// job waits for the budget's next period; the detail names the budget.
    BudgetReached,
}

impl EventKind {
    /// The name stored in `job_events.kind` and shown in the history.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Submitted => "submitted",
            EventKind::AttemptCreated => "attempt_created",
            EventKind::AttemptSent => "attempt_sent",
            EventKind::AttemptSucceeded => "attempt_succeeded",
            EventKind::AttemptFailed => "attempt_failed",
            EventKind::AttemptUnknown => "attempt_unknown",
            EventKind::AttemptAbandoned => "attempt_abandoned",
            EventKind::RaceLost => "race_lost",
            EventKind::LateAnswerFlagged => "late_answer_flagged",
            EventKind::JobCancelled => "job_cancelled",
            EventKind::JobFailed => "job_failed",
            EventKind::JobRetried => "job_retried",
            EventKind::ResolvedByPerson => "resolved_by_person",
            EventKind::RecoveredUnknown => "recovered_unknown",
            EventKind::BackoffSet => "backoff_set",
            EventKind::Replayed => "replayed",
            EventKind::LookedUp => "looked_up",
            EventKind::BudgetReached => "budget_reached",
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
