//! The server: the listener, its connections, the handling of each request as it arrives (the
//! log entry and the decision), the status lookups and `/_log`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::HeaderName;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::dials::{Dials, Fault};
use super::replies::{json_response, Answer, Delivery, Plan, Reply, Work};
use super::{lock, LogEntry, CHAT_PATH};
use crate::store::now;

/// The largest request body the sandbox reads; a job's intent is at most 1 MiB.
const MAX_BODY: usize = 16 * 1024 * 1024;
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// State shared by the handle and every connection.
pub(super) struct Shared {
    pub(super) dials: Mutex<Dials>,
    pub(super) state: Mutex<State>,
    pub(super) open_connections: AtomicUsize,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) log: Vec<LogEntry>,
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
pub(super) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
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
        let mut delay = dials.delay(&mut rng);
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
        if matches!(plan, Plan::Process(Delivery::Slow)) {
            delay += Duration::from_millis(u64::from(dials.slow_work_ms));
        }
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

    /// Marks the work of a processed request done under its key; the first answer is kept.
    pub(super) fn record(&self, key: &str, answer: &Answer) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_are_decoded() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
