//! The sandbox provider over real HTTP on 127.0.0.1: its answers, each fault dial, its
//! idempotency, its log and its status lookup.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{quick, sandbox};
use onejob_engine::sandbox::{Dials, LogEntry, Sandbox};
use onejob_engine::Error;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A client that never goes through a proxy and gives up after `timeout`.
fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .expect("client")
}

fn post(
    client: &reqwest::Client,
    sandbox: &Sandbox,
    key: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let request = client
        .post(format!("{}/jobs?x=1", sandbox.url()))
        .json(body);
    match key {
        Some(key) => request.header("Idempotency-Key", key),
        None => request,
    }
}

async fn status(sandbox: &Sandbox, key: &str) -> (u16, Value) {
    let response = client(Duration::from_secs(5))
        .get(format!("{}/status/{key}", sandbox.url()))
        .send()
        .await
        .expect("status lookup");
    let code = response.status().as_u16();
    (code, response.json().await.expect("status JSON"))
}

fn outcomes(log: &[LogEntry]) -> Vec<&str> {
    log.iter().map(|e| e.outcome.as_str()).collect()
}

/// Polls until `check` holds, for at most five seconds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_normal_request_is_echoed_with_its_request_id_and_logged_with_key_and_body_hash() {
    let sandbox = sandbox(quick(200)).await;
    let body = json!({"prompt": "hello", "n": 1});
    let started = Instant::now();
    let response = post(
        &client(Duration::from_secs(5)),
        &sandbox,
        Some("job-1"),
        &body,
    )
    .send()
    .await
    .expect("an answer");
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "answered before its latency"
    );
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-request-id"], "sbx-1");
    assert_eq!(response.headers()["content-type"], "application/json");
    let answer: Value = response.json().await.expect("JSON answer");
    assert_eq!(answer["echo"], body);
    assert_eq!(answer["request_id"], "sbx-1");
    assert!(answer["answered_at"].is_string());

    let log = sandbox.log();
    assert_eq!(log.len(), 1);
    let entry = &log[0];
    assert_eq!(entry.method, "POST");
    assert_eq!(entry.path, "/jobs?x=1");
    assert_eq!(entry.idempotency_key.as_deref(), Some("job-1"));
    assert_eq!(entry.request_id, "sbx-1");
    assert_eq!(entry.outcome, "answered");
    let sent = serde_json::to_vec(&body).expect("body bytes");
    assert_eq!(entry.body_sha256, hex::encode(Sha256::digest(&sent)));

    let over_http: Value = client(Duration::from_secs(5))
        .get(format!("{}/_log", sandbox.url()))
        .send()
        .await
        .expect("log")
        .json()
        .await
        .expect("log JSON");
    assert_eq!(
        over_http["requests"],
        serde_json::to_value(&log).expect("log as JSON")
    );
    assert_eq!(sandbox.log().len(), 1, "reading the log is not logged");
    sandbox.stop().await;
}

#[tokio::test]
async fn never_answer_holds_the_connection_though_the_work_is_done() {
    let sandbox = sandbox(Dials {
        never_answer: 1.0,
        ..quick(0)
    })
    .await;
    let client = client(Duration::from_secs(1));
    let error = post(&client, &sandbox, Some("job-held"), &json!({"a": 1}))
        .send()
        .await
        .expect_err("no answer comes");
    assert!(error.is_timeout(), "the client's timeout fired: {error:?}");
    assert_eq!(outcomes(&sandbox.log()), ["never_answered"]);
    let (code, state) = status(&sandbox, "job-held").await;
    assert_eq!(code, 200);
    assert_eq!(state["state"], "succeeded");
    assert_eq!(state["result"]["echo"], json!({"a": 1}));
    assert_eq!(state["result"]["request_id"], "sbx-1");

    // The client hung up; the held connection ends with it.
    drop(client);
    eventually("the held connection closes", || {
        sandbox.open_connections() == 0
    })
    .await;
    sandbox.stop().await;
}

#[tokio::test]
async fn stopping_the_sandbox_closes_a_held_connection() {
    let sandbox = sandbox(Dials {
        never_answer: 1.0,
        ..quick(0)
    })
    .await;
    let mut stream = TcpStream::connect(sandbox.addr()).await.expect("connect");
    stream.write_all(&raw_post("{}")).await.expect("send");
    eventually("the request is seen", || sandbox.log().len() == 1).await;
    sandbox.stop().await;
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf))
        .await
        .expect("the connection ends");
    if let Err(e) = read {
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    }
    assert!(
        buf.is_empty(),
        "no answer: {:?}",
        String::from_utf8_lossy(&buf)
    );
}

