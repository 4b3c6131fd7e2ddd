//! Long-running `onejob` processes for the executor's tests: workers and `onejob sandbox`
//! servers, killed and reaped however a test ends, and the polls and readings they are
//! checked with.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{finish, id, parse, Ledger, Run};

/// A child process that is killed and reaped however the test ends.
pub struct Running {
    pub child: Child,
    pub what: String,
    /// The file its stderr goes to.
    pub log: std::path::PathBuf,
}

impl Running {
    pub fn spawn(ledger: &Ledger, args: &[&str]) -> Running {
        Running::spawn_under(ledger, &[], args)
    }

    /// Spawns the binary run by `wrapper` (see `Ledger::command_under`).
    pub fn spawn_under(ledger: &Ledger, wrapper: &[&str], args: &[&str]) -> Running {
        // stderr goes to a file, so a chatty child never blocks on a full pipe.
        let log = ledger
            .home()
            .join(format!("stderr-{}.log", uuid::Uuid::now_v7()));
        let file = std::fs::File::create(&log).expect("stderr file");
        let child = ledger
            .command_under(wrapper, args)
            .stderr(Stdio::from(file))
            .spawn()
            .expect("spawn onejob");
        let mut what = wrapper.to_vec();
        what.push("onejob");
        what.extend_from_slice(args);
        Running {
            child,
            what: format!("{} (stderr in {})", what.join(" "), log.display()),
            log,
        }
    }

