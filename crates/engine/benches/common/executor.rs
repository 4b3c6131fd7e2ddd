//! The executor end to end: queued jobs at an in-process sandbox, run until none is left.

use std::time::{Duration, Instant};

use onejob_engine::executor::{Executor, ExecutorOptions, DEFAULT_MAX_IN_FLIGHT};
use onejob_engine::{Engine, JobStatus, JobsQuery};
use serde_json::json;

use super::OWNER;

/// How one run went.
pub struct Run {
    pub took: Duration,
    pub succeeded: u32,
    /// Processor time the whole process used meanwhile (Linux only).
    pub cpu: Option<Duration>,
}

/// Processor time this process has used so far, user and system, from `/proc/self/stat`
/// (in clock ticks of 10 ms); `None` where there is no such file.
pub fn cpu_used() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

impl Run {
    pub fn rate(&self, n: usize) -> f64 {
        n as f64 / self.took.as_secs_f64()
    }
}

/// Adds a sandbox provider `name` answering after `latency_ms`, queues `n` jobs at it (keys
/// `<name>-<i>`), then runs one executor sending `concurrency` at once until nothing is left,
/// as `onejob worker --once --concurrency N` does.
pub async fn run_queued(
    engine: &Engine,
    name: &str,
    n: usize,
    latency_ms: u64,
    concurrency: usize,
) -> Result<Run, Box<dyn std::error::Error>> {
    run_queued_at(engine, name, n, latency_ms, concurrency, None).await
}

/// [`run_queued`] at a sandbox with `price` (SPEC §17) when given.
pub async fn run_queued_at(
    engine: &Engine,
    name: &str,
    n: usize,
    latency_ms: u64,
    concurrency: usize,
    price: Option<&serde_json::Value>,
) -> Result<Run, Box<dyn std::error::Error>> {
    let mut sandbox = json!({"name": name, "kind": "sandbox", "soft_timeout_ms": 30_000,
        "hard_timeout_ms": 60_000, "honours_idempotency_key": true,
        "dials": {"latency_ms": latency_ms, "jitter_ms": 0}});
    if let Some(price) = price {
        sandbox["price"] = price.clone();
    }
    engine.add_provider(&sandbox.to_string()).await?;
    for i in 0..n {
        let body = json!({"route": [name], "input": {"n": i}}).to_string();
        engine.submit(OWNER, &format!("{name}-{i}"), &body).await?;
    }
    let options = ExecutorOptions {
        max_in_flight: concurrency,
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(engine.clone(), options)?;
    let (start, cpu_before) = (Instant::now(), cpu_used());
    executor.run_until_idle().await?;
    let took = start.elapsed();
    let cpu = cpu_used()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let succeeded = engine
        .count_jobs(
            OWNER,
            &JobsQuery {
                status: Some(JobStatus::Succeeded),
                provider: Some(name.to_owned()),
                ..JobsQuery::default()
            },
        )
        .await?;
    Ok(Run {
        took,
        succeeded,
        cpu,
    })
}

/// The executor end to end with a budget on every job (SPEC §17) against the same without:
/// `n` jobs at an instant sandbox with a price, run by one executor until none is left, three
/// times each way, alternating, on `engine`'s ledger; the median of each is compared. Unpriced runs
/// beside them show what charging each attempt costs on its own. The budget's limit is never
/// reached: every job is sent, and each send takes the budget's row and sums what it holds.
pub async fn budgets(engine: &Engine, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    const RUNS: usize = 3;
    let concurrency = super::env_number("ONEJOB_BENCH_CONCURRENCY", DEFAULT_MAX_IN_FLIGHT);
    let price = serde_json::json!({"currency": "USD", "per_request": "0.001"});
    let (mut unpriced, mut priced, mut budgeted) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..RUNS {
        let name = format!("unpriced{round}");
        unpriced.push(run_queued_at(engine, &name, n, 0, concurrency, None).await?);
        let name = format!("priced{round}");
        priced.push(run_queued_at(engine, &name, n, 0, concurrency, Some(&price)).await?);
        let name = format!("budgeted{round}");
        let budget = serde_json::json!({"limit": "1000000", "currency": "USD", "period": "day",
            "provider": name});
        engine
            .set_budget(&format!("all-of-{name}"), &budget.to_string(), None)
            .await?;
        budgeted.push(run_queued_at(engine, &name, n, 0, concurrency, Some(&price)).await?);
    }
    let median = |runs: &mut Vec<Run>| {
        runs.sort_by_key(|r| r.took);
        runs.get(runs.len() / 2)
            .map(|r| (r.took, r.succeeded))
            .unwrap_or_default()
    };
    let (unpriced, priced, budgeted) = (
        median(&mut unpriced),
        median(&mut priced),
        median(&mut budgeted),
    );
    for (label, (took, succeeded)) in [
        ("unpriced", unpriced),
        ("priced, no budget", priced),
        ("priced, a budget on every job", budgeted),
    ] {
        println!(
            "executor end to end, {label}: {:.0} ms for {n} jobs ({succeeded} succeeded; the median of {RUNS})",
            super::ms(took)
        );
    }
    println!(
        "  with a budget / without: {:.2}x the time (aim <= 1.1x); / unpriced: {:.2}x",
        super::ratio(budgeted.0, priced.0),
        super::ratio(budgeted.0, unpriced.0)
    );
    Ok(())
}
