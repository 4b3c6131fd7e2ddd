//! The world: providers, intents, executors, and what a provider may answer; and the system
//! under test, the engine on a real ledger, driven as the executors and the person drive it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use onejob_engine::testing::{
    AfterFailure, Cause, Claim, FailureKind, InternalCalls as _, Note, Outcome, ReplayGate,
    RetryHere,
};
use onejob_engine::{
    AttemptState, BulkAction, BulkFilter, BulkRequest, Engine, Error, JobStatus, Resolution,
    Verdict,
};
use serde_json::{json, Value};

use super::priced::BUDGET_SLOTS;
use super::reference::{Claimed, Expect, Model};
use super::schedule::{JobRef, Op};
use super::{LONG_LEASE, LONG_WAIT, OWNER, PAST, STRANGER};
use crate::common::{Raw, Sql};

/// The configured providers: two `http` ones that do not honour `Idempotency-Key`, one that
/// does, and an `openai` one (which is told to honour it, so its 5xx retries are safe).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Prov {
    Plain,
    Spare,
    Keyed,
    Ai,
}

impl Prov {
    pub(super) const ALL: [Prov; 4] = [Prov::Plain, Prov::Spare, Prov::Keyed, Prov::Ai];

    pub(super) fn name(self) -> &'static str {
        match self {
            Prov::Plain => "plain",
            Prov::Spare => "spare",
            Prov::Keyed => "keyed",
            Prov::Ai => "ai",
        }
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub(super) fn honours_key(self) -> bool {
        matches!(self, Prov::Keyed | Prov::Ai)
    }

    fn config(self) -> String {
        let mut config = json!({
            "name": self.name(),
            "kind": "http",
            "base_url": format!("http://127.0.0.1:9/{}", self.name()),
            "soft_timeout_ms": 1000,
            "hard_timeout_ms": 5000,
            "honours_idempotency_key": self.honours_key(),
            "status_url": "{base_url}/status/{idempotency_key}",
        });
        if self == Prov::Keyed {
            // It says how long it keeps a key, so its `unknown` attempts are replayed (SPEC
            // §16). Its hard deadline is long enough that the test's own time never passes it:
            // only `Age` does.
            config["key_retention_s"] = json!(KEY_RETENTION_H * 3600);
            config["hard_timeout_ms"] = json!(600_000);
        }
        if let Some(price) = super::priced::price(self) {
            config["price"] = price;
        }
        if self == Prov::Ai {
            config["kind"] = json!("openai");
            config["base_url"] = json!("http://127.0.0.1:9/v1");
            config["model"] = json!("gpt-4o-mini");
        }
        config.to_string()
    }
}

/// How long the keyed provider keeps a key, in the model's hours.
pub(super) const KEY_RETENTION_H: u32 = 24;
/// The most hours since a send that a replay's window still allows: the retention less the
/// margin (a tenth of it, 2.4 h) is 21.6 h.
pub(super) const REPLAY_WINDOW_H: u32 = 21;
/// The keys bulk operations run under.
pub(super) const BULK_SLOTS: usize = 3;

/// The contract some jobs name; a provider validated for it may take over by itself.
pub(super) const CONTRACT: &str = "reply";

fn contract() -> String {
    json!({
        "name": CONTRACT,
        "schema": {"type": "object", "additionalProperties": true},
        "template": {"system": "Answer in JSON.", "user": "Reply to {{key}}"},
        "samples": [{"key": "sample"}]
    })
    .to_string()
}

/// The idempotency keys a person submits under; keys repeat, so do submits.
pub(super) struct Key {
    pub(super) name: &'static str,
    pub(super) route: &'static [Prov],
    max_attempts: Option<u32>,
    /// Whether the intent names [`CONTRACT`], so that a validated fallback may take over.
    pub(super) contract: bool,
}

impl Key {
    pub(super) fn budget(&self) -> usize {
        self.max_attempts
            .unwrap_or(onejob_engine::testing::DEFAULT_MAX_ATTEMPTS) as usize
    }
}

