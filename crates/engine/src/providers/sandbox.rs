//! The built-in sandbox provider: a real HTTP/1.1 server on loopback whose latency and faults
//! are dialled in, so every state of a job and its attempts can be watched offline.
//!
//! # HTTP surface (one listener)
//!
//! - `POST <any path but /_log and /status/…>` — the job endpoint. The body must be JSON (else
//!   400; another method is 405, a body over 16 MiB 413; outcome `bad_request`). The request is
//!   logged as it arrives, then one fault is rolled (see [`Dials`]), the latency is slept
//!   (faults included, so a lost answer still takes time), and the reply is sent. The normal
//!   answer is 200 `{"echo": <body>, "request_id": "sbx-<n>", "answered_at": <time>}`; every
//!   reply carries `X-Request-Id: sbx-<n>`, the id of the request it answers.
//! - `POST /v1/chat/completions` — the same, speaking OpenAI's Chat Completions (an `openai`
//!   provider whose `base_url` is the sandbox's url plus `/v1`). The answer is a chat completion
//!   whose `choices[0].message.content` is a JSON text made to fit the schema of the request's
//!   `response_format` (every property, the first of an `enum`, `"sandbox"` for a string, the
//!   minimum or 0 for a number), with a usage block; `extra_key` puts an `"unexpected"` key
//!   into that content instead of the envelope, and three dials break the content the way a
//!   fallback model breaks a contract: `prose`, `missing_required_key` and `wrong_type`. On the
//!   job endpoint those three answer normally.
//! - `GET /_log` → `{"requests": [LogEntry, …]}`, in arrival order; not logged itself.
//! - `GET /status/{idempotency_key}` (the key percent-encoded) — the status lookup onejob's
//!   reconciliation uses for an attempt whose answer never arrived:
//!   - `{"state": "succeeded", "result": <answer body>}` once a request with that key was
//!     processed — including when its answer was then withheld or dropped, since the work
//!     was done; `result` is the first processed answer's body as JSON, or as a JSON string
//!     when that body was not JSON (`malformed_json`);
//!   - `{"state": "pending"}` while such a request is being processed;
//!   - `{"state": "failed"}` when every request with that key was refused (400, 429, 500);
//!   - 404 `{"state": "not_found"}` when no request carried that key.
//!
//!   The lookup answers whatever `honour_idempotency_key` says.
//!
//! # Idempotency
//!
//! With `honour_idempotency_key`, a request whose `Idempotency-Key` was already processed gets
//! exactly the first answer (same status and body, header `Idempotent-Replayed: true`; outcome
//! `replayed`) without a new fault roll or a second processing; its `X-Request-Id` is its own.
//! One whose first request is still being processed gets 409 (outcome `in_progress`). Refused
//! requests (400, 429, 500) do not claim the key, so a retry with it is processed normally.
//! Processing runs in its own task: a client that hangs up does not stop the work, as with a
//! real provider.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::sandbox_chat::{self, Break};
use crate::error::{Error, Result};
use crate::store::now;

/// The largest request body the sandbox reads; a job's intent is at most 1 MiB.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// The longest latency plus jitter the dials accept: ten minutes.
const MAX_DELAY_MS: u64 = 600_000;
/// The path of the chat mode, as an `openai` provider with `base_url` `<sandbox url>/v1` posts.
pub const CHAT_PATH: &str = "/v1/chat/completions";
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The sandbox's fault dials. Every probability is 0.0–1.0; one number is rolled per request
/// and the faults are tried in field order, so at most one fault hits a request and their
/// probabilities add up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(default, deny_unknown_fields)]
pub struct Dials {
    /// Base latency before answering, in milliseconds (default 300).
    pub latency_ms: u32,
    /// Added to the latency: uniform over 0..=jitter_ms (default 200).
    pub jitter_ms: u32,
    /// The request is processed (it counts as done) but the connection is held open and
    /// never answered.
    pub never_answer: f64,
    /// The request is processed, then the connection is closed without any response bytes.
    pub drop_after_processing: f64,
    /// 500 `{"error": …}`; the request is not processed.
    pub server_error: f64,
    /// 429 with `Retry-After: <retry_after_s>`; the request is not processed.
    pub throttle: f64,
    /// The `Retry-After` seconds of a throttled request (default 1).
    pub retry_after_s: u32,
    /// The request is processed and answered 200 with a body that is not JSON.
    pub malformed_json: f64,
    /// The request is processed and answered 200 with the normal answer plus an extra
    /// top-level key `"unexpected"` (in chat mode: in the message content).
    pub extra_key: f64,
    /// Chat mode: the message content is prose around the answer, not JSON.
    pub prose: f64,
    /// Chat mode: the content lacks its first required key.
    pub missing_required_key: f64,
    /// Chat mode: the content's first property has a value of the wrong type.
    pub wrong_type: f64,
    /// Whether a repeated `Idempotency-Key` gets the first answer (default true).
    pub honour_idempotency_key: bool,
}

