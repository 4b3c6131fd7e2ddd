//! Several hosts on one PostgreSQL ledger (SPEC §14), simulated with processes: `onejob
//! worker` processes that share one database by its URL, a worker killed mid-flight, and
//! workers whose host clocks `faketime` skews a minute either way. Each test starts its own
//! cluster; the providers are `onejob sandbox` processes on 127.0.0.1.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::processes::{
    add_http_provider, detail, details, event_kinds, faketime, libfaketime, poll, submit_many,
    worker_line, Running, SandboxProcess,
};
use common::{id, Ledger};
use onejob_testkit::raw_http::json_response;
use onejob_testkit::{Postgres, RawServer};
use serde_json::{json, Value};

/// A cluster and a ledger in one of its databases. The ledger's fields drop first, the
/// cluster last; processes a test starts after it are dropped (killed) before either.
struct Cluster {
    ledger: Ledger,
    _postgres: Postgres,
}

impl Cluster {
    fn start(database: &str) -> Cluster {
        let postgres = Postgres::start().expect("a PostgreSQL cluster");
        let url = postgres.database(database).expect("a database");
        assert!(url.starts_with("postgres://"), "{url}");
        Cluster {
            ledger: Ledger::at(&url),
            _postgres: postgres,
        }
    }
}

/// All jobs of the ledger (at most 1000), as `jobs` lists them.
fn all_jobs(ledger: &Ledger) -> Vec<Value> {
    let page = ledger.run(&["jobs", "--limit", "1000"]).ok();
    assert!(
        page["next"].is_null(),
        "more than one page: {}",
        page["next"]
    );
    page["jobs"].as_array().expect("jobs").clone()
}

/// How many jobs are in each status.
fn statuses(jobs: &[Value]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for job in jobs {
        let status = job["status"].as_str().expect("a status").to_owned();
        *counts.entry(status).or_insert(0) += 1;
    }
    counts
}

/// The attempts of one job's detail.
fn attempts(detail: &Value) -> &Vec<Value> {
    detail["attempts"].as_array().expect("attempts")
}

/// The only attempt of a job that must have exactly one.
fn only_attempt(detail: &Value) -> &Value {
    let attempts = attempts(detail);
    assert_eq!(attempts.len(), 1, "one attempt: {detail}");
    &attempts[0]
}

fn text(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

/// Milliseconds since the epoch by this (unskewed) test process's clock.
fn real_now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_millis()).expect("in range")
}

/// Milliseconds since the epoch of the engine's UTC time text, `2026-11-30T09:15:02.123Z`.
fn time_ms(time: &str) -> i64 {
    let b = time.as_bytes();
    assert!(
        b.len() == 24 && b[10] == b'T' && b[23] == b'Z',
        "not a time: {time}"
    );
    let num = |from: usize, to: usize| -> i64 {
        time[from..to]
            .parse()
            .unwrap_or_else(|_| panic!("not a time: {time}"))
    };
    let (y, m, d) = (num(0, 4), num(5, 7), num(8, 10));
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + num(11, 13) * 3600 + num(14, 16) * 60 + num(17, 19);
    seconds * 1000 + num(20, 23)
}

/// The millisecond timestamp a UUIDv7 carries (its first 48 bits): when the process that
/// made it read its own clock.
fn uuid_v7_ms(uuid: &str) -> i64 {
    let hex: String = uuid.chars().filter(|c| *c != '-').take(12).collect();
    i64::from_str_radix(&hex, 16).unwrap_or_else(|_| panic!("not a UUID: {uuid}"))
}

/// The executor ids on the jobs' attempts that are in flight now, with how many each holds.
fn in_flight_by_executor(ledger: &Ledger, jobs: &[String]) -> HashMap<String, Vec<String>> {
    let mut holders: HashMap<String, Vec<String>> = HashMap::new();
    for detail in details(ledger, jobs) {
        for attempt in attempts(&detail) {
            if attempt["state"] == "in_flight" {
                let executor = text(&attempt["executor_id"]).to_owned();
                holders
                    .entry(executor)
                    .or_default()
                    .push(id(&detail["job"]));
            }
        }
    }
    holders
}

