//! Answers and the compare-and-swap of SPEC §5: the first valid answer to commit wins,
//! every later one is dropped (never merged) and logged.

use serde_json::{json, Map, Value};
use sqlx::SqliteConnection;

use crate::attempt::{AttemptState, Cause};
use crate::error::{Error, Result};
use crate::intent::canonical_sha256;
use crate::model::{Actor, Completion, Outcome};
use crate::store::{attempts as attempt_rows, jobs as job_rows};
use crate::Engine;

use super::attempts::move_attempt;
use super::{attempt_row, event, job_row, reread};

/// How an answer arrived, for the transition's cause and its events.
pub(super) struct Via {
    pub cause: Cause,
    pub actor: Actor,
    /// The event written when it wins.
    pub win_kind: &'static str,
    /// Extra fields for every event it writes (a person's note, say).
    pub detail: Map<String, Value>,
}

/// Settles an answer for an attempt. The outer `Err` aborts the transaction; the inner one
/// is a refusal that still left a mark (a contradiction flagged for review) and must be
/// committed before it is reported.
pub(super) async fn settle(
    conn: &mut SqliteConnection,
    row: &attempt_rows::AttemptRow,
    answer: &Value,
    via: Via,
) -> Result<std::result::Result<Outcome, Error>> {
    let from = row.state()?;
    let payload_sha256 = canonical_sha256(answer);
    let detail = |mut extra: Map<String, Value>| {
        extra.extend(via.detail.clone());
        extra.insert("payload_sha256".into(), json!(payload_sha256));
        Value::Object(extra)
    };
    if from == AttemptState::Failed {
        // Someone already said it did not happen; the answer says it did.
        attempt_rows::flag(conn, &row.id).await?;
        job_rows::flag(conn, &row.job_id).await?;
        let why = "an answer arrived for an attempt already marked failed; it was dropped";
        event(
            conn,
            &row.job_id,
            Some(&row.id),
            "late_answer_flagged",
            via.actor,
            detail(Map::from_iter([("reason".into(), json!(why))])),
        )
        .await?;
        let mut refusal = Error::invalid_transition("attempt", &row.id, "failed", "succeeded");
        if let Error::InvalidTransition { details, message } = &mut refusal {
            details.flagged_for_review = true;
            message.push_str("; the answer was dropped and the job flagged for review");
        }
        return Ok(Err(refusal));
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
    if won {
        let patch = attempt_rows::Patch {
            finished: true,
            flag: late,
            ..Default::default()
        };
        move_attempt(conn, row, AttemptState::Succeeded, via.cause, &patch).await?;
        if late {
            job_rows::flag(conn, &row.job_id).await?;
        }
        let extra = Map::from_iter([
            ("from".into(), json!(from)),
            ("flagged_for_review".into(), json!(late)),
        ]);
        event(
            conn,
            &row.job_id,
            Some(&row.id),
            via.win_kind,
            via.actor,
            detail(extra),
        )
        .await?;
        return Ok(Ok(Outcome::Won));
    }

    let job = job_row(conn, &row.job_id).await?.into_job()?;
    // A person's "it went through" that loses means the effect may have happened twice.
    let flag = late || via.cause == Cause::Person || job.completed_by.is_none();
    let patch = attempt_rows::Patch {
        finished: true,
        flag,
        ..Default::default()
    };
    move_attempt(conn, row, AttemptState::Lost, via.cause, &patch).await?;
    if flag {
        job_rows::flag(conn, &row.job_id).await?;
    }
    match &job.completed_by {
        Some(winner) => {
            let extra = Map::from_iter([
                ("winner".into(), json!(winner)),
                ("loser".into(), json!(row.id)),
                ("flagged_for_review".into(), json!(flag)),
            ]);
            event(
                conn,
                &row.job_id,
                Some(&row.id),
                "race_lost",
                via.actor,
                detail(extra),
            )
            .await?;
            Ok(Ok(Outcome::Lost))
        }
        None => {
            let why = format!(
                "the job is {} at version {}, the attempt began at version {}; the answer was dropped",
                job.status, job.version, row.job_version
            );
            let extra = Map::from_iter([("reason".into(), json!(why))]);
            event(
                conn,
                &row.job_id,
                Some(&row.id),
                "late_answer_flagged",
                via.actor,
                detail(extra),
            )
            .await?;
            Ok(Ok(Outcome::Dropped))
        }
    }
}

impl Engine {
    /// Completes an attempt with a valid answer through the compare-and-swap: the first to
    /// commit claims the job's result (`won`); later ones are `lost` and their payload dropped,
    /// with a `race_lost` event; an answer after the job was cancelled or failed is dropped and
    /// flagged for review. An answer for an attempt already marked `failed` is refused as
    /// `invalid_transition`, after flagging the contradiction for review.
    ///
    /// `cause` is [`Cause::Answer`] for the provider's own answer, [`Cause::Reconciliation`]
    /// for a status lookup.
    pub async fn complete(
        &self,
        attempt_id: &str,
        answer: &Value,
        cause: Cause,
    ) -> Result<Completion> {
        if cause == Cause::Person {
            return Err(Error::internal("a person's verdict goes through resolve"));
        }
        let mut tx = self.begin().await?;
        let row = attempt_row(&mut tx, attempt_id).await?;
        let via = Via {
            cause,
            actor: Actor::Provider,
            win_kind: "attempt_succeeded",
            detail: Map::from_iter([(
                "via".into(),
                json!(if cause == Cause::Answer {
                    "answer"
                } else {
                    "reconciliation"
                }),
            )]),
        };
        let settled = settle(&mut tx, &row, answer, via).await?;
        let (job, attempt) = reread(&mut tx, &row.job_id, attempt_id).await?;
        tx.commit().await?;
        let outcome = settled?;
        Ok(Completion {
            outcome,
            job,
            attempt,
        })
    }
}
