//! The rows of `jobs` and `attempts`, as the statements of either table return them: an
//! attempt's insert gives back its job as moved, and a job's answer its attempt as moved, so
//! both tables' modules read both rows. They live here, outside either module, so that
//! `attempts` never depends on `jobs` (`jobs` uses `attempts`, one way).

use sqlx::FromRow;

use super::json_column;
use crate::attempt::AttemptState;
use crate::error::{Error, Result};
use crate::job::JobStatus;
use crate::model::{Attempt, AttemptError, Job, JobError, Usage};
use crate::money::{self, Amount, Cost};

/// A `jobs` row as every statement that returns one reads it. Its fields are the store's
/// (statements set them); the ledger reads the row through [`JobRow::into_job`].
#[derive(FromRow, serde::Deserialize)]
pub struct JobRow {
    pub(super) id: String,
    pub(super) owner_id: String,
    pub(super) idempotency_key: String,
    pub(super) fingerprint: String,
    pub(super) intent: String,
    pub(super) status: String,
    pub(super) version: i64,
    pub(super) completed_by: Option<String>,
    pub(super) result: Option<String>,
    pub(super) error: Option<String>,
    pub(super) flagged_for_review: bool,
    pub(super) created_at: String,
    pub(super) updated_at: String,
    pub(super) finished_at: Option<String>,
    pub(super) not_before: Option<String>,
}

impl JobRow {
    /// The row as the engine's record.
    pub fn into_job(self) -> Result<Job> {
        let status = self.status.parse::<JobStatus>().map_err(|_| {
            Error::internal(format!(
                "job {} has unknown status {}",
                self.id, self.status
            ))
        })?;
        let error = self
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<JobError>(e).ok());
        Ok(Job {
            id: self.id,
            owner_id: self.owner_id,
            idempotency_key: self.idempotency_key,
            fingerprint: self.fingerprint,
            intent: json_column(&self.intent),
            status,
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            completed_by: self.completed_by,
            result: self.result.as_deref().map(json_column),
            error,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            updated_at: self.updated_at,
            finished_at: self.finished_at,
            not_before: self.not_before,
        })
    }
}

/// An `attempts` row as every statement that returns one reads it.
#[derive(FromRow, Clone, serde::Deserialize)]
pub struct AttemptRow {
    pub id: String,
    pub job_id: String,
    pub number: i64,
    pub provider: String,
    pub state: String,
    pub job_version: i64,
    pub request_id: Option<String>,
    pub http_status: Option<i64>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub executor_id: Option<String>,
    pub lease_expires_at: Option<String>,
    pub flagged_for_review: bool,
    pub created_at: String,
    pub sent_at: Option<String>,
    pub finished_at: Option<String>,
    pub usage: Option<String>,
    /// What it was charged (SPEC §17): its currency, its worst case and its settled cost in
    /// billionths; NULL at a provider without a price.
    #[sqlx(default)]
    pub currency: Option<String>,
    #[sqlx(default)]
    pub worst_nanos: Option<i64>,
    #[sqlx(default)]
    pub cost_nanos: Option<i64>,
}

impl AttemptRow {
    /// The attempt's state as the enum.
    pub fn state(&self) -> Result<AttemptState> {
        self.state.parse().map_err(|_| {
            Error::internal(format!(
                "attempt {} has unknown state {}",
                self.id, self.state
            ))
        })
    }

    /// The row as the engine's record.
    pub fn into_attempt(self) -> Result<Attempt> {
        let state = self.state()?;
        let cost = self.cost(state);
        let error = self.error_kind.map(|kind| AttemptError {
            kind,
            message: self.error_message.unwrap_or_default(),
        });
        Ok(Attempt {
            id: self.id,
            job_id: self.job_id,
            number: u32::try_from(self.number).unwrap_or(u32::MAX),
            provider: self.provider,
            state,
            job_version: u32::try_from(self.job_version).unwrap_or(u32::MAX),
            request_id: self.request_id,
            http_status: self.http_status.and_then(|s| u16::try_from(s).ok()),
            error,
            executor_id: self.executor_id,
            lease_expires_at: self.lease_expires_at,
            flagged_for_review: self.flagged_for_review,
            created_at: self.created_at,
            sent_at: self.sent_at,
            finished_at: self.finished_at,
            usage: self
                .usage
                .as_deref()
                .and_then(|u| serde_json::from_str::<serde_json::Value>(u).ok())
                .as_ref()
                .and_then(Usage::from_reported),
            cost,
        })
    }

    /// What the attempt has spent and has at risk, by its state (`money::charged`); `None` at a
    /// provider without a price, or before it was sent.
    fn cost(&self, state: AttemptState) -> Option<Cost> {
        let (currency, worst) = (self.currency.clone()?, self.worst_nanos?);
        let charged = money::charged(state, self.error_kind.as_deref(), worst, self.cost_nanos);
        Some(Cost {
            currency,
            spent: Amount::from_nanos(charged.spent).to_string(),
            at_risk: Amount::from_nanos(charged.at_risk).to_string(),
        })
    }
}
