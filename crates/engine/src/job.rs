//! Jobs: the durable record of one intent, and who moves it between statuses.

use serde::{Deserialize, Serialize};
use specta::Type;

use crate::error::{Error, Result};

/// Where a job stands. The ledger moves it; nothing else writes `jobs.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum JobStatus {
    /// No open attempt. Set by `submit`, and when an attempt fails retryably or a person
    /// resolves an `unknown` one as failed or abandoned; the executor starts the next one.
    Queued,
    /// An attempt is `pending` or `in_flight`. Set when an attempt is created.
    Running,
    /// The open attempt is `unknown`. Set when an attempt's outcome is lost to a timeout,
    /// a broken connection or an expired lease; only a person or a reconciliation ends it.
    Unknown,
    /// A valid answer won the compare-and-swap; `completed_by` names it. Terminal.
    Succeeded,
    /// No further automatic attempt. Set by the executor; a person may still retry it.
    Failed,
    /// A person cancelled it. Terminal; no attempt may start.
    Cancelled,
}

impl JobStatus {
    pub const ALL: [JobStatus; 6] = [
        JobStatus::Queued,
        JobStatus::Running,
        JobStatus::Unknown,
        JobStatus::Succeeded,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];

    /// The name used in the database, on the CLI and in the UI.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Unknown => "unknown",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// True for statuses no attempt may leave: `succeeded` and `cancelled`.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobStatus::Succeeded | JobStatus::Cancelled)
    }

    /// True for statuses in which no attempt is sent: terminal, or `failed` (no further
    /// automatic attempt until a person reopens it).
    pub fn is_closed(self) -> bool {
        self.is_terminal() || self == JobStatus::Failed
    }

    /// The moves a job may make; the ledger makes no other.
    /// - `queued → running` an attempt is created; `→ succeeded` a late answer of an
    ///   abandoned attempt wins; `→ failed` the route policy allows no attempt; `→ cancelled`.
    /// - `running → unknown` its attempt's outcome is lost; `→ queued` its attempt ended
    ///   without a result; `→ succeeded`, `→ failed`, `→ cancelled`.
    /// - `unknown → queued` (resolved as failed or abandoned), `→ succeeded`, `→ failed`,
    ///   `→ cancelled`.
    /// - `failed → queued` a person's retry; `→ cancelled`.
    /// - `succeeded` and `cancelled` are terminal.
    pub fn may_become(self, to: JobStatus) -> bool {
        use JobStatus::*;
        match self {
            Queued => matches!(to, Running | Succeeded | Failed | Cancelled),
            Running => matches!(to, Unknown | Queued | Succeeded | Failed | Cancelled),
            Unknown => matches!(to, Queued | Succeeded | Failed | Cancelled),
            Failed => matches!(to, Queued | Cancelled),
            Succeeded | Cancelled => false,
        }
    }

    /// The statuses from which a job may move to `to`.
    pub fn sources(to: JobStatus) -> Vec<JobStatus> {
        JobStatus::ALL
            .into_iter()
            .filter(|from| from.may_become(to))
            .collect()
    }
}

impl std::str::FromStr for JobStatus {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        JobStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| {
                Error::invalid_input(
                    "status",
                    format!(
                        "{s:?} is not a job status: one of {}",
                        JobStatus::ALL.map(JobStatus::as_str).join(", ")
                    ),
                )
            })
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::JobStatus::*;
    use super::*;

    /// The job moves, pair by pair, so a change to `may_become` must match them.
    const ALLOWED: [(JobStatus, JobStatus); 15] = [
        (Queued, Running),
        (Queued, Succeeded),
        (Queued, Failed),
        (Queued, Cancelled),
        (Running, Unknown),
        (Running, Queued),
        (Running, Succeeded),
        (Running, Failed),
        (Running, Cancelled),
        (Unknown, Queued),
        (Unknown, Succeeded),
        (Unknown, Failed),
        (Unknown, Cancelled),
        (Failed, Queued),
        (Failed, Cancelled),
    ];

    #[test]
    fn every_job_move_not_in_the_table_is_refused() {
        for from in JobStatus::ALL {
            for to in JobStatus::ALL {
                let allowed = ALLOWED.contains(&(from, to));
                assert_eq!(from.may_become(to), allowed, "{from} -> {to}");
            }
        }
        assert!(JobStatus::ALL.iter().all(|s| !Succeeded.may_become(*s)));
        assert!(JobStatus::ALL.iter().all(|s| !Cancelled.may_become(*s)));
    }
}
