//! What is known of an `unknown` attempt (SPEC §16), against real providers on 127.0.0.1: what
//! the executor sent and what came back, recorded as it happened, the rule of §6 that made it
//! `unknown`, the lookups and replays since, and no secret anywhere in it.

use crate::common;

use std::time::Duration;

use common::{add_provider, start, submit_intent, until, Ledger, Sql, OWNER};
use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{AttemptState, Engine, JobDetail, JobPart};
use onejob_testkit::RawServer;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The API key the providers of these tests are configured with, by environment variable.
const KEY_VAR: &str = "ONEJOB_TEST_KNOWN_KEY";
const KEY: &str = "sk-known-5ecret-Zq81xv";

/// Configures an `http` provider at `url`, its key in [`KEY_VAR`].
async fn provider(engine: &Engine, name: &str, url: &str, soft_ms: u64, hard_ms: u64) {
    std::env::set_var(KEY_VAR, KEY);
    let config = json!({
        "name": name, "kind": "http", "base_url": url, "api_key_env": KEY_VAR,
        "soft_timeout_ms": soft_ms, "hard_timeout_ms": hard_ms,
        "honours_idempotency_key": false
    });
    add_provider(engine, &config).await;
}

async fn submit(engine: &Engine, key: &str, route: &[&str]) -> String {
    let intent =
        json!({ "route": route, "input": { "key": key, "text": "héllo" }, "max_attempts": 1 });
    submit_intent(engine, key, &intent).await
}

/// The job once its attempt is `unknown` and its sender has recorded how the exchange ended.
async fn known_and_watched(engine: &Engine, job_id: &str) -> JobDetail {
    until(engine, job_id, |d| {
        d.attempts.first().map(|a| a.state) == Some(AttemptState::Unknown)
            && d.known.first().is_some_and(|k| k.watched)
    })
    .await
}

