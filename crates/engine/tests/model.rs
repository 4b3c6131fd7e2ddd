//! A model-based test of the ledger: three executors and a person act on one ledger (a SQLite
//! file, or a PostgreSQL database on the PostgreSQL pass) in random interleavings, and after
//! every step the ledger must agree with a reference model of SPEC §2–§7 and keep the rules
//! that make "exactly one result per intent".
//!
//! `cargo test -p onejob-engine --test model` runs `ONEJOB_MODEL_CASES` cases (128 unless set),
//! each from its own seed. A failure is shrunk to its shortest schedule and printed with its
//! seed; `ONEJOB_MODEL_SEED=<seed> cargo test -p onejob-engine --test model` replays exactly it.
//!
//! How the world is played (no HTTP; the schedule chooses every outcome):
//! - executors E1, E2 and E3 claim, send and settle attempts as `executor/send/` does, each on
//!   its own `Engine` on the ledger, as two processes would; the person uses a third one;
//! - a provider's reply to a sent attempt is one of SPEC §6's outcomes, classified by the
//!   provider's kind the way the HTTP client classifies it. The model also keeps what the
//!   provider really did (`work`), so later replies and status lookups never contradict it;
//! - time: a lease is an hour, or zero for an executor whose lease will lapse; a backoff is
//!   none, or a `Retry-After` longer than the hour it is capped at. `TimePasses` moves the
//!   clock past every lease nobody renews (its executor crashed) and past every backoff, by
//!   writing only those two time columns: the test moves the clock, never the ledger;
//! - contract checks are not run (they need a provider answering over HTTP); instead a
//!   provider is validated for the contract some jobs name by writing a passed, current check
//!   for it (`Validate`), as a check that passed would. Re-adding a provider invalidates it,
//!   as in the ledger, so automatic failover (SPEC §7) is played both ways;
//! - keyed replays (SPEC §16): an executor replays an `unknown` attempt through the engine's own
//!   gate (`replay_gate`) and records what came back by the calls `executor/replay.rs` records
//!   it with. The keyed provider is a reference provider that deduplicates by the key (the
//!   job's id): it does a job's work at most once and answers what it stored, until it has
//!   kept the key `KEY_RETENTION_H` hours since it first saw it; a replay that reaches it later
//!   is a new request to it. A first send or a retry under the key is assumed to reach it
//!   within the retention (the executors keep up); only a replay may come later. `Age` moves
//!   the ledger's `sent_at` back by hours, past hard deadlines and retentions;
//! - bulk operations (SPEC §16 "Many at once"): the person starts one under a key (its set of
//!   jobs fixed), and runs it, or repeats the key to finish what is left, between the
//!   executors' steps.
//!
//! Beside agreeing with the model, rule 10: no provider does a job's work twice (the keyed
//! provider at most once, across first sends, retries and replays; the others as rule 4
//! says); rule 11: every job in a bulk operation is decided once, and the events naming the
//! operation change it at most once.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::{Raw, Sql};

use onejob_engine::{
    AfterFailure, Attempt, AttemptState, BulkAction, BulkFilter, BulkRequest, Cause, Claim, Engine,
    Error, FailureKind, JobDetail, JobStatus, Note, Outcome, ReplayGate, Resolution, RetryHere,
    Verdict,
};
use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};
use serde_json::{json, Value};

const OWNER: &str = "local";
/// Another owner: every person's call under it must be `not_found`.
const STRANGER: &str = "intruder";
const DEFAULT_CASES: u64 = 128;
/// Steps per case.
const STEPS: std::ops::Range<usize> = 40..100;
/// The drain at the end of a case must settle every job within this many steps.
const DRAIN_STEPS: usize = 200;
const LONG_LEASE: Duration = Duration::from_secs(3600);
/// A `Retry-After` beyond the one-hour cap: the job waits until `TimePasses`.
const LONG_WAIT: Duration = Duration::from_secs(7200);
/// A time before any lease or backoff the test writes.
const PAST: &str = "2000-01-01T00:00:00.000Z";

// ---------------------------------------------------------------------------------------
// The world: providers, intents, executors, and what a provider may answer.

/// The configured providers: two `http` ones that do not honour `Idempotency-Key`, one that
/// does, and an `openai` one (which is told to honour it, so its 5xx retries are safe).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prov {
    Plain,
    Spare,
    Keyed,
    Ai,
}

impl Prov {
    const ALL: [Prov; 4] = [Prov::Plain, Prov::Spare, Prov::Keyed, Prov::Ai];

