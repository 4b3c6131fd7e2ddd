//! Group commit for the executor's writes: claims, `pending → in_flight`, response heads,
//! lease renewals, answers and failures from every attempt this process drives.
//!
//! Each write joins a queue, then waits for the group lock. Whoever holds it takes every write
//! queued (up to [`MAX_GROUP`]) and runs them in one write transaction, so one durable commit
//! (one fsync) holds them all. Most groups have no write that fails, and run without
//! savepoints. When one fails, the whole transaction is rolled back and the group runs again,
//! each write under a savepoint of its own: the one that fails is rolled back to its savepoint
//! alone and the others stand. A write may so run twice; it only runs statements, and nothing
//! of its first run is kept or answered. Every caller is answered only after the commit that
//! holds its write has returned success, and a commit that fails answers each of them with the
//! failure. A lone write is a group of one, without a savepoint.
//!
//! Writes in one group see each other's rows as writes in a row would: each is still a
//! transition guarded by its expected state, decided inside one transaction that holds the
//! locks of the jobs its writes concern (on SQLite the file's write lock; on PostgreSQL each
//! job's row, all taken in one statement in id order before any write runs, so two hosts'
//! groups never wait for each other in a circle). What SPEC §9 orders stays ordered: an attempt's `in_flight` write
//! is queued only after its `pending` one was committed and answered, and its request is
//! written only after the `in_flight` commit has answered.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::store::{jobs as job_rows, Db, Tx};

/// The most items one commit holds (writes here, submits in `submit.rs`): enough to turn a
/// storm into a few commits, few enough that the write lock is never held long.
const MAX_GROUP: usize = 256;

/// What every group commit shares: callers queue their item, then wait for the group lock (a
/// fair tokio mutex); whoever holds it takes everything queued, up to [`MAX_GROUP`].
pub(crate) struct Gathering<T> {
    waiting: Mutex<Vec<T>>,
    leader: tokio::sync::Mutex<()>,
}

impl<T> Gathering<T> {
    pub(crate) fn new() -> Gathering<T> {
        Gathering {
            waiting: Mutex::new(Vec::new()),
            leader: tokio::sync::Mutex::new(()),
        }
    }

    /// Queues `item` for the next group.
    pub(crate) fn push(&self, item: T) -> Result<()> {
        self.waiting
            .lock()
            .map_err(|_| Error::internal("a group commit's queue was poisoned"))?
            .push(item);
        Ok(())
    }

    /// Takes the group lock, then what is queued: nothing when an earlier holder already took
    /// this caller's item. The group is committed while the guard is held.
    #[cfg(test)]
    pub(crate) async fn take(&self) -> (tokio::sync::MutexGuard<'_, ()>, Vec<T>) {
        let leader = self.leader.lock().await;
        (leader, self.drain())
    }

    /// For a caller whose item is queued: waits for its `answer`, leading groups meanwhile.
    /// Each turn, whichever comes first: the answer, when another holder took and committed
    /// the item; or the group lock, with what is queued then, which `commit` commits while
    /// the lock is held. So a caller whose item went with someone else's group is answered at
    /// once, instead of waiting its turn for the lock behind every other caller (one thread
    /// wake-up after another, in a storm). It goes on until answered, since a group taken may
    /// not hold this item (a queue longer than a group).
    pub(crate) async fn answered<F, C, Fut>(&self, answer: &mut F, mut commit: C) -> F::Output
    where
        F: Future + Unpin,
        C: FnMut(Vec<T>) -> Fut,
        Fut: Future<Output = ()>,
    {
        loop {
            tokio::select! {
                biased;
                got = &mut *answer => return got,
                _leader = self.leader.lock() => commit(self.drain()).await,
            }
        }
    }

    fn drain(&self) -> Vec<T> {
        match self.waiting.lock() {
            Ok(mut waiting) => {
                let n = waiting.len().min(MAX_GROUP);
                waiting.drain(..n).collect()
            }
            Err(_) => Vec::new(),
        }
    }
}

/// A write's statements on the group's transaction, boxed so writes of any type queue together.
pub(crate) type Step<'t, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 't>>;