impl Default for Dials {
    fn default() -> Self {
        Dials {
            latency_ms: 300,
            jitter_ms: 200,
            never_answer: 0.0,
            drop_after_processing: 0.0,
            server_error: 0.0,
            throttle: 0.0,
            retry_after_s: 1,
            malformed_json: 0.0,
            extra_key: 0.0,
            prose: 0.0,
            missing_required_key: 0.0,
            wrong_type: 0.0,
            honour_idempotency_key: true,
        }
    }
}

/// What the dials can do to one request, in the order they are rolled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    NeverAnswer,
    DropAfterProcessing,
    ServerError,
    Throttle,
    MalformedJson,
    ExtraKey,
    Prose,
    MissingRequiredKey,
    WrongType,
}

impl Dials {
    /// Reads dials from JSON text: an object whose fields are all optional; unknown or
    /// mistyped fields are `invalid_input` naming them (`dials.throttle`), and the result is
    /// validated.
    pub fn parse(text: &str) -> Result<Dials> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid_input("dials", format!("not valid JSON ({e})")))?;
        let Value::Object(fields) = &value else {
            return Err(Error::invalid_input("dials", "must be a JSON object"));
        };
        let known = serde_json::to_value(Dials::default())
            .map_err(|e| Error::internal(format!("cannot serialise the dials: {e}")))?;
        for (name, field) in fields {
            if known.get(name).is_none() {
                return Err(Error::invalid_input(
                    format!("dials.{name}"),
                    "is not a dial",
                ));
            }
            // One field at a time, so a wrong type names its field.
            let alone = Value::Object(Map::from_iter([(name.clone(), field.clone())]));
            serde_json::from_value::<Dials>(alone).map_err(|e| {
                Error::invalid_input(format!("dials.{name}"), format!("has the wrong type ({e})"))
            })?;
        }
        let dials: Dials = serde_json::from_value(value)
            .map_err(|e| Error::invalid_input("dials", format!("cannot be read ({e})")))?;
        dials.validate()?;
        Ok(dials)
    }

    /// Checks that every probability is finite and within 0–1, that they add up to at most 1,
    /// and that latency plus jitter is at most ten minutes; otherwise `invalid_input` naming
    /// the field (`dials.throttle`, or `dials` for the sum).
    pub fn validate(&self) -> Result<()> {
        let mut sum = 0.0;
        for (name, p) in self.probabilities() {
            if !p.is_finite() || !(0.0..=1.0).contains(&p) {
                return Err(Error::invalid_input(
                    format!("dials.{name}"),
                    format!("{p} is not a probability between 0 and 1"),
                ));
            }
            sum += p;
        }
        // A small tolerance, so 0.1 + 0.2 + 0.7 counts as 1.
        if sum > 1.0 + 1e-9 {
            return Err(Error::invalid_input(
                "dials",
                format!("the fault probabilities add up to {sum}; at most 1 is possible"),
            ));
        }
        if u64::from(self.latency_ms) + u64::from(self.jitter_ms) > MAX_DELAY_MS {
            return Err(Error::invalid_input(
                "dials.latency_ms",
                format!("latency_ms plus jitter_ms must be at most {MAX_DELAY_MS}"),
            ));
        }
        Ok(())
    }

    fn probabilities(&self) -> [(&'static str, f64); 9] {
        [
            ("never_answer", self.never_answer),
            ("drop_after_processing", self.drop_after_processing),
            ("server_error", self.server_error),
            ("throttle", self.throttle),
            ("malformed_json", self.malformed_json),
            ("extra_key", self.extra_key),
            ("prose", self.prose),
            ("missing_required_key", self.missing_required_key),
            ("wrong_type", self.wrong_type),
        ]
    }

    /// One roll: the first fault whose cumulative probability exceeds it, if any.
    fn roll(&self, rng: &mut impl Rng) -> Option<Fault> {
        let faults = [
            Fault::NeverAnswer,
            Fault::DropAfterProcessing,
            Fault::ServerError,
            Fault::Throttle,
            Fault::MalformedJson,
            Fault::ExtraKey,
            Fault::Prose,
            Fault::MissingRequiredKey,
            Fault::WrongType,
        ];
        let roll: f64 = rng.gen();
        let mut cumulative = 0.0;
        for (fault, (_, p)) in faults.into_iter().zip(self.probabilities()) {
            cumulative += p;
            if roll < cumulative {
                return Some(fault);
            }
        }
        None
    }

    fn delay(&self, rng: &mut impl Rng) -> Duration {
        let jitter = rng.gen_range(0..=u64::from(self.jitter_ms));
        Duration::from_millis(u64::from(self.latency_ms) + jitter)
    }
}

