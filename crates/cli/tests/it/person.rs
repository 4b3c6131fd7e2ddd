//! A person's decisions through `resolve`: verdicts, `--retry-on`, and the moves SPEC §4 refuses;
//! and through `bulk`, on every job a filter matches (SPEC §16).

use crate::common;

use std::io::{BufRead, BufReader};

use common::{id, intent, leave_unknown, parse, Ledger, Run};
use onejob_engine::Engine;
use serde_json::Value;

/// A fresh ledger with one job and a pending attempt on it: the ledger, the job's id and the
/// attempt's id.
fn job_with_a_pending_attempt() -> (Ledger, String, String) {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let attempt = ledger.retry(&job);
    (ledger, job, attempt)
}

#[test]
fn resolve_abandoned_with_retry_on_then_fail_the_next_attempt() {
    let (ledger, job, first) = job_with_a_pending_attempt();

    let reply = ledger
        .run(&[
            "resolve",
            &first,
            "--as",
            "abandoned",
            "--retry-on",
            "primary",
            "--note",
            "the provider is silent",
        ])
        .ok();
    assert_eq!(reply["job"]["id"], job.as_str());
    assert_eq!(reply["job"]["status"], "running");
    assert_eq!(reply["attempt"]["id"], first.as_str());
    assert_eq!(reply["attempt"]["state"], "abandoned");
    let next = &reply["next_attempt"];
    assert_eq!(next["state"], "pending");
    assert_eq!(next["number"], 2);
    assert_eq!(next["provider"], "primary");
    let second = id(next);

    // A pending attempt was never sent: "it went through" is not a move it can make.
    let error = ledger
        .run(&[
            "resolve",
            &second,
            "--as",
            "succeeded",
            "--result",
            r#"{"ok":true}"#,
        ])
        .err(4);
    assert_eq!(error["code"], "invalid_transition");
    assert_eq!(error["details"]["id"], second.as_str());
    assert_eq!(error["details"]["from"], "pending");
    assert_eq!(error["details"]["to"], "succeeded");

    let reply = ledger.run(&["resolve", &second, "--as", "failed"]).ok();
    assert_eq!(reply["attempt"]["state"], "failed");
    assert_eq!(reply["job"]["status"], "queued");
    assert!(reply.get("next_attempt").is_none(), "{reply}");

    // Both verdicts are in the history, the note with them.
    let detail = ledger.run(&["job", &job]).ok();
    let states: Vec<_> = detail["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["state"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(states, ["abandoned", "failed"]);
    let events = detail["events"].as_array().expect("events");
    let resolved: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "resolved_by_person")
        .collect();
    assert_eq!(resolved.len(), 2, "{events:?}");
    assert_eq!(resolved[0]["detail"]["note"], "the provider is silent");
    assert_eq!(resolved[0]["actor"], "user");

    // A finished attempt cannot be resolved again.
    let error = ledger
        .run(&["resolve", &second, "--as", "abandoned"])
        .err(4);
    assert_eq!(error["code"], "invalid_transition");
}

#[test]
fn resolve_refuses_bad_arguments_before_touching_the_attempt() {
    let (ledger, job, attempt) = job_with_a_pending_attempt();

    let missing = format!("@{}", ledger.home().join("nope.json").display());
    let refused: [(&[&str], &str); 5] = [
        (&["--as", "succeeded", "--result", "{ok: true}"], "result"),
        (&["--as", "succeeded", "--result", &missing], "result"),
        (&["--as", "failed", "--result", "1"], "result"),
        (&["--as", "perhaps"], "as"),
        (&[], "as"),
    ];
    for (options, field) in refused {
        let args = [&["resolve", attempt.as_str()], options].concat();
        let error = ledger.run(&args).err(2);
        assert_eq!(error["details"]["field"], field, "{args:?}");
    }

    let detail = ledger.run(&["job", &job]).ok();
    assert_eq!(detail["attempts"][0]["state"], "pending");
}

