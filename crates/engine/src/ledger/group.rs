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
//! groups never wait for each other in a circle). What SPEC §9 orders stays ordered: an
//! attempt's `in_flight` write is queued only after its `pending` one was committed and
//! answered, and its request is written only after the `in_flight` commit has answered.
//!
//! On PostgreSQL the group runs its commonest writes for many attempts at once: a run of
//! `pending → in_flight` moves, or of answers' compare-and-swaps, each of another job, is one
//! statement (`attempts/send_many`, `jobs/claim_answers`) holding each write's own guard, row
//! by row, run where the run's first write stands. Each write of the run then takes, when its
//! turn comes, what that statement did for it: what it wrote, or that it wrote nothing, and
//! then it decides by reading, as it would alone. A later write joins the run only if every
//! write it so moves ahead of concerns another job, or is the response head its own answer
//! carries (which then writes nothing): writes of different jobs touch different rows, so the
//! order between them changes nothing, and the order of one job's writes is kept. A write that
//! may touch any job (a claim) ends the run. When the group runs again with savepoints, each
//! write runs its own statements.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use std::collections::{HashMap, HashSet};

use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::Actor;
use crate::store::attempts::{self as attempt_rows, AttemptRow, Sending};
use crate::store::jobs::{Answering, ClaimedAnswer};
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
            let leader = tokio::select! {
                biased;
                got = &mut *answer => return got,
                leader = self.leader.lock() => leader,
            };
            let group = self.drain();
            if group.is_empty() {
                // This caller's write stepped aside and waits for its job (see `begin`): no
                // spinning on the lock meanwhile.
                drop(leader);
                tokio::select! {
                    biased;
                    got = &mut *answer => return got,
                    () = tokio::time::sleep(std::time::Duration::from_millis(5)) => {}
                }
                continue;
            }
            commit(group).await;
            drop(leader);
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

/// A write's common case as one guarded statement, which the group may run for a run of such
/// writes at once (see the module's comment). The job it concerns keeps writes of one job out
/// of one run.
pub(crate) enum Fast {
    /// `pending → in_flight` for the executor, with its lease and its event's detail.
    Send {
        job_id: String,
        attempt_id: String,
        executor_id: String,
        lease: std::time::Duration,
        detail: String,
    },
    /// An answer's compare-and-swap while its attempt is in flight or unknown, with its
    /// winning event's detail and the response head it carries.
    Answer {
        job_id: String,
        attempt_id: String,
        result: String,
        detail: String,
        head: Option<(Option<String>, Option<u16>)>,
    },
}

impl Fast {
    fn job_id(&self) -> &str {
        match self {
            Fast::Send { job_id, .. } | Fast::Answer { job_id, .. } => job_id,
        }
    }

    fn same_kind(&self, other: &Fast) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// What a run's statement did for one of its writes: the row it wrote, or `None` when it wrote
/// nothing for it.
pub(crate) enum Ran {
    Sent(Option<Box<AttemptRow>>),
    Answered(Option<Box<ClaimedAnswer>>),
}

/// What a queued write writes, for moving a run's statement ahead of it (see [`run_from`]).
pub(crate) enum Touches {
    /// Any job's rows, or those of a job not known here: nothing moves ahead of it.
    Anything,
    /// The rows of this job only.
    Job(String),
    /// The response head of `attempt`, an attempt of `job`. An answer for that attempt in the
    /// same group carries the head and writes it itself (see `ResponseHead`): this write then
    /// writes nothing, and that answer may move ahead of it.
    Head { job: String, attempt: String },
}

impl Touches {
    /// What a write touches, as far as its lock says.
    fn of(lock: &Lock) -> Touches {
        match lock {
            Lock::Job(job) => Touches::Job(job.clone()),
            Lock::JobOf(_) | Lock::Nothing => Touches::Anything,
        }
    }
}

/// `write` as the write [`WriteQueue::run_fast`] takes: a closure's signature, spelled once.
pub(crate) fn fast_write<T, F>(write: F) -> F
where
    F: for<'t> Fn(&'t mut Tx, Option<Ran>) -> Step<'t, T>,
{
    write
}

