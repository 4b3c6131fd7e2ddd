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

use std::sync::Arc;

use tokio::sync::{oneshot, Notify};

use crate::error::{ConflictDetails, Error, Result};
use crate::intent::{parse_intent, validate_intent, validate_key, validate_owner, ValidIntent};
use crate::model::{Job, Submitted};
use crate::store::{
    contracts as contract_rows, jobs as job_rows, providers as provider_rows, Db, Handle, Tx,
};
use crate::Engine;

use super::finish;
use super::group::Gathering;

/// A submit waiting for the next group commit.
struct ToSubmit {
    owner: String,
    key: String,
    intent: ValidIntent,
    reply: oneshot::Sender<Result<(Job, bool)>>,
}

/// A submit's answer, once the commit that holds it is known.
type Answer = oneshot::Receiver<Result<(Job, bool)>>;

/// Where submits wait for their group commit; one per engine, shared by its clones.
pub(crate) struct SubmitQueue {
    queued: Gathering<ToSubmit>,
    db: Db,
    work: Arc<Notify>,
}

impl SubmitQueue {
    /// A queue committing on `db`, waking the executor through `work` after a commit that
    /// created a job.
    pub(crate) fn new(db: Db, work: Arc<Notify>) -> SubmitQueue {
        SubmitQueue {
            queued: Gathering::new(),
            db,
            work,
        }
    }