#[test]
fn cancel_abandons_a_pending_attempt_that_was_never_sent() {
    let (ledger, job, attempt) = job_with_a_pending_attempt();
    let reply = ledger.run(&["cancel", &job]).ok();
    assert_eq!(reply["job"]["status"], "cancelled");
    assert_eq!(reply["job"]["error"]["code"], "cancelled");
    let detail = ledger.run(&["job", &job]).ok();
    assert_eq!(detail["attempts"][0]["id"], attempt.as_str());
    assert_eq!(detail["attempts"][0]["state"], "abandoned");
    assert!(detail["events"]
        .as_array()
        .expect("events")
        .iter()
        .any(|e| e["kind"] == "attempt_abandoned" && e["detail"]["never_sent"] == true));
}

/// `n` jobs of the owner `local` routed to `primary`, each with one `unknown` attempt there,
/// written through the engine as an executor would leave them after an outage.
fn unknown_jobs(ledger: &Ledger, prefix: &str, n: usize) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let engine = Engine::open(&ledger.db).await.expect("open");
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..n {
            let (engine, key) = (engine.clone(), format!("{prefix}-{i}"));
            tasks.spawn(async move {
                let job = engine
                    .submit("local", &key, &intent("1"))
                    .await
                    .expect("submit")
                    .job;
                leave_unknown(&engine, &job.id).await;
                job.id
            });
        }
        let mut ids = Vec::new();
        while let Some(id) = tasks.join_next().await {
            ids.push(id.expect("task"));
        }
        engine.close().await;
        ids
    })
}

/// Each job's history, as the engine reads it.
fn histories(ledger: &Ledger, jobs: &[String]) -> Vec<onejob_engine::JobDetail> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let engine = Engine::open(&ledger.db).await.expect("open");
        let mut details = Vec::new();
        for job in jobs {
            details.push(engine.job("local", job).await.expect("job"));
        }
        engine.close().await;
        details
    })
}

/// The kinds of the events of a job that name the bulk operation `op`.
fn naming<'d>(detail: &'d onejob_engine::JobDetail, op: &str) -> Vec<&'d str> {
    detail
        .events
        .iter()
        .filter(|e| e.detail["bulk"] == op)
        .map(|e| e.kind.as_str())
        .collect()
}

/// The lines a `bulk` run printed on stderr, each one JSON document.
fn progress_lines(run: &Run) -> Vec<Value> {
    run.stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect()
}

