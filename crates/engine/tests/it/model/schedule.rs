//! The steps a schedule is made of, how they name jobs and attempts, how they are drawn, and
//! the drain that ends a case.

use onejob_engine::{AttemptState, JobStatus, Verdict};
use proptest::prelude::*;
use proptest::strategy::Union;
use proptest_state_machine::ReferenceStateMachine;

use super::priced::BudgetAsk;
use super::reference::{Channel, Dial, MAttempt, MJob, Model};
use super::world::{Again, BulkAsk, BulkDo, Exec, Prov, Reply, Says, BULK_SLOTS, KEYS};

/// A job, named in a schedule by its key, so a step keeps its meaning when shrinking drops
/// the steps around it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct JobRef(pub(super) usize);

impl std::fmt::Debug for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(KEYS[self.0].name)
    }
}

/// An attempt, named by its job's key and its number.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct AttemptRef {
    key: usize,
    number: u32,
}

impl std::fmt::Debug for AttemptRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", KEYS[self.key].name, self.number)
    }
}

/// A step as the model works on it: jobs and attempts by their index in creation order.
pub(super) type Act = Op<usize, usize>;

/// One step of a schedule.
#[derive(Clone, Debug)]
pub(super) enum Op<J = JobRef, A = AttemptRef> {
    /// The person submits under `KEYS[key]`; `other_intent` submits variant 1 of its intent.
    Submit {
        key: JobRef,
        other_intent: bool,
    },
    /// `claim_next` of the job.
    Claim {
        by: Exec,
        job: J,
    },
    /// The executor sends attempt `attempt` as `drive` does: `fail_unsent` when its provider
    /// is gone, else `mark_sent`; `lapsing` takes a zero lease.
    Send {
        by: Exec,
        attempt: A,
        lapsing: bool,
    },
    /// A failure found before sending (a missing key).
    FailUnsent {
        by: Exec,
        attempt: A,
    },
    /// The provider's reply reaches the executor that sent the attempt.
    Reply {
        by: Exec,
        attempt: A,
        reply: Reply,
        did_work: bool,
    },
    /// The soft timeout passed: `mark_unknown`, the connection is kept.
    SoftTimeout {
        by: Exec,
        attempt: A,
    },
    /// The hard deadline passed: the connection is dropped, nothing is recorded.
    HardDeadline {
        by: Exec,
        attempt: A,
        did_work: bool,
    },
    /// `recover_expired_leases`.
    Recover,
    /// The clock passes every lease nobody renews and every backoff, but not a budget's
    /// period (`PeriodEnds`).
    TimePasses,
    /// The executor's process dies: the requests it waited on are never answered to it;
    /// `reopen` starts it again on the file (which runs recovery).
    Crash {
        exec: Exec,
        reopen: bool,
        did_work: bool,
    },
    /// A status lookup of an attempt that was `unknown` when the lookup began.
    Lookup {
        attempt: A,
        says: Says,
    },
    Resolve {
        attempt: A,
        verdict: Verdict,
        with_result: bool,
        retry_on: Option<Prov>,
        stranger: bool,
    },
    Cancel {
        job: J,
        stranger: bool,
    },
    Retry {
        job: J,
        on: Option<Prov>,
        stranger: bool,
    },
    RemoveProvider(Prov),
    AddProvider(Prov),
    /// A passed, current check of [`CONTRACT`] against the provider is recorded.
    Validate(Prov),
    /// The executor replays an `unknown` attempt under its key, as `executor/replay.rs` does:
    /// the engine's gate first, then what came back recorded by the same calls.
    Replay {
        by: Exec,
        attempt: A,
        again: Again,
    },
    /// Hours pass for every request sent: past their hard deadlines (the requests still out
    /// are dropped, `did_work` says what they did) and, if long enough, past the keyed
    /// provider's retention of a key. Only the ledger's `sent_at` moves, and only of attempts
    /// at providers without a price: a budget's period moves by `PeriodEnds` alone.
    Age {
        hours: u32,
        did_work: bool,
    },
    /// The person's bulk operation under key `bulk-<slot>`: started (its set fixed), and with
    /// `run` decided to its end; the same key again answers the operation it started and
    /// finishes what is left.
    Bulk {
        slot: usize,
        ask: BulkAsk,
        run: bool,
    },
    /// The person sets budget `budget-<slot>` (SPEC §17), replacing one of that name.
    SetBudget {
        slot: usize,
        ask: BudgetAsk,
    },
    /// The person removes budget `budget-<slot>`.
    RemoveBudget(usize),
    /// The budgets' period ends: what was sent counts in the one before, and the jobs a
    /// budget kept back may be claimed again. Only the priced attempts' `sent_at` and those
    /// jobs' `not_before` move (see `priced.rs`).
    PeriodEnds,
}