/// One request the sandbox saw on its job endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct LogEntry {
    /// When it arrived, in the ledger's time format.
    pub at: String,
    pub method: String,
    /// The path with its query string.
    pub path: String,
    pub idempotency_key: Option<String>,
    /// `sbx-<n>`, also sent back as the `X-Request-Id` header.
    pub request_id: String,
    /// Hex SHA-256 of the raw body bytes; empty when the body was too large to read.
    pub body_sha256: String,
    /// What the sandbox did with it: `answered`, `never_answered`, `dropped`, `server_error`,
    /// `throttled`, `malformed_json`, `extra_key`, `prose`, `missing_required_key`, `wrong_type`,
    /// `replayed`, `in_progress` or `bad_request`.
    pub outcome: String,
}

/// A running sandbox. Clones share one server; it stops on [`Sandbox::stop`] or when the last
/// clone is dropped.
#[derive(Clone)]
pub struct Sandbox {
    handle: Arc<Handle>,
}

struct Handle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    server: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

impl Sandbox {
    /// Starts listening on `addr` and serving in the background. Refuses any address that is
    /// not loopback, or one it cannot bind, as `invalid_input` naming `listen`; refuses invalid
    /// dials as [`Dials::validate`] does.
    pub async fn start(addr: SocketAddr, dials: Dials) -> Result<Sandbox> {
        if !addr.ip().is_loopback() {
            return Err(Error::invalid_input(
                "listen",
                format!("{addr} is not a loopback address; the sandbox listens on 127.0.0.1 or ::1 only"),
            ));
        }
        dials.validate()?;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| Error::invalid_input("listen", format!("cannot listen on {addr}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::internal(format!("the sandbox's listener has no address: {e}")))?;
        let shared = Arc::new(Shared {
            dials: Mutex::new(dials),
            state: Mutex::new(State::default()),
            open_connections: AtomicUsize::new(0),
        });
        let (shutdown, stopped) = watch::channel(false);
        let server = tokio::spawn(serve(listener, shared.clone(), stopped));
        Ok(Sandbox {
            handle: Arc::new(Handle {
                addr,
                shared,
                shutdown,
                server: Mutex::new(Some(server)),
            }),
        })
    }

    /// The address it listens on, with the port chosen when 0 was asked for.
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr
    }

    /// The base URL of its job endpoint: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.handle.addr)
    }

    /// Replaces the dials; requests that arrive afterwards use them. Out-of-range values are
    /// not refused here (validate first): probabilities act as if clamped.
    pub fn set_dials(&self, dials: Dials) {
        *lock(&self.handle.shared.dials) = dials;
    }

    /// The dials in force.
    pub fn dials(&self) -> Dials {
        lock(&self.handle.shared.dials).clone()
    }

    /// Every request its job endpoint saw, in arrival order.
    pub fn log(&self) -> Vec<LogEntry> {
        lock(&self.handle.shared.state).log.clone()
    }

    /// How many client connections are open now, held ones included.
    pub fn open_connections(&self) -> usize {
        self.handle.shared.open_connections.load(Ordering::SeqCst)
    }

