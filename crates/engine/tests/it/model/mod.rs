//! A model-based test of the ledger: three executors and a person act on one ledger (a SQLite
//! file, or a PostgreSQL database on the PostgreSQL pass) in random interleavings, and after
//! every step the ledger must agree with a reference model of SPEC §2–§7 and §17 and keep the
//! rules that make "exactly one result per intent" and "no budget is ever passed".
//!
//! `cargo test -p onejob-engine --test it model::` runs `ONEJOB_MODEL_CASES` cases (128 unless
//! set), each from its own seed. A failure is shrunk to its shortest schedule and printed with
//! its seed; `ONEJOB_MODEL_SEED=<seed> cargo test -p onejob-engine --test it model::` replays
//! exactly it.
//!
//! How the world is played (no HTTP; the schedule chooses every outcome):
//! - executors E1, E2 and E3 claim, send and settle attempts as `executor/send/` does, each on
//!   its own `Engine` on the ledger, as two processes would; the person uses a third one;
//! - a provider's reply to a sent attempt is one of SPEC §6's outcomes, classified by the
//!   provider's kind the way the HTTP client classifies it. The model also keeps what the
//!   provider really did (`work`), so later replies and status lookups never contradict it;
//! - time: a lease is an hour, or zero for an executor whose lease will lapse; a backoff is
//!   none, or a `Retry-After` longer than the hour it is capped at. `TimePasses` moves the
//!   clock past every lease nobody renews (its executor crashed) and past every backoff but a
//!   budget's, by writing only those two time columns: the test moves the clock, never the
//!   ledger;
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
//!   the `sent_at` of unpriced attempts back by hours, past hard deadlines and retentions;
//! - bulk operations (SPEC §16 "Many at once"): the person starts one under a key (its set of
//!   jobs fixed), and runs it, or repeats the key to finish what is left, between the
//!   executors' steps;
//! - money (SPEC §17): `plain`, `spare` and `ai` have prices (`priced.rs`), so each send
//!   there is charged its worst case, which the model knows exactly. The person sets budgets
//!   (a few requests' worth, for one provider or all, one owner or all, a day or a month) and
//!   removes them. A send whose worst case would pass a budget is kept back: the attempt fails
//!   as `budget_reached` and its job waits, `queued`, for the next period, which in the model
//!   comes only by `PeriodEnds` (it moves the priced attempts' `sent_at` back past any day or
//!   month, and ends those waits; `Age` and `TimePasses` leave both alone). Should the real
//!   UTC day end during a case, the case runs once more.
//!
//! Beside agreeing with the model, rule 10: no provider does a job's work twice (the keyed
//! provider at most once, across first sends, retries and replays; the others as rule 4
//! says); rule 11: every job in a bulk operation is decided once, and the events naming the
//! operation change it at most once; rule 12: after every step, what each budget holds in its
//! period (attempts in flight or `unknown` at their worst case, and what the ended ones
//! spent, read from the ledger) is the model's sum and never more than its limit (a budget set
//! below what it held already holds no more after any step than before).
//!
//! The parts: `schedule.rs`, the steps a case is made of and how they are drawn;
//! `reference.rs`, the reference model, what each step must do to the ledger and return;
//! `world.rs`, the providers, executors and person, and how they drive the engine on a real
//! ledger; `priced.rs`, prices and budgets in the model and the world; `rules.rs`, what is
//! checked after every step; here, how a case runs.

mod priced;
mod reference;
mod rules;
mod schedule;
mod world;

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use onejob_engine::JobStatus;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

use reference::{Expect, Model};
use rules::effects;
use schedule::{LedgerModel, Op};
use world::{Ledger, Prov, Sut};

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

/// A case as proptest-state-machine runs it: each step applied to the model and to the ledger,
/// their answers compared, the rules checked (`rules.rs`), and at the end the drain.
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
        // What the budgets hold is summed over the ledger's UTC day or month: should the real
        // one end during the case, its sends fall out of the period as no step said.
        let day = || chrono::Utc::now().date_naive();
        let began = day();
        let mut outcome = run_case(seed);
        if outcome.is_err() && day() != began {
            outcome = run_case(seed);
        }
        if let Err(report) = outcome {
            panic!(
                "\nthe ledger broke a rule in case {} of {cases}, seed {seed}\n{report}\n\nreplay: ONEJOB_MODEL_SEED={seed} cargo test -p onejob-engine --test it model::\n",
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