impl<J: Copy, A: Copy> Op<J, A> {
    /// The same step with its job and attempt named another way; `None` if one has no name.
    fn map<J2, A2>(
        &self,
        job: impl Fn(J) -> Option<J2>,
        attempt: impl Fn(A) -> Option<A2>,
    ) -> Option<Op<J2, A2>> {
        Some(match *self {
            Op::Submit { key, other_intent } => Op::Submit { key, other_intent },
            Op::Claim { by, job: j } => Op::Claim { by, job: job(j)? },
            Op::Send {
                by,
                attempt: a,
                lapsing,
            } => Op::Send {
                by,
                attempt: attempt(a)?,
                lapsing,
            },
            Op::FailUnsent { by, attempt: a } => Op::FailUnsent {
                by,
                attempt: attempt(a)?,
            },
            Op::Reply {
                by,
                attempt: a,
                reply,
                did_work,
            } => Op::Reply {
                by,
                attempt: attempt(a)?,
                reply,
                did_work,
            },
            Op::SoftTimeout { by, attempt: a } => Op::SoftTimeout {
                by,
                attempt: attempt(a)?,
            },
            Op::HardDeadline {
                by,
                attempt: a,
                did_work,
            } => Op::HardDeadline {
                by,
                attempt: attempt(a)?,
                did_work,
            },
            Op::Recover => Op::Recover,
            Op::TimePasses => Op::TimePasses,
            Op::Crash {
                exec,
                reopen,
                did_work,
            } => Op::Crash {
                exec,
                reopen,
                did_work,
            },
            Op::Lookup { attempt: a, says } => Op::Lookup {
                attempt: attempt(a)?,
                says,
            },
            Op::Resolve {
                attempt: a,
                verdict,
                with_result,
                retry_on,
                stranger,
            } => Op::Resolve {
                attempt: attempt(a)?,
                verdict,
                with_result,
                retry_on,
                stranger,
            },
            Op::Cancel { job: j, stranger } => Op::Cancel {
                job: job(j)?,
                stranger,
            },
            Op::Retry {
                job: j,
                on,
                stranger,
            } => Op::Retry {
                job: job(j)?,
                on,
                stranger,
            },
            Op::RemoveProvider(p) => Op::RemoveProvider(p),
            Op::AddProvider(p) => Op::AddProvider(p),
            Op::Validate(p) => Op::Validate(p),
            Op::Replay {
                by,
                attempt: a,
                again,
            } => Op::Replay {
                by,
                attempt: attempt(a)?,
                again,
            },
            Op::Age { hours, did_work } => Op::Age { hours, did_work },
            Op::Bulk { slot, ask, run } => Op::Bulk { slot, ask, run },
            Op::SetBudget { slot, ask } => Op::SetBudget { slot, ask },
            Op::RemoveBudget(slot) => Op::RemoveBudget(slot),
            Op::PeriodEnds => Op::PeriodEnds,
        })
    }
}

impl Model {
    fn find_job(&self, job: JobRef) -> Option<usize> {
        self.jobs.iter().position(|j| j.key == job.0)
    }

    fn find_attempt(&self, attempt: AttemptRef) -> Option<usize> {
        let j = self.find_job(JobRef(attempt.key))?;
        let i = (attempt.number as usize).checked_sub(1)?;
        self.jobs[j].attempts.get(i).copied()
    }

    /// A schedule's step by index; `None` when it names a job or attempt that does not exist.
    pub(super) fn act(&self, op: &Op) -> Option<Act> {
        op.map(|j| self.find_job(j), |a| self.find_attempt(a))
    }

