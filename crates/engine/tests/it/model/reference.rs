//! The reference model: what the ledger must hold after each step, and what each call returns.

use onejob_engine::testing::{Cause, FailureKind, Outcome};
use onejob_engine::{AttemptState, JobStatus, Verdict};
use serde_json::Value;

use super::priced::{BudgetAsk, BUDGET_SLOTS};
use super::schedule::{Act, JobRef, Op};
use super::world::{
    answer, classify, person_result, Again, BulkAsk, BulkDo, Exec, Prov, ReplayGot, Reply, Says,
    Settle, BULK_SLOTS, KEYS, KEY_RETENTION_H, REPLAY_WINDOW_H,
};

#[derive(Clone, Debug)]
pub(super) struct MJob {
    pub(super) key: usize,
    variant: u8,
    pub(super) status: JobStatus,
    pub(super) version: u32,
    pub(super) completed_by: Option<usize>,
    pub(super) result: Option<Value>,
    pub(super) flagged: bool,
    pub(super) attempts: Vec<usize>,
    /// A person's explicit decisions that may send it again: resolving an attempt as failed or
    /// abandoned (with or without `retry_on`), and retrying the job.
    pub(super) decisions: usize,
    /// A backoff beyond the next `TimePasses`.
    pub(super) waiting: bool,
    /// A budget kept its send back: it waits for the budgets' next period (`PeriodEnds`).
    pub(super) budget_wait: bool,
    /// The reference keyed provider's memory of the job's key (its id): the hour it first saw
    /// it, and the attempt whose request did the work under it. A first send or retry under
    /// the key is assumed to reach it within the retention; only a replay may come later.
    key_seen: Option<u32>,
    key_done: Option<usize>,
    /// How often the keyed provider did the job's work: rule 10 holds it to one.
    pub(super) keyed_work: usize,
}

/// An executor's connection for an attempt it sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Channel {
    Idle,
    Open,
    /// Past the soft timeout, before the hard deadline.
    Late,
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Holder {
    pub(super) exec: Exec,
    life: u32,
}

#[derive(Clone, Debug)]
pub(super) struct MAttempt {
    pub(super) job: usize,
    pub(super) number: u32,
    pub(super) provider: Prov,
    pub(super) state: AttemptState,
    pub(super) job_version: u32,
    pub(super) error: Option<&'static str>,
    pub(super) flagged: bool,
    /// How often `mark_sent` returned Ok for it.
    pub(super) sends: usize,
    pub(super) holder: Option<Holder>,
    channel: Channel,
    /// Its lease has run out (a zero lease, or a crashed holder and `TimePasses`).
    pub(super) lapsed: bool,
    /// Whether the provider did the work, once anything has shown it.
    pub(super) work: Option<bool>,
    /// The work was answered and judged invalid (an AI provider's `invalid_answer`, or a
    /// `contract_violation`). SPEC §6-§7 retry after these as after a refusal, so rule 4 does
    /// not count them. An `http` provider's unreadable 2xx is not judged: it is `unknown`.
    judged: bool,
    ever_unknown: bool,
    /// The model's hour when it was sent.
    sent_hour: Option<u32>,
    /// Replays that reached its provider (each a `replayed` event).
    pub(super) replays: usize,
    /// Its worst case in billionths, charged as it was sent at a provider with a price.
    pub(super) worst: Option<i64>,
    /// The budgets' period it was sent in.
    pub(super) period: u32,
}

impl MAttempt {
    /// Whether its outcome leaves open that the work happened at its provider, so that the
    /// job may not leave it by itself (SPEC §7): given up on after it was sent, or ended in a
    /// way that does not prove the work was not done.
    fn forbids_failover(&self) -> bool {
        match (self.state, self.error) {
            (AttemptState::Abandoned, _) => self.sends > 0,
            (_, Some(kind)) => !matches!(
                kind,
                "never_sent"
                    | "throttled"
                    | "reconciled_failed"
                    | "resolved_by_person"
                    | "misconfigured"
                    | "rejected"
                    | "invalid_answer"
                    | "server_error"
                    | "contract_violation"
                    | "budget_reached"
            ),
            _ => false,
        }
    }

    /// A send that may have had an effect at the provider.
    pub(super) fn effect(&self, undecided_counts: bool) -> bool {
        self.sends > 0
            && !self.judged
            && match self.work {
                Some(work) => work,
                None => undecided_counts,
            }
    }
}

