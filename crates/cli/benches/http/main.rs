//! The HTTP API's benchmark: a real `onejob serve` (this build's binary) on a SQLite ledger and
//! then on a PostgreSQL one, its figures printed beside raw single-row durable INSERTs measured
//! on the same backend in the same run (never asserted):
//! - one client (reqwest, keep-alive), sequential POSTs with new keys, in blocks alternating
//!   with the raw INSERTs and with the engine's own submits in this process on another ledger
//!   (what HTTP adds is the difference): p50/p99 and the ratio to the raw INSERT's;
//! - 64 keep-alive connections of Debian's `wrk` (`post.lua`), a new key per request, and the
//!   same with one key replayed, each run several times, alternating, the median printed;
//! - the server's resident memory idle and at its peak under that load.
//!
//! The server runs with `--no-worker`: every job waits at a provider nobody calls, so the
//! executor would only compete for the one writer and the two cores with what is measured
//! (the executor has its own benchmarks in the engine's package).
//!
//! Run: `cargo bench -p onejob --bench http`. `ONEJOB_BENCH_N` (10,000 sequential POSTs),
//! `ONEJOB_BENCH_SECONDS` (10 per load run), `ONEJOB_BENCH_RUNS` (3 of each load) and
//! `ONEJOB_BENCH_BACKENDS` (`sqlite postgres`) change it.

#[path = "../../../engine/benches/common/mod.rs"]
mod common;
mod server;
mod wrk;

use std::time::{Duration, Instant};

use common::{engine_with_provider, intent, ms, pct, ratio, total};
use onejob_testkit::Postgres;
use sqlx::{PgConnection, SqliteConnection};

use crate::server::Server;

type Error = Box<dyn std::error::Error>;

/// Keep-alive connections of the load runs.
const CONNECTIONS: usize = 64;
/// Requests each side makes before it is measured: connections, caches and statements warm.
const WARM_UP: usize = 200;

fn main() -> Result<(), Error> {
    wrk::ensure_installed()?;
    common::block_on(run())
}