    /// The names of the jobs and attempts, by index.
    fn names(&self) -> (Vec<JobRef>, Vec<AttemptRef>) {
        let jobs = self.jobs.iter().map(|j| JobRef(j.key)).collect();
        let attempts = self
            .attempts
            .iter()
            .map(|a| AttemptRef {
                key: self.jobs[a.job].key,
                number: a.number,
            })
            .collect();
        (jobs, attempts)
    }

    pub(super) fn act_name(&self, act: &Act) -> Op {
        let (jobs, attempts) = self.names();
        act.map(|j| jobs.get(j).copied(), |a| attempts.get(a).copied())
            .expect("the model names its own jobs and attempts")
    }

    /// The drain's next step, faults off: answers and lookups say it worked, leases lapse and
    /// backoffs end, and every queued job is claimed and sent. `None` when nothing is left.
    pub(super) fn drain_step(&self) -> Option<Act> {
        use AttemptState::{InFlight, Pending, Unknown};
        for (a, at) in self.attempts.iter().enumerate() {
            let Some(holder) = at.holder else { continue };
            if matches!(at.state, InFlight | Unknown)
                && self.holds(holder.exec, a, &[Channel::Open, Channel::Late])
            {
                let reply = if at.work == Some(false) {
                    Reply::Rejected
                } else {
                    Reply::Answer
                };
                return Some(Op::Reply {
                    by: holder.exec,
                    attempt: a,
                    reply,
                    did_work: true,
                });
            }
        }
        let unrenewed = self
            .attempts
            .iter()
            .any(|a| a.state == InFlight && !a.lapsed && a.holder.is_some_and(|h| !self.live(h)));
        if unrenewed || self.jobs.iter().any(|j| j.waiting) {
            return Some(Op::TimePasses);
        }
        if self
            .attempts
            .iter()
            .any(|a| a.state == InFlight && a.lapsed)
        {
            return Some(Op::Recover);
        }
        if let Some(a) = self.attempts.iter().position(|a| a.state == Unknown) {
            let says = if self.attempts[a].work == Some(false) {
                Says::NotFound
            } else {
                Says::Succeeded
            };
            return Some(Op::Lookup { attempt: a, says });
        }
        if self.jobs.iter().any(|j| j.budget_wait) {
            return Some(Op::PeriodEnds);
        }
        if let Some(a) = self.attempts.iter().position(|a| a.state == Pending) {
            return Some(Op::Send {
                by: Exec::E1,
                attempt: a,
                lapsing: false,
            });
        }
        let queued = self.jobs.iter().position(|j| j.status == JobStatus::Queued);
        queued.map(|job| Op::Claim { by: Exec::E1, job })
    }
}

fn exec() -> BoxedStrategy<Exec> {
    prop_oneof![Just(Exec::E1), Just(Exec::E2), Just(Exec::E3)].boxed()
}

fn prov() -> BoxedStrategy<Prov> {
    proptest::sample::select(Prov::ALL.to_vec()).boxed()
}

fn stranger() -> BoxedStrategy<bool> {
    proptest::bool::weighted(0.05).boxed()
}

/// An index below `n`, usually one of `preferred`.
fn pick(preferred: Vec<usize>, n: usize) -> BoxedStrategy<usize> {
    if preferred.is_empty() {
        (0..n).boxed()
    } else {
        prop_oneof![3 => proptest::sample::select(preferred), 1 => 0..n].boxed()
    }
}

pub(super) struct LedgerModel;

impl ReferenceStateMachine for LedgerModel {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        let dial = prop_oneof![Just(0u32), Just(1), Just(3)];
        // Each case starts with some providers validated for the contract.
        let validated = proptest::array::uniform4(proptest::bool::weighted(0.6));
        (
            proptest::array::uniform14(dial),
            0..Reply::ALL.len(),
            validated,
        )
            .prop_map(|(swarm, favoured, validated)| Model::new(swarm, favoured, validated))
            .boxed()
    }

    fn transitions(m: &Model) -> BoxedStrategy<Op> {
        let (job_names, attempt_names) = m.names();
        LedgerModel::acts(m)
            .prop_map(move |act| {
                act.map(
                    |j| job_names.get(j).copied(),
                    |a| attempt_names.get(a).copied(),
                )
                .expect("a generated step names what exists")
            })
            .boxed()
    }

    fn preconditions(m: &Model, op: &Op) -> bool {
        m.act(op).is_some_and(|act| m.allows(&act))
    }

    fn apply(mut m: Model, op: &Op) -> Model {
        if let Some(act) = m.act(op) {
            m.step(&act);
        }
        m
    }
}