    /// Stops accepting, closes every connection (held ones included) and returns once the
    /// server has ended. Other clones see a stopped server.
    pub async fn stop(self) {
        self.handle.shutdown.send_replace(true);
        let server = lock(&self.handle.server).take();
        if let Some(server) = server {
            // The server task only ends by itself; a panic in it has nothing left to clean up.
            let _ = server.await;
        }
    }
}

/// State shared by the handle and every connection.
struct Shared {
    dials: Mutex<Dials>,
    state: Mutex<State>,
    open_connections: AtomicUsize,
}

#[derive(Default)]
struct State {
    log: Vec<LogEntry>,
    keys: HashMap<String, KeyRecord>,
    requests: u64,
}

/// What the sandbox knows of one idempotency key.
#[derive(Default)]
struct KeyRecord {
    /// Requests with this key being processed now.
    processing: u32,
    /// The first processed request's answer.
    answer: Option<Answer>,
    /// A request with this key was refused.
    refused: bool,
}

/// An answer as sent (or as it would have been sent), kept for replays and status lookups.
#[derive(Clone)]
struct Answer {
    status: StatusCode,
    body: Bytes,
}

/// What was decided for a request when it arrived.
enum Plan {
    /// Process it, then deliver its answer as said.
    Process(Delivery),
    /// Refuse it: 500, not processed.
    ServerError,
    /// Refuse it: 429 with `Retry-After`, not processed.
    Throttle { retry_after_s: u32 },
    /// Refuse it: 400, 405 or 413 with a message; not processed.
    BadRequest(StatusCode, String),
    /// Send the answer of the key's first processed request again.
    Replay(Answer),
    /// Refuse it: 409, the key's first request is still being processed.
    InProgress,
}

/// How the answer of a processed request reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    Answer,
    Withhold,
    Drop,
    MalformedJson,
    ExtraKey,
    Prose,
    MissingRequiredKey,
    WrongType,
}

impl Plan {
    fn from_roll(fault: Option<Fault>, dials: &Dials) -> Plan {
        match fault {
            None => Plan::Process(Delivery::Answer),
            Some(Fault::NeverAnswer) => Plan::Process(Delivery::Withhold),
            Some(Fault::DropAfterProcessing) => Plan::Process(Delivery::Drop),
            Some(Fault::ServerError) => Plan::ServerError,
            Some(Fault::Throttle) => Plan::Throttle {
                retry_after_s: dials.retry_after_s,
            },
            Some(Fault::MalformedJson) => Plan::Process(Delivery::MalformedJson),
            Some(Fault::ExtraKey) => Plan::Process(Delivery::ExtraKey),
            Some(Fault::Prose) => Plan::Process(Delivery::Prose),
            Some(Fault::MissingRequiredKey) => Plan::Process(Delivery::MissingRequiredKey),
            Some(Fault::WrongType) => Plan::Process(Delivery::WrongType),
        }
    }

    fn outcome(&self) -> &'static str {
        match self {
            Plan::Process(Delivery::Answer) => "answered",
            Plan::Process(Delivery::Withhold) => "never_answered",
            Plan::Process(Delivery::Drop) => "dropped",
            Plan::Process(Delivery::MalformedJson) => "malformed_json",
            Plan::Process(Delivery::ExtraKey) => "extra_key",
            Plan::Process(Delivery::Prose) => "prose",
            Plan::Process(Delivery::MissingRequiredKey) => "missing_required_key",
            Plan::Process(Delivery::WrongType) => "wrong_type",
            Plan::ServerError => "server_error",
            Plan::Throttle { .. } => "throttled",
            Plan::BadRequest(..) => "bad_request",
            Plan::Replay(_) => "replayed",
            Plan::InProgress => "in_progress",
        }
    }
}

/// A request whose fate is decided, waiting out its latency.
struct Work {
    request_id: String,
    key: Option<String>,
    plan: Plan,
    echo: Value,
    /// Asked at `/v1/chat/completions`: answered in the Chat Completions envelope.
    chat: bool,
}

/// How the service ends a request.
enum Reply {
    Send(Response<Full<Bytes>>),
    /// Hold the connection open and never answer.
    Hold,
    /// Close the connection without a response byte.
    Close,
}

/// The service's error: returning it makes hyper close the connection without answering.
#[derive(Debug)]
struct ConnectionDropped;

