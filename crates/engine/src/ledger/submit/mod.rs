//! `submit` (SPEC §2): one job per (owner, key), decided by the database's unique constraint.
//!
//! Submits are committed in groups: each submit joins a queue, then waits for the group lock.
//! Whoever holds it takes every submit queued (its own and those that arrived while the last
//! group was being committed) and runs them in one write transaction: one multi-row INSERT and
//! one read of the keys' holders, or, when the database refuses that INSERT, each submit under
//! a savepoint of its own. One durable commit (one fsync) holds them all. Every caller is
//! answered only after that commit has returned success; a commit that fails answers each of
//! them with the failure. A lone submit is a group of one, committed in the caller's own task
//! by one call to the database. The unique constraint on (owner, key) stays the only arbiter:
//! two submits of one key in a group meet it like two in a row, since the second finds the
//! first's row.

//!
//! On SQLite, a group waiting for the process's one writer is offered meanwhile to whoever
//! holds it: a bulk operation (`ledger/bulk.rs`) that sees it waiting takes it into its own
//! transaction, so the submits are committed by the bulk's next commit instead of after it
//! (ADR 0057). The leader takes its group back once it holds the writer; a group taken is
//! answered by the one that took it, after its commit.
//!
//! - this file: the queue submits wait in, and the engine's calls.
//! - `commit.rs`: committing a group, and what each of its submits is answered.
//! - `offer.rs`: the group offered while its leader waits for the writer.

mod commit;
mod offer;

pub(crate) use offer::Riders;

use std::sync::Arc;

use tokio::sync::{oneshot, Notify};

use crate::error::{ConflictDetails, Error, Result};
use crate::intent::{parse_intent, validate_key, validate_owner, ValidIntent};
use crate::model::{Job, Submitted};
use crate::store::Db;
use crate::Engine;

use super::group::Gathering;

use commit::commit_and_answer;

/// A submit waiting for the next group commit.
struct ToSubmit {
    owner: String,
    key: String,
    intent: ValidIntent,
    reply: oneshot::Sender<Result<(Job, bool)>>,
}

/// The caller's side of a queued submit: its answer, once the commit that holds it is known.
type Ticket = oneshot::Receiver<Result<(Job, bool)>>;

/// Where submits wait for their group commit; one per engine, shared by its clones.
pub(crate) struct SubmitQueue {
    queued: Gathering<ToSubmit>,
    /// The group its leader waits for the SQLite writer with, if any.
    offered: Arc<offer::Offered>,
    db: Db,
    work: Arc<Notify>,
}

impl SubmitQueue {
    /// A queue committing on `db`, waking the executor through `work` after a commit that
    /// created a job.
    pub(crate) fn new(db: Db, work: Arc<Notify>) -> SubmitQueue {
        SubmitQueue {
            queued: Gathering::new(),
            offered: Arc::default(),
            db,
            work,
        }
    }

    fn push(&self, to_submit: ToSubmit) -> Result<()> {
        self.queued.push(to_submit)
    }

    /// Takes the group lock and commits what is queued, if anything: a caller whose submit
    /// an earlier holder already took finds nothing to do.
    #[cfg(test)]
    async fn lead(&self) {
        let (_leader, group) = self.queued.take().await;
        self.commit(group).await;
    }

    /// The answer to a queued submit: from another holder's group if it takes the submit
    /// first, else after committing the group this caller leads (see
    /// [`Gathering::answered`]).
    async fn outcome(&self, mut ticket: Ticket) -> Result<(Job, bool)> {
        self.queued
            .answered(&mut ticket, |group| self.commit(group))
            .await
            .map_err(|_| Error::internal("the submit's group commit stopped before answering"))?
    }

    /// Commits a group taken under the group lock, and answers its callers.
    async fn commit(&self, group: Vec<ToSubmit>) {
        match group.len() {
            0 => {}
            // In the caller's own task: a hand-off to another task costs a thread wake-up.
            1 => commit_and_answer(&self.db, &self.work, &self.offered, group).await,
            // Others' answers ride on this commit: it finishes even if this caller goes away.
            _ => {
                let (db, work, offered) =
                    (self.db.clone(), self.work.clone(), self.offered.clone());
                let _ =
                    tokio::spawn(
                        async move { commit_and_answer(&db, &work, &offered, group).await },
                    )
                    .await;
            }
        }
    }

    /// The group offered while its leader waits for the SQLite writer, taken by the caller,
    /// who holds the writer: the caller commits it and answers it (see [`Riders`]).
    pub(crate) fn riders(&self) -> Option<Riders> {
        self.offered.take().map(Riders::new)
    }
}

impl Engine {
    /// Submits an intent given as JSON text: the first call with a key creates a `queued` job
    /// at version 0 and wakes the executor; a repeat with the same intent returns that job with
    /// `replayed: true` and starts nothing; a repeat with another intent is
    /// `idempotency_conflict` naming the existing job. Nothing is reported before the commit
    /// that holds the job has returned success.
    pub async fn submit(&self, owner: &str, key: &str, intent_json: &str) -> Result<Submitted> {
        validate_owner(owner)?;
        validate_key(key)?;
        let intent = parse_intent(intent_json)?;
        self.submit_valid(owner, key, intent).await
    }

