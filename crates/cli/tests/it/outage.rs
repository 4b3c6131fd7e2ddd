//! `onejob serve` through an outage of its PostgreSQL ledger (SPEC §14, §15): while the server
//! is down every request is answered at once with a `storage` problem that says the ledger is
//! unreachable, the process stays up, and once the server is back requests succeed and event
//! streams resume without a gap, with no restart; a `?wait` ends when its job does even if the
//! news came while the server could not listen. Each test runs a cluster of its own, which it
//! stops, crashes or shuts the server out of, under a running `onejob serve`.

use crate::common;

use std::time::{Duration, Instant};

use common::processes::{add_http_provider, intent_for, SandboxProcess};
use common::serve::{job_id, json, problem, token, Api, Server};
use common::sse::{Sent, Stream};
use common::Ledger;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};

/// A password in the ledger's URL: the test cluster trusts loopback, so it is never checked,
/// but it must never be shown.
const PASSWORD: &str = "outage-s3cret";

/// How long an answer may take while the ledger is down: the pool waits 5 s for a connection.
const PROMPTLY: Duration = Duration::from_secs(8);

/// A ledger on a cluster of its own, with a sandbox provider `paid`. The ledger and the
/// sandbox drop before the cluster.
struct Outage {
    sandbox: SandboxProcess,
    ledger: Ledger,
    cluster: onejob_testkit::Postgres,
    /// The URL as a person would show it: the password replaced.
    shown: String,
}

impl Outage {
    fn start(database: &str) -> Outage {
        Outage::on(
            onejob_testkit::Postgres::start_for_tests().expect("a PostgreSQL cluster"),
            database,
        )
    }

    /// On a cluster whose commits survive a crash, for a test that crashes it.
    fn durable(database: &str) -> Outage {
        Outage::on(
            onejob_testkit::Postgres::start().expect("a PostgreSQL cluster"),
            database,
        )
    }

    fn on(cluster: onejob_testkit::Postgres, database: &str) -> Outage {
        let url = cluster.database(database).expect("a database");
        let (scheme, rest) = url.split_once("://").expect("a URL");
        let (user, host) = rest.split_once('@').expect("a user");
        let ledger = Ledger::at(&format!("{scheme}://{user}:{PASSWORD}@{host}"));
        let shown = format!("{scheme}://{user}:***@{host}");
        let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 50, "jitter_ms": 0 }));
        add_http_provider(&ledger, "paid", &sandbox.url, 5_000, 10_000, json!({}));
        Outage {
            sandbox,
            ledger,
            cluster,
            shown,
        }
    }

    fn stop(&self) {
        self.cluster.stop().expect("the cluster stops");
    }

    fn start_again(&self) {
        self.cluster
            .start_again()
            .expect("the cluster starts again");
    }
}

fn order(n: &str) -> String {
    intent_for("paid", json!({ "order": n }))
}

fn header(response: &Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().expect("an ASCII header").to_owned())
}

