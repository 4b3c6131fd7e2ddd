//! What is known of an `unknown` attempt (SPEC §16): the evidence a person decides on.
//!
//! What was sent is recorded by the executor as the request leaves, and what came back when the
//! exchange ends without a trustworthy answer. Nothing secret is kept (SPEC §12): the URL loses
//! its query string, and a header is left out when `secret_header` says its name or value may
//! carry a credential. The body is kept as sent: it is the request's JSON (the job's input, or the
//! prompt rendered from it), which never holds a key, and it is the only faithful record of what a
//! provider was asked once a contract or a provider's model has changed since.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use specta::Type;

use crate::failure::FailureKind;
use crate::model::{Actor, Attempt, Event};

/// The event kinds that record a try to settle an attempt since it became `unknown`: a status
/// lookup and a keyed replay, by their stored names.
pub(crate) const TRIED_KINDS: [&str; 2] = ["looked_up", "replayed"];

/// At most this many headers are kept of a request or a response, each value cut at
/// [`MAX_HEADER_VALUE`] bytes, so one row stays small whatever a provider sends.
const MAX_HEADERS: usize = 64;
const MAX_HEADER_VALUE: usize = 1024;

/// Everything known of one `unknown` attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Known {
    pub attempt_id: String,
    pub number: u32,
    pub provider: String,
    /// What was sent, and when and by whom; `None` when the attempt was sent before this was
    /// recorded.
    pub sent: Option<KnownSent>,
    /// Whether the sender recorded how its exchange ended. False while it still waits, or when it
    /// stopped first (a crash, a lease that ran out): then nothing is known of what came back.
    pub watched: bool,
    /// What came back; `None` with `watched` means nothing came back at all.
    pub received: Option<KnownReceived>,
    /// The rule of SPEC §6 that made the attempt `unknown`.
    pub rule: Option<KnownRule>,
    /// Every status lookup and replay tried since, oldest first, with its answer.
    pub tried: Vec<KnownTry>,
}

/// The request as it left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KnownSent {
    /// When the attempt was committed as sending, by the ledger's clock.
    pub at: Option<String>,
    /// The executor that sent it (the one that held its lease).
    pub executor_id: String,
    pub method: String,
    /// The URL without its query string or fragment.
    pub url: String,
    /// The request's headers, secrets left out: no header whose name speaks of a credential,
    /// a key (other than `Idempotency-Key`) or a cookie, and none that holds the API key.
    pub headers: BTreeMap<String, String>,
    /// The body's size in bytes and the hex SHA-256 of those exact bytes.
    pub body_bytes: u32,
    pub body_sha256: String,
}

/// What came back before the exchange ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KnownReceived {
    pub status: u16,
    /// The response's headers, secrets (and cookies) left out.
    pub headers: BTreeMap<String, String>,
    /// Body bytes received before the exchange ended.
    pub bytes: u32,
}

/// The SPEC §6 rule that made an attempt `unknown`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KnownRule {
    /// A stable code, one per row of the table: `timeout_after_write`, `reset_after_write`,
    /// `cut_mid_response`, `http_5xx_without_key`, `http_5xx_last_keyed_try`,
    /// `invalid_answer_2xx`, `invalid_answer_2xx_last_keyed_try`, `answer_too_large`,
    /// `lease_expired`.
    pub code: String,
    /// The rule in words.
    pub says: String,
}

/// One status lookup or replay of the attempt, from its event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KnownTry {
    pub at: String,
    /// The event's kind: `looked_up` or `replayed`.
    pub kind: String,
    pub actor: Actor,
    /// Its answer: the event's `outcome` and `answer` fields when it has them, otherwise its
    /// whole detail as text.
    pub answer: Value,
}

