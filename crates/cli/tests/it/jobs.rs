//! `jobs`: newest first, keyset pages, and the status, search and provider filters; `job ID`:
//! what is known of an `unknown` attempt.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::processes::{add_http_provider, intent_for};
use common::{id, intent, job_ids, Ledger};
use onejob_testkit::RawServer;
use serde_json::{json, Value};

#[test]
fn jobs_pages_follow_the_cursor_newest_first() {
    let ledger = Ledger::new();
    let submitted: Vec<String> = (0..5)
        .map(|i| id(&ledger.submit(&format!("k{i}"), &intent(&i.to_string()))["job"]))
        .collect();
    let newest_first: Vec<String> = submitted.iter().rev().cloned().collect();

    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut args = vec!["jobs", "--limit", "2"];
        if let Some(cursor) = &after {
            args.extend(["--after", cursor.as_str()]);
        }
        let page = ledger.run(&args).ok();
        let page_ids = job_ids(&page);
        sizes.push(page_ids.len());
        seen.extend(page_ids);
        match &page["next"] {
            Value::String(cursor) => after = Some(cursor.clone()),
            Value::Null => break,
            other => panic!("next is {other}"),
        }
        assert!(sizes.len() < 10, "the cursor does not advance");
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(seen, newest_first);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 5);

    let all = ledger.run(&["jobs"]).ok();
    assert_eq!(job_ids(&all), newest_first);
    assert_eq!(all["next"], Value::Null);
}

