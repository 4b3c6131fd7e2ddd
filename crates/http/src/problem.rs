//! Errors as `application/problem+json` (RFC 9457) carrying SPEC §11's `code` and `details`:
//! every failure of the API leaves through here, whoever produced it.

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;
use onejob_engine::Error;
use serde_json::{json, Value};

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

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

    /// The body of this problem.
    pub fn body(&self) -> Value {
        json!({
            "type": type_uri(self.code),
            "title": title(self.status),
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

/// The status's reason phrase, the same for every instance of it.
fn title(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("Error")
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

/// Gives every error answer that did not come from [`Problem`] (an unknown path, a method
/// not allowed, the body limit's 413) the same problem+json shape.
pub async fn as_problem(response: axum::response::Response) -> axum::response::Response {
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == PROBLEM_JSON.as_bytes());
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return response;
    }
    let (code, detail) = match status {
        StatusCode::NOT_FOUND => ("not_found", "no such resource in this API".to_owned()),
        StatusCode::METHOD_NOT_ALLOWED => (
            "invalid_input",
            "this resource does not take that method".to_owned(),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            "invalid_input",
            format!("the body is over the limit of {} bytes", crate::MAX_BODY),
        ),
        _ if status.is_server_error() => ("internal", "the server failed".to_owned()),
        _ => ("invalid_input", "the request was refused".to_owned()),
    };
    let mut problem = Problem::new(status, code, detail);
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        problem.details = json!({ "field": "body" });
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut answer = problem.into_response();
    if let Some(allow) = allow {
        answer.headers_mut().insert(header::ALLOW, allow);
    }
    answer
}