    /// Waits for the child to exit by itself, at most `limit`; its run, stderr not captured.
    pub fn wait(&mut self, limit: Duration) -> Run {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait().expect("try_wait") {
                Some(status) => {
                    let mut stdout = String::new();
                    if let Some(mut out) = self.child.stdout.take() {
                        out.read_to_string(&mut stdout).expect("stdout");
                    }
                    return Run {
                        code: status.code().unwrap_or(-1),
                        stdout,
                        stderr: String::new(),
                    };
                }
                None if Instant::now() >= deadline => {
                    panic!("{} still running after {limit:?}", self.what)
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the child is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// SIGKILL, then reap.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }

    /// SIGTERM, then waits for a clean exit.
    pub fn terminate(&mut self, limit: Duration) -> Run {
        signal(self, "TERM");
        self.wait(limit)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Already reaped when the test got that far; otherwise this ends it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends the signal `name` (`TERM`, `INT`) to a running child.
pub fn signal(running: &Running, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([format!("-{name}"), running.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill -{name} {}", running.what);
}

/// `onejob sandbox` on a free loopback port, with its url and its stdout kept open.
pub struct SandboxProcess {
    pub url: String,
    _stdout: BufReader<ChildStdout>,
    _process: Running,
}

impl SandboxProcess {
    pub fn start(ledger: &Ledger, dials: Value) -> SandboxProcess {
        let dials = dials.to_string();
        let mut process = Running::spawn(
            ledger,
            &["sandbox", "--listen", "127.0.0.1:0", "--dials", &dials],
        );
        let mut stdout = BufReader::new(process.child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("the sandbox's first line");
        let url = parse(&line)["sandbox"]["url"]
            .as_str()
            .unwrap_or_else(|| panic!("no url in {line:?}"))
            .to_owned();
        SandboxProcess {
            url,
            _stdout: stdout,
            _process: process,
        }
    }

    /// Every request its job endpoint saw, in arrival order.
    pub fn log(&self) -> Vec<Value> {
        let body = get(&format!("{}/_log", self.url));
        let doc: Value = serde_json::from_str(&body).expect("the log is JSON");
        doc["requests"].as_array().expect("requests").clone()
    }

    /// The Idempotency-Keys of the logged requests.
    pub fn keys(&self) -> Vec<String> {
        self.log()
            .iter()
            .map(|r| r["idempotency_key"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

/// One GET over a bare connection; the response body.
pub fn get(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("an http url");
    let (addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("the response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .expect("a body")
}

/// Configures an `http` provider at `url`; `extra` fields are merged in.
pub fn add_http_provider(
    ledger: &Ledger,
    name: &str,
    url: &str,
    soft_ms: u64,
    hard_ms: u64,
    extra: Value,
) {
    let mut config = json!({
        "name": name, "kind": "http", "base_url": url,
        "soft_timeout_ms": soft_ms, "hard_timeout_ms": hard_ms,
        "honours_idempotency_key": false
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    ledger
        .run(&["provider", "add", "--json", &config.to_string()])
        .ok();
}

pub fn intent_for(provider: &str, input: Value) -> String {
    json!({ "route": [provider], "input": input }).to_string()
}

/// Submits `n` jobs routed to `provider`, a few processes at a time; their ids.
pub fn submit_many(ledger: &Ledger, n: usize, provider: &str) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    let keys: Vec<usize> = (0..n).collect();
    for batch in keys.chunks(4) {
        let children: Vec<Child> = batch
            .iter()
            .map(|i| {
                let intent = intent_for(provider, json!({ "n": i }));
                let key = format!("job-{i}");
                ledger.spawn(&["submit", "--key", &key, "--intent", &intent])
            })
            .collect();
        for child in children {
            let run = finish(child.wait_with_output().expect("submit exits"));
            ids.push(id(&run.ok()["job"]));
        }
    }
    ids
}

/// `{"job", "attempts", "events"}` of one job.
pub fn detail(ledger: &Ledger, job_id: &str) -> Value {
    ledger.run(&["job", job_id]).ok()
}

/// The details of many jobs, read by a few processes at a time, in the order given.
pub fn details(ledger: &Ledger, job_ids: &[String]) -> Vec<Value> {
    let mut all = Vec::with_capacity(job_ids.len());
    for batch in job_ids.chunks(8) {
        let children: Vec<Child> = batch.iter().map(|j| ledger.spawn(&["job", j])).collect();
        for child in children {
            all.push(finish(child.wait_with_output().expect("job exits")).ok());
        }
    }
    all
}

/// Polls `check` every 200 ms until it returns `Some`, at most `limit`.
pub fn poll<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Milliseconds between two of the engine's UTC time texts, by the ledger's clock (the
/// database's on PostgreSQL).
pub fn between_ms(from: &Value, to: &Value) -> i64 {
    let ms = |t: &Value| {
        let t = t.as_str().unwrap_or_else(|| panic!("not a time: {t}"));
        let (secs, millis) = (&t[17..19], &t[20..23]);
        let minutes: i64 = t[14..16].parse().expect("minutes");
        let hours: i64 = t[11..13].parse().expect("hours");
        ((hours * 60 + minutes) * 60 + secs.parse::<i64>().expect("seconds")) * 1000
            + millis.parse::<i64>().expect("millis")
    };
    ms(to) - ms(from)
}

pub fn event_kinds(detail: &Value) -> Vec<String> {
    detail["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The stdout line of a worker that ended by itself or by a signal.
pub fn worker_line(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    let line = parse(&run.stdout);
    assert_eq!(line["worker"]["stopped"], true, "{line}");
    assert!(
        line["worker"]["id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{line}"
    );
    line
}

/// libfaketime's multi-threaded library, as Debian's `faketime` package installs it (through
/// its `libfaketime` dependency) for this machine's architecture.
pub fn libfaketime() -> String {
    let installed = std::fs::read_dir("/usr/lib").ok().and_then(|dirs| {
        dirs.flatten()
            .map(|dir| dir.path().join("faketime").join("libfaketimeMT.so.1"))
            .find(|lib| lib.is_file())
    });
    let lib = installed.unwrap_or_else(|| {
        panic!("libfaketime is not installed: scripts/setup installs Debian's faketime package")
    });
    lib.to_str().expect("a UTF-8 path").to_owned()
}

/// A wrapper that runs a program with its wall clock moved by `offset` (`+60s`): what
/// `faketime -m -f +60s` does, without the process `faketime` keeps between its caller and
/// the program (which would take signals meant for the program). `env` replaces itself
/// with the program. Monotonic clocks are left alone, so tokio's timers and `Instant`s run
/// true.
pub fn faketime(lib: &str, offset: &str) -> Vec<String> {
    vec![
        "env".to_owned(),
        format!("LD_PRELOAD={lib}"),
        format!("FAKETIME={offset}"),
        "FAKETIME_DONT_FAKE_MONOTONIC=1".to_owned(),
    ]
}
