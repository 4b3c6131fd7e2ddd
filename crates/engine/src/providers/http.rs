//! Sending one attempt over HTTP and classifying what came back, as SPEC §6 says.
//!
//! The `http` kind (and the sandbox, which speaks it) POSTs the job's input as the JSON body
//! to `base_url`, used exactly as given, and takes the JSON answer as the result.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::Value;

use crate::model::AttemptError;
use crate::providers::{ProviderConfig, ProviderKind};

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

fn error(kind: &str, message: impl Into<String>) -> AttemptError {
    AttemptError {
        kind: kind.to_owned(),
        message: message.into(),
    }
}

/// The response head, reported as soon as it arrives (before the body is read).
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    pub status: u16,
    pub request_id: Option<String>,
}

/// Builds the attempt's request: the job's input as JSON, `Idempotency-Key: <job id>`, and
/// the API key from the environment at call time (never stored).
pub fn build(
    client: &reqwest::Client,
    config: &ProviderConfig,
    url: &str,
    job_id: &str,
    input: &Value,
) -> Result<reqwest::RequestBuilder, AttemptError> {
    let mut request = client
        .post(url)
        .header("Idempotency-Key", job_id)
        .json(input);
    if let Some(key) = super::api_key(config)? {
        request = request.bearer_auth(key);
    }
    Ok(request)
}

/// Sends the request and classifies the outcome; `on_head` runs as soon as headers arrive.
pub async fn exchange(
    request: reqwest::RequestBuilder,
    config: &ProviderConfig,
    on_head: impl AsyncFnOnce(Head),
) -> Classified {
    let response = match request.send().await {
        Ok(response) => response,
        // A reqwest error names its URL, whose query string may hold a secret.
        Err(e) => return classify_send_error(&e.without_url()),
    };
    let status = response.status();
    let headers = response.headers().clone();
    on_head(Head {
        status: status.as_u16(),
        request_id: request_id(&headers),
    })
    .await;
    if !status.is_success() {
        return classify_status(status, &headers, config);
    }
    match response.bytes().await {
        Err(e) => Classified::Unknown {
            error: error(
                "cut_off",
                format!(
                    "the answer was cut off after a {status} status: {}",
                    e.without_url()
                ),
            ),
            http_status: Some(status.as_u16()),
        },
        Ok(body) => match serde_json::from_slice::<Value>(&body) {
            Ok(answer) => Classified::Answer(answer),
            Err(e) => Classified::Failed {
                error: error(
                    "invalid_answer",
                    format!("a complete {status} answer that is not JSON: {e}"),
                ),
                http_status: Some(status.as_u16()),
                retry_after: None,
            },
        },
    }
}

/// A send error. A timeout is tested first: a body timeout also reports itself as a
/// connect or request error, and treating it as "never sent" would bill twice.
fn classify_send_error(e: &reqwest::Error) -> Classified {
    if e.is_timeout() {
        return Classified::Unknown {
            error: error("timeout", format!("no answer in time: {e}")),
            http_status: None,
        };
    }
    if e.is_builder() {
        return Classified::Failed {
            error: error(
                "misconfigured",
                format!("the request could not be built: {e}"),
            ),
            http_status: None,
            retry_after: None,
        };
    }
    if e.is_connect() {
        return Classified::Failed {
            error: error(
                "never_sent",
                format!("could not connect, nothing was sent: {e}"),
            ),
            http_status: None,
            retry_after: None,
        };
    }
    Classified::Unknown {
        error: error(
            "connection_broken",
            format!("the connection broke after the request may have been written: {e:#}"),
        ),
        http_status: None,
    }
}

/// A non-success status, by the table of SPEC §6.
fn classify_status(status: StatusCode, headers: &HeaderMap, config: &ProviderConfig) -> Classified {
    let code = status.as_u16();
    let failed = |kind: &str, retry_after| Classified::Failed {
        error: error(kind, format!("the provider answered {status}")),
        http_status: Some(code),
        retry_after,
    };
    match code {
        408 | 429 | 503 => failed("throttled", retry_after(headers)),
        500..=599 => {
            let http_like = matches!(config.kind, ProviderKind::Http | ProviderKind::Sandbox);
            if http_like && !config.honours_idempotency_key {
                // Without idempotency the work may have happened: only a person or a status
                // lookup can tell.
                Classified::Unknown {
                    error: error(
                        "server_error",
                        format!(
                            "the provider answered {status}; it may have processed the request"
                        ),
                    ),
                    http_status: Some(code),
                }
            } else {
                failed("server_error", None)
            }
        }
        // 400, 401, 403, 404, 422 and every other refusal: not at this provider again.
        _ => failed("rejected", None),
    }
}

/// `Retry-After` as seconds or as an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
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
}