/// Where the group leaves a write's [`Ran`] for the write to take when it runs.
type Slot = Arc<Mutex<Option<Ran>>>;

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
    touches: Touches,
    /// The write's common case, which the group may run together with its neighbours'.
    fast: Option<(Fast, Slot)>,
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
        let touches = Touches::of(&lock);
        self.queue_with(lock, touches, None, write)
    }

    /// [`WriteQueue::queue`] for a write that says what it `touches`, beyond what its lock says.
    pub(crate) fn queue_touching<T, F>(
        &self,
        lock: Lock,
        touches: Touches,
        write: F,
    ) -> Result<Pending<T>>
    where
        T: Send + 'static,
        F: for<'t> Fn(&'t mut Tx) -> Step<'t, T> + Send + Sync + 'static,
    {
        self.queue_with(lock, touches, None, write)
    }

    /// [`WriteQueue::run`] for a write whose common case is `fast`: `write` is given what the
    /// group's statement did for it when the group ran `fast` together with its neighbours'
    /// (see the module's comment), or `None` when it did not, and then runs `fast` itself. With
    /// no `fast`, it is an ordinary write, always given `None`.
    pub(crate) async fn run_fast<T, F>(&self, lock: Lock, fast: Option<Fast>, write: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'t> Fn(&'t mut Tx, Option<Ran>) -> Step<'t, T> + Send + Sync + 'static,
    {
        let slot: Slot = Arc::default();
        let ran = slot.clone();
        let touches = match &fast {
            Some(fast) => Touches::Job(fast.job_id().to_owned()),
            None => Touches::of(&lock),
        };
        let fast = fast.map(|fast| (fast, slot));
        let pending = self.queue_with(lock, touches, fast, move |tx| write(tx, take(&ran)))?;
        self.outcome(pending).await
    }

    fn queue_with<T, F>(
        &self,
        lock: Lock,
        touches: Touches,
        fast: Option<(Fast, Slot)>,
        write: F,
    ) -> Result<Pending<T>>
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
        self.queued.push(Queued {
            lock,
            touches,
            fast,
            run,
            refuse,
        })?;
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
/// caller is answered with why. The statement never waits for another host: a write whose job
/// another transaction holds (a host at work on it, or frozen inside its transaction) steps
/// aside and is committed a moment later in a group of its own (`later`), so it holds up none
/// of this host's other writes (SPEC §14). The rest of the group goes on without it.
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
        let mut held = Vec::new();
        if !jobs.is_empty() || !attempts.is_empty() {
            held = job_rows::lock_free(&mut tx, &jobs, &attempts).await?;
        }
        Ok::<(Tx, Vec<(String, Option<String>)>), Error>((tx, held))
    };
    match begun.await {
        Ok((tx, held)) if held.is_empty() => Some((tx, group)),
        Ok((tx, held)) => {
            let (going, aside): (Vec<Queued>, Vec<Queued>) =
                group.into_iter().partition(|q| !is_held(&held, &q.lock));
            tokio::spawn(later(db.clone(), aside));
            if going.is_empty() {
                return None;
            }
            Some((tx, going))
        }
        Err(e) => {
            for queued in group {
                (queued.refuse)(e.clone());
            }
            None
        }
    }
}

/// How long writes that stepped aside wait before they try again.
const STEP_ASIDE: std::time::Duration = std::time::Duration::from_millis(50);

/// Writes that stepped aside, committed in a group of their own a moment later, apart from the
/// group lock: their callers wait for their answers as they would for the job's lock, and every
/// other write of this host goes on meanwhile. Boxed, as `commit_group` leads back here.
fn later(db: Db, aside: Vec<Queued>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        if aside.is_empty() {
            return;
        }
        tokio::time::sleep(STEP_ASIDE).await;
        commit_group(&db, aside).await;
    })
}

/// Whether a write with `lock` concerns a job another transaction holds, among `held`
/// (`(job, the attempt it was asked for by)`).
fn is_held(held: &[(String, Option<String>)], lock: &Lock) -> bool {
    held.iter().any(|(job, attempt)| match lock {
        Lock::Job(id) => attempt.is_none() && job == id,
        Lock::JobOf(id) => attempt.as_deref() == Some(id.as_str()),
        Lock::Nothing => false,
    })
}