impl std::fmt::Display for ConnectionDropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the sandbox dropped the connection")
    }
}

impl std::error::Error for ConnectionDropped {}

/// A request as read off the wire, before anything is decided.
struct Arrival {
    method: Method,
    path: String,
    key: Option<String>,
    body: Option<Bytes>,
}

/// Accepts connections until stopped, each served in its own task; on stop, closes them all.
async fn serve(listener: TcpListener, shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    let for_connections = stopped.clone();
    loop {
        tokio::select! {
            _ = until_stopped(&mut stopped) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, shared.clone(), for_connections.clone()));
                }
                // Out of descriptors or a connection reset while queued: wait a little, go on.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// Serves one connection with keep-alive until it ends or the sandbox stops.
async fn connection(stream: TcpStream, shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    shared.open_connections.fetch_add(1, Ordering::SeqCst);
    let _open = OpenConnection(shared.clone());
    let service = service_fn(move |request| handle(request, shared.clone()));
    let served = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        // A dropped connection ends in an error by design; there is no one to tell.
        _ = served => {}
        _ = until_stopped(&mut stopped) => {}
    }
}

/// Resolves once the sandbox is stopped, or its last handle is gone.
async fn until_stopped(stopped: &mut watch::Receiver<bool>) {
    // An error means the sender is gone: stopped as well.
    let _ = stopped.wait_for(|s| *s).await;
}

/// Counts a connection as open for as long as it lives, however its task ends.
struct OpenConnection(Arc<Shared>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
) -> std::result::Result<Response<Full<Bytes>>, ConnectionDropped> {
    let path = request.uri().path();
    if path == "/_log" || path.starts_with("/status/") {
        return Ok(read_only(&request, &shared));
    }
    let arrival = read_arrival(request).await?;
    let (work, delay) = shared.arrive(arrival);
    // The work runs in its own task, so a client that hangs up does not stop it.
    let work = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        shared.finish(work)
    });
    match work.await {
        Ok(Reply::Send(response)) => Ok(response),
        Ok(Reply::Hold) => std::future::pending().await,
        Ok(Reply::Close) | Err(_) => Err(ConnectionDropped),
    }
}

/// Reads the method, path, key and body; a client that vanishes mid-body is dropped.
async fn read_arrival(
    request: Request<Incoming>,
) -> std::result::Result<Arrival, ConnectionDropped> {
    let method = request.method().clone();
    let path = request.uri().path_and_query().map_or_else(
        || request.uri().path().to_owned(),
        |p| p.as_str().to_owned(),
    );
    let key = request
        .headers()
        .get(IDEMPOTENCY_KEY)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(collected) => Some(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => None,
        Err(_) => return Err(ConnectionDropped),
    };
    Ok(Arrival {
        method,
        path,
        key,
        body,
    })
}

/// The two read-only endpoints: the log and the status lookup.
fn read_only(request: &Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    if request.method() != Method::GET {
        return json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({ "error": "this endpoint takes GET" }),
        );
    }
    let path = request.uri().path();
    match path.strip_prefix("/status/") {
        None => {
            let requests = lock(&shared.state).log.clone();
            json_response(StatusCode::OK, &json!({ "requests": requests }))
        }
        Some(key) => {
            let (status, body) = shared.status(&percent_decode(key));
            json_response(status, &body)
        }
    }
}