/// What a step must return.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Expect {
    /// No engine call is made.
    Nothing,
    Ok,
    Refused(&'static str),
    /// `attempt_blocked` naming this attempt.
    Blocked(usize),
    /// `idempotency_conflict` naming this job.
    Conflict(usize),
    Submitted {
        job: usize,
        replayed: bool,
    },
    /// A new attempt.
    Created(usize),
    Claimed(Claimed),
    Completed(Outcome),
    Recovered(usize),
    Replayed(ReplayGot),
    /// A bulk operation as the engine answers it; `skipped` by job, in job order.
    Bulk {
        replayed: bool,
        matched: usize,
        changed: usize,
        skipped: Vec<(usize, String)>,
        done: bool,
    },
    /// `idempotency_conflict` naming the operation the slot's key started.
    BulkConflict(usize),
    /// A budget set; whether it replaced one of its name.
    BudgetSet {
        replaced: bool,
    },
    /// Not sent: the attempt's worst case would pass the budget of this slot.
    KeptBack(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Claimed {
    Attempt(usize),
    Failed(String),
    Skipped,
}

/// Per case, how strongly each kind of step is favoured (swarm testing): 0, 1 or 3 times its
/// usual weight, so a case that never cancels, say, goes deeper into everything else.
#[derive(Clone, Copy, Debug)]
pub(super) enum Dial {
    Cancel,
    Retry,
    FailUnsent,
    Resolve,
    LateAnswers,
    Failures,
    Timeouts,
    Lookups,
    Clock,
    Crash,
    Providers,
    Replays,
    Bulk,
    Budgets,
}

const DIALS: usize = 14;

/// A bulk operation in the model: what was asked, and its fixed set of jobs, each with its
/// outcome once decided (`changed`, or the code it was skipped with).
#[derive(Clone, Debug)]
pub(super) struct MBulk {
    pub(super) ask: BulkAsk,
    pub(super) items: Vec<(usize, Option<String>)>,
}

#[derive(Clone, Debug)]
pub(super) struct Model {
    /// The case's dials, by `Dial`.
    pub(super) swarm: [u32; DIALS],
    /// A reply this case favours, by index in `Reply::ALL`.
    pub(super) favoured: usize,
    pub(super) jobs: Vec<MJob>,
    pub(super) attempts: Vec<MAttempt>,
    pub(super) present: [bool; 4],
    /// Whether the provider's last check of [`CONTRACT`] passed and is current.
    pub(super) validated: [bool; 4],
    pub(super) lives: [u32; 3],
    /// The model's clock, in hours: only `Age` moves it.
    hour: u32,
    /// The bulk operations started, by slot.
    pub(super) bulks: [Option<MBulk>; BULK_SLOTS],
    /// The budgets set, by slot (SPEC §17).
    pub(super) budgets: [Option<BudgetAsk>; BUDGET_SLOTS],
    /// The budgets' period: only `PeriodEnds` moves it.
    pub(super) period: u32,
    /// The answer a replay's 2xx carried, for the system under test to complete with.
    pub(super) replay_answer: Value,
    pub(super) expect: Expect,
    /// What a step reached that is worth counting (see `tally`).
    pub(super) note: &'static str,
}

/// A step either commits what it did, or is refused and leaves the ledger as it was.
pub(super) type Step = Result<Expect, Expect>;

const INVALID: Expect = Expect::Refused("invalid_transition");

impl Model {
    pub(super) fn new(swarm: [u32; DIALS], favoured: usize, validated: [bool; 4]) -> Model {
        Model {
            swarm,
            favoured,
            validated,
            jobs: Vec::new(),
            attempts: Vec::new(),
            present: [true; 4],
            lives: [0; 3],
            hour: 0,
            bulks: Default::default(),
            budgets: [None; BUDGET_SLOTS],
            period: 0,
            replay_answer: Value::Null,
            expect: Expect::Nothing,
            note: "",
        }
    }

    pub(super) fn live(&self, holder: Holder) -> bool {
        self.lives[holder.exec.index()] == holder.life
    }

    /// Whether `by` in its current life waits on attempt `a` in one of `channels`.
    pub(super) fn holds(&self, by: Exec, a: usize, channels: &[Channel]) -> bool {
        let Some(attempt) = self.attempts.get(a) else {
            return false;
        };
        attempt.holder
            == Some(Holder {
                exec: by,
                life: self.lives[by.index()],
            })
            && channels.contains(&attempt.channel)
    }

    fn open_of(&self, j: usize) -> Option<usize> {
        self.jobs[j]
            .attempts
            .iter()
            .copied()
            .find(|&a| self.attempts[a].state.is_open())
    }

    fn set_status(&mut self, j: usize, to: JobStatus) {
        self.jobs[j].status = to;
        self.jobs[j].waiting = false;
        self.jobs[j].budget_wait = false;
    }

    /// After an open attempt ended without a result, a job waiting on it is queued again.
    fn release(&mut self, j: usize) {
        if matches!(self.jobs[j].status, JobStatus::Running | JobStatus::Unknown) {
            self.set_status(j, JobStatus::Queued);
        }
    }

    fn block(&mut self, j: usize) {
        if self.jobs[j].status == JobStatus::Running {
            self.set_status(j, JobStatus::Unknown);
        }
    }

    /// A job that is over closes its open attempt as abandoned.
    fn close_open(&mut self, j: usize) {
        if let Some(a) = self.open_of(j) {
            self.attempts[a].state = AttemptState::Abandoned;
        }
    }

    /// The job is failed or cancelled: the outcome is decided, the version rises.
    fn end(&mut self, j: usize, to: JobStatus) {
        self.set_status(j, to);
        self.jobs[j].version += 1;
        self.close_open(j);
    }

    /// A new `pending` attempt at `p`, as a claim, a retry or a `retry_on` makes it.
    fn start(&mut self, j: usize, p: Prov) -> Result<usize, Expect> {
        let status = self.jobs[j].status;
        if matches!(
            status,
            JobStatus::Succeeded | JobStatus::Cancelled | JobStatus::Failed
        ) {
            return Err(INVALID);
        }
        if !self.present[p.index()] {
            return Err(Expect::Refused("invalid_input"));
        }
        if let Some(open) = self.open_of(j) {
            return Err(Expect::Blocked(open));
        }
        let a = self.attempts.len();
        self.attempts.push(MAttempt {
            job: j,
            number: self.jobs[j].attempts.len() as u32 + 1,
            provider: p,
            state: AttemptState::Pending,
            job_version: self.jobs[j].version,
            error: None,
            flagged: false,
            sends: 0,
            holder: None,
            channel: Channel::Idle,
            lapsed: false,
            work: None,
            judged: false,
            ever_unknown: false,
            sent_hour: None,
            replays: 0,
            worst: None,
            period: 0,
        });
        self.jobs[j].attempts.push(a);
        if status == JobStatus::Queued {
            self.set_status(j, JobStatus::Running);
        }
        Ok(a)
    }

    /// SPEC §7: where a job's next automatic attempt goes, or the code it fails with.
    fn policy(&self, j: usize) -> Result<Prov, String> {
        let job = &self.jobs[j];
        let key = &KEYS[job.key];
        // An attempt a budget kept back never ran: it counts for nothing (SPEC §17).
        let tries: Vec<&MAttempt> = job
            .attempts
            .iter()
            .map(|&a| &self.attempts[a])
            .filter(|t| t.error != Some("budget_reached"))
            .collect();
        if tries.len() >= key.budget() {
            return Err("attempts_exhausted".into());
        }
        // The last attempt kept back goes where it was to go, whoever chose that provider.
        if let Some(&a) = job.attempts.last() {
            if self.attempts[a].error == Some("budget_reached") {
                return Ok(self.attempts[a].provider);
            }
        }
        let Some(last) = tries.last() else {
            return Ok(key.route[0]);
        };
        // (retry at the same provider, the failure's name)
        let (retry_here, what) = match last.error {
            // Abandoned without an error: it may have happened.
            None => (true, "abandoned"),
            Some(k @ ("rejected" | "misconfigured" | "contract_violation")) => (false, k),
            Some(k) => (true, k),
        };
        // The whole history decides whether the route may move on.
        let failover = !tries.iter().any(|t| t.forbids_failover());
        let here = last.provider;
        let tries_here = tries
            .iter()
            .rev()
            .take_while(|t| t.provider == here)
            .count();
        if retry_here && tries_here < 2 {
            return Ok(here);
        }
        // A provider outside the route (a person's choice) hands back to the primary.
        let next = match key.route.iter().position(|p| *p == here) {
            Some(i) => key.route.get(i + 1).copied(),
            None => Some(key.route[0]),
        };
        match next {
            Some(next) if failover && key.contract && self.validated[next.index()] => Ok(next),
            Some(_) if failover => Err("fallback_not_validated".into()),
            _ if retry_here => Ok(here),
            _ => Err(what.into()),
        }
    }

    fn fail_unsent(&mut self, a: usize) -> Step {
        if self.attempts[a].state != AttemptState::Pending {
            return Err(INVALID);
        }
        self.attempts[a].state = AttemptState::Failed;
        self.attempts[a].error = Some("misconfigured");
        self.release(self.attempts[a].job);
        Ok(Expect::Ok)
    }

    pub(super) fn fail_attempt(&mut self, a: usize, kind: &'static str, long: bool) -> Step {
        if !matches!(
            self.attempts[a].state,
            AttemptState::Pending | AttemptState::InFlight | AttemptState::Unknown
        ) {
            return Err(INVALID);
        }
        self.attempts[a].state = AttemptState::Failed;
        self.attempts[a].error = Some(kind);
        let j = self.attempts[a].job;
        self.release(j);
        if long && self.jobs[j].status == JobStatus::Queued {
            self.jobs[j].waiting = true;
        }
        Ok(Expect::Ok)
    }

    fn mark_unknown(&mut self, a: usize, kind: &'static str) -> Step {
        if self.attempts[a].state != AttemptState::InFlight {
            return Err(INVALID);
        }
        self.attempts[a].state = AttemptState::Unknown;
        self.attempts[a].error = Some(kind);
        self.attempts[a].ever_unknown = true;
        self.block(self.attempts[a].job);
        Ok(Expect::Ok)
    }

    /// SPEC §5: an answer goes through the compare-and-swap.
    fn complete(&mut self, a: usize, answer: Value, cause: Cause) -> Step {
        let from = self.attempts[a].state;
        let j = self.attempts[a].job;
        if matches!(
            from,
            AttemptState::Failed | AttemptState::Succeeded | AttemptState::Lost
        ) {
            // Its outcome is recorded: dropped, and flagged unless it repeats the result.
            let repeats = from == AttemptState::Succeeded
                && self.jobs[j].completed_by == Some(a)
                && self.jobs[j].result.as_ref() == Some(&answer);
            if !repeats {
                self.attempts[a].flagged = true;
                self.jobs[j].flagged = true;
            }
            self.note = match from {
                AttemptState::Failed => "an answer after its attempt was failed",
                _ => "an answer after its attempt's outcome",
            };
            // "It did not happen" then an answer: refused, with the flag committed.
            return Ok(if from == AttemptState::Failed {
                INVALID
            } else {
                Expect::Completed(Outcome::Dropped)
            });
        }
        let may = match from {
            AttemptState::InFlight | AttemptState::Unknown => true,
            AttemptState::Abandoned => cause == Cause::Answer,
            _ => false,
        };
        if !may && from == AttemptState::Abandoned && cause == Cause::Reconciliation {
            // Refused (SPEC §4), and flagged for review all the same (SPEC §5).
            self.note = "a lookup found the work done after its attempt was abandoned";
            self.attempts[a].flagged = true;
            self.jobs[j].flagged = true;
            return Ok(INVALID);
        }
        if !may {
            return Err(INVALID);
        }
        let late = from == AttemptState::Abandoned;
        let job = &self.jobs[j];
        let won = job.version == self.attempts[a].job_version
            && job.completed_by.is_none()
            && matches!(
                job.status,
                JobStatus::Queued | JobStatus::Running | JobStatus::Unknown
            );
        if won {
            self.attempts[a].state = AttemptState::Succeeded;
            self.attempts[a].flagged |= late;
            self.set_status(j, JobStatus::Succeeded);
            let job = &mut self.jobs[j];
            job.result = Some(answer);
            job.completed_by = Some(a);
            job.version += 1;
            job.flagged |= late;
            self.note = if late {
                "a late answer of an abandoned attempt won"
            } else {
                "an answer won"
            };
            self.close_open(j);
            return Ok(Expect::Completed(Outcome::Won));
        }
        let flag = late || cause == Cause::Person || job.completed_by.is_none();
        let outcome = if job.completed_by.is_some() {
            Outcome::Lost
        } else {
            Outcome::Dropped
        };
        self.note = match job.status {
            JobStatus::Succeeded => "an answer lost the race",
            JobStatus::Cancelled => "an answer after a cancel",
            JobStatus::Failed => "an answer after the job failed",
            _ => "an answer after the job was reopened",
        };
        self.jobs[j].flagged |= flag;
        self.attempts[a].flagged |= flag;
        self.attempts[a].state = AttemptState::Lost;
        Ok(Expect::Completed(outcome))
    }

    fn recover(&mut self) -> usize {
        let mut moved = 0;
        for a in 0..self.attempts.len() {
            if self.attempts[a].state == AttemptState::InFlight && self.attempts[a].lapsed {
                self.attempts[a].state = AttemptState::Unknown;
                self.attempts[a].error = Some("lease_expired");
                self.attempts[a].ever_unknown = true;
                self.block(self.attempts[a].job);
                moved += 1;
            }
        }
        moved
    }

    fn learn(&mut self, a: usize, work: bool) {
        if self.attempts[a].work.is_none() {
            self.attempts[a].work = Some(work);
            if work && self.attempts[a].provider == Prov::Keyed {
                self.perform_keyed(a);
            }
        }
    }

    /// The keyed provider did the work of attempt `a`'s request, unless it holds the job's
    /// work under the key already: then it answered what it stored and did nothing.
    fn perform_keyed(&mut self, a: usize) {
        let job = &mut self.jobs[self.attempts[a].job];
        if job.key_done.is_none() {
            job.key_done = Some(a);
            job.keyed_work += 1;
        }
    }

    /// The hour from which the engine counts attempt `a`'s replay window: the first send of
    /// its job at its provider, the key's first use there.
    fn window_from(&self, a: usize) -> u32 {
        let at = &self.attempts[a];
        self.jobs[at.job]
            .attempts
            .iter()
            .map(|&b| &self.attempts[b])
            .filter(|b| b.provider == at.provider)
            .filter_map(|b| b.sent_hour)
            .min()
            .unwrap_or(self.hour)
    }

    /// Whether a replay of attempt `a` passes the engine's gate now.
    pub(super) fn replay_passes(&self, a: usize) -> bool {
        let at = &self.attempts[a];
        at.state == AttemptState::Unknown
            && self.present[at.provider.index()]
            && at.provider == Prov::Keyed
            && !at.flagged
            && at.sent_hour.is_some_and(|sent| sent < self.hour)
            && self.hour - self.window_from(a) <= REPLAY_WINDOW_H
    }

    /// What the keyed provider holds for the job of attempt `a` when a replay reaches it now:
    /// the attempt whose work it stored, or none (also once it has forgotten the key).
    fn stored_for(&self, a: usize) -> Option<usize> {
        let job = &self.jobs[self.attempts[a].job];
        match job.key_seen {
            Some(seen) if self.hour - seen < KEY_RETENTION_H => job.key_done,
            _ => None,
        }
    }

    /// A keyed replay (SPEC §16): the engine's gate, then the reference provider, then what
    /// the executor records of what came back.
    fn replay(&mut self, a: usize, again: Again) -> Step {
        let at = &self.attempts[a];
        if at.state != AttemptState::Unknown {
            return Err(INVALID);
        }
        if !self.present[at.provider.index()] {
            return Err(Expect::Refused("not_found"));
        }
        // Plain and spare do not honour the key, ai states no retention; a flagged attempt
        // waits for a person.
        if at.provider != Prov::Keyed || at.flagged {
            return Err(Expect::Refused("invalid_input"));
        }
        let sent = at.sent_hour.expect("an unknown attempt was sent");
        if sent == self.hour {
            return Ok(Expect::Replayed(ReplayGot::TooEarly));
        }
        if self.hour - self.window_from(a) > REPLAY_WINDOW_H {
            return Err(Expect::Refused("invalid_input"));
        }
        let j = at.job;
        let stored = self.stored_for(a);
        if self.jobs[j]
            .key_seen
            .is_some_and(|seen| self.hour - seen >= KEY_RETENTION_H)
        {
            // The provider has forgotten the key: to it, the replay is a new request.
            self.jobs[j].key_seen = Some(self.hour);
            self.jobs[j].key_done = None;
            self.note = "a replay reached the provider after it forgot the key";
        }
        self.attempts[a].replays += 1;
        match again {
            Again::Answer => {
                self.perform_keyed(a);
                self.attempts[a].work = Some(true);
                let value = answer(stored.unwrap_or(a));
                self.replay_answer = value.clone();
                match self.complete(a, value, Cause::Answer)? {
                    Expect::Completed(outcome) => {
                        if stored.is_some() {
                            self.note = "a replay brought the stored answer";
                        }
                        Ok(Expect::Replayed(ReplayGot::Completed(outcome)))
                    }
                    other => Ok(other),
                }
            }
            Again::Later { did_work } => {
                if did_work {
                    self.perform_keyed(a);
                    self.attempts[a].work = Some(true);
                }
                Ok(Expect::Replayed(ReplayGot::RetriesLater))
            }
            Again::UnknownKey => {
                self.attempts[a].flagged = true;
                Ok(Expect::Replayed(ReplayGot::Flagged))
            }
            Again::Broken => {
                self.perform_keyed(a);
                self.attempts[a].work = Some(true);
                // On the job's last attempt nobody would send it again: a person decides.
                if self.attempts[a].number as usize >= KEYS[self.jobs[j].key].budget() {
                    self.attempts[a].flagged = true;
                    return Ok(Expect::Replayed(ReplayGot::Flagged));
                }
                self.fail_attempt(a, FailureKind::InvalidAnswerKeyed.as_str(), false)?;
                Ok(Expect::Replayed(ReplayGot::Failed))
            }
        }
    }

    /// Whether job `j` passes a bulk operation's filter now.
    fn bulk_matches(&self, j: usize, ask: BulkAsk) -> bool {
        let job = &self.jobs[j];
        ask.status.is_none_or(|s| job.status == s)
            && ask.provider.is_none_or(|p| {
                KEYS[job.key].route.contains(&p)
                    || job.attempts.iter().any(|&a| self.attempts[a].provider == p)
            })
    }

    /// A bulk operation (SPEC §16): its set fixed when it starts, each job then decided once by
    /// the same action as alone, or skipped with the code that action gave.
    fn bulk(&mut self, slot: usize, ask: BulkAsk, run: bool) -> Step {
        let ask = ask.normal();
        if matches!(ask.action, BulkDo::Resolve(_)) && ask.status != Some(JobStatus::Unknown) {
            return Err(Expect::Refused("invalid_input"));
        }
        if let BulkDo::Retry(Some(p)) = ask.action {
            if !self.present[p.index()] {
                return Err(Expect::Refused("invalid_input"));
            }
        }
        let replayed = match &self.bulks[slot] {
            Some(b) if b.ask != ask => return Err(Expect::BulkConflict(slot)),
            Some(_) => true,
            None => {
                let items = (0..self.jobs.len())
                    .filter(|&j| self.bulk_matches(j, ask))
                    .map(|j| (j, None))
                    .collect();
                self.bulks[slot] = Some(MBulk { ask, items });
                false
            }
        };
        if run {
            let items = self.bulks[slot].as_ref().map(|b| b.items.clone());
            for (i, (j, outcome)) in items.unwrap_or_default().into_iter().enumerate() {
                if outcome.is_some() {
                    continue;
                }
                let before = self.clone();
                let decided = match self.bulk_one(j, ask.action) {
                    Ok(()) => "changed".to_owned(),
                    Err(code) => {
                        let note = self.note;
                        *self = before;
                        self.note = note;
                        code
                    }
                };
                if let Some(b) = self.bulks[slot].as_mut() {
                    b.items[i].1 = Some(decided);
                }
            }
            let b = self.bulks[slot].as_ref().expect("started");
            let skipped = b.items.iter().any(|(_, o)| o.as_deref() != Some("changed"));
            self.note = match (replayed, skipped) {
                (true, _) => "a bulk operation ran again under its key",
                (false, true) => "a bulk operation skipped a job",
                (false, false) => "a bulk operation changed every job it matched",
            };
        }
        let b = self.bulks[slot].as_ref().expect("started");
        Ok(Expect::Bulk {
            replayed,
            matched: b.items.len(),
            changed: b
                .items
                .iter()
                .filter(|(_, o)| o.as_deref() == Some("changed"))
                .count(),
            skipped: b
                .items
                .iter()
                .filter_map(|(j, o)| match o.as_deref() {
                    Some("changed") | None => None,
                    Some(code) => Some((*j, code.to_owned())),
                })
                .collect(),
            done: b.items.iter().all(|(_, o)| o.is_some()),
        })
    }

    /// One job of a bulk operation, as the action alone would decide it; the code it is
    /// skipped with when the action refuses it.
    fn bulk_one(&mut self, j: usize, action: BulkDo) -> Result<(), String> {
        let code = |e: Expect| match e {
            Expect::Refused(code) => code.to_owned(),
            Expect::Blocked(_) => "attempt_blocked".to_owned(),
            other => format!("{other:?}"),
        };
        match action {
            BulkDo::Cancel => {
                if matches!(
                    self.jobs[j].status,
                    JobStatus::Succeeded | JobStatus::Cancelled
                ) {
                    return Err(code(INVALID));
                }
                self.end(j, JobStatus::Cancelled);
                Ok(())
            }
            BulkDo::Retry(on) => {
                let status = self.jobs[j].status;
                if matches!(status, JobStatus::Succeeded | JobStatus::Cancelled) {
                    return Err(code(INVALID));
                }
                let p = on.unwrap_or_else(|| match self.jobs[j].attempts.last() {
                    Some(&a) => self.attempts[a].provider,
                    None => KEYS[self.jobs[j].key].route[0],
                });
                if status == JobStatus::Failed {
                    self.set_status(j, JobStatus::Queued);
                    self.jobs[j].version += 1;
                }
                self.start(j, p).map_err(code)?;
                self.jobs[j].decisions += 1;
                Ok(())
            }
            BulkDo::Resolve(verdict) => {
                let Some(a) = self
                    .open_of(j)
                    .filter(|&a| self.attempts[a].state == AttemptState::Unknown)
                else {
                    return Err(code(INVALID));
                };
                if verdict == Verdict::Succeeded {
                    return match self.complete(a, Value::Null, Cause::Person) {
                        Ok(Expect::Completed(Outcome::Won)) => Ok(()),
                        Ok(other) | Err(other) => Err(code(other)),
                    };
                }
                if verdict == Verdict::Failed {
                    self.attempts[a].state = AttemptState::Failed;
                    self.attempts[a].error = Some("resolved_by_person");
                } else {
                    self.attempts[a].state = AttemptState::Abandoned;
                }
                self.release(j);
                self.jobs[j].decisions += 1;
                Ok(())
            }
        }
    }

    /// Whether a transition fits this state: its indices exist, its executor holds the
    /// connection, and it does not contradict what the provider did. Checked while
    /// generating and again while shrinking.
    pub(super) fn allows(&self, op: &Act) -> bool {
        let (jobs, attempts) = (self.jobs.len(), self.attempts.len());
        let consistent = |a: usize, proves: Option<bool>| match proves {
            Some(work) => self.attempts[a].work.is_none_or(|w| w == work),
            None => true,
        };
        match *op {
            Op::Submit { key, .. } => key.0 < KEYS.len(),
            Op::Claim { job, .. } | Op::Cancel { job, .. } | Op::Retry { job, .. } => job < jobs,
            Op::Send { attempt, .. }
            | Op::FailUnsent { attempt, .. }
            | Op::Resolve { attempt, .. } => attempt < attempts,
            Op::Reply {
                by, attempt, reply, ..
            } => {
                let channels: &[Channel] = if reply == Reply::Refused {
                    &[Channel::Open]
                } else {
                    &[Channel::Open, Channel::Late]
                };
                self.holds(by, attempt, channels) && consistent(attempt, reply.proves_work())
            }
            Op::SoftTimeout { by, attempt } => self.holds(by, attempt, &[Channel::Open]),
            Op::HardDeadline { by, attempt, .. } => self.holds(by, attempt, &[Channel::Late]),
            Op::Lookup { attempt, says } => {
                attempt < attempts
                    && self.attempts[attempt].ever_unknown
                    && consistent(
                        attempt,
                        match says {
                            Says::Succeeded => Some(true),
                            Says::Failed | Says::NotFound => Some(false),
                            Says::Nothing => None,
                        },
                    )
            }
            Op::Replay { attempt, again, .. } => {
                attempt < attempts
                    && match again {
                        // A provider that holds the work answers what it stored.
                        Again::UnknownKey | Again::Broken => {
                            !self.replay_passes(attempt) || self.stored_for(attempt).is_none()
                        }
                        Again::Answer | Again::Later { .. } => true,
                    }
            }
            // Hours do not pass while a request waits within its soft timeout: an executor
            // would have marked it `unknown` first.
            Op::Age { .. } => !self.attempts.iter().any(|a| a.channel == Channel::Open),
            Op::Bulk { slot, .. } => slot < BULK_SLOTS,
            Op::SetBudget { slot, .. } | Op::RemoveBudget(slot) => slot < BUDGET_SLOTS,
            Op::PeriodEnds => true,
            Op::Recover
            | Op::TimePasses
            | Op::Crash { .. }
            | Op::RemoveProvider(_)
            | Op::AddProvider(_)
            | Op::Validate(_) => true,
        }
    }

    /// Applies a step: first to the world (connections, what providers did), then to the
    /// ledger, which commits it or refuses it whole.
    pub(super) fn step(&mut self, op: &Act) {
        self.note = "";
        self.world(op);
        let before = self.clone();
        self.expect = match self.ledger(op) {
            Ok(expect) => expect,
            Err(refusal) => {
                let note = self.note;
                *self = before;
                self.note = note;
                refusal
            }
        };
    }

    fn world(&mut self, op: &Act) {
        match *op {
            Op::Reply {
                attempt,
                reply,
                did_work,
                ..
            } => {
                self.attempts[attempt].channel = Channel::Closed;
                let judged = match reply {
                    Reply::InvalidAnswer => self.attempts[attempt].provider == Prov::Ai,
                    Reply::ContractViolation => true,
                    _ => false,
                };
                if self.attempts[attempt].work.is_none() && judged {
                    self.attempts[attempt].judged = true;
                }
                self.learn(attempt, reply.proves_work().unwrap_or(did_work));
            }
            Op::SoftTimeout { attempt, .. } => self.attempts[attempt].channel = Channel::Late,
            Op::HardDeadline {
                attempt, did_work, ..
            } => {
                self.attempts[attempt].channel = Channel::Closed;
                self.learn(attempt, did_work);
            }
            Op::Crash { exec, did_work, .. } => {
                for a in 0..self.attempts.len() {
                    if self.holds(exec, a, &[Channel::Open, Channel::Late]) {
                        self.attempts[a].channel = Channel::Closed;
                        self.learn(a, did_work);
                    }
                }
                self.lives[exec.index()] += 1;
            }
            Op::Lookup { attempt, says } => match says {
                Says::Succeeded => self.learn(attempt, true),
                Says::Failed | Says::NotFound => self.learn(attempt, false),
                Says::Nothing => {}
            },
            Op::Age { hours, did_work } => {
                for a in 0..self.attempts.len() {
                    if self.attempts[a].channel == Channel::Late {
                        self.attempts[a].channel = Channel::Closed;
                        self.learn(a, did_work);
                    }
                }
                self.hour += hours;
            }
            _ => {}
        }
    }

    fn ledger(&mut self, op: &Act) -> Step {
        match *op {
            Op::Submit {
                key: JobRef(key),
                other_intent,
            } => {
                if KEYS[key].route.iter().any(|p| !self.present[p.index()]) {
                    return Err(Expect::Refused("invalid_input"));
                }
                let variant = u8::from(other_intent);
                match self.jobs.iter().position(|j| j.key == key) {
                    Some(j) if self.jobs[j].variant == variant => Ok(Expect::Submitted {
                        job: j,
                        replayed: true,
                    }),
                    Some(j) => Err(Expect::Conflict(j)),
                    None => {
                        self.jobs.push(MJob {
                            key,
                            variant,
                            status: JobStatus::Queued,
                            version: 0,
                            completed_by: None,
                            result: None,
                            flagged: false,
                            attempts: Vec::new(),
                            decisions: 0,
                            waiting: false,
                            budget_wait: false,
                            key_seen: None,
                            key_done: None,
                            keyed_work: 0,
                        });
                        Ok(Expect::Submitted {
                            job: self.jobs.len() - 1,
                            replayed: false,
                        })
                    }
                }
            }
            Op::Claim { job, .. } => {
                let job_waits = self.jobs[job].waiting || self.jobs[job].budget_wait;
                if self.jobs[job].status != JobStatus::Queued || job_waits {
                    return Ok(Expect::Claimed(Claimed::Skipped));
                }
                let code = match self.policy(job) {
                    Ok(p) if self.present[p.index()] => {
                        let last = self.jobs[job].attempts.last().map(|&a| &self.attempts[a]);
                        if last.is_some_and(|l| l.provider != p) {
                            self.note = "failed over to a validated fallback";
                        } else if last.is_some_and(|l| !l.forbids_failover())
                            && self.jobs[job]
                                .attempts
                                .iter()
                                .any(|&a| self.attempts[a].forbids_failover())
                        {
                            self.note = "kept at its provider by an earlier outcome";
                        }
                        let a = self.start(job, p)?;
                        return Ok(Expect::Claimed(Claimed::Attempt(a)));
                    }
                    Ok(_) => "misconfigured".to_owned(),
                    Err(code) => code,
                };
                self.end(job, JobStatus::Failed);
                if self.jobs[job].attempts.iter().any(|&a| {
                    matches!(self.attempts[a].channel, Channel::Open | Channel::Late)
                        && self.attempts[a].holder.is_some_and(|h| self.live(h))
                }) {
                    self.note = "a job failed with a request still out";
                }
                Ok(Expect::Claimed(Claimed::Failed(code)))
            }
            Op::Send {
                by,
                attempt,
                lapsing,
            } => {
                if !self.present[self.attempts[attempt].provider.index()] {
                    return self.fail_unsent(attempt);
                }
                let j = self.attempts[attempt].job;
                if self.attempts[attempt].state != AttemptState::Pending
                    || self.jobs[j].status != JobStatus::Running
                    || self.jobs[j].completed_by.is_some()
                {
                    return Err(INVALID);
                }
                let worst = self.worst_case(attempt);
                if let Some(slot) = worst.and_then(|worst| self.passed_by(attempt, worst)) {
                    return self.keep_back(attempt, slot);
                }
                if worst.is_some() && self.covered(attempt) {
                    self.note = "a send under a budget";
                }
                let holder = Holder {
                    exec: by,
                    life: self.lives[by.index()],
                };
                let (hour, period) = (self.hour, self.period);
                let sent = &mut self.attempts[attempt];
                sent.worst = worst;
                sent.period = period;
                sent.state = AttemptState::InFlight;
                sent.sends += 1;
                sent.holder = Some(holder);
                sent.channel = Channel::Open;
                sent.lapsed = lapsing;
                sent.sent_hour = Some(hour);
                if sent.provider == Prov::Keyed {
                    self.jobs[j].key_seen.get_or_insert(hour);
                }
                Ok(Expect::Ok)
            }
            Op::FailUnsent { attempt, .. } => self.fail_unsent(attempt),
            Op::Reply { attempt, reply, .. } => {
                let a = &self.attempts[attempt];
                let budget = KEYS[self.jobs[a.job].key].budget();
                match classify(reply, a.provider, a.number, budget) {
                    Settle::Answer => self.complete(attempt, answer(attempt), Cause::Answer),
                    Settle::Fail { kind, long, .. } => {
                        self.fail_attempt(attempt, kind.as_str(), long)
                    }
                    Settle::Unknown(kind) => {
                        if self.attempts[attempt].state != AttemptState::InFlight {
                            return Ok(Expect::Nothing);
                        }
                        self.mark_unknown(attempt, kind.as_str())
                    }
                }
            }
            Op::SoftTimeout { attempt, .. } => self.mark_unknown(attempt, "soft_timeout"),
            Op::HardDeadline { .. } | Op::Crash { reopen: false, .. } => Ok(Expect::Nothing),
            Op::Crash { reopen: true, .. } => {
                self.recover();
                Ok(Expect::Nothing)
            }
            Op::Recover => Ok(Expect::Recovered(self.recover())),
            Op::TimePasses => {
                for a in 0..self.attempts.len() {
                    let nobody_renews = self.attempts[a].holder.is_some_and(|h| !self.live(h));
                    if self.attempts[a].state == AttemptState::InFlight && nobody_renews {
                        self.attempts[a].lapsed = true;
                    }
                }
                for job in &mut self.jobs {
                    job.waiting = false;
                }
                Ok(Expect::Nothing)
            }
            Op::Lookup { attempt, says } => match says {
                Says::Succeeded => self.complete(attempt, answer(attempt), Cause::Reconciliation),
                Says::Failed | Says::NotFound => {
                    self.fail_attempt(attempt, "reconciled_failed", false)
                }
                Says::Nothing => Ok(Expect::Nothing),
            },
            Op::Resolve {
                attempt,
                verdict,
                with_result,
                retry_on,
                stranger,
            } => {
                let succeeded = verdict == Verdict::Succeeded;
                if (with_result && !succeeded) || (retry_on.is_some() && succeeded) {
                    return Err(Expect::Refused("invalid_input"));
                }
                if stranger {
                    return Err(Expect::Refused("not_found"));
                }
                let from = self.attempts[attempt].state;
                let j = self.attempts[attempt].job;
                if succeeded {
                    if !matches!(from, AttemptState::InFlight | AttemptState::Unknown) {
                        return Err(INVALID);
                    }
                    let result = if with_result {
                        person_result(attempt)
                    } else {
                        Value::Null
                    };
                    self.complete(attempt, result, Cause::Person)?;
                    return Ok(Expect::Ok);
                }
                if !from.is_open() {
                    return Err(INVALID);
                }
                if verdict == Verdict::Failed {
                    self.attempts[attempt].state = AttemptState::Failed;
                    self.attempts[attempt].error = Some("resolved_by_person");
                } else {
                    self.attempts[attempt].state = AttemptState::Abandoned;
                }
                self.release(j);
                self.jobs[j].decisions += 1;
                if matches!(
                    self.attempts[attempt].channel,
                    Channel::Open | Channel::Late
                ) && self.attempts[attempt].holder.is_some_and(|h| self.live(h))
                {
                    self.note = "a person gave up on a request still out";
                }
                match retry_on {
                    Some(p) => Ok(Expect::Created(self.start(j, p)?)),
                    None => Ok(Expect::Ok),
                }
            }
            Op::Cancel { job, stranger } => {
                if stranger {
                    return Err(Expect::Refused("not_found"));
                }
                if matches!(
                    self.jobs[job].status,
                    JobStatus::Succeeded | JobStatus::Cancelled
                ) {
                    return Err(INVALID);
                }
                self.end(job, JobStatus::Cancelled);
                Ok(Expect::Ok)
            }
            Op::Retry { job, on, stranger } => {
                if stranger {
                    return Err(Expect::Refused("not_found"));
                }
                let status = self.jobs[job].status;
                if matches!(status, JobStatus::Succeeded | JobStatus::Cancelled) {
                    return Err(INVALID);
                }
                let p = on.unwrap_or_else(|| match self.jobs[job].attempts.last() {
                    Some(&a) => self.attempts[a].provider,
                    None => KEYS[self.jobs[job].key].route[0],
                });
                if status == JobStatus::Failed {
                    self.set_status(job, JobStatus::Queued);
                    self.jobs[job].version += 1;
                }
                let a = self.start(job, p)?;
                self.jobs[job].decisions += 1;
                if status == JobStatus::Failed
                    && self.jobs[job].attempts.iter().any(|&a| {
                        matches!(self.attempts[a].channel, Channel::Open | Channel::Late)
                            && self.attempts[a].holder.is_some_and(|h| self.live(h))
                    })
                {
                    self.note = "a failed job reopened with a request still out";
                }
                Ok(Expect::Created(a))
            }
            Op::RemoveProvider(p) => {
                if !self.present[p.index()] {
                    return Err(Expect::Refused("not_found"));
                }
                self.present[p.index()] = false;
                // A check of a provider that is not configured is not current.
                self.validated[p.index()] = false;
                Ok(Expect::Ok)
            }
            Op::AddProvider(p) => {
                self.present[p.index()] = true;
                // Its configuration changed since any check: none is current.
                self.validated[p.index()] = false;
                Ok(Expect::Ok)
            }
            Op::Validate(p) => {
                if !self.present[p.index()] {
                    return Err(Expect::Refused("not_found"));
                }
                self.validated[p.index()] = true;
                Ok(Expect::Ok)
            }
            Op::Replay { attempt, again, .. } => self.replay(attempt, again),
            Op::Age { .. } => Ok(Expect::Nothing),
            Op::SetBudget { .. } | Op::RemoveBudget(_) | Op::PeriodEnds => self.budget_step(op),
            Op::Bulk { slot, ask, run } => self.bulk(slot, ask, run),
        }
    }
}
