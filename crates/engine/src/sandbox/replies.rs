//! The replies: what was decided for a request, and the answer, response or silence it gets
//! once its latency is over, in either mode.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

use super::chat::{self, Break};
use super::dials::{Dials, Fault};
use super::server::Shared;
use crate::store::now;

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// An answer as sent (or as it would have been sent), kept for replays and status lookups.
#[derive(Clone)]
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) body: Bytes,
}

/// What was decided for a request when it arrived.
pub(super) enum Plan {
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
pub(super) enum Delivery {
    Answer,
    Withhold,
    Drop,
    MalformedJson,
    ExtraKey,
    Prose,
    MissingRequiredKey,
    WrongType,
    /// Answered normally, after its slow work.
    Slow,
}

impl Plan {
    pub(super) fn from_roll(fault: Option<Fault>, dials: &Dials) -> Plan {
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
            Some(Fault::SlowWork) => Plan::Process(Delivery::Slow),
        }
    }

    pub(super) fn outcome(&self) -> &'static str {
        match self {
            Plan::Process(Delivery::Answer) => "answered",
            Plan::Process(Delivery::Withhold) => "never_answered",
            Plan::Process(Delivery::Drop) => "dropped",
            Plan::Process(Delivery::MalformedJson) => "malformed_json",
            Plan::Process(Delivery::ExtraKey) => "extra_key",
            Plan::Process(Delivery::Prose) => "prose",
            Plan::Process(Delivery::MissingRequiredKey) => "missing_required_key",
            Plan::Process(Delivery::WrongType) => "wrong_type",
            Plan::Process(Delivery::Slow) => "slow_work",
            Plan::ServerError => "server_error",
            Plan::Throttle { .. } => "throttled",
            Plan::BadRequest(..) => "bad_request",
            Plan::Replay(_) => "replayed",
            Plan::InProgress => "in_progress",
        }
    }
}

/// A request whose fate is decided, waiting out its latency.
pub(super) struct Work {
    pub(super) request_id: String,
    pub(super) key: Option<String>,
    pub(super) plan: Plan,
    pub(super) echo: Value,
    /// Asked at `/v1/chat/completions`: answered in the Chat Completions envelope.
    pub(super) chat: bool,
}

/// How the service ends a request.
pub(super) enum Reply {
    Send(Response<Full<Bytes>>),
    /// Hold the connection open and never answer.
    Hold,
    /// Close the connection without a response byte.
    Close,
}

impl Shared {
    /// Completes a request after its latency: records processed work under its key and
    /// builds the reply.
    pub(super) fn finish(&self, work: Work) -> Reply {
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
}

/// The answer a processed chat request gets: a chat completion whose content the dial may
/// break; a malformed one is cut short like any other.
fn chat_answer(delivery: Delivery, request: &Value, request_id: &str) -> Answer {
    let broken = match delivery {
        Delivery::ExtraKey => Break::ExtraKey,
        Delivery::Prose => Break::Prose,
        Delivery::MissingRequiredKey => Break::MissingRequiredKey,
        Delivery::WrongType => Break::WrongType,
        Delivery::Answer
        | Delivery::Withhold
        | Delivery::Drop
        | Delivery::MalformedJson
        | Delivery::Slow => Break::None,
    };
    let completion = chat::completion(request, request_id, broken);
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
        | Delivery::Slow
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
pub(super) fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
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