/// The group's writes in one transaction without savepoints, committed and answered; or, when
/// one of them fails, the transaction rolled back with nothing answered and the group given
/// back to run again.
async fn commit_unless_refused(db: &Db, group: Vec<Queued>) -> Option<Vec<Queued>> {
    let (mut tx, group) = begin(db, group).await?;
    let mut answers: Vec<Answer> = Vec::with_capacity(group.len());
    // Which writes a run's statement has already run for.
    let mut together = vec![false; group.len()];
    for at in 0..group.len() {
        let mut kept = true;
        if !together[at] {
            let run = run_from(&group, at, &together);
            if run.len() > 1 {
                let writes: Vec<&Queued> = run.iter().map(|&i| &group[i]).collect();
                kept = run_together(&mut tx, &writes).await.is_ok();
                for i in run {
                    together[i] = true;
                }
            }
        }
        if kept {
            let (keep, answer) = (group[at].run)(&mut tx).await;
            kept = keep;
            answers.push(answer);
        }
        if !kept {
            // Its first run's outcome and the others' are dropped unanswered, and what a run's
            // statement left for writes that did not run yet is forgotten with it.
            let _ = tx.rollback().await;
            for queued in &group {
                if let Some((_, slot)) = &queued.fast {
                    take(slot);
                }
            }
            return Some(group);
        }
    }
    let committed = tx.commit().await.map_err(Error::from);
    for answer in answers {
        answer(committed.clone());
    }
    None
}

/// The writes the group may run as one statement with the write at `at`, by position: those
/// after it whose common case is of its kind, each of another job, that reach `at` passing
/// only writes of other jobs (and the response head their answer carries). Just `at` when it
/// has no common case; `together` marks writes an earlier run took.
fn run_from(group: &[Queued], at: usize, together: &[bool]) -> Vec<usize> {
    let Some((first, _)) = &group[at].fast else {
        return vec![at];
    };
    let mut run = vec![at];
    let mut taken = HashSet::from([first.job_id()]);
    // Jobs with a write passed over, which later writes of theirs must not pass; and the
    // heads passed over, by job, which only their own attempt's answer may pass.
    let mut passed: HashSet<&str> = HashSet::new();
    let mut heads: HashMap<&str, &str> = HashMap::new();
    for (i, queued) in group.iter().enumerate().skip(at + 1) {
        if run.len() == MAX_GROUP {
            break;
        }
        let job = match (&queued.fast, &queued.touches) {
            (Some((fast, _)), _) => {
                let job = fast.job_id();
                let head_passable = match (heads.get(job), fast) {
                    (None, _) => true,
                    (Some(head), Fast::Answer { attempt_id, .. }) => head == attempt_id,
                    (Some(_), Fast::Send { .. }) => false,
                };
                let joins = !together[i]
                    && fast.same_kind(first)
                    && !taken.contains(job)
                    && !passed.contains(job)
                    && head_passable;
                if joins {
                    taken.insert(job);
                    run.push(i);
                    continue;
                }
                job
            }
            (None, Touches::Job(job)) => job.as_str(),
            (None, Touches::Head { job, attempt }) => {
                if heads
                    .insert(job, attempt)
                    .is_some_and(|other| other != attempt)
                {
                    passed.insert(job);
                }
                continue;
            }
            (None, Touches::Anything) => break,
        };
        passed.insert(job);
    }
    run
}

