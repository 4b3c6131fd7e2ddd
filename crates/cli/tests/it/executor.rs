//! The executor's faces across real processes: `worker`, `submit --wait` and `reconcile`,
//! against `onejob sandbox` and other real HTTP servers on 127.0.0.1, with workers killed
//! mid-flight and two workers sharing one ledger file.

use crate::common;

use std::collections::HashSet;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::processes::{
    add_http_provider, between_ms, detail, event_kinds, intent_for, poll, signal, submit_many,
    worker_line, Running, SandboxProcess,
};
use common::{finish, id, parse, Ledger, Run};
use onejob_testkit::raw_http::json_response;
use onejob_testkit::RawServer;
use serde_json::json;

/// A server that reads each request whole and answers `400` to it.
fn refusing_server() -> String {
    let server = RawServer::start(|_| {
        json_response(
            "400 Bad Request",
            r#"{"error":"refused by the test server"}"#,
        )
    })
    .expect("a loopback server");
    format!("{}/charge", server.url)
}

/// `submit --wait`, bounded; its run and how long it took.
fn submit_wait(ledger: &Ledger, key: &str, intent: &str, more: &[&str]) -> (Run, Duration) {
    let mut args = vec!["submit", "--key", key, "--intent", intent, "--wait"];
    args.extend_from_slice(more);
    let started = Instant::now();
    let child = ledger.spawn(&args);
    let guard = Reaper::new(child);
    let run = guard.wait_with_output(Duration::from_secs(40));
    (run, started.elapsed())
}

/// Bounded wait for a child whose stdout and stderr are both piped and captured.
struct Reaper(Option<Child>);

impl Reaper {
    fn new(child: Child) -> Reaper {
        Reaper(Some(child))
    }

    fn wait_with_output(mut self, limit: Duration) -> Run {
        let deadline = Instant::now() + limit;
        let child = self.0.as_mut().expect("a child");
        while child.try_wait().expect("try_wait").is_none() {
            assert!(Instant::now() < deadline, "still running after {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        let child = self.0.take().expect("a child");
        finish(child.wait_with_output().expect("output"))
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn worker_killed_mid_flight_leaves_every_attempt_unknown_and_nothing_resent() {
    let ledger = Ledger::empty();
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 60_000, "jitter_ms": 0 }));
    add_http_provider(&ledger, "slow", &sandbox.url, 120_000, 180_000, json!({}));
    let jobs = submit_many(&ledger, 20, "slow");

    let mut first = Running::spawn(&ledger, &["worker"]);
    poll(
        Duration::from_secs(15),
        "20 requests at the sandbox",
        || (sandbox.log().len() >= 20).then_some(()),
    );
    first.kill();

    let mut second = Running::spawn(&ledger, &["worker"]);
    // The dead worker's leases (10 s) expire; then every attempt is unknown, none re-sent.
    poll(Duration::from_secs(30), "20 unknown jobs", || {
        let page = ledger
            .run(&["jobs", "--status", "unknown", "--limit", "100"])
            .ok();
        (page["jobs"].as_array().map(Vec::len) == Some(20)).then_some(())
    });
    let stopped = second.terminate(Duration::from_secs(10));
    worker_line(&stopped);

    assert_eq!(sandbox.log().len(), 20, "nothing was sent twice");
    assert_eq!(
        sandbox.keys().into_iter().collect::<HashSet<_>>(),
        jobs.iter().cloned().collect::<HashSet<_>>(),
        "one request per job, keyed by the job's id"
    );
    for job_id in &jobs {
        let detail = detail(&ledger, job_id);
        assert_eq!(detail["job"]["status"], "unknown", "{detail}");
        let attempts = detail["attempts"].as_array().expect("attempts");
        assert_eq!(attempts.len(), 1, "{detail}");
        assert_eq!(attempts[0]["state"], "unknown", "{detail}");
        let kinds = event_kinds(&detail);
        for kind in [
            "submitted",
            "attempt_created",
            "attempt_sent",
            "recovered_unknown",
        ] {
            assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
        }
    }
}

#[test]
fn a_running_worker_picks_up_other_processes_jobs_and_stops_on_signals() {
    let ledger = Ledger::empty();
    let quick = SandboxProcess::start(&ledger, json!({ "latency_ms": 10, "jitter_ms": 0 }));
    let slow = SandboxProcess::start(&ledger, json!({ "latency_ms": 60_000, "jitter_ms": 0 }));
    add_http_provider(&ledger, "quick", &quick.url, 5_000, 10_000, json!({}));
    add_http_provider(&ledger, "slow", &slow.url, 120_000, 180_000, json!({}));
    let mut worker = Running::spawn(&ledger, &["worker"]);

    let job_id = id(&ledger.submit("later", &intent_for("quick", json!(1)))["job"]);
    poll(Duration::from_secs(5), "the worker's answer", || {
        (detail(&ledger, &job_id)["job"]["status"] == "succeeded").then_some(())
    });
    ledger.submit("held", &intent_for("slow", json!(2)));
    poll(Duration::from_secs(5), "the held request", || {
        (slow.log().len() == 1).then_some(())
    });

    // The first signal waits for the attempt in flight; the second stops at once.
    signal(&worker, "TERM");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        worker.child.try_wait().expect("try_wait").is_none(),
        "the worker waits for its attempt in flight"
    );
    signal(&worker, "INT");
    let line = worker_line(&worker.wait(Duration::from_secs(10)));
    assert_eq!(line["worker"]["forced"], true, "{line}");
    assert_eq!(quick.log().len(), 1);
    assert_eq!(slow.log().len(), 1);
}

