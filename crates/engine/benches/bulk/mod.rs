//! `bulk resolve` of many `unknown` jobs (SPEC §16): how long the operation takes, the
//! process's resident memory while it runs beside before it, and the latency of submits made
//! while it runs beside the same submits alone, in the same run.
//!
//! Submits come in one of two loads. `Paced`: one every 10 ms (100 a second), as a script or a
//! service submits while a person settles an outage; the aim's measure (a submit made while the
//! operation runs waits at most for one job of it). `Flood`: the next submit as soon as the last
//! is answered, the most a caller can ask of the one SQLite writer: the operation and the
//! submits then share the writer job by job, so the operation takes longer by the submits'
//! share, printed for what it costs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{
    AttemptError, BulkAction, BulkFilter, BulkRequest, BulkStarted, Engine, Verdict,
};

use crate::common::{engine_with_provider, intent, ms, pct, OWNER};

/// Submits timed alone in one round: half before the operation, half after, so that a swing
/// of the disk's fsync time over the minutes of a run weighs on both sides of the ratio alike;
/// as many as a 10,000-job operation meets at one every 10 ms, so the two p99s are read from
/// samples of a like size.
const SUBMITS: usize = 500;

/// How submits arrive beside the operation (and alone).
#[derive(Clone, Copy)]
pub enum Load {
    /// One every this long.
    Paced(Duration),
    /// The next as soon as the last is answered.
    Flood,
}

impl Load {
    fn name(self) -> String {
        match self {
            Load::Paced(every) => format!("a submit every {} ms", every.as_millis()),
            Load::Flood => "submits back to back".to_owned(),
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Load::Paced(_) => "paced",
            Load::Flood => "flood",
        }
    }

    /// Waits until the next submit is due.
    async fn next(self, ticks: &mut Option<tokio::time::Interval>) {
        if let (Load::Paced(_), Some(ticks)) = (self, ticks) {
            ticks.tick().await;
        }
    }

    fn ticks(self) -> Option<tokio::time::Interval> {
        match self {
            Load::Paced(every) => {
                let mut ticks = tokio::time::interval(every);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                Some(ticks)
            }
            Load::Flood => None,
        }
    }

    /// Times `count` submits with the keys from `*next_key` on, arriving as this load says.
    async fn submits(
        self,
        engine: &Engine,
        next_key: &mut usize,
        count: usize,
    ) -> Result<Vec<Duration>, onejob_engine::Error> {
        let mut ticks = self.ticks();
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            self.next(&mut ticks).await;
            let i = *next_key;
            *next_key += 1;
            let start = Instant::now();
            engine
                .submit(OWNER, &format!("key-{i}"), &intent(i))
                .await?;
            times.push(start.elapsed());
        }
        Ok(times)
    }
}

/// What one round measured: the submit p50 and p99 alone and beside the operation.
pub struct Round {
    pub p50: (Duration, Duration),
    pub p99: (Duration, Duration),
}

impl Round {
    /// p99 beside the operation ÷ p99 alone.
    pub fn p99_ratio(&self) -> f64 {
        ms(self.p99.1) / ms(self.p99.0)
    }
}

