//! Answers and the compare-and-swap of SPEC §5: the first valid answer to commit wins,
//! every later one is dropped (never merged) and logged.

use std::sync::Arc;

use crate::store::Handle;
use serde_json::{json, Map, Value};

use crate::attempt::{AttemptState, Cause};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::intent::canonical_sha256;
use crate::job::JobStatus;
use crate::model::{Actor, Completion, Outcome};
use crate::store::attempts::{self as attempt_rows, MoveEvent, Patch};
use crate::store::jobs::{self as job_rows, JobRow};
use crate::store::Tx;
use crate::Engine;

use super::group::{Fast, GroupWrite, Lock, Ran, Step};
use super::transition::{close_open, move_attempt, AttemptMove};
use super::{attempt_row, event, job_row, reread, Note, ResponseHead};

/// How an answer arrived, for the transition's cause and its events.
pub(super) struct Via {
    pub cause: Cause,
    pub actor: Actor,
    /// The event written when it wins.
    pub win_kind: EventKind,
    /// Extra fields for every event it writes (a person's note, say).
    pub detail: Map<String, Value>,
}

/// What settling an answer did.
pub(super) struct Settled {
    pub outcome: Outcome,
    /// The job and the attempt as the settling left them, when it knows both without reading
    /// them again (an answer that won in time).
    pub rows: Option<(JobRow, attempt_rows::AttemptRow)>,
}

impl Settled {
    fn read_again(outcome: Outcome) -> Settled {
        Settled {
            outcome,
            rows: None,
        }
    }
}

/// An answer's event detail: `extra`, how it arrived (`via`), and its payload's SHA-256.
fn answer_detail(
    mut extra: Map<String, Value>,
    via: &Map<String, Value>,
    payload_sha256: &str,
) -> Value {
    extra.extend(via.clone());
    extra.insert("payload_sha256".into(), json!(payload_sha256));
    Value::Object(extra)
}

/// Settles an answer for an attempt. The outer `Err` aborts the transaction; the inner one
/// is a refusal that still left a mark (a contradiction flagged for review) and must be
/// committed before it is reported.
pub(super) async fn settle(
    conn: &mut impl Handle,
    row: &attempt_rows::AttemptRow,
    answer: &Value,
    via: Via,
) -> Result<std::result::Result<Settled, Error>> {
    let from = row.state()?;
    let payload_sha256 = canonical_sha256(answer);
    let detail = |extra: Map<String, Value>| answer_detail(extra, &via.detail, &payload_sha256);
    // An abandoned attempt moves only by the provider's own late answer (SPEC §4); a status
    // lookup that finds its work done is refused, but the job is flagged all the same (§5).
    let looked_up_abandoned = from == AttemptState::Abandoned && via.cause == Cause::Reconciliation;
    if looked_up_abandoned
        || matches!(
            from,
            AttemptState::Failed | AttemptState::Succeeded | AttemptState::Lost
        )
    {
        let dropped =
            dropped_after_verdict(conn, row, from, answer, via.actor, detail(Map::new())).await?;
        return Ok(dropped.map(Settled::read_again));
    }
    from.check(AttemptState::Succeeded, via.cause, &row.id)?;

    let won = job_rows::claim_result(
        conn,
        &row.job_id,
        row.job_version,
        &row.id,
        &answer.to_string(),
    )
    .await?;
    let late = from == AttemptState::Abandoned;
    if let Some(job) = won {
        let extra = Map::from_iter([
            ("from".into(), json!(from)),
            ("flagged_for_review".into(), json!(late)),
        ]);
        let m = AttemptMove {
            to: AttemptState::Succeeded,
            cause: via.cause,
            patch: Patch {
                finished: true,
                flag: late,
                ..Default::default()
            },
            event: via.win_kind,
            actor: via.actor,
            detail: detail(extra),
        };
        let attempt = move_attempt(conn, row, m).await?;
        if late {
            // A retry a person started while this one was abandoned is not awaited any more.
            // (An attempt answered in flight or unknown was its job's one open attempt.)
            close_open(conn, &row.job_id, JobStatus::Succeeded).await?;
            job_rows::flag(conn, &row.job_id).await?;
            return Ok(Ok(Settled::read_again(Outcome::Won)));
        }
        return Ok(Ok(Settled {
            outcome: Outcome::Won,
            rows: Some((job, attempt)),
        }));
    }

    let job = job_row(conn, &row.job_id).await?.into_job()?;
    // A person's "it went through" that loses means the effect may have happened twice.
    let flag = late || via.cause == Cause::Person || job.completed_by.is_none();
    if flag {
        job_rows::flag(conn, &row.job_id).await?;
    }
    let (kind, extra, outcome) = match &job.completed_by {
        Some(winner) => (
            EventKind::RaceLost,
            Map::from_iter([
                ("winner".into(), json!(winner)),
                ("loser".into(), json!(row.id)),
                ("flagged_for_review".into(), json!(flag)),
            ]),
            Outcome::Lost,
        ),
        None => {
            let why = format!(
                "the job is {} at version {}, the attempt began at version {}; the answer was dropped",
                job.status, job.version, row.job_version
            );
            (
                EventKind::LateAnswerFlagged,
                Map::from_iter([("reason".into(), json!(why))]),
                Outcome::Dropped,
            )
        }
    };
    let m = AttemptMove {
        to: AttemptState::Lost,
        cause: via.cause,
        patch: Patch {
            finished: true,
            flag,
            ..Default::default()
        },
        event: kind,
        actor: via.actor,
        detail: detail(extra),
    };
    move_attempt(conn, row, m).await?;
    Ok(Ok(Settled::read_again(outcome)))
}

