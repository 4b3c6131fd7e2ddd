//! `onejob serve` as a process for the HTTP API's tests: started on a free loopback port with
//! its URL read from the line it prints, stopped by a signal or killed, and the client side:
//! tokens, requests with a bearer, and the problem+json every error must be.

use std::io::{BufRead, BufReader, Read};
use std::process::ChildStdout;
use std::time::Duration;

use reqwest::{Client, Method, RequestBuilder, Response, StatusCode};
use serde_json::Value;

use super::processes::{signal, Running};
use super::{parse, Ledger, Run};

/// A running `onejob serve` and the URL it printed.
pub struct Server {
    pub url: String,
    /// The line it printed once it accepted connections: `{"listening", "risks"?}`.
    pub start: Value,
    pub process: Running,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    /// `onejob serve --listen 127.0.0.1:0 ARGS…` on the ledger, once it accepts connections.
    pub fn start(ledger: &Ledger, args: &[&str]) -> Server {
        let mut all = vec!["serve"];
        if !args.contains(&"--listen") {
            all.extend(["--listen", "127.0.0.1:0"]);
        }
        all.extend_from_slice(args);
        let mut process = Running::spawn(ledger, &all);
        let mut stdout = BufReader::new(process.child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the first line");
        assert!(!line.is_empty(), "{} printed nothing", process.what);
        let start = parse(&line);
        let url = start["listening"]
            .as_str()
            .unwrap_or_else(|| panic!("no listening url in {line:?}"))
            .to_owned();
        Server {
            url,
            start,
            process,
            stdout,
        }
    }

    /// The URL of `path` on this server.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// The loopback address it listens on, `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        let rest = self.url.split_once("://").expect("a url").1;
        let port = rest.rsplit_once(':').expect("a port").1;
        format!("127.0.0.1:{port}")
    }

    /// SIGTERM; the run of a server that must stop by itself within `limit`, its last line
    /// in `stdout`.
    pub fn terminate(&mut self, limit: Duration) -> Run {
        signal(&self.process, "TERM");
        self.exited(limit)
    }

    /// The run of a server that must exit by itself within `limit`, its last line in `stdout`.
    pub fn exited(&mut self, limit: Duration) -> Run {
        let mut run = self.process.wait(limit);
        self.stdout
            .read_to_string(&mut run.stdout)
            .expect("the rest of stdout");
        run
    }

    /// SIGKILL, then reap: the server gets no chance to finish anything.
    pub fn kill(&mut self) {
        self.process.kill();
    }
}

/// One run of the binary that must end within `limit`: a server that should have refused to
/// start fails the test instead of holding it.
pub fn run_within(ledger: &Ledger, args: &[&str], limit: Duration) -> Run {
    let mut child = ledger.spawn(args);
    let mut pipes = (
        child.stdout.take().expect("stdout"),
        child.stderr.take().expect("stderr"),
    );
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipes.0.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipes.1.read_to_string(&mut text);
        text
    });
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("onejob {} still running after {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
    }
}

/// A new token for `owner`, as `onejob token create` prints it once.
pub fn token(ledger: &Ledger, owner: &str) -> String {
    token_reply(ledger, owner)["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// The whole reply of `onejob token create --owner OWNER`.
pub fn token_reply(ledger: &Ledger, owner: &str) -> Value {
    ledger.run(&["token", "create", "--owner", owner]).ok()
}

/// A client for one owner's token at one server.
#[derive(Clone)]
pub struct Api {
    pub client: Client,
    pub base: String,
    pub token: String,
}

impl Api {
    pub fn new(server: &Server, token: &str) -> Api {
        Api {
            client: client(),
            base: server.url.clone(),
            token: token.to_owned(),
        }
    }

    /// A request to `path` with this owner's bearer token.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
    }

    /// `POST /v1/jobs` with `Idempotency-Key: KEY` and the intent as a JSON body.
    pub async fn submit(&self, key: &str, intent: &str) -> Response {
        self.request(Method::POST, "/v1/jobs")
            .header("Idempotency-Key", key)
            .header("Content-Type", "application/json")
            .body(intent.to_owned())
            .send()
            .await
            .expect("POST /v1/jobs")
    }

    /// `GET PATH`, answered.
    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// `POST PATH` with a JSON body, answered.
    pub async fn post(&self, path: &str, body: &Value) -> Response {
        self.request(Method::POST, path)
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// `POST PATH` with a JSON body under an `Idempotency-Key`, answered.
    pub async fn post_keyed(&self, path: &str, key: &str, body: &Value) -> Response {
        self.request(Method::POST, path)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }
}

/// A client that keeps no connection idle for long and talks HTTP/1.1, as `serve` does.
pub fn client() -> Client {
    Client::builder()
        .http1_only()
        .timeout(Duration::from_secs(90))
        .build()
        .expect("a client")
}

/// The JSON body of a response that must have `status`.
pub async fn json(response: Response, status: StatusCode) -> Value {
    let got = response.status();
    let text = response.text().await.expect("a body");
    assert_eq!(got, status, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The problem+json body (RFC 9457 with SPEC §11's code and details) of a response that must
/// be the error `status` with `code`.
pub async fn problem(response: Response, status: StatusCode, code: &str) -> Value {
    let got = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("a body");
    assert_eq!(got, status, "{text}");
    assert_eq!(kind, "application/problem+json", "{text}");
    let body: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert_problem(&body, status, code);
    body
}

/// Asserts the fields of a problem document.
pub fn assert_problem(body: &Value, status: StatusCode, code: &str) {
    let text = |field: &str| {
        body[field]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| panic!("no {field} in {body}"))
    };
    assert!(text("type").ends_with(&format!(":{code}")), "{body}");
    // One title per code, whatever the status (RFC 9457 §3.1.3).
    assert_eq!(text("title"), onejob_http::problem::title(code), "{body}");
    assert_eq!(body["status"], status.as_u16(), "{body}");
    text("detail");
    assert_eq!(body["code"], code, "{body}");
    assert!(body["details"].is_object(), "{body}");
}

/// The `id` of the `job` in a reply.
pub fn job_id(reply: &Value) -> String {
    reply["job"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no job id in {reply}"))
        .to_owned()
}