    async fn submit_valid(&self, owner: &str, key: &str, intent: ValidIntent) -> Result<Submitted> {
        let fingerprint = intent.fingerprint.clone();
        let (reply, ticket) = oneshot::channel();
        self.submits.push(ToSubmit {
            owner: owner.to_owned(),
            key: key.to_owned(),
            intent,
            reply,
        })?;
        let (job, replayed) = self.submits.outcome(ticket).await?;
        if !replayed || job.fingerprint == fingerprint {
            return Ok(Submitted { job, replayed });
        }
        Err(Error::IdempotencyConflict {
            message: format!(
                "key {key:?} already belongs to job {} with another intent; use a new key for a new intent",
                job.id
            ),
            details: ConflictDetails {
                existing_job_id: job.id,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Queues submits without leading, so one `lead` then commits them as one group.
    fn queue(engine: &Engine, key: &str, intent: &str) -> Ticket {
        let (reply, ticket) = oneshot::channel();
        engine
            .submits
            .push(ToSubmit {
                owner: "local".into(),
                key: key.into(),
                intent: parse_intent(intent).unwrap(),
                reply,
            })
            .unwrap();
        ticket
    }

    /// A lone submit on SQLite answers with the job it bound, not with one read back: it must
    /// be the job as the ledger holds it, and its `submitted` event must carry the same time.
    #[tokio::test]
    async fn a_lone_submit_answers_the_job_as_the_ledger_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let location = onejob_testkit::ledger_location(&dir.path().join("ledger.db"));
        let engine = Engine::open(&location).await.unwrap();
        let intent = r#"{"route": ["sandbox"], "input": {"n": 1.0}, "max_attempts": 2}"#;
        let answered = engine.submit("local", "alone", intent).await.unwrap();
        assert!(!answered.replayed);
        let held = engine.job("local", &answered.job.id).await.unwrap();
        assert_eq!(answered.job, held.job);
        let submitted = held.events.iter().find(|e| e.kind == "submitted").unwrap();
        assert_eq!(submitted.at, held.job.created_at);
        let replayed = engine.submit("local", "alone", intent).await.unwrap();
        assert!(replayed.replayed);
        assert_eq!(replayed.job, held.job);
    }

    #[tokio::test]
    async fn one_group_answers_each_caller_by_the_unique_key_alone() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let a = r#"{"route": ["sandbox"], "input": {"n": 1}}"#;
        let b = r#"{"route": ["sandbox"], "input": {"n": 2}}"#;
        let first = engine.submit("local", "taken", a).await.unwrap().job;

        let fresh = queue(&engine, "fresh", a);
        let twice = queue(&engine, "fresh", a);
        let conflict = queue(&engine, "taken", b);
        let nowhere = queue(&engine, "nowhere", r#"{"route": ["gone"], "input": {}}"#);
        let replay = queue(&engine, "taken", a);
        let last = queue(&engine, "last", b);
        engine.submits.lead().await;

        let (made, replayed) = fresh.await.unwrap().unwrap();
        assert!(!replayed);
        // The second of one key in the group finds the first's row: one job.
        let (again, replayed) = twice.await.unwrap().unwrap();
        assert!(replayed);
        assert_eq!(again.id, made.id);
        // The taken key's caller is answered with the existing job; deciding conflict or
        // replay by fingerprint is `submit_valid`'s, after the commit.
        let (held, replayed) = conflict.await.unwrap().unwrap();
        assert!(replayed);
        assert_eq!(held.id, first.id);
        assert_ne!(held.fingerprint, parse_intent(b).unwrap().fingerprint);
        let refused = nowhere.await.unwrap().unwrap_err();
        assert_eq!(refused.code(), "invalid_input");
        assert_eq!(replay.await.unwrap().unwrap().0.id, first.id);
        assert!(!last.await.unwrap().unwrap().1);
        // Exactly the three keys, and the refused submit left nothing behind.
        let page = engine
            .jobs("local", &crate::JobsQuery::default())
            .await
            .unwrap();
        let mut keys: Vec<_> = page
            .jobs
            .iter()
            .map(|j| j.idempotency_key.clone())
            .collect();
        keys.sort();
        assert_eq!(keys, ["fresh", "last", "taken"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_storm_of_one_key_makes_one_job_and_every_caller_gets_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let intent = r#"{"route": ["sandbox"], "input": {"n": 1}}"#;
        let calls: Vec<_> = (0..300)
            .map(|i| {
                let engine = engine.clone();
                let key = if i % 3 == 0 {
                    "one".to_owned()
                } else {
                    format!("k{i}")
                };
                tokio::spawn(
                    async move { (key.clone(), engine.submit("local", &key, intent).await) },
                )
            })
            .collect();
        let mut one_key_ids = std::collections::HashSet::new();
        let mut created = 0;
        for call in calls {
            let (key, submitted) = call.await.unwrap();
            let submitted = submitted.unwrap();
            if !submitted.replayed {
                created += 1;
            }
            if key == "one" {
                one_key_ids.insert(submitted.job.id);
            }
        }
        assert_eq!(one_key_ids.len(), 1);
        assert_eq!(
            created, 201,
            "200 distinct keys and one shared key, each made once"
        );
        let all = crate::JobsQuery {
            limit: Some(1000),
            ..crate::JobsQuery::default()
        };
        assert_eq!(engine.jobs("local", &all).await.unwrap().jobs.len(), 201);
    }
}