/// An answer for an attempt whose outcome is already recorded: dropped, logged, and flagged
/// for review unless it only repeats the result the attempt already won with. For an
/// attempt marked `failed` ("it did not happen"), and a status lookup's answer for an
/// `abandoned` one, the answer is refused with `invalid_transition` after the flag is
/// recorded.
async fn dropped_after_verdict(
    conn: &mut impl Handle,
    row: &attempt_rows::AttemptRow,
    from: AttemptState,
    answer: &Value,
    actor: Actor,
    mut detail: Value,
) -> Result<std::result::Result<Outcome, Error>> {
    let job = job_row(conn, &row.job_id).await?.into_job()?;
    let repeats_result = from == AttemptState::Succeeded
        && job.completed_by.as_deref() == Some(row.id.as_str())
        && job.result.as_ref().map(canonical_sha256) == Some(canonical_sha256(answer));
    let why = if repeats_result {
        "the attempt already succeeded with this answer; the repeat was dropped".to_owned()
    } else {
        format!("an answer arrived for an attempt already marked {from}; it was dropped")
    };
    if let Value::Object(fields) = &mut detail {
        fields.insert("reason".into(), json!(why));
        fields.insert("flagged_for_review".into(), json!(!repeats_result));
    }
    if !repeats_result {
        attempt_rows::flag(conn, &row.id).await?;
        job_rows::flag(conn, &row.job_id).await?;
    }
    event(
        conn,
        &row.job_id,
        Some(&row.id),
        EventKind::LateAnswerFlagged,
        actor,
        detail,
    )
    .await?;
    if !matches!(from, AttemptState::Failed | AttemptState::Abandoned) {
        return Ok(Ok(Outcome::Dropped));
    }
    let mut refusal = Error::invalid_transition("attempt", &row.id, from.as_str(), "succeeded");
    if let Error::InvalidTransition { details, message } = &mut refusal {
        details.flagged_for_review = true;
        message.push_str("; the answer was dropped and the job flagged for review");
    }
    Ok(Err(refusal))
}