/// Starts `count` workers one after another, each with `--concurrency per_worker` (run by
/// `wrappers[i]` when given), waiting after each until the sandbox has seen its requests; so
/// the executor id new on in-flight attempts after a start is that worker's. Returns the
/// workers with their executor ids.
fn start_workers_in_turn(
    ledger: &Ledger,
    sandbox: &SandboxProcess,
    jobs: &[String],
    wrappers: &[&[&str]],
    per_worker: usize,
) -> Vec<(Running, String)> {
    let concurrency = per_worker.to_string();
    let mut workers: Vec<(Running, String)> = Vec::new();
    for (i, wrapper) in wrappers.iter().enumerate() {
        let mut worker =
            Running::spawn_under(ledger, wrapper, &["worker", "--concurrency", &concurrency]);
        let want = per_worker * (i + 1);
        poll(
            Duration::from_secs(60),
            &format!("{want} requests at the sandbox"),
            || {
                assert!(worker.is_running(), "{} exited", worker.what);
                (sandbox.log().len() >= want).then_some(())
            },
        );
        let holders = in_flight_by_executor(ledger, jobs);
        let known: HashSet<&String> = workers.iter().map(|(_, id)| id).collect();
        let new: Vec<&String> = holders.keys().filter(|id| !known.contains(id)).collect();
        assert_eq!(new.len(), 1, "one new executor: {holders:?}");
        let executor = new[0].clone();
        assert_eq!(
            holders[&executor].len(),
            per_worker,
            "{executor} holds {per_worker}: {holders:?}"
        );
        workers.push((worker, executor));
    }
    workers
}

#[test]
fn three_workers_on_one_postgres_ledger_send_each_of_600_attempts_once() {
    let cluster = Cluster::start("three_workers");
    let ledger = &cluster.ledger;
    let sandbox = SandboxProcess::start(ledger, json!({ "latency_ms": 5, "jitter_ms": 0 }));
    add_http_provider(ledger, "shared", &sandbox.url, 30_000, 60_000, json!({}));
    let submitting = Instant::now();
    let jobs = submit_many(ledger, 600, "shared");
    let submitted = submitting.elapsed();

    let started = Instant::now();
    let mut workers: Vec<Running> = (0..3)
        .map(|_| Running::spawn(ledger, &["worker"]))
        .collect();
    poll(Duration::from_secs(300), "600 succeeded jobs", || {
        for worker in &mut workers {
            assert!(worker.is_running(), "{} exited", worker.what);
        }
        let counts = statuses(&all_jobs(ledger));
        for status in ["failed", "unknown", "cancelled"] {
            assert!(!counts.contains_key(status), "{counts:?}");
        }
        (counts.get("succeeded") == Some(&600)).then_some(())
    });
    let took = started.elapsed();
    let worker_ids: HashSet<String> = workers
        .iter_mut()
        .map(|w| {
            let line = worker_line(&w.terminate(Duration::from_secs(30)));
            text(&line["worker"]["id"]).to_owned()
        })
        .collect();
    assert_eq!(worker_ids.len(), 3, "three executors: {worker_ids:?}");

    let keys = sandbox.keys();
    assert_eq!(keys.len(), 600, "one request per job");
    let distinct: HashSet<String> = keys.into_iter().collect();
    assert_eq!(
        distinct,
        jobs.iter().cloned().collect::<HashSet<_>>(),
        "the idempotency keys are the 600 job ids, each once"
    );

    let mut sent_by: HashMap<String, usize> = HashMap::new();
    for detail in details(ledger, &jobs) {
        assert_eq!(detail["job"]["status"], "succeeded", "{detail}");
        let attempt = only_attempt(&detail);
        assert_eq!(attempt["state"], "succeeded", "{detail}");
        assert_eq!(detail["job"]["completed_by"], attempt["id"], "{detail}");
        let sender = text(&attempt["executor_id"]).to_owned();
        assert!(worker_ids.contains(&sender), "{sender} is not a worker's");
        *sent_by.entry(sender).or_insert(0) += 1;
    }
    println!(
        "600 jobs submitted in {submitted:?}; three workers on PostgreSQL sent and settled them \
         in {took:?}; attempts per worker: {:?}",
        sent_by.values().collect::<Vec<_>>()
    );
}

