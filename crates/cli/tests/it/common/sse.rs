//! `GET /v1/events` read with curl, as a client outside the project would: the stream's
//! events arrive on a channel, each with the id a reconnect resumes from.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One event as the stream sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub id: String,
    pub data: Value,
}

/// A curl reading the stream; its events arrive on a channel.
pub struct Stream {
    curl: Child,
    events: mpsc::Receiver<Sent>,
}

impl Stream {
    /// Opens the stream and returns once the server has answered its headers, so every event
    /// committed afterwards is the stream's to deliver.
    pub fn open(url: &str, token: &str, last_event_id: Option<&str>) -> Stream {
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
    pub fn until(&self, done: impl Fn(&Sent) -> bool) -> Vec<Sent> {
        self.until_within(Duration::from_secs(15), done)
    }

    /// The events that arrive until `done` holds for one, at most `limit`.
    pub fn until_within(&self, limit: Duration, done: impl Fn(&Sent) -> bool) -> Vec<Sent> {
        let deadline = Instant::now() + limit;
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

    /// The next `n` events, waiting at most `limit` for all of them.
    pub fn take(&self, n: usize, limit: Duration) -> Vec<Sent> {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::with_capacity(n);
        while seen.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(sent) => seen.push(sent),
                Err(_) => panic!(
                    "{} of {n} events within {limit:?}; it sent {seen:#?}",
                    seen.len()
                ),
            }
        }
        seen
    }

    /// What arrives within `quiet`: a stream that has sent everything sends nothing more.
    pub fn more_within(&self, quiet: Duration) -> Vec<Sent> {
        let deadline = Instant::now() + quiet;
        let mut seen = Vec::new();
        while let Ok(sent) = self
            .events
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            seen.push(sent);
        }
        seen
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.curl.kill();
        let _ = self.curl.wait();
    }
}
