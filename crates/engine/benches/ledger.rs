//! The executor end to end and the Jobs list's pages, printed beside baselines measured in
//! the same run (never asserted):
//! - 2,000 queued jobs run by one executor until none is left (what `onejob worker --once`
//!   does) against a sandbox that answers at once, beside the raw durable INSERT rate;
//! - with 100,000 jobs: the first page of the Jobs list, a page 90,000 deep and the first page
//!   of a key search, beside a raw keyset `SELECT` of the same page on the same file;
//! - the executor end to end with a budget on every job against without (SPEC §17);
//! - `bulk resolve` of 10,000 unknown jobs: its time, memory, and submits beside it (`bulk/`).
//!
//! Run: `cargo bench -p onejob-engine --bench ledger` (`ONEJOB_BENCH_JOBS` and
//! `ONEJOB_BENCH_HISTORY` change the 2,000 and the 100,000, `ONEJOB_BENCH_CONCURRENCY` the
//! executor's 32 attempts at once, `ONEJOB_BENCH_BULK` the 10,000; `ONEJOB_BENCH_PARTS` picks
//! parts among `e2e pages budget bulk`, all by default). The bulk operation runs at a quarter of its
//! count first, then at the whole three times, so its memory is seen beside its count, each
//! beside a submit every 10 ms, each round's submits alone timed half before and half after it,
//! and the median of the three ratios printed; then at the whole again beside submits back to
//! back (`bulk/`).

mod bulk;
mod common;

use std::time::{Duration, Instant};

use common::executor::run_queued;
use common::{ms, pct, raw_connection, raw_inserts, total, OWNER};
use onejob_engine::executor::DEFAULT_MAX_IN_FLIGHT;
use onejob_engine::{Engine, JobsQuery};
use sqlx::{ConnectOptions, Connection};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    common::block_on(run())
}

/// Rounds of the whole bulk operation beside paced submits; the median ratio is printed.
const BULK_ROUNDS: usize = 3;

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let jobs = common::env_number("ONEJOB_BENCH_JOBS", 2_000);
    let history = common::env_number("ONEJOB_BENCH_HISTORY", 100_000);
    let parts =
        std::env::var("ONEJOB_BENCH_PARTS").unwrap_or_else(|_| "e2e pages budget bulk".to_owned());
    let part = |name: &str| parts.split([' ', ',']).any(|p| p == name);
    println!(
        "onejob ledger benchmark ({parts}): {jobs} jobs end to end, {history} jobs of history"
    );
    if part("e2e") {
        end_to_end(dir.path(), jobs).await?;
    }
    if part("pages") {
        pages(dir.path(), history).await?;
    }
    if part("budget") {
        let engine = Engine::open(dir.path().join("budget.db")).await?;
        common::executor::budgets(&engine, jobs).await?;
        engine.close().await;
    }
    if part("bulk") {
        let bulk = common::env_number("ONEJOB_BENCH_BULK", 10_000);
        let paced = bulk::Load::Paced(Duration::from_millis(10));
        bulk::bulk_resolve(dir.path(), (bulk / 4).max(1), paced, 1).await?;
        let mut rounds = bulk::bulk_resolve(dir.path(), bulk, paced, BULK_ROUNDS).await?;
        rounds.sort_by(|a, b| a.p99_ratio().total_cmp(&b.p99_ratio()));
        if let Some(median) = rounds.get(rounds.len() / 2) {
            println!(
                "  submit p99 beside the operation / alone, the median of {BULK_ROUNDS} rounds: {:.2}x (p99 {:.2} ms against {:.2} ms; aim <= 2x)",
                median.p99_ratio(),
                ms(median.p99.1),
                ms(median.p99.0),
            );
        }
        bulk::bulk_resolve(dir.path(), bulk, bulk::Load::Flood, 1).await?;
    }
    Ok(())
}