#[test]
fn a_worker_killed_mid_flight_on_postgres_leaves_unknown_attempts_that_no_other_host_resends() {
    const JOBS: usize = 30;
    const PER_WORKER: usize = 10;
    let cluster = Cluster::start("killed_worker");
    let ledger = &cluster.ledger;
    // No answer comes while the test runs, and no soft timeout passes.
    let sandbox = SandboxProcess::start(ledger, json!({ "latency_ms": 300_000, "jitter_ms": 0 }));
    add_http_provider(ledger, "slow", &sandbox.url, 400_000, 500_000, json!({}));
    let jobs = submit_many(ledger, JOBS, "slow");

    let no_wrapper: &[&str] = &[];
    let mut workers = start_workers_in_turn(ledger, &sandbox, &jobs, &[no_wrapper; 3], PER_WORKER);
    assert_eq!(sandbox.log().len(), JOBS);
    let holders = in_flight_by_executor(ledger, &jobs);

    // The middle one dies: SIGKILL, nothing said, its connections cut.
    let (victim, victim_id) = &mut workers[1];
    victim.kill();
    let victim_id = victim_id.clone();
    let victims: HashSet<String> = holders[&victim_id].iter().cloned().collect();
    let killed = Instant::now();

    // Its leases (10 s) run out by the database's clock; a surviving worker's recovery (or any
    // process opening the ledger) makes exactly its attempts unknown.
    poll(
        Duration::from_secs(60),
        "the dead worker's jobs unknown",
        || {
            let counts = statuses(&all_jobs(ledger));
            let unknown = counts.get("unknown").copied().unwrap_or(0);
            assert!(unknown <= PER_WORKER, "{counts:?}");
            (unknown == PER_WORKER).then_some(())
        },
    );
    let recovered_after = killed.elapsed();
    // The survivors keep holding theirs for two more lease periods, renewing them.
    std::thread::sleep(Duration::from_secs(20));
    for (worker, _) in workers.iter_mut().filter(|(_, id)| *id != victim_id) {
        assert!(worker.is_running(), "{} exited", worker.what);
    }

    let keys = sandbox.keys();
    assert_eq!(keys.len(), JOBS, "nothing was sent again");
    assert_eq!(
        keys.into_iter().collect::<HashSet<_>>(),
        jobs.iter().cloned().collect::<HashSet<_>>(),
        "one request per job, keyed by the job's id"
    );
    for detail in details(ledger, &jobs) {
        let job_id = id(&detail["job"]);
        let attempt = only_attempt(&detail);
        let kinds = event_kinds(&detail);
        if victims.contains(&job_id) {
            assert_eq!(attempt["executor_id"], victim_id.as_str(), "{detail}");
            assert_eq!(attempt["state"], "unknown", "{detail}");
            assert_eq!(attempt["error"]["kind"], "lease_expired", "{detail}");
            assert_eq!(detail["job"]["status"], "unknown", "{detail}");
            assert!(
                kinds.iter().any(|k| k == "recovered_unknown"),
                "recovered_unknown missing: {kinds:?}"
            );
        } else {
            assert_ne!(attempt["executor_id"], victim_id.as_str(), "{detail}");
            assert_eq!(attempt["state"], "in_flight", "{detail}");
            assert_eq!(detail["job"]["status"], "running", "{detail}");
            for kind in ["recovered_unknown", "attempt_unknown"] {
                assert!(!kinds.iter().any(|k| k == kind), "{kind}: {kinds:?}");
            }
        }
    }
    println!(
        "the killed worker's {PER_WORKER} attempts were unknown {recovered_after:?} after the \
         kill; the other {} stayed in flight",
        JOBS - PER_WORKER
    );
}

/// How far `faketime` moves a host's clock in the skew test.
const SKEW_S: i64 = 60;

/// Checks that a program run by `wrapper` sees the clock `skew_s` seconds off the real one,
/// within a few seconds.
fn assert_faketime_skews(wrapper: &[&str], skew_s: i64) {
    let (program, options) = wrapper.split_first().expect("a program");
    let before = real_now_ms() / 1000;
    let out = Command::new(program)
        .args(options)
        .args(["date", "+%s"])
        .stdin(Stdio::null())
        .output()
        .expect("run date under libfaketime");
    let after = real_now_ms() / 1000;
    assert!(out.status.success(), "{wrapper:?} date: {out:?}");
    let seen: i64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("date printed {out:?}"));
    assert!(
        seen >= before + skew_s - 5 && seen <= after + skew_s + 5,
        "{wrapper:?} date printed {seen}; the real clock was {before}..{after}"
    );
}

