//! A submit's latency while another host is frozen inside a transaction, beside its latency
//! when none is. A worker process drives one job at a sandbox taking 1.5 s; while the answer is
//! on the way the benchmark holds that job's row, and a person's cancel on another host (a
//! process of its own) waits inside its transaction for it; that process is stopped (SIGSTOP)
//! there and the row let go, leaving its transaction open and idle with the job's row, as a
//! suspended host's would be. (An executor's write never waits for a row another host holds: it
//! steps aside and is tried again, as the worker's answer is meanwhile.) Then, as before the
//! freeze, three ways of submitting: one after another on an open engine, 16 at once (one
//! group's transaction), and as a new host would (open the ledger, submit, close: what `onejob
//! submit` does), each followed by a raw INSERT, so the disk's pace meanwhile shows beside it.

use std::path::Path;
use std::time::{Duration, Instant};

use onejob_engine::Engine;
use onejob_testkit::Postgres;
use serde_json::json;
use sqlx::{Connection, PgConnection};

use super::workers::{check_deadline, Worker};
use crate::common::postgres::{raw_connection, raw_inserts};
use crate::common::{engine_with_provider, intent, ms, pct, ratio, OWNER};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// How long one submit may wait while a host is frozen before it counts as held up.
const HELD_UP: Duration = Duration::from_secs(5);
/// How long each way of submitting is measured at most, so the three take less than the 10 s
/// after which the server ends a transaction left idle, and the host stays frozen throughout.
const EACH_FOR: Duration = Duration::from_secs(2);
/// How long each step of setting the scene may take.
const STEP: Duration = Duration::from_secs(30);

/// How a submit is made.
#[derive(Clone, Copy)]
enum Way {
    /// One submit on an open engine.
    OneByOne,
    /// This many submits at once on an open engine.
    AtOnce(usize),
    /// A new engine opened, one submit, closed.
    NewHost,
}

impl Way {
    const ALL: [Way; 3] = [Way::OneByOne, Way::AtOnce(16), Way::NewHost];

    /// How many of it are measured, unless [`EACH_FOR`] runs out first.
    fn count(self) -> usize {
        match self {
            Way::OneByOne => 300,
            Way::AtOnce(_) => 50,
            Way::NewHost => 20,
        }
    }

    fn words(self) -> String {
        match self {
            Way::OneByOne => "pg submit one by one".to_owned(),
            Way::AtOnce(n) => format!("pg {n} submits at once"),
            Way::NewHost => "pg open, submit, close".to_owned(),
        }
    }
}