    fn name(self) -> &'static str {
        match self {
            Prov::Plain => "plain",
            Prov::Spare => "spare",
            Prov::Keyed => "keyed",
            Prov::Ai => "ai",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn honours_key(self) -> bool {
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
        if self == Prov::Ai {
            config["kind"] = json!("openai");
            config["base_url"] = json!("http://127.0.0.1:9/v1");
            config["model"] = json!("gpt-4o-mini");
        }
        config.to_string()
    }
}

/// How long the keyed provider keeps a key, in the model's hours.
const KEY_RETENTION_H: u32 = 24;
/// The most hours since a send that a replay's window still allows: the retention less the
/// margin (a tenth of it, 2.4 h) is 21.6 h.
const REPLAY_WINDOW_H: u32 = 21;
/// The keys bulk operations run under.
const BULK_SLOTS: usize = 3;

/// The contract some jobs name; a provider validated for it may take over by itself.
const CONTRACT: &str = "reply";

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
struct Key {
    name: &'static str,
    route: &'static [Prov],
    max_attempts: Option<u32>,
    /// Whether the intent names [`CONTRACT`], so that a validated fallback may take over.
    contract: bool,
}

impl Key {
    fn budget(&self) -> usize {
        self.max_attempts
            .unwrap_or(onejob_engine::intent::DEFAULT_MAX_ATTEMPTS) as usize
    }
}

const KEYS: [Key; 8] = [
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
fn answer(a: usize) -> Value {
    json!({ "answer": a })
}

/// The result a person types in for attempt `a`.
fn person_result(a: usize) -> Value {
    json!({ "typed_by_person_for": a })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exec {
    E1,
    E2,
    E3,
}

impl Exec {
    fn index(self) -> usize {
        self as usize
    }

    /// The executor id it records on the attempts it sends in this life.
    fn id(self, life: u32) -> String {
        format!("{self:?}.{life}")
    }
}

/// What came back for a sent request (SPEC §6), before the executor classifies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reply {
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
    const ALL: [Reply; 12] = [
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
    fn proves_work(self) -> Option<bool> {
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
enum Settle {
    Answer,
    Fail {
        kind: FailureKind,
        status: Option<u16>,
        long: bool,
    },
    Unknown(FailureKind),
}

fn classify(reply: Reply, provider: Prov, number: u32, budget: usize) -> Settle {
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
enum Says {
    Succeeded,
    Failed,
    NotFound,
    /// Still at work, a bare 404, an error: nothing is decided.
    Nothing,
}

/// What came back for a keyed replay (SPEC §16), from a provider that deduplicates by the key:
/// one that did the job's work answers what it stored, and does nothing again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Again {
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
enum ReplayGot {
    Completed(Outcome),
    Failed,
    RetriesLater,
    Flagged,
    TooEarly,
}

/// A bulk operation's action (SPEC §16 "Many at once").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BulkDo {
    Resolve(Verdict),
    Cancel,
    /// At this provider, or where each job's last attempt ran.
    Retry(Option<Prov>),
}

/// A bulk operation as a person asks it: the action and the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BulkAsk {
    action: BulkDo,
    status: Option<JobStatus>,
    provider: Option<Prov>,
}

impl BulkAsk {
    /// As the engine puts it before taking its fingerprint: a resolve filters unknown jobs.
    fn normal(self) -> BulkAsk {
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

/// A job, named in a schedule by its key, so a step keeps its meaning when shrinking drops
/// the steps around it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct JobRef(usize);

impl std::fmt::Debug for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(KEYS[self.0].name)
    }
}

/// An attempt, named by its job's key and its number.
#[derive(Clone, Copy, PartialEq, Eq)]
struct AttemptRef {
    key: usize,
    number: u32,
}

impl std::fmt::Debug for AttemptRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", KEYS[self.key].name, self.number)
    }
}

/// A step as the model works on it: jobs and attempts by their index in creation order.
type Act = Op<usize, usize>;

/// One step of a schedule.
#[derive(Clone, Debug)]
enum Op<J = JobRef, A = AttemptRef> {
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
    /// The clock passes every lease nobody renews and every backoff.
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
    /// provider's retention of a key. Only the ledger's `sent_at` moves.
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
        })
    }
}

// ---------------------------------------------------------------------------------------
// The reference model: what the ledger must hold after each step, and what each call returns.

#[derive(Clone, Debug)]
struct MJob {
    key: usize,
    variant: u8,
    status: JobStatus,
    version: u32,
    completed_by: Option<usize>,
    result: Option<Value>,
    flagged: bool,
    attempts: Vec<usize>,
    /// A person's explicit decisions that may send it again: resolving an attempt as failed or
    /// abandoned (with or without `retry_on`), and retrying the job.
    decisions: usize,
    /// A backoff beyond the next `TimePasses`.
    waiting: bool,
    /// The reference keyed provider's memory of the job's key (its id): the hour it first saw
    /// it, and the attempt whose request did the work under it. A first send or retry under
    /// the key is assumed to reach it within the retention; only a replay may come later.
    key_seen: Option<u32>,
    key_done: Option<usize>,
    /// How often the keyed provider did the job's work: rule 10 holds it to one.
    keyed_work: usize,
}

/// An executor's connection for an attempt it sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Channel {
    Idle,
    Open,
    /// Past the soft timeout, before the hard deadline.
    Late,
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Holder {
    exec: Exec,
    life: u32,
}