#[test]
fn jobs_filter_by_status() {
    let ledger = Ledger::new();
    let submitted: Vec<String> = (0..5)
        .map(|i| id(&ledger.submit(&format!("k{i}"), &intent(&i.to_string()))["job"]))
        .collect();
    ledger.run(&["cancel", &submitted[1]]).ok();
    ledger.retry(&submitted[3]);

    let queued = ledger.run(&["jobs", "--status", "queued"]).ok();
    assert_eq!(
        job_ids(&queued),
        [&submitted[4], &submitted[2], &submitted[0]].map(String::clone)
    );
    assert!(queued["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .all(|j| j["status"] == "queued"));
    let cancelled = ledger.run(&["jobs", "--status", "cancelled"]).ok();
    assert_eq!(job_ids(&cancelled), [submitted[1].clone()]);
    let running = ledger.run(&["jobs", "--status", "running"]).ok();
    assert_eq!(job_ids(&running), [submitted[3].clone()]);
    let succeeded = ledger.run(&["jobs", "--status", "succeeded"]).ok();
    assert!(job_ids(&succeeded).is_empty());

    // Paging inside a filter.
    let page = ledger
        .run(&["jobs", "--status", "queued", "--limit", "2"])
        .ok();
    assert_eq!(
        job_ids(&page),
        [&submitted[4], &submitted[2]].map(String::clone)
    );
    let cursor = page["next"].as_str().expect("a next page");
    let rest = ledger
        .run(&["jobs", "--status", "queued", "--after", cursor])
        .ok();
    assert_eq!(job_ids(&rest), [submitted[0].clone()]);
}

#[test]
fn jobs_refuse_bad_pages() {
    let ledger = Ledger::new();
    let long = "k".repeat(256);
    for (args, field) in [
        (vec!["jobs", "--status", "done"], "status"),
        (vec!["jobs", "--limit", "0"], "limit"),
        (vec!["jobs", "--limit", "1001"], "limit"),
        (vec!["jobs", "--after", "page-2"], "after"),
        (vec!["jobs", "--search", &long], "search"),
    ] {
        let error = ledger.run(&args).err(2);
        assert_eq!(error["details"]["field"], field, "{args:?}");
    }
}

#[test]
fn jobs_are_found_by_key_id_and_provider() {
    let ledger = Ledger::new();
    let other = r#"{"name":"other","kind":"http","base_url":"http://127.0.0.1:9/other","soft_timeout_ms":1000,"hard_timeout_ms":5000,"honours_idempotency_key":false}"#;
    ledger.run(&["provider", "add", "--json", other]).ok();
    let invoice = |n: &str| id(&ledger.submit(&format!("invoice-{n}"), &intent(n))["job"]);
    let (first, second) = (invoice("1"), invoice("2"));
    let elsewhere = id(&ledger.submit("-refund", r#"{"route":["other"],"input":3}"#)["job"]);

    let found = ledger.run(&["jobs", "--search", "invoice-"]).ok();
    assert_eq!(job_ids(&found), [second.as_str(), first.as_str()]);
    let found = ledger.run(&["jobs", "--search", "invoice-1"]).ok();
    assert_eq!(job_ids(&found), [first.as_str()]);
    let found = ledger.run(&["jobs", "--search", "-ref"]).ok();
    assert_eq!(
        job_ids(&found),
        [elsewhere.as_str()],
        "a key may begin with a dash"
    );
    let by_id = ledger
        .run(&["jobs", "--search", &elsewhere[..].to_uppercase()])
        .ok();
    assert_eq!(job_ids(&by_id), [elsewhere.as_str()]);

    let at_other = ledger.run(&["jobs", "--provider", "other"]).ok();
    assert_eq!(job_ids(&at_other), [elsewhere.as_str()]);
    let at_primary = ledger
        .run(&[
            "jobs",
            "--provider",
            "primary",
            "--status",
            "queued",
            "--limit",
            "1",
        ])
        .ok();
    assert_eq!(job_ids(&at_primary), [second.as_str()]);
    let cursor = at_primary["next"].as_str().expect("a next page");
    let rest = ledger
        .run(&["jobs", "--provider", "primary", "--after", cursor])
        .ok();
    assert_eq!(job_ids(&rest), [first.as_str()]);
    assert_eq!(rest["next"], Value::Null);
    let none = ledger
        .run(&["jobs", "--provider", "other", "--search", "invoice"])
        .ok();
    assert!(job_ids(&none).is_empty());
}

/// The API key of the provider `job ID` shows evidence for, by environment variable.
const KEY_VAR: &str = "ONEJOB_TEST_JOB_EVIDENCE_KEY";
const KEY: &str = "sk-cli-evidence-7Yq2";

#[test]
fn job_shows_what_was_sent_and_what_came_back_for_an_unknown_attempt() {
    let ledger = Ledger::new();
    // Reads the request, then answers nothing until long after the hard deadline.
    let silent = RawServer::start(|_| {
        std::thread::sleep(Duration::from_secs(3));
        Vec::new()
    })
    .expect("server");
    let url = format!("{}/charges?account=42", silent.url);
    add_http_provider(
        &ledger,
        "silent",
        &url,
        200,
        700,
        json!({ "api_key_env": KEY_VAR }),
    );
    let job =
        id(&ledger.submit("evidence-1", &intent_for("silent", json!({ "amount": 7 })))["job"]);
    let worker = ledger
        .command(&["worker", "--once"])
        .env(KEY_VAR, KEY)
        .output()
        .expect("worker");
    assert!(worker.status.success(), "{worker:?}");

    let run = ledger.run(&["job", &job]);
    assert!(!run.stdout.contains(KEY), "{}", run.stdout);
    let detail = run.ok();
    assert_eq!(detail["attempts"][0]["state"], "unknown", "{detail}");
    let known = &detail["known"][0];
    assert_eq!(known["attempt_id"], detail["attempts"][0]["id"], "{known}");
    assert_eq!(known["number"], 1);
    assert_eq!(known["provider"], "silent");
    let sent = &known["sent"];
    assert_eq!(sent["at"], detail["attempts"][0]["sent_at"], "{known}");
    assert!(
        sent["executor_id"].as_str().is_some_and(|e| !e.is_empty()),
        "{known}"
    );
    assert_eq!(sent["method"], "POST");
    assert_eq!(sent["url"], format!("{}/charges", silent.url));
    assert_eq!(sent["headers"]["idempotency-key"], job.as_str(), "{known}");
    assert!(sent["headers"].get("authorization").is_none(), "{known}");
    let body = br#"{"amount":7}"#;
    assert_eq!(sent["body_bytes"], body.len(), "{known}");
    let requests = silent.requests();
    assert!(
        requests[0].ends_with(body),
        "the provider read the body counted"
    );
    assert_eq!(
        sent["body_sha256"].as_str().map(str::len),
        Some(64),
        "{known}"
    );
    assert_eq!(known["watched"], true, "{known}");
    assert_eq!(known["received"], Value::Null, "nothing came back: {known}");
    assert_eq!(known["rule"]["code"], "timeout_after_write", "{known}");
    assert_eq!(known["tried"], json!([]), "{known}");
}
