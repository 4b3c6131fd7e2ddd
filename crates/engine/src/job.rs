//! Jobs: the durable record of one intent, and who moves it between statuses.

use serde::{Deserialize, Serialize};
use specta::Type;

use crate::error::{Error, Result};

/// Where a job stands. The ledger moves it; nothing else writes `jobs.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
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