pub(super) const KEYS: [Key; 8] = [
    Key {
        name: "draft-a",
        route: &[Prov::Plain, Prov::Spare],
        max_attempts: Some(3),
        contract: true,
    },
    Key {
        name: "draft-b",
        route: &[Prov::Keyed],
        max_attempts: Some(2),
        contract: false,
    },
    Key {
        name: "draft-c",
        route: &[Prov::Keyed, Prov::Plain],
        max_attempts: None,
        contract: true,
    },
    Key {
        name: "draft-d",
        route: &[Prov::Ai, Prov::Spare],
        max_attempts: Some(4),
        contract: true,
    },
    Key {
        name: "draft-e",
        route: &[Prov::Plain],
        max_attempts: Some(1),
        contract: false,
    },
    Key {
        name: "draft-f",
        route: &[Prov::Spare, Prov::Keyed],
        max_attempts: Some(1),
        contract: false,
    },
    Key {
        name: "draft-g",
        route: &[Prov::Keyed, Prov::Ai],
        max_attempts: Some(4),
        contract: true,
    },
    Key {
        name: "draft-h",
        route: &[Prov::Plain, Prov::Ai, Prov::Spare],
        max_attempts: None,
        contract: true,
    },
];

/// The intent submitted under key `key`; `variant` 1 is another intent under the same key.
fn intent(key: usize, variant: u8) -> String {
    let k = &KEYS[key];
    let mut intent = json!({
        "route": k.route.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "input": { "key": k.name, "variant": variant },
    });
    if let Some(max) = k.max_attempts {
        intent["max_attempts"] = json!(max);
    }
    if k.contract {
        intent["contract"] = json!(CONTRACT);
    }
    intent.to_string()
}

/// What the provider answers for attempt `a`, live or to a status lookup.
pub(super) fn answer(a: usize) -> Value {
    json!({ "answer": a })
}

/// The result a person types in for attempt `a`.
pub(super) fn person_result(a: usize) -> Value {
    json!({ "typed_by_person_for": a })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Exec {
    E1,
    E2,
    E3,
}

impl Exec {
    pub(super) fn index(self) -> usize {
        self as usize
    }

    /// The executor id it records on the attempts it sends in this life.
    fn id(self, life: u32) -> String {
        format!("{self:?}.{life}")
    }
}

/// What came back for a sent request (SPEC §6), before the executor classifies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reply {
    /// A valid 2xx answer.
    Answer,
    /// Connection refused: the request was never written.
    Refused,
    /// 400/401/403/404/422.
    Rejected,
    /// 429; `long`: with a `Retry-After` beyond the one-hour cap.
    Throttled { long: bool },
    /// Another 5xx.
    ServerError,
    /// A 2xx body that is not JSON.
    InvalidAnswer,
    /// An answer that breaks the job's contract.
    ContractViolation,
    /// The client's timeout after the request may have been written.
    Timeout,
    /// The connection broke after the request may have been written (with `did_work`: the
    /// provider did the work and the answer was dropped).
    ConnectionBroken,
    /// A 2xx answer cut off mid-body.
    CutOff,
    /// A 2xx answer over the size limit.
    TooLarge,
}

impl Reply {
    pub(super) const ALL: [Reply; 12] = [
        Reply::Answer,
        Reply::Refused,
        Reply::Rejected,
        Reply::Throttled { long: false },
        Reply::Throttled { long: true },
        Reply::ServerError,
        Reply::InvalidAnswer,
        Reply::ContractViolation,
        Reply::Timeout,
        Reply::ConnectionBroken,
        Reply::CutOff,
        Reply::TooLarge,
    ];

    /// Whether the reply proves the provider did the work (`Some(true)`), proves it did
    /// not (`Some(false)`), or leaves it to `did_work` (`None`).
    pub(super) fn proves_work(self) -> Option<bool> {
        match self {
            Reply::Answer
            | Reply::InvalidAnswer
            | Reply::ContractViolation
            | Reply::CutOff
            | Reply::TooLarge => Some(true),
            Reply::Refused | Reply::Rejected | Reply::Throttled { .. } => Some(false),
            Reply::ServerError | Reply::Timeout | Reply::ConnectionBroken => None,
        }
    }
}

/// How the executor records a reply, as `providers/http.rs` classifies it and
/// `executor/send/settle.rs` settles it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Settle {
    Answer,
    Fail {
        kind: FailureKind,
        status: Option<u16>,
        long: bool,
    },
    Unknown(FailureKind),
}

