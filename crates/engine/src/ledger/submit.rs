//! `submit` (SPEC §2): one job per (owner, key), decided by the database's unique constraint.
//!
//! Submits are committed in groups: each submit joins a queue, then waits for the group lock.
//! Whoever holds it takes every submit queued (its own and those that arrived while the last
//! group was being committed) and runs them in one write transaction, each under a savepoint
//! of its own, so one durable commit (one fsync) holds them all. Every caller is answered only
//! after that commit has returned success; a commit that fails answers each of them with the
//! failure. A lone submit is a group of one, committed in the caller's own task. The unique
//! constraint on (owner, key) stays the only arbiter: two submits of one key in a group meet it
//! like two in a row, since the second sees the first's row.

use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, Notify};

use crate::error::{ConflictDetails, Error, Result};
use crate::intent::{parse_intent, validate_intent, validate_key, validate_owner, ValidIntent};
use crate::model::{Job, Submitted};
use crate::store::{
    contracts as contract_rows, jobs as job_rows, providers as provider_rows, Db, Handle, Tx,
};
use crate::Engine;

/// The most submits one commit holds: enough to turn a storm into a few commits, few enough
/// that the write lock is never held long.
const MAX_GROUP: usize = 256;

/// A submit waiting for the next group commit.
struct Pending {
    owner: String,
    key: String,
    intent: ValidIntent,
    reply: oneshot::Sender<Result<(Job, bool)>>,
}

/// Where submits wait for their group commit; one per engine, shared by its clones.
pub(crate) struct SubmitQueue {
    waiting: Mutex<Vec<Pending>>,
    leader: tokio::sync::Mutex<()>,
    db: Db,
    work: Arc<Notify>,
}

impl SubmitQueue {
    /// A queue committing on `db`, waking the executor through `work` after a commit that
    /// created a job.
    pub(crate) fn new(db: Db, work: Arc<Notify>) -> SubmitQueue {
        SubmitQueue {
            waiting: Mutex::new(Vec::new()),
            leader: tokio::sync::Mutex::new(()),
            db,
            work,
        }
    }

    fn push(&self, pending: Pending) -> Result<()> {
        self.waiting
            .lock()
            .map_err(|_| Error::internal("the submit queue was poisoned"))?
            .push(pending);
        Ok(())
    }

    /// Takes the group lock and commits what is queued, if anything: a caller whose submit
    /// an earlier holder already took finds nothing to do.
    async fn lead(&self) {
        let _leader = self.leader.lock().await;
        let group: Vec<Pending> = match self.waiting.lock() {
            Ok(mut waiting) => {
                let n = waiting.len().min(MAX_GROUP);
                waiting.drain(..n).collect()
            }
            Err(_) => return,
        };
        match group.len() {
            0 => {}
            1 => commit_and_answer(&self.db, &self.work, group).await,
            // Others' answers ride on this commit: it finishes even if this caller goes away.
            _ => {
                let (db, work) = (self.db.clone(), self.work.clone());
                let _ =
                    tokio::spawn(async move { commit_and_answer(&db, &work, group).await }).await;
            }
        }
    }
}

/// Commits the group, then answers each of its callers.
async fn commit_and_answer(db: &Db, work: &Notify, group: Vec<Pending>) {
    match commit_group(db, &group).await {
        Ok(outcomes) => {
            if outcomes.iter().any(|o| matches!(o, Ok((_, false)))) {
                crate::wake(work);
            }
            for (pending, outcome) in group.into_iter().zip(outcomes) {
                let _ = pending.reply.send(outcome);
            }
        }
        Err(e) => {
            for pending in group {
                let _ = pending.reply.send(Err(e.clone()));
            }
        }
    }
}

/// One write transaction for the whole group, a savepoint per submit when there are several;
/// the outcomes in order.
async fn commit_group(db: &Db, group: &[Pending]) -> Result<Vec<Result<(Job, bool)>>> {
    if let (Db::Postgres(_), [alone]) = (db, group) {
        return Ok(vec![submit_alone_autocommit(db, alone).await]);
    }
    let mut tx = db.begin().await?;
    if let [alone] = group {
        // A group of one needs no savepoint: a refusal rolls the transaction back whole.
        let outcome = submit_in(&mut tx, alone).await;
        if outcome.is_ok() {
            tx.commit().await?;
        }
        return Ok(vec![outcome]);
    }
    let mut outcomes = Vec::with_capacity(group.len());
    for pending in group {
        tx.savepoint().await?;
        let outcome = submit_in(&mut tx, pending).await;
        if outcome.is_err() {
            // Undo whatever of this submit was written; the others stand.
            tx.rollback_to_savepoint().await?;
        }
        tx.release_savepoint().await?;
        outcomes.push(outcome);
    }
    tx.commit().await?;
    Ok(outcomes)
}