/// An answer for an attempt `in_flight` or `unknown` that wins the compare-and-swap, settled in
/// one call: the job claims the result and the attempt becomes `succeeded` with its event, as
/// [`settle`] does for such an attempt, and the response `head` it carries is recorded. `None`,
/// with nothing written, in every other case (the answer lost, or the attempt is in another
/// state), which [`settle`] then decides.
async fn won_in_time(
    conn: &mut impl Handle,
    attempt_id: &str,
    result: &str,
    detail: &str,
    head: Option<&ResponseHead>,
) -> Result<Option<Completion>> {
    let event = MoveEvent {
        kind: EventKind::AttemptSucceeded.as_str(),
        actor: Actor::Provider.as_str(),
        detail,
    };
    let head = head.map(|h| (h.request_id.as_deref(), h.http_status));
    let claimed = job_rows::claim_answer(conn, attempt_id, result, &event, head).await?;
    match claimed {
        Some(claimed) => won(attempt_id, claimed).map(Some),
        None => Ok(None),
    }
}

/// The winning event's detail of an answer that wins in time, as `settle` writes it (the
/// statement adds the state moved from).
fn won_detail(answer: &Value, via_detail: &Map<String, Value>) -> String {
    let extra = Map::from_iter([("flagged_for_review".into(), json!(false))]);
    answer_detail(extra, via_detail, &canonical_sha256(answer)).to_string()
}

/// What an answer that won in time wrote, as the engine's records.
fn won(attempt_id: &str, claimed: job_rows::ClaimedAnswer) -> Result<Completion> {
    let Some(attempt) = claimed.attempt else {
        return Err(Error::internal(format!(
            "attempt {attempt_id}: its job claimed the answer, yet the attempt did not move"
        )));
    };
    Ok(Completion {
        outcome: Outcome::Won,
        job: claimed.job.into_job()?,
        attempt: attempt.into_attempt()?,
    })
}

impl Engine {
    /// Completes an attempt with a valid answer through the compare-and-swap: the first to
    /// commit claims the job's result (`won`); later ones are `lost` and their payload dropped,
    /// with a `race_lost` event; an answer after the job was cancelled or failed is dropped and
    /// flagged for review. An answer for an attempt already marked `failed` is refused as
    /// `invalid_transition`, after flagging the contradiction for review; one for an attempt
    /// already `succeeded` or `lost` is dropped (`Outcome::Dropped`) and logged.
    ///
    /// `cause` is [`Cause::Answer`] for the provider's own answer, [`Cause::Reconciliation`]
    /// for a status lookup.
    ///
    /// Only tests call it (through `testing`); the executor calls [`Engine::complete_carrying`].
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) async fn complete(
        &self,
        attempt_id: &str,
        answer: &Value,
        cause: Cause,
    ) -> Result<Completion> {
        self.complete_carrying(None, attempt_id, answer, cause, None)
            .await
    }

    /// [`Engine::complete`], for the executor: the write also records the attempt's response
    /// head when it carries it (see [`ResponseHead`]), whatever the answer's outcome. Given the
    /// attempt's `job_id`, the group commit may run its compare-and-swap in one statement with
    /// other jobs' answers (PostgreSQL, see `group/runs.rs`).
    pub(crate) async fn complete_carrying(
        &self,
        job_id: Option<&str>,
        attempt_id: &str,
        answer: &Value,
        cause: Cause,
        head: Option<Arc<ResponseHead>>,
    ) -> Result<Completion> {
        let via = if cause == Cause::Answer {
            "answer"
        } else {
            "reconciliation"
        };
        let write = Complete::new(job_id, attempt_id, answer, cause, head, via, None)?;
        self.group(write).await?
    }

    /// [`Engine::complete`] for an answer a replay or a status lookup brought: `via` names
    /// how it came (`replay`, `reconciliation`) in the events, and `note` (the `replayed` or
    /// `looked_up` event) is recorded in the same transaction, before the outcome's event.
    pub(crate) async fn complete_noted(
        &self,
        attempt_id: &str,
        answer: &Value,
        cause: Cause,
        via: &'static str,
        note: Note,
    ) -> Result<Completion> {
        let write = Complete::new(None, attempt_id, answer, cause, None, via, Some(note))?;
        self.group(write).await?
    }
}