/// A running worker claims a job another process submitted at once, woken by the ledger's
/// change feed, not at its next look at the ledger (every second): SPEC §12's "within a
/// second" with room to spare. Six submits land at different points of the worker's second; a
/// worker that only polled would claim about half of them later than half a second.
#[test]
fn a_running_worker_claims_another_process_submit_well_within_a_second() {
    let ledger = Ledger::empty();
    let quick = SandboxProcess::start(&ledger, json!({ "latency_ms": 10, "jitter_ms": 0 }));
    add_http_provider(&ledger, "quick", &quick.url, 5_000, 10_000, json!({}));
    let mut worker = Running::spawn(&ledger, &["worker"]);
    let first = id(&ledger.submit("first", &intent_for("quick", json!(-1)))["job"]);
    poll(Duration::from_secs(30), "the first job succeeded", || {
        assert!(worker.is_running(), "{} exited", worker.what);
        (detail(&ledger, &first)["job"]["status"] == "succeeded").then_some(())
    });

    let mut waits = Vec::new();
    for n in 0..6u64 {
        std::thread::sleep(Duration::from_millis(150 + 130 * n));
        let job = id(&ledger.submit(&format!("woken-{n}"), &intent_for("quick", json!(n)))["job"]);
        let claimed = poll(Duration::from_secs(30), "the job claimed", || {
            let detail = detail(&ledger, &job);
            let claimed = detail["attempts"].as_array().is_some_and(|a| !a.is_empty());
            claimed.then_some(detail)
        });
        waits.push(between_ms(
            &claimed["job"]["created_at"],
            &claimed["attempts"][0]["created_at"],
        ));
    }
    println!("each job was claimed this many ms after its submit: {waits:?}");
    assert!(
        waits.iter().all(|&ms| ms < 500),
        "a running worker claimed other processes' jobs {waits:?} ms after their submits"
    );
    assert!(worker.is_running(), "{} exited", worker.what);
}

