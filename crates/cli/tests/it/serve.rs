//! The HTTP API of SPEC §15 through a real `onejob serve` process and a real client: every
//! status of a POST, the key's two forms, tokens and owners, waits and lists, a person's moves,
//! problem+json, the limits on size and time, a stop by signal, TLS, and one job per key under
//! concurrency, across two servers and across a kill. Providers are `onejob sandbox` processes
//! on 127.0.0.1.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::processes::{add_http_provider, intent_for, SandboxProcess};
use common::serve::{
    assert_problem, client, job_id, json, problem, run_within, token, token_reply, Api, Server,
};
use common::{intent, Ledger};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// The largest body the API reads (SPEC §15).
const MIB: usize = 1024 * 1024;

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().expect("an ASCII header").to_owned())
}

/// A server with no executor on a fresh ledger, and a client for `alice`.
fn quiet_server() -> (Ledger, Server, Api) {
    let ledger = Ledger::new();
    let server = Server::start(&ledger, &["--no-worker"]);
    let api = Api::new(&server, &token(&ledger, "alice"));
    (ledger, server, api)
}

/// The ids of the owner's jobs, newest first, all pages followed.
async fn all_job_ids(api: &Api, query: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            None => format!("/v1/jobs?{query}"),
            Some(cursor) => format!("/v1/jobs?{query}&after={cursor}"),
        };
        let page = json(api.get(&path).await, StatusCode::OK).await;
        for job in page["jobs"].as_array().expect("jobs") {
            ids.push(common::id(job));
        }
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return ids,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_key_is_201_the_same_again_200_replayed_and_another_intent_422() {
    let (_ledger, _server, api) = quiet_server();
    let first = api.submit("order-45", &intent(r#"{"amount": 100}"#)).await;
    let location = header(&first, "location").expect("a Location");
    assert_eq!(header(&first, "idempotent-replayed"), None);
    let created = json(first, StatusCode::CREATED).await;
    let id = job_id(&created);
    assert_eq!(created["replayed"], false, "{created}");
    assert_eq!(location, format!("/v1/jobs/{id}"));
    assert_eq!(created["job"]["owner_id"], "alice", "{created}");
    assert_eq!(created["job"]["idempotency_key"], "order-45", "{created}");
    assert_eq!(created["job"]["status"], "queued", "{created}");

    // The Location names the job, with its attempts and history.
    let shown = json(api.get(&location).await, StatusCode::OK).await;
    assert_eq!(shown["job"]["id"], id.as_str(), "{shown}");
    assert!(
        shown["attempts"].is_array() && shown["events"].is_array(),
        "{shown}"
    );

    // The same intent (keys reordered, 100.0 for 100: one fingerprint) is the same job.
    let again = api
        .submit(
            "order-45",
            r#"{"input": {"amount": 100.0}, "route": ["primary"]}"#,
        )
        .await;
    assert_eq!(
        header(&again, "idempotent-replayed").as_deref(),
        Some("true")
    );
    let replayed = json(again, StatusCode::OK).await;
    assert_eq!(replayed["replayed"], true, "{replayed}");
    assert_eq!(job_id(&replayed), id);
    assert_eq!(replayed["job"], created["job"], "the same job, unchanged");

    // Another intent under the key is refused, naming the job that holds it.
    let conflict = problem(
        api.submit("order-45", &intent(r#"{"amount": 101}"#)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_conflict",
    )
    .await;
    assert_eq!(
        conflict["details"]["existing_job_id"],
        id.as_str(),
        "{conflict}"
    );
    assert!(
        conflict["detail"].as_str().expect("detail").contains(&id),
        "{conflict}"
    );
    assert_eq!(all_job_ids(&api, "").await, vec![id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_quoted_and_the_bare_key_are_one_key() {
    let (ledger, _server, api) = quiet_server();
    let order = intent(r#"{"amount": 45}"#);
    let quoted = json(
        api.submit(r#""order-45""#, &order).await,
        StatusCode::CREATED,
    )
    .await;
    let bare = json(api.submit("order-45", &order).await, StatusCode::OK).await;
    assert_eq!(job_id(&bare), job_id(&quoted));
    assert_eq!(quoted["job"]["idempotency_key"], "order-45", "{quoted}");

    // Bare first, then quoted; escapes in the quoted form name the same characters.
    let other = intent(r#"{"amount": 46}"#);
    let bare = json(api.submit(r#"a "b" \c"#, &other).await, StatusCode::CREATED).await;
    let quoted = json(api.submit(r#""a \"b\" \\c""#, &other).await, StatusCode::OK).await;
    assert_eq!(job_id(&quoted), job_id(&bare));
    assert_eq!(bare["job"]["idempotency_key"], r#"a "b" \c"#, "{bare}");

    // The command line's key is the same key: one job, whichever face submitted.
    let cli = ledger
        .run(&[
            "--owner", "alice", "submit", "--key", "order-45", "--intent", &order,
        ])
        .ok();
    assert_eq!(cli["replayed"], true, "{cli}");
    assert_eq!(
        common::id(&cli["job"]),
        job_id(&json(api.submit("order-45", &order).await, StatusCode::OK).await)
    );
    assert_eq!(all_job_ids(&api, "").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_missing_empty_or_malformed_key_is_400_and_makes_no_job() {
    let (_ledger, _server, api) = quiet_server();
    let order = intent("{}");
    let missing = api
        .request(Method::POST, "/v1/jobs")
        .header("Content-Type", "application/json")
        .body(order.clone())
        .send()
        .await
        .expect("sent");
    let body = problem(missing, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert_eq!(body["details"]["field"], "Idempotency-Key", "{body}");

    let long = "k".repeat(256);
    for key in ["", "  ", r#""""#, r#""open"#, r#""a"b"#, r#""a\n""#, &long] {
        let body = problem(
            api.submit(key, &order).await,
            StatusCode::BAD_REQUEST,
            "invalid_input",
        )
        .await;
        let field = body["details"]["field"].as_str().expect("a field");
        assert!(
            field == "Idempotency-Key" || field == "idempotency_key",
            "{key:?}: {body}"
        );
    }
    // Bytes beyond ASCII, which a header may carry but a key may not.
    let non_ascii = api
        .request(Method::POST, "/v1/jobs")
        .header(
            "Idempotency-Key",
            reqwest::header::HeaderValue::from_bytes(b"caf\xc3\xa9").expect("obs-text"),
        )
        .header("Content-Type", "application/json")
        .body(order.clone())
        .send()
        .await
        .expect("sent");
    problem(non_ascii, StatusCode::BAD_REQUEST, "invalid_input").await;
    // Given twice, it names no one key.
    let twice = api
        .request(Method::POST, "/v1/jobs")
        .header("Idempotency-Key", "a")
        .header("Idempotency-Key", "b")
        .header("Content-Type", "application/json")
        .body(order.clone())
        .send()
        .await
        .expect("sent");
    problem(twice, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert!(all_job_ids(&api, "").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_json_is_400_naming_where_it_broke() {
    let (_ledger, _server, api) = quiet_server();
    let broken = "{\"route\": [\"primary\"],\n  \"input\": {\"amount\": }\n}";
    let body = problem(
        api.submit("broken", broken).await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    let detail = body["detail"].as_str().expect("detail");
    assert!(detail.contains("line 2 column 23"), "{body}");

    // The same for the bodies of a person's moves.
    let job = job_id(
        &json(
            api.submit("whole", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );
    let retry = api
        .request(Method::POST, &format!("/v1/jobs/{job}/retry"))
        .header("Idempotency-Key", "retry-whole")
        .header("Content-Type", "application/json")
        .body("{\"provider\": \"primary\"")
        .send()
        .await
        .expect("sent");
    let body = problem(retry, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("line 1 column 22"),
        "{body}"
    );

    // A body that is not UTF-8, and one that says it is not JSON.
    let latin1 = api
        .request(Method::POST, "/v1/jobs")
        .header("Idempotency-Key", "latin1")
        .header("Content-Type", "application/json")
        .body(b"{\"route\": [\"primary\"], \"input\": \"caf\xe9\"}".to_vec())
        .send()
        .await
        .expect("sent");
    problem(latin1, StatusCode::BAD_REQUEST, "invalid_input").await;
    let form = api
        .request(Method::POST, "/v1/jobs")
        .header("Idempotency-Key", "form")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("route=primary")
        .send()
        .await
        .expect("sent");
    problem(form, StatusCode::UNSUPPORTED_MEDIA_TYPE, "invalid_input").await;
    assert_eq!(all_job_ids(&api, "").await, vec![job]);
}

/// A request head for `POST /v1/jobs` with `token` and the extra header lines given.
fn post_head(addr: &str, token: &str, extra: &str) -> String {
    format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Idempotency-Key: big\r\nContent-Type: application/json\r\n{extra}\r\n"
    )
}

/// Reads what the server sends until it closes or `limit` passes; the bytes and when it ended.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, Duration, bool) {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while start.elapsed() < limit {
        match stream.read(&mut buf) {
            Ok(0) => return (got, start.elapsed(), true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (got, start.elapsed(), true),
        }
    }
    (got, start.elapsed(), false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_body_over_a_mebibyte_is_413_before_it_is_read_whole() {
    let (_ledger, server, api) = quiet_server();
    // The limit itself is allowed: an intent of exactly 1 MiB is a job.
    let frame = intent(r#"{"pad": ""}"#);
    let pad = "x".repeat(MIB - frame.len());
    let exact = intent(&format!(r#"{{"pad": "{pad}"}}"#));
    assert_eq!(exact.len(), MIB);
    json(api.submit("exact", &exact).await, StatusCode::CREATED).await;

    // One byte more, announced by Content-Length.
    let over = format!("{exact} ");
    let body = problem(
        api.submit("over", &over).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "invalid_input",
    )
    .await;
    assert_eq!(body["details"]["field"], "body", "{body}");

    // 100 MiB announced and none of it sent: the answer comes without waiting for the body.
    let addr = server.addr();
    let mut stream = TcpStream::connect(&addr).expect("connect");
    let head = post_head(&addr, &api.token, "Content-Length: 104857600\r\n");
    stream.write_all(head.as_bytes()).expect("the head");
    let (got, took, _) = read_until_closed(&mut stream, Duration::from_secs(5));
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("application/problem+json"), "{text}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // Chunked, with no length said: a writer offering 256 MiB is cut off soon after the
    // first MiB, and the connection is not held open to swallow the rest.
    let mut stream = TcpStream::connect(&addr).expect("connect");
    let head = post_head(&addr, &api.token, "Transfer-Encoding: chunked\r\n");
    stream.write_all(head.as_bytes()).expect("the head");
    let mut writer = stream.try_clone().expect("a writer");
    let started = Instant::now();
    let offered = 256 * MIB;
    let sender = std::thread::spawn(move || {
        let chunk = vec![b' '; 64 * 1024];
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(&chunk);
        framed.extend_from_slice(b"\r\n");
        let mut sent = 0;
        while sent < offered {
            if writer.write_all(&framed).is_err() {
                break;
            }
            sent += chunk.len();
        }
        (sent, started.elapsed())
    });
    let (got, _, closed) = read_until_closed(&mut stream, Duration::from_secs(20));
    let (sent, took) = sender.join().expect("the writer");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(closed, "the connection stayed open");
    assert!(
        sent < 32 * MIB,
        "{} MiB of {} went in before the server let go",
        sent / MIB,
        offered / MIB
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    eprintln!(
        "chunked: {} KiB of {} MiB written before the server let go, in {took:?}",
        sent / 1024,
        offered / MIB
    );
    // Neither made a job; the server still answers.
    assert_eq!(all_job_ids(&api, "").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_missing_unknown_or_revoked_token_is_401_with_one_answer() {
    let ledger = Ledger::new();
    let server = Server::start(&ledger, &["--no-worker"]);
    let alice = Api::new(&server, &token(&ledger, "alice"));
    let leaving = token_reply(&ledger, "alice");
    let departed = Api::new(&server, leaving["token"].as_str().expect("a token"));
    // It works until it is revoked, on the server that is running.
    json(departed.get("/v1/jobs").await, StatusCode::OK).await;
    ledger.run(&["token", "revoke", &common::id(&leaving)]).ok();
    refused_within_a_second(&departed, Instant::now()).await;

    let url = server.at("/v1/jobs");
    let http = client();
    let unknown = format!("oj_{}", "0".repeat(43));
    let answers = vec![
        ("missing", http.get(&url).send().await.expect("sent")),
        (
            "unknown",
            http.get(&url)
                .bearer_auth(&unknown)
                .send()
                .await
                .expect("sent"),
        ),
        ("revoked", departed.get("/v1/jobs").await),
        (
            "another scheme",
            http.get(&url)
                .basic_auth("alice", Some("secret"))
                .send()
                .await
                .expect("sent"),
        ),
        (
            "empty",
            http.get(&url)
                .header("Authorization", "Bearer ")
                .send()
                .await
                .expect("sent"),
        ),
        (
            "revoked, posting",
            departed.submit("k", &intent("{}")).await,
        ),
    ];
    let mut bodies = Vec::new();
    for (what, response) in answers {
        assert_eq!(
            header(&response, "www-authenticate").as_deref(),
            Some("Bearer"),
            "{what}"
        );
        let body = problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
        bodies.push((what, body));
    }
    for (what, body) in &bodies {
        assert_eq!(body, &bodies[0].1, "{what} says more than missing does");
    }
    // The revoked token's POST made nothing.
    assert!(all_job_ids(&alice, "").await.is_empty());
}

/// Asks with `api`'s token every 20 ms until it is refused, which must be within a second of
/// `revoked`; every answer before is served.
async fn refused_within_a_second(api: &Api, revoked: Instant) {
    loop {
        let status = api.get("/v1/jobs").await.status();
        let after = revoked.elapsed();
        if status == StatusCode::UNAUTHORIZED {
            assert!(
                after < Duration::from_secs(1),
                "refused only after {after:?}"
            );
            return;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            after < Duration::from_secs(1),
            "still served {after:?} after the revocation"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_revoked_by_another_process_is_refused_within_one_second() {
    let ledger = Ledger::new();
    let server = Server::start(&ledger, &["--no-worker"]);
    let leaving = token_reply(&ledger, "alice");
    let busy = Api::new(&server, leaving["token"].as_str().expect("a token"));
    // A client busy with the token right up to its revocation by the command line.
    let stop = Arc::new(AtomicUsize::new(0));
    let background = {
        let (busy, stop) = (busy.clone(), stop.clone());
        tokio::spawn(async move {
            while stop.load(Ordering::Relaxed) == 0 {
                let _ = busy.get("/v1/jobs").await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    ledger.run(&["token", "revoke", &common::id(&leaving)]).ok();
    refused_within_a_second(&busy, Instant::now()).await;
    stop.store(1, Ordering::Relaxed);
    background.await.expect("the busy client");
    // And never served again.
    for _ in 0..10 {
        problem(
            busy.get("/v1/jobs").await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_owners_job_is_404_as_an_unknown_one_is() {
    let ledger = Ledger::new();
    let server = Server::start(&ledger, &["--no-worker"]);
    let alice = Api::new(&server, &token(&ledger, "alice"));
    let bob = Api::new(&server, &token(&ledger, "bob"));
    let order = intent(r#"{"amount": 45}"#);
    let hers = job_id(&json(alice.submit("order-45", &order).await, StatusCode::CREATED).await);
    let nobodys = "0190a5b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b";

    let mine = problem(
        bob.get(&format!("/v1/jobs/{hers}")).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let none = problem(
        bob.get(&format!("/v1/jobs/{nobodys}")).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    // The two differ only by the id asked for.
    let unnamed = |body: &Value, id: &str| body.to_string().replace(id, "ID");
    assert_eq!(unnamed(&mine, &hers), unnamed(&none, nobodys));
    for path in [
        format!("/v1/jobs/{hers}/cancel"),
        format!("/v1/jobs/{hers}/retry"),
    ] {
        problem(
            bob.post_keyed(&path, "bobs-retry", &json!({})).await,
            StatusCode::NOT_FOUND,
            "not_found",
        )
        .await;
    }
    // Keys are each owner's own: bob's order-45 is another job, and the lists do not mix.
    let his = job_id(&json(bob.submit("order-45", &order).await, StatusCode::CREATED).await);
    assert_ne!(his, hers);
    assert_eq!(all_job_ids(&bob, "").await, vec![his]);
    assert_eq!(all_job_ids(&alice, "").await, vec![hers.clone()]);
    let shown = json(alice.get(&format!("/v1/jobs/{hers}")).await, StatusCode::OK).await;
    assert_eq!(
        shown["job"]["status"], "queued",
        "bob's cancel did nothing: {shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_returns_when_the_job_settles_or_after_its_seconds() {
    let ledger = Ledger::new();
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 1500, "jitter_ms": 0 }));
    add_http_provider(&ledger, "slow", &sandbox.url, 5_000, 10_000, json!({}));
    let server = Server::start(&ledger, &[]);
    let api = Api::new(&server, &token(&ledger, "alice"));
    let id = job_id(
        &json(
            api.submit("w", &intent_for("slow", json!({ "n": 1 })))
                .await,
            StatusCode::CREATED,
        )
        .await,
    );
    let path = format!("/v1/jobs/{id}");

    // Not settled within half a second: the answer comes then, with the job as it is.
    let start = Instant::now();
    let early = json(api.get(&format!("{path}?wait=0.5")).await, StatusCode::OK).await;
    let took = start.elapsed();
    assert!(
        (Duration::from_millis(450)..Duration::from_millis(1300)).contains(&took),
        "{took:?}"
    );
    let status = early["job"]["status"].as_str().expect("status");
    assert!(status == "queued" || status == "running", "{early}");

    // Settled about a second later: the answer comes then, not after the 20 s.
    let start = Instant::now();
    let done = json(api.get(&format!("{path}?wait=20")).await, StatusCode::OK).await;
    let took = start.elapsed();
    assert_eq!(done["job"]["status"], "succeeded", "{done}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A settled job is answered at once.
    let start = Instant::now();
    json(api.get(&format!("{path}?wait=60")).await, StatusCode::OK).await;
    assert!(start.elapsed() < Duration::from_secs(1));

    for wait in ["61", "-1", "soon", "NaN"] {
        let body = problem(
            api.get(&format!("{path}?wait={wait}")).await,
            StatusCode::BAD_REQUEST,
            "invalid_input",
        )
        .await;
        assert_eq!(body["details"]["field"], "wait", "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_are_listed_with_their_filters_a_page_at_a_time() {
    let (ledger, _server, api) = quiet_server();
    add_http_provider(
        &ledger,
        "second",
        "http://127.0.0.1:9/",
        1_000,
        5_000,
        json!({}),
    );
    let mut made = Vec::new();
    for n in 0..5 {
        let order = intent(&format!(r#"{{"n": {n}}}"#));
        let reply = json(
            api.submit(&format!("list-{n}"), &order).await,
            StatusCode::CREATED,
        )
        .await;
        made.push(job_id(&reply));
    }
    let elsewhere = json(
        api.submit("list-5", &intent_for("second", json!({ "n": 5 })))
            .await,
        StatusCode::CREATED,
    )
    .await;
    made.push(job_id(&elsewhere));
    json(
        api.post(&format!("/v1/jobs/{}/cancel", made[1]), &json!({}))
            .await,
        StatusCode::OK,
    )
    .await;

    // Two a page, newest first, every job once.
    let first = json(api.get("/v1/jobs?limit=2").await, StatusCode::OK).await;
    assert_eq!(first["jobs"].as_array().expect("jobs").len(), 2, "{first}");
    assert!(first["next"].is_string(), "{first}");
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();
    assert_eq!(all_job_ids(&api, "limit=2").await, newest_first);

    assert_eq!(
        all_job_ids(&api, "status=cancelled").await,
        vec![made[1].clone()]
    );
    assert_eq!(
        all_job_ids(&api, "search=list-3").await,
        vec![made[3].clone()]
    );
    assert_eq!(
        all_job_ids(&api, "provider=second").await,
        vec![made[5].clone()]
    );
    assert_eq!(
        all_job_ids(&api, "status=queued&provider=primary&limit=1").await,
        vec![
            made[4].clone(),
            made[3].clone(),
            made[2].clone(),
            made[0].clone()
        ]
    );
    for (query, field) in [
        ("status=lost", "status"),
        ("limit=many", "limit"),
        ("after=not-a-cursor", "after"),
    ] {
        let body = problem(
            api.get(&format!("/v1/jobs?{query}")).await,
            StatusCode::BAD_REQUEST,
            "invalid_input",
        )
        .await;
        assert_eq!(body["details"]["field"], field, "{query}: {body}");
    }
}

/// `GET /v1/jobs` takes the filters a bulk operation takes: the open attempt's error kind and
/// the creation times. (An unknown parameter is ignored, so before they were read these
/// answered every job.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_jobs_list_takes_the_error_kind_and_the_creation_times() {
    let (ledger, _server, api) = quiet_server();
    let queued = job_id(
        &json(
            api.submit("kinds-queued", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );
    let stuck = job_id(
        &json(
            api.submit("kinds-stuck", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );
    let engine = onejob_engine::Engine::open(&ledger.db).await.expect("open");
    common::leave_unknown(&engine, &stuck).await;
    engine.close().await;

    assert_eq!(
        all_job_ids(&api, "error_kind=soft_timeout").await,
        vec![stuck.clone()]
    );
    assert!(all_job_ids(&api, "error_kind=connection_broken")
        .await
        .is_empty());
    assert_eq!(
        all_job_ids(&api, "created_after=2000-01-01").await,
        vec![stuck.clone(), queued.clone()]
    );
    assert!(all_job_ids(&api, "created_before=2000-01-01")
        .await
        .is_empty());
    assert_eq!(
        all_job_ids(&api, "error_kind=&created_before=&created_after=").await,
        vec![stuck, queued],
        "an empty filter is no filter"
    );
    let body = problem(
        api.get("/v1/jobs?created_before=last%20tuesday").await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    assert_eq!(body["details"]["field"], "created_before", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_retry_and_resolve_move_a_job_as_the_command_line_does() {
    let (ledger, _server, api) = quiet_server();
    let job = job_id(
        &json(
            api.submit("moves", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );

    // A retry makes the first attempt, pending on the route's first provider.
    let retried = json(
        api.post_keyed(&format!("/v1/jobs/{job}/retry"), "r1", &json!({}))
            .await,
        StatusCode::OK,
    )
    .await;
    let first = common::id(&retried["attempt"]);
    assert_eq!(retried["attempt"]["state"], "pending", "{retried}");
    assert_eq!(retried["attempt"]["provider"], "primary", "{retried}");
    // While it is open, another is refused.
    let blocked = problem(
        api.post_keyed(&format!("/v1/jobs/{job}/retry"), "r2", &json!({}))
            .await,
        StatusCode::CONFLICT,
        "attempt_blocked",
    )
    .await;
    assert_eq!(
        blocked["details"]["attempt_id"],
        first.as_str(),
        "{blocked}"
    );

    // Abandoned, with the next attempt made on a named provider in the same step.
    let resolved = json(
        api.post(
            &format!("/v1/attempts/{first}/resolve"),
            &json!({ "as": "abandoned", "note": "silent", "retry_on": "primary" }),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(resolved["attempt"]["state"], "abandoned", "{resolved}");
    let second = common::id(&resolved["next_attempt"]);

    // A pending attempt was never sent: "it went through" is not a move it can make.
    let refused = problem(
        api.post(
            &format!("/v1/attempts/{second}/resolve"),
            &json!({ "as": "succeeded", "result": { "ok": true } }),
        )
        .await,
        StatusCode::CONFLICT,
        "invalid_transition",
    )
    .await;
    assert_eq!(refused["details"]["from"], "pending", "{refused}");
    for body in [
        json!({ "as": "maybe" }),
        json!({ "as": "failed", "why": "x" }),
    ] {
        problem(
            api.post(&format!("/v1/attempts/{second}/resolve"), &body)
                .await,
            StatusCode::BAD_REQUEST,
            "invalid_input",
        )
        .await;
    }
    let failed = json(
        api.post(
            &format!("/v1/attempts/{second}/resolve"),
            &json!({ "as": "failed" }),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(failed["job"]["status"], "queued", "{failed}");

    let cancelled = json(
        api.post(&format!("/v1/jobs/{job}/cancel"), &json!({}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(cancelled["job"]["status"], "cancelled", "{cancelled}");
    problem(
        api.post(
            &format!("/v1/attempts/{}/resolve", uuid::Uuid::now_v7()),
            &json!({ "as": "failed" }),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;

    // The command line reads the same history the HTTP moves wrote.
    let detail = ledger.run(&["--owner", "alice", "job", &job]).ok();
    let states: Vec<&str> = detail["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["state"].as_str().expect("state"))
        .collect();
    assert_eq!(states, ["abandoned", "failed"], "{detail}");
    assert_eq!(detail["job"]["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unknown_attempt_said_to_have_gone_through_gives_the_job_its_result() {
    let ledger = Ledger::new();
    let sandbox = SandboxProcess::start(
        &ledger,
        json!({ "latency_ms": 0, "jitter_ms": 0, "drop_after_processing": 1.0 }),
    );
    add_http_provider(&ledger, "lossy", &sandbox.url, 2_000, 5_000, json!({}));
    let server = Server::start(&ledger, &[]);
    let api = Api::new(&server, &token(&ledger, "alice"));
    let job = job_id(
        &json(
            api.submit("lossy-1", &intent_for("lossy", json!({ "amount": 7 })))
                .await,
            StatusCode::CREATED,
        )
        .await,
    );
    // The answer was lost after the provider processed it: the wait ends at unknown.
    let waited = json(
        api.get(&format!("/v1/jobs/{job}?wait=20")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(waited["job"]["status"], "unknown", "{waited}");
    let attempt = common::id(&waited["attempts"][0]);
    assert_eq!(waited["attempts"][0]["state"], "unknown", "{waited}");

    let resolved = json(
        api.post(
            &format!("/v1/attempts/{attempt}/resolve"),
            &json!({ "as": "succeeded", "result": { "charged": 7 }, "note": "seen in the provider's console" }),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(resolved["job"]["status"], "succeeded", "{resolved}");
    assert_eq!(
        resolved["job"]["result"],
        json!({ "charged": 7 }),
        "{resolved}"
    );
    assert_eq!(
        resolved["job"]["completed_by"],
        attempt.as_str(),
        "{resolved}"
    );
    assert_eq!(sandbox.log().len(), 1, "sent once, never again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_error_of_the_api_is_problem_json() {
    let (_ledger, server, api) = quiet_server();
    problem(
        api.get("/v1/nothing").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let method = api
        .request(Method::DELETE, "/v1/jobs")
        .send()
        .await
        .expect("sent");
    assert!(header(&method, "allow").is_some_and(|a| a.contains("POST")));
    problem(method, StatusCode::METHOD_NOT_ALLOWED, "invalid_input").await;
    let ghost = problem(
        api.submit("ghost", &intent_for("ghost", json!({}))).await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    assert!(ghost["details"]["field"].as_str().is_some(), "{ghost}");
    let nested = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    problem(
        api.submit("deep", &intent(&nested)).await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    problem(
        api.get("/v1/jobs/not-a-job").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;

    // A request hyper itself refuses (no Host in HTTP/1.1 is still served; a bad
    // request line is not) reaches no handler, is answered as a problem, and the connection ends.
    let addr = server.addr();
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream.write_all(b"BROKEN\r\n\r\n").expect("sent");
    let (got, _, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
    let text = String::from_utf8_lossy(&got);
    assert!(closed && text.starts_with("HTTP/1.1 400"), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("content-type: application/problem+json"),
        "{text}"
    );
    // What the status code alone says is in the problem too.
    let body: Value =
        serde_json::from_str(&api.get("/v1/nothing").await.text().await.expect("a body"))
            .expect("JSON");
    assert_problem(&body, StatusCode::NOT_FOUND, "not_found");
}

/// A raw connection that sends `bytes` and then nothing; a thread reports when the server
/// closed it and what it had sent by then.
fn half_request(addr: &str, bytes: String) -> std::thread::JoinHandle<(Vec<u8>, Duration, bool)> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(bytes.as_bytes()).expect("the first part");
    std::thread::spawn(move || read_until_closed(&mut stream, Duration::from_secs(20)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_not_arrived_within_ten_seconds_is_dropped_while_others_are_served() {
    let (_ledger, server, api) = quiet_server();
    let addr = server.addr();
    let head = post_head(&addr, &api.token, "Content-Length: 200\r\n");
    let slow = [
        ("half the head", half_request(&addr, head[..40].to_owned())),
        (
            "the head and half the body",
            half_request(&addr, format!("{head}{{\"route\": [\"primary\"],")),
        ),
        // A connection that never says anything holds a slot no longer.
        ("nothing at all", half_request(&addr, String::new())),
        // Nor does one kept alive after its answer with no next request.
        (
            "a kept-alive connection",
            half_request(
                &addr,
                format!("GET /v1/jobs HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
            ),
        ),
    ];
    // Meanwhile other clients are served as usual.
    let start = Instant::now();
    let mut served = 0;
    while start.elapsed() < Duration::from_secs(9) {
        let asked = Instant::now();
        json(api.get("/v1/jobs").await, StatusCode::OK).await;
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "{:?}",
            asked.elapsed()
        );
        served += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(served >= 10, "{served}");
    for (what, thread) in slow {
        let (got, took, closed) = thread.join().expect("the reader");
        assert!(closed, "{what}: still open after {took:?}");
        assert!(
            (Duration::from_millis(9_500)..Duration::from_millis(12_500)).contains(&took),
            "{what}: closed after {took:?}"
        );
        // What it says, if anything, is a 408 problem (or the kept-alive request's answer).
        let text = String::from_utf8_lossy(&got);
        let expected = if what == "a kept-alive connection" {
            text.starts_with("HTTP/1.1 401") && text.matches("HTTP/1.1").count() == 1
        } else {
            text.is_empty() || text.starts_with("HTTP/1.1 408")
        };
        assert!(expected, "{what}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_answers_the_requests_in_hand_and_exits_0() {
    let ledger = Ledger::new();
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 3000, "jitter_ms": 0 }));
    add_http_provider(&ledger, "slow", &sandbox.url, 10_000, 20_000, json!({}));
    let mut server = Server::start(&ledger, &[]);
    let api = Api::new(&server, &token(&ledger, "alice"));
    let job = job_id(
        &json(
            api.submit("in-hand", &intent_for("slow", json!({ "n": 1 })))
                .await,
            StatusCode::CREATED,
        )
        .await,
    );
    let waiting = {
        let (api, path) = (api.clone(), format!("/v1/jobs/{job}?wait=30"));
        tokio::spawn(async move {
            let response = api.get(&path).await;
            (response.status(), response.text().await, Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let signalled = Instant::now();
    common::processes::signal(&server.process, "TERM");

    let (status, body, answered) = waiting.await.expect("the waiting client");
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let body: Value = serde_json::from_str(&body.expect("a body")).expect("JSON");
    assert_eq!(
        body["job"]["status"], "running",
        "answered as it stood: {body}"
    );
    assert!(
        answered.duration_since(signalled) < Duration::from_secs(2),
        "{:?}",
        answered.duration_since(signalled)
    );
    // No new connection is taken, while the executor lets its attempt end.
    let refused = TcpStream::connect(server.addr());
    assert!(refused.is_err(), "a connection was accepted after SIGTERM");

    let run = tokio::task::block_in_place(|| server.exited(Duration::from_secs(30)));
    assert_eq!(run.code, 0, "{run:?}");
    let last = common::parse(
        run.stdout
            .lines()
            .last()
            .map(|l| format!("{l}\n"))
            .as_deref()
            .unwrap_or(""),
    );
    assert_eq!(last["served"]["stopped"], true, "{last}");
    assert_eq!(last["served"]["forced"], false, "{last}");
    assert_eq!(last["served"]["connections_cut"], 0, "{last}");
    // The attempt in flight was let end: its answer is in the ledger.
    let detail = ledger.run(&["--owner", "alice", "job", &job]).ok();
    assert_eq!(detail["job"]["status"], "succeeded", "{detail}");
}

#[test]
fn a_listen_address_beyond_loopback_without_tls_is_refused() {
    let ledger = Ledger::new();
    // An address this machine does not have comes first: a check that is gone fails here on
    // the words of the refusal, before anything could listen beyond loopback.
    for addr in ["192.0.2.1:8787", "0.0.0.0:0", "[::]:0"] {
        let error = run_within(
            &ledger,
            &["serve", "--listen", addr],
            Duration::from_secs(10),
        )
        .err(2);
        assert_eq!(error["code"], "invalid_input", "{error}");
        assert_eq!(error["details"]["field"], "listen", "{error}");
        let message = error["message"].as_str().expect("message");
        assert!(
            message.contains("--tls-cert") && message.contains("--plain-http-behind-proxy"),
            "{message}"
        );
    }
    // Loopback in either family needs neither.
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        let mut server = Server::start(&ledger, &["--no-worker", "--listen", addr]);
        assert!(server.url.starts_with("http://"), "{}", server.url);
        assert_eq!(server.terminate(Duration::from_secs(10)).code, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn https_with_a_certificate_the_test_made_and_a_client_that_trusts_only_it() {
    let ledger = Ledger::new();
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("a certificate");
    let cert = ledger.home().join("cert.pem");
    let key = ledger.home().join("key.pem");
    std::fs::write(&cert, made.cert.pem()).expect("cert.pem");
    std::fs::write(&key, made.signing_key.serialize_pem()).expect("key.pem");
    let (cert_arg, key_arg) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    // Every address, with TLS: allowed. It is reached through loopback only.
    let server = Server::start(
        &ledger,
        &[
            "--no-worker",
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            cert_arg,
            "--tls-key",
            key_arg,
        ],
    );
    assert!(server.url.starts_with("https://0.0.0.0:"), "{}", server.url);
    let base = format!("https://{}", server.addr());

    let trusted = reqwest::Certificate::from_pem(made.cert.pem().as_bytes()).expect("pem");
    let api = Api {
        client: reqwest::Client::builder()
            .tls_certs_only([trusted])
            .build()
            .expect("a client"),
        base: base.clone(),
        token: token(&ledger, "alice"),
    };
    let created = json(
        api.submit("tls-1", &intent("{}")).await,
        StatusCode::CREATED,
    )
    .await;
    let shown = json(
        api.get(&format!("/v1/jobs/{}", job_id(&created))).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(shown["job"]["idempotency_key"], "tls-1");

    // A client that does not trust the certificate gets no answer, nor does plain HTTP.
    let stranger = reqwest::Client::builder()
        .tls_certs_only([])
        .build()
        .expect("a client");
    let refused = stranger.get(format!("{base}/v1/jobs")).send().await;
    assert!(refused.is_err(), "{refused:?}");
    let plain = client()
        .get(format!("http://{}/v1/jobs", server.addr()))
        .bearer_auth(&api.token)
        .send()
        .await;
    assert!(
        plain.as_ref().map_or(true, |r| !r.status().is_success()),
        "{plain:?}"
    );
}

/// One job's POSTs from `n` clients at once: each opens its connection first, then all send
/// together. The answers' statuses, replay headers and bodies.
async fn storm_one_key(apis: Vec<Api>, key: &str, intent: &str) -> Vec<(StatusCode, bool, Value)> {
    let n = apis.len();
    let ready = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = tokio::task::JoinSet::new();
    for api in apis {
        let (ready, key, intent) = (ready.clone(), key.to_owned(), intent.to_owned());
        tasks.spawn(async move {
            json(api.get("/v1/jobs?limit=1").await, StatusCode::OK).await;
            ready.wait().await;
            let response = api.submit(&key, &intent).await;
            let status = response.status();
            let replayed = header(&response, "idempotent-replayed").as_deref() == Some("true");
            let body: Value =
                serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
            (status, replayed, body)
        });
    }
    let mut answers = Vec::with_capacity(n);
    while let Some(answer) = tasks.join_next().await {
        answers.push(answer.expect("a client"));
    }
    answers
}

/// Asserts that the answers name one job, made by exactly one of them; its id.
fn one_job_of(answers: &[(StatusCode, bool, Value)]) -> String {
    let ids: HashSet<String> = answers.iter().map(|(_, _, body)| job_id(body)).collect();
    assert_eq!(ids.len(), 1, "{answers:?}");
    let created = answers
        .iter()
        .filter(|(status, _, _)| *status == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1, "{answers:?}");
    for (status, replayed, body) in answers {
        let new = *status == StatusCode::CREATED;
        assert!(new || *status == StatusCode::OK, "{status}: {body}");
        assert_eq!(*replayed, !new, "{body}");
        assert_eq!(body["replayed"], !new, "{body}");
    }
    ids.into_iter().next().expect("one id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_concurrent_posts_with_one_key_name_one_job_and_send_once() {
    let ledger = Ledger::new();
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 200, "jitter_ms": 0 }));
    add_http_provider(&ledger, "paid", &sandbox.url, 5_000, 10_000, json!({}));
    let server = Server::start(&ledger, &[]);
    let token = token(&ledger, "alice");
    let apis: Vec<Api> = (0..40).map(|_| Api::new(&server, &token)).collect();
    let order = intent_for("paid", json!({ "amount": 45 }));

    let answers = storm_one_key(apis, "order-45", &order).await;
    assert_eq!(answers.len(), 40);
    let job = one_job_of(&answers);

    let api = Api::new(&server, &token);
    let done = json(
        api.get(&format!("/v1/jobs/{job}?wait=20")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["job"]["status"], "succeeded", "{done}");
    assert_eq!(
        done["attempts"].as_array().expect("attempts").len(),
        1,
        "{done}"
    );
    assert_eq!(all_job_ids(&api, "").await, vec![job]);
    assert_eq!(sandbox.log().len(), 1, "{:?}", sandbox.log());
}

/// A PostgreSQL ledger: this pass's server when the suite runs on PostgreSQL, else a cluster
/// of the test's own. The ledger drops before the cluster.
struct PostgresLedger {
    ledger: Ledger,
    _cluster: Option<onejob_testkit::Postgres>,
}

fn postgres_ledger() -> PostgresLedger {
    if onejob_testkit::postgres_backend() {
        return PostgresLedger {
            ledger: Ledger::new(),
            _cluster: None,
        };
    }
    let cluster = onejob_testkit::Postgres::start_for_tests().expect("a PostgreSQL cluster");
    let url = cluster.database("serve").expect("a database");
    let ledger = Ledger::at(&url);
    ledger
        .run(&["provider", "add", "--json", common::PRIMARY])
        .ok();
    PostgresLedger {
        ledger,
        _cluster: Some(cluster),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_postgres_ledger_make_one_job_of_one_key() {
    let shared = postgres_ledger();
    let ledger = &shared.ledger;
    assert!(onejob_testkit::is_url(&ledger.db), "{}", ledger.db);
    let sandbox = SandboxProcess::start(ledger, json!({ "latency_ms": 200, "jitter_ms": 0 }));
    add_http_provider(ledger, "paid", &sandbox.url, 5_000, 10_000, json!({}));
    let servers = [Server::start(ledger, &[]), Server::start(ledger, &[])];
    let token = token(ledger, "alice");
    let apis: Vec<Api> = (0..40).map(|i| Api::new(&servers[i % 2], &token)).collect();
    let order = intent_for("paid", json!({ "amount": 45 }));

    let answers = storm_one_key(apis, "order-45", &order).await;
    let job = one_job_of(&answers);

    for server in &servers {
        let api = Api::new(server, &token);
        let done = json(
            api.get(&format!("/v1/jobs/{job}?wait=20")).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(done["job"]["status"], "succeeded", "{done}");
        assert_eq!(all_job_ids(&api, "").await, vec![job.clone()]);
    }
    assert_eq!(sandbox.log().len(), 1, "{:?}", sandbox.log());
}

/// Every job's intent in the storm: its own input, so each send is told apart at the provider.
fn storm_intent(n: usize) -> String {
    intent_for("paid", json!({ "n": n }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_killed_mid_storm_lost_no_job_it_acknowledged() {
    const JOBS: usize = 400;
    const CLIENTS: usize = 32;
    let ledger = Ledger::new();
    // Slow enough that the executor always has attempts in flight when the kill comes.
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 300, "jitter_ms": 100 }));
    add_http_provider(&ledger, "paid", &sandbox.url, 5_000, 10_000, json!({}));
    let mut server = Server::start(&ledger, &[]);
    let token = token(&ledger, "alice");

    // 32 clients take keys from one counter and send as fast as they are answered.
    let next = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut clients = tokio::task::JoinSet::new();
    // One client, which opens a connection for each request in flight.
    let api = Api::new(&server, &token);
    let stormed = Instant::now();
    for _ in 0..CLIENTS {
        let (api, next, answered) = (api.clone(), next.clone(), answered.clone());
        clients.spawn(async move {
            let mut acknowledged = HashMap::new();
            loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= JOBS {
                    return acknowledged;
                }
                let sent = api
                    .request(Method::POST, "/v1/jobs")
                    .header("Idempotency-Key", format!("storm-{n}"))
                    .header("Content-Type", "application/json")
                    .body(storm_intent(n))
                    .send()
                    .await;
                let Ok(response) = sent else { continue };
                let status = response.status();
                let Ok(text) = response.text().await else {
                    continue;
                };
                if status.is_success() {
                    let body: Value = serde_json::from_str(&text).expect("JSON");
                    acknowledged.insert(n, job_id(&body));
                    answered.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
    }
    // Killed in the middle of it, once the executor has sent something.
    while answered.load(Ordering::SeqCst) < JOBS / 3 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    while tokio::task::block_in_place(|| sandbox.log().is_empty()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::task::block_in_place(|| server.kill());
    let killed = stormed.elapsed();
    let mut acknowledged = HashMap::new();
    while let Some(part) = clients.join_next().await {
        acknowledged.extend(part.expect("a client"));
    }
    assert!(
        acknowledged.len() >= JOBS / 3 && acknowledged.len() < JOBS,
        "{} acknowledged: not killed mid-storm",
        acknowledged.len()
    );

    // Restarted on the same ledger: every acknowledged key names its job, and a client that
    // sends any key again (as a client after a lost answer would) gets one job per key.
    let server = Server::start(&ledger, &[]);
    let api = Api::new(&server, &token);
    for (n, id) in &acknowledged {
        let shown = json(api.get(&format!("/v1/jobs/{id}")).await, StatusCode::OK).await;
        assert_eq!(
            shown["job"]["idempotency_key"],
            format!("storm-{n}"),
            "{shown}"
        );
        let again = json(
            api.submit(&format!("storm-{n}"), &storm_intent(*n)).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(&job_id(&again), id, "storm-{n}");
    }
    for n in 0..JOBS {
        let key = format!("storm-{n}");
        let response = api.submit(&key, &storm_intent(n)).await;
        assert!(
            response.status().is_success(),
            "{key}: {}",
            response.status()
        );
    }
    assert_eq!(all_job_ids(&api, "limit=500").await.len(), JOBS);

    // Once nothing is left to send (attempts the kill left in flight become unknown when their
    // lease expires), no input reached the provider twice.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let open = all_job_ids(&api, "status=queued").await.len()
            + all_job_ids(&api, "status=running").await.len();
        if open == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} jobs still open");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let log = sandbox.log();
    let mut sends: HashMap<String, usize> = HashMap::new();
    for request in &log {
        *sends
            .entry(request["body_sha256"].as_str().expect("a hash").to_owned())
            .or_default() += 1;
    }
    let twice: Vec<_> = sends.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    let unknown = all_job_ids(&api, "status=unknown").await.len();
    let succeeded = all_job_ids(&api, "status=succeeded").await.len();
    assert_eq!(
        unknown + succeeded,
        JOBS,
        "{unknown} unknown, {succeeded} succeeded"
    );
    // Some were in flight when the kill came: the restarted executor could have sent them again.
    assert!(unknown > 0, "nothing was in flight at the kill");
    assert!(
        log.len() >= succeeded,
        "{} sends, {succeeded} succeeded",
        log.len()
    );
    eprintln!(
        "killed after {killed:?}, {} acknowledged by then; {unknown} left unknown by it; {} sends",
        acknowledged.len(),
        log.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_connection_past_the_limit_is_answered_503_at_once_and_served_once_one_is_free() {
    let ledger = Ledger::new();
    let server = Server::start(&ledger, &["--no-worker", "--max-connections", "2"]);
    let api = Api::new(&server, &token(&ledger, "alice"));
    let addr = server.addr();
    // Two connections that hold both slots, each with half a request.
    let mut holders: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = TcpStream::connect(&addr).expect("connect");
            stream
                .write_all(b"GET /v1/jobs HTTP/1.1\r\n")
                .expect("half a head");
            stream
        })
        .collect();
    // A third is told at once, not left unseen in the listen queue.
    let mut third = TcpStream::connect(&addr).expect("connect");
    let request = format!("GET /v1/jobs HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    third.write_all(request.as_bytes()).expect("a request");
    let (got, took, closed) = read_until_closed(&mut third, Duration::from_secs(5));
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(closed && took < Duration::from_secs(2), "{took:?}");
    let lower = text.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 1\r\n"), "{text}");
    let body: Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).expect("a body")).expect("a JSON body");
    assert_problem(&body, StatusCode::SERVICE_UNAVAILABLE, "too_many_requests");
    // A client sees the same answer…
    let refused = api.get("/v1/jobs").await;
    assert!(header(&refused, "retry-after").is_some());
    problem(
        refused,
        StatusCode::SERVICE_UNAVAILABLE,
        "too_many_requests",
    )
    .await;
    // …and is served as soon as a slot is free.
    holders.pop();
    let released = Instant::now();
    loop {
        let answer = api.get("/v1/jobs").await;
        if answer.status() == StatusCode::OK {
            break;
        }
        assert!(
            released.elapsed() < Duration::from_secs(5),
            "still {} after a slot was freed",
            answer.status()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Opens `GET /v1/events` with `last` as `Last-Event-ID`, and reads it up to its opening.
async fn open_stream(api: &Api, last: Option<&str>) -> (reqwest::Response, String) {
    let mut request = api.request(Method::GET, "/v1/events");
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last);
    }
    let mut stream = request.send().await.expect("GET /v1/events");
    assert_eq!(stream.status(), StatusCode::OK);
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
            .await
            .expect("the opening within 5 s")
            .expect("a chunk")
            .expect("the stream is open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    (stream, text)
}

/// Reads a stream until `done` holds for the text so far, at most 15 s; the text.
async fn read_stream_until(stream: &mut reqwest::Response, done: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done(&text) {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("not within 15 s; it sent {text}"))
            .expect("a chunk")
            .unwrap_or_else(|| panic!("the stream ended; it sent {text}"));
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stream_opens_with_its_position_so_a_reconnect_before_any_event_misses_nothing() {
    let (ledger, _server, api) = quiet_server();
    let (stream, opening) = open_stream(&api, None).await;
    let start = opening
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no id in the opening {opening:?}"))
        .to_owned();
    // The client drops before any event; a job is submitted while it is away.
    drop(stream);
    ledger
        .run(&[
            "--owner",
            "alice",
            "submit",
            "--key",
            "while-away",
            "--intent",
            &intent("{}"),
        ])
        .ok();
    let (mut again, reopening) = open_stream(&api, Some(&start)).await;
    assert!(reopening.contains(&format!("id: {start}\n")), "{reopening}");
    let text = read_stream_until(&mut again, |t| t.contains("while-away")).await;
    assert!(text.contains("\"kind\":\"submitted\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revoked_token_ends_its_event_stream_and_its_wait_within_five_seconds() {
    let (ledger, server, alice) = quiet_server();
    let leaving = token_reply(&ledger, "alice");
    let departing = Api::new(&server, leaving["token"].as_str().expect("a token"));
    let job = job_id(
        &json(
            departing.submit("held", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );
    let (mut stream, _) = open_stream(&departing, None).await;
    // No worker: the job stays queued, and the wait would hold for its minute.
    let wait = {
        let departing = departing.clone();
        tokio::spawn(async move {
            let answer = departing.get(&format!("/v1/jobs/{job}?wait=60")).await;
            (answer.status(), Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!wait.is_finished());
    // Revoked by another process, as a person does it.
    ledger.run(&["token", "revoke", &common::id(&leaving)]).ok();
    let revoked = Instant::now();
    loop {
        let left = Duration::from_secs(5).saturating_sub(revoked.elapsed());
        match tokio::time::timeout(left, stream.chunk()).await {
            Ok(Ok(Some(_))) => continue,
            Ok(_) => break,
            Err(_) => panic!("the stream is still open 5 s after its token was revoked"),
        }
    }
    let (status, answered) = wait.await.expect("the wait");
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        answered.saturating_duration_since(revoked) < Duration::from_secs(5),
        "{:?}",
        answered.saturating_duration_since(revoked)
    );
    // The owner's other token streams on.
    let (_other, _) = open_stream(&alice, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_token_holds_at_most_a_quarter_of_the_connections_in_long_requests() {
    let ledger = Ledger::new();
    let server = Server::start(&ledger, &["--no-worker", "--max-connections", "8"]);
    let alice = Api::new(&server, &token(&ledger, "alice"));
    let bob = Api::new(&server, &token(&ledger, "bob"));
    let job = job_id(
        &json(
            alice.submit("queued", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );
    // A quarter of 8: two long requests.
    let (first, _) = open_stream(&alice, None).await;
    let (_second, _) = open_stream(&alice, None).await;
    let third = alice.get("/v1/events").await;
    assert!(header(&third, "retry-after").is_some());
    problem(third, StatusCode::TOO_MANY_REQUESTS, "too_many_requests").await;
    let waiting = alice.get(&format!("/v1/jobs/{job}?wait=5")).await;
    assert!(header(&waiting, "retry-after").is_some());
    problem(waiting, StatusCode::TOO_MANY_REQUESTS, "too_many_requests").await;
    // A plain read is not a long request, and another token has its own share.
    json(alice.get(&format!("/v1/jobs/{job}")).await, StatusCode::OK).await;
    json(bob.get("/v1/jobs").await, StatusCode::OK).await;
    let (_bobs, _) = open_stream(&bob, None).await;
    // A stream the client closes gives its place back.
    drop(first);
    let closed = Instant::now();
    loop {
        let answer = alice.get("/v1/events").await;
        if answer.status() == StatusCode::OK {
            break;
        }
        assert!(
            closed.elapsed() < Duration::from_secs(5),
            "still {} after a stream was closed",
            answer.status()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_whose_head_and_body_together_take_over_ten_seconds_is_dropped() {
    let (_ledger, server, api) = quiet_server();
    let addr = server.addr();
    let body = intent(r#"{"slow": true}"#);
    let head = post_head(
        &addr,
        &api.token,
        &format!("Content-Length: {}\r\n", body.len()),
    );
    let mut stream = TcpStream::connect(&addr).expect("connect");
    let mut writer = stream.try_clone().expect("a writer");
    let started = Instant::now();
    // The head over 6 s, then the body over 6 s more: each within 10 s, not both.
    let sender = std::thread::spawn(move || {
        for part in [head.as_bytes(), body.as_bytes()] {
            let piece = part.len().div_ceil(12);
            for chunk in part.chunks(piece) {
                std::thread::sleep(Duration::from_millis(500));
                if writer.write_all(chunk).is_err() {
                    return;
                }
            }
        }
    });
    let (got, _, closed) = read_until_closed(&mut stream, Duration::from_secs(20));
    let took = started.elapsed();
    let _ = sender.join();
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "after {took:?}: {text}"
    );
    assert!(closed, "still open after {took:?}");
    assert!(took < Duration::from_millis(11_500), "{took:?}");
    assert!(all_job_ids(&api, "").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_error_of_the_http_layer_is_the_problem_the_document_describes() {
    let (_ledger, server, api) = quiet_server();
    let document = json(api.get("/v1/openapi.json").await, StatusCode::OK).await;
    let job = job_id(&json(api.submit("one", &intent("{}")).await, StatusCode::CREATED).await);
    let mut titles: HashMap<String, HashSet<String>> = HashMap::new();
    // Each refusal: the operation it reached, its status and code, and the field it names.
    let mut check = |operation: (&str, &str), body: &Value, field: &str| {
        let status = body["status"].as_u64().expect("a status").to_string();
        let (method, path) = operation;
        assert!(
            document["paths"][path][method]["responses"][&status].is_object(),
            "{method} {path} answered {status}, which its operation does not list"
        );
        assert_eq!(body["details"]["field"], field, "{body}");
        titles
            .entry(body["code"].as_str().expect("a code").to_owned())
            .or_default()
            .insert(body["title"].as_str().expect("a title").to_owned());
    };

    let method = api
        .request(Method::DELETE, "/v1/jobs")
        .send()
        .await
        .expect("sent");
    let body = problem(method, StatusCode::METHOD_NOT_ALLOWED, "invalid_input").await;
    assert_eq!(body["details"]["field"], "method", "{body}");
    let media = api
        .request(Method::POST, "/v1/jobs")
        .header("Idempotency-Key", "text")
        .header("Content-Type", "text/plain")
        .body(intent("{}"))
        .send()
        .await
        .expect("sent");
    let body = problem(media, StatusCode::UNSUPPORTED_MEDIA_TYPE, "invalid_input").await;
    check(("post", "/v1/jobs"), &body, "Content-Type");
    let twice = api.get("/v1/jobs?limit=1&limit=2").await;
    let body = problem(twice, StatusCode::BAD_REQUEST, "invalid_input").await;
    check(("get", "/v1/jobs"), &body, "limit");
    // Cancel reads no body, yet one announced over 1 MiB is refused before it is read.
    let addr = server.addr();
    let mut stream = TcpStream::connect(&addr).expect("connect");
    let head = format!(
        "POST /v1/jobs/{job}/cancel HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n",
        api.token
    );
    stream.write_all(head.as_bytes()).expect("the head");
    let (got, _, _) = read_until_closed(&mut stream, Duration::from_secs(5));
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    let body: Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).expect("a body")).expect("JSON");
    assert_problem(&body, StatusCode::PAYLOAD_TOO_LARGE, "invalid_input");
    check(("post", "/v1/jobs/{id}/cancel"), &body, "body");
    let bad_id = api
        .request(Method::POST, "/v1/jobs/%FF/cancel")
        .send()
        .await
        .expect("sent");
    let body = problem(bad_id, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert!(body["details"]["field"].is_string(), "{body}");
    check(
        ("post", "/v1/jobs/{id}/cancel"),
        &body,
        body["details"]["field"].as_str().expect("a field"),
    );

    // 120 headers: more than the server reads, answered as a problem all the same.
    let mut stream = TcpStream::connect(&addr).expect("connect");
    let mut head = format!(
        "GET /v1/jobs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n",
        api.token
    );
    for n in 0..120 {
        head.push_str(&format!("X-Extra-{n}: {n}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("the head");
    let (got, _, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
    assert!(closed, "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("content-type: application/problem+json"),
        "{text}"
    );
    let body: Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).expect("a body")).expect("JSON");
    assert_problem(
        &body,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "invalid_input",
    );
    check(("get", "/v1/jobs"), &body, "headers");

    // A type's title is the same whatever the status of its occurrence.
    for (code, seen) in &titles {
        assert_eq!(seen.len(), 1, "{code} has titles {seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_of_large_jobs_ends_near_four_mebibytes_and_next_pages_on() {
    let (_ledger, _server, api) = quiet_server();
    let pad = "x".repeat(700_000);
    let mut made = HashSet::new();
    for n in 0..12 {
        let reply = json(
            api.submit(
                &format!("large-{n}"),
                &intent(&format!(r#"{{"n": {n}, "pad": "{pad}"}}"#)),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
        made.insert(job_id(&reply));
    }
    let first = api.get("/v1/jobs?limit=1000").await;
    assert_eq!(first.status(), StatusCode::OK);
    let bytes = first.bytes().await.expect("a body");
    assert!(bytes.len() < 5 * MIB, "{} bytes in one page", bytes.len());
    let page: Value = serde_json::from_slice(&bytes).expect("JSON");
    let held = page["jobs"].as_array().expect("jobs").len();
    assert!((1..12).contains(&held), "{held} jobs in the first page");
    assert!(page["next"].is_string(), "no next after {held} of 12 jobs");
    // Paging on gives every job once.
    let listed = all_job_ids(&api, "limit=1000").await;
    assert_eq!(listed.len(), 12);
    assert_eq!(listed.into_iter().collect::<HashSet<_>>(), made);
}

/// A retry starts a paid attempt, so it is a keyed POST (SPEC §15): repeated after a lost
/// answer, or by impatient clients at once, it starts one attempt and every answer names it,
/// with `Idempotent-Replayed: true` on the repetitions, also after that attempt has ended.
/// Another body under the key is 422, and no key is 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_repeated_under_its_key_starts_one_attempt_and_answers_it_again() {
    let (_ledger, _server, api) = quiet_server();
    let job = job_id(&json(api.submit("paid", &intent("{}")).await, StatusCode::CREATED).await);
    let path = format!("/v1/jobs/{job}/retry");

    // Eight clients at once with one key: one attempt, named by every answer.
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (api, path) = (api.clone(), path.clone());
        clients.spawn(async move { api.post_keyed(&path, "retry-paid-1", &json!({})).await });
    }
    let mut replayed = 0;
    let mut attempts = std::collections::HashSet::new();
    while let Some(answer) = clients.join_next().await {
        let answer = answer.expect("a client");
        let again = answer.headers().get("idempotent-replayed").is_some();
        let body = json(answer, StatusCode::OK).await;
        replayed += usize::from(again);
        attempts.insert(common::id(&body["attempt"]));
    }
    assert_eq!(attempts.len(), 1, "one attempt: {attempts:?}");
    assert_eq!(replayed, 7, "every answer but the first is a replay");
    let first = attempts.into_iter().next().expect("the attempt");
    let detail = json(api.get(&format!("/v1/jobs/{job}")).await, StatusCode::OK).await;
    assert_eq!(
        detail["attempts"].as_array().map(Vec::len),
        Some(1),
        "{detail}"
    );

    // Another body under the key, and no key at all, are refused and start nothing.
    let conflict = problem(
        api.post_keyed(&path, "retry-paid-1", &json!({ "provider": "fallback" }))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_conflict",
    )
    .await;
    assert_eq!(
        conflict["details"]["existing_job_id"],
        job.as_str(),
        "{conflict}"
    );
    let unkeyed = problem(
        api.post(&path, &json!({})).await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    assert_eq!(unkeyed["details"]["field"], "Idempotency-Key", "{unkeyed}");

    // The attempt ends; the key still answers it, and still starts nothing.
    json(
        api.post(
            &format!("/v1/attempts/{first}/resolve"),
            &json!({ "as": "abandoned" }),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let late = api.post_keyed(&path, "retry-paid-1", &json!({})).await;
    assert_eq!(
        late.headers()
            .get("idempotent-replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    let late = json(late, StatusCode::OK).await;
    assert_eq!(common::id(&late["attempt"]), first);
    assert_eq!(late["attempt"]["state"], "abandoned", "{late}");
    let detail = json(api.get(&format!("/v1/jobs/{job}")).await, StatusCode::OK).await;
    assert_eq!(
        detail["attempts"].as_array().map(Vec::len),
        Some(1),
        "{detail}"
    );

    // A new key is a new retry.
    let next = json(
        api.post_keyed(&path, "retry-paid-2", &json!({})).await,
        StatusCode::OK,
    )
    .await;
    assert_ne!(common::id(&next["attempt"]), first);
    assert_eq!(next["attempt"]["number"], 2, "{next}");
}

/// The field of a 400 `invalid_input`, after checking it is one and says so about NUL.
async fn nul_refused(response: reqwest::Response) -> String {
    let body = problem(response, StatusCode::BAD_REQUEST, "invalid_input").await;
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("NUL"), "{body}");
    body["details"]["field"]
        .as_str()
        .unwrap_or_else(|| panic!("no field in {body}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_nul_anywhere_is_invalid_input_naming_the_field_on_both_backends() {
    let (ledger, _server, api) = quiet_server();
    let job = job_id(
        &json(
            api.submit("clean", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );
    let attempt = common::id(
        &json(
            api.post_keyed(&format!("/v1/jobs/{job}/retry"), "nul-first", &json!({}))
                .await,
            StatusCode::OK,
        )
        .await["attempt"],
    );

    let intent_with = |input: Value| json!({ "route": ["primary"], "input": input }).to_string();
    let submitted = api
        .submit("nul-text", &intent_with(json!({ "text": "a\u{0}b" })))
        .await;
    assert_eq!(nul_refused(submitted).await, "intent.input.text");
    let submitted = api
        .submit("nul-key", &intent_with(json!({ "a\u{0}": 1 })))
        .await;
    assert_eq!(nul_refused(submitted).await, "intent.input");
    assert_eq!(nul_refused(api.get("/v1/jobs/%00").await).await, "job_id");
    assert_eq!(
        nul_refused(api.get(&format!("/v1/jobs/{job}%00")).await).await,
        "job_id"
    );
    assert_eq!(
        nul_refused(api.get("/v1/jobs?search=a%00").await).await,
        "search"
    );
    assert_eq!(
        nul_refused(api.get("/v1/jobs?provider=%00").await).await,
        "provider"
    );
    assert_eq!(
        nul_refused(api.get(&format!("/v1/jobs?after={job}%00")).await).await,
        "after"
    );
    let cancelled = api.post("/v1/jobs/%00/cancel", &json!({})).await;
    assert_eq!(nul_refused(cancelled).await, "job_id");
    let retried = api
        .post_keyed(
            &format!("/v1/jobs/{job}/retry"),
            "nul-provider",
            &json!({ "provider": "x\u{0}" }),
        )
        .await;
    assert_eq!(nul_refused(retried).await, "provider");
    let resolve = format!("/v1/attempts/{attempt}/resolve");
    let noted = api
        .post(&resolve, &json!({ "as": "failed", "note": "did\u{0}not" }))
        .await;
    assert_eq!(nul_refused(noted).await, "note");
    let result = api
        .post(
            &resolve,
            &json!({ "as": "succeeded", "result": { "answer": "\u{0}" } }),
        )
        .await;
    assert_eq!(nul_refused(result).await, "result.answer");

    // Nothing changed: the one job, its one attempt still pending, and no other job.
    let detail = json(api.get(&format!("/v1/jobs/{job}")).await, StatusCode::OK).await;
    assert_eq!(detail["attempts"][0]["state"], "pending", "{detail}");
    assert_eq!(detail["attempts"].as_array().map(Vec::len), Some(1));
    assert_eq!(all_job_ids(&api, "limit=10").await, [job]);
    drop(ledger);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cursor_in_upper_case_pages_on() {
    let (_ledger, _server, api) = quiet_server();
    for n in 0..5 {
        json(
            api.submit(&format!("page-{n}"), &intent(&format!("{{\"n\": {n}}}")))
                .await,
            StatusCode::CREATED,
        )
        .await;
    }
    let ids = |page: &Value| -> Vec<String> {
        page["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .map(common::id)
            .collect()
    };
    let first = json(api.get("/v1/jobs?limit=2").await, StatusCode::OK).await;
    let next = first["next"].as_str().expect("a next page").to_owned();
    let second = json(
        api.get(&format!("/v1/jobs?limit=2&after={next}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(ids(&second).len(), 2, "{second}");
    // Each form the UUID parser reads, as a client may give the cursor back (URL-encoded).
    for form in [
        next.to_ascii_uppercase(),
        format!("urn:uuid:{next}"),
        format!("%7B{next}%7D"),
        next.replace('-', ""),
    ] {
        let again = json(
            api.get(&format!("/v1/jobs?limit=2&after={form}")).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(ids(&again), ids(&second), "{form}: {again}");
        assert_eq!(again["next"], second["next"], "{form}");
    }
    // A job by its id in upper case, and by its URN.
    let id = ids(&first)[0].clone();
    for form in [id.to_ascii_uppercase(), format!("urn:uuid:{id}")] {
        let detail = json(api.get(&format!("/v1/jobs/{form}")).await, StatusCode::OK).await;
        assert_eq!(detail["job"]["id"], id.as_str(), "{form}");
    }
    let refused = problem(
        api.get("/v1/jobs?after=urn:uuid:nope").await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    assert_eq!(refused["details"]["field"], "after", "{refused}");
    problem(
        api.get("/v1/jobs/urn:uuid:nope").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

/// A SQLite ledger held busy by another process past the busy timeout (30 s): the POST is a 503
/// with `Retry-After` whose detail names the file and what to check, in onejob's words; sent
/// again once the file is free, it makes its job. (A PostgreSQL ledger whose server is down is
/// `outage.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn storage_is_503_with_retry_after_and_names_the_ledger() {
    if onejob_testkit::sqlite_only("a SQLite file held busy by another process") {
        return;
    }
    let (ledger, _server, api) = quiet_server();
    json(
        api.submit("before", &intent("{}")).await,
        StatusCode::CREATED,
    )
    .await;

    let mut holder = onejob_testkit::fixtures::hold_sqlite_file(std::path::Path::new(&ledger.db));
    let during = api.submit("during", &intent("{\"n\": 1}")).await;
    let retry_after = header(&during, "retry-after");
    let body = problem(during, StatusCode::SERVICE_UNAVAILABLE, "storage").await;
    assert_eq!(body["details"]["kind"], "busy", "{body}");
    let seconds: u32 = retry_after
        .unwrap_or_else(|| panic!("no Retry-After: {body}"))
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&seconds), "{seconds}");
    let detail = body["detail"].as_str().expect("a detail");
    assert!(
        detail.starts_with(&format!("the ledger at {} is busy", ledger.db)),
        "names the ledger: {detail}"
    );
    assert!(
        detail.contains("Check for another onejob process"),
        "{detail}"
    );
    for driver in [
        "database is locked",
        "error returned from database",
        "BEGIN",
    ] {
        assert!(!detail.contains(driver), "{detail}");
    }

    drop(holder.stdin.take());
    holder.wait().expect("the holder ends");
    let made = json(
        api.submit("during", &intent("{\"n\": 1}")).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(made["replayed"], false, "{made}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_is_known_of_an_unknown_attempt_is_the_same_over_http_as_on_the_command_line() {
    const KEY_VAR: &str = "ONEJOB_TEST_SERVE_EVIDENCE_KEY";
    const KEY: &str = "sk-serve-evidence-Hq93";
    // The server's executor reads the key from its environment, inherited from this test.
    std::env::set_var(KEY_VAR, KEY);
    let ledger = Ledger::new();
    let failing = onejob_testkit::RawServer::start(|_| {
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\nx-request-id: req-500\r\n\
set-cookie: session=cookie-5ecret\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy"
            .to_vec()
    })
    .expect("a loopback provider");
    add_http_provider(
        &ledger,
        "failing",
        &format!("{}/work?region=eu", failing.url),
        2_000,
        5_000,
        json!({ "api_key_env": KEY_VAR }),
    );
    let server = Server::start(&ledger, &[]);
    let api = Api::new(&server, &token(&ledger, "alice"));
    let job = job_id(
        &json(
            api.submit("evidence-1", &intent_for("failing", json!({ "amount": 7 })))
                .await,
            StatusCode::CREATED,
        )
        .await,
    );
    let response = api.get(&format!("/v1/jobs/{job}?wait=20")).await;
    let text = response.text().await.expect("a body");
    assert!(!text.contains(KEY), "{text}");
    let over_http: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(over_http["job"]["status"], "unknown", "{over_http}");
    let known = &over_http["known"][0];
    assert_eq!(known["rule"]["code"], "http_5xx_without_key", "{known}");
    assert_eq!(
        known["sent"]["url"],
        format!("{}/work", failing.url),
        "{known}"
    );
    assert!(
        known["sent"]["headers"].get("authorization").is_none(),
        "{known}"
    );
    assert_eq!(known["received"]["status"], 500, "{known}");
    assert_eq!(known["received"]["bytes"], 4, "{known}");
    assert_eq!(
        known["received"]["headers"]["x-request-id"], "req-500",
        "{known}"
    );
    assert!(
        known["received"]["headers"].get("set-cookie").is_none(),
        "{known}"
    );

    let run = ledger.run(&["--owner", "alice", "job", &job]);
    assert!(!run.stdout.contains(KEY), "{}", run.stdout);
    let on_the_command_line = run.ok();
    assert_eq!(on_the_command_line["known"], over_http["known"]);
    assert_eq!(failing.requests().len(), 1, "sent once, never again");
}

/// `POST /v1/bulk` (SPEC §16): fixes the owner's matching jobs and answers 202 at once while
/// the server decides them; `GET /v1/bulk/{id}` shows the progress; the same key again is 200
/// with `Idempotent-Replayed: true` and changes nothing twice; another body under it is 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bulk_cancel_answers_at_once_shows_its_progress_and_is_keyed() {
    let (ledger, server, api) = quiet_server();
    let bob = Api::new(&server, &token(&ledger, "bob"));
    let mut mine = Vec::new();
    for i in 0..3 {
        let key = format!("bulk-{i}");
        mine.push(job_id(
            &json(api.submit(&key, &intent("{}")).await, StatusCode::CREATED).await,
        ));
    }
    let bobs = job_id(
        &json(
            bob.submit("bulk-0", &intent("{}")).await,
            StatusCode::CREATED,
        )
        .await,
    );
    let cancel = json!({ "action": "cancel", "filter": { "status": "queued" } });

    let unkeyed = api.post("/v1/bulk", &cancel).await;
    problem(unkeyed, StatusCode::BAD_REQUEST, "invalid_input").await;
    let dry = json!({ "action": "cancel", "filter": { "status": "queued" }, "dry_run": true });
    let counted = json(
        api.post_keyed("/v1/bulk", "count", &dry).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(counted["bulk"]["matched"], 3, "{counted}");
    assert_eq!(counted["bulk"]["id"], Value::Null);

    let started = api.post_keyed("/v1/bulk", "tidy-up", &cancel).await;
    let location = header(&started, "location").expect("Location");
    let started = json(started, StatusCode::ACCEPTED).await;
    let op = common::id(&started["bulk"]);
    assert_eq!(location, format!("/v1/bulk/{op}"));
    assert_eq!(started["bulk"]["matched"], 3, "{started}");
    assert_eq!(started["replayed"], false);

    let mut shown = Value::Null;
    for _ in 0..100 {
        shown = json(api.get(&location).await, StatusCode::OK).await;
        if shown["bulk"]["done"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(shown["bulk"]["done"], true, "{shown}");
    assert_eq!(shown["bulk"]["changed"], 3, "{shown}");
    assert_eq!(shown["bulk"]["skipped"], json!([]));
    for job in &mine {
        let detail = json(api.get(&format!("/v1/jobs/{job}")).await, StatusCode::OK).await;
        assert_eq!(detail["job"]["status"], "cancelled");
        let named: Vec<_> = detail["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["detail"]["bulk"] == op.as_str())
            .map(|e| e["kind"].clone())
            .collect();
        assert_eq!(named, [json!("job_cancelled")], "{detail}");
    }

    let again = api.post_keyed("/v1/bulk", "tidy-up", &cancel).await;
    assert_eq!(
        header(&again, "idempotent-replayed").as_deref(),
        Some("true")
    );
    let again = json(again, StatusCode::OK).await;
    assert_eq!(again["bulk"], shown["bulk"]);
    let other = json!({ "action": "cancel", "filter": { "search": "bulk-1" } });
    let conflict = problem(
        api.post_keyed("/v1/bulk", "tidy-up", &other).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_conflict",
    )
    .await;
    assert_eq!(conflict["details"]["existing_job_id"], op.as_str());
    let no_verdict = problem(
        api.post_keyed("/v1/bulk", "no-verdict", &json!({ "action": "resolve" }))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    assert_eq!(no_verdict["details"]["field"], "as");

    // Another owner's operation is not found, and their job was never in the set.
    problem(bob.get(&location).await, StatusCode::NOT_FOUND, "not_found").await;
    let theirs = json(bob.get(&format!("/v1/jobs/{bobs}")).await, StatusCode::OK).await;
    assert_eq!(theirs["job"]["status"], "queued");
}