/// A lone submit on PostgreSQL: one autocommit statement, answered only once the server has
/// committed it (the statement's result arrives after its commit). The unique constraint
/// arbitrates the key and the schema's trigger checks the route's and the contract's names in
/// that same statement; only when it refuses are the names looked up, to say which one.
/// Nothing else is read or written, so the ledger's write lock is not needed: this is the one
/// write that neither reads what it decides on nor touches another row.
async fn submit_alone_autocommit(db: &Db, pending: &Pending) -> Result<(Job, bool)> {
    let mut conn = db.write().await?;
    match insert_or_replay(&mut conn, pending).await? {
        Ok(done) => Ok(done),
        // The failed statement was its own transaction: the connection reads on.
        Err(refused) => Err(missing_name(&mut conn, pending)
            .await?
            .unwrap_or_else(|| refused.into_error())),
    }
}

/// The schema's name check refused a job (a provider or the contract was removed between a
/// look and the insert, or was never there); the database's words.
struct NameRefused(String);

impl NameRefused {
    fn into_error(self) -> Error {
        Error::invalid_input(
            "intent",
            format!(
                "the intent names a provider or contract that is not configured: {}",
                self.0
            ),
        )
    }
}

/// One submit inside the group's transaction: the route and contract are checked where they
/// cannot change before the insert; the job is inserted unless the key is taken, in which case
/// the job holding it is returned with `true` (replayed).
async fn submit_in(tx: &mut Tx, pending: &Pending) -> Result<(Job, bool)> {
    if let Some(missing) = missing_name(tx, pending).await? {
        return Err(missing);
    }
    insert_or_replay(tx, pending)
        .await?
        .map_err(NameRefused::into_error)
}

/// `invalid_input` naming the route's first provider or the contract that is not configured,
/// if one is not.
async fn missing_name(h: &mut impl Handle, pending: &Pending) -> Result<Option<Error>> {
    let intent = &pending.intent;
    if let Some((i, name)) = provider_rows::first_missing(h, &intent.intent.route).await? {
        return Ok(Some(Error::invalid_input(
            format!("intent.route.{i}"),
            format!("no provider named {name} is configured"),
        )));
    }
    if let Some(name) = &intent.intent.contract {
        if contract_rows::get(h, name).await?.is_none() {
            return Ok(Some(Error::invalid_input(
                "intent.contract",
                format!("no contract named {name} is configured"),
            )));
        }
    }
    Ok(None)
}

/// Inserts the job unless the owner's key is taken; then the job holding it, with `true`
/// (replayed). The inner error is the schema's name check refusing the job.
async fn insert_or_replay(
    h: &mut impl Handle,
    pending: &Pending,
) -> Result<std::result::Result<(Job, bool), NameRefused>> {
    let intent = &pending.intent;
    let id = uuid::Uuid::now_v7().to_string();
    let new = job_rows::NewJob {
        id: &id,
        owner_id: &pending.owner,
        idempotency_key: &pending.key,
        fingerprint: &intent.fingerprint,
        intent: &intent.stored,
    };
    // The schema's triggers write the `submitted` event in the same statement.
    let inserted = match job_rows::insert_if_new(h, &new).await {
        Err(sqlx::Error::Database(e)) if e.kind() == sqlx::error::ErrorKind::CheckViolation => {
            return Ok(Err(NameRefused(e.message().to_owned())));
        }
        other => other?,
    };
    Ok(Ok(match inserted {
        Some(row) => (row.into_job()?, false),
        None => {
            let existing = job_rows::by_key(h, &pending.owner, &pending.key)
                .await?
                .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))?;
            (existing.into_job()?, true)
        }
    }))
}

impl Engine {
    /// Submits an intent given as JSON text. See [`Engine::submit_intent`].
    pub async fn submit(&self, owner: &str, key: &str, intent_json: &str) -> Result<Submitted> {
        validate_owner(owner)?;
        validate_key(key)?;
        let intent = parse_intent(intent_json)?;
        self.submit_valid(owner, key, intent).await
    }

    /// Submits an intent: the first call with a key creates a `queued` job at version 0 and
    /// wakes the executor; a repeat with the same intent returns that job with
    /// `replayed: true` and starts nothing; a repeat with another intent is
    /// `idempotency_conflict` naming the existing job. Nothing is reported before the commit
    /// that holds the job has returned success.
    pub async fn submit_intent(
        &self,
        owner: &str,
        key: &str,
        intent: serde_json::Value,
    ) -> Result<Submitted> {
        validate_owner(owner)?;
        validate_key(key)?;
        let intent = validate_intent(intent)?;
        self.submit_valid(owner, key, intent).await
    }

    async fn submit_valid(&self, owner: &str, key: &str, intent: ValidIntent) -> Result<Submitted> {
        let fingerprint = intent.fingerprint.clone();
        let (reply, answer) = oneshot::channel();
        self.submits.push(Pending {
            owner: owner.to_owned(),
            key: key.to_owned(),
            intent,
            reply,
        })?;
        self.submits.lead().await;
        let (job, replayed) = answer
            .await
            .map_err(|_| Error::internal("the submit's group commit stopped before answering"))??;
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
    fn queue(engine: &Engine, key: &str, intent: &str) -> oneshot::Receiver<Result<(Job, bool)>> {
        let (reply, answer) = oneshot::channel();
        engine
            .submits
            .push(Pending {
                owner: "local".into(),
                key: key.into(),
                intent: parse_intent(intent).unwrap(),
                reply,
            })
            .unwrap();
        answer
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