#[test]
fn a_pending_attempt_left_by_a_crash_is_sent_exactly_once_after_restart() {
    let ledger = Ledger::empty();
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 10, "jitter_ms": 0 }));
    add_http_provider(&ledger, "fast", &sandbox.url, 5_000, 10_000, json!({}));
    let submitted = ledger.submit("crash-1", &intent_for("fast", json!({ "amount": 45 })));
    let job_id = id(&submitted["job"]);
    // A pending attempt committed and never sent: what a worker leaves when it dies between
    // the two commits.
    let attempt_id = ledger.retry(&job_id);
    let before = detail(&ledger, &job_id);
    assert_eq!(before["attempts"][0]["state"], "pending", "{before}");
    assert!(sandbox.log().is_empty());

    for _ in 0..2 {
        let run = Running::spawn(&ledger, &["worker", "--once"]).wait(Duration::from_secs(20));
        worker_line(&run);
        assert_eq!(sandbox.keys(), vec![job_id.clone()], "sent exactly once");
    }
    let after = detail(&ledger, &job_id);
    assert_eq!(after["job"]["status"], "succeeded", "{after}");
    assert_eq!(after["job"]["completed_by"], attempt_id.as_str(), "{after}");
    let attempts = after["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "{after}");
    assert_eq!(attempts[0]["state"], "succeeded", "{after}");
}

#[test]
fn two_workers_on_one_database_send_each_attempt_once() {
    let ledger = Ledger::empty();
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 20, "jitter_ms": 0 }));
    add_http_provider(&ledger, "shared", &sandbox.url, 5_000, 10_000, json!({}));
    let jobs = submit_many(&ledger, 200, "shared");

    let mut workers = [
        Running::spawn(&ledger, &["worker", "--once"]),
        Running::spawn(&ledger, &["worker", "--once"]),
    ];
    let worker_ids: HashSet<String> = workers
        .iter_mut()
        .map(|w| {
            let line = worker_line(&w.wait(Duration::from_secs(40)));
            line["worker"]["id"].as_str().expect("id").to_owned()
        })
        .collect();
    assert_eq!(worker_ids.len(), 2, "two executors: {worker_ids:?}");

    let keys = sandbox.keys();
    assert_eq!(keys.len(), 200, "one request per attempt");
    let distinct: HashSet<String> = keys.into_iter().collect();
    assert_eq!(distinct, jobs.iter().cloned().collect::<HashSet<_>>());

    let mut senders = HashSet::new();
    for batch in jobs.chunks(8) {
        let children: Vec<Child> = batch.iter().map(|j| ledger.spawn(&["job", j])).collect();
        for child in children {
            let detail = finish(child.wait_with_output().expect("job exits")).ok();
            assert_eq!(detail["job"]["status"], "succeeded", "{detail}");
            let attempts = detail["attempts"].as_array().expect("attempts");
            assert_eq!(attempts.len(), 1, "{detail}");
            assert_eq!(attempts[0]["state"], "succeeded", "{detail}");
            let sender = attempts[0]["executor_id"].as_str().expect("executor_id");
            senders.insert(sender.to_owned());
        }
    }
    assert!(
        (1..=2).contains(&senders.len()) && senders.is_subset(&worker_ids),
        "attempts were sent by {senders:?}, the workers were {worker_ids:?}"
    );
}