/// Each way of submitting with no host frozen, then with one frozen, each followed by a raw
/// INSERT; all printed.
pub async fn frozen_host(cluster: &Postgres, logs: &Path) -> Result<()> {
    let url = cluster.database("frozen")?;
    let engine = engine_with_provider(Path::new(&url)).await?;
    let slow = json!({"name": "slow", "kind": "sandbox", "soft_timeout_ms": 30_000,
        "hard_timeout_ms": 60_000, "honours_idempotency_key": true,
        "dials": {"latency_ms": 1500, "jitter_ms": 0}});
    engine.add_provider(&slow.to_string()).await?;
    let body = json!({"route": ["slow"], "input": {"frozen": true}}).to_string();
    let job = engine.submit(OWNER, "frozen", &body).await?.job.id;

    // The submits' jobs wait at a provider nobody calls: the worker drives only its own job.
    // The first ones warm the engine's connections and are not counted.
    let mut submitter = Submitter {
        engine: engine.clone(),
        url: url.clone(),
        raw: raw_connection(&cluster.database("frozen_raw")?).await?,
        keys: 0,
    };
    submitter.series(Way::OneByOne, 50).await?;
    let mut calm = Vec::new();
    for way in Way::ALL {
        calm.push(submitter.series(way, way.count()).await?);
    }

    let mut worker = Worker::start(&url, 1, Some(&job), logs, "frozen").await?;
    worker.go().await?;
    let mut watch = PgConnection::connect(&url).await?;
    let start = Instant::now();
    loop {
        let sent: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM attempts WHERE job_id = $1::uuid AND state = 'in_flight'",
        )
        .bind(&job)
        .fetch_one(&mut watch)
        .await?;
        if sent > 0 {
            break;
        }
        check_deadline(start + STEP, STEP, "the frozen job sent")?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut holder = PgConnection::connect(&url).await?;
    let holder_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut holder)
        .await?;
    let mut held = holder.begin().await?;
    sqlx::query("SELECT 1 FROM jobs WHERE id = $1::uuid FOR UPDATE")
        .bind(&job)
        .execute(&mut *held)
        .await?;
    let mut canceller = Worker::canceller(&url, &job, logs, "frozen-cancel").await?;
    canceller.go().await?;
    let start = Instant::now();
    let waiting: i32 = loop {
        let waiting: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND state = 'active' \
             AND pid <> pg_backend_pid() AND pid <> $1 LIMIT 1",
        )
        .bind(holder_pid)
        .fetch_optional(&mut watch)
        .await?;
        if let Some(pid) = waiting {
            break pid;
        }
        check_deadline(
            start + STEP,
            STEP,
            "the person's cancel waiting inside a transaction",
        )?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    canceller.signal("STOP")?;
    held.commit().await?;
    let start = Instant::now();
    let idle = loop {
        let state: Option<String> =
            sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
                .bind(waiting)
                .fetch_optional(&mut watch)
                .await?;
        if state.as_deref() == Some("idle in transaction") {
            break true;
        }
        if start.elapsed() >= STEP {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };

    let (mut frozen, mut blocked) = (Vec::new(), Vec::new());
    if idle {
        for way in Way::ALL {
            let series = submitter.series(way, way.count()).await?;
            if series.held_up {
                blocked.extend(waiting_on(&mut watch, waiting).await?);
            }
            frozen.push(series);
        }
    }
    // Whether the frozen transaction was still open when the submits ended.
    let state: Option<String> =
        sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
            .bind(waiting)
            .fetch_optional(&mut watch)
            .await?;
    canceller.signal("CONT")?;

    if !idle {
        println!("pg a host frozen in a transaction: not measured (the frozen host's connection did not stay idle in its transaction)");
    }
    let open = if state.as_deref() == Some("idle in transaction") {
        "stayed open throughout"
    } else {
        "HAD ENDED before the last submit"
    };
    for (i, way) in Way::ALL.into_iter().enumerate() {
        let Some(calm) = calm.get(i) else { continue };
        print_series(&format!("{}, none frozen", way.words()), calm);
        let Some(frozen) = frozen.get(i) else {
            continue;
        };
        print_series(&format!("{}, a host frozen", way.words()), frozen);
        if !frozen.held_up {
            println!(
                "  pg ratio frozen/none: p50 {:.2}x, p99 {:.2}x (aim: no wait)",
                ratio(pct(&frozen.submits, 50.0), pct(&calm.submits, 50.0)),
                ratio(pct(&frozen.submits, 99.0), pct(&calm.submits, 99.0)),
            );
        }
    }
    if idle {
        println!("  pg the frozen host's transaction {open}");
    }
    blocked.sort();
    blocked.dedup();
    for statement in blocked {
        println!("  pg waiting for the frozen host: {statement}");
    }

    // Thawed, the person's cancel commits and the worker's answer arrives late; the job must
    // have been sent once.
    let start = Instant::now();
    loop {
        let status: String = sqlx::query_scalar("SELECT status FROM jobs WHERE id = $1::uuid")
            .bind(&job)
            .fetch_one(&mut watch)
            .await?;
        if status != "queued" && status != "running" {
            let sends: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM attempts WHERE job_id = $1::uuid AND sent_at IS NOT NULL",
            )
            .bind(&job)
            .fetch_one(&mut watch)
            .await?;
            println!(
                "  pg thawed: the frozen job {status} {:.1} s later, sent {sends} time{}",
                start.elapsed().as_secs_f64(),
                if sends == 1 { "" } else { "s" }
            );
            break;
        }
        check_deadline(
            start + STEP * 2,
            STEP * 2,
            "the thawed worker's job settled",
        )?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Err(e) = canceller.stop().await {
        println!("  pg the frozen person's cancel, thawed: {e}");
    }
    worker.stop().await?;
    engine.close().await;
    Ok(())
}

