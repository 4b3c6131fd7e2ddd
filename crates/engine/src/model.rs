//! The records the engine hands to its faces: jobs, attempts, events, and the shapes of replies.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use specta::Type;

use crate::attempt::AttemptState;
use crate::job::JobStatus;

/// One intent's durable record (SPEC §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Job {
    /// UUIDv7; never changes.
    pub id: String,
    pub owner_id: String,
    pub idempotency_key: String,
    /// Hex SHA-256 of the intent's RFC 8785 canonical JSON.
    pub fingerprint: String,
    pub intent: Value,
    pub status: JobStatus,
    /// Rises by one with every write that decides the outcome.
    pub version: u32,
    /// The attempt whose answer won, once one has.
    pub completed_by: Option<String>,
    pub result: Option<Value>,
    pub error: Option<JobError>,
    /// A late answer or a contradiction that a person should look at.
    pub flagged_for_review: bool,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    /// A queued job's backoff: no attempt starts before this time.
    pub not_before: Option<String>,
}

/// Why a job failed or was cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobError {
    pub code: String,
    pub message: String,
}

/// One try at one provider (SPEC §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attempt {
    pub id: String,
    pub job_id: String,
    /// 1, 2, … within its job.
    pub number: u32,
    pub provider: String,
    pub state: AttemptState,
    /// The job's version when this attempt was created; its answer wins only against it.
    pub job_version: u32,
    /// The provider's request id, saved as soon as response headers arrive.
    pub request_id: Option<String>,
    pub http_status: Option<u16>,
    pub error: Option<AttemptError>,
    pub executor_id: Option<String>,
    pub lease_expires_at: Option<String>,
    pub flagged_for_review: bool,
    pub created_at: String,
    pub sent_at: Option<String>,
    pub finished_at: Option<String>,
    /// The tokens its provider reported for the answer (AI providers only), whatever the
    /// answer's fate: a lost or contract-breaking answer was billed too.
    pub usage: Option<Usage>,
    /// What it cost (SPEC §17) at the price it was sent at; `None` at a provider without a
    /// price, or before it was sent.
    #[serde(default)]
    pub cost: Option<crate::money::Cost>,
}

/// Tokens an AI provider reported for one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    /// Tokens read: OpenAI's `prompt_tokens`; Anthropic's `input_tokens` plus its cache
    /// writes and reads, which it reports apart.
    pub prompt_tokens: u32,
    /// Tokens written: OpenAI's `completion_tokens`, Anthropic's `output_tokens`.
    pub completion_tokens: u32,
}

impl Usage {
    /// Reads a provider's raw `usage` object, in OpenAI's or Anthropic's spelling; `None`
    /// when it names neither count (an unknown shape is not reported as zero tokens).
    pub(crate) fn from_reported(raw: &Value) -> Option<Usage> {
        let count = |key: &str| {
            raw.get(key)
                .and_then(Value::as_u64)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        let openai = (count("prompt_tokens"), count("completion_tokens"));
        let anthropic = (count("input_tokens"), count("output_tokens"));
        let (prompt, completion) = match (openai, anthropic) {
            ((None, None), (None, None)) => return None,
            ((None, None), (input, output)) => {
                let cached = ["cache_creation_input_tokens", "cache_read_input_tokens"]
                    .iter()
                    .filter_map(|k| count(k))
                    .fold(0u32, u32::saturating_add);
                (input.map(|n| n.saturating_add(cached)), output)
            }
            ((prompt, completion), _) => (prompt, completion),
        };
        Some(Usage {
            prompt_tokens: prompt.unwrap_or(0),
            completion_tokens: completion.unwrap_or(0),
        })
    }

    /// The sum of the usages given, saturating; `None` when none was reported.
    pub(crate) fn total<'a>(usages: impl IntoIterator<Item = &'a Usage>) -> Option<Usage> {
        usages.into_iter().fold(None, |sum: Option<Usage>, u| {
            let sum = sum.unwrap_or_default();
            Some(Usage {
                prompt_tokens: sum.prompt_tokens.saturating_add(u.prompt_tokens),
                completion_tokens: sum.completion_tokens.saturating_add(u.completion_tokens),
            })
        })
    }
}

/// Jobs that are not closed and would be touched by removing a provider or a contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Type)]
pub struct OpenJobs {
    pub queued: u32,
    pub running: u32,
    pub unknown: u32,
}

/// Why an attempt failed, or what made it unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptError {
    pub kind: String,
    pub message: String,
}