/// Queues `n` jobs at an instant sandbox, then runs one executor until nothing is left, three
/// times, each run between two blocks of `n / 2` raw inserts: its ratio is to the raw rate of
/// the blocks on either side, so a neighbour's burst of disk writes weighs on both sides alike,
/// and the median of the three is printed (a commit's fsync here swings between about 0.5 ms and
/// 4 ms over minutes). Then jobs at a sandbox that takes 1 s: the executor's slots are the limit.
async fn end_to_end(dir: &std::path::Path, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    const RUNS: usize = 3;
    let mut raw_conn = raw_connection(&dir.join("raw-e2e.db")).await?;
    let engine = Engine::open(dir.join("e2e.db")).await?;
    let concurrency = common::env_number("ONEJOB_BENCH_CONCURRENCY", DEFAULT_MAX_IN_FLIGHT);
    let half = (n / 2).max(1);
    let mut before = raw_inserts(&mut raw_conn, 0..half).await?;
    let mut runs = Vec::new();
    for round in 0..RUNS {
        let run = run_queued(&engine, &format!("instant{round}"), n, 0, concurrency).await?;
        let keys = (round + 1) * half..(round + 2) * half;
        let after = raw_inserts(&mut raw_conn, keys).await?;
        let raw_rate =
            (before.len() + after.len()) as f64 / (total(&before) + total(&after)).as_secs_f64();
        runs.push((run, raw_rate));
        before = after;
    }
    raw_conn.close().await?;
    let slow_n = concurrency * 4;
    let slow = run_queued(&engine, "slow", slow_n, 1000, concurrency).await?;
    engine.close().await;

    for (round, (run, raw_rate)) in runs.iter().enumerate() {
        let rate = run.rate(n);
        println!(
            "run {round}: executor end to end, instant sandbox {rate:>6.0} jobs/s ({} of {n} succeeded in {:.1} ms, {concurrency} at once); raw INSERT rate beside it {raw_rate:>6.0}/s; ratio {:.1}%; processor time per job {}",
            run.succeeded,
            ms(run.took),
            100.0 * rate / raw_rate,
            run.cpu
                .map(|cpu| format!("{:.3} ms", ms(cpu) / n as f64))
                .unwrap_or_else(|| "unknown".to_owned()),
        );
    }
    let mut ratios: Vec<f64> = runs
        .iter()
        .map(|(run, raw_rate)| 100.0 * run.rate(n) / raw_rate)
        .collect();
    ratios.sort_by(f64::total_cmp);
    let mut cpus: Vec<f64> = runs
        .iter()
        .filter_map(|(run, _)| run.cpu.map(|cpu| ms(cpu) / n as f64))
        .collect();
    cpus.sort_by(f64::total_cmp);
    println!(
        "  ratio executor/raw, the median of {RUNS}: {:.1}% (aim: >= 34%, toward 60%)",
        ratios[RUNS / 2]
    );
    if let Some(cpu) = cpus.get(cpus.len() / 2) {
        println!("  processor time per job, whole process, the median: {cpu:.3} ms");
    }
    println!(
        "executor end to end, sandbox taking 1 s: {:>6.1} jobs/s ({} of {slow_n} succeeded in {:.1} ms, {concurrency} at once; aim: about {concurrency} jobs/s)",
        slow.rate(slow_n),
        slow.succeeded,
        ms(slow.took)
    );
    Ok(())
}

/// Times the Jobs list's pages on a ledger of `n` jobs.
async fn pages(dir: &std::path::Path, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let path = dir.join("history.db");
    let engine = Engine::open(&path).await?;
    onejob_testkit::seed_jobs(&path, OWNER, u32::try_from(n)?).await?;

    // The cursor of the page 90% deep, found by walking the pages as the list would.
    let deep_rows = n * 9 / 10;
    let page = 50u32;
    let mut after = None;
    let mut walked = 0;
    while walked < deep_rows {
        let query = JobsQuery {
            after: after.clone(),
            limit: Some(u32::try_from((deep_rows - walked).min(500))?),
            ..JobsQuery::default()
        };
        let got = engine.jobs(OWNER, &query).await?;
        walked += got.jobs.len();
        after = got.next;
        if after.is_none() {
            break;
        }
    }
    let first = JobsQuery {
        limit: Some(page),
        ..JobsQuery::default()
    };
    let deep = JobsQuery {
        after: after.clone(),
        limit: Some(page),
        ..JobsQuery::default()
    };
    let search = JobsQuery {
        search: Some("seed-4242".into()),
        limit: Some(page),
        ..JobsQuery::default()
    };
    let first_times = time_page(&engine, &first).await?;
    let deep_times = time_page(&engine, &deep).await?;
    let search_times = time_page(&engine, &search).await?;
    engine.close().await;
    let raw_times = raw_page(&path, page).await?;

    println!("with {n} jobs, {page} a page, 50 runs each:");
    print_page("raw keyset SELECT (baseline)", &raw_times, None);
    print_page("engine first page", &first_times, Some(&raw_times));
    print_page(
        &format!("engine page {walked} deep"),
        &deep_times,
        Some(&raw_times),
    );
    print_page("engine key search", &search_times, Some(&raw_times));
    println!("  (aim: first page and deep page <= 10 ms)");
    Ok(())
}

async fn time_page(
    engine: &Engine,
    query: &JobsQuery,
) -> Result<Vec<Duration>, onejob_engine::Error> {
    let mut times = Vec::with_capacity(50);
    for _ in 0..50 {
        let start = Instant::now();
        engine.jobs(OWNER, query).await?;
        times.push(start.elapsed());
    }
    Ok(times)
}

/// The same first page read with one plain keyset `SELECT` on its own connection.
async fn raw_page(path: &std::path::Path, page: u32) -> Result<Vec<Duration>, sqlx::Error> {
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await?;
    let mut times = Vec::with_capacity(50);
    for _ in 0..50 {
        let start = Instant::now();
        sqlx::query("SELECT * FROM jobs WHERE owner_id = ? ORDER BY id DESC LIMIT ?")
            .bind(OWNER)
            .bind(page)
            .fetch_all(&mut conn)
            .await?;
        times.push(start.elapsed());
    }
    conn.close().await?;
    Ok(times)
}

fn print_page(label: &str, times: &[Duration], baseline: Option<&[Duration]>) {
    let vs = baseline
        .map(|b| {
            format!(
                "  ({:.2}x raw at p50)",
                pct(times, 50.0).as_secs_f64() / pct(b, 50.0).as_secs_f64().max(f64::MIN_POSITIVE)
            )
        })
        .unwrap_or_default();
    println!(
        "  {label:<30} p50 {:>7.3} ms  p99 {:>7.3} ms{vs}",
        ms(pct(times, 50.0)),
        ms(pct(times, 99.0)),
    );
}