/// The rule code and its words for what made an attempt `unknown`; `None` for a kind that never
/// does. `keyed`: the provider honoured `Idempotency-Key`, so a 5xx or an unreadable 2xx made it
/// `unknown` only because it was the job's last try.
pub(crate) fn rule(kind: FailureKind, keyed: bool) -> Option<KnownRule> {
    use FailureKind::*;
    let (code, says) = match kind {
        SoftTimeout | Timeout => (
            "timeout_after_write",
            "no answer in time after the request may have been written",
        ),
        ConnectionBroken => (
            "reset_after_write",
            "the connection broke after the request may have been written",
        ),
        CutOff => (
            "cut_mid_response",
            "the answer was cut off mid-response after a 2xx status",
        ),
        ServerErrorUnknown if keyed => (
            "http_5xx_last_keyed_try",
            "a 5xx from an http provider on the job's last try under its key",
        ),
        ServerErrorUnknown => (
            "http_5xx_without_key",
            "a 5xx from an http provider that does not honour Idempotency-Key",
        ),
        InvalidAnswerUnknown if keyed => (
            "invalid_answer_2xx_last_keyed_try",
            "a complete 2xx that is not JSON, on the job's last try under its key",
        ),
        InvalidAnswerUnknown => (
            "invalid_answer_2xx",
            "a complete 2xx that is not JSON from an http provider: the work was done",
        ),
        AnswerTooLarge => (
            "answer_too_large",
            "a 2xx answer larger than 8 MiB: the work was done",
        ),
        LeaseExpired => (
            "lease_expired",
            "found in flight with an expired lease (its sender stopped)",
        ),
        _ => return None,
    };
    Some(KnownRule {
        code: code.to_owned(),
        says: says.to_owned(),
    })
}

/// The rule of a stored code, as [`rule`] gives it.
pub(crate) fn rule_of_code(code: &str) -> Option<KnownRule> {
    FailureKind::ALL
        .iter()
        .flat_map(|k| [rule(*k, false), rule(*k, true)])
        .flatten()
        .find(|r| r.code == code)
}

/// Whether a header must not be recorded: its value is marked sensitive, or its name (any case)
/// is a credential's or a cookie's. A name is secret when it contains `auth`, `token`,
/// `secret`, `password`, `passwd`, `credential`, `cookie`, `session`, `signature` or `key`
/// (so `Authorization`, `x-api-key`, `api-key`, `Set-Cookie` are all left out), except
/// `Idempotency-Key`, which is the job's id and what a person checks a provider by.
pub(crate) fn secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if name == "idempotency-key" {
        return false;
    }
    [
        "auth",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "cookie",
        "session",
        "signature",
        "key",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// The headers that may be recorded: none whose name is secret, none marked sensitive, none
/// whose value holds `secret` (the API key read for the call); cut to a bounded size.
pub(crate) fn kept_headers(headers: &HeaderMap, secret: Option<&str>) -> BTreeMap<String, String> {
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        if secret_header(name.as_str()) || value.is_sensitive() {
            continue;
        }
        let text = String::from_utf8_lossy(value.as_bytes());
        if secret.is_some_and(|s| !s.is_empty() && text.contains(s)) {
            continue;
        }
        if kept.len() >= MAX_HEADERS && !kept.contains_key(name.as_str()) {
            break;
        }
        let text: String = text.chars().take(MAX_HEADER_VALUE).collect();
        kept.entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&text);
            })
            .or_insert(text);
    }
    kept
}

