//! Sending one attempt over HTTP and classifying what came back, as SPEC §6 says.
//!
//! The `http` kind (and the sandbox, which speaks it) POSTs the job's input as the JSON body
//! to `base_url`, used exactly as given, and takes the JSON answer as the result.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, DATE, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::Value;

use crate::failure::FailureKind;
use crate::model::AttemptError;
use crate::providers::{ProviderConfig, ProviderKind};

/// The largest answer body read (SPEC §6); a larger 2xx answer makes the attempt `unknown`.
pub const MAX_ANSWER: usize = 8 * 1024 * 1024;
/// How long the body of a refusal that leaves the attempt `unknown` is read, to count it.
const ERROR_BODY_WAIT: Duration = Duration::from_millis(500);
/// Longer than any wait onejob honours: a `Retry-After` too large to count is read as this.
const FOREVER: Duration = Duration::from_secs(u32::MAX as u64);

/// Response headers that carry a provider's request id, in order of preference.
const REQUEST_ID_HEADERS: [&str; 3] = ["x-request-id", "request-id", "x-amzn-requestid"];

/// What an attempt's exchange with the provider amounted to.
#[derive(Debug, Clone, PartialEq)]
pub enum Classified {
    /// A valid answer: it goes to the compare-and-swap.
    Answer(Value),
    /// A definite failure. `retry_after` is the provider's own `Retry-After`, if it sent one.
    Failed {
        error: AttemptError,
        http_status: Option<u16>,
        retry_after: Option<Duration>,
    },
    /// No trustworthy answer: the request may have been processed.
    Unknown {
        error: AttemptError,
        http_status: Option<u16>,
    },
}

fn error(kind: FailureKind, message: impl Into<String>) -> AttemptError {
    kind.because(message)
}

/// The response head, reported as soon as it arrives (before the body is read).
#[derive(Debug, Clone)]
pub struct Head {
    pub status: u16,
    pub request_id: Option<String>,
    /// Every header of the response, as it came.
    pub headers: HeaderMap,
    /// Body bytes read so far; it grows while the body is read.
    pub received: Arc<AtomicU64>,
}

/// Builds the attempt's request: the job's input as JSON, `Idempotency-Key: <job id>`, and
/// `Authorization: Bearer <key>` when a key was read for this call (never stored).
pub fn build(
    client: &reqwest::Client,
    url: &str,
    job_id: &str,
    input: &Value,
    api_key: Option<&str>,
) -> reqwest::RequestBuilder {
    let request = client
        .post(url)
        .header("Idempotency-Key", job_id)
        .json(input);
    match api_key {
        Some(key) => request.bearer_auth(key),
        None => request,
    }
}

/// Sends the request and classifies the outcome; `on_head` runs as soon as headers arrive.
pub async fn exchange(
    request: reqwest::RequestBuilder,
    config: &ProviderConfig,
    on_head: impl AsyncFnOnce(Head),
) -> Classified {
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => return classify_send_error(e),
    };
    let status = response.status();
    let headers = response.headers().clone();
    let received = Arc::new(AtomicU64::new(0));
    on_head(Head {
        status: status.as_u16(),
        request_id: request_id(&headers),
        headers: headers.clone(),
        received: received.clone(),
    })
    .await;
    if !status.is_success() {
        let classified = classify_status(status, &headers, config);
        if matches!(classified, Classified::Unknown { .. }) {
            // Its words are part of what a person decides on: how many bytes came is read,
            // briefly, since the verdict does not depend on them.
            let _ = tokio::time::timeout(ERROR_BODY_WAIT, read_body(response, &received)).await;
        }
        return classified;
    }
    let unknown = |kind, message: String| Classified::Unknown {
        error: error(kind, message),
        http_status: Some(status.as_u16()),
    };
    let body = match read_body(response, &received).await {
        Ok(body) => body,
        Err(Body::CutOff(e)) => {
            return unknown(
                FailureKind::CutOff,
                format!("the answer was cut off after a {status} status: {e}"),
            )
        }
        Err(Body::TooLarge) => {
            return unknown(
                FailureKind::AnswerTooLarge,
                format!("a {status} answer larger than {MAX_ANSWER} bytes; the work was done"),
            )
        }
    };
    match serde_json::from_slice::<Value>(&body) {
        Ok(answer) => Classified::Answer(answer),
        Err(e) => unreadable(status, &e, config),
    }
}

/// A complete 2xx body that is not JSON, by the table of SPEC §6: an AI provider's is judged
/// and retried; an `http` provider's 2xx says the work was done, so it is `unknown` unless the
/// provider honours `Idempotency-Key`, and then retried only there, under the same key.
fn unreadable(status: StatusCode, e: &serde_json::Error, config: &ProviderConfig) -> Classified {
    let code = Some(status.as_u16());
    let http_like = matches!(config.kind, ProviderKind::Http | ProviderKind::Sandbox);
    let failed = |kind: FailureKind, message: String| Classified::Failed {
        error: error(kind, message),
        http_status: code,
        retry_after: None,
    };
    match (http_like, config.honours_idempotency_key) {
        (false, _) => failed(
            FailureKind::InvalidAnswer,
            format!("a complete {status} answer that is not JSON: {e}"),
        ),
        (true, true) => failed(
            FailureKind::InvalidAnswerKeyed,
            format!(
                "a complete {status} answer that is not JSON ({e}); the work may be done, so only this provider is asked again, under the same key"
            ),
        ),
        (true, false) => Classified::Unknown {
            error: error(
                FailureKind::InvalidAnswerUnknown,
                format!(
                    "a complete {status} answer that is not JSON ({e}); the provider says it did the work, so it is not sent again"
                ),
            ),
            http_status: code,
        },
    }
}