/// Answers a caller once its group's commit is known: `Ok` when it is durable.
type Answer = Box<dyn FnOnce(Result<()>) + Send>;

/// A queued write: run it on the group's transaction; it says whether to keep what it wrote,
/// and how to answer its caller after the commit. It may run again on a fresh transaction.
type Run = Box<
    dyn for<'t> Fn(&'t mut Tx) -> Pin<Box<dyn Future<Output = (bool, Answer)> + Send + 't>>
        + Send
        + Sync,
>;

/// The job a queued write concerns: the group locks it before any write runs (see
/// [`begin`]). A claim locks its job itself, passing over one another host holds.
#[derive(Clone)]
pub(crate) enum Lock {
    /// A job, by its id.
    Job(String),
    /// The job of an attempt, by the attempt's id.
    JobOf(String),
    /// Nothing before the write runs.
    Nothing,
}

struct Queued {
    lock: Lock,
    run: Run,
    /// Answers the caller when its write never ran (the transaction could not start, or an
    /// earlier write broke it).
    refuse: Box<dyn FnOnce(Error) + Send + Sync>,
}

/// Where the executor's writes wait for their group commit; one per engine.
pub(crate) struct WriteQueue {
    queued: Gathering<Queued>,
    db: Db,
}

/// The caller's side of a queued write.
pub(crate) struct Pending<T>(oneshot::Receiver<Result<T>>);

impl<T> Pending<T> {
    fn answered(got: std::result::Result<Result<T>, oneshot::error::RecvError>) -> Result<T> {
        got.map_err(|_| Error::internal("a group commit stopped before answering"))?
    }
}

impl WriteQueue {
    pub(crate) fn new(db: Db) -> WriteQueue {
        WriteQueue {
            queued: Gathering::new(),
            db,
        }
    }

    /// Runs `write` in the next group commit and returns its outcome once that commit is
    /// durable. A write that returns `Err` leaves nothing behind.
    pub(crate) async fn run<T, F>(&self, lock: Lock, write: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'t> Fn(&'t mut Tx) -> Step<'t, T> + Send + Sync + 'static,
    {
        let pending = self.queue(lock, write)?;
        self.outcome(pending).await
    }

    /// A queued write's outcome: committed in another holder's group, or in one this caller
    /// leads (see [`Gathering::answered`]).
    pub(crate) async fn outcome<T>(&self, mut pending: Pending<T>) -> Result<T> {
        let got = self
            .queued
            .answered(&mut pending.0, |group| self.commit(group))
            .await;
        Pending::answered(got)
    }