    fn push(&self, pending: ToSubmit) -> Result<()> {
        self.queued.push(pending)
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
    async fn answer(&self, mut answer: Answer) -> Result<(Job, bool)> {
        self.queued
            .answered(&mut answer, |group| self.commit(group))
            .await
            .map_err(|_| Error::internal("the submit's group commit stopped before answering"))?
    }

    /// Commits a group taken under the group lock, and answers its callers.
    async fn commit(&self, group: Vec<ToSubmit>) {
        match group.len() {
            0 => {}
            // In the caller's own task: a hand-off to another task costs a thread wake-up.
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

/// Commits the group, then answers each of its callers. The group's keys go in in one order,
/// (owner, key), so two hosts' groups that share keys wait for each other's index entries in
/// that order, never in a circle.
async fn commit_and_answer(db: &Db, work: &Notify, mut group: Vec<ToSubmit>) {
    group.sort_by(|a, b| (&a.owner, &a.key).cmp(&(&b.owner, &b.key)));
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

/// A group of one commits on its own. A larger group commits in one write transaction: all its
/// jobs in one statement, then one read of the jobs holding its keys. When that statement
/// fails (one submit names a provider or contract that is not configured), the group is
/// committed again with a savepoint per submit, so the refusal answers its caller alone. The
/// outcomes in order; an error fails the whole group.
async fn commit_group(db: &Db, group: &[ToSubmit]) -> Result<Vec<Result<(Job, bool)>>> {
    if let [alone] = group {
        return Ok(vec![submit_alone(db, alone).await]);
    }
    if let Some(outcomes) = commit_together(db, group).await? {
        return Ok(outcomes);
    }
    let mut tx = db.begin().await?;
    let outcome = async {
        let mut outcomes = Vec::with_capacity(group.len());
        for pending in group {
            outcomes.push(submit_step(&mut tx, pending).await?);
        }
        Ok(outcomes)
    }
    .await;
    finish(tx, outcome).await
}

/// The whole group in one statement and one read; `None`, with nothing committed, when the
/// database refused the statement.
async fn commit_together(db: &Db, group: &[ToSubmit]) -> Result<Option<Vec<Result<(Job, bool)>>>> {
    let ids: Vec<String> = group
        .iter()
        .map(|_| uuid::Uuid::now_v7().to_string())
        .collect();
    let rows: Vec<[&str; 5]> = group
        .iter()
        .zip(&ids)
        .map(|(p, id)| {
            [
                id.as_str(),
                p.owner.as_str(),
                p.key.as_str(),
                p.intent.fingerprint.as_str(),
                p.intent.stored.as_str(),
            ]
        })
        .collect();
    let rows = serde_json::to_string(&rows)
        .map_err(|e| Error::internal(format!("cannot write the group's rows: {e}")))?;
    let mut tx = db.begin().await?;
    let outcome = async {
        match job_rows::insert_many(&mut tx, &rows).await {
            Ok(_) => {}
            Err(sqlx::Error::Database(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let mut held = std::collections::HashMap::new();
        for row in job_rows::holders(&mut tx, &rows).await? {
            let job = row.into_job()?;
            held.insert((job.owner_id.clone(), job.idempotency_key.clone()), job);
        }
        Ok(Some(held))
    }
    .await;
    let held = match outcome {
        // Refused: rolled back before the group runs again, a submit at a time.
        Ok(None) => {
            tx.rollback().await?;
            return Ok(None);
        }
        Ok(Some(held)) => finish(tx, Ok(held)).await?,
        Err(e) => return finish(tx, Err(e)).await,
    };
    Ok(Some(
        group
            .iter()
            .zip(&ids)
            .map(|(p, id)| {
                held.get(&(p.owner.clone(), p.key.clone()))
                    .map(|job| (job.clone(), job.id != *id))
                    .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))
            })
            .collect(),
    ))
}

/// A lone submit, committed by the one call of `jobs::submit` on the writer: one autocommitted
/// `INSERT … ON CONFLICT DO NOTHING` on either backend (without `RETURNING` on SQLite). The
/// unique constraint arbitrates the key and the schema's triggers check the route's and the
/// contract's names inside the INSERT; only when it is refused are the names looked up, to say
/// which one. The answer comes after the commit has returned success.
async fn submit_alone(db: &Db, pending: &ToSubmit) -> Result<(Job, bool)> {
    let mut writer = db.write().await?;
    // If the caller goes away while the statement runs, nothing was answered; and should a
    // transaction be open on the writer, it is rolled back before anything else runs there.
    writer.settle(false);
    let id = uuid::Uuid::now_v7().to_string();
    let outcome = job_rows::submit(&mut writer, &new_job(&id, pending)).await;
    if outcome.is_err() {
        // A safeguard: the autocommitted statement leaves no transaction open, but should one
        // be open on the SQLite writer, it ends here, before anything else runs there.
        job_rows::rollback(&mut writer).await;
    }
    writer.settle(true);
    match outcome {
        Ok(held) => holder(&mut writer, pending, &id, held).await,
        Err(e) => Err(refusal(&mut writer, pending, e).await),
    }
}

/// One submit inside a group's transaction, under a savepoint of its own: refused, it is
/// undone alone and answers only its caller. The outer error (a savepoint that cannot be
/// rolled back) fails the group.
async fn submit_step(tx: &mut Tx, pending: &ToSubmit) -> Result<Result<(Job, bool)>> {
    let id = uuid::Uuid::now_v7().to_string();
    // SQLite's statements take their savepoint themselves, in the same call.
    let outer = matches!(tx, Tx::Postgres(_));
    if outer {
        tx.savepoint().await?;
    }
    match job_rows::submit_step(tx, &new_job(&id, pending)).await {
        Ok(held) => {
            if outer {
                tx.release_savepoint().await?;
            }
            Ok(holder(tx, pending, &id, held).await)
        }
        Err(e) => {
            tx.rollback_to_savepoint().await?;
            tx.release_savepoint().await?;
            Ok(Err(refusal(tx, pending, e).await))
        }
    }
}

fn new_job<'a>(id: &'a str, pending: &'a ToSubmit) -> job_rows::NewJob<'a> {
    job_rows::NewJob {
        id,
        owner_id: &pending.owner,
        idempotency_key: &pending.key,
        fingerprint: &pending.intent.fingerprint,
        intent: &pending.intent.stored,
    }
}

/// The job holding the key after a submit's statement, with `true` (replayed) unless it is the
/// one this submit made (`id`). On PostgreSQL the holder may have committed after the
/// statement's snapshot: it is read then.
async fn holder(
    h: &mut impl Handle,
    pending: &ToSubmit,
    id: &str,
    held: Option<job_rows::JobRow>,
) -> Result<(Job, bool)> {
    let row = match held {
        Some(row) => row,
        None => job_rows::by_key(h, &pending.owner, &pending.key)
            .await?
            .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))?,
    };
    let job = row.into_job()?;
    let replayed = job.id != id;
    Ok((job, replayed))
}

/// What to answer for a submit whose statement failed: `invalid_input` naming the provider or
/// the contract that is not configured when one is not (the schema's check refused the job),
/// else the failure itself.
async fn refusal(h: &mut impl Handle, pending: &ToSubmit, e: sqlx::Error) -> Error {
    let names_refused = match &e {
        sqlx::Error::Database(db) => {
            db.kind() == sqlx::error::ErrorKind::CheckViolation
                // SQLite's SQLITE_CONSTRAINT_TRIGGER: a trigger's RAISE(ABORT).
                || db.code().as_deref() == Some("1811")
        }
        _ => false,
    };
    if !names_refused {
        return e.into();
    }
    match missing_name(h, pending).await {
        Ok(Some(missing)) => missing,
        Ok(None) => {
            let message = match &e {
                sqlx::Error::Database(db) => db.message().to_owned(),
                other => other.to_string(),
            };
            Error::invalid_input(
                "intent",
                format!(
                    "the intent names a provider or contract that is not configured: {message}"
                ),
            )
        }
        Err(lookup) => lookup,
    }
}

/// `invalid_input` naming the route's first provider or the contract that is not configured,
/// if one is not.
async fn missing_name(h: &mut impl Handle, pending: &ToSubmit) -> Result<Option<Error>> {
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
        self.submits.push(ToSubmit {
            owner: owner.to_owned(),
            key: key.to_owned(),
            intent,
            reply,
        })?;
        let (job, replayed) = self.submits.answer(answer).await?;
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
            .push(ToSubmit {
                owner: "local".into(),
                key: key.into(),
                intent: parse_intent(intent).unwrap(),
                reply,
            })
            .unwrap();
        answer
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
