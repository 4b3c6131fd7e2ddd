//! What is known of an attempt (SPEC §16): the executor's records of what it sent and what came
//! back, and the view a person decides on, built from them, the attempt and its job's history.

use std::collections::BTreeMap;

use crate::attempt::AttemptState;
use crate::error::Result;
use crate::known::{self, EndRecord, Known, KnownReceived, KnownSent, SentRecord};
use crate::model::{Attempt, Event};
use crate::store::evidence::{self as evidence_rows, EvidenceRow, NewEnd, NewSent};
use crate::store::{json_column, Tx};
use crate::Engine;

use super::group::{GroupWrite, Lock, Step};

impl Engine {
    /// Records what executor `executor_id` sends for an attempt, as the request leaves.
    pub(crate) async fn record_sent(
        &self,
        attempt_id: &str,
        executor_id: &str,
        sent: &SentRecord,
    ) -> Result<()> {
        let headers = serde_json::to_string(&sent.headers).unwrap_or_else(|_| "{}".to_owned());
        let (attempt_id, executor_id, sent) =
            (attempt_id.to_owned(), executor_id.to_owned(), sent.clone());
        self.group(RecordSent {
            attempt_id,
            executor_id,
            sent,
            headers,
        })
        .await
    }

    /// Records how an attempt's exchange ended without a trustworthy answer.
    pub(crate) async fn record_end(&self, attempt_id: &str, end: &EndRecord) -> Result<()> {
        let headers = end
            .received
            .as_ref()
            .map(|r| serde_json::to_string(&r.headers).unwrap_or_else(|_| "{}".to_owned()));
        let (attempt_id, end) = (attempt_id.to_owned(), end.clone());
        self.group(RecordEnd {
            attempt_id,
            end,
            headers,
        })
        .await
    }
}

/// [`Engine::record_sent`]'s write, with the request's headers as stored.
struct RecordSent {
    attempt_id: String,
    executor_id: String,
    sent: SentRecord,
    headers: String,
}

impl GroupWrite for RecordSent {
    type Out = ();

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, ()> {
        Box::pin(async move {
            let sent = &self.sent;
            let row = NewSent {
                attempt_id: &self.attempt_id,
                executor_id: &self.executor_id,
                method: &sent.method,
                url: &sent.url,
                headers: &self.headers,
                body_bytes: i64::from(sent.body_bytes),
                body_sha256: &sent.body_sha256,
                body: &sent.body,
                keyed: sent.keyed,
            };
            evidence_rows::record_sent(tx, &row).await?;
            Ok(())
        })
    }
}

/// [`Engine::record_end`]'s write, with the response's headers as stored, if any came.
struct RecordEnd {
    attempt_id: String,
    end: EndRecord,
    headers: Option<String>,
}

impl GroupWrite for RecordEnd {
    type Out = ();

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, ()> {
        Box::pin(async move {
            let end = &self.end;
            let row = NewEnd {
                attempt_id: &self.attempt_id,
                rule: end.rule.as_deref(),
                status: end.received.as_ref().map(|r| i32::from(r.status)),
                headers: self.headers.as_deref(),
                bytes: end.received.as_ref().map(|r| i64::from(r.bytes)),
            };
            evidence_rows::record_end(tx, &row).await?;
            Ok(())
        })
    }
}

/// What is known of each of a job's `unknown` attempts.
pub(super) async fn known_of(
    conn: &mut impl crate::store::Handle,
    job_id: &str,
    attempts: &[Attempt],
    events: &[Event],
) -> Result<Vec<Known>> {
    if !attempts.iter().any(|a| a.state == AttemptState::Unknown) {
        return Ok(Vec::new());
    }
    let rows = evidence_rows::for_job(conn, job_id).await?;
    Ok(attempts
        .iter()
        .filter(|a| a.state == AttemptState::Unknown)
        .map(|a| {
            let row = rows.iter().find(|r| r.attempt_id == a.id);
            known_one(a, row, events)
        })
        .collect())
}

fn headers_of(text: Option<&str>) -> BTreeMap<String, String> {
    text.map(json_column)
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

fn known_one(attempt: &Attempt, row: Option<&EvidenceRow>, events: &[Event]) -> Known {
    let keyed = row.is_some_and(|r| r.keyed != 0);
    // The rule the sender recorded; else the one the attempt's error names (a lease that ran
    // out is recorded by recovery, not by the sender).
    let rule = row
        .and_then(|r| r.rule.as_deref())
        .and_then(known::rule_of_code)
        .or_else(|| {
            let kind = attempt.error.as_ref()?.failure();
            known::rule(kind, keyed)
        });
    let clip = |n: i64| u32::try_from(n.max(0)).unwrap_or(u32::MAX);
    Known {
        attempt_id: attempt.id.clone(),
        number: attempt.number,
        provider: attempt.provider.clone(),
        sent: row.map(|r| KnownSent {
            at: attempt.sent_at.clone(),
            executor_id: r.executor_id.clone(),
            method: r.method.clone(),
            url: r.url.clone(),
            headers: headers_of(Some(&r.request_headers)),
            body_bytes: clip(r.body_bytes),
            body_sha256: r.body_sha256.clone(),
        }),
        watched: row.is_some_and(|r| r.watched != 0),
        received: row.and_then(|r| {
            let status = u16::try_from(r.response_status?).ok()?;
            Some(KnownReceived {
                status,
                headers: headers_of(r.response_headers.as_deref()),
                bytes: clip(r.response_bytes.unwrap_or(0)),
            })
        }),
        rule,
        tried: known::tried(attempt, events),
    }
}