/// Who wrote an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Actor {
    User,
    Executor,
    Provider,
    System,
}

impl Actor {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Actor::User => "user",
            Actor::Executor => "executor",
            Actor::Provider => "provider",
            Actor::System => "system",
        }
    }
}

/// One row of a job's append-only history (SPEC §10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Event {
    pub job_id: String,
    pub attempt_id: Option<String>,
    pub at: String,
    /// What happened (SPEC §10): `submitted`, `attempt_created`, `attempt_sent`,
    /// `attempt_succeeded`, `attempt_failed`, `attempt_unknown`, `attempt_abandoned`,
    /// `race_lost`, `late_answer_flagged`, `job_cancelled`, `job_failed`, `job_retried`,
    /// `resolved_by_person`, `recovered_unknown`, `backoff_set`; and for an `unknown` attempt
    /// (SPEC §16) `replayed` — its request sent again under its key — and `looked_up` — its
    /// provider's status URL asked.
    pub kind: String,
    pub actor: Actor,
    /// The kind's particulars. `replayed`: `{"outcome": "settled" | "retries_later" |
    /// "flagged", "http_status", "error_kind", "message", "retry_in_ms", "window_left_ms"}`
    /// (what did not come back is null). `looked_up`: `{"outcome": "settled" |
    /// "still_unknown", "http_status", "state", "answer"}`.
    pub detail: Value,
}

/// One event of an owner's jobs, with its place in the event feed (SPEC §15, `GET /v1/events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct FeedEvent {
    /// The event's position in the feed, opaque: pass it as `after` (an SSE `Last-Event-ID`)
    /// to resume after this event.
    pub id: String,
    pub event: Event,
}

/// One page of the event feed; `next` is where to ask from next time: the last event's `id`,
/// or the position asked from when the page is empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct FeedPage {
    pub events: Vec<FeedEvent>,
    pub next: String,
}

/// What `submit` returns: the job, and whether it already existed with the same intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Submitted {
    pub job: Job,
    pub replayed: bool,
}

/// A job with everything that happened to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobDetail {
    pub job: Job,
    pub attempts: Vec<Attempt>,
    pub events: Vec<Event>,
    /// The tokens reported over all its attempts; `None` when no attempt reported any.
    pub usage: Option<Usage>,
    /// What its attempts cost, one total per currency (SPEC §17); empty when none was sent at
    /// a provider with a price.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub cost: Vec<crate::money::Cost>,
    /// What is known of each of its `unknown` attempts (SPEC §16), by attempt number.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub known: Vec<crate::known::Known>,
}

/// One page of jobs, newest first; `next` continues after the last one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobPage {
    pub jobs: Vec<Job>,
    pub next: Option<String>,
}

/// A job as a list of jobs shows it: everything but its intent and result, which may be
/// megabytes, and of the intent only its route. The window's Jobs list reads these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct JobSummary {
    pub id: String,
    pub owner_id: String,
    pub idempotency_key: String,
    pub status: JobStatus,
    /// Rises by one with every write that decides the outcome.
    pub version: u32,
    /// The providers the intent's `route` names, in order.
    pub route: Vec<String>,
    /// A late answer or a contradiction that a person should look at.
    pub flagged_for_review: bool,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

/// One page of job summaries, newest first; `next` continues after the last one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct JobSummaryPage {
    pub jobs: Vec<JobSummary>,
    pub next: Option<String>,
}

/// A job with its intent and result as a screen shows them (SPEC §13): each whole, or when
/// its JSON text in the ledger is over 64 KiB only its length and first part, measured by the
/// database so that a large value never leaves it just to be measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ShownJob {
    pub id: String,
    pub owner_id: String,
    pub idempotency_key: String,
    /// Hex SHA-256 of the intent's RFC 8785 canonical JSON.
    pub fingerprint: String,
    pub intent: crate::ShownValue,
    pub status: JobStatus,
    /// Rises by one with every write that decides the outcome.
    pub version: u32,
    /// The attempt whose answer won, once one has.
    pub completed_by: Option<String>,
    pub result: Option<crate::ShownValue>,
    pub error: Option<JobError>,
    /// A late answer or a contradiction that a person should look at.
    pub flagged_for_review: bool,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    /// A queued job's backoff: no attempt starts before this time.
    pub not_before: Option<String>,
}