/// Why a body was not read whole.
enum Body {
    CutOff(reqwest::Error),
    TooLarge,
}

/// Reads the body, at most `MAX_ANSWER` bytes of it, counting every byte in `received`.
async fn read_body(mut response: reqwest::Response, received: &AtomicU64) -> Result<Vec<u8>, Body> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Body::CutOff(e.without_url()))?
    {
        received.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(Body::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A send error. A timeout is tested first: a body timeout also reports itself as a
/// connect or request error, and treating it as "never sent" would bill twice.
fn classify_send_error(e: reqwest::Error) -> Classified {
    // The URL may carry a query string; no message repeats it.
    let e = e.without_url();
    if e.is_timeout() {
        return Classified::Unknown {
            error: error(FailureKind::Timeout, format!("no answer in time: {e}")),
            http_status: None,
        };
    }
    if e.is_builder() {
        return Classified::Failed {
            error: error(
                FailureKind::Misconfigured,
                format!("the request could not be built: {e}"),
            ),
            http_status: None,
            retry_after: None,
        };
    }
    if e.is_connect() {
        return Classified::Failed {
            error: error(
                FailureKind::NeverSent,
                format!("could not connect, nothing was sent: {e}"),
            ),
            http_status: None,
            retry_after: None,
        };
    }
    Classified::Unknown {
        error: error(
            FailureKind::ConnectionBroken,
            format!("the connection broke after the request may have been written: {e:#}"),
        ),
        http_status: None,
    }
}

/// A non-success status, by the table of SPEC §6.
fn classify_status(status: StatusCode, headers: &HeaderMap, config: &ProviderConfig) -> Classified {
    let code = status.as_u16();
    let failed = |kind: FailureKind, retry_after| Classified::Failed {
        error: error(kind, format!("the provider answered {status}")),
        http_status: Some(code),
        retry_after,
    };
    match code {
        408 | 429 | 503 => failed(FailureKind::Throttled, retry_after(headers)),
        500..=599 => {
            let http_like = matches!(config.kind, ProviderKind::Http | ProviderKind::Sandbox);
            if http_like && !config.honours_idempotency_key {
                // Without idempotency the work may have happened: only a person or a status
                // lookup can tell.
                Classified::Unknown {
                    error: error(
                        FailureKind::ServerErrorUnknown,
                        format!(
                            "the provider answered {status}; it may have processed the request"
                        ),
                    ),
                    http_status: Some(code),
                }
            } else {
                let kind = if http_like {
                    FailureKind::ServerErrorKeyed
                } else {
                    FailureKind::ServerError
                };
                failed(kind, None)
            }
        }
        // 400, 401, 403, 404, 422 and every other refusal: not at this provider again.
        _ => failed(FailureKind::Rejected, None),
    }
}

/// `Retry-After` as seconds or as an HTTP date; a number too large to count is read as a
/// very long wait (the ledger caps every wait at an hour), never as none. A date is measured
/// from the response's own `Date` (the server's clock wrote both), so a host whose clock is
/// off waits as long as any other; only without a `Date` is the host's clock used.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(
            value
                .parse::<u64>()
                .map_or(FOREVER, |s| Duration::from_secs(s).min(FOREVER)),
        );
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let sent = headers
        .get(DATE)
        .and_then(|d| d.to_str().ok())
        .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
        .unwrap_or_else(std::time::SystemTime::now);
    Some(at.duration_since(sent).unwrap_or_default())
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    REQUEST_ID_HEADERS
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok())
        .map(|id| id.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "3".parse().expect("header"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        headers.insert(
            RETRY_AFTER,
            httpdate::fmt_http_date(later).parse().expect("header"),
        );
        let wait = retry_after(&headers).expect("a date");
        assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120));
    }

    #[test]
    fn a_retry_after_date_is_measured_from_the_responses_own_date_not_the_hosts_clock() {
        let mut headers = HeaderMap::new();
        // The server's clock is an hour behind this host's: its date 20 s after its own now.
        let server_now = std::time::SystemTime::now() - Duration::from_secs(3600);
        headers.insert(
            DATE,
            httpdate::fmt_http_date(server_now).parse().expect("header"),
        );
        headers.insert(
            RETRY_AFTER,
            httpdate::fmt_http_date(server_now + Duration::from_secs(20))
                .parse()
                .expect("header"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(20)));
    }

    #[test]
    fn a_retry_after_too_large_to_count_is_a_long_wait_not_none() {
        let mut headers = HeaderMap::new();
        headers.insert(
            RETRY_AFTER,
            "99999999999999999999999".parse().expect("header"),
        );
        assert_eq!(retry_after(&headers), Some(FOREVER));
    }
}