pub(super) fn classify(reply: Reply, provider: Prov, number: u32, budget: usize) -> Settle {
    let fail = |kind, status| Settle::Fail {
        kind,
        status,
        long: false,
    };
    match reply {
        Reply::Answer => Settle::Answer,
        Reply::Refused => fail(FailureKind::NeverSent, None),
        Reply::Rejected => fail(FailureKind::Rejected, Some(422)),
        Reply::Throttled { long } => Settle::Fail {
            kind: FailureKind::Throttled,
            status: Some(429),
            long,
        },
        Reply::ServerError => match provider {
            Prov::Plain | Prov::Spare => Settle::Unknown(FailureKind::ServerErrorUnknown),
            // The last try at a provider that honours the key: nobody will send it again.
            Prov::Keyed if number as usize >= budget => {
                Settle::Unknown(FailureKind::ServerErrorUnknown)
            }
            Prov::Keyed => fail(FailureKind::ServerErrorKeyed, Some(500)),
            Prov::Ai => fail(FailureKind::ServerError, Some(500)),
        },
        // An `http` 2xx says the work was done, readable or not.
        Reply::InvalidAnswer => match provider {
            Prov::Plain | Prov::Spare => Settle::Unknown(FailureKind::InvalidAnswerUnknown),
            Prov::Keyed if number as usize >= budget => {
                Settle::Unknown(FailureKind::InvalidAnswerUnknown)
            }
            Prov::Keyed => fail(FailureKind::InvalidAnswerKeyed, Some(200)),
            Prov::Ai => fail(FailureKind::InvalidAnswer, Some(200)),
        },
        Reply::ContractViolation => fail(FailureKind::ContractViolation, None),
        Reply::Timeout => Settle::Unknown(FailureKind::Timeout),
        Reply::ConnectionBroken => Settle::Unknown(FailureKind::ConnectionBroken),
        Reply::CutOff => Settle::Unknown(FailureKind::CutOff),
        Reply::TooLarge => Settle::Unknown(FailureKind::AnswerTooLarge),
    }
}

/// What a provider's status lookup says about an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Says {
    Succeeded,
    Failed,
    NotFound,
    /// Still at work, a bare 404, an error: nothing is decided.
    Nothing,
}

/// What came back for a keyed replay (SPEC §16), from a provider that deduplicates by the key:
/// one that did the job's work answers what it stored, and does nothing again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Again {
    /// A 2xx: the stored answer, or the work done now.
    Answer,
    /// A 409 (the key in progress), a 5xx, a timeout: nothing settled. `did_work`: the provider
    /// did the work now and the answer was lost.
    Later { did_work: bool },
    /// Another 4xx: a provider that does not know its own key.
    UnknownKey,
    /// A 2xx that cannot be read: the work done now, its answer broken.
    Broken,
}

/// What a replay came to, as `executor/replay.rs` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReplayGot {
    Completed(Outcome),
    Failed,
    RetriesLater,
    Flagged,
    TooEarly,
}

/// A bulk operation's action (SPEC §16 "Many at once").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BulkDo {
    Resolve(Verdict),
    Cancel,
    /// At this provider, or where each job's last attempt ran.
    Retry(Option<Prov>),
}

/// A bulk operation as a person asks it: the action and the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BulkAsk {
    pub(super) action: BulkDo,
    pub(super) status: Option<JobStatus>,
    pub(super) provider: Option<Prov>,
}

impl BulkAsk {
    /// As the engine puts it before taking its fingerprint: a resolve filters unknown jobs.
    pub(super) fn normal(self) -> BulkAsk {
        match (self.action, self.status) {
            (BulkDo::Resolve(_), None) => BulkAsk {
                status: Some(JobStatus::Unknown),
                ..self
            },
            _ => self,
        }
    }