impl LedgerModel {
    /// The steps that may come next, by index.
    fn acts(m: &Model) -> BoxedStrategy<Act> {
        use AttemptState::{InFlight, Pending, Unknown};
        let (jobs, attempts) = (m.jobs.len(), m.attempts.len());
        let dial = |d: Dial| m.swarm[d as usize];
        let where_jobs = |f: &dyn Fn(&MJob) -> bool| -> Vec<usize> {
            (0..jobs).filter(|&j| f(&m.jobs[j])).collect()
        };
        let where_attempts = |f: &dyn Fn(&MAttempt) -> bool| -> Vec<usize> {
            (0..attempts).filter(|&a| f(&m.attempts[a])).collect()
        };
        // (weight, strategy); weights favour what makes the actors race: answers that come
        // late, a person deciding while a request is out, jobs reopened under an old attempt.
        // With no job under way, a new one is what moves the case on.
        let active = m.jobs.iter().any(|j| {
            matches!(
                j.status,
                JobStatus::Queued | JobStatus::Running | JobStatus::Unknown
            )
        });
        let mut arms: Vec<(u32, BoxedStrategy<Act>)> = vec![(
            match jobs {
                0 => 40,
                j if j < KEYS.len() && !active => 20,
                j if j < KEYS.len() => 2,
                _ => 1,
            },
            (0..KEYS.len(), proptest::bool::weighted(0.15))
                .prop_map(|(key, other_intent)| Op::Submit {
                    key: JobRef(key),
                    other_intent,
                })
                .boxed(),
        )];
        if jobs > 0 {
            let queued = where_jobs(&|j| j.status == JobStatus::Queued);
            arms.push((
                if queued.is_empty() { 1 } else { 10 },
                (exec(), pick(queued, jobs))
                    .prop_map(|(by, job)| Op::Claim { by, job })
                    .boxed(),
            ));
            let busy = where_jobs(&|j| matches!(j.status, JobStatus::Running | JobStatus::Unknown));
            arms.push((
                dial(Dial::Cancel),
                (pick(busy, jobs), stranger())
                    .prop_map(|(job, stranger)| Op::Cancel { job, stranger })
                    .boxed(),
            ));
            let failed = where_jobs(&|j| j.status == JobStatus::Failed);
            arms.push((
                dial(Dial::Retry) * if failed.is_empty() { 1 } else { 4 },
                (
                    pick(failed, jobs),
                    proptest::option::weighted(0.5, prov()),
                    stranger(),
                )
                    .prop_map(|(job, on, stranger)| Op::Retry { job, on, stranger })
                    .boxed(),
            ));
        }
        let pending = where_attempts(&|a| a.state == Pending);
        if !pending.is_empty() {
            arms.push((
                12,
                (
                    exec(),
                    pick(pending.clone(), attempts),
                    proptest::bool::weighted(0.2),
                )
                    .prop_map(|(by, attempt, lapsing)| Op::Send {
                        by,
                        attempt,
                        lapsing,
                    })
                    .boxed(),
            ));
        }
        // A failure found while preparing a send that another executor may have made since.
        let unsent_or_sent = where_attempts(&|a| matches!(a.state, Pending | InFlight));
        if !unsent_or_sent.is_empty() {
            arms.push((
                dial(Dial::FailUnsent),
                (exec(), pick(unsent_or_sent, attempts))
                    .prop_map(|(by, attempt)| Op::FailUnsent { by, attempt })
                    .boxed(),
            ));
        }
        if attempts > 0 {
            let out = where_attempts(&|a| matches!(a.state, InFlight | Unknown));
            let verdict = prop_oneof![
                1 => Just(Verdict::Succeeded),
                1 => Just(Verdict::Failed),
                2 => Just(Verdict::Abandoned)
            ];
            let (weight, preferred) = match (out.is_empty(), pending.is_empty()) {
                (false, _) => (8, out),
                (true, false) => (2, pending),
                (true, true) => (1, out),
            };
            arms.push((
                dial(Dial::Resolve) * weight,
                (
                    pick(preferred, attempts),
                    verdict,
                    0u8..20,
                    proptest::option::weighted(0.4, prov()),
                    stranger(),
                )
                    .prop_map(|(attempt, verdict, r, retry_on, stranger)| {
                        // Mostly the combinations a person can send; now and then one that is
                        // refused as invalid input.
                        let succeeded = verdict == Verdict::Succeeded;
                        Op::Resolve {
                            attempt,
                            verdict,
                            with_result: if succeeded { r % 2 == 0 } else { r == 0 },
                            retry_on: if succeeded && r != 1 { None } else { retry_on },
                            stranger,
                        }
                    })
                    .boxed(),
            ));
        }
        // Replies, timeouts and lookups: every one that fits, chosen among uniformly.
        let (mut answers, mut late, mut others, mut others_late, mut soft, mut hard) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut favoured = vec![];
        let (mut lookups, mut stale_lookups) = (vec![], vec![]);
        for a in 0..attempts {
            for by in [Exec::E1, Exec::E2, Exec::E3] {
                for reply in Reply::ALL {
                    for did_work in [false, true] {
                        let op = Op::Reply {
                            by,
                            attempt: a,
                            reply,
                            did_work,
                        };
                        if !m.allows(&op) {
                            continue;
                        }
                        let open = m.attempts[a].state.is_open();
                        match (reply, open) {
                            (Reply::Answer, true) => answers.push(op),
                            (Reply::Answer, false) => late.push(op),
                            (r, true) if r == Reply::ALL[m.favoured] => favoured.push(op),
                            (_, true) => others.push(op),
                            (_, false) => others_late.push(op),
                        }
                    }
                }
                let op = Op::SoftTimeout { by, attempt: a };
                if m.allows(&op) {
                    soft.push(op);
                }
                for did_work in [false, true] {
                    let op = Op::HardDeadline {
                        by,
                        attempt: a,
                        did_work,
                    };
                    if m.allows(&op) {
                        hard.push(op);
                    }
                }
            }
            for says in [Says::Succeeded, Says::Failed, Says::NotFound, Says::Nothing] {
                let op = Op::Lookup { attempt: a, says };
                if !m.allows(&op) {
                    continue;
                }
                if m.attempts[a].state == Unknown {
                    lookups.push(op);
                } else {
                    // Begun while the attempt was unknown, answered after it moved on.
                    stale_lookups.push(op);
                }
            }
        }
        for (weight, ops) in [
            (8, answers),
            (5 * dial(Dial::LateAnswers), late),
            (8 * dial(Dial::Failures), others),
            (4, favoured),
            (2 * dial(Dial::Failures), others_late),
            (5 * dial(Dial::Timeouts), soft),
            (dial(Dial::Timeouts), hard),
            (4 * dial(Dial::Lookups), lookups),
            (dial(Dial::Lookups), stale_lookups),
        ] {
            if weight > 0 && !ops.is_empty() {
                arms.push((weight, proptest::sample::select(ops).boxed()));
            }
        }
        arms.push((dial(Dial::Clock), Just(Op::Recover).boxed()));
        arms.push((dial(Dial::Clock), Just(Op::TimePasses).boxed()));
        arms.push((
            dial(Dial::Crash),
            (exec(), any::<bool>(), any::<bool>())
                .prop_map(|(exec, reopen, did_work)| Op::Crash {
                    exec,
                    reopen,
                    did_work,
                })
                .boxed(),
        ));
        let absent: Vec<Prov> = Prov::ALL
            .into_iter()
            .filter(|p| !m.present[p.index()])
            .collect();
        if absent.is_empty() {
            arms.push((
                dial(Dial::Providers),
                prov().prop_map(Op::RemoveProvider).boxed(),
            ));
        } else {
            arms.push((
                2 * dial(Dial::Providers).max(1),
                proptest::sample::select(absent)
                    .prop_map(Op::AddProvider)
                    .boxed(),
            ));
        }
        let unvalidated: Vec<Prov> = Prov::ALL
            .into_iter()
            .filter(|p| m.present[p.index()] && !m.validated[p.index()])
            .collect();
        if !unvalidated.is_empty() {
            arms.push((
                2 * dial(Dial::Providers).max(1),
                proptest::sample::select(unvalidated)
                    .prop_map(Op::Validate)
                    .boxed(),
            ));
        }
        // Keyed replays of `unknown` attempts, and the hours they wait for.
        let unknown = where_attempts(&|a| a.state == Unknown);
        let keyed_unknown = where_attempts(&|a| a.state == Unknown && a.provider == Prov::Keyed);
        let replayable: Vec<usize> = (0..attempts).filter(|&a| m.replay_passes(a)).collect();
        if attempts > 0 {
            let (weight, preferred) = if !replayable.is_empty() {
                (30, replayable)
            } else if !keyed_unknown.is_empty() {
                (6, keyed_unknown.clone())
            } else if !unknown.is_empty() {
                (1, unknown)
            } else {
                (0, vec![])
            };
            let again = prop_oneof![
                4 => Just(Again::Answer),
                3 => any::<bool>().prop_map(|did_work| Again::Later { did_work }),
                1 => Just(Again::UnknownKey),
                1 => Just(Again::Broken),
            ];
            arms.push((
                dial(Dial::Replays) * weight,
                (exec(), pick(preferred, attempts), again)
                    .prop_map(|(by, attempt, again)| Op::Replay { by, attempt, again })
                    .boxed(),
            ));
        }
        let keyed_sent = m
            .attempts
            .iter()
            .any(|a| a.provider == Prov::Keyed && a.sends > 0);
        if m.allows(&Op::Age {
            hours: 1,
            did_work: false,
        }) {
            arms.push((
                dial(Dial::Replays)
                    * if keyed_unknown.is_empty() { 1 } else { 20 }
                    * u32::from(keyed_sent),
                (
                    proptest::sample::select(vec![1u32, 1, 1, 3, 8, 20, 30]),
                    any::<bool>(),
                )
                    .prop_map(|(hours, did_work)| Op::Age { hours, did_work })
                    .boxed(),
            ));
        }
        // Bulk operations: now and then the same key with what it first asked.
        if jobs > 0 {
            let asked: Vec<Option<BulkAsk>> =
                m.bulks.iter().map(|b| b.as_ref().map(|b| b.ask)).collect();
            let verdict = prop_oneof![
                1 => Just(Verdict::Succeeded),
                1 => Just(Verdict::Failed),
                1 => Just(Verdict::Abandoned)
            ];
            let action = prop_oneof![
                3 => verdict.prop_map(BulkDo::Resolve),
                1 => Just(BulkDo::Cancel),
                2 => proptest::option::weighted(0.3, prov()).prop_map(BulkDo::Retry),
            ];
            let status = proptest::sample::select(vec![
                None,
                Some(JobStatus::Unknown),
                Some(JobStatus::Queued),
                Some(JobStatus::Running),
                Some(JobStatus::Failed),
            ]);
            arms.push((
                dial(Dial::Bulk) * 2,
                (
                    0..BULK_SLOTS,
                    action,
                    status,
                    proptest::option::weighted(0.3, prov()),
                    0u8..10,
                    proptest::bool::weighted(0.7),
                )
                    .prop_map(move |(slot, action, status, provider, r, run)| {
                        let mut ask = BulkAsk {
                            action,
                            status,
                            provider,
                        };
                        match asked[slot] {
                            // The same key again, with what it first asked.
                            Some(first) if r < 6 => ask = first,
                            _ => {
                                // Mostly what a person can ask: a resolve of unknown jobs.
                                if matches!(action, BulkDo::Resolve(_)) && r != 9 {
                                    ask.status =
                                        [None, Some(JobStatus::Unknown)][usize::from(r % 2)];
                                }
                            }
                        }
                        Op::Bulk { slot, ask, run }
                    })
                    .boxed(),
            ));
        }
        arms.extend(m.budget_acts(dial(Dial::Budgets)));
        arms.retain(|(weight, _)| *weight > 0);
        Union::new_weighted(arms).boxed()
    }
}
