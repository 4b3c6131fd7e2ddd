//! The rows of a job as screens read them: a list's summary ([`SummaryRow`]) and a job shown
//! with its intent and result measured ([`ShownRow`]). The whole row, which every other
//! statement returns, is [`JobRow`](crate::store::rows::JobRow).

use sqlx::FromRow;

use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::model::{JobError, JobSummary, ShownJob};
use crate::shown::ShownValue;
use crate::store::json_column;

/// A job's row as a list shows it: no intent or result, only the intent's route.
#[derive(FromRow)]
pub struct SummaryRow {
    id: String,
    owner_id: String,
    idempotency_key: String,
    status: String,
    version: i64,
    /// The intent's `route` as JSON text.
    route: Option<String>,
    flagged_for_review: bool,
    created_at: String,
    updated_at: String,
    finished_at: Option<String>,
}

impl SummaryRow {
    /// The row as a list's item.
    pub fn into_summary(self) -> Result<JobSummary> {
        let status = parse_status(&self.id, &self.status)?;
        let route = match self.route.as_deref().map(json_column) {
            Some(serde_json::Value::Array(names)) => names
                .into_iter()
                .filter_map(|n| match n {
                    serde_json::Value::String(name) => Some(name),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(JobSummary {
            id: self.id,
            owner_id: self.owner_id,
            idempotency_key: self.idempotency_key,
            status,
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            route,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
        })
    }
}

/// A job's row with its intent and result measured by the database (`jobs/shown`): each one's
/// length in bytes, and its text whole when that is at most `LARGE_BYTES`, else its first
/// characters only.
#[derive(FromRow)]
pub struct ShownRow {
    id: String,
    owner_id: String,
    idempotency_key: String,
    fingerprint: String,
    intent_bytes: i64,
    intent_text: String,
    status: String,
    version: i64,
    completed_by: Option<String>,
    result_bytes: Option<i64>,
    result_text: Option<String>,
    error: Option<String>,
    flagged_for_review: bool,
    created_at: String,
    updated_at: String,
    finished_at: Option<String>,
    not_before: Option<String>,
}

impl ShownRow {
    /// The row as a screen shows the job.
    pub fn into_shown(self) -> Result<ShownJob> {
        let status = parse_status(&self.id, &self.status)?;
        let error = self
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<JobError>(e).ok());
        let result = match (self.result_bytes, self.result_text) {
            (Some(bytes), Some(text)) => Some(ShownValue::measured(bytes, &text)),
            _ => None,
        };
        Ok(ShownJob {
            id: self.id,
            owner_id: self.owner_id,
            idempotency_key: self.idempotency_key,
            fingerprint: self.fingerprint,
            intent: ShownValue::measured(self.intent_bytes, &self.intent_text),
            status,
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            completed_by: self.completed_by,
            result,
            error,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
            not_before: self.not_before,
        })
    }
}

/// A row's status, or `internal` naming the job when the ledger holds an unknown one.
fn parse_status(id: &str, status: &str) -> Result<JobStatus> {
    status
        .parse::<JobStatus>()
        .map_err(|_| Error::internal(format!("job {id} has unknown status {status}")))
}