#[test]
fn skewed_host_clocks_neither_steal_leases_nor_skip_backoffs() {
    let lib = libfaketime();
    let ahead = faketime(&lib, &format!("+{SKEW_S}s"));
    let behind = faketime(&lib, &format!("-{SKEW_S}s"));
    let ahead: Vec<&str> = ahead.iter().map(String::as_str).collect();
    let behind: Vec<&str> = behind.iter().map(String::as_str).collect();
    assert_faketime_skews(&ahead, SKEW_S);
    assert_faketime_skews(&behind, -SKEW_S);

    let cluster = Cluster::start("skewed_clocks");
    let ledger = &cluster.ledger;
    let test_started = real_now_ms();

    // Leases: every answer takes 3.5 leases (10 s each), so each lease is renewed several
    // times. To the host 60 s ahead every lease would look expired by its own clock; to the
    // one behind, far in the future.
    const JOBS: usize = 12;
    let slow = SandboxProcess::start(ledger, json!({ "latency_ms": 35_000, "jitter_ms": 0 }));
    add_http_provider(ledger, "slow", &slow.url, 90_000, 120_000, json!({}));
    let jobs = submit_many(ledger, JOBS, "slow");
    let wrappers: [&[&str]; 2] = [&ahead, &behind];
    let leases_started = Instant::now();
    let mut workers = start_workers_in_turn(ledger, &slow, &jobs, &wrappers, JOBS / 2);
    // Each worker reads its own clock when it names itself (a UUIDv7): the skew is real.
    for ((_, executor), skew) in workers.iter().zip([SKEW_S, -SKEW_S]) {
        let named = uuid_v7_ms(executor.trim_start_matches("executor-"));
        let off_s = (named - real_now_ms()) / 1000;
        assert!(
            (off_s - skew).abs() <= 20,
            "{executor} was named at {named}, {off_s} s off the real clock, not {skew} s"
        );
    }
    poll(Duration::from_secs(180), "every job succeeded", || {
        let counts = statuses(&all_jobs(ledger));
        assert!(!counts.contains_key("unknown"), "{counts:?}");
        assert!(!counts.contains_key("failed"), "{counts:?}");
        (counts.get("succeeded") == Some(&JOBS)).then_some(())
    });
    let leases_took = leases_started.elapsed();
    let keys = slow.keys();
    assert_eq!(keys.len(), JOBS, "each job sent once");
    assert_eq!(
        keys.into_iter().collect::<HashSet<_>>(),
        jobs.iter().cloned().collect::<HashSet<_>>()
    );
    let executors: HashSet<&str> = workers.iter().map(|(_, id)| id.as_str()).collect();
    for detail in details(ledger, &jobs) {
        let attempt = only_attempt(&detail);
        assert_eq!(attempt["state"], "succeeded", "{detail}");
        assert!(
            executors.contains(text(&attempt["executor_id"])),
            "{detail}"
        );
        let kinds = event_kinds(&detail);
        for kind in ["recovered_unknown", "attempt_unknown"] {
            assert!(!kinds.iter().any(|k| k == kind), "{kind}: {kinds:?}");
        }
        // The deciding times are the database's: within the test's run by the real clock,
        // not a minute either way.
        for field in ["created_at", "sent_at", "finished_at"] {
            let at = time_ms(text(&attempt[field]));
            assert!(
                at >= test_started - 5_000 && at <= real_now_ms() + 5_000,
                "{field} {} is not the database's time: {detail}",
                attempt[field]
            );
        }
        let sent = time_ms(text(&attempt["sent_at"]));
        let finished = time_ms(text(&attempt["finished_at"]));
        assert!(finished - sent >= 35_000, "answered after 35 s: {detail}");
    }

    // Backoffs: only the host 60 s ahead runs now. A throttled attempt sets a 5 s backoff by
    // the database's clock; by its own clock it would have ended 55 s before it began.
    let (behind_worker, _) = &mut workers[1];
    worker_line(&behind_worker.terminate(Duration::from_secs(30)));
    let throttling = SandboxProcess::start(
        ledger,
        json!({ "latency_ms": 5, "jitter_ms": 0, "throttle": 1.0, "retry_after_s": 5 }),
    );
    add_http_provider(ledger, "busy", &throttling.url, 10_000, 20_000, json!({}));
    let intent = json!({ "route": ["busy"], "input": { "n": 1 }, "max_attempts": 3 });
    let backoffs_started = Instant::now();
    let job_id = id(&ledger.submit("throttled", &intent.to_string())["job"]);
    let detail = poll(Duration::from_secs(120), "the throttled job failed", || {
        let detail = detail(ledger, &job_id);
        (detail["job"]["status"] == "failed").then_some(detail)
    });
    let backoffs_took = backoffs_started.elapsed();
    let ahead_id = workers[0].1.as_str();
    let attempts = attempts(&detail);
    assert_eq!(attempts.len(), 3, "max_attempts: {detail}");
    assert_eq!(throttling.log().len(), 3, "one request per attempt");
    for attempt in attempts {
        assert_eq!(attempt["state"], "failed", "{detail}");
        assert_eq!(attempt["http_status"], 429, "{detail}");
        assert_eq!(attempt["error"]["kind"], "throttled", "{detail}");
        assert_eq!(
            attempt["executor_id"], ahead_id,
            "sent by the host ahead: {detail}"
        );
    }
    let backoffs: Vec<&Value> = detail["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == "backoff_set")
        .collect();
    assert_eq!(
        backoffs.len(),
        3,
        "one backoff per throttled attempt: {detail}"
    );
    let mut margins = Vec::new();
    for (before, next) in attempts.iter().zip(&attempts[1..]) {
        let backoff = backoffs
            .iter()
            .find(|e| e["attempt_id"] == before["id"])
            .unwrap_or_else(|| panic!("no backoff after {}: {detail}", before["id"]));
        let not_before = time_ms(text(&backoff["detail"]["not_before"]));
        let failed_at = time_ms(text(&before["finished_at"]));
        assert!(
            not_before - failed_at >= 5_000,
            "Retry-After 5 s is honoured: {backoff} after {before}"
        );
        for field in ["created_at", "sent_at"] {
            let at = time_ms(text(&next[field]));
            assert!(
                at >= not_before,
                "attempt {} {field} {} is before the backoff's end {}: {detail}",
                next["number"],
                next[field],
                backoff["detail"]["not_before"]
            );
        }
        margins.push(time_ms(text(&next["sent_at"])) - not_before);
    }
    println!(
        "skewed hosts: {JOBS} jobs of 35 s each, leases renewed by hosts {SKEW_S} s ahead and \
         behind, all succeeded in {leases_took:?}; the host ahead sent 3 throttled attempts in \
         {backoffs_took:?}, each retry sent {margins:?} ms after its backoff ended"
    );
}

/// A provider that answers every request `429` with `Retry-After` as an HTTP date `wait_s`
/// seconds after now by the real clock, and its own `Date`.
fn throttling_by_date(wait_s: u64) -> RawServer {
    RawServer::start(move |_| {
        let now = SystemTime::now();
        let until = now + Duration::from_secs(wait_s);
        let response = String::from_utf8(json_response(
            "429 Too Many Requests",
            r#"{"error":"slow down"}"#,
        ))
        .expect("UTF-8");
        let (status, rest) = response.split_once("\r\n").expect("a status line");
        let dated = format!(
            "{status}\r\ndate: {}\r\nretry-after: {}\r\n{rest}",
            httpdate::fmt_http_date(now),
            httpdate::fmt_http_date(until)
        );
        dated.into_bytes()
    })
    .expect("a loopback server")
}

#[test]
fn a_retry_after_date_is_honoured_by_a_host_whose_clock_runs_ahead() {
    let lib = libfaketime();
    let ahead = faketime(&lib, &format!("+{SKEW_S}s"));
    let ahead: Vec<&str> = ahead.iter().map(String::as_str).collect();
    assert_faketime_skews(&ahead, SKEW_S);
    let cluster = Cluster::start("retry_after_date");
    let ledger = &cluster.ledger;

    // The provider asks for 20 s by a date on its own (true) clock. The host 60 s ahead
    // reads that date as 40 s past; only the provider's clock or the database's can tell how
    // long is left.
    let server = throttling_by_date(20);
    add_http_provider(ledger, "dated", &server.url, 10_000, 20_000, json!({}));
    let mut worker = Running::spawn_under(ledger, &ahead, &["worker"]);
    let intent = json!({ "route": ["dated"], "input": { "n": 1 }, "max_attempts": 2 });
    let job_id = id(&ledger.submit("dated", &intent.to_string())["job"]);
    let detail = poll(
        Duration::from_secs(120),
        "a second attempt throttled",
        || {
            assert!(worker.is_running(), "{} exited", worker.what);
            let detail = detail(ledger, &job_id);
            let second = &detail["attempts"][1];
            (second["state"] == "failed").then_some(detail)
        },
    );
    let attempts = attempts(&detail);
    assert_eq!(attempts.len(), 2, "max_attempts: {detail}");
    assert_eq!(server.requests().len(), 2, "one request per attempt");
    let backoff = detail["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "backoff_set" && e["attempt_id"] == attempts[0]["id"])
        .unwrap_or_else(|| panic!("no backoff after the first attempt: {detail}"));
    let failed_at = time_ms(text(&attempts[0]["finished_at"]));
    let not_before = time_ms(text(&backoff["detail"]["not_before"]));
    let sent_again = time_ms(text(&attempts[1]["sent_at"]));
    // The date has whole seconds, and the answer took a moment to be recorded.
    assert!(
        not_before - failed_at >= 18_000,
        "the backoff ends {} ms after the 429 was recorded, not about 20 s: {backoff}",
        not_before - failed_at
    );
    assert!(
        sent_again - failed_at >= 18_000,
        "the retry was sent {} ms after the 429, not about 20 s: {detail}",
        sent_again - failed_at
    );
}