/// The statements that wait for a lock the backend `frozen` holds, on one line each.
async fn waiting_on(watch: &mut PgConnection, frozen: i32) -> Result<Vec<String>> {
    let statements: Vec<String> = sqlx::query_scalar(
        "SELECT wait_event_type || '/' || wait_event || ': ' || query FROM pg_stat_activity \
         WHERE $1 = ANY(pg_blocking_pids(pid))",
    )
    .bind(frozen)
    .fetch_all(watch)
    .await?;
    Ok(statements
        .iter()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect())
}

/// What a series of submits measured.
struct Series {
    /// Each answered submit's latency (of a group, until all of it answered).
    submits: Vec<Duration>,
    /// A raw INSERT's after each: the disk's and the server's pace meanwhile.
    raws: Vec<Duration>,
    /// Whether the last submit had no answer within [`HELD_UP`].
    held_up: bool,
}

fn print_series(label: &str, series: &Series) {
    let raw = format!(
        "(raw INSERT meanwhile p50 {:.3} ms)",
        ms(pct(&series.raws, 50.0))
    );
    if series.held_up {
        println!(
            "{label:<40} HELD UP: {} answered, then one had no answer after {:.1} s",
            series.submits.len(),
            HELD_UP.as_secs_f64()
        );
    } else {
        println!(
            "{label:<40} p50 {:>7.3} ms  p99 {:>7.3} ms  {raw}",
            ms(pct(&series.submits, 50.0)),
            ms(pct(&series.submits, 99.0)),
        );
    }
}

/// Makes submits with new keys, each way, and a raw INSERT after each.
struct Submitter {
    engine: Engine,
    url: String,
    raw: PgConnection,
    /// The next key's number.
    keys: usize,
}

impl Submitter {
    /// Up to `count` submits made `way`, each given [`HELD_UP`] to answer, for at most
    /// [`EACH_FOR`].
    async fn series(&mut self, way: Way, count: usize) -> Result<Series> {
        let mut series = Series {
            submits: Vec::with_capacity(count),
            raws: Vec::with_capacity(count),
            held_up: false,
        };
        let until = Instant::now() + EACH_FOR;
        for _ in 0..count {
            if Instant::now() >= until {
                break;
            }
            let start = Instant::now();
            match tokio::time::timeout(HELD_UP, self.submit(way)).await {
                Ok(submitted) => {
                    submitted?;
                    series.submits.push(start.elapsed());
                }
                Err(_) => {
                    series.held_up = true;
                    break;
                }
            }
            let key = self.keys;
            series
                .raws
                .extend(raw_inserts(&mut self.raw, key..key + 1).await?);
        }
        Ok(series)
    }

    /// One submit (or one group) made `way`.
    async fn submit(&mut self, way: Way) -> Result<()> {
        let n = match way {
            Way::AtOnce(n) => n,
            Way::OneByOne | Way::NewHost => 1,
        };
        let first = self.keys;
        self.keys += n;
        match way {
            Way::OneByOne => {
                self.engine
                    .submit(OWNER, &format!("key-{first}"), &intent(first))
                    .await?;
            }
            Way::AtOnce(_) => {
                let tasks: Vec<_> = (first..first + n)
                    .map(|i| {
                        let engine = self.engine.clone();
                        tokio::spawn(async move {
                            engine.submit(OWNER, &format!("key-{i}"), &intent(i)).await
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await??;
                }
            }
            Way::NewHost => {
                let engine = Engine::open(&self.url).await?;
                engine
                    .submit(OWNER, &format!("key-{first}"), &intent(first))
                    .await?;
                engine.close().await;
            }
        }
        Ok(())
    }
}