    /// Queues `write` without committing: a later [`WriteQueue::outcome`] commits it with
    /// whatever else is queued then. `write` only runs statements on the transaction it is
    /// given: it may be run a second time, on a fresh one (see the module's comment).
    pub(crate) fn queue<T, F>(&self, lock: Lock, write: F) -> Result<Pending<T>>
    where
        T: Send + 'static,
        F: for<'t> Fn(&'t mut Tx) -> Step<'t, T> + Send + Sync + 'static,
    {
        let (reply, answer) = oneshot::channel::<Result<T>>();
        // Whichever of `run` and `refuse` is called answers; the other finds the sender gone.
        let reply = Arc::new(Mutex::new(Some(reply)));
        let refused = reply.clone();
        let run: Run = Box::new(move |tx| {
            let (reply, written) = (reply.clone(), write(tx));
            Box::pin(async move {
                let outcome = written.await;
                let keep = outcome.is_ok();
                let answer: Answer = Box::new(move |commit| {
                    if let Some(reply) = take(&reply) {
                        let _ = reply.send(commit.and(outcome));
                    }
                });
                (keep, answer)
            })
        });
        let refuse = Box::new(move |e: Error| {
            if let Some(reply) = take(&refused) {
                let _ = reply.send(Err(e));
            }
        });
        self.queued.push(Queued { lock, run, refuse })?;
        Ok(Pending(answer))
    }

    /// Takes the group lock and commits what is queued, if anything: a caller whose write an
    /// earlier holder already took finds nothing to do.
    #[cfg(test)]
    pub(crate) async fn lead(&self) {
        let (_leader, group) = self.queued.take().await;
        self.commit(group).await;
    }

    /// Commits a group taken under the group lock, and answers its callers.
    async fn commit(&self, group: Vec<Queued>) {
        if group.is_empty() {
            return;
        }
        // Others' answers ride on this commit: it finishes even if this caller goes away.
        let db = self.db.clone();
        let _ = tokio::spawn(async move { commit_group(&db, group).await }).await;
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// One transaction for the group; then every caller is answered with its outcome, or with the
/// failure that lost the group. Several writes run first without savepoints, and again with a
/// savepoint each if one of them fails.
async fn commit_group(db: &Db, group: Vec<Queued>) {
    let group = if group.len() > 1 {
        match commit_unless_refused(db, group).await {
            Some(again) => again,
            None => return,
        }
    } else {
        group
    };
    commit_with_savepoints(db, group).await;
}

/// The group's write transaction, holding the locks of the jobs its writes concern (taken
/// in one statement, in id order, before any write runs: no write waits for a lock after
/// that, so two groups never wait for each other in a circle); if it cannot start, every
/// caller is answered with why.
async fn begin(db: &Db, group: Vec<Queued>) -> Option<(Tx, Vec<Queued>)> {
    let (mut jobs, mut attempts) = (Vec::new(), Vec::new());
    for queued in &group {
        match &queued.lock {
            Lock::Job(id) => jobs.push(id.clone()),
            Lock::JobOf(id) => attempts.push(id.clone()),
            Lock::Nothing => {}
        }
    }
    let begun = async {
        let mut tx = db.begin().await?;
        if !jobs.is_empty() || !attempts.is_empty() {
            job_rows::lock(&mut tx, &jobs, &attempts).await?;
        }
        Ok::<Tx, Error>(tx)
    };
    match begun.await {
        Ok(tx) => Some((tx, group)),
        Err(e) => {
            for queued in group {
                (queued.refuse)(e.clone());
            }
            None
        }
    }
}

/// The group's writes in one transaction without savepoints, committed and answered; or, when
/// one of them fails, the transaction rolled back with nothing answered and the group given
/// back to run again.
async fn commit_unless_refused(db: &Db, group: Vec<Queued>) -> Option<Vec<Queued>> {
    let (mut tx, group) = begin(db, group).await?;
    let mut answers: Vec<Answer> = Vec::with_capacity(group.len());
    for queued in &group {
        let (keep, answer) = (queued.run)(&mut tx).await;
        if !keep {
            // Its first run's outcome and the others' are dropped unanswered.
            let _ = tx.rollback().await;
            return Some(group);
        }
        answers.push(answer);
    }
    let committed = tx.commit().await.map_err(Error::from);
    for answer in answers {
        answer(committed.clone());
    }
    None
}

/// One transaction for the group, a savepoint per write when there are several.
async fn commit_with_savepoints(db: &Db, group: Vec<Queued>) {
    let Some((mut tx, group)) = begin(db, group).await else {
        return;
    };
    let alone = group.len() == 1;
    let mut answers: Vec<Answer> = Vec::with_capacity(group.len());
    let mut rest = group.into_iter();
    let mut broken: Option<Error> = None;
    // Whether a savepoint is open and what was written since it is to be kept.
    let mut kept_since_savepoint = None;
    for queued in rest.by_ref() {
        if !alone {
            // A new savepoint for this write; an open one whose write failed was rolled back
            // to its start and serves again.
            let marked = match kept_since_savepoint {
                None => tx.savepoint().await,
                Some(true) => tx.next_savepoint().await,
                Some(false) => Ok(()),
            };
            if let Err(e) = marked {
                let e = Error::from(e);
                (queued.refuse)(e.clone());
                broken = Some(e);
                break;
            }
        }
        let (keep, answer) = (queued.run)(&mut tx).await;
        answers.push(answer);
        if alone {
            if !keep {
                // A refusal: nothing of it may stay, and nothing else is in the transaction.
                let _ = tx.rollback().await;
                for answer in answers {
                    answer(Ok(()));
                }
                return;
            }
            break;
        }
        kept_since_savepoint = Some(keep);
        if !keep {
            if let Err(e) = tx.rollback_to_savepoint().await {
                broken = Some(e.into());
                break;
            }
        }
    }
    let committed: Result<()> = match broken {
        Some(e) => Err(e),
        None => tx.commit().await.map_err(Error::from),
    };
    if let Err(e) = &committed {
        for queued in rest {
            (queued.refuse)(e.clone());
        }
    }
    for answer in answers {
        answer(committed.clone());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ledger::claim::claim_in;
    use crate::{Claim, Engine, JobStatus};

    fn queue_claim(engine: &Engine, id: &str) -> Pending<Claim> {
        let id = id.to_owned();
        engine
            .writes
            .queue(Lock::Nothing, move |tx| {
                let id = id.clone();
                Box::pin(async move { claim_in(tx, &id).await })
            })
            .unwrap()
    }

    #[tokio::test]
    async fn a_write_that_fails_in_a_group_is_undone_alone() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let mut ids = Vec::new();
        for n in 0..3 {
            let intent = format!(r#"{{"route": ["sandbox"], "input": {{"n": {n}}}}}"#);
            ids.push(
                engine
                    .submit("local", &format!("k{n}"), &intent)
                    .await
                    .unwrap()
                    .job
                    .id,
            );
        }
        let first = queue_claim(&engine, &ids[0]);
        // Claims, then refuses: its attempt must not survive the group's commit.
        let id = ids[1].clone();
        let refused = engine
            .writes
            .queue(Lock::Nothing, move |tx| {
                let id = id.clone();
                Box::pin(async move {
                    claim_in(tx, &id).await?;
                    Err::<(), _>(Error::internal("refused after writing"))
                })
            })
            .unwrap();
        let third = queue_claim(&engine, &ids[2]);
        engine.writes.lead().await;

        let writes = &engine.writes;
        let first = writes.outcome(first).await.unwrap();
        assert!(matches!(first, Claim::Attempt(_)));
        let refused = writes.outcome(refused).await.unwrap_err();
        assert_eq!(refused.code(), "internal");
        assert!(matches!(
            writes.outcome(third).await.unwrap(),
            Claim::Attempt(_)
        ));
        let status = |id: &str| {
            let (engine, id) = (engine.clone(), id.to_owned());
            async move { engine.job("local", &id).await.unwrap() }
        };
        // The group ran again with a savepoint each: what the others wrote is there once.
        let kept = status(&ids[0]).await;
        assert_eq!(kept.job.status, JobStatus::Running);
        assert_eq!(kept.attempts.len(), 1);
        let created = |events: &[crate::Event]| {
            events
                .iter()
                .filter(|e| e.kind == "attempt_created")
                .count()
        };
        assert_eq!(created(&kept.events), 1);
        let undone = status(&ids[1]).await;
        assert_eq!(undone.job.status, JobStatus::Queued);
        assert!(undone.attempts.is_empty());
        assert_eq!(status(&ids[2]).await.job.status, JobStatus::Running);
    }

    /// More writes queued than one group holds: each caller is answered, the last ones by a
    /// group of their own.
    #[tokio::test]
    async fn a_queue_longer_than_a_group_is_answered_to_the_last_write() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let queued: Vec<Pending<usize>> = (0..MAX_GROUP + 44)
            .map(|n| {
                engine
                    .writes
                    .queue(Lock::Nothing, move |_tx| Box::pin(async move { Ok(n) }))
                    .unwrap()
            })
            .collect();
        for (n, pending) in queued.into_iter().enumerate() {
            let answered = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                engine.writes.outcome(pending),
            );
            assert_eq!(answered.await.expect("answered").unwrap(), n);
        }
    }

    #[tokio::test]
    async fn claims_of_one_job_in_one_group_make_one_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let intent = r#"{"route": ["sandbox"], "input": {}}"#;
        let id = engine.submit("local", "once", intent).await.unwrap().job.id;
        let claims = engine
            .claim_many(&[id.clone(), id.clone(), id.clone()])
            .await
            .unwrap();
        let made = claims
            .iter()
            .filter(|c| matches!(c, Ok(Claim::Attempt(_))))
            .count();
        assert_eq!(made, 1, "{claims:?}");
        assert_eq!(engine.job("local", &id).await.unwrap().attempts.len(), 1);
    }
}
