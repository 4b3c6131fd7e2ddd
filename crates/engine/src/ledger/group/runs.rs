//! Runs: on PostgreSQL the group runs its commonest writes for many attempts at once. A run of
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

use std::collections::{HashMap, HashSet};

use super::{Lock, Queued, Slot, MAX_GROUP};
use crate::error::Result;
use crate::events::EventKind;
use crate::model::Actor;
use crate::money::Charge;
use crate::store::attempts::{self as attempt_rows, AttemptRow, Sending};
use crate::store::budgets as budget_rows;
use crate::store::jobs::{self as job_rows, Answering, ClaimedAnswer};
use crate::store::Tx;

/// A write's common case as one guarded statement, which the group may run for a run of such
/// writes at once (see the module's comment). The job it concerns keeps writes of one job out
/// of one run.
pub(crate) enum Fast {
    /// `pending → in_flight` for the executor, with its lease, its event's detail and, at a
    /// provider with a price, what it is charged and reserved against the budgets that cover it.
    Send {
        job_id: String,
        attempt_id: String,
        executor_id: String,
        lease: std::time::Duration,
        detail: String,
        charge: Option<Charge>,
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
    pub(super) fn job_id(&self) -> &str {
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
    pub(super) fn of(lock: &Lock) -> Touches {
        match lock {
            Lock::Job(job) => Touches::Job(job.clone()),
            Lock::JobOf(_) | Lock::Nothing => Touches::Anything,
        }
    }
}

/// The writes the group may run as one statement with the write at `at`, by position: those
/// after it whose common case is of its kind, each of another job, that reach `at` passing
/// only writes of other jobs (and the response head their answer carries). Just `at` when it
/// has no common case; `together` marks writes an earlier run took.
pub(super) fn run_from(group: &[Queued], at: usize, together: &[bool]) -> Vec<usize> {
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
pub(super) async fn run_together(tx: &mut Tx, run: &[&Queued]) -> Result<()> {
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
                        charge,
                        ..
                    } => Some(Sending {
                        id: attempt_id,
                        executor_id,
                        lease: *lease,
                        detail,
                        charge: charge.as_ref(),
                    }),
                    Fast::Answer { .. } => None,
                })
                .collect();
            let (kind, actor) = (EventKind::AttemptSent.as_str(), Actor::Executor.as_str());
            // The budgets the run's priced attempts are reserved against, taken first.
            let locked = if sending.iter().any(|s| s.charge.is_some()) {
                budget_rows::lock_covering_many(tx, &sending).await?
            } else {
                Vec::new()
            };
            let Some(sent) = attempt_rows::send_many(tx, &sending, &locked, kind, actor).await?
            else {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ledger::group::{GroupWrite, Lock, Slot, Step};

    /// A write that does nothing.
    struct Nothing;

    impl GroupWrite for Nothing {
        type Out = ();

        fn lock(&self) -> Lock {
            Lock::Nothing
        }

        fn run<'t>(&'t self, _tx: &'t mut Tx) -> Step<'t, ()> {
            Box::pin(async { Ok(()) })
        }
    }

    /// A queued write for `run_from`, never run.
    fn queued(touches: Touches, fast: Option<Fast>) -> Queued {
        Queued {
            lock: Lock::Nothing,
            touches,
            fast: fast.map(|f| (f, Slot::default())),
            write: Queued::new(Nothing).0.write,
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
            charge: None,
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
}