/// Makes `n` unknown jobs, then times `bulk resolve --as abandoned` over all of them with
/// submits arriving as `load` says, `rounds` times on one ledger (each round's operation meets
/// the jobs made for it, the history of the rounds before it beside them); prints each round
/// and returns them.
pub async fn bulk_resolve(
    dir: &std::path::Path,
    n: usize,
    load: Load,
    rounds: usize,
) -> Result<Vec<Round>, Box<dyn std::error::Error>> {
    let engine = engine_with_provider(&dir.join(format!("bulk-{n}-{}.db", load.slug()))).await?;
    let mut next_key = 0;
    let mut measured = Vec::with_capacity(rounds);
    for round in 0..rounds {
        unknown_jobs(&engine, round, n).await?;
        let mut alone = load.submits(&engine, &mut next_key, SUBMITS / 2).await?;
        let (took, done, beside, before, peak) =
            beside_submits(&engine, round, load, &mut next_key).await?;
        alone.extend(load.submits(&engine, &mut next_key, SUBMITS / 2).await?);

        let op = done.operation;
        println!(
            "bulk resolve of {n} unknown jobs beside {}{}: {:.0} ms ({} changed, {} skipped; aim < 10 s on SQLite)",
            load.name(),
            if rounds > 1 { format!(", round {}", round + 1) } else { String::new() },
            ms(took),
            op.changed,
            op.skipped.len()
        );
        println!(
            "  resident memory: {before} KiB before, {peak} KiB at most while it ran (+{} KiB)",
            peak.saturating_sub(before)
        );
        let one = Round {
            p50: (pct(&alone, 50.0), pct(&beside, 50.0)),
            p99: (pct(&alone, 99.0), pct(&beside, 99.0)),
        };
        let (alone_p50, beside_p50) = (ms(one.p50.0), ms(one.p50.1));
        let (alone_p99, beside_p99) = (ms(one.p99.0), ms(one.p99.1));
        println!(
            "  submit p50 alone {alone_p50:.2} ms, beside the operation {beside_p50:.2} ms ({:.2}x)",
            beside_p50 / alone_p50
        );
        println!(
            "  submit p99 alone {alone_p99:.2} ms, beside the operation {beside_p99:.2} ms ({:.2}x; {} submits; aim <= 2x)",
            one.p99_ratio(),
            beside.len()
        );
        measured.push(one);
    }
    engine.close().await;
    Ok(measured)
}

/// Runs round `round`'s operation over every unknown job while submits arrive as `load` says;
/// (how long it took, what it did, the submits' times, resident KiB before, at most while it
/// ran).
async fn beside_submits(
    engine: &Engine,
    round: usize,
    load: Load,
    next_key: &mut usize,
) -> Result<(Duration, BulkStarted, Vec<Duration>, u64, u64), Box<dyn std::error::Error>> {
    let before = resident_kib();
    let peak = Arc::new(AtomicU64::new(before));
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, running) = (peak.clone(), running.clone());
        tokio::spawn(async move {
            while running.load(Ordering::Relaxed) {
                peak.fetch_max(resident_kib(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let submitter = {
        let engine = engine.clone();
        let running = running.clone();
        let first = *next_key;
        tokio::spawn(async move {
            let mut times = Vec::new();
            let mut i = first;
            let mut ticks = load.ticks();
            while running.load(Ordering::Relaxed) {
                load.next(&mut ticks).await;
                let start = Instant::now();
                if engine
                    .submit(OWNER, &format!("key-{i}"), &intent(i))
                    .await
                    .is_ok()
                {
                    times.push(start.elapsed());
                }
                i += 1;
            }
            (times, i)
        })
    };
    let request = BulkRequest {
        action: BulkAction::Resolve,
        filter: BulkFilter::default(),
        verdict: Some(Verdict::Abandoned),
        provider: None,
        dry_run: false,
    };
    let start = Instant::now();
    let done = engine
        .bulk(
            OWNER,
            &format!("after-the-outage-{round}"),
            &request,
            |_| {},
        )
        .await?;
    let took = start.elapsed();
    running.store(false, Ordering::Relaxed);
    let (beside, last_key) = submitter.await?;
    *next_key = last_key;
    sampler.await?;
    Ok((took, done, beside, before, peak.load(Ordering::Relaxed)))
}

/// `n` jobs of the owner, each with one attempt at `primary` left `unknown` by a soft timeout,
/// made 256 at a time so the group commits share their fsyncs.
async fn unknown_jobs(
    engine: &Engine,
    round: usize,
    n: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut made = 0;
    while made < n {
        let mut tasks = tokio::task::JoinSet::new();
        for i in made..(made + 256).min(n) {
            let engine = engine.clone();
            tasks.spawn(async move {
                let job = engine
                    .submit(OWNER, &format!("outage-{round}-{i}"), &intent(i))
                    .await?
                    .job;
                let attempt = engine.claim_attempt(&job.id, "primary").await?.attempt.id;
                engine
                    .mark_sent(&attempt, "bench", Duration::from_secs(600))
                    .await?;
                let why = AttemptError {
                    kind: "soft_timeout".into(),
                    message: "no answer in time".into(),
                };
                engine.mark_unknown(&attempt, why).await?;
                Ok::<_, onejob_engine::Error>(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        made = (made + 256).min(n);
    }
    Ok(())
}

/// This process's resident memory, in KiB (0 where /proc is not there).
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