#[derive(Clone, Debug)]
struct MAttempt {
    job: usize,
    number: u32,
    provider: Prov,
    state: AttemptState,
    job_version: u32,
    error: Option<&'static str>,
    flagged: bool,
    /// How often `mark_sent` returned Ok for it.
    sends: usize,
    holder: Option<Holder>,
    channel: Channel,
    /// Its lease has run out (a zero lease, or a crashed holder and `TimePasses`).
    lapsed: bool,
    /// Whether the provider did the work, once anything has shown it.
    work: Option<bool>,
    /// The work was answered and judged invalid (an AI provider's `invalid_answer`, or a
    /// `contract_violation`). SPEC §6-§7 retry after these as after a refusal, so rule 4 does
    /// not count them. An `http` provider's unreadable 2xx is not judged: it is `unknown`.
    judged: bool,
    ever_unknown: bool,
    /// The model's hour when it was sent.
    sent_hour: Option<u32>,
    /// Replays that reached its provider (each a `replayed` event).
    replays: usize,
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
            ),
            _ => false,
        }
    }

    /// A send that may have had an effect at the provider.
    fn effect(&self, undecided_counts: bool) -> bool {
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
enum Expect {
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
}

#[derive(Clone, Debug, PartialEq)]
enum Claimed {
    Attempt(usize),
    Failed(String),
    Skipped,
}

/// Per case, how strongly each kind of step is favoured (swarm testing): 0, 1 or 3 times its
/// usual weight, so a case that never cancels, say, goes deeper into everything else.
#[derive(Clone, Copy, Debug)]
enum Dial {
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
}

const DIALS: usize = 13;

/// A bulk operation in the model: what was asked, and its fixed set of jobs, each with its
/// outcome once decided (`changed`, or the code it was skipped with).
#[derive(Clone, Debug)]
struct MBulk {
    ask: BulkAsk,
    items: Vec<(usize, Option<String>)>,
}

#[derive(Clone, Debug)]
struct Model {
    /// The case's dials, by `Dial`.
    swarm: [u32; DIALS],
    /// A reply this case favours, by index in `Reply::ALL`.
    favoured: usize,
    jobs: Vec<MJob>,
    attempts: Vec<MAttempt>,
    present: [bool; 4],
    /// Whether the provider's last check of [`CONTRACT`] passed and is current.
    validated: [bool; 4],
    lives: [u32; 3],
    /// The model's clock, in hours: only `Age` moves it.
    hour: u32,
    /// The bulk operations started, by slot.
    bulks: [Option<MBulk>; BULK_SLOTS],
    /// The answer a replay's 2xx carried, for the system under test to complete with.
    replay_answer: Value,
    expect: Expect,
    /// What a step reached that is worth counting (see `tally`).
    note: &'static str,
}

/// A step either commits what it did, or is refused and leaves the ledger as it was.
type Step = Result<Expect, Expect>;

const INVALID: Expect = Expect::Refused("invalid_transition");

impl Model {
    fn new(swarm: [u32; DIALS], favoured: usize, validated: [bool; 4]) -> Model {
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
            replay_answer: Value::Null,
            expect: Expect::Nothing,
            note: "",
        }
    }

    fn live(&self, holder: Holder) -> bool {
        self.lives[holder.exec.index()] == holder.life
    }

    /// Whether `by` in its current life waits on attempt `a` in one of `channels`.
    fn holds(&self, by: Exec, a: usize, channels: &[Channel]) -> bool {
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
        let tries: Vec<&MAttempt> = job.attempts.iter().map(|&a| &self.attempts[a]).collect();
        if tries.len() >= key.budget() {
            return Err("attempts_exhausted".into());
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

    fn fail_attempt(&mut self, a: usize, kind: &'static str, long: bool) -> Step {
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
    fn replay_passes(&self, a: usize) -> bool {
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

    fn find_job(&self, job: JobRef) -> Option<usize> {
        self.jobs.iter().position(|j| j.key == job.0)
    }

    fn find_attempt(&self, attempt: AttemptRef) -> Option<usize> {
        let j = self.find_job(JobRef(attempt.key))?;
        let i = (attempt.number as usize).checked_sub(1)?;
        self.jobs[j].attempts.get(i).copied()
    }

    /// A schedule's step by index; `None` when it names a job or attempt that does not exist.
    fn act(&self, op: &Op) -> Option<Act> {
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

    fn act_name(&self, act: &Act) -> Op {
        let (jobs, attempts) = self.names();
        act.map(|j| jobs.get(j).copied(), |a| attempts.get(a).copied())
            .expect("the model names its own jobs and attempts")
    }

    /// Whether a transition fits this state: its indices exist, its executor holds the
    /// connection, and it does not contradict what the provider did. Checked while
    /// generating and again while shrinking.
    fn allows(&self, op: &Act) -> bool {
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
    fn step(&mut self, op: &Act) {
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
                if self.jobs[job].status != JobStatus::Queued || self.jobs[job].waiting {
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
                let holder = Holder {
                    exec: by,
                    life: self.lives[by.index()],
                };
                let hour = self.hour;
                let sent = &mut self.attempts[attempt];
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
            Op::Bulk { slot, ask, run } => self.bulk(slot, ask, run),
        }
    }

    /// The drain's next step, faults off: answers and lookups say it worked, leases lapse and
    /// backoffs end, and every queued job is claimed and sent. `None` when nothing is left.
    fn drain_step(&self) -> Option<Act> {
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

struct LedgerModel;

impl ReferenceStateMachine for LedgerModel {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        let dial = prop_oneof![Just(0u32), Just(1), Just(3)];
        // Each case starts with some providers validated for the contract.
        let validated = proptest::array::uniform4(proptest::bool::weighted(0.6));
        (
            proptest::array::uniform13(dial),
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
        arms.retain(|(weight, _)| *weight > 0);
        Union::new_weighted(arms).boxed()
    }
}

// ---------------------------------------------------------------------------------------
// The system under test: the engine on a real ledger, driven as the executors and the person
// drive it.

struct Sut {
    rt: tokio::runtime::Runtime,
    ledger: Ledger,
}

struct Ledger {
    _dir: tempfile::TempDir,
    /// The file's path or the database's URL.
    location: String,
    /// E1's, E2's, E3's and the person's engines: four processes on one ledger.
    engines: Vec<Engine>,
    /// A plain connection to the ledger, for counting rows and moving the clock.
    raw: Raw,
    jobs: Vec<String>,
    attempts: Vec<String>,
    /// How often `mark_sent` returned Ok, by attempt.
    sent: HashMap<usize, usize>,
    /// Each succeeded job's winner and result, as first seen.
    settled: RefCell<HashMap<usize, (String, Option<Value>)>>,
    /// The bulk operations' ids, by slot.
    bulk_ids: [Option<String>; BULK_SLOTS],
    step: usize,
    op: String,
    /// The case's schedule is over; the drain's steps follow.
    draining: bool,
}

const PERSON: usize = 3;

impl Ledger {
    async fn new() -> Ledger {
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
        }
    }

    fn ctx(&self) -> String {
        let phase = if self.draining { "drain " } else { "" };
        format!("{phase}step {} ({})", self.step, self.op)
    }

    fn person(&self) -> &Engine {
        &self.engines[PERSON]
    }

    fn job_index(&self, id: &str) -> usize {
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
    fn refusal(&self, e: Error) -> Expect {
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

    fn done<T>(&self, r: Result<T, Error>) -> Expect {
        match r {
            Ok(_) => Expect::Ok,
            Err(e) => self.refusal(e),
        }
    }

    async fn run(&mut self, m: &Model, op: &Op) -> Expect {
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
                match engine.mark_sent(id, &executor, lease).await {
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
                let end_backoffs = Sql {
                    sqlite: "UPDATE jobs SET not_before = $1 WHERE not_before IS NOT NULL",
                    postgres: "UPDATE jobs SET not_before = CAST($1 AS timestamptz)
                               WHERE not_before IS NOT NULL",
                };
                self.raw
                    .execute(end_backoffs, &[PAST])
                    .await
                    .expect("backoffs end");
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
                let age = Sql {
                    sqlite: "UPDATE attempts
                             SET sent_at = strftime('%Y-%m-%dT%H:%M:%fZ', sent_at, '-' || $1 || ' hours')
                             WHERE sent_at IS NOT NULL",
                    postgres: "UPDATE attempts SET sent_at = sent_at - CAST($1 || ' hours' AS interval)
                               WHERE sent_at IS NOT NULL",
                };
                self.raw
                    .execute(age, &[&hours.to_string()])
                    .await
                    .expect("hours pass");
                Expect::Nothing
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
                let wait = Some(onejob_engine::executor::REPLAY_FIRST_WAIT);
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
    async fn validate(&self, p: Prov) -> u64 {
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

    /// After every step: the ledger agrees with the model, and keeps every rule on its own.
    async fn check(&self, m: &Model) {
        let ctx = self.ctx();
        assert_eq!(self.jobs.len(), m.jobs.len(), "{ctx}: jobs known");
        assert_eq!(
            self.attempts.len(),
            m.attempts.len(),
            "{ctx}: attempts known"
        );
        let counts =
            Sql::both("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM attempts)");
        let (jobs, attempts): (i64, i64) = self.raw.fetch_one(counts, &[]).await.expect("count");
        assert_eq!(jobs as usize, m.jobs.len(), "{ctx}: job rows");
        assert_eq!(attempts as usize, m.attempts.len(), "{ctx}: attempt rows");
        let mut details = Vec::new();
        for (j, mj) in m.jobs.iter().enumerate() {
            let d = self
                .person()
                .job(OWNER, &self.jobs[j])
                .await
                .unwrap_or_else(|e| panic!("{ctx}: job {j}: {e:?}"));
            let ctx = format!("{ctx}: job {j} ({})", KEYS[mj.key].name);
            // Rule 10: no provider does a job's work twice. The keyed provider deduplicates by
            // the key, so it does it at most once, across first sends, retries and replays;
            // the providers without keys are held by rule 4.
            assert!(
                mj.keyed_work <= 1,
                "{ctx}: rule 10: the keyed provider did the job's work {} times",
                mj.keyed_work
            );
            self.agrees(m, mj, &d, &ctx);
            ledger_rules(&d, &ctx);
            // Rule 5: a result, once claimed, never changes.
            if let Some(winner) = &d.job.completed_by {
                let now = (winner.clone(), d.job.result.clone());
                let mut settled = self.settled.borrow_mut();
                let first = settled.entry(j).or_insert_with(|| now.clone());
                assert_eq!(*first, now, "{ctx}: rule 5: the result changed");
            } else {
                assert!(
                    !self.settled.borrow().contains_key(&j),
                    "{ctx}: rule 5: the result vanished"
                );
            }
            details.push(d);
        }
        self.bulk_rules(m, &details, &ctx).await;
        effects(m, false, &ctx);
    }

    /// The ledger as the model says it must be.
    fn agrees(&self, m: &Model, mj: &MJob, d: &JobDetail, ctx: &str) {
        let job = &d.job;
        let winner = mj.completed_by.map(|a| self.attempts[a].clone());
        let want = (
            mj.status,
            mj.version,
            &winner,
            &mj.result,
            mj.flagged,
            mj.attempts.len(),
        );
        let got = (
            job.status,
            job.version,
            &job.completed_by,
            &job.result,
            job.flagged_for_review,
            d.attempts.len(),
        );
        assert_eq!(
            got, want,
            "{ctx}: (status, version, completed_by, result, flagged, attempts) differ from the model (left: the ledger, right: the model)"
        );
        for (&a, got) in mj.attempts.iter().zip(&d.attempts) {
            let ma = &m.attempts[a];
            let want = (
                self.attempts[a].as_str(),
                ma.number,
                ma.provider.name(),
                ma.state,
                ma.job_version,
                ma.error,
                ma.flagged,
                ma.sends > 0,
            );
            let got = (
                got.id.as_str(),
                got.number,
                got.provider.as_str(),
                got.state,
                got.job_version,
                got.error.as_ref().map(|e| e.kind.as_str()),
                got.flagged_for_review,
                got.sent_at.is_some(),
            );
            assert_eq!(
                got, want,
                "{ctx}: attempt {a}: (id, number, provider, state, job_version, error, flagged, sent) differ from the model (left: the ledger, right: the model)"
            );
            let replays = d
                .events
                .iter()
                .filter(|e| {
                    e.kind == "replayed" && e.attempt_id.as_deref() == Some(&self.attempts[a])
                })
                .count();
            assert_eq!(
                replays, ma.replays,
                "{ctx}: attempt {a}: its replayed events (left) and the replays that reached its provider (right)"
            );
        }
    }

    /// Rule 11: a bulk operation's set is the jobs the model says matched when it started,
    /// each decided once: its item's outcome is the model's, and the events naming the
    /// operation change a job at most once, exactly when the item says it changed.
    async fn bulk_rules(&self, m: &Model, details: &[JobDetail], ctx: &str) {
        for (slot, b) in m.bulks.iter().enumerate() {
            let (Some(b), Some(id)) = (b, &self.bulk_ids[slot]) else {
                assert!(
                    b.is_none() || self.bulk_ids[slot].is_none(),
                    "{ctx}: bulk slot {slot}: started in the model and not in the ledger, or the reverse"
                );
                continue;
            };
            let items = Sql {
                sqlite: "SELECT group_concat(job_id || '=' || coalesce(outcome, '-'), ',')
                         FROM (SELECT job_id, outcome FROM bulk_items
                               WHERE operation_id = $1 ORDER BY job_id)",
                postgres: "SELECT string_agg(job_id::text || '=' || coalesce(outcome, '-'), ','
                                             ORDER BY job_id)
                           FROM bulk_items WHERE operation_id = CAST($1 AS uuid)",
            };
            let (listed,): (Option<String>,) =
                self.raw.fetch_one(items, &[id]).await.expect("bulk items");
            let mut got: Vec<(usize, Option<String>)> = listed
                .unwrap_or_default()
                .split(',')
                .filter(|item| !item.is_empty())
                .map(|item| {
                    let (job, outcome) = item.split_once('=').expect("job=outcome");
                    let outcome = (outcome != "-").then(|| outcome.to_owned());
                    (self.job_index(job), outcome)
                })
                .collect();
            got.sort();
            assert_eq!(
                got, b.items,
                "{ctx}: rule 11: bulk slot {slot}: its jobs and their outcomes (left: the ledger, right: the model)"
            );
            let change = match b.ask.action {
                BulkDo::Resolve(_) => "resolved_by_person",
                BulkDo::Cancel => "job_cancelled",
                BulkDo::Retry(_) => "attempt_created",
            };
            for (j, d) in details.iter().enumerate() {
                let changes = d
                    .events
                    .iter()
                    .filter(|e| e.kind == change && e.detail["bulk"].as_str() == Some(id))
                    .count();
                assert!(
                    changes <= 1,
                    "{ctx}: rule 11: bulk slot {slot} changed job {j} {changes} times"
                );
                let changed = b
                    .items
                    .iter()
                    .any(|(i, o)| *i == j && o.as_deref() == Some("changed"));
                assert_eq!(
                    changes == 1,
                    changed,
                    "{ctx}: rule 11: bulk slot {slot}, job {j}: an event naming it (left) and its item changed (right)"
                );
            }
        }
    }
}

/// SPEC §4's transitions, pair by pair.
const ALLOWED: [(AttemptState, AttemptState); 14] = {
    use AttemptState::*;
    [
        (Pending, InFlight),
        (Pending, Failed),
        (Pending, Abandoned),
        (InFlight, Succeeded),
        (InFlight, Lost),
        (InFlight, Failed),
        (InFlight, Unknown),
        (InFlight, Abandoned),
        (Unknown, Succeeded),
        (Unknown, Lost),
        (Unknown, Failed),
        (Unknown, Abandoned),
        (Abandoned, Succeeded),
        (Abandoned, Lost),
    ]
};

/// The rules a ledger keeps whatever happened, read from one job's rows and history.
fn ledger_rules(d: &JobDetail, ctx: &str) {
    use AttemptState::*;
    let job = &d.job;
    // Rule 1, rule 7, and the job's status agreeing with its attempts.
    let open: Vec<&Attempt> = d.attempts.iter().filter(|a| a.state.is_open()).collect();
    assert!(
        open.len() <= 1,
        "{ctx}: rule 1: {} open attempts",
        open.len()
    );
    let open = open.first().map(|a| a.state);
    let agrees = match job.status {
        JobStatus::Running => matches!(open, Some(Pending | InFlight)),
        JobStatus::Unknown => open == Some(Unknown),
        JobStatus::Queued | JobStatus::Succeeded | JobStatus::Failed | JobStatus::Cancelled => {
            open.is_none()
        }
    };
    assert!(
        agrees,
        "{ctx}: rule 7: the job is {} with open attempt {open:?}",
        job.status
    );
    assert_eq!(
        job.completed_by.is_some(),
        job.status == JobStatus::Succeeded,
        "{ctx}: completed_by and status"
    );
    // Rules 2 and 6: each attempt's history replays to its state, one send at most.
    for a in &d.attempts {
        let mut state: Option<AttemptState> = None;
        let mut sent = 0;
        for e in d
            .events
            .iter()
            .filter(|e| e.attempt_id.as_deref() == Some(&a.id))
        {
            let next = match e.kind.as_str() {
                "attempt_created" => Some(Pending),
                "attempt_sent" => {
                    sent += 1;
                    Some(InFlight)
                }
                "attempt_unknown" | "recovered_unknown" => Some(Unknown),
                "attempt_failed" => Some(Failed),
                "attempt_abandoned" => Some(Abandoned),
                "attempt_succeeded" => Some(Succeeded),
                "race_lost" => Some(Lost),
                "resolved_by_person" => match e.detail["as"].as_str() {
                    Some("succeeded") => Some(Succeeded),
                    Some("failed") => Some(Failed),
                    Some("abandoned") => Some(Abandoned),
                    other => panic!("{ctx}: resolved_by_person as {other:?}"),
                },
                // A late answer is dropped: an attempt still waiting on it is lost, one whose
                // outcome is recorded keeps it, and so does an abandoned one whose work only a
                // status lookup found (it moves only by the provider's own answer).
                "late_answer_flagged" => match state {
                    Some(Abandoned) if e.detail["via"] == "reconciliation" => None,
                    Some(Pending | InFlight | Unknown | Abandoned) => Some(Lost),
                    _ => None,
                },
                // A replay that settles it writes its outcome's event beside this one.
                "backoff_set" | "replayed" | "looked_up" => None,
                other => panic!("{ctx}: attempt {}: unexpected event {other}", a.id),
            };
            if let Some(next) = next {
                if let Some(from) = state {
                    assert!(
                        ALLOWED.contains(&(from, next)),
                        "{ctx}: attempt {}: the history moves {from} -> {next}",
                        a.id
                    );
                } else {
                    assert_eq!(next, Pending, "{ctx}: attempt {}: created first", a.id);
                }
                state = Some(next);
            }
        }
        assert!(
            sent <= 1,
            "{ctx}: rule 2: attempt {} sent {sent} times",
            a.id
        );
        assert_eq!(
            sent == 1,
            a.sent_at.is_some(),
            "{ctx}: attempt {}: sent_at and its event",
            a.id
        );
        assert_eq!(
            state,
            Some(a.state),
            "{ctx}: rule 6: attempt {} is {} but its history says {state:?}",
            a.id,
            a.state
        );
    }
    // Rule 9 (SPEC §7): once an attempt may have done the work at its provider, the job never
    // reaches another provider by itself; only a person's explicit attempt may move it.
    let mut pinned: Option<&str> = None;
    let mut previous: Option<&str> = None;
    for a in &d.attempts {
        let explicit = d.events.iter().any(|e| {
            e.kind == "attempt_created"
                && e.attempt_id.as_deref() == Some(a.id.as_str())
                && e.detail["explicit"] == json!(true)
        });
        if let (Some(at), false) = (pinned, explicit) {
            assert_eq!(
                Some(a.provider.as_str()),
                previous,
                "{ctx}: rule 9: attempt {} went to {} by itself after an outcome at {at} that forbids failover",
                a.number,
                a.provider
            );
        }
        let forbids = match (a.state, &a.error) {
            (Abandoned, _) => a.sent_at.is_some(),
            (_, Some(error)) => !error.failure().permits_failover(),
            _ => false,
        };
        if forbids {
            pinned = Some(a.provider.as_str());
        }
        previous = Some(a.provider.as_str());
    }
    // Rule 6 for the job, and its version counting the writes that decided its outcome.
    let count = |kind: &str| d.events.iter().filter(|e| e.kind == kind).count();
    let last_decision = d
        .events
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e.kind.as_str(),
                "job_failed" | "job_retried" | "job_cancelled"
            )
        })
        .map(|e| e.kind.as_str());
    match job.status {
        JobStatus::Cancelled => assert_eq!(last_decision, Some("job_cancelled"), "{ctx}: rule 6"),
        JobStatus::Failed => assert_eq!(last_decision, Some("job_failed"), "{ctx}: rule 6"),
        JobStatus::Succeeded => {
            let winner = job.completed_by.as_deref();
            let recorded = d.events.iter().any(|e| {
                e.attempt_id.as_deref() == winner
                    && (e.kind == "attempt_succeeded"
                        || (e.kind == "resolved_by_person" && e.detail["as"] == "succeeded"))
            });
            assert!(recorded, "{ctx}: rule 6: no event for the winning attempt");
        }
        _ => {}
    }
    let decided = count("job_failed")
        + count("job_cancelled")
        + count("job_retried")
        + usize::from(job.completed_by.is_some());
    assert_eq!(
        job.version as usize, decided,
        "{ctx}: the version counts the writes that decided the outcome"
    );
    assert_eq!(count("submitted"), 1, "{ctx}: one submitted event");
}

/// Rule 4: a provider that does not honour the key is sent each job once, plus once per
/// person's decision on it — counting only sends that may have had an effect there.
/// `undecided_counts`: a send whose effect is still unknown counts (at the end of a case).
fn effects(m: &Model, undecided_counts: bool, ctx: &str) {
    for (j, job) in m.jobs.iter().enumerate() {
        for p in Prov::ALL.into_iter().filter(|p| !p.honours_key()) {
            let sends = job
                .attempts
                .iter()
                .filter(|&&a| m.attempts[a].provider == p && m.attempts[a].effect(undecided_counts))
                .count();
            assert!(
                sends <= 1 + job.decisions,
                "{ctx}: rule 4: job {j} reached {} {sends} times with effect, after {} decisions by a person",
                p.name(),
                job.decisions
            );
        }
    }
}

struct LedgerTest;

impl StateMachineTest for LedgerTest {
    type SystemUnderTest = Sut;
    type Reference = LedgerModel;

    fn init_test(m: &Model) -> Sut {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let ledger = rt.block_on(async {
            let ledger = Ledger::new().await;
            for p in Prov::ALL.into_iter().filter(|p| m.validated[p.index()]) {
                assert_eq!(ledger.validate(p).await, 1, "{p:?} validated at the start");
            }
            ledger
        });
        Sut { rt, ledger }
    }

    fn apply(mut sut: Sut, m: &Model, op: Op) -> Sut {
        sut.ledger.step += 1;
        sut.ledger.op = format!("{op:?}");
        let got = sut.rt.block_on(sut.ledger.run(m, &op));
        tally(&op, &got, m.note);
        assert_eq!(
            got,
            m.expect,
            "{}: the engine's answer (left) differs from the model's (right)",
            sut.ledger.ctx()
        );
        sut
    }

    fn check_invariants(sut: &Sut, m: &Model) {
        sut.rt.block_on(sut.ledger.check(m));
    }

    fn teardown(mut sut: Sut, mut m: Model) {
        // Rule 8: faults off, every job is settled within a bounded number of steps.
        let mut steps = 0;
        while let Some(act) = m.drain_step() {
            let op = m.act_name(&act);
            steps += 1;
            assert!(
                steps <= DRAIN_STEPS,
                "the drain did not settle every job in {DRAIN_STEPS} steps; next {op:?}; jobs {:?}",
                m.jobs.iter().map(|j| j.status).collect::<Vec<_>>()
            );
            m = LedgerModel::apply(m, &op);
            sut.ledger.draining = true;
            sut = Self::apply(sut, &m, op);
            Self::check_invariants(&sut, &m);
        }
        for (j, job) in m.jobs.iter().enumerate() {
            assert!(
                matches!(
                    job.status,
                    JobStatus::Succeeded | JobStatus::Failed | JobStatus::Cancelled
                ),
                "rule 8: after the drain job {j} is {}",
                job.status
            );
        }
        effects(&m, true, "at the end");
        let Sut { rt, ledger } = sut;
        rt.block_on(async {
            for engine in &ledger.engines {
                engine.close().await;
            }
            ledger.raw.close().await;
        });
    }
}

// ---------------------------------------------------------------------------------------
// The runner: one proptest runner per case, each from its own seed, so one seed replays one
// case and its shrinking exactly.

thread_local! {
    /// How often each kind of step met each kind of answer, shown after a run (`--nocapture`)
    /// to see what the cases reached.
    static TALLY: RefCell<std::collections::BTreeMap<String, usize>> = RefCell::default();
    /// Set while a case runs: proptest catches each failing run while it shrinks, and their
    /// panic messages would bury the one report that matters.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

fn tally(op: &Op, got: &Expect, note: &str) {
    let op = format!("{op:?}");
    let op = op.split([' ', '(']).next().unwrap_or_default();
    let got = format!("{got:?}");
    let got = match got.split_once(['(', ' ']) {
        Some(("Bulk", _)) => match got {
            _ if got.contains("BulkConflict") => "BulkConflict".to_owned(),
            _ => format!(
                "Bulk(replayed {}, done {})",
                got.contains("replayed: true"),
                got.contains("done: true")
            ),
        },
        Some(("Replayed", rest)) => format!("Replayed({}", rest),
        Some(("Claimed", rest)) if rest.starts_with("Failed") => {
            format!("Claimed({}", rest)
        }
        Some((shape, rest)) if shape == "Claimed" || shape == "Completed" || shape == "Refused" => {
            format!(
                "{shape}({})",
                rest.split(['(', ')']).next().unwrap_or_default()
            )
        }
        Some((shape, _)) => shape.to_owned(),
        None => got.split(' ').next().unwrap_or_default().to_owned(),
    };
    TALLY.with(|t| {
        let mut t = t.borrow_mut();
        *t.entry(format!("{op} -> {got}")).or_default() += 1;
        if !note.is_empty() {
            *t.entry(format!("~ {note}")).or_default() += 1;
        }
    });
}

fn quiet_panics_while_shrinking() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs the case of `seed`; on failure, its shortest schedule and why it failed.
fn run_case(seed: u64) -> Result<(), String> {
    let config = Config {
        cases: 1,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 2048,
        max_local_rejects: 1 << 20,
        max_global_rejects: 1 << 20,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config.clone());
    let strategy = LedgerModel::sequential_strategy(STEPS);
    QUIET.with(|q| q.set(true));
    let result = runner.run(&strategy, |(initial, transitions, seen)| {
        LedgerTest::test_sequential(config.clone(), initial, transitions, seen);
        Ok(())
    });
    let report = match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(why, (initial, schedule, _))) => {
            let (schedule, why) = shorten(&config, initial, schedule, why.to_string());
            let steps: Vec<String> = schedule
                .iter()
                .enumerate()
                .map(|(i, op)| format!("  {:>3}. {op:?}", i + 1))
                .collect();
            Err(format!(
                "shortest schedule ({} steps, then the drain):\n{}\nwhy: {why}",
                steps.len(),
                steps.join("\n")
            ))
        }
        Err(TestError::Abort(why)) => Err(format!("aborted: {why}")),
    };
    QUIET.with(|q| q.set(false));
    report
}

/// Drops any step the failure does not need, until none can go. proptest's shrinking deletes
/// in one pass from the back, so a step that an earlier one (deleted later) made necessary
/// stays; this finishes the job.
fn shorten(
    config: &Config,
    initial: Model,
    mut schedule: Vec<Op>,
    mut why: String,
) -> (Vec<Op>, String) {
    let fits = |ops: &[Op]| {
        let mut m = initial.clone();
        ops.iter().all(|op| {
            let fits = LedgerModel::preconditions(&m, op);
            m = LedgerModel::apply(m.clone(), op);
            fits
        })
    };
    let mut i = 0;
    while i < schedule.len() {
        let mut shorter = schedule.clone();
        shorter.remove(i);
        let failed = fits(&shorter)
            .then(|| {
                let run = shorter.clone();
                let (config, initial) = (config.clone(), initial.clone());
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                    LedgerTest::test_sequential(config, initial, run, None)
                }))
                .err()
            })
            .flatten();
        match failed {
            Some(panic) => {
                why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or(why);
                schedule = shorter;
                i = 0;
            }
            None => i += 1,
        }
    }
    (schedule, why)
}

#[test]
fn random_interleavings_of_three_executors_and_a_person_keep_every_rule() {
    quiet_panics_while_shrinking();
    let replay = std::env::var("ONEJOB_MODEL_SEED").ok().map(|s| {
        s.trim()
            .parse::<u64>()
            .expect("ONEJOB_MODEL_SEED is a case's seed, a number")
    });
    let cases = std::env::var("ONEJOB_MODEL_CASES")
        .ok()
        .map(|s| {
            s.trim()
                .parse::<u64>()
                .expect("ONEJOB_MODEL_CASES is a number")
        })
        .unwrap_or(DEFAULT_CASES);
    let (first, cases) = match replay {
        Some(seed) => (seed, 1),
        None => (rand::random::<u64>(), cases),
    };
    let started = Instant::now();
    for i in 0..cases {
        let seed = first.wrapping_add(i);
        if let Err(report) = run_case(seed) {
            panic!(
                "\nthe ledger broke a rule in case {} of {cases}, seed {seed}\n{report}\n\nreplay: ONEJOB_MODEL_SEED={seed} cargo test -p onejob-engine --test model\n",
                i + 1
            );
        }
    }
    eprintln!(
        "model: {cases} cases from seed {first} passed in {:.1?}",
        started.elapsed()
    );
    TALLY.with(|t| {
        for (what, n) in t.borrow().iter() {
            eprintln!("  {n:>7}  {what}");
        }
    });
}