impl Shared {
    /// Logs an arriving request and decides what happens to it, in one step so two requests
    /// with one key cannot both start processing.
    fn arrive(&self, arrival: Arrival) -> (Work, Duration) {
        let Arrival {
            method,
            path,
            key,
            body,
        } = arrival;
        let chat = path.split('?').next() == Some(CHAT_PATH);
        let echo = body
            .as_ref()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok());
        let dials = lock(&self.dials).clone();
        let mut rng = rand::thread_rng();
        let delay = dials.delay(&mut rng);
        let mut state = lock(&self.state);
        state.requests += 1;
        let request_id = format!("sbx-{}", state.requests);
        let honoured = key
            .as_ref()
            .filter(|_| dials.honour_idempotency_key)
            .and_then(|k| state.keys.get(k));
        let plan = if method != Method::POST {
            let message = "the job endpoint takes POST";
            Plan::BadRequest(StatusCode::METHOD_NOT_ALLOWED, message.to_owned())
        } else if body.is_none() {
            let message = format!("the body is larger than {MAX_BODY} bytes");
            Plan::BadRequest(StatusCode::PAYLOAD_TOO_LARGE, message)
        } else if echo.is_none() {
            let message = "the body is not JSON";
            Plan::BadRequest(StatusCode::BAD_REQUEST, message.to_owned())
        } else if let Some(answer) = honoured.and_then(|r| r.answer.clone()) {
            Plan::Replay(answer)
        } else if honoured.is_some_and(|r| r.processing > 0) {
            Plan::InProgress
        } else {
            let fault = dials.roll(&mut rng);
            let chat_only = matches!(
                fault,
                Some(Fault::Prose | Fault::MissingRequiredKey | Fault::WrongType)
            );
            Plan::from_roll(fault.filter(|_| chat || !chat_only), &dials)
        };
        if let Some(key) = &key {
            match &plan {
                Plan::Process(_) => state.keys.entry(key.clone()).or_default().processing += 1,
                Plan::ServerError | Plan::Throttle { .. } | Plan::BadRequest(..) => {
                    state.keys.entry(key.clone()).or_default().refused = true;
                }
                Plan::Replay(_) | Plan::InProgress => {}
            }
        }
        let entry = LogEntry {
            at: now(),
            method: method.to_string(),
            path,
            idempotency_key: key.clone(),
            request_id: request_id.clone(),
            body_sha256: body
                .map(|b| hex::encode(Sha256::digest(&b)))
                .unwrap_or_default(),
            outcome: plan.outcome().to_owned(),
        };
        state.log.push(entry);
        let work = Work {
            request_id,
            key,
            plan,
            echo: echo.unwrap_or(Value::Null),
            chat,
        };
        (work, delay)
    }

    /// Completes a request after its latency: records processed work under its key and
    /// builds the reply.
    fn finish(&self, work: Work) -> Reply {
        let Work {
            request_id,
            key,
            plan,
            echo,
            chat,
        } = work;
        let (status, body) = match plan {
            Plan::Process(delivery) => {
                let answer = if chat {
                    chat_answer(delivery, &echo, &request_id)
                } else {
                    let normal =
                        json!({ "echo": echo, "request_id": request_id, "answered_at": now() });
                    processed_answer(delivery, normal)
                };
                if let Some(key) = &key {
                    self.record(key, &answer);
                }
                return match delivery {
                    Delivery::Withhold => Reply::Hold,
                    Delivery::Drop => Reply::Close,
                    _ => Reply::Send(answer_response(&answer, &request_id)),
                };
            }
            Plan::Replay(answer) => {
                let mut response = answer_response(&answer, &request_id);
                response
                    .headers_mut()
                    .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
                return Reply::Send(response);
            }
            Plan::Throttle { retry_after_s } => {
                let body = json!({ "error": format!("throttled; retry after {retry_after_s} s") });
                let mut response = answer_response(
                    &json_answer(StatusCode::TOO_MANY_REQUESTS, &body),
                    &request_id,
                );
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(retry_after_s));
                return Reply::Send(response);
            }
            Plan::ServerError => (
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "error": "the sandbox's server_error dial failed this request" }),
            ),
            Plan::BadRequest(status, message) => (status, json!({ "error": message })),
            Plan::InProgress => (
                StatusCode::CONFLICT,
                json!({ "error": "a request with this Idempotency-Key is in progress" }),
            ),
        };
        Reply::Send(answer_response(&json_answer(status, &body), &request_id))
    }

    /// Marks the work of a processed request done under its key; the first answer is kept.
    fn record(&self, key: &str, answer: &Answer) {
        let mut state = lock(&self.state);
        if let Some(record) = state.keys.get_mut(key) {
            record.processing = record.processing.saturating_sub(1);
            record.answer.get_or_insert_with(|| answer.clone());
        }
    }

    /// The status lookup of one key: HTTP status and body.
    fn status(&self, key: &str) -> (StatusCode, Value) {
        let state = lock(&self.state);
        match state.keys.get(key) {
            Some(KeyRecord {
                answer: Some(answer),
                ..
            }) => {
                let result = serde_json::from_slice::<Value>(&answer.body).unwrap_or_else(|_| {
                    Value::String(String::from_utf8_lossy(&answer.body).into_owned())
                });
                (
                    StatusCode::OK,
                    json!({ "state": "succeeded", "result": result }),
                )
            }
            Some(record) if record.processing > 0 => {
                (StatusCode::OK, json!({ "state": "pending" }))
            }
            Some(record) if record.refused => (StatusCode::OK, json!({ "state": "failed" })),
            _ => (StatusCode::NOT_FOUND, json!({ "state": "not_found" })),
        }
    }
}

