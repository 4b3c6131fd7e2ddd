//! Group commit for the executor's writes: claims, `ticket → in_flight`, response heads,
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
//!    PostgreSQL the commonest writes of many attempts (`ticket → in_flight`, answers) run as
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
//! answered. Every write is a [`GroupWrite`], whose contract says so.
//!
//! Writes in one group see each other's rows as writes in a row would: each is still a
//! transition guarded by its expected state, decided inside one transaction that holds the
//! locks of the jobs its writes concern. What SPEC §9 orders stays ordered: an attempt's
//! `in_flight` write is queued only after its `ticket` one was committed and answered, and its
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

/// The most items one commit holds (writes here, submits in `submit/`): enough to turn a
/// storm into a few commits, few enough that the write lock is never held long.
const MAX_GROUP: usize = 256;

/// A write's statements on the group's transaction, boxed so writes of any type queue together.
pub(crate) type Step<'t, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 't>>;

/// One of the executor's writes, committed in a group with others (see the module's comment).
/// Each is a type of its own, holding what it writes; [`WriteQueue::run`] commits it.
///
/// **A write may run twice after a failed group, so it must be safe to run again.** When a write
/// of its group fails, the group's transaction is rolled back, nothing of the first run is kept
/// or answered, and every write runs again on a fresh transaction under a savepoint of its own.
/// So [`GroupWrite::run`] (and [`GroupWrite::run_after`]) only run statements on the
/// transaction they are given, and decide by what they read there: nothing outside that
/// transaction may depend on a run, since the run may be undone. A write that returns `Err`
/// is rolled back and leaves nothing behind. Its caller is answered once the commit that holds
/// its kept run is durable, or with the failure that lost the group.
pub(crate) trait GroupWrite: Send + Sync + 'static {
    /// What the write's caller is given once its group is committed.
    type Out: Send + 'static;

    /// The job the write concerns, locked by the group before any write runs.
    fn lock(&self) -> Lock;

    /// What the write writes, for moving a run's statement ahead of it (see `runs.rs`), when
    /// it says more than its common case's job or its lock do. `None` by default: the job of
    /// its common case, else what its lock says.
    fn touches(&self) -> Option<Touches> {
        None
    }

    /// The write's common case as one guarded statement, which the group may run together
    /// with its neighbours' (see `runs.rs`). `None` by default: an ordinary write.
    fn fast(&self) -> Option<Fast> {
        None
    }

    /// The write's statements on the group's transaction.
    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, Self::Out>;

    /// [`GroupWrite::run`] after the group ran the write's common case in one statement with
    /// its neighbours': `ran` is what that statement did for it. Given only to a write whose
    /// [`GroupWrite::fast`] is `Some`, which then takes what was written, or decides by
    /// reading, as it would alone.
    fn run_after<'t>(&'t self, tx: &'t mut Tx, ran: Ran) -> Step<'t, Self::Out> {
        let _ = (tx, ran);
        let e = Error::internal("a write with no common case was given a run's outcome");
        Box::pin(async { Err(e) })
    }
}

/// Where the group leaves a write's [`Ran`] for the write to take when it runs.
type Slot = Mutex<Option<Ran>>;

/// Answers a caller once its group's commit is known: `Ok` when it is durable.
type ReplyOnCommit = Box<dyn FnOnce(Result<()>) + Send>;

/// A queued write's run on the group's transaction: whether to keep what it wrote, and how to
/// answer its caller after the commit.
type Running<'t> = Pin<Box<dyn Future<Output = (bool, ReplyOnCommit)> + Send + 't>>;

/// The job a queued write concerns: the group locks it before any write runs (see
/// `commit::begin`). A claim locks its job itself, passing over one another host holds.
#[derive(Clone)]
pub(crate) enum Lock {
    /// A job, by its id.
    Job(String),
    /// The job of an attempt, by the attempt's id.
    JobOf(String),
    /// Nothing before the write runs.
    Nothing,
}

/// A queued write as the group runs it, whatever its type.
struct Queued {
    lock: Lock,
    touches: Touches,
    /// The write's common case, which the group may run together with its neighbours'.
    fast: Option<(Fast, Slot)>,
    write: Box<dyn AnyWrite>,
}

