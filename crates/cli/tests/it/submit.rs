//! `submit` across processes: one job per (owner, key), replays, conflicts, and the
//! environment that picks the ledger and the owner.

use crate::common;

use std::collections::HashSet;

use common::{finish, id, intent, job_ids, Ledger, Run, PRIMARY};
use serde_json::Value;

/// Starts `n` copies of one command at once, then waits for all of them.
fn all_at_once(ledger: &Ledger, n: usize, args: &[&str]) -> Vec<Run> {
    let children: Vec<_> = (0..n).map(|_| ledger.spawn(args)).collect();
    children
        .into_iter()
        .map(|child| finish(child.wait_with_output().expect("wait for onejob")))
        .collect()
}

/// Checks that `runs` all returned one job, created once and replayed by the rest.
fn one_job(runs: &[Run]) -> String {
    let replies: Vec<Value> = runs.iter().map(Run::ok).collect();
    let ids: HashSet<String> = replies.iter().map(|r| id(&r["job"])).collect();
    assert_eq!(ids.len(), 1, "{replies:?}");
    let replayed = replies.iter().filter(|r| r["replayed"] == true).count();
    assert_eq!(replayed, runs.len() - 1, "{replies:?}");
    ids.into_iter().next().expect("one id")
}

fn listed_ids(ledger: &Ledger) -> Vec<String> {
    job_ids(&ledger.run(&["jobs"]).ok())
}