/// The answer a processed chat request gets: a chat completion whose content the dial may
/// break; a malformed one is cut short like any other.
fn chat_answer(delivery: Delivery, request: &Value, request_id: &str) -> Answer {
    let broken = match delivery {
        Delivery::ExtraKey => Break::ExtraKey,
        Delivery::Prose => Break::Prose,
        Delivery::MissingRequiredKey => Break::MissingRequiredKey,
        Delivery::WrongType => Break::WrongType,
        Delivery::Answer | Delivery::Withhold | Delivery::Drop | Delivery::MalformedJson => {
            Break::None
        }
    };
    let completion = sandbox_chat::completion(request, request_id, broken);
    let cut = if delivery == Delivery::MalformedJson {
        Delivery::MalformedJson
    } else {
        Delivery::Answer
    };
    processed_answer(cut, completion)
}

/// The answer a processed request gets (or would have got, when it is withheld or dropped).
fn processed_answer(delivery: Delivery, normal: Value) -> Answer {
    let body = match delivery {
        Delivery::MalformedJson => {
            // A JSON object cut short is never JSON: its opening brace is never closed.
            let full = normal.to_string().into_bytes();
            Bytes::from(full[..full.len() / 2].to_vec())
        }
        Delivery::ExtraKey => {
            let mut answer = normal;
            if let Value::Object(fields) = &mut answer {
                fields.insert(
                    "unexpected".to_owned(),
                    json!("added by the sandbox's extra_key dial"),
                );
            }
            Bytes::from(answer.to_string())
        }
        Delivery::Answer
        | Delivery::Withhold
        | Delivery::Drop
        | Delivery::Prose
        | Delivery::MissingRequiredKey
        | Delivery::WrongType => Bytes::from(normal.to_string()),
    };
    Answer {
        status: StatusCode::OK,
        body,
    }
}

/// A JSON body with its status.
fn json_answer(status: StatusCode, body: &Value) -> Answer {
    Answer {
        status,
        body: Bytes::from(body.to_string()),
    }
}

/// A JSON reply of the read-only endpoints.
fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    plain_response(&json_answer(status, body))
}

fn plain_response(answer: &Answer) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(answer.body.clone()));
    *response.status_mut() = answer.status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An answer as the job endpoint sends it, with the id of the request it answers.
fn answer_response(answer: &Answer, request_id: &str) -> Response<Full<Bytes>> {
    let mut response = plain_response(answer);
    // Request ids are `sbx-<n>`, always a valid header value.
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert(X_REQUEST_ID, value);
    }
    response
}

/// Decodes `%XX` escapes of a path segment; a malformed escape is kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A poisoned lock only means another request panicked; the data is still consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roll_picks_faults_in_field_order() {
        let dials = Dials {
            server_error: 1.0,
            ..Dials::default()
        };
        assert_eq!(
            dials.roll(&mut rand::thread_rng()),
            Some(Fault::ServerError)
        );
        assert_eq!(Dials::default().roll(&mut rand::thread_rng()), None);
    }

    #[test]
    fn percent_escapes_are_decoded() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn dials_name_their_bad_field() {
        let err = Dials::parse(r#"{"throttle": "often"}"#).err();
        assert!(
            matches!(err, Some(Error::InvalidInput { ref details, .. }) if details.field == "dials.throttle")
        );
        let err = Dials::parse(r#"{"nope": 1}"#).err();
        assert!(
            matches!(err, Some(Error::InvalidInput { ref details, .. }) if details.field == "dials.nope")
        );
        let err = Dials::parse(r#"{"throttle": 0.6, "server_error": 0.6}"#).err();
        assert!(
            matches!(err, Some(Error::InvalidInput { ref details, .. }) if details.field == "dials")
        );
        assert_eq!(Dials::parse("{}").ok(), Some(Dials::default()));
    }
}