struct Settings {
    sequential: usize,
    load: Duration,
    runs: usize,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn run() -> Result<(), Error> {
    let settings = Settings {
        sequential: env_or("ONEJOB_BENCH_N", 10_000),
        load: Duration::from_secs(env_or("ONEJOB_BENCH_SECONDS", 10)),
        runs: env_or::<usize>("ONEJOB_BENCH_RUNS", 3).max(1),
    };
    let backends = env_or("ONEJOB_BENCH_BACKENDS", "sqlite postgres".to_owned());
    println!(
        "onejob HTTP benchmark: onejob serve --no-worker on 127.0.0.1; {} sequential POSTs; \
         {CONNECTIONS} connections for {} s, {} runs of each, the median",
        settings.sequential,
        settings.load.as_secs(),
        settings.runs
    );
    let dir = tempfile::tempdir()?;
    for backend in backends.split_whitespace() {
        match backend {
            "sqlite" => {
                let raw = common::raw_connection(&dir.path().join("raw.db")).await?;
                let ledger = dir.path().join("serve.db").display().to_string();
                let submits = dir.path().join("submit.db").display().to_string();
                println!("\nSQLite (WAL, synchronous=FULL)");
                bench(&settings, &ledger, &submits, Raw::Sqlite(raw)).await?;
            }
            "postgres" => {
                let cluster = Postgres::start()?;
                let raw = common::postgres::raw_connection(&cluster.database("raw")?).await?;
                let ledger = cluster.database("serve")?;
                let submits = cluster.database("submit")?;
                println!("\nPostgreSQL (fsync on, synchronous_commit on, 127.0.0.1)");
                bench(&settings, &ledger, &submits, Raw::Postgres(raw)).await?;
            }
            other => return Err(format!("ONEJOB_BENCH_BACKENDS: no backend {other:?}").into()),
        }
    }
    Ok(())
}

/// The baseline's connection: one autocommitted INSERT a job.
enum Raw {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
}

impl Raw {
    async fn inserts(&mut self, keys: std::ops::Range<usize>) -> Result<Vec<Duration>, Error> {
        Ok(match self {
            Raw::Sqlite(conn) => common::raw_inserts(conn, keys).await?,
            Raw::Postgres(conn) => common::postgres::raw_inserts(conn, keys).await?,
        })
    }
}

/// One backend's block of figures.
/// `ledger` is the server's; `submits` another ledger for the engine's own submits, in process.
async fn bench(
    settings: &Settings,
    ledger: &str,
    submits: &str,
    mut raw: Raw,
) -> Result<(), Error> {
    engine_with_provider(std::path::Path::new(ledger))
        .await?
        .close()
        .await;
    let token = server::create_token(ledger).await?;
    let server = Server::start(ledger).await?;
    // A moment for what start-up allocated and let go.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = server.rss_mib()?;

    let client = reqwest::Client::builder().no_proxy().build()?;
    let post = Post {
        client: &client,
        url: format!("{}/v1/jobs", server.url),
        token: &token,
    };
    let engine = engine_with_provider(std::path::Path::new(submits)).await?;
    raw.inserts(0..WARM_UP).await?;
    common::sequential_submits(&engine, 0..WARM_UP).await?;
    post.sequential("warm", 0..WARM_UP).await?;
    // Alternating short blocks, so a neighbour's burst of disk writes slows every side alike:
    // with ten blocks of 1,000 one burst could double one side's p50.
    let n = settings.sequential;
    let (mut raws, mut in_process, mut posts) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let block = (n / 50).max(1);
    for start in (WARM_UP..WARM_UP + n).step_by(block) {
        let range = start..(start + block).min(WARM_UP + n);
        raws.extend(raw.inserts(range.clone()).await?);
        in_process.extend(common::sequential_submits(&engine, range.clone()).await?);
        posts.extend(post.sequential("seq", range).await?);
    }
    engine.close().await;
    let raw_p50 = pct(&raws, 50.0);
    let raw_rate = raws.len() as f64 / total(&raws).as_secs_f64();
    println!(
        "  raw INSERT (baseline)           p50 {:.3} ms  p99 {:.3} ms  {raw_rate:.0}/s sequential",
        ms(raw_p50),
        ms(pct(&raws, 99.0)),
    );
    println!(
        "  engine submit, in process       p50 {:.3} ms  p99 {:.3} ms  (raw INSERT p50: x{:.2})",
        ms(pct(&in_process, 50.0)),
        ms(pct(&in_process, 99.0)),
        ratio(pct(&in_process, 50.0), raw_p50),
    );
    println!(
        "  sequential POST, new keys       p50 {:.3} ms  p99 {:.3} ms  (raw INSERT p50 {:.3} ms: x{:.2}; aim <= 1.5x)",
        ms(pct(&posts, 50.0)),
        ms(pct(&posts, 99.0)),
        ms(raw_p50),
        ratio(pct(&posts, 50.0), raw_p50),
    );

    // The peak is the load's, not start-up's or the sequential part's.
    server.reset_peak()?;
    let body = intent(0);
    let (mut fresh, mut one) = (Vec::new(), Vec::new());
    // The same load in process on the other ledger, alternating with the server's: what the
    // HTTP face costs beside the engine's own submits.
    let mut storms = Vec::new();
    let storm_engine = engine_with_provider(std::path::Path::new(submits)).await?;
    for round in 0..settings.runs {
        storms.push(storm_for(&storm_engine, &format!("storm{round}"), settings.load).await?);
        for (is_fresh, loads) in [(true, &mut fresh), (false, &mut one)] {
            let prefix = if is_fresh {
                format!("load{round}")
            } else {
                "replayed".to_owned()
            };
            let load = wrk::post(
                &server.url,
                &token,
                &body,
                &prefix,
                is_fresh,
                CONNECTIONS,
                settings.load,
            )
            .await?;
            if load.errors.total() > 0 {
                let e = &load.errors;
                println!(
                    "  ({} run {round}: {} failed of {}: connect {}, read {}, write {}, status >= 400 {}, timeout {})",
                    if is_fresh { "new keys" } else { "one key" },
                    e.total(),
                    load.requests,
                    e.connect,
                    e.read,
                    e.write,
                    e.status,
                    e.timeout
                );
            }
            loads.push(load);
        }
    }
    storm_engine.close().await;
    let peak = server.peak_mib()?;
    let (fresh, one) = (median(&mut fresh), median(&mut one));
    let storm_runs: Vec<String> = storms.iter().map(|r| format!("{r:.0}")).collect();
    storms.sort_by(f64::total_cmp);
    let storm = storms[storms.len() / 2];
    let rates = |loads: &[wrk::Load]| {
        let rates: Vec<String> = loads.iter().map(|l| format!("{:.0}", l.rate())).collect();
        rates.join(", ")
    };
    println!(
        "  {CONNECTIONS} tasks in process, new keys {storm:.0} submits/s  (engine.submit, no HTTP; runs {})",
        storm_runs.join(", "),
    );
    println!(
        "  {CONNECTIONS} connections, new keys      {:.0} POSTs/s  (raw sequential INSERT {raw_rate:.0}/s: x{:.2}; aim >= 3x; in-process {storm:.0}/s: x{:.2})  p50 {:.2} ms p99 {:.2} ms; runs {}",
        fresh.1.rate(),
        fresh.1.rate() / raw_rate,
        fresh.1.rate() / storm,
        fresh.1.p50_us as f64 / 1000.0,
        fresh.1.p99_us as f64 / 1000.0,
        rates(&fresh.0),
    );
    println!(
        "  {CONNECTIONS} connections, one key       {:.0} POSTs/s  (new keys {:.0}/s: x{:.2}; aim >= 1x)  p50 {:.2} ms p99 {:.2} ms; runs {}",
        one.1.rate(),
        fresh.1.rate(),
        one.1.rate() / fresh.1.rate(),
        one.1.p50_us as f64 / 1000.0,
        one.1.p99_us as f64 / 1000.0,
        rates(&one.0),
    );
    println!(
        "  resident memory                 idle {idle:.1} MiB, peak under load {peak:.1} MiB  (aim <= 60 MiB)",
    );
    server.stop().await
}

/// [`CONNECTIONS`] tasks submitting new keys `prefix-<task>-<i>` in this process, one after
/// another each, for `load`; the submits per second they made together.
async fn storm_for(
    engine: &onejob_engine::Engine,
    prefix: &str,
    load: Duration,
) -> Result<f64, Error> {
    let start = Instant::now();
    let body = intent(0);
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|task| {
            let (engine, body, prefix) = (engine.clone(), body.clone(), prefix.to_owned());
            tokio::spawn(async move {
                let mut made = 0usize;
                while start.elapsed() < load {
                    let key = format!("{prefix}-{task}-{made}");
                    engine.submit(common::OWNER, &key, &body).await?;
                    made += 1;
                }
                Ok::<usize, onejob_engine::Error>(made)
            })
        })
        .collect();
    let mut made = 0;
    for task in tasks {
        made += task.await??;
    }
    Ok(made as f64 / start.elapsed().as_secs_f64())
}

