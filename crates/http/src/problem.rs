//! Errors as `application/problem+json` (RFC 9457) carrying SPEC §11's `code` and `details`:
//! every failure of the API leaves through here, whoever produced it.

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;
use onejob_engine::Error;
use serde_json::{json, Value};

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";
/// The code of a request refused for want of room (SPEC §11): a token past its share of long
/// requests (429), or a connection past the server's limit (503). It is the HTTP face's own,
/// so it is not one of the engine's.
pub const TOO_MANY_REQUESTS: &str = "too_many_requests";

/// One error answer: the status, SPEC §11's code and details, and what a person should read.
#[derive(Debug)]
pub struct Problem {
    pub status: StatusCode,
    pub code: &'static str,
    pub detail: String,
    pub details: Value,
    /// `Retry-After`, in seconds, when trying again later can help.
    pub retry_after: Option<u32>,
}

impl Problem {
    /// A problem the HTTP layer finds itself (no engine call was made).
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Problem {
        Problem {
            status,
            code,
            detail: detail.into(),
            details: json!({}),
            retry_after: None,
        }
    }

    /// `invalid_input` naming `field`, as the engine words it.
    pub fn invalid(field: &str, message: impl Into<String>) -> Problem {
        Error::invalid_input(field, message).into()
    }

    /// `invalid_input` naming `field` with a status of the HTTP layer's own (405, 408, 413,
    /// 415, 431…), so its `details` are the ones the code's schema requires.
    pub fn refused(status: StatusCode, field: &str, message: impl Into<String>) -> Problem {
        let mut problem = Problem::invalid(field, message);
        problem.status = status;
        problem
    }

    /// `too_many_requests` with `status` (429 or 503) and `Retry-After`.
    pub fn too_many(status: StatusCode, detail: impl Into<String>, retry_after: u32) -> Problem {
        let mut problem = Problem::new(status, TOO_MANY_REQUESTS, detail);
        problem.retry_after = Some(retry_after);
        problem
    }

    /// The body of this problem.
    pub fn body(&self) -> Value {
        json!({
            "type": type_uri(self.code),
            "title": title(self.code),
            "status": self.status.as_u16(),
            "detail": self.detail,
            "code": self.code,
            "details": self.details,
        })
    }
}

/// The problem type: a tag URI (RFC 4151) per code, so it names the kind without pointing at a
/// page that would need a network to read.
fn type_uri(code: &str) -> String {
    format!("tag:onejob.dev,2026:problem:{code}")
}

/// The problem type's title: one per code, whatever the status of an occurrence (RFC 9457
/// §3.1.3 says a type's title does not change between occurrences).
pub fn title(code: &str) -> &'static str {
    match code {
        "invalid_input" => "Invalid input",
        "idempotency_conflict" => "The key names a job with another intent",
        "attempt_blocked" => "An open attempt blocks this",
        "invalid_transition" => "Not allowed from the current state",
        "not_found" => "Not found",
        "fallback_not_validated" => "Failover to an unvalidated provider refused",
        "unauthorized" => "Unauthorized",
        "storage" => "The ledger failed",
        "provider" => "A provider failed",
        TOO_MANY_REQUESTS => "Too many requests",
        _ => "Internal error",
    }
}

impl From<Error> for Problem {
    fn from(error: Error) -> Problem {
        let status =
            StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let code = error.code();
        // The engine's union serialises as {code, message, details}; details are its own.
        let details = serde_json::to_value(&error)
            .ok()
            .and_then(|v| v.get("details").cloned())
            .unwrap_or_else(|| json!({}));
        // The ledger failed, not the request: the same request may succeed in a moment.
        let retry_after = matches!(error, Error::Storage { .. }).then_some(1);
        Problem {
            status,
            code,
            detail: error.to_string(),
            details,
            retry_after,
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> axum::response::Response {
        let body = self.body().to_string();
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::REQUEST_TIMEOUT {
            // A client this slow gets no second request on the connection.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Gives every error answer that did not come from [`Problem`] (a method not allowed, the body
/// limit's 413, an extractor's refusal) the same problem+json shape, with the `details` its
/// code's schema requires.
pub async fn as_problem(response: axum::response::Response) -> axum::response::Response {
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == PROBLEM_JSON.as_bytes());
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return response;
    }
    let problem = match status {
        StatusCode::NOT_FOUND => not_found(""),
        StatusCode::METHOD_NOT_ALLOWED => Problem::refused(
            status,
            "method",
            "this resource does not take that method; `Allow` lists the ones it takes",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => Problem::refused(
            status,
            "body",
            format!("over the limit of {} bytes", crate::MAX_BODY),
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            Problem::refused(status, "Content-Type", "the body must be application/json")
        }
        _ if status.is_server_error() => Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the server failed",
        ),
        _ => Problem::refused(status, "request", "the request was refused"),
    };
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut answer = problem.into_response();
    if let Some(allow) = allow {
        answer.headers_mut().insert(header::ALLOW, allow);
    }
    answer
}

/// `not_found` for a path no route serves.
fn not_found(path: &str) -> Problem {
    let mut problem = Problem::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such resource in this API",
    );
    problem.details = json!({ "entity": "path", "id": path });
    problem
}

/// The answer to a path no route serves.
pub async fn no_route(uri: axum::http::Uri) -> Problem {
    not_found(uri.path())
}

/// A whole HTTP/1.1 answer of `problem` that closes the connection, for the connection layer,
/// which answers before any router sees a request.
pub fn raw_answer(problem: &Problem) -> Vec<u8> {
    let body = problem.body().to_string();
    let reason = problem.status.canonical_reason().unwrap_or("Error");
    let retry = problem
        .retry_after
        .map(|s| format!("retry-after: {s}\r\n"))
        .unwrap_or_default();
    format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: {PROBLEM_JSON}\r\ncontent-length: {}\r\n\
         {retry}connection: close\r\n\r\n{body}",
        problem.status.as_u16(),
        body.len()
    )
    .into_bytes()
}
