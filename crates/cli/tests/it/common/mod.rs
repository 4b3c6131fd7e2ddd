//! Runs the real `onejob` binary against a ledger of its own: a file in a temporary directory
//! or, on the PostgreSQL pass (`ONEJOB_TEST_POSTGRES`, see onejob-testkit), a fresh database;
//! or against a PostgreSQL ledger by its URL.

#![allow(dead_code)]

pub mod processes;
pub mod serve;
pub mod sse;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

/// The provider every test's route names; nothing is sent to it at this stage.
pub const PRIMARY: &str = r#"{"name":"primary","kind":"http","base_url":"http://127.0.0.1:9/echo","soft_timeout_ms":1000,"hard_timeout_ms":5000,"honours_idempotency_key":false}"#;

/// An intent routed to `primary` with the given input.
pub fn intent(input: &str) -> String {
    format!(r#"{{"route":["primary"],"input":{input}}}"#)
}

/// A temporary home and one ledger, which the commands find through `ONEJOB_DB`: a file in
/// the home, or a `postgres://` URL.
pub struct Ledger {
    pub dir: TempDir,
    /// The ledger's location: the file's path in the home, or the database's URL.
    pub db: String,
}

/// What one run of the binary left behind.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The stdout document of a run that must have succeeded.
    pub fn ok(&self) -> Value {
        assert_eq!(self.code, 0, "expected success: {self:?}");
        assert!(self.stderr.is_empty(), "stderr on success: {self:?}");
        parse(&self.stdout)
    }

    /// The stderr `error` object of a run that must have failed with `code`.
    pub fn err(&self, code: i32) -> Value {
        assert_eq!(self.code, code, "expected exit {code}: {self:?}");
        assert!(self.stdout.is_empty(), "stdout on failure: {self:?}");
        let doc = parse(&self.stderr);
        let error = doc["error"].clone();
        assert!(error["code"].is_string(), "no error code: {self:?}");
        assert!(error["message"].is_string(), "no error message: {self:?}");
        assert!(error["details"].is_object(), "no error details: {self:?}");
        error
    }
}

/// One JSON document and a newline, nothing else.
pub fn parse(text: &str) -> Value {
    assert!(text.ends_with('\n'), "no trailing newline: {text:?}");
    assert_eq!(text.trim_end().lines().count(), 1, "not one line: {text:?}");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"))
}

impl Ledger {
    /// A fresh directory; the ledger does not exist yet (no file, or an empty database).
    pub fn empty() -> Ledger {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = onejob_testkit::ledger_location(&dir.path().join("ledger").join("onejob.db"));
        Ledger { dir, db }
    }

    /// Whether the ledger has been created.
    pub fn exists(&self) -> bool {
        onejob_testkit::ledger_exists(&self.db)
    }

    /// A temporary home whose commands use the ledger at `url` (a `postgres://` URL).
    pub fn at(url: &str) -> Ledger {
        let dir = tempfile::tempdir().expect("temp dir");
        Ledger {
            dir,
            db: url.to_owned(),
        }
    }

    /// A fresh ledger with the `primary` provider configured.
    pub fn new() -> Ledger {
        let ledger = Ledger::empty();
        ledger.run(&["provider", "add", "--json", PRIMARY]).ok();
        ledger
    }

    pub fn home(&self) -> &Path {
        self.dir.path()
    }

    /// The binary with a clean environment: this ledger, owner unset, home inside the temp dir.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_under(&[], args)
    }

    /// The binary as `command` makes it, run by `wrapper` (a program and its options, such as
    /// `faketime -f +60s`) when one is given.
    pub fn command_under(&self, wrapper: &[&str], args: &[&str]) -> Command {
        let binary = env!("CARGO_BIN_EXE_onejob");
        let mut cmd = match wrapper.split_first() {
            Some((program, options)) => {
                let mut cmd = Command::new(program);
                cmd.args(options).arg(binary);
                cmd
            }
            None => Command::new(binary),
        };
        cmd.args(args)
            .env("ONEJOB_DB", &self.db)
            .env_remove("ONEJOB_OWNER")
            .env("HOME", self.home())
            .env("XDG_DATA_HOME", self.home().join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        finish(self.command(args).output().expect("run onejob"))
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args).spawn().expect("spawn onejob")
    }

    /// Submits an intent under a key; the reply of a run that must succeed.
    pub fn submit(&self, key: &str, intent: &str) -> Value {
        self.run(&["submit", "--key", key, "--intent", intent]).ok()
    }

    /// Creates a pending attempt on a queued job; returns its id.
    pub fn retry(&self, job_id: &str) -> String {
        let reply = self.run(&["retry", job_id]).ok();
        id(&reply["attempt"])
    }
}

pub fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The `id` of a job or attempt object.
pub fn id(value: &Value) -> String {
    value["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {value}"))
        .to_owned()
}

/// The ids of the jobs on a page of `jobs`, in its order.
pub fn job_ids(page: &Value) -> Vec<String> {
    page["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(id)
        .collect()
}

/// Claims the job's next attempt at `primary`, marks it sent and then `unknown` after a soft
/// timeout: what an executor whose answer never came leaves behind.
pub async fn leave_unknown(engine: &onejob_engine::Engine, job_id: &str) {
    use onejob_engine::testing::InternalCalls as _;
    let claimed = engine
        .claim_attempt(job_id, "primary")
        .await
        .expect("claim");
    let attempt = &claimed.attempt.id;
    engine
        .mark_sent(attempt, "executor-test", std::time::Duration::from_secs(60))
        .await
        .expect("sent");
    let why = onejob_engine::AttemptError {
        kind: "soft_timeout".into(),
        message: "no answer within 1000 ms".into(),
    };
    engine.mark_unknown(attempt, why).await.expect("unknown");
}