#[tokio::test]
async fn drop_after_processing_gives_a_connection_error_though_the_work_is_done() {
    let sandbox = sandbox(Dials {
        drop_after_processing: 1.0,
        latency_ms: 200,
        ..quick(0)
    })
    .await;
    let started = Instant::now();
    let error = post(
        &client(Duration::from_secs(5)),
        &sandbox,
        Some("job-dropped"),
        &json!({"b": 2}),
    )
    .send()
    .await
    .expect_err("no response");
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "a dropped answer still takes its latency"
    );
    assert!(
        !error.is_timeout(),
        "a closed connection, not a timeout: {error:?}"
    );
    assert!(
        error.status().is_none(),
        "no status was received: {error:?}"
    );
    assert_eq!(outcomes(&sandbox.log()), ["dropped"]);
    let (_, state) = status(&sandbox, "job-dropped").await;
    assert_eq!(state["state"], "succeeded");
    assert_eq!(state["result"]["echo"], json!({"b": 2}));
    sandbox.stop().await;
}

/// A bare HTTP/1.1 request, so the test sees every byte that comes back.
fn raw_post(body: &str) -> Vec<u8> {
    format!(
        "POST /jobs HTTP/1.1\r\nHost: sandbox\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn a_dropped_answer_sends_no_response_bytes_at_all() {
    let sandbox = sandbox(Dials {
        drop_after_processing: 1.0,
        ..quick(0)
    })
    .await;
    let mut stream = TcpStream::connect(sandbox.addr()).await.expect("connect");
    stream
        .write_all(&raw_post(r#"{"c": 3}"#))
        .await
        .expect("send");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf))
        .await
        .expect("the connection ends");
    match read {
        Ok(n) => assert_eq!(n, 0, "EOF with no bytes"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    assert!(
        buf.is_empty(),
        "no response bytes: {:?}",
        String::from_utf8_lossy(&buf)
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn server_error_answers_500_and_the_key_stays_failed() {
    let sandbox = sandbox(Dials {
        server_error: 1.0,
        ..quick(0)
    })
    .await;
    let response = post(
        &client(Duration::from_secs(5)),
        &sandbox,
        Some("job-500"),
        &json!({}),
    )
    .send()
    .await
    .expect("an answer");
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers()["x-request-id"], "sbx-1");
    let body: Value = response.json().await.expect("JSON error");
    assert!(body["error"].is_string());
    assert_eq!(outcomes(&sandbox.log()), ["server_error"]);
    let (code, state) = status(&sandbox, "job-500").await;
    assert_eq!((code, state), (200, json!({"state": "failed"})));
    sandbox.stop().await;
}

#[tokio::test]
async fn throttle_answers_429_with_the_dialled_retry_after() {
    let sandbox = sandbox(Dials {
        throttle: 1.0,
        retry_after_s: 7,
        ..quick(0)
    })
    .await;
    let response = post(
        &client(Duration::from_secs(5)),
        &sandbox,
        Some("job-429"),
        &json!({}),
    )
    .send()
    .await
    .expect("an answer");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    assert_eq!(outcomes(&sandbox.log()), ["throttled"]);
    assert_eq!(status(&sandbox, "job-429").await.1["state"], "failed");
    sandbox.stop().await;
}

#[tokio::test]
async fn malformed_json_answers_200_with_a_body_that_is_not_json() {
    let sandbox = sandbox(Dials {
        malformed_json: 1.0,
        ..quick(0)
    })
    .await;
    let response = post(
        &client(Duration::from_secs(5)),
        &sandbox,
        Some("job-garbled"),
        &json!({"d": 4}),
    )
    .send()
    .await
    .expect("an answer");
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("a complete body");
    assert!(!text.is_empty());
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "not JSON: {text}"
    );
    assert_eq!(outcomes(&sandbox.log()), ["malformed_json"]);
    let (_, state) = status(&sandbox, "job-garbled").await;
    assert_eq!(state, json!({"state": "succeeded", "result": text}));
    sandbox.stop().await;
}

#[tokio::test]
async fn extra_key_answers_200_with_an_unexpected_top_level_key() {
    let sandbox = sandbox(Dials {
        extra_key: 1.0,
        ..quick(0)
    })
    .await;
    let response = post(
        &client(Duration::from_secs(5)),
        &sandbox,
        None,
        &json!({"e": 5}),
    )
    .send()
    .await
    .expect("an answer");
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("JSON answer");
    assert_eq!(answer["echo"], json!({"e": 5}));
    assert!(answer.get("unexpected").is_some(), "{answer}");
    assert_eq!(outcomes(&sandbox.log()), ["extra_key"]);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_repeated_idempotency_key_gets_the_first_answer_and_is_processed_once() {
    let sandbox = sandbox(quick(0)).await;
    let client = client(Duration::from_secs(5));
    let first = post(&client, &sandbox, Some("job-2"), &json!({"f": 6}))
        .send()
        .await
        .expect("first answer");
    assert_eq!(first.status(), 200);
    let first = first.bytes().await.expect("first body");

    // Faults no longer roll for this key: its answer is replayed.
    sandbox.set_dials(Dials {
        server_error: 1.0,
        ..quick(0)
    });
    let again = post(&client, &sandbox, Some("job-2"), &json!({"f": 6}))
        .send()
        .await
        .expect("second answer");
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["x-request-id"], "sbx-2");
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(
        again.bytes().await.expect("second body"),
        first,
        "the very same answer"
    );
    assert_eq!(outcomes(&sandbox.log()), ["answered", "replayed"]);
    sandbox.stop().await;
}

#[tokio::test]
async fn without_honouring_the_key_a_repeat_is_processed_again() {
    let sandbox = sandbox(Dials {
        honour_idempotency_key: false,
        ..quick(0)
    })
    .await;
    let client = client(Duration::from_secs(5));
    let mut answers = Vec::new();
    for _ in 0..2 {
        let answer: Value = post(&client, &sandbox, Some("job-3"), &json!({"g": 7}))
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("JSON answer");
        answers.push(answer["request_id"].clone());
    }
    assert_eq!(
        answers,
        [json!("sbx-1"), json!("sbx-2")],
        "each processed on its own"
    );
    assert_eq!(outcomes(&sandbox.log()), ["answered", "answered"]);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_key_whose_first_request_is_still_processing_gets_409_and_status_pending() {
    // Long enough that the second request arrives while the first is held, even on a busy machine.
    let sandbox = sandbox(quick(5000)).await;
    let first = tokio::spawn({
        let request = post(
            &client(Duration::from_secs(10)),
            &sandbox,
            Some("job-4"),
            &json!({}),
        );
        async move { request.send().await.map(|r| r.status().as_u16()) }
    });
    eventually("the first request is seen", || sandbox.log().len() == 1).await;
    assert_eq!(
        status(&sandbox, "job-4").await.1,
        json!({"state": "pending"})
    );
    sandbox.set_dials(quick(0));
    let second = post(
        &client(Duration::from_secs(5)),
        &sandbox,
        Some("job-4"),
        &json!({}),
    )
    .send()
    .await
    .expect("an answer");
    assert_eq!(second.status(), 409);
    let body: Value = second.json().await.expect("JSON error");
    assert_eq!(
        body["error"],
        "a request with this Idempotency-Key is in progress"
    );
    assert_eq!(first.await.expect("first task").expect("first answer"), 200);
    assert_eq!(outcomes(&sandbox.log()), ["answered", "in_progress"]);
    assert_eq!(status(&sandbox, "job-4").await.1["state"], "succeeded");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_refused_request_leaves_its_key_free_for_a_retry() {
    let sandbox = sandbox(Dials {
        throttle: 1.0,
        ..quick(0)
    })
    .await;
    let client = client(Duration::from_secs(5));
    let refused = post(&client, &sandbox, Some("job-5"), &json!({}))
        .send()
        .await
        .expect("429");
    assert_eq!(refused.status(), 429);
    sandbox.set_dials(quick(0));
    let retried = post(&client, &sandbox, Some("job-5"), &json!({}))
        .send()
        .await
        .expect("200");
    assert_eq!(retried.status(), 200);
    assert_eq!(outcomes(&sandbox.log()), ["throttled", "answered"]);
    assert_eq!(status(&sandbox, "job-5").await.1["state"], "succeeded");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_bad_request() {
    let sandbox = sandbox(quick(0)).await;
    let response = client(Duration::from_secs(5))
        .post(sandbox.url())
        .header("Idempotency-Key", "job-6")
        .body("not json")
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("JSON error");
    assert!(body["error"].is_string());
    let response = client(Duration::from_secs(5))
        .get(format!("{}/jobs", sandbox.url()))
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 405, "the job endpoint takes POST");
    assert_eq!(outcomes(&sandbox.log()), ["bad_request", "bad_request"]);
    assert_eq!(status(&sandbox, "job-6").await.1["state"], "failed");
    sandbox.stop().await;
}

#[tokio::test]
async fn status_is_not_found_for_an_unseen_key() {
    let sandbox = sandbox(quick(0)).await;
    let (code, state) = status(&sandbox, "never%20seen").await;
    assert_eq!((code, state), (404, json!({"state": "not_found"})));
    sandbox.stop().await;
}

#[tokio::test]
async fn status_finds_a_key_given_percent_encoded() {
    let sandbox = sandbox(quick(0)).await;
    post(
        &client(Duration::from_secs(5)),
        &sandbox,
        Some("a key/with?odd#chars"),
        &json!({}),
    )
    .send()
    .await
    .expect("an answer");
    let (code, state) = status(&sandbox, "a%20key%2Fwith%3Fodd%23chars").await;
    assert_eq!((code, &state["state"]), (200, &json!("succeeded")));
    sandbox.stop().await;
}

#[tokio::test]
async fn set_dials_takes_effect_for_the_next_request() {
    let sandbox = sandbox(quick(0)).await;
    let client = client(Duration::from_secs(5));
    let before = post(&client, &sandbox, None, &json!({}))
        .send()
        .await
        .expect("answer");
    assert_eq!(before.status(), 200);
    let dials = Dials {
        server_error: 1.0,
        ..quick(0)
    };
    sandbox.set_dials(dials.clone());
    assert_eq!(sandbox.dials(), dials);
    let after = post(&client, &sandbox, None, &json!({}))
        .send()
        .await
        .expect("answer");
    assert_eq!(after.status(), 500);
    sandbox.stop().await;
}

#[test]
fn dials_validate_refuses_a_probability_of_one_and_a_half_naming_the_field() {
    let dials = Dials {
        throttle: 1.5,
        ..Dials::default()
    };
    match dials.validate() {
        Err(Error::InvalidInput { details, message }) => {
            assert_eq!(details.field, "dials.throttle");
            assert!(message.contains("dials.throttle"), "{message}");
        }
        other => panic!("expected invalid_input, got {other:?}"),
    }
    let too_many = Dials {
        server_error: 0.6,
        malformed_json: 0.6,
        ..Dials::default()
    };
    assert_eq!(
        too_many.validate().expect_err("sum over 1").code(),
        "invalid_input"
    );
    let not_a_number = Dials {
        extra_key: f64::NAN,
        ..Dials::default()
    };
    assert!(not_a_number.validate().is_err());
    assert!(Dials::default().validate().is_ok());
}

#[test]
fn dials_parse_from_json_with_defaults_for_missing_fields() {
    let dials = Dials::parse(r#"{"latency_ms": 5, "throttle": 0.25}"#).expect("dials");
    assert_eq!(
        dials,
        Dials {
            latency_ms: 5,
            throttle: 0.25,
            ..Dials::default()
        }
    );
    let error = Dials::parse(r#"{"throttle": 1.5}"#).expect_err("out of range");
    assert!(
        matches!(error, Error::InvalidInput { ref details, .. } if details.field == "dials.throttle")
    );
}

#[tokio::test]
async fn start_refuses_a_non_loopback_address() {
    for addr in ["0.0.0.0:0", "192.0.2.1:0", "[::]:0"] {
        let addr: SocketAddr = addr.parse().expect("address");
        match Sandbox::start(addr, quick(0)).await {
            Err(Error::InvalidInput { details, .. }) => assert_eq!(details.field, "listen"),
            Err(other) => panic!("expected invalid_input for {addr}, got {other:?}"),
            Ok(_) => panic!("listened on {addr}"),
        }
    }
}