#[test]
fn submit_wait_exit_codes() {
    let ledger = Ledger::empty();
    let quick = SandboxProcess::start(&ledger, json!({ "latency_ms": 10, "jitter_ms": 0 }));
    let silent = SandboxProcess::start(
        &ledger,
        json!({ "latency_ms": 10, "jitter_ms": 0, "never_answer": 1.0 }),
    );
    let slow = SandboxProcess::start(&ledger, json!({ "latency_ms": 5_000, "jitter_ms": 0 }));
    add_http_provider(&ledger, "quick", &quick.url, 5_000, 10_000, json!({}));
    add_http_provider(
        &ledger,
        "strict",
        &refusing_server(),
        5_000,
        10_000,
        json!({}),
    );
    add_http_provider(&ledger, "silent", &silent.url, 300, 30_000, json!({}));
    add_http_provider(&ledger, "slow", &slow.url, 10_000, 20_000, json!({}));

    let input = json!({ "prompt": "hello" });
    let (run, _) = submit_wait(&ledger, "ok", &intent_for("quick", input.clone()), &[]);
    let reply = run.ok();
    assert_eq!(reply["replayed"], false);
    assert_eq!(reply["job"]["status"], "succeeded", "{reply}");
    assert_eq!(reply["job"]["result"]["echo"], input, "{reply}");
    // The same intent again replays the finished job and exits by its outcome at once.
    let (run, _) = submit_wait(&ledger, "ok", &intent_for("quick", input.clone()), &[]);
    assert_eq!(run.ok()["replayed"], true);

    let (run, _) = submit_wait(
        &ledger,
        "refused",
        &intent_for("strict", input.clone()),
        &[],
    );
    assert_eq!(run.code, 10, "{run:?}");
    let reply = parse(&run.stdout);
    assert_eq!(reply["job"]["status"], "failed", "{reply}");
    assert!(reply["job"]["error"]["code"].is_string(), "{reply}");

    let (run, took) = submit_wait(&ledger, "silent", &intent_for("silent", input.clone()), &[]);
    assert_eq!(run.code, 11, "{run:?}");
    let reply = parse(&run.stdout);
    assert_eq!(reply["job"]["status"], "unknown", "{reply}");
    assert_eq!(reply["job"]["error"]["code"], "unknown", "{reply}");
    assert!(
        took < Duration::from_secs(20),
        "waited for the hard deadline: {took:?}"
    );

    let (run, _) = submit_wait(
        &ledger,
        "slow",
        &intent_for("slow", input.clone()),
        &["--timeout-s", "1"],
    );
    assert_eq!(run.code, 12, "{run:?}");
    let reply = parse(&run.stdout);
    assert_eq!(reply["job"]["error"]["code"], "wait_timeout", "{reply}");
    assert!(
        ["queued", "running"].contains(&reply["job"]["status"].as_str().unwrap_or_default()),
        "{reply}"
    );

    // Errors before the wait keep their own codes.
    let error = ledger
        .run(&["submit", "--key", "k", "--intent", "{}", "--timeout-s", "5"])
        .err(2);
    assert_eq!(error["details"]["field"], "timeout_s");
    let other = intent_for("quick", json!({ "prompt": "something else" }));
    let (run, _) = submit_wait(&ledger, "ok", &other, &[]);
    run.err(3);
}

#[test]
fn the_built_in_sandbox_answers_on_a_new_database() {
    let ledger = Ledger::empty();
    let intent = r#"{"route": ["sandbox"], "input": {"prompt": "hello"}}"#;
    let (run, _) = submit_wait(&ledger, "k", intent, &[]);
    let reply = run.ok();
    assert_eq!(reply["job"]["status"], "succeeded", "{reply}");
    assert_eq!(reply["job"]["result"]["echo"]["prompt"], "hello", "{reply}");
}

#[test]
fn reconcile_from_the_command_line() {
    let ledger = Ledger::empty();
    let sandbox = SandboxProcess::start(
        &ledger,
        json!({ "latency_ms": 10, "jitter_ms": 0, "drop_after_processing": 1.0 }),
    );
    let status_url = json!({ "status_url": "{base_url}/status/{idempotency_key}" });
    add_http_provider(&ledger, "dropper", &sandbox.url, 1_000, 2_000, status_url);
    let input = json!({ "amount": 45 });
    let (run, _) = submit_wait(
        &ledger,
        "charge-45",
        &intent_for("dropper", input.clone()),
        &[],
    );
    assert_eq!(run.code, 11, "{run:?}");
    let job_id = id(&parse(&run.stdout)["job"]);
    let before = detail(&ledger, &job_id);
    assert_eq!(before["attempts"][0]["state"], "unknown", "{before}");
    let attempt_id = id(&before["attempts"][0]);

    let error = ledger
        .run(&["--owner", "other", "reconcile", &attempt_id])
        .err(5);
    assert_eq!(error["code"], "not_found");

    // The request may still be answered until its hard deadline: nothing is asked before.
    let early = ledger.run(&["reconcile", &attempt_id]).ok();
    assert_eq!(early["outcome"], "too_early", "{early}");
    assert_eq!(early["attempt"]["state"], "unknown", "{early}");
    let due_in = early["due_in_ms"].as_u64().expect("due_in_ms");
    assert!((1..=2_000).contains(&due_in), "{early}");
    std::thread::sleep(std::time::Duration::from_millis(due_in + 50));

    let reply = ledger.run(&["reconcile", &attempt_id]).ok();
    assert_eq!(reply["outcome"], "completed", "{reply}");
    assert_eq!(reply["job"]["status"], "succeeded", "{reply}");
    assert_eq!(reply["job"]["result"]["echo"], input, "{reply}");
    assert_eq!(reply["attempt"]["id"], attempt_id.as_str(), "{reply}");
    assert_eq!(reply["attempt"]["state"], "succeeded", "{reply}");
    assert_eq!(sandbox.log().len(), 1, "the lookup sent nothing");

    // Settled now: another lookup is an invalid transition.
    let error = ledger.run(&["reconcile", &attempt_id]).err(4);
    assert_eq!(error["code"], "invalid_transition");
}

