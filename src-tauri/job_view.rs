//! The Job screen's data: a job with its attempts and history, each of its intent, result and
//! event details whole or, when large, only by its size and first part (SPEC §13), so a
//! large job reaches the window as quickly as a small one.

use onejob_engine::known::Known;
use onejob_engine::{Actor, Attempt, Job, JobDetail, JobError, JobStatus, ShownValue, Usage};
use serde::Serialize;

/// What the Job screen shows of one job.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct JobView {
    pub job: ShownJob,
    pub attempts: Vec<Attempt>,
    /// Its history, oldest first: an event's place here is the index that names it.
    pub events: Vec<ShownEvent>,
    /// The tokens reported over all its attempts; `None` when no attempt reported any.
    pub usage: Option<Usage>,
    /// What is known of each of its `unknown` attempts (SPEC §16), as the engine gives it; the
    /// body sent is asked for as a job part.
    pub known: Vec<Known>,
}

/// A job as the engine gives it, with its intent and result as shown.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ShownJob {
    pub id: String,
    pub owner_id: String,
    pub idempotency_key: String,
    /// Hex SHA-256 of the intent's RFC 8785 canonical JSON.
    pub fingerprint: String,
    pub intent: ShownValue,
    pub status: JobStatus,
    /// Rises by one with every write that decides the outcome.
    pub version: u32,
    /// The attempt whose answer won, once one has.
    pub completed_by: Option<String>,
    pub result: Option<ShownValue>,
    pub error: Option<JobError>,
    /// A late answer or a contradiction that a person should look at.
    pub flagged_for_review: bool,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    /// A queued job's backoff: no attempt starts before this time.
    pub not_before: Option<String>,
}

/// One event of the history, with its detail as shown.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ShownEvent {
    pub attempt_id: Option<String>,
    pub at: String,
    pub kind: String,
    pub actor: Actor,
    pub detail: ShownValue,
}

impl JobView {
    /// The engine's detail of a job, every large value replaced by its size and first part.
    pub fn of(detail: JobDetail) -> JobView {
        JobView {
            job: ShownJob::of(detail.job),
            attempts: detail.attempts,
            events: detail
                .events
                .into_iter()
                .map(|e| ShownEvent {
                    attempt_id: e.attempt_id,
                    at: e.at,
                    kind: e.kind,
                    actor: e.actor,
                    detail: ShownValue::of(e.detail),
                })
                .collect(),
            usage: detail.usage,
            known: detail.known,
        }
    }
}

impl ShownJob {
    fn of(job: Job) -> ShownJob {
        ShownJob {
            id: job.id,
            owner_id: job.owner_id,
            idempotency_key: job.idempotency_key,
            fingerprint: job.fingerprint,
            intent: ShownValue::of(job.intent),
            status: job.status,
            version: job.version,
            completed_by: job.completed_by,
            result: job.result.map(ShownValue::of),
            error: job.error,
            flagged_for_review: job.flagged_for_review,
            created_at: job.created_at,
            updated_at: job.updated_at,
            finished_at: job.finished_at,
            not_before: job.not_before,
        }
    }
}