impl Queued {
    fn new<W: GroupWrite>(write: W) -> (Queued, Ticket<W::Out>) {
        let lock = write.lock();
        let fast = write.fast();
        let touches = write.touches().unwrap_or_else(|| match &fast {
            Some(fast) => Touches::Job(fast.job_id().to_owned()),
            None => Touches::of(&lock),
        });
        let (reply, waiting) = oneshot::channel();
        let write = WithReply {
            write,
            reply: Arc::new(Mutex::new(Some(reply))),
        };
        let queued = Queued {
            lock,
            touches,
            fast: fast.map(|fast| (fast, Slot::default())),
            write: Box::new(write),
        };
        (queued, Ticket(waiting))
    }

    /// Runs the write on the group's transaction, given what a run's statement left for it if
    /// anything. It may run again on a fresh transaction.
    fn run<'t>(&'t self, tx: &'t mut Tx) -> Running<'t> {
        let ran = self.fast.as_ref().and_then(|(_, slot)| take(slot));
        self.write.run(tx, ran)
    }

    /// Answers the caller when its write never ran (the transaction could not start, or an
    /// earlier write broke it).
    fn refuse(&self, e: Error) {
        self.write.refuse(e);
    }
}

/// A write with its caller's answer, behind one type so writes of any type queue together.
trait AnyWrite: Send + Sync {
    /// [`GroupWrite::run`], or [`GroupWrite::run_after`] given `ran`.
    fn run<'t>(&'t self, tx: &'t mut Tx, ran: Option<Ran>) -> Running<'t>;
    /// Answers the caller with `e` instead.
    fn refuse(&self, e: Error);
}

/// Where a caller waits for its write's outcome, taken by whoever answers it.
type ReplyTo<T> = Arc<Mutex<Option<oneshot::Sender<Result<T>>>>>;

/// A write and where its caller waits. Whichever of `run`'s answer and `refuse` is called
/// answers; the other finds the sender gone.
struct WithReply<W: GroupWrite> {
    write: W,
    reply: ReplyTo<W::Out>,
}

impl<W: GroupWrite> AnyWrite for WithReply<W> {
    fn run<'t>(&'t self, tx: &'t mut Tx, ran: Option<Ran>) -> Running<'t> {
        let written = match ran {
            Some(ran) => self.write.run_after(tx, ran),
            None => self.write.run(tx),
        };
        let reply = self.reply.clone();
        Box::pin(async move {
            let outcome = written.await;
            let keep = outcome.is_ok();
            let reply: ReplyOnCommit = Box::new(move |commit| {
                if let Some(reply) = take(&reply) {
                    let _ = reply.send(commit.and(outcome));
                }
            });
            (keep, reply)
        })
    }

    fn refuse(&self, e: Error) {
        if let Some(reply) = take(&self.reply) {
            let _ = reply.send(Err(e));
        }
    }
}

/// Where the executor's writes wait for their group commit; one per engine.
pub(crate) struct WriteQueue {
    queued: Gathering<Queued>,
    db: Db,
}

/// The caller's side of a queued write.
pub(crate) struct Ticket<T>(oneshot::Receiver<Result<T>>);

impl<T> Ticket<T> {
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
    pub(crate) async fn run<W: GroupWrite>(&self, write: W) -> Result<W::Out> {
        let ticket = self.queue(write)?;
        self.outcome(ticket).await
    }

    /// A queued write's outcome: committed in another holder's group, or in one this caller
    /// leads (see [`Gathering::answered`]).
    pub(crate) async fn outcome<T>(&self, mut ticket: Ticket<T>) -> Result<T> {
        let got = self
            .queued
            .answered(&mut ticket.0, |group| self.commit(group))
            .await;
        Ticket::answered(got)
    }

    /// Queues `write` without committing: a later [`WriteQueue::outcome`] commits it with
    /// whatever else is queued then.
    pub(crate) fn queue<W: GroupWrite>(&self, write: W) -> Result<Ticket<W::Out>> {
        let (queued, ticket) = Queued::new(write);
        self.queued.push(queued)?;
        Ok(ticket)
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
