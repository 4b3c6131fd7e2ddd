//! `GET /v1/events` of `onejob serve`, read with curl: a job submitted by another process
//! reaches an open stream, and a client that reconnects with `Last-Event-ID` gets exactly
//! what it missed, and only its owner's events.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::serve::{token, Server};
use common::{id, intent, Ledger};
use serde_json::Value;

/// One event as the stream sent it.
#[derive(Debug, Clone)]
struct Sent {
    id: String,
    data: Value,
}

/// A curl reading the stream; its events arrive on a channel.
struct Stream {
    curl: Child,
    events: mpsc::Receiver<Sent>,
}

impl Stream {
    /// Opens the stream and returns once the server has answered its headers, so every event
    /// committed afterwards is the stream's to deliver.
    fn open(url: &str, token: &str, last_event_id: Option<&str>) -> Stream {
        let mut curl = Command::new("curl");
        curl.args(["-sS", "-N", "-i", &format!("{url}/v1/events")])
            .args(["-H", &format!("Authorization: Bearer {token}")]);
        if let Some(last) = last_event_id {
            curl.args(["-H", &format!("Last-Event-ID: {last}")]);
        }
        let mut curl = curl
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("curl");
        let stdout = curl.stdout.take().expect("stdout");
        let (head_tx, head) = mpsc::channel();
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let status = lines.next().and_then(Result::ok).unwrap_or_default();
            let _ = head_tx.send(status);
            let mut id = String::new();
            for line in lines.map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("id: ") {
                    id = rest.to_owned();
                } else if let Some(rest) = line.strip_prefix("data: ") {
                    let data = serde_json::from_str(rest).expect("data is JSON");
                    let sent = Sent {
                        id: id.clone(),
                        data,
                    };
                    if tx.send(sent).is_err() {
                        break;
                    }
                }
            }
        });
        let status = head
            .recv_timeout(Duration::from_secs(10))
            .expect("the stream's status line");
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        Stream { curl, events }
    }

    /// The events that arrive until `done` holds for one, at most 15 s.
    fn until(&self, done: impl Fn(&Sent) -> bool) -> Vec<Sent> {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(sent) => {
                    let last = done(&sent);
                    seen.push(sent);
                    if last {
                        return seen;
                    }
                }
                Err(_) => panic!("the stream ended or stalled; it sent {seen:#?}"),
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.curl.kill();
        let _ = self.curl.wait();
    }
}

fn is<'a>(kind: &'a str, key: &'a str) -> impl Fn(&Sent) -> bool + 'a {
    move |s| s.data["kind"] == kind && s.data["detail"]["idempotency_key"] == key
}

#[test]
fn a_job_submitted_by_the_cli_reaches_an_open_stream_and_a_reconnect_gets_what_it_missed() {
    let ledger = Ledger::new();
    let token = token(&ledger, "local");
    // No worker: the only events are the ones this test makes.
    let mut server = Server::start(&ledger, &["--no-worker"]);
    let url = server.url.clone();

    let stream = Stream::open(&url, &token, None);
    let first = ledger.submit("first", &intent(r#"{"t":"first"}"#));
    let seen = stream.until(is("submitted", "first"));
    assert_eq!(seen.len(), 1, "a new stream starts at the end: {seen:#?}");
    assert_eq!(seen[0].data["job_id"], first["job"]["id"]);
    let resume_at = seen[0].id.clone();
    drop(stream);

    // Missed while no stream was open: another owner's job, then two of this owner's.
    let theirs = ledger
        .command(&[
            "--owner",
            "someone-else",
            "submit",
            "--key",
            "theirs",
            "--intent",
            &intent(r#"{"t":"x"}"#),
        ])
        .output()
        .expect("submit");
    assert!(theirs.status.success());
    let first_id = id(&first["job"]);
    ledger.run(&["cancel", &first_id]).ok();
    ledger.submit("second", &intent(r#"{"t":"second"}"#));

    let again = Stream::open(&url, &token, Some(&resume_at));
    let missed = again.until(is("submitted", "second"));
    let kinds: Vec<(String, String)> = missed
        .iter()
        .map(|s| {
            let key = s.data["detail"]["idempotency_key"].as_str().unwrap_or("");
            (
                s.data["kind"].as_str().unwrap_or("").to_owned(),
                key.to_owned(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("job_cancelled".to_owned(), String::new()),
            ("submitted".to_owned(), "second".to_owned())
        ],
        "exactly what was missed, in order, only this owner's: {missed:#?}"
    );
    assert!(missed.iter().all(|s| s.id != resume_at));

    // A malformed position is refused before any stream starts.
    let refused = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("{url}/v1/events"),
        ])
        .args([
            "-H",
            &format!("Authorization: Bearer {token}"),
            "-H",
            "Last-Event-ID: nope",
        ])
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&refused.stdout), "400");

    let stopped = server.terminate(Duration::from_secs(30));
    assert_eq!(stopped.code, 0, "{stopped:?}");
}