/// The head and the body of a raw request.
fn split(request: &[u8]) -> (String, Vec<u8>) {
    let at = request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a request head");
    (
        String::from_utf8_lossy(&request[..at]).into_owned(),
        request[at + 4..].to_vec(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_attempt_shows_what_was_sent_and_what_came_back() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // Reads the request whole, then says nothing until long after the hard deadline.
    let server = common::silent_past_the_deadline();
    let url = format!("{}/effects/charge?region=eu&trace=7", server.url);
    provider(e, "slow", &url, 300, 900).await;
    let job_id = submit(e, "known-timeout", &["slow"]).await;
    let (executor, _stop) = start(e);
    let detail = known_and_watched(e, &job_id).await;

    let known = &detail.known[0];
    let attempt = &detail.attempts[0];
    assert_eq!(known.attempt_id, attempt.id);
    assert_eq!((known.number, known.provider.as_str()), (1, "slow"));
    let sent = known.sent.as_ref().expect("what was sent is recorded");
    assert_eq!(sent.at, attempt.sent_at);
    assert!(sent.at.is_some());
    assert_eq!(sent.executor_id, executor.id());
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.url, format!("{}/effects/charge", server.url));
    assert_eq!(sent.headers.get("idempotency-key"), Some(&job_id));
    assert_eq!(
        sent.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    assert!(
        sent.headers
            .keys()
            .all(|h| h != "authorization" && !h.contains("key") || h == "idempotency-key"),
        "{:?}",
        sent.headers
    );

    // The size and the SHA-256 are those of the bytes the provider read.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let (head, body) = split(&requests[0]);
    assert!(
        head.to_ascii_lowercase().contains(&format!(
            "authorization: bearer {}",
            KEY.to_ascii_lowercase()
        )),
        "the provider got its key: {head}"
    );
    assert_eq!(sent.body_bytes as usize, body.len());
    assert_eq!(sent.body_sha256, hex::encode(Sha256::digest(&body)));

    // Nothing came back, and the sender saw that.
    assert!(known.watched);
    assert_eq!(known.received, None);
    let rule = known.rule.as_ref().expect("a rule");
    assert_eq!(rule.code, "timeout_after_write");
    assert!(known.tried.is_empty());

    // The body is one ask away, as sent.
    let whole = e
        .job_part(OWNER, &job_id, JobPart::SentBody { number: 1 })
        .await
        .expect("the body sent");
    assert_eq!(
        whole,
        serde_json::from_slice::<Value>(&body).expect("JSON sent")
    );
    assert_eq!(whole, json!({ "key": "known-timeout", "text": "héllo" }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_attempt_after_a_5xx_or_an_unreadable_2xx_shows_the_response() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let failing = RawServer::start(|_| {
        b"HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nx-request-id: req-502\r\n\
set-cookie: session=cookie-5ecret\r\nx-upstream-token: tok-5ecret\r\ncontent-length: 10\r\n\
connection: close\r\n\r\noverloaded"
            .to_vec()
    })
    .expect("server");
    let unreadable = RawServer::start(|_| {
        b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nx-request-id: req-200\r\n\
content-length: 17\r\nconnection: close\r\n\r\n<html>done</html>"
            .to_vec()
    })
    .expect("server");
    provider(e, "failing", &failing.url, 2000, 5000).await;
    provider(e, "unreadable", &unreadable.url, 2000, 5000).await;
    let on_5xx = submit(e, "known-5xx", &["failing"]).await;
    let on_2xx = submit(e, "known-2xx", &["unreadable"]).await;
    let (_executor, _stop) = start(e);

    let detail = known_and_watched(e, &on_5xx).await;
    let known = &detail.known[0];
    assert_eq!(
        known.rule.as_ref().map(|r| r.code.as_str()),
        Some("http_5xx_without_key")
    );
    let received = known.received.as_ref().expect("a response");
    assert_eq!(received.status, 502);
    assert_eq!(received.bytes, 10);
    assert_eq!(
        received.headers.get("x-request-id").map(String::as_str),
        Some("req-502")
    );
    assert_eq!(
        received.headers.get("content-type").map(String::as_str),
        Some("text/plain")
    );
    assert!(!received.headers.contains_key("set-cookie"), "{received:?}");
    assert!(
        !received.headers.contains_key("x-upstream-token"),
        "{received:?}"
    );

    let detail = known_and_watched(e, &on_2xx).await;
    let known = &detail.known[0];
    assert_eq!(
        known.rule.as_ref().map(|r| r.code.as_str()),
        Some("invalid_answer_2xx")
    );
    let received = known.received.as_ref().expect("a response");
    assert_eq!((received.status, received.bytes), (200, 17));
    assert_eq!(
        received.headers.get("x-request-id").map(String::as_str),
        Some("req-200")
    );
    assert_eq!(
        known.sent.as_ref().map(|s| s.url.clone()),
        Some(format!("{}/", unreadable.url))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_the_evidence() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // A provider that echoes the key back in a header of its own naming, and fails.
    let echo = RawServer::start(|_| {
        format!(
            "HTTP/1.1 500 Internal Server Error\r\nx-echo: seen {KEY}\r\n\
www-authenticate: Bearer realm=x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
        )
        .into_bytes()
    })
    .expect("server");
    provider(e, "echo", &format!("{}/v1?region=eu", echo.url), 2000, 5000).await;
    let job_id = submit(e, "known-secret", &["echo"]).await;
    let (_executor, _stop) = start(e);
    let detail = known_and_watched(e, &job_id).await;
    let known = &detail.known[0];
    assert_eq!(known.received.as_ref().map(|r| r.status), Some(500));
    assert!(known.sent.is_some());
    // The key went out: the provider read it.
    assert!(String::from_utf8_lossy(&echo.requests()[0]).contains(KEY));

    let shown = serde_json::to_string(&detail).expect("json");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(
        !shown.to_ascii_lowercase().contains("authorization"),
        "{shown}"
    );
    assert!(!shown.contains("www-authenticate"), "{shown}");
    assert!(!shown.contains("region=eu"), "{shown}");
    e.close().await;
    for (name, bytes) in onejob_testkit::ledger_contents(&ledger.location) {
        let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
        assert!(!found, "the key is in {name}");
    }
    // The evidence rows are there to be searched.
    let raw = ledger.raw().await;
    let (rows,): (i64,) = raw
        .fetch_one(Sql::both("SELECT count(*) FROM attempt_evidence"), &[])
        .await
        .expect("count");
    assert_eq!(rows, 1);
    raw.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookups_and_replays_of_an_unknown_attempt_are_listed_with_their_answers() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let in_flight = ledger.in_flight("known-tried").await;
    let (job_id, attempt_id) = (in_flight.job.id.clone(), in_flight.attempt.id.clone());
    e.mark_unknown(&attempt_id, common::why("timeout"))
        .await
        .expect("unknown");
    // Written as the lookups and the replays of the executor write them: events of the
    // attempt, their kind by its stored name, their answer in their detail.
    let raw = ledger.raw().await;
    let append = Sql {
        sqlite: "INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail) \
                 VALUES ($1, $2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), $3, 'executor', $4)",
        postgres: "INSERT INTO job_events (job_id, attempt_id, at, kind, actor, detail) \
                   VALUES ($1::uuid, $2::uuid, now(), $3, 'executor', $4::json)",
    };
    for (kind, detail) in [
        (
            "looked_up",
            json!({"outcome": "still_unknown", "status": 404}),
        ),
        ("attempt_unknown", json!({"outcome": "not a try"})),
        (
            "replayed",
            json!({"outcome": "in_progress", "status": 409, "answer": {"busy": true}}),
        ),
        ("replayed", json!({"status": 503})),
    ] {
        raw.execute(append, &[&job_id, &attempt_id, kind, &detail.to_string()])
            .await
            .expect("event");
    }
    raw.close().await;

    let detail = e.job(OWNER, &job_id).await.expect("job");
    assert_eq!(detail.known.len(), 1);
    let known = &detail.known[0];
    let tried: Vec<(&str, &Value)> = known
        .tried
        .iter()
        .map(|t| (t.kind.as_str(), &t.answer))
        .collect();
    assert_eq!(
        tried,
        [
            ("looked_up", &json!({"outcome": "still_unknown"})),
            (
                "replayed",
                &json!({"outcome": "in_progress", "answer": {"busy": true}})
            ),
            ("replayed", &json!("{\"status\":503}")),
        ]
    );
    // Sent by hand, not by an executor: nothing recorded of what went out.
    assert_eq!(known.sent, None);
    assert!(!known.watched);
    assert_eq!(
        known.rule.as_ref().map(|r| r.code.as_str()),
        Some("timeout_after_write")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_whose_lease_ran_out_is_known_by_that_rule() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let job = ledger.submit("known-lease").await.job;
    let claimed = e.claim_attempt(&job.id, "primary").await.expect("claim");
    e.mark_sent(
        &claimed.attempt.id,
        "gone-executor",
        Duration::from_millis(1),
    )
    .await
    .expect("sent");
    tokio::time::sleep(Duration::from_millis(50)).await;
    e.recover_expired_leases().await.expect("recover");
    let detail = e.job(OWNER, &job.id).await.expect("job");
    assert_eq!(detail.attempts[0].state, AttemptState::Unknown);
    let rule = detail.known[0].rule.as_ref().expect("a rule");
    assert_eq!(rule.code, "lease_expired");
    // And a job with no unknown attempt has nothing to show.
    let other = ledger.submit("known-none").await.job;
    assert!(e.job(OWNER, &other.id).await.expect("job").known.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_and_anthropic_kinds_record_what_they_sent_without_their_keys() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    std::env::set_var(KEY_VAR, KEY);
    let silent = common::silent_past_the_deadline();
    for (name, kind) in [("gpt", "openai"), ("claude", "anthropic")] {
        let config = json!({
            "name": name, "kind": kind, "base_url": silent.url, "model": "m-1",
            "api_key_env": KEY_VAR, "soft_timeout_ms": 300, "hard_timeout_ms": 800,
            "honours_idempotency_key": false
        });
        add_provider(e, &config).await;
    }
    let mut jobs = Vec::new();
    for name in ["gpt", "claude"] {
        let intent = json!({
            "route": [name], "max_attempts": 1,
            "input": { "messages": [{ "role": "user", "content": format!("hello {name}") }] }
        });
        jobs.push(submit_intent(e, &format!("ai-{name}"), &intent).await);
    }
    let (_executor, _stop) = start(e);
    let gpt = known_and_watched(e, &jobs[0]).await;
    let claude = known_and_watched(e, &jobs[1]).await;

    let requests = silent.requests();
    assert_eq!(requests.len(), 2);
    for (detail, path) in [(&gpt, "/chat/completions"), (&claude, "/v1/messages")] {
        let known = &detail.known[0];
        let sent = known.sent.as_ref().expect("what was sent");
        assert_eq!(sent.url, format!("{}{path}", silent.url));
        assert_eq!(
            known.rule.as_ref().map(|r| r.code.as_str()),
            Some("timeout_after_write")
        );
        // The bytes the provider read for this job, by its idempotency key.
        let request = requests
            .iter()
            .find(|r| String::from_utf8_lossy(r).contains(&detail.job.id))
            .expect("its request");
        let (head, body) = split(request);
        assert!(head.contains(KEY), "the key went out: {head}");
        assert_eq!(sent.body_sha256, hex::encode(Sha256::digest(&body)));
        assert_eq!(sent.body_bytes as usize, body.len());
        let shown = serde_json::to_string(known).expect("json");
        assert!(!shown.contains(KEY), "{shown}");
        assert!(
            !shown.contains("x-api-key") && !shown.contains("authorization"),
            "{shown}"
        );
    }
    let claude_headers = &claude.known[0].sent.as_ref().expect("sent").headers;
    assert!(
        claude_headers.contains_key("anthropic-version"),
        "{claude_headers:?}"
    );
    e.close().await;
    for (name, bytes) in onejob_testkit::ledger_contents(&ledger.location) {
        let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
        assert!(!found, "the key is in {name}");
    }
}
