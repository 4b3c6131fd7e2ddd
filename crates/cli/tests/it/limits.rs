//! Every size limit is checked before the whole input is held in memory (SPEC §2): `@FILE`
//! and `@-` are read up to the limit plus one byte, so an endless source is refused at once.

use crate::common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{finish, intent, Ledger, Run};

/// 1 MiB, the limit of every argument read from a file or stdin.
const LIMIT: usize = 1024 * 1024;

/// Waits for a run that must end within a few seconds; one still reading is killed, and the
/// test fails.
fn within_seconds(mut child: Child) -> Run {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if child.try_wait().expect("try_wait").is_some() {
            return finish(child.wait_with_output().expect("output"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill");
    let _ = child.wait();
    panic!(
        "still reading after {:?}: the input was not bounded",
        started.elapsed()
    );
}

fn assert_too_large(run: &Run, field: &str) {
    let error = run.err(2);
    assert_eq!(error["code"], "invalid_input", "{run:?}");
    assert_eq!(error["details"]["field"], field, "{run:?}");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains(field) && message.contains("1 MiB"),
        "{message}"
    );
}

#[test]
fn an_intent_from_dev_zero_is_refused_at_once() {
    let ledger = Ledger::new();
    let child = ledger.spawn(&["submit", "--key", "k", "--intent", "@/dev/zero"]);
    assert_too_large(&within_seconds(child), "intent");

    let zero = std::fs::File::open("/dev/zero").expect("/dev/zero");
    let child = ledger
        .command(&["submit", "--key", "k", "--intent", "@-"])
        .stdin(Stdio::from(zero))
        .spawn()
        .expect("spawn");
    assert_too_large(&within_seconds(child), "intent");
    let jobs = ledger.run(&["jobs"]).ok();
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(0), "{jobs}");
}

#[test]
fn a_result_from_dev_zero_is_refused_at_once() {
    let ledger = Ledger::new();
    // Arguments are read before anything is looked up, so no attempt need exist.
    let child = ledger.spawn(&[
        "resolve",
        "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "--as",
        "succeeded",
        "--result",
        "@/dev/zero",
    ]);
    assert_too_large(&within_seconds(child), "result");
}

#[test]
fn provider_and_contract_json_from_dev_zero_are_refused_at_once() {
    let ledger = Ledger::new();
    for (command, field) in [("provider", "provider"), ("contract", "contract")] {
        let child = ledger.spawn(&[command, "add", "--json", "@/dev/zero"]);
        assert_too_large(&within_seconds(child), field);
    }
    let child = ledger.spawn(&[
        "sandbox",
        "--listen",
        "127.0.0.1:0",
        "--dials",
        "@/dev/zero",
    ]);
    assert_too_large(&within_seconds(child), "dials");
}

#[test]
fn an_intent_file_of_exactly_1_mib_is_read_and_one_byte_more_is_refused() {
    let ledger = Ledger::new();
    let body = intent(r#"{"x":1}"#);
    // Whitespace pads the file to the limit; the intent itself stays small.
    let exact = format!("{body}{}", " ".repeat(LIMIT - body.len()));
    assert_eq!(exact.len(), LIMIT);
    let file = ledger.home().join("intent.json");
    std::fs::write(&file, &exact).expect("write intent");
    let at_file = format!("@{}", file.display());
    let submitted = ledger.submit("k", &at_file);
    assert_eq!(submitted["job"]["intent"]["input"]["x"], 1);

    std::fs::write(&file, format!("{exact} ")).expect("write intent");
    let run = ledger.run(&["submit", "--key", "k2", "--intent", &at_file]);
    assert_too_large(&run, "intent");
}
