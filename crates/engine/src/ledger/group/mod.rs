//! Group commit for the executor's writes: claims, `pending → in_flight`, response heads,
//! lease renewals, answers and failures from every attempt this process drives. Many writes
//! share one write transaction, so one durable commit (one fsync) holds them all.
//!
//! A group goes through four steps:
//!
//! 1. **Gather** (`gathering.rs`). Each write joins a queue, then waits for the group lock.
//!    Whoever holds it takes every write queued (up to [`MAX_GROUP`]) as one group. A caller
//!    whose write went with another holder's group is answered without waiting for the lock.
//! 2. **Begin** (`commit.rs`). The group's transaction takes the locks of the jobs its writes
//!    concern before any write runs (on SQLite the file's write lock; on PostgreSQL each job's
//!    row, all taken in one statement in id order, so two hosts' groups never wait for each
//!    other in a circle). A write whose job another host holds steps aside and is committed a
//!    moment later in a group of its own; the rest of the group goes on without it.
//! 3. **Runs** (`runs.rs`). The writes run in their order on the one transaction. On
//!    PostgreSQL the commonest writes of many attempts (`pending → in_flight`, answers) run as
//!    one statement, when no write of the same job is passed over by it.
//! 4. **Commit** (`commit.rs`). Most groups have no write that fails, and run without
//!    savepoints. When one fails, the whole transaction is rolled back and the group runs
//!    again, each write under a savepoint of its own: the one that fails is rolled back to its
//!    savepoint alone and the others stand. A lone write is a group of one, without a
//!    savepoint. Every caller is answered only after the commit that holds its write has
//!    returned success, and a commit that fails answers each of them with the failure.
//!
//! **A write may run twice after a failed group, so it must be safe to run again.** It only
//! runs statements on the transaction it is given, and nothing of its first run is kept or
//! answered.
//!
//! Writes in one group see each other's rows as writes in a row would: each is still a
//! transition guarded by its expected state, decided inside one transaction that holds the
//! locks of the jobs its writes concern. What SPEC §9 orders stays ordered: an attempt's
//! `in_flight` write is queued only after its `pending` one was committed and answered, and its
//! request is written only after the `in_flight` commit has answered.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::store::{Db, Tx};

mod commit;
mod gathering;
mod runs;

pub(crate) use gathering::Gathering;
pub(crate) use runs::{Fast, Ran, Touches};

/// The most items one commit holds (writes here, submits in `submit.rs`): enough to turn a
/// storm into a few commits, few enough that the write lock is never held long.
const MAX_GROUP: usize = 256;

/// A write's statements on the group's transaction, boxed so writes of any type queue together.
pub(crate) type Step<'t, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 't>>;

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
/// [`commit::begin`]). A claim locks its job itself, passing over one another host holds.
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
    /// (see `runs.rs`), or `None` when it did not, and then runs `fast` itself. With
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
        let _ = tokio::spawn(async move { commit::commit_group(&db, group).await }).await;
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).take()
}