#[test]
fn submit_wait_on_a_terminal_is_json_only() {
    let ledger = Ledger::empty();
    let intent = r#"{"route": ["sandbox"], "input": {"prompt": "quiet"}}"#;
    let (run, _) = submit_wait(&ledger, "k", intent, &[]);
    // Not a terminal here: one JSON line on stdout and nothing at all on stderr.
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
    assert_eq!(parse(&run.stdout)["job"]["status"], "succeeded");

    // With stderr on a terminal, the progress line goes there and stdout stays one JSON line.
    let Some(script) = which("script") else {
        return;
    };
    let out = ledger.home().join("out.json");
    let typescript = ledger.home().join("typescript");
    let command = format!(
        "{} submit --key tty --intent '{}' --wait > '{}'",
        env!("CARGO_BIN_EXE_onejob"),
        r#"{"route": ["sandbox"], "input": {"prompt": "tty"}}"#,
        out.display()
    );
    let child = std::process::Command::new(script)
        .args(["-qec", &command])
        .arg(&typescript)
        .env("ONEJOB_DB", &ledger.db)
        .env_remove("ONEJOB_OWNER")
        .env("HOME", ledger.home())
        .env("XDG_DATA_HOME", ledger.home().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    let run = Reaper::new(child).wait_with_output(Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run:?}");
    let stdout = std::fs::read_to_string(&out).expect("stdout file");
    assert_eq!(parse(&stdout)["job"]["status"], "succeeded");
    let terminal = std::fs::read_to_string(&typescript).expect("typescript");
    assert!(terminal.contains("\rjob "), "a progress line: {terminal:?}");
    assert!(
        terminal.contains("\r\x1b[K"),
        "the line is cleared: {terminal:?}"
    );
    assert!(
        !terminal.contains(r#"{"job""#),
        "no JSON on the terminal: {terminal:?}"
    );
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A provider that holds each request 300 ms and counts how many it holds at once.
fn counting_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen = most.clone();
    let server = RawServer::start(move |_| {
        let holding = now.fetch_add(1, Ordering::SeqCst) + 1;
        seen.fetch_max(holding, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        now.fetch_sub(1, Ordering::SeqCst);
        json_response("200 OK", r#"{"charged": true}"#)
    })
    .expect("a loopback server");
    (format!("{}/charge", server.url), most)
}

#[test]
fn worker_concurrency_bounds_the_attempts_in_flight() {
    use std::sync::atomic::Ordering;
    for (concurrency, want) in [(Some("2"), 2), (None, 6)] {
        let ledger = Ledger::empty();
        let (url, most) = counting_server();
        add_http_provider(&ledger, "slow", &url, 10_000, 20_000, json!({}));
        let ids = submit_many(&ledger, 6, "slow");
        let mut args = vec!["worker", "--once"];
        if let Some(n) = concurrency {
            args.extend(["--concurrency", n]);
        }
        ledger.run(&args).ok();
        for id in &ids {
            assert_eq!(detail(&ledger, id)["job"]["status"], "succeeded", "{id}");
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            want,
            "--concurrency {concurrency:?}: at most {want} requests held at once"
        );
    }
    let refused = Ledger::empty().run(&["worker", "--once", "--concurrency", "0"]);
    assert_eq!(refused.err(2)["details"]["field"], "concurrency");
}
