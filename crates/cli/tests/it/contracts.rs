//! `onejob contract add|list|remove|check` through the real binary, against the sandbox's chat mode
//! run as `onejob sandbox` on loopback.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::{parse, Ledger};
use serde_json::{json, Value};

/// `onejob sandbox` on a free loopback port, stopped and reaped when dropped.
struct SandboxProcess {
    child: Child,
    url: String,
}

impl SandboxProcess {
    fn start(dials: Value) -> SandboxProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_onejob"))
            .args([
                "sandbox",
                "--listen",
                "127.0.0.1:0",
                "--dials",
                &dials.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the sandbox");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("its url");
        let doc: Value = serde_json::from_str(&line).expect("json");
        let url = doc["sandbox"]["url"].as_str().expect("url").to_owned();
        SandboxProcess { child, url }
    }
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn contract() -> Value {
    json!({
        "name": "summary",
        "schema": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
        "template": {"system": "You summarise.", "user": "Summarise: {{text}}"},
        "samples": [{"text": "one"}, {"text": "two"}]
    })
}

fn openai(name: &str, sandbox: &SandboxProcess, extra: Value) -> String {
    let mut config = json!({
        "name": name, "kind": "openai", "base_url": format!("{}/v1", sandbox.url),
        "model": "gpt-4o-mini", "context_window": 128000,
        "soft_timeout_ms": 2000, "hard_timeout_ms": 5000, "honours_idempotency_key": false
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    config.to_string()
}

const QUICK: &str = r#"{"latency_ms": 5, "jitter_ms": 0}"#;

#[test]
fn contracts_are_added_listed_and_checked_with_the_spec_exit_codes() {
    let ledger = Ledger::new();
    let good = SandboxProcess::start(serde_json::from_str(QUICK).expect("dials"));
    let bad = SandboxProcess::start(json!({"latency_ms": 5, "jitter_ms": 0, "extra_key": 1.0}));
    ledger
        .run(&[
            "provider",
            "add",
            "--json",
            &openai("good", &good, json!({})),
        ])
        .ok();
    ledger
        .run(&["provider", "add", "--json", &openai("bad", &bad, json!({}))])
        .ok();

    let file = ledger.home().join("contract.json");
    std::fs::write(&file, contract().to_string()).expect("write");
    let added = ledger
        .run(&["contract", "add", "--json", &format!("@{}", file.display())])
        .ok();
    assert_eq!(added["contract"]["name"], json!("summary"));
    assert_eq!(added["replaced"], json!(false));
    assert!(added["contract"]["hash"]
        .as_str()
        .is_some_and(|h| h.len() == 64));

    let passed = ledger.run(&["contract", "check", "summary", "--provider", "good"]);
    let doc = passed.ok();
    assert_eq!(doc["check"]["passed"], json!(true));
    let samples = doc["check"]["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 2);
    for sample in samples {
        assert_eq!(sample["passed"], json!(true));
        assert!(sample["reason"].is_string());
        assert!(sample["latency_ms"].is_u64());
        assert!(
            sample["prompt_tokens"].is_u64(),
            "counted with tiktoken: {sample}"
        );
    }

    let failed = ledger.run(&["contract", "check", "summary", "--provider", "bad"]);
    assert_eq!(failed.code, 13, "{failed:?}");
    let doc = parse(&failed.stdout);
    assert_eq!(doc["check"]["passed"], json!(false));
    assert!(doc["check"]["samples"][0]["reason"]
        .as_str()
        .is_some_and(|r| r.contains("contract_violation") && r.contains("/unexpected")));

    let listed = ledger.run(&["contract", "list"]).ok();
    let checks = listed["contracts"][0]["checks"].as_array().expect("checks");
    let by = |p: &str| checks.iter().find(|c| c["provider"] == json!(p)).cloned();
    assert_eq!(by("good").map(|c| c["current"].clone()), Some(json!(true)));
    assert_eq!(by("bad").map(|c| c["passed"].clone()), Some(json!(false)));

    // A changed template makes the passed check stale.
    let mut changed = contract();
    changed["template"]["user"] = json!("Summarise shortly: {{text}}");
    let replaced = ledger
        .run(&["contract", "add", "--json", &changed.to_string()])
        .ok();
    assert_eq!(
        (replaced["replaced"].clone(), replaced["changed"].clone()),
        (json!(true), json!(true))
    );
    let listed = ledger.run(&["contract", "list"]).ok();
    assert!(listed["contracts"][0]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .all(|c| c["current"] == json!(false)));

    let missing = ledger.run(&["contract", "check", "nope", "--provider", "good"]);
    assert_eq!(missing.err(5)["details"]["entity"], json!("contract"));
    let bad_contract = ledger.run(&[
        "contract",
        "add",
        "--json",
        r#"{"name": "x", "schema": {}, "template": {"user": "{{a}}"}, "samples": [{}]}"#,
    ]);
    assert_eq!(
        bad_contract.err(2)["details"]["field"],
        json!("contract.samples.0")
    );
}

#[test]
fn a_planted_api_key_appears_in_no_output_and_not_in_the_database() {
    const VAR: &str = "ONEJOB_TEST_PLANTED_KEY_CLI";
    const KEY: &str = "sk-planted-cli-9876543210-secret";
    let ledger = Ledger::new();
    let good = SandboxProcess::start(serde_json::from_str(QUICK).expect("dials"));
    let bad = SandboxProcess::start(json!({"latency_ms": 5, "jitter_ms": 0, "prose": 1.0}));
    let keyed = json!({"api_key_env": VAR});
    let run = |args: &[&str]| {
        let output = ledger
            .command(args)
            .env(VAR, KEY)
            .output()
            .expect("run onejob");
        common::finish(output)
    };
    let mut outputs = Vec::new();
    for args in [
        vec!["provider".to_owned(), "add".into(), "--json".into(), openai("good", &good, keyed.clone())],
        vec!["provider".into(), "add".into(), "--json".into(), openai("bad", &bad, keyed.clone())],
        vec!["contract".into(), "add".into(), "--json".into(), contract().to_string()],
        vec!["contract".into(), "check".into(), "summary".into(), "--provider".into(), "good".into()],
        vec!["contract".into(), "check".into(), "summary".into(), "--provider".into(), "bad".into()],
        vec!["contract".into(), "list".into()],
        vec!["provider".into(), "list".into()],
        // The fallback passed its check, so the prose at "bad" fails over to it by itself.
        vec!["submit".into(), "--key".into(), "k1".into(), "--wait".into(), "--timeout-s".into(), "30".into(),
             "--intent".into(),
             json!({"route": ["bad", "good"], "input": {"text": "x"}, "contract": "summary", "max_attempts": 2}).to_string()],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        outputs.push(run(&args));
    }
    assert_eq!(outputs[3].code, 0, "{:?}", outputs[3]);
    assert_eq!(outputs[4].code, 13, "{:?}", outputs[4]);
    assert_eq!(outputs[7].code, 0, "{:?}", outputs[7]);
    let job = parse(&outputs[7].stdout)["job"]["id"]
        .as_str()
        .expect("job id")
        .to_owned();
    let detail = run(&["job", &job]);
    let doc = parse(&detail.stdout);
    assert_eq!(
        doc["attempts"][0]["error"]["kind"],
        json!("contract_violation")
    );
    assert_eq!(doc["attempts"][1]["provider"], json!("good"));
    outputs.push(detail);
    for output in &outputs {
        assert!(
            !output.stdout.contains(KEY) && !output.stderr.contains(KEY),
            "{output:?}"
        );
    }
    // Nor in anything the ledger wrote: its files, or a dump of its database.
    for (name, bytes) in onejob_testkit::ledger_contents(&ledger.db) {
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "{name}");
    }
}

#[test]
fn a_removed_contract_fails_the_open_jobs_naming_it_and_says_how_many() {
    let ledger = Ledger::new();
    ledger
        .run(&["contract", "add", "--json", &contract().to_string()])
        .ok();
    let named = json!({"route": ["primary"], "input": {"text": "t"}, "contract": "summary"});
    let named = common::id(&ledger.submit("named", &named.to_string())["job"]);
    let plain = common::id(&ledger.submit("plain", &common::intent("1"))["job"]);

    let removed = ledger.run(&["contract", "remove", "summary"]).ok();
    assert_eq!(
        removed,
        json!({"removed": "summary", "open_jobs": {"queued": 1, "running": 0, "unknown": 0}})
    );
    let error = ledger.run(&["contract", "remove", "summary"]).err(5);
    assert_eq!(error["details"]["entity"], "contract");
    let listed = ledger.run(&["contract", "list"]).ok();
    assert_eq!(listed["contracts"], json!([]));

    // The worker fails the job that names it, with the reason, and sends the other.
    let worker = ledger.run(&["worker", "--once"]);
    assert_eq!(worker.code, 0, "{worker:?}");
    let failed = ledger.run(&["job", &named]).ok();
    assert_eq!(failed["job"]["status"], "failed");
    assert_eq!(failed["job"]["error"]["code"], "misconfigured");
    let message = failed["job"]["error"]["message"].as_str().expect("message");
    assert!(message.contains("summary"), "{message}");
    assert_eq!(failed["attempts"], json!([]));
    let other = ledger.run(&["job", &plain]).ok();
    assert_eq!(other["attempts"][0]["provider"], "primary", "{other}");
}

#[test]
fn job_shows_the_tokens_of_each_attempt_and_their_sum() {
    let ledger = Ledger::new();
    let sandbox = SandboxProcess::start(serde_json::from_str(QUICK).expect("dials"));
    ledger
        .run(&[
            "provider",
            "add",
            "--json",
            &openai("ai", &sandbox, json!({})),
        ])
        .ok();
    ledger
        .run(&["contract", "add", "--json", &contract().to_string()])
        .ok();
    let intent = json!({"route": ["ai"], "input": {"text": "t"}, "contract": "summary"});
    let submitted = ledger
        .run(&[
            "submit",
            "--key",
            "k",
            "--intent",
            &intent.to_string(),
            "--wait",
        ])
        .ok();
    let job = common::id(&submitted["job"]);
    let shown = ledger.run(&["job", &job]).ok();
    assert_eq!(shown["job"]["status"], "succeeded", "{shown}");
    let usage = &shown["attempts"][0]["usage"];
    assert!(
        usage["prompt_tokens"].as_u64().is_some_and(|n| n > 0),
        "{shown}"
    );
    assert!(usage["completion_tokens"].as_u64().is_some_and(|n| n > 0));
    assert_eq!(
        &shown["usage"], usage,
        "one attempt: the job's total is its own"
    );
}

#[test]
fn a_contract_checks_and_runs_against_the_built_in_sandbox_on_a_new_ledger() {
    // Nothing added but the contract: the sandbox is the one every new ledger has, in-process.
    let ledger = Ledger::empty();
    let sample = json!({
        "name": "sandbox-sample",
        "schema": {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]},
        "template": {"system": "You greet people.", "user": "Greet {{name}}."},
        "samples": [{"name": "Ada"}]
    });
    ledger
        .run(&["contract", "add", "--json", &sample.to_string()])
        .ok();
    let checked = ledger.run(&[
        "contract",
        "check",
        "sandbox-sample",
        "--provider",
        "sandbox",
    ]);
    assert_eq!(checked.code, 0, "{checked:?}");
    let doc = parse(&checked.stdout);
    assert_eq!(doc["check"]["passed"], json!(true), "{doc}");
    assert_eq!(doc["check"]["samples"][0]["passed"], json!(true), "{doc}");

    let intent =
        json!({"route": ["sandbox"], "input": {"name": "Grace"}, "contract": "sandbox-sample"});
    let submitted = ledger.run(&[
        "submit",
        "--key",
        "greet-grace",
        "--intent",
        &intent.to_string(),
        "--wait",
        "--timeout-s",
        "30",
    ]);
    assert_eq!(submitted.code, 0, "{submitted:?}");
    let job = &parse(&submitted.stdout)["job"];
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["result"], json!({"greeting": "sandbox"}));
}
