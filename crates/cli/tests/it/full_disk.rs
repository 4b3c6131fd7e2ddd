//! A disk that fills up under the command line: every submit that printed a job is in the
//! ledger afterwards, and every one that was not stored said so with `storage` (exit 1).
//! The disk is a real limit on the process's file sizes (`ulimit -f`), so SQLite's own
//! commit is what fails, as on a full partition.

use crate::common;

use std::process::{Command, Stdio};

use common::{finish, id, Ledger};
use serde_json::json;

/// `onejob submit` under a 1 MiB limit on every file it writes.
fn submit_on_a_full_disk(ledger: &Ledger, key: &str, intent_file: &std::path::Path) -> common::Run {
    let script = "trap '' XFSZ; ulimit -f 1024; exec \"$0\" \"$@\"";
    let output = Command::new("bash")
        .args([
            "-c",
            script,
            env!("CARGO_BIN_EXE_onejob"),
            "submit",
            "--key",
            key,
        ])
        .arg("--intent")
        .arg(format!("@{}", intent_file.display()))
        .env("ONEJOB_DB", &ledger.db)
        .env_remove("ONEJOB_OWNER")
        .env("HOME", ledger.home())
        .env("XDG_DATA_HOME", ledger.home().join("data"))
        .stdin(Stdio::null())
        .output()
        .expect("run onejob under a file size limit");
    finish(output)
}

#[test]
fn a_full_disk_gives_storage_and_loses_nothing_acknowledged() {
    if onejob_testkit::sqlite_only("the full disk is a limit on the size of the ledger's file") {
        return;
    }
    let ledger = Ledger::new();
    let file = ledger.home().join("intent.json");
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    for n in 0..40 {
        let key = format!("big-{n}");
        let intent =
            json!({ "route": ["primary"], "input": { "n": n, "filler": "x".repeat(60_000) } });
        std::fs::write(&file, intent.to_string()).expect("intent file");
        let run = submit_on_a_full_disk(&ledger, &key, &file);
        if run.code == 0 {
            acknowledged.push((key, id(&run.ok()["job"])));
        } else {
            let error = run.err(1);
            assert_eq!(error["code"], "storage", "{run:?}");
            assert_eq!(error["details"]["kind"], "failed", "{run:?}");
            // Named, with what to check, in onejob's words: not SQLite's own.
            let message = error["message"].as_str().unwrap_or_default();
            let named = format!("the ledger at {} failed", ledger.db);
            assert!(message.starts_with(&named), "{message}");
            assert!(
                message.contains("Check that its disk has space"),
                "{message}"
            );
            for driver in [
                "disk I/O error",
                "database or disk is full",
                "error returned",
            ] {
                assert!(!message.contains(driver), "{message}");
            }
            refused.push(key);
        }
    }
    // Without the limit: everything acknowledged is there, and nothing else.
    for (key, job) in &acknowledged {
        let detail = ledger.run(&["job", job]).ok();
        assert_eq!(detail["job"]["idempotency_key"], key.as_str());
        let other = json!({ "route": ["primary"], "input": "another intent" }).to_string();
        let conflict = ledger
            .run(&["submit", "--key", key, "--intent", &other])
            .err(3);
        assert_eq!(conflict["details"]["existing_job_id"], job.as_str());
    }
    let listed = ledger.run(&["jobs", "--limit", "1000"]).ok();
    let stored = listed["jobs"].as_array().expect("jobs").len();
    assert_eq!(
        stored,
        acknowledged.len(),
        "only what was acknowledged is stored"
    );
    let fresh = json!({ "route": ["primary"], "input": "after" }).to_string();
    let reply = ledger.submit(&refused[0], &fresh);
    assert_eq!(reply["replayed"], false, "a refused key was never taken");
}