/// A URL without its query string, fragment or user info.
pub(crate) fn url_without_query(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

/// What the executor records of a request as it leaves.
#[derive(Debug, Clone)]
pub(crate) struct SentRecord {
    pub method: String,
    pub url: String,
    pub headers: BTreeMap<String, String>,
    pub body_bytes: u32,
    pub body_sha256: String,
    pub body: String,
    /// The provider honours `Idempotency-Key`.
    pub keyed: bool,
}

impl SentRecord {
    /// The record of `request` as it will be sent; `None` when it cannot be read back (it then
    /// fails to build when sent, and is never `unknown`). `secret` is the API key read for the
    /// call: no header that holds it is kept.
    pub fn capture(
        request: &reqwest::RequestBuilder,
        secret: Option<&str>,
        keyed: bool,
    ) -> Option<SentRecord> {
        let built = request.try_clone()?.build().ok()?;
        let body = built.body().and_then(|b| b.as_bytes()).unwrap_or_default();
        Some(SentRecord {
            method: built.method().as_str().to_owned(),
            url: url_without_query(built.url()),
            headers: kept_headers(built.headers(), secret),
            body_bytes: u32::try_from(body.len()).unwrap_or(u32::MAX),
            body_sha256: hex::encode(Sha256::digest(body)),
            body: String::from_utf8_lossy(body).into_owned(),
            keyed,
        })
    }
}

/// What the executor records when an exchange ends without a trustworthy answer.
#[derive(Debug, Clone)]
pub(crate) struct EndRecord {
    /// The rule's code.
    pub rule: Option<String>,
    pub received: Option<KnownReceived>,
}

/// A try's answer as shown: the detail's `outcome`, `answer`, `http_status`, `state`,
/// `error_kind` and `message` that are not null, or the detail as text.
pub(crate) fn answer_of(detail: &Value) -> Value {
    if let Value::Object(fields) = detail {
        let picked: serde_json::Map<String, Value> = fields
            .iter()
            .filter(|(k, v)| {
                !v.is_null()
                    && matches!(
                        k.as_str(),
                        "outcome" | "answer" | "http_status" | "state" | "error_kind" | "message"
                    )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !picked.is_empty() {
            return Value::Object(picked);
        }
    }
    Value::String(detail.to_string())
}

/// The lookups and replays of `attempt` among a job's events, oldest first.
pub(crate) fn tried(attempt: &Attempt, events: &[Event]) -> Vec<KnownTry> {
    events
        .iter()
        .filter(|e| e.attempt_id.as_deref() == Some(attempt.id.as_str()))
        .filter(|e| TRIED_KINDS.contains(&e.kind.as_str()))
        .map(|e| KnownTry {
            at: e.at.clone(),
            kind: e.kind.clone(),
            actor: e.actor,
            answer: answer_of(&e.detail),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_headers_are_named_by_the_rule_and_the_idempotency_key_is_kept() {
        for name in [
            "Authorization",
            "Proxy-Authorization",
            "x-api-key",
            "api-key",
            "X-Goog-Api-Key",
            "Cookie",
            "Set-Cookie",
            "x-auth-token",
            "X-Amz-Security-Token",
            "x-session-id",
            "x-signature",
            "client-secret",
        ] {
            assert!(secret_header(name), "{name} is kept");
        }
        for name in [
            "Idempotency-Key",
            "content-type",
            "x-request-id",
            "retry-after",
            "anthropic-version",
        ] {
            assert!(!secret_header(name), "{name} is left out");
        }
    }

    #[test]
    fn a_header_that_holds_the_key_is_left_out_whatever_its_name() {
        let mut headers = HeaderMap::new();
        headers.insert("x-custom", "prefix sk-abc123".parse().unwrap());
        headers.insert("content-type", "application/json".parse().unwrap());
        let kept = kept_headers(&headers, Some("sk-abc123"));
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["content-type"]);
    }

    #[test]
    fn every_rule_code_reads_back_and_only_unknown_kinds_have_one() {
        for kind in FailureKind::ALL {
            for keyed in [false, true] {
                match rule(kind, keyed) {
                    Some(r) => {
                        assert_eq!(kind.rule().0, crate::AttemptState::Unknown, "{kind}");
                        assert_eq!(rule_of_code(&r.code), Some(r));
                    }
                    None => assert_ne!(kind.rule().0, crate::AttemptState::Unknown, "{kind}"),
                }
            }
        }
    }

    #[test]
    fn a_tries_answer_is_its_outcome_or_its_detail_as_text() {
        assert_eq!(
            answer_of(&json!({"outcome": "not_found", "status": 404, "answer": {"state": "x"}})),
            json!({"outcome": "not_found", "answer": {"state": "x"}})
        );
        assert_eq!(
            answer_of(&json!({"status": 409})),
            json!("{\"status\":409}")
        );
    }

    #[test]
    fn a_url_loses_its_query_fragment_and_user_info() {
        let url = reqwest::Url::parse("http://u:p@127.0.0.1:8/a/b?key=s3cret#f").unwrap();
        assert_eq!(url_without_query(&url), "http://127.0.0.1:8/a/b");
    }
}