/// Eight processes submit one draft at once: checks that they made one job, the only one listed.
fn eight_submits_of_one_draft_make_one_job(ledger: &Ledger) {
    let intent = intent(r#"{"prompt":"hello"}"#);
    let runs = all_at_once(
        ledger,
        8,
        &["submit", "--key", "draft-1", "--intent", &intent],
    );
    let job = one_job(&runs);
    assert_eq!(listed_ids(ledger), vec![job]);
}

#[test]
fn double_click_returns_one_job_across_processes() {
    let ledger = Ledger::new();
    eight_submits_of_one_draft_make_one_job(&ledger);
}

#[test]
fn double_click_returns_one_job_across_processes_on_a_new_database_file() {
    // Eight processes race on creating the file and its schema: every one must see a
    // working ledger, and the provider is created once.
    let ledger = Ledger::empty();
    assert!(!ledger.exists());
    let runs = all_at_once(&ledger, 8, &["provider", "add", "--json", PRIMARY]);
    let replies: Vec<Value> = runs.iter().map(Run::ok).collect();
    let created = replies.iter().filter(|r| r["replaced"] == false).count();
    assert_eq!(created, 1, "{replies:?}");

    eight_submits_of_one_draft_make_one_job(&ledger);
}

#[test]
fn submits_racing_on_a_new_database_file_all_get_the_same_answer() {
    // No provider can exist in a file that does not: all eight are refused alike, none
    // with a storage error from the race on creating it.
    let ledger = Ledger::empty();
    let intent = intent("1");
    let runs = all_at_once(&ledger, 8, &["submit", "--key", "k", "--intent", &intent]);
    for run in &runs {
        let error = run.err(2);
        assert_eq!(error["code"], "invalid_input");
        assert_eq!(error["details"]["field"], "intent.route.0");
    }
    assert!(listed_ids(&ledger).is_empty());
}

#[test]
fn same_key_other_payload_conflicts_via_cli() {
    let ledger = Ledger::new();
    let first = ledger.submit("k", &intent(r#"{"a":1,"b":2}"#));
    assert_eq!(first["replayed"], false);
    let job = id(&first["job"]);

    let run = ledger.run(&["submit", "--key", "k", "--intent", &intent(r#"{"a":1}"#)]);
    let error = run.err(3);
    assert_eq!(error["code"], "idempotency_conflict");
    assert_eq!(error["details"]["existing_job_id"], job.as_str());

    // Key order and whitespace are not part of the intent.
    let same = r#"{ "input" : {"b": 2, "a": 1},
                    "route": [ "primary" ] }"#;
    let again = ledger.submit("k", same);
    assert_eq!(again["replayed"], true);
    assert_eq!(id(&again["job"]), job);
    assert_eq!(again["job"], first["job"]);
}

#[test]
fn keys_may_start_with_a_hyphen() {
    let ledger = Ledger::new();
    let first = ledger.submit("-draft 7", &intent("1"));
    assert_eq!(first["job"]["idempotency_key"], "-draft 7");
    assert_eq!(ledger.submit("-draft 7", &intent("1"))["replayed"], true);
}

#[test]
fn intent_is_read_from_a_file_or_stdin() {
    let ledger = Ledger::new();
    let file = ledger.home().join("intent.json");
    std::fs::write(&file, intent(r#"{"x":[1,2,3]}"#)).expect("write intent");
    let at_file = format!("@{}", file.display());
    let first = ledger.submit("k", &at_file);
    assert_eq!(first["replayed"], false);
    assert_eq!(first["job"]["intent"]["input"]["x"][2], 3);

    let mut child = ledger
        .command(&["submit", "--key", "k", "--intent", "@-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(intent(r#"{"x":[1,2,3.0]}"#).as_bytes())
            .expect("write stdin");
    }
    let again = finish(child.wait_with_output().expect("wait")).ok();
    assert_eq!(again["replayed"], true);
    assert_eq!(id(&again["job"]), id(&first["job"]));

    let missing = format!("@{}", ledger.home().join("nope.json").display());
    let error = ledger
        .run(&["submit", "--key", "k2", "--intent", &missing])
        .err(2);
    assert_eq!(error["details"]["field"], "intent");
}

#[test]
fn env_vars_choose_the_database_and_the_owner() {
    let ledger = Ledger::new();
    let intent = intent("1");
    let as_owner = |owner: &str| {
        let out = ledger
            .command(&["submit", "--key", "same", "--intent", &intent])
            .env("ONEJOB_OWNER", owner)
            .output()
            .expect("run");
        finish(out).ok()
    };
    let ann = as_owner("ann");
    let bob = as_owner("bob");
    assert_eq!(ann["replayed"], false);
    assert_eq!(bob["replayed"], false);
    assert_eq!(ann["job"]["owner_id"], "ann");
    assert_eq!(bob["job"]["owner_id"], "bob");
    assert_ne!(id(&ann["job"]), id(&bob["job"]));
    assert_eq!(as_owner("ann")["replayed"], true);

    // --owner wins over ONEJOB_OWNER; the default owner sees neither job.
    let out = ledger
        .command(&["job", &id(&ann["job"]), "--owner", "ann"])
        .env("ONEJOB_OWNER", "bob")
        .output()
        .expect("run");
    assert_eq!(id(&finish(out).ok()["job"]), id(&ann["job"]));
    ledger.run(&["job", &id(&ann["job"])]).err(5);

    // ONEJOB_DB named the ledger every command above used; --db overrides it.
    assert!(ledger.exists());
    let other = onejob_testkit::ledger_location(&ledger.home().join("other.db"));
    assert!(!onejob_testkit::ledger_exists(&other));
    let page = ledger.run(&["jobs", "--owner", "ann", "--db", &other]).ok();
    assert_eq!(page["jobs"], Value::Array(vec![]));
    assert!(onejob_testkit::ledger_exists(&other));
}

#[test]
fn without_db_the_ledger_is_the_apps_in_the_data_dir() {
    let ledger = Ledger::empty();
    let out = ledger
        .command(&["provider", "list"])
        .env_remove("ONEJOB_DB")
        .output()
        .expect("run");
    let providers = finish(out).ok()["providers"].clone();
    assert_eq!(providers[0]["name"], "sandbox", "a new ledger: {providers}");
    let expected = ledger
        .home()
        .join("data")
        .join("dev.onejob.app")
        .join("onejob.db");
    assert!(expected.exists(), "{} missing", expected.display());
    assert!(!ledger.exists());
}