    fn request(self) -> BulkRequest {
        let (action, verdict, provider) = match self.action {
            BulkDo::Resolve(v) => (BulkAction::Resolve, Some(v), None),
            BulkDo::Cancel => (BulkAction::Cancel, None, None),
            BulkDo::Retry(p) => (BulkAction::Retry, None, p.map(|p| p.name().to_owned())),
        };
        BulkRequest {
            action,
            filter: BulkFilter {
                status: self.status,
                provider: self.provider.map(|p| p.name().to_owned()),
                ..Default::default()
            },
            verdict,
            provider,
            dry_run: false,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The system under test: the engine on a real ledger, driven as the executors and the person
// drive it.

pub(super) struct Sut {
    pub(super) rt: tokio::runtime::Runtime,
    pub(super) ledger: Ledger,
}

pub(super) struct Ledger {
    _dir: tempfile::TempDir,
    /// The file's path or the database's URL.
    location: String,
    /// E1's, E2's, E3's and the person's engines: four processes on one ledger.
    pub(super) engines: Vec<Engine>,
    /// A plain connection to the ledger, for counting rows and moving the clock.
    pub(super) raw: Raw,
    pub(super) jobs: Vec<String>,
    pub(super) attempts: Vec<String>,
    /// How often `mark_sent` returned Ok, by attempt.
    sent: HashMap<usize, usize>,
    /// Each succeeded job's winner and result, as first seen.
    pub(super) settled: RefCell<HashMap<usize, (String, Option<Value>)>>,
    /// The bulk operations' ids, by slot.
    pub(super) bulk_ids: [Option<String>; BULK_SLOTS],
    pub(super) step: usize,
    pub(super) op: String,
    /// The case's schedule is over; the drain's steps follow.
    pub(super) draining: bool,
    /// What each budget held after the last step, or as it was set, by slot (rule 12).
    pub(super) held: RefCell<[Option<i64>; BUDGET_SLOTS]>,
}

const PERSON: usize = 3;

impl Ledger {
    pub(super) async fn new() -> Ledger {
        let dir = tempfile::tempdir().expect("temp dir");
        let location = onejob_testkit::ledger_location(&dir.path().join("onejob.db"));
        let first = Engine::open(&location).await.expect("open");
        for p in Prov::ALL {
            first.add_provider(&p.config()).await.expect("provider");
        }
        first.add_contract(&contract()).await.expect("contract");
        let mut engines = vec![first];
        for _ in 0..PERSON {
            engines.push(Engine::open(&location).await.expect("open"));
        }
        let raw = Raw::connect(&location).await;
        Ledger {
            _dir: dir,
            location,
            engines,
            raw,
            jobs: Vec::new(),
            attempts: Vec::new(),
            sent: HashMap::new(),
            settled: RefCell::new(HashMap::new()),
            bulk_ids: Default::default(),
            step: 0,
            op: String::new(),
            draining: false,
            held: RefCell::new([None; BUDGET_SLOTS]),
        }
    }

    pub(super) fn ctx(&self) -> String {
        let phase = if self.draining { "drain " } else { "" };
        format!("{phase}step {} ({})", self.step, self.op)
    }

    pub(super) fn person(&self) -> &Engine {
        &self.engines[PERSON]
    }

    pub(super) fn job_index(&self, id: &str) -> usize {
        let found = self.jobs.iter().position(|j| j == id);
        found.unwrap_or_else(|| panic!("{}: the engine named an unknown job {id}", self.ctx()))
    }

    fn attempt_index(&self, id: &str) -> usize {
        let found = self.attempts.iter().position(|a| a == id);
        found.unwrap_or_else(|| panic!("{}: the engine named an unknown attempt {id}", self.ctx()))
    }

    fn new_attempt(&mut self, id: String) -> usize {
        assert!(
            !self.attempts.contains(&id),
            "{}: attempt {id} reported as new twice",
            self.ctx()
        );
        self.attempts.push(id);
        self.attempts.len() - 1
    }

    /// A refusal as the model states it; `storage`, `internal` and `provider` fail the test.
    pub(super) fn refusal(&self, e: Error) -> Expect {
        match e {
            Error::AttemptBlocked { details, .. } => {
                Expect::Blocked(self.attempt_index(&details.attempt_id))
            }
            Error::IdempotencyConflict { details, .. } => {
                Expect::Conflict(self.job_index(&details.existing_job_id))
            }
            Error::Storage { .. } | Error::Internal { .. } | Error::Provider { .. } => {
                panic!("{}: the engine failed: {e:?}", self.ctx())
            }
            other => Expect::Refused(other.code()),
        }
    }

    pub(super) fn done<T>(&self, r: Result<T, Error>) -> Expect {
        match r {
            Ok(_) => Expect::Ok,
            Err(e) => self.refusal(e),
        }
    }

    pub(super) async fn run(&mut self, m: &Model, op: &Op) -> Expect {
        let act = m.act(op).expect("the step names what exists");
        match act {
            Op::Submit {
                key: JobRef(key),
                other_intent,
            } => {
                let body = intent(key, u8::from(other_intent));
                match self.person().submit(OWNER, KEYS[key].name, &body).await {
                    Ok(s) => {
                        let job = match self.jobs.iter().position(|j| *j == s.job.id) {
                            Some(j) => j,
                            None => {
                                self.jobs.push(s.job.id.clone());
                                self.jobs.len() - 1
                            }
                        };
                        Expect::Submitted {
                            job,
                            replayed: s.replayed,
                        }
                    }
                    Err(e) => self.refusal(e),
                }
            }
            Op::Claim { by, job } => {
                let claimed = self.engines[by.index()].claim_next(&self.jobs[job]).await;
                match claimed {
                    Ok(Claim::Attempt(ja)) => {
                        Expect::Claimed(Claimed::Attempt(self.new_attempt(ja.attempt.id)))
                    }
                    Ok(Claim::Failed(job)) => {
                        let code = job.error.map(|e| e.code).unwrap_or_default();
                        Expect::Claimed(Claimed::Failed(code))
                    }
                    Ok(Claim::Skipped) => Expect::Claimed(Claimed::Skipped),
                    Err(e) => self.refusal(e),
                }
            }
            Op::Send {
                by,
                attempt,
                lapsing,
            } => {
                // As `drive` does: the provider is looked up first; one that is gone fails
                // the attempt before anything is sent.
                let engine = &self.engines[by.index()];
                let id = &self.attempts[attempt];
                let read = engine.attempt_by_id(id).await.expect("attempt");
                match engine.provider(&read.provider).await {
                    Ok(_) => {}
                    Err(Error::NotFound { .. }) => {
                        let why = FailureKind::Misconfigured.because("the provider was removed");
                        return self.done(engine.fail_unsent(id, why).await);
                    }
                    Err(e) => panic!("{}: provider lookup failed: {e:?}", self.ctx()),
                }
                let lease = if lapsing { Duration::ZERO } else { LONG_LEASE };
                let executor = by.id(m.lives[by.index()]);
                let body = super::priced::body(m.jobs[m.attempts[attempt].job].key);
                match engine.mark_sent_priced(id, &executor, lease, &body).await {
                    // Kept back by a budget (SPEC §17): nothing was sent.
                    Ok(kept) if kept.state == AttemptState::Failed => {
                        self.kept_back(attempt, &kept.job_id).await
                    }
                    Ok(sent) => {
                        // Rule 2: only one executor's `mark_sent` ever succeeds for an attempt.
                        let times = {
                            let times = self.sent.entry(attempt).or_default();
                            *times += 1;
                            *times
                        };
                        assert_eq!(
                            times,
                            1,
                            "{}: rule 2: attempt {attempt} was marked sent twice",
                            self.ctx()
                        );
                        // Rule 3: sent only while its job runs without a result.
                        let job = self.person().job_by_id(&sent.job_id).await.expect("job");
                        assert!(
                            job.status == JobStatus::Running && job.completed_by.is_none(),
                            "{}: rule 3: attempt {attempt} was sent while its job is {} (completed_by {:?})",
                            self.ctx(),
                            job.status,
                            job.completed_by
                        );
                        assert_eq!(sent.state, AttemptState::InFlight, "{}", self.ctx());
                        Expect::Ok
                    }
                    Err(e) => self.refusal(e),
                }
            }
            Op::FailUnsent { by, attempt } => {
                let why = FailureKind::Misconfigured.because("the provider's API key is missing");
                let failed = self.engines[by.index()]
                    .fail_unsent(&self.attempts[attempt], why)
                    .await;
                self.done(failed)
            }
            Op::Reply {
                by, attempt, reply, ..
            } => {
                let engine = &self.engines[by.index()];
                let id = &self.attempts[attempt];
                let read = engine.attempt_by_id(id).await.expect("attempt");
                let key = m.jobs[m.attempts[attempt].job].key;
                let provider = m.attempts[attempt].provider;
                match classify(reply, provider, read.number, KEYS[key].budget()) {
                    Settle::Answer => {
                        match engine.complete(id, &answer(attempt), Cause::Answer).await {
                            Ok(c) => Expect::Completed(c.outcome),
                            Err(e) => self.refusal(e),
                        }
                    }
                    Settle::Fail { kind, status, long } => {
                        let after = match kind.retry_here() {
                            RetryHere::Yes if long => AfterFailure::RequeueAfter {
                                wait: LONG_WAIT,
                                retry_after: Some(LONG_WAIT),
                            },
                            RetryHere::Yes => AfterFailure::RequeueAfter {
                                wait: Duration::ZERO,
                                retry_after: None,
                            },
                            RetryHere::NotHere | RetryHere::Blocked => AfterFailure::Requeue,
                        };
                        let why = kind.because(format!("{reply:?} from the model"));
                        self.done(engine.fail_attempt(id, why, status, after).await)
                    }
                    Settle::Unknown(kind) => {
                        // As `mark_unknown_if_in_flight`: only an attempt still in flight.
                        if read.state != AttemptState::InFlight {
                            return Expect::Nothing;
                        }
                        let why = kind.because(format!("{reply:?} from the model"));
                        self.done(engine.mark_unknown(id, why).await)
                    }
                }
            }
            Op::SoftTimeout { by, attempt } => {
                let why = FailureKind::SoftTimeout.because("no answer within the soft timeout");
                let marked = self.engines[by.index()]
                    .mark_unknown(&self.attempts[attempt], why)
                    .await;
                self.done(marked)
            }
            Op::HardDeadline { .. } => Expect::Nothing,
            Op::Recover => {
                // A zero lease has run out by the next millisecond.
                tokio::time::sleep(Duration::from_millis(2)).await;
                match self.engines[0].recover_expired_leases().await {
                    Ok(n) => Expect::Recovered(n),
                    Err(e) => self.refusal(e),
                }
            }
            Op::TimePasses => {
                let live = [
                    Exec::E1.id(m.lives[0]),
                    Exec::E2.id(m.lives[1]),
                    Exec::E3.id(m.lives[2]),
                ];
                let lapse = Sql {
                    sqlite: "UPDATE attempts SET lease_expires_at = $1
                             WHERE state = 'in_flight' AND executor_id NOT IN ($2, $3, $4)",
                    postgres: "UPDATE attempts SET lease_expires_at = CAST($1 AS timestamptz)
                               WHERE state = 'in_flight' AND executor_id NOT IN ($2, $3, $4)",
                };
                self.raw
                    .execute(lapse, &[PAST, &live[0], &live[1], &live[2]])
                    .await
                    .expect("leases lapse");
                // Not a budget's wait: that lasts until its next period (`PeriodEnds`).
                self.end_waits(false).await;
                Expect::Nothing
            }
            Op::Crash { exec, reopen, .. } => {
                if reopen {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    self.engines[exec.index()].close().await;
                    self.engines[exec.index()] =
                        Engine::open(&self.location).await.expect("reopen");
                }
                Expect::Nothing
            }
            Op::Lookup { attempt, says } => {
                let (engine, id) = (&self.engines[0], &self.attempts[attempt]);
                match says {
                    Says::Succeeded => {
                        let completed = engine
                            .complete(id, &answer(attempt), Cause::Reconciliation)
                            .await;
                        match completed {
                            Ok(c) => Expect::Completed(c.outcome),
                            Err(e) => self.refusal(e),
                        }
                    }
                    Says::Failed | Says::NotFound => {
                        let why = FailureKind::ReconciledFailed
                            .because(format!("the status lookup says {says:?}"));
                        let failed = engine
                            .fail_attempt(id, why, None, AfterFailure::Requeue)
                            .await;
                        self.done(failed)
                    }
                    Says::Nothing => Expect::Nothing,
                }
            }
            Op::Resolve {
                attempt,
                verdict,
                with_result,
                retry_on,
                stranger,
            } => {
                let owner = if stranger { STRANGER } else { OWNER };
                let resolution = Resolution {
                    result: with_result.then(|| person_result(attempt)),
                    note: Some(format!("{verdict:?}, said the model")),
                    retry_on: retry_on.map(|p| p.name().to_owned()),
                };
                let resolved = self
                    .person()
                    .resolve(owner, &self.attempts[attempt], verdict, resolution)
                    .await;
                match resolved {
                    Ok(ja) => match ja.next_attempt {
                        Some(next) => Expect::Created(self.new_attempt(next.id)),
                        None => Expect::Ok,
                    },
                    Err(e) => self.refusal(e),
                }
            }
            Op::Cancel { job, stranger } => {
                let owner = if stranger { STRANGER } else { OWNER };
                let cancelled = self.person().cancel(owner, &self.jobs[job]).await;
                self.done(cancelled)
            }
            Op::Retry { job, on, stranger } => {
                let owner = if stranger { STRANGER } else { OWNER };
                let retried = self
                    .person()
                    .retry(owner, &self.jobs[job], on.map(Prov::name))
                    .await;
                match retried {
                    Ok(ja) => Expect::Created(self.new_attempt(ja.attempt.id)),
                    Err(e) => self.refusal(e),
                }
            }
            Op::RemoveProvider(p) => {
                let removed = self.person().remove_provider(p.name()).await;
                self.done(removed)
            }
            Op::AddProvider(p) => {
                // Its new `updated_at` differs from the one any earlier check recorded.
                tokio::time::sleep(Duration::from_millis(2)).await;
                let added = self.person().add_provider(&p.config()).await;
                self.done(added)
            }
            Op::Validate(p) => {
                if self.validate(p).await == 1 {
                    Expect::Ok
                } else {
                    Expect::Refused("not_found")
                }
            }
            Op::Replay { by, attempt, again } => {
                let budget = KEYS[m.jobs[m.attempts[attempt].job].key].budget();
                self.replay(by, attempt, again, budget, &m.replay_answer)
                    .await
            }
            Op::Age { hours, .. } => {
                // Not the priced attempts': their budgets' period moves by `PeriodEnds` alone.
                self.move_sent(hours, false).await;
                Expect::Nothing
            }
            Op::SetBudget { .. } | Op::RemoveBudget(_) | Op::PeriodEnds => {
                self.budget_step(&act).await
            }
            Op::Bulk { slot, ask, run } => {
                let key = format!("bulk-{slot}");
                let request = ask.request();
                let person = self.person();
                let started = if run {
                    person.bulk(OWNER, &key, &request, |_| {}).await
                } else {
                    person.bulk_start(OWNER, &key, &request).await
                };
                match started {
                    Ok(started) => {
                        let op = started.operation;
                        let id = op.id.clone().expect("an operation is recorded");
                        let first = self.bulk_ids[slot]
                            .get_or_insert_with(|| id.clone())
                            .clone();
                        assert_eq!(first, id, "{}: the key answers its operation", self.ctx());
                        let mut skipped: Vec<(usize, String)> = op
                            .skipped
                            .iter()
                            .map(|s| (self.job_index(&s.job_id), s.code.clone()))
                            .collect();
                        skipped.sort();
                        // The attempts a bulk retry started, by their job and number.
                        for a in self.attempts.len()..m.attempts.len() {
                            let ma = &m.attempts[a];
                            let d = self.person().job(OWNER, &self.jobs[ma.job]).await;
                            let started = d.ok().and_then(|d| {
                                d.attempts
                                    .into_iter()
                                    .find(|x| x.number == ma.number)
                                    .map(|x| x.id)
                            });
                            match started {
                                Some(id) => {
                                    self.new_attempt(id);
                                }
                                None => break,
                            }
                        }
                        Expect::Bulk {
                            replayed: started.replayed,
                            matched: op.matched as usize,
                            changed: op.changed as usize,
                            skipped,
                            done: op.done,
                        }
                    }
                    Err(Error::IdempotencyConflict { details, .. }) => {
                        let slot = self
                            .bulk_ids
                            .iter()
                            .position(|id| id.as_deref() == Some(&details.existing_job_id));
                        Expect::BulkConflict(slot.unwrap_or_else(|| {
                            panic!("{}: a conflict names no operation", self.ctx())
                        }))
                    }
                    Err(e) => self.refusal(e),
                }
            }
        }
    }

    /// A keyed replay as `Executor::replay` makes it, without HTTP: the engine's gate, then
    /// what came back (`again`, chosen by the schedule) recorded by the calls the executor
    /// records it with.
    async fn replay(
        &self,
        by: Exec,
        attempt: usize,
        again: Again,
        budget: usize,
        stored: &Value,
    ) -> Expect {
        let engine = &self.engines[by.index()];
        let id = &self.attempts[attempt];
        let (read, left) = match engine.replay_gate(id).await {
            Ok(ReplayGate::Now { attempt, left, .. }) => (attempt, left),
            Ok(ReplayGate::TooEarly(_)) => return Expect::Replayed(ReplayGot::TooEarly),
            Err(e) => return self.refusal(e),
        };
        let flag = |why: &onejob_engine::AttemptError, status| {
            let note = Note::replayed("flagged", Some(why), Some(status), left, None);
            engine.flag_unknown(id, note)
        };
        let flagged = |r: Result<bool, Error>| match r {
            Ok(true) => Expect::Replayed(ReplayGot::Flagged),
            Ok(false) => Expect::Nothing,
            Err(e) => self.refusal(e),
        };
        match again {
            Again::Answer => {
                let note = Note::replayed("settled", None, Some(200), left, None);
                let completed = engine
                    .complete_noted(id, stored, Cause::Answer, "replay", note)
                    .await;
                match completed {
                    Ok(c) => Expect::Replayed(ReplayGot::Completed(c.outcome)),
                    Err(e) => self.refusal(e),
                }
            }
            Again::Later { .. } => {
                let why = FailureKind::Timeout.because("the replay timed out, said the model");
                let wait = Some(onejob_engine::testing::REPLAY_FIRST_WAIT);
                let note = Note::replayed("retries_later", Some(&why), None, left, wait);
                match engine.note(id, note).await {
                    Ok(()) => Expect::Replayed(ReplayGot::RetriesLater),
                    Err(e) => self.refusal(e),
                }
            }
            Again::UnknownKey => {
                let why = FailureKind::Rejected.because("404: no such key, said the model");
                flagged(flag(&why, 404).await)
            }
            Again::Broken => {
                let kind = FailureKind::InvalidAnswerKeyed;
                let why = kind.because("an unreadable 2xx to the replay, said the model");
                if kind.on_last_try() != kind && read.number as usize >= budget {
                    return flagged(flag(&why, 200).await);
                }
                let note = Note::replayed("settled", Some(&why), Some(200), left, None);
                let after = AfterFailure::RequeueAfter {
                    wait: Duration::ZERO,
                    retry_after: None,
                };
                let failed = engine
                    .fail_attempt_noted(id, why.clone(), Some(200), after, Some(note))
                    .await;
                match failed {
                    Ok(_) => Expect::Replayed(ReplayGot::Failed),
                    Err(e) => self.refusal(e),
                }
            }
        }
    }

    /// Records a passed check of [`CONTRACT`] against `p` as it is configured now, as a check
    /// that passed would; the rows written (none when `p` is not configured).
    pub(super) async fn validate(&self, p: Prov) -> u64 {
        let check = Sql {
            sqlite: "INSERT INTO contract_checks (id, contract, contract_hash, provider,
                                 provider_updated_at, passed, samples, checked_at)
                             SELECT $1, c.name, c.hash, p.name, p.updated_at, 1, '[]',
                                 strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                             FROM contracts c, providers p WHERE c.name = $2 AND p.name = $3",
            postgres: "INSERT INTO contract_checks (id, contract, contract_hash, provider,
                                   provider_updated_at, passed, samples, checked_at)
                               SELECT CAST($1 AS uuid), c.name, c.hash, p.name, p.updated_at,
                                   true, CAST('[]' AS json), onejob_now()
                               FROM contracts c, providers p WHERE c.name = $2 AND p.name = $3",
        };
        let id = uuid::Uuid::now_v7().to_string();
        self.raw
            .execute(check, &[&id, CONTRACT, p.name()])
            .await
            .expect("a check")
    }
}
