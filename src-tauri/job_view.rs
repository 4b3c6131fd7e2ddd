//! The Job screen's data: a job with its attempts and history, each of its intent, result and
//! event details whole or, when large, only by its size and first part (SPEC §13), so a
//! large job reaches the window as quickly as a small one. The intent and result come
//! measured by the ledger ([`ShownJob`]); the events' details are measured here.

use onejob_engine::known::Known;
use onejob_engine::{Actor, Attempt, Cost, ShownJob, ShownJobDetail, ShownValue, Usage};
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
    /// What its attempts cost, one total per currency (SPEC §17); empty when none was sent at
    /// a provider with a price.
    pub cost: Vec<Cost>,
    /// What is known of each of its `unknown` attempts (SPEC §16), as the engine gives it; the
    /// body sent is asked for as a job part.
    pub known: Vec<Known>,
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
    /// The engine's detail of a job as shown, every large event detail replaced by its size
    /// and first part too.
    pub fn of(detail: ShownJobDetail) -> JobView {
        JobView {
            job: detail.job,
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
            cost: detail.cost,
            known: detail.known,
        }
    }
}