/// Runs the common case of a run of writes as one statement, and leaves each write what it did
/// for it. On SQLite nothing runs, and each write runs its own statement.
async fn run_together(tx: &mut Tx, run: &[&Queued]) -> Result<()> {
    let fast = run.iter().filter_map(|q| q.fast.as_ref());
    let Some((first, _)) = run.first().and_then(|q| q.fast.as_ref()) else {
        return Ok(());
    };
    match first {
        Fast::Send { .. } => {
            let sending: Vec<Sending<'_>> = fast
                .clone()
                .filter_map(|(f, _)| match f {
                    Fast::Send {
                        attempt_id,
                        executor_id,
                        lease,
                        detail,
                        ..
                    } => Some(Sending {
                        id: attempt_id,
                        executor_id,
                        lease: *lease,
                        detail,
                    }),
                    Fast::Answer { .. } => None,
                })
                .collect();
            let (kind, actor) = (EventKind::AttemptSent.as_str(), Actor::Executor.as_str());
            let Some(sent) = attempt_rows::send_many(tx, &sending, kind, actor).await? else {
                return Ok(());
            };
            let mut sent: HashMap<String, AttemptRow> =
                sent.into_iter().map(|row| (row.id.clone(), row)).collect();
            for (f, slot) in fast {
                if let Fast::Send { attempt_id, .. } = f {
                    put(slot, Ran::Sent(sent.remove(attempt_id).map(Box::new)));
                }
            }
        }
        Fast::Answer { .. } => {
            let answering: Vec<Answering<'_>> = fast
                .clone()
                .filter_map(|(f, _)| match f {
                    Fast::Answer {
                        attempt_id,
                        result,
                        detail,
                        head,
                        ..
                    } => Some(Answering {
                        attempt_id,
                        result,
                        detail,
                        head: head.as_ref().map(|(id, status)| (id.as_deref(), *status)),
                    }),
                    Fast::Send { .. } => None,
                })
                .collect();
            let (kind, actor) = (
                EventKind::AttemptSucceeded.as_str(),
                Actor::Provider.as_str(),
            );
            let Some(mut won) = job_rows::claim_answers(tx, &answering, kind, actor).await? else {
                return Ok(());
            };
            for (f, slot) in fast {
                if let Fast::Answer { attempt_id, .. } = f {
                    put(slot, Ran::Answered(won.remove(attempt_id).map(Box::new)));
                }
            }
        }
    }
    Ok(())
}

fn put(slot: &Slot, ran: Ran) {
    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(ran);
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

    /// A queued write for `run_from`, never run.
    fn queued(touches: Touches, fast: Option<Fast>) -> Queued {
        Queued {
            lock: Lock::Nothing,
            touches,
            fast: fast.map(|f| (f, Slot::default())),
            run: Box::new(|_tx| Box::pin(async { (true, Box::new(|_: Result<()>| {}) as Answer) })),
            refuse: Box::new(|_| {}),
        }
    }

    fn answer(job: &str, attempt: &str) -> Queued {
        let fast = Fast::Answer {
            job_id: job.into(),
            attempt_id: attempt.into(),
            result: "{}".into(),
            detail: "{}".into(),
            head: None,
        };
        queued(Touches::Job(job.into()), Some(fast))
    }

    fn send(job: &str, attempt: &str) -> Queued {
        let fast = Fast::Send {
            job_id: job.into(),
            attempt_id: attempt.into(),
            executor_id: "x".into(),
            lease: std::time::Duration::from_secs(10),
            detail: "{}".into(),
        };
        queued(Touches::Job(job.into()), Some(fast))
    }

    fn head(job: &str, attempt: &str) -> Queued {
        let touches = Touches::Head {
            job: job.into(),
            attempt: attempt.into(),
        };
        queued(touches, None)
    }

    /// A run gathers the writes of one kind whose statement may run first: each of another job,
    /// passing only other jobs' writes and the head its own answer carries. It stops at a write
    /// that may touch any job.
    #[test]
    fn a_run_takes_only_writes_that_may_run_ahead_of_what_they_pass() {
        let group = vec![
            answer("a", "a1"),                      // 0: starts the run
            head("b", "b1"),                        // 1
            answer("b", "b1"),                      // 2: passes only its own head
            send("c", "c1"),                        // 3: another kind stays where it is
            answer("c", "c1"),                      // 4: may not pass its job's send
            head("d", "d0"),                        // 5: the head of another attempt of d
            answer("d", "d1"),                      // 6: may not pass it
            answer("a", "a2"),                      // 7: job a is in the run already
            queued(Touches::Job("e".into()), None), // 8: a write of another job
            answer("f", "f1"),                      // 9: passes it
            queued(Touches::Anything, None),        // 10: nothing passes this one
            answer("g", "g1"),                      // 11
        ];
        let none = vec![false; group.len()];
        assert_eq!(run_from(&group, 0, &none), vec![0, 2, 9]);
        // A write with no common case, and a send among answers, run alone.
        assert_eq!(run_from(&group, 1, &none), vec![1]);
        assert_eq!(run_from(&group, 3, &none), vec![3]);
        // An earlier run's writes are not taken twice, nor passed by their jobs' later writes.
        let mut together = none.clone();
        for i in [0, 2, 9] {
            together[i] = true;
        }
        assert_eq!(run_from(&group, 4, &together), vec![4, 7]);
        assert_eq!(run_from(&group, 11, &together), vec![11]);
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