/// An answer's write for the executor: in one statement with other jobs' answers when its
/// `job_id` is known (PostgreSQL), else its compare-and-swap, then settling it as it stands.
struct Complete {
    job_id: Option<String>,
    attempt_id: String,
    answer: Value,
    cause: Cause,
    head: Option<Arc<ResponseHead>>,
    via_detail: Map<String, Value>,
    /// The answer as stored, and its winning event's detail.
    result: String,
    detail: String,
    note: Option<Note>,
}

impl Complete {
    /// The write of `answer` to the attempt, its events saying it came `via` (and `note`, if
    /// any, recorded before them); a person's verdict is no answer and goes through resolve.
    #[allow(clippy::too_many_arguments)]
    fn new(
        job_id: Option<&str>,
        attempt_id: &str,
        answer: &Value,
        cause: Cause,
        head: Option<Arc<ResponseHead>>,
        via: &'static str,
        note: Option<Note>,
    ) -> Result<Complete> {
        if cause == Cause::Person {
            return Err(Error::internal("a person's verdict goes through resolve"));
        }
        let via_detail = Map::from_iter([("via".into(), json!(via))]);
        let (result, detail) = (answer.to_string(), won_detail(answer, &via_detail));
        Ok(Complete {
            job_id: job_id.map(str::to_owned),
            attempt_id: attempt_id.to_owned(),
            answer: answer.clone(),
            cause,
            head,
            via_detail,
            result,
            detail,
            note,
        })
    }

    /// The write, given what a run's statement did for it, if it ran in one.
    async fn write(&self, tx: &mut Tx, ran: Option<Ran>) -> Result<Result<Completion>> {
        let attempt_id = &self.attempt_id;
        if let Some(note) = &self.note {
            let row = attempt_row(tx, attempt_id).await?;
            note.write(tx, &row.job_id, attempt_id).await?;
        }
        // The common case in one call: an answer in time that wins; or the group's statement
        // for a run of answers already said whether it did.
        let won_now = match ran {
            Some(Ran::Answered(Some(claimed))) => Some(won(attempt_id, *claimed)?),
            Some(Ran::Answered(None)) => None,
            _ => {
                let head = self.head.as_deref();
                won_in_time(tx, attempt_id, &self.result, &self.detail, head).await?
            }
        };
        if let Some(won) = won_now {
            return Ok(Ok(won));
        }
        if let Some(head) = &self.head {
            let (request_id, status) = (head.request_id.as_deref(), head.http_status);
            attempt_rows::record_response_head(tx, attempt_id, request_id, status).await?;
        }
        let row = attempt_row(tx, attempt_id).await?;
        let via = Via {
            cause: self.cause,
            actor: Actor::Provider,
            win_kind: EventKind::AttemptSucceeded,
            detail: self.via_detail.clone(),
        };
        let settled = match settle(tx, &row, &self.answer, via).await? {
            Ok(settled) => settled,
            // A refusal that left its mark, committed with it.
            Err(refusal) => return Ok(Err(refusal)),
        };
        let (job, attempt) = match settled.rows {
            Some((job, attempt)) => (job.into_job()?, attempt.into_attempt()?),
            None => reread(tx, &row.job_id, attempt_id).await?,
        };
        Ok(Ok(Completion {
            outcome: settled.outcome,
            job,
            attempt,
        }))
    }
}

impl GroupWrite for Complete {
    type Out = Result<Completion>;

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn fast(&self) -> Option<Fast> {
        Some(Fast::Answer {
            job_id: self.job_id.clone()?,
            attempt_id: self.attempt_id.clone(),
            result: self.result.clone(),
            detail: self.detail.clone(),
            head: self
                .head
                .as_deref()
                .map(|h| (h.request_id.clone(), h.http_status)),
        })
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, Self::Out> {
        Box::pin(self.write(tx, None))
    }

    fn run_after<'t>(&'t self, tx: &'t mut Tx, ran: Ran) -> Step<'t, Self::Out> {
        Box::pin(self.write(tx, Some(ran)))
    }
}
