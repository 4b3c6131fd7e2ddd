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
//!   provider whose `base_url` is the sandbox's url plus `/v1`, and every job with a contract
//!   at a `sandbox` provider, see `chat_url`). The answer is a chat completion
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

mod chat;
mod dials;
mod replies;
mod server;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use dials::Dials;
use server::{serve, Shared, State};

use crate::error::{Error, Result};

/// The path of the chat mode, as an `openai` provider with `base_url` `<sandbox url>/v1` posts.
pub(crate) const CHAT_PATH: &str = "/v1/chat/completions";

/// The chat endpoint of the sandbox whose job endpoint is `base_url`: the same server, at
/// [`CHAT_PATH`] (the job endpoint answers on any path, so the base URL's own path and query
/// are dropped). `None` when `base_url` is not an http(s) URL.
pub(crate) fn chat_url(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return None;
    }
    url.join(CHAT_PATH).ok().map(String::from)
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
    /// `slow_work`, `replayed`, `in_progress` or `bad_request`.
    pub outcome: String,
}

/// A running sandbox. Clones share one server; it stops on [`Sandbox::stop`] or when the last
/// clone is dropped.
#[derive(Clone)]
pub struct Sandbox {
    running: Arc<Running>,
}

struct Running {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    server: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Running {
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
            running: Arc::new(Running {
                addr,
                shared,
                shutdown,
                server: Mutex::new(Some(server)),
            }),
        })
    }

    /// The address it listens on, with the port chosen when 0 was asked for.
    pub fn addr(&self) -> SocketAddr {
        self.running.addr
    }

    /// The base URL of its job endpoint: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.running.addr)
    }

    /// Replaces the dials; requests that arrive afterwards use them. Out-of-range values are
    /// not refused here (validate first): probabilities act as if clamped.
    pub fn set_dials(&self, dials: Dials) {
        *lock(&self.running.shared.dials) = dials;
    }

    /// The dials in force.
    pub fn dials(&self) -> Dials {
        lock(&self.running.shared.dials).clone()
    }

    /// Every request its job endpoint saw, in arrival order.
    pub fn log(&self) -> Vec<LogEntry> {
        lock(&self.running.shared.state).log.clone()
    }

    /// How many client connections are open now, held ones included.
    pub fn open_connections(&self) -> usize {
        self.running.shared.open_connections.load(Ordering::SeqCst)
    }

    /// Stops accepting, closes every connection (held ones included) and returns once the
    /// server has ended. Other clones see a stopped server.
    pub async fn stop(self) {
        self.running.shutdown.send_replace(true);
        let server = lock(&self.running.server).take();
        if let Some(server) = server {
            // The server task only ends by itself; a panic in it has nothing left to clean up.
            let _ = server.await;
        }
    }
}

/// A poisoned lock only means another request panicked; the data is still consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chat_endpoint_is_found_from_any_job_endpoint_url() {
        let chat = Some("http://127.0.0.1:8080/v1/chat/completions".to_owned());
        assert_eq!(chat_url("http://127.0.0.1:8080"), chat);
        assert_eq!(chat_url("http://127.0.0.1:8080/pay/?order=45"), chat);
        assert_eq!(chat_url("not a url"), None);
    }
}