/// The runs in the order made, and the one of median rate.
fn median(loads: &mut Vec<wrk::Load>) -> (Vec<wrk::Load>, wrk::Load) {
    let mut order: Vec<usize> = (0..loads.len()).collect();
    order.sort_by(|a, b| loads[*a].rate().total_cmp(&loads[*b].rate()));
    let middle = order[order.len() / 2];
    let runs = std::mem::take(loads);
    let median = runs[middle].clone();
    (runs, median)
}

/// One client's POSTs, one after another on one keep-alive connection.
struct Post<'a> {
    client: &'a reqwest::Client,
    url: String,
    token: &'a str,
}

impl Post<'_> {
    /// POSTs with new keys `prefix-<i>`, each timed until its answer is read whole.
    async fn sequential(
        &self,
        prefix: &str,
        keys: std::ops::Range<usize>,
    ) -> Result<Vec<Duration>, Error> {
        let mut times = Vec::with_capacity(keys.len());
        for i in keys {
            let body = intent(i);
            let key = format!("{prefix}-{i}");
            let start = Instant::now();
            let response = self
                .client
                .post(&self.url)
                .bearer_auth(self.token)
                .header("idempotency-key", key)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await?;
            let status = response.status();
            let answer = response.bytes().await?;
            times.push(start.elapsed());
            if status != reqwest::StatusCode::CREATED {
                return Err(format!(
                    "POST answered {status}: {}",
                    String::from_utf8_lossy(&answer)
                )
                .into());
            }
        }
        Ok(times)
    }
}