/// The answer to a request sent while the ledger is down: a prompt `storage` problem with
/// `Retry-After`, saying in words which ledger is unreachable and what to check, without its
/// password.
async fn unreachable(what: &str, outage: &Outage, sent: reqwest::RequestBuilder) -> Value {
    let started = Instant::now();
    let response = sent.send().await.unwrap_or_else(|e| panic!("{what}: {e}"));
    let took = started.elapsed();
    assert!(took <= PROMPTLY, "{what} took {took:?}");
    let retry_after = header(&response, "retry-after");
    let body = problem(response, StatusCode::SERVICE_UNAVAILABLE, "storage").await;
    assert_eq!(body["details"]["kind"], "unreachable", "{what}: {body}");
    let seconds: u32 = retry_after
        .as_deref()
        .unwrap_or_else(|| panic!("{what}: no Retry-After: {body}"))
        .parse()
        .unwrap_or_else(|e| panic!("{what}: Retry-After is not seconds ({e}): {body}"));
    assert!((1..=60).contains(&seconds), "{what}: {seconds}");
    let detail = body["detail"].as_str().expect("a detail");
    assert!(
        detail.contains(&format!("the ledger at {} is unreachable", outage.shown)),
        "{what}: {detail}"
    );
    assert!(
        detail.contains("Check that its PostgreSQL server is running"),
        "{what}: {detail}"
    );
    assert!(!body.to_string().contains(PASSWORD), "{what}: {body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serve_answers_storage_with_retry_after_while_its_ledger_is_down_and_recovers() {
    let outage = Outage::start("serve_outage");
    let ledger = &outage.ledger;
    let mut server = Server::start(ledger, &[]);
    let token = token(ledger, "alice");
    let api = Api::new(&server, &token);

    let before = json(
        api.submit("before", &order("before")).await,
        StatusCode::CREATED,
    )
    .await;
    let before_id = job_id(&before);
    // A job whose attempt is in flight when the ledger goes down.
    let slow = SandboxProcess::start(ledger, json!({ "latency_ms": 2500, "jitter_ms": 0 }));
    add_http_provider(ledger, "slow", &slow.url, 10_000, 20_000, json!({}));
    let across = json(
        api.submit("across", &intent_for("slow", json!({ "order": "across" })))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let across_id = job_id(&across);
    in_flight(&api, &across_id).await;

    outage.stop();
    // Every kind of request, at once, as clients keep sending them.
    let stranger = Api {
        token: "oj_not-a-token-of-this-ledger".to_owned(),
        ..api.clone()
    };
    let down = |what, sent| unreachable(what, &outage, sent);
    tokio::join!(
        down(
            "POST /v1/jobs",
            api.request(Method::POST, "/v1/jobs")
                .header("Idempotency-Key", "during")
                .header("Content-Type", "application/json")
                .body(order("during")),
        ),
        down(
            "GET /v1/jobs/{id}",
            api.request(Method::GET, &format!("/v1/jobs/{before_id}")),
        ),
        down("GET /v1/jobs", api.request(Method::GET, "/v1/jobs")),
        down(
            "POST /v1/jobs/{id}/cancel",
            api.request(Method::POST, &format!("/v1/jobs/{before_id}/cancel")),
        ),
        down("GET /v1/events", api.request(Method::GET, "/v1/events")),
        // The token cannot be checked either: that is the ledger's failure, never a 401.
        down(
            "an unknown token",
            stranger.request(Method::GET, "/v1/jobs")
        ),
    );
    assert!(
        server.process.is_running(),
        "the server exited while its ledger was down"
    );
    // A request without any token is still refused as such: no ledger is needed to say so.
    let anonymous = api
        .client
        .get(server.at("/v1/jobs"))
        .send()
        .await
        .expect("GET");
    problem(anonymous, StatusCode::UNAUTHORIZED, "unauthorized").await;

    outage.start_again();
    // A wait on the job in flight, from the moment the cluster is back: it ends when the job
    // does, though the news of it may come while the server is not yet listening again.
    let waiting = tokio::spawn(settled_promptly(api.clone(), across_id.clone()));
    // No restart of the server: the first request after the cluster is back is served.
    let after = api.submit("after", &order("after")).await;
    let after = json(after, StatusCode::CREATED).await;
    assert_eq!(after["replayed"], false, "{after}");
    let again = api.submit("after", &order("after")).await;
    assert_eq!(
        header(&again, "idempotent-replayed").as_deref(),
        Some("true")
    );
    let again = json(again, StatusCode::OK).await;
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(job_id(&again), job_id(&after));
    // The job acknowledged before the outage is still the key's.
    let before_again = json(api.submit("before", &order("before")).await, StatusCode::OK).await;
    assert_eq!(job_id(&before_again), before_id);
    // Nothing was made of the refused POST.
    let during = json(api.get("/v1/jobs?search=during").await, StatusCode::OK).await;
    assert_eq!(during["jobs"], json!([]), "{during}");

    // The executor beside it resumed too: every job runs, each sent once.
    waiting.await.expect("the wait");
    for id in [before_id, job_id(&after)] {
        settled_promptly(api.clone(), id).await;
    }
    assert_eq!(outage.sandbox.log().len(), 2, "{:?}", outage.sandbox.log());
    assert_eq!(slow.log().len(), 1, "{:?}", slow.log());

    let stopped = server.terminate(Duration::from_secs(30));
    assert_eq!(stopped.code, 0, "{stopped:?}");
}

/// `GET /v1/jobs/{id}?wait=30`, which must answer that the job succeeded within 10 s.
async fn settled_promptly(api: Api, id: String) -> Value {
    let asked = Instant::now();
    let done = json(
        api.get(&format!("/v1/jobs/{id}?wait=30")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["job"]["status"], "succeeded", "{done}");
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "the wait took {took:?}: {done}"
    );
    done
}

/// Waits until the job's attempt has been sent and not yet answered.
async fn in_flight(api: &Api, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let detail = json(api.get(&format!("/v1/jobs/{id}")).await, StatusCode::OK).await;
        if detail["attempts"][0]["state"] == "in_flight" {
            return;
        }
        assert!(Instant::now() < deadline, "never in flight: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A feed position of the PostgreSQL ledger, `<transaction>-<id>`, as numbers that order.
fn position(sent: &Sent) -> (u64, u64) {
    let (tx, id) = sent.id.split_once('-').expect("a PostgreSQL position");
    (
        tx.parse().expect("a transaction"),
        id.parse().expect("an id"),
    )
}

/// Submits each key over HTTP (201), then waits for its job to succeed; the jobs' ids.
async fn submitted_and_settled(api: &Api, keys: &[&str]) -> Vec<String> {
    let mut ids = Vec::new();
    for key in keys {
        let reply = json(api.submit(key, &order(key)).await, StatusCode::CREATED).await;
        ids.push(job_id(&reply));
    }
    for id in &ids {
        settled_promptly(api.clone(), id.clone()).await;
    }
    ids
}

/// Each job's history as `GET /v1/jobs/{id}` shows it.
async fn histories(api: &Api, ids: &[String]) -> Vec<(String, Vec<Value>)> {
    let mut all = Vec::new();
    for id in ids {
        let detail = json(api.get(&format!("/v1/jobs/{id}")).await, StatusCode::OK).await;
        let events = detail["events"].as_array().expect("events").clone();
        all.push((id.clone(), events));
    }
    all
}

/// Blocks this test's thread on a stream without holding up the runtime's other tasks.
fn blocking<T>(read: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(read)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn event_streams_resume_without_a_gap_after_a_ledger_outage() {
    let mut outage = Outage::durable("events_outage");
    let ledger = &outage.ledger;
    let mut server = Server::start(ledger, &[]);
    let token = token(ledger, "alice");
    let api = Api::new(&server, &token);
    // One client holds its stream open across the outage; another leaves before it and
    // comes back after it with the last id it received.
    let held = Stream::open(&server.url, &token, None);
    let left = Stream::open(&server.url, &token, None);

    let before = submitted_and_settled(&api, &["before-1", "before-2"]).await;
    let before_count: usize = histories(&api, &before)
        .await
        .iter()
        .map(|(_, events)| events.len())
        .sum();
    let held_before = blocking(|| held.take(before_count, Duration::from_secs(20)));
    let left_saw = blocking(|| left.take(3, Duration::from_secs(20)));
    let resume_at = left_saw.last().expect("three events").id.clone();
    drop(left);

    outage.stop();
    // None can be submitted while it is down; the streams' reads of the feed fail meanwhile.
    let during = api.submit("during", &order("during")).await;
    problem(during, StatusCode::SERVICE_UNAVAILABLE, "storage").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    outage.start_again();

    // In flight across a stop, and across a crash.
    let slow = SandboxProcess::start(ledger, json!({ "latency_ms": 2500, "jitter_ms": 0 }));
    add_http_provider(ledger, "slow", &slow.url, 10_000, 20_000, json!({}));
    let mut across = Vec::new();
    let mut consumed: Vec<Sent> = Vec::new();
    for (key, crash) in [("across-stop", false), ("across-crash", true)] {
        let reply = json(
            api.submit(key, &intent_for("slow", json!({ "key": key })))
                .await,
            StatusCode::CREATED,
        )
        .await;
        let id = job_id(&reply);
        let sent: Vec<Sent> = blocking(|| {
            held.until_within(Duration::from_secs(30), |s| {
                s.data["job_id"] == id.as_str() && s.data["kind"] == "attempt_sent"
            })
        });
        consumed.extend(sent);
        if crash {
            outage.cluster.restart_immediately().expect("restarted");
        } else {
            outage.stop();
            tokio::time::sleep(Duration::from_secs(4)).await;
            outage.start_again();
        }
        settled_promptly(api.clone(), id.clone()).await;
        across.push(id);
    }

    let after = submitted_and_settled(&api, &["after-1", "after-2"]).await;
    let jobs: Vec<String> = before
        .iter()
        .chain(&across)
        .chain(&after)
        .cloned()
        .collect();
    let truth = histories(&api, &jobs).await;
    let total: usize = truth.iter().map(|(_, events)| events.len()).sum();

    // The stream held open: every event of every job, in feed order, none twice, none more.
    let held_after = blocking(|| {
        held.take(
            total - before_count - consumed.len(),
            Duration::from_secs(30),
        )
    });
    let extra = blocking(|| held.more_within(Duration::from_secs(2)));
    assert_eq!(extra, [], "events sent twice or made up");
    let streamed: Vec<Sent> = held_before
        .into_iter()
        .chain(consumed)
        .chain(held_after)
        .collect();
    let positions: Vec<(u64, u64)> = streamed.iter().map(position).collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "out of feed order or twice: {positions:?}"
    );
    for (job, events) in &truth {
        let of_job: Vec<&Value> = streamed
            .iter()
            .filter(|s| s.data["job_id"] == job.as_str())
            .map(|s| &s.data)
            .collect();
        let expected: Vec<&Value> = events.iter().collect();
        assert_eq!(of_job, expected, "job {job}'s history as streamed");
    }
    // The client that left: exactly what it missed, from the id it last received.
    let back = Stream::open(&server.url, &token, Some(&resume_at));
    let missed = blocking(|| back.take(total - 3, Duration::from_secs(20)));
    let extra = blocking(|| back.more_within(Duration::from_secs(2)));
    assert_eq!(extra, [], "events sent twice or made up");
    assert_eq!(left_saw[..], streamed[..3], "the two streams began alike");
    assert_eq!(missed[..], streamed[3..], "exactly what it missed");

    drop((held, back));
    let stopped = server.terminate(Duration::from_secs(30));
    assert_eq!(stopped.code, 0, "{stopped:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_ends_when_its_job_does_though_the_news_came_while_the_server_could_not_listen() {
    let cluster = onejob_testkit::Postgres::start_for_tests().expect("a PostgreSQL cluster");
    let url = cluster.database("wait_outage").expect("a database");
    // The server logs in as a role of its own, so the ledger can refuse it alone while
    // another host (this test, as the cluster's owner) goes on writing.
    cluster
        .sql("wait_outage", "CREATE ROLE server SUPERUSER LOGIN")
        .expect("a role");
    let admin = Ledger::at(&url);
    admin
        .run(&["provider", "add", "--json", common::PRIMARY])
        .ok();
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let host = rest.split_once('@').expect("a user").1;
    let served = Ledger::at(&format!("{scheme}://server@{host}"));
    let mut server = Server::start(&served, &["--no-worker"]);
    let api = Api::new(&server, &token(&admin, "alice"));
    let job = json(
        api.submit("k", &common::intent(r#"{"n":1}"#)).await,
        StatusCode::CREATED,
    )
    .await;
    let id = job_id(&job);

    let asked = Instant::now();
    let waiting = tokio::spawn({
        let api = api.clone();
        let id = id.clone();
        async move {
            let answer = api.get(&format!("/v1/jobs/{id}?wait=30")).await;
            json(answer, StatusCode::OK).await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The server's connections are cut and it may not log in again for a while: its LISTEN
    // connection is down when the job is cancelled by another host.
    cluster
        .sql(
            "wait_outage",
            "ALTER ROLE server NOLOGIN; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'server'",
        )
        .expect("the server is shut out");
    tokio::time::sleep(Duration::from_secs(2)).await;
    admin.run(&["--owner", "alice", "cancel", &id]).ok();
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster
        .sql("wait_outage", "ALTER ROLE server LOGIN")
        .expect("the server is let in again");

    let done = waiting.await.expect("the wait");
    let took = asked.elapsed();
    assert_eq!(done["job"]["status"], "cancelled", "{done}");
    assert!(took < Duration::from_secs(10), "the wait took {took:?}");
    let stopped = server.terminate(Duration::from_secs(30));
    assert_eq!(stopped.code, 0, "{stopped:?}");
}