/// A job as shown, with its attempts and event history as the engine reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownJobDetail {
    pub job: ShownJob,
    pub attempts: Vec<Attempt>,
    pub events: Vec<Event>,
    /// The tokens reported over all its attempts; `None` when no attempt reported any.
    pub usage: Option<Usage>,
    /// What its attempts cost, one total per currency (SPEC §17); empty when none was sent at
    /// a provider with a price.
    pub cost: Vec<crate::money::Cost>,
    /// What is known of each of its `unknown` attempts (SPEC §16), by attempt number.
    pub known: Vec<crate::known::Known>,
}

/// A job and the attempt an action touched or created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobAttempt {
    pub job: Job,
    pub attempt: Attempt,
    /// With `resolve --retry-on`: the attempt created in the same transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt: Option<Attempt>,
}

/// A retry under an idempotency key (SPEC §15): the job and the attempt the key's first retry
/// started, as they stand now.
#[derive(Debug, Clone, PartialEq)]
pub struct Retried {
    pub done: JobAttempt,
    /// True when the key had already started that attempt, and nothing was started now.
    pub replayed: bool,
}

/// How an answer fared in the compare-and-swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It claimed the job's result.
    Won,
    /// Another answer had already won; this payload was dropped.
    Lost,
    /// The job was cancelled, failed or retried since the attempt began; dropped and flagged.
    Dropped,
}

/// What `complete` did with an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct Completion {
    pub outcome: Outcome,
    pub job: Job,
    pub attempt: Attempt,
}

/// A person's verdict on an attempt (SPEC §12 `resolve --as`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Verdict {
    /// "It went through": the (optional) result claims the job through the compare-and-swap.
    Succeeded,
    /// "It did not happen": the attempt is failed and the job may continue.
    Failed,
    /// "Abandon and allow a new attempt": stop waiting; a late answer may still win.
    Abandoned,
}

/// A person's resolution of an attempt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Type)]
pub struct Resolution {
    /// With `succeeded`: the result to record (JSON `null` when not given).
    pub result: Option<Value>,
    pub note: Option<String>,
    /// With `failed` or `abandoned`: start the next attempt on this provider at once.
    pub retry_on: Option<String>,
}

/// What the executor decides after an attempt's definite failure.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterFailure {
    /// The job goes back to `queued` for another attempt.
    Requeue,
    /// The job goes back to `queued`, with no attempt before `wait` has passed (at most an
    /// hour); `retry_after` is what the provider asked for, recorded beside it.
    RequeueAfter {
        wait: std::time::Duration,
        retry_after: Option<std::time::Duration>,
    },
    /// The job is `failed` with this error. The executor decides it by the policy instead;
    /// tests give it (through `testing`).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    FailJob(JobError),
}

/// An API token of the HTTP API as listed (SPEC §15): never the token, which is shown once
/// when it is made and kept nowhere. Read from the ledger as it is (`store::tokens`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type, sqlx::FromRow)]
pub struct TokenInfo {
    /// UUIDv7; what `revoke_token` takes.
    pub id: String,
    /// The owner every request carrying the token acts as.
    pub owner_id: String,
    /// A person's label for it, if given.
    pub name: Option<String>,
    pub created_at: String,
    /// When it was last used, recorded at most about once a minute.
    pub last_used_at: Option<String>,
    /// When it was revoked; a revoked token never works again.
    pub revoked_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_is_read_in_openai_and_anthropic_spellings() {
        let openai = json!({"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30});
        assert_eq!(
            Usage::from_reported(&openai),
            Some(Usage {
                prompt_tokens: 21,
                completion_tokens: 9
            })
        );
        let anthropic = json!({"input_tokens": 17, "output_tokens": 6,
                               "cache_creation_input_tokens": 100, "cache_read_input_tokens": 3});
        assert_eq!(
            Usage::from_reported(&anthropic),
            Some(Usage {
                prompt_tokens: 120,
                completion_tokens: 6
            })
        );
        assert_eq!(Usage::from_reported(&json!({"total_tokens": 5})), None);
        assert_eq!(Usage::from_reported(&json!("tokens")), None);
        let huge = json!({"prompt_tokens": u64::MAX, "completion_tokens": 1});
        assert_eq!(
            Usage::from_reported(&huge).map(|u| u.prompt_tokens),
            Some(u32::MAX)
        );
    }

    #[test]
    fn a_total_is_none_without_usage_and_saturates() {
        assert_eq!(Usage::total([]), None);
        let big = Usage {
            prompt_tokens: u32::MAX,
            completion_tokens: 1,
        };
        assert_eq!(
            Usage::total([&big, &big]),
            Some(Usage {
                prompt_tokens: u32::MAX,
                completion_tokens: 2
            })
        );
    }
}