#[test]
fn bulk_answers_its_operation_and_refuses_bad_requests_as_every_command_does() {
    let ledger = Ledger::new();
    let unknown = unknown_jobs(&ledger, "out", 3);
    let done = id(&ledger.submit("done", &intent("2"))["job"]);
    ledger.run(&["cancel", &done]).ok();

    let dry = ledger.run(&["bulk", "cancel", "--dry-run"]).ok();
    assert_eq!(dry["bulk"]["matched"], 4, "{dry}");
    assert_eq!(dry["bulk"]["changed"], 0);
    assert_eq!(dry["bulk"]["id"], Value::Null);

    // No key given: one is made, and said, so the operation can be repeated under it.
    let run = ledger.run(&["bulk", "cancel"]);
    assert_eq!(run.code, 0, "{run:?}");
    let reply = parse(&run.stdout);
    let bulk = &reply["bulk"];
    let (op, key) = (id(bulk), bulk["key"].as_str().expect("key").to_owned());
    assert!(key.starts_with("bulk-"), "{bulk}");
    assert_eq!(reply["replayed"], false);
    assert_eq!(
        (bulk["matched"].as_u64(), bulk["changed"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(bulk["done"], true);
    assert_eq!(
        bulk["skipped"],
        serde_json::json!([{ "job_id": done, "code": "invalid_transition" }])
    );
    let lines = progress_lines(&run);
    assert_eq!(lines[0]["bulk_started"]["key"], key.as_str());
    assert_eq!(lines.last().expect("a line")["bulk_progress"]["decided"], 4);
    for detail in histories(&ledger, &unknown) {
        assert_eq!(naming(&detail, &op), ["job_cancelled"]);
    }

    let again = ledger.run(&["bulk", "cancel", "--key", &key]);
    let again = parse(&again.stdout);
    assert_eq!(again["replayed"], true);
    assert_eq!(again["bulk"], reply["bulk"]);

    let conflict = ledger
        .run(&["bulk", "cancel", "--key", &key, "--search", "out"])
        .err(3);
    assert_eq!(conflict["code"], "idempotency_conflict");
    assert_eq!(conflict["details"]["existing_job_id"], op.as_str());
    let error = ledger.run(&["bulk", "resolve"]).err(2);
    assert_eq!(error["details"]["field"], "as");
    let error = ledger.run(&["bulk", "retry", "--as", "failed"]).err(2);
    assert_eq!(error["details"]["field"], "as");
    let error = ledger
        .run(&["bulk", "resolve", "--as", "failed", "--status", "queued"])
        .err(2);
    assert_eq!(error["details"]["field"], "status");
    let error = ledger
        .run(&["bulk", "cancel", "--created-after", "last tuesday"])
        .err(2);
    assert_eq!(error["details"]["field"], "created_after");
    let error = ledger
        .run(&["bulk", "retry", "--retry-on", "nowhere"])
        .err(2);
    assert_eq!(error["details"]["field"], "provider");
}

/// `onejob jobs` takes the filters `onejob bulk` takes (the open attempt's error kind, the
/// creation times), and lists what a bulk operation with the same filter would match.
#[test]
fn jobs_take_the_error_kind_and_the_creation_times_a_bulk_operation_takes() {
    let ledger = Ledger::new();
    let mut stuck = unknown_jobs(&ledger, "kinds", 3);
    stuck.sort();
    let queued = id(&ledger.submit("kinds-queued", &intent("1"))["job"]);
    let listed = |args: &[&str]| {
        let mut all = vec!["jobs"];
        all.extend_from_slice(args);
        let page = ledger.run(&all).ok();
        let mut ids: Vec<String> = page["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .map(id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(listed(&["--error-kind", "soft_timeout"]), stuck);
    assert!(listed(&["--error-kind", "connection_broken"]).is_empty());
    let mut every = stuck.clone();
    every.push(queued);
    every.sort();
    assert_eq!(listed(&["--created-after", "2000-01-01"]), every);
    assert!(listed(&["--created-before", "2000-01-01"]).is_empty());
    let error = ledger
        .run(&["jobs", "--created-before", "last tuesday"])
        .err(2);
    assert_eq!(error["details"]["field"], "created_before");

    let dry = ledger.run(&[
        "bulk",
        "resolve",
        "--as",
        "abandoned",
        "--error-kind",
        "soft_timeout",
        "--dry-run",
    ]);
    assert_eq!(parse(&dry.stdout)["bulk"]["matched"], 3, "{dry:?}");
}

#[test]
fn a_bulk_operation_killed_midway_finishes_when_repeated() {
    let ledger = Ledger::new();
    let jobs = unknown_jobs(&ledger, "outage", 400);
    let args = [
        "bulk",
        "resolve",
        "--as",
        "abandoned",
        "--provider",
        "primary",
        "--error-kind",
        "soft_timeout",
        "--key",
        "after-the-outage",
    ];

    // Killed with SIGKILL as soon as its first batch is committed.
    let mut child = ledger.spawn(&args);
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut op = None;
    for line in stderr.lines() {
        let doc: Value = serde_json::from_str(&line.expect("a line")).expect("JSON");
        if let Some(started) = doc.get("bulk_started") {
            op = started["id"].as_str().map(str::to_owned);
        }
        if doc.get("bulk_progress").is_some() {
            child.kill().expect("SIGKILL");
            break;
        }
    }
    child.wait().expect("reaped");
    let op = op.expect("the operation's id on stderr");
    let midway = histories(&ledger, &jobs)
        .iter()
        .filter(|d| !naming(d, &op).is_empty())
        .count();
    assert!(
        midway > 0 && midway < jobs.len(),
        "killed midway: {midway} of {} decided",
        jobs.len()
    );

    let run = ledger.run(&args);
    assert_eq!(run.code, 0, "{run:?}");
    let reply = parse(&run.stdout);
    assert_eq!(reply["replayed"], true);
    let bulk = &reply["bulk"];
    assert_eq!(bulk["id"], op.as_str());
    assert_eq!(bulk["matched"], 400);
    assert_eq!(bulk["changed"], 400, "{bulk}");
    assert_eq!(bulk["skipped"], serde_json::json!([]));
    assert_eq!(bulk["done"], true);
    for detail in histories(&ledger, &jobs) {
        assert_eq!(naming(&detail, &op), ["resolved_by_person"], "decided once");
        assert_eq!(detail.attempts.len(), 1);
        assert_eq!(detail.attempts[0].state.as_str(), "abandoned");
    }
}
