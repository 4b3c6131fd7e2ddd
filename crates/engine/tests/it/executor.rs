//! The executor against real HTTP servers on 127.0.0.1: timeouts are unknown, races are won
//! by the first answer to commit, every failure class of SPEC §6, and reconciliation.

use crate::common;

use std::time::Duration;

use common::{
    add_provider, kinds, quick, sandbox, start, submit_intent, until, Ledger, Sql, OWNER,
};
use onejob_engine::executor::{Executor, ExecutorOptions, Reconciled};
use onejob_engine::sandbox::Dials;
use onejob_engine::testing::ExecutorSteps as _;
use onejob_engine::{AttemptState, Engine, Error, JobDetail, JobStatus, Resolution, Verdict};
use onejob_testkit::RawServer;
use serde_json::json;

/// Configures an `http` provider at `url`.
async fn provider(engine: &Engine, name: &str, url: &str, soft_ms: u64, honours_key: bool) {
    provider_until(engine, name, url, soft_ms, 10_000, honours_key).await;
}

/// [`provider`] with a hard deadline of `hard_ms`.
async fn provider_until(
    engine: &Engine,
    name: &str,
    url: &str,
    soft_ms: u64,
    hard_ms: u64,
    honours_key: bool,
) {
    let config = json!({
        "name": name, "kind": "http", "base_url": url,
        "soft_timeout_ms": soft_ms, "hard_timeout_ms": hard_ms,
        "honours_idempotency_key": honours_key,
        "status_url": "{base_url}/status/{idempotency_key}"
    });
    add_provider(engine, &config).await;
}

async fn submit(engine: &Engine, key: &str, route: &[&str], max_attempts: u32) -> String {
    let intent = json!({ "route": route, "input": { "key": key }, "max_attempts": max_attempts });
    submit_intent(engine, key, &intent).await
}

fn state(detail: &JobDetail, number: u32) -> AttemptState {
    detail.attempts[number as usize - 1].state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_is_unknown_and_blocks() {
    // Order 1: the abandoned attempt's late answer arrives first and wins.
    // Order 2: the new attempt answers first; the abandoned one's answer loses.
    for abandoned_wins in [true, false] {
        let ledger = Ledger::new().await;
        let e = &ledger.engine;
        let (slow_ms, other_ms) = if abandoned_wins {
            (1500, 4000)
        } else {
            (3000, 200)
        };
        let slow = sandbox(quick(slow_ms)).await;
        let other = sandbox(quick(other_ms)).await;
        provider(e, "slow", &slow.url(), 300, false).await;
        provider(e, "other", &other.url(), 8000, false).await;
        let (_executor, _stop) = start(e);
        let job_id = submit(e, "charge-45", &["slow"], 5).await;

        let unknown = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;
        assert_eq!(state(&unknown, 1), AttemptState::Unknown);
        assert_eq!(slow.log().len(), 1, "the server saw exactly one request");
        match e.retry(OWNER, &job_id, None).await {
            Err(Error::AttemptBlocked { details, .. }) => {
                assert_eq!(details.attempt_id, unknown.attempts[0].id)
            }
            other => panic!("expected attempt_blocked, got {other:?}"),
        }
        let first = unknown.attempts[0].id.clone();
        // Abandoned and retried on the other provider in one step: apart, the running
        // executor may claim the queued job in between, and the retry is then blocked.
        let retry_on_other = Resolution {
            retry_on: Some("other".into()),
            ..Resolution::default()
        };
        let retried = e
            .resolve(OWNER, &first, Verdict::Abandoned, retry_on_other)
            .await
            .expect("abandon and retry");
        let second = retried.next_attempt.expect("the retry's attempt").id;

        let done = until(e, &job_id, |d| {
            d.attempts
                .iter()
                .all(|a| !a.state.is_open() && a.state != AttemptState::Abandoned)
        })
        .await;
        let (winner, loser) = if abandoned_wins {
            (&first, &second)
        } else {
            (&second, &first)
        };
        assert_eq!(done.job.status, JobStatus::Succeeded);
        assert_eq!(done.job.completed_by.as_ref(), Some(winner));
        let by_id = |id: &str| done.attempts.iter().find(|a| a.id == id).map(|a| a.state);
        assert_eq!(by_id(winner), Some(AttemptState::Succeeded));
        assert_eq!(by_id(loser), Some(AttemptState::Lost));
        assert!(kinds(&done).contains(&"race_lost"));
        assert_eq!(done.job.version, 1);
        assert_eq!(slow.log().len(), 1, "never sent twice");
        assert_eq!(other.log().len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverse_order_over_http_the_fast_fallback_wins_and_the_result_never_changes() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let primary = sandbox(quick(3000)).await;
    let fast = sandbox(quick(200)).await;
    provider(e, "slow-primary", &primary.url(), 500, false).await;
    provider(e, "fast", &fast.url(), 2000, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "reverse", &["slow-primary"], 5).await;
    let unknown = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;
    let resolution = Resolution {
        retry_on: Some("fast".into()),
        ..Resolution::default()
    };
    e.resolve(
        OWNER,
        &unknown.attempts[0].id,
        Verdict::Abandoned,
        resolution,
    )
    .await
    .expect("abandon and retry on fast");
    let won = until(e, &job_id, |d| d.job.status == JobStatus::Succeeded).await;
    assert_eq!(won.job.completed_by.as_ref(), Some(&won.attempts[1].id));
    let result = won.job.result.clone();
    let late = until(e, &job_id, |d| state(d, 1) == AttemptState::Lost).await;
    assert_eq!(
        late.job.result, result,
        "the job's result never changes afterwards"
    );
    assert_eq!(late.job.version, won.job.version);
    assert!(
        late.attempts[0].flagged_for_review,
        "the abandoned attempt's answer is flagged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processed_then_dropped_is_unknown_and_never_retried() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(Dials {
        drop_after_processing: 1.0,
        ..quick(100)
    })
    .await;
    provider(e, "dropper", &server.url(), 5000, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "dropped", &["dropper"], 5).await;
    let detail = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;
    assert_eq!(detail.attempts.len(), 1);
    assert_eq!(
        detail.attempts[0].error.as_ref().map(|x| x.kind.as_str()),
        Some("connection_broken")
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let later = e.job(OWNER, &job_id).await.expect("job");
    assert_eq!(later.attempts.len(), 1, "not retried automatically");
    assert_eq!(server.log().len(), 1, "one request in the provider's log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_failed_and_retried() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let url = format!("http://{}/", closed.local_addr().expect("addr"));
    drop(closed);
    provider(e, "nobody", &url, 1000, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "refused", &["nobody"], 3).await;
    let done = until(e, &job_id, |d| d.job.status == JobStatus::Failed).await;
    assert_eq!(done.attempts.len(), 3, "retried until the budget was spent");
    for attempt in &done.attempts {
        assert_eq!(attempt.state, AttemptState::Failed);
        assert_eq!(
            attempt.error.as_ref().map(|x| x.kind.as_str()),
            Some("never_sent")
        );
    }
    assert_eq!(
        done.job.error.as_ref().map(|x| x.code.as_str()),
        Some("attempts_exhausted")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_not_retried_there_and_an_unvalidated_fallback_is_not_used() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    for (i, status) in [400u16, 401, 403, 404, 422].into_iter().enumerate() {
        let refuser = refusing_server(status).await;
        let fallback = sandbox(quick(10)).await;
        provider(e, &format!("strict-{i}"), &refuser, 1000, false).await;
        provider(e, &format!("spare-{i}"), &fallback.url(), 1000, false).await;
        let (_executor, stop) = start(e);
        let route = [format!("strict-{i}"), format!("spare-{i}")];
        let job_id = submit(e, &format!("refused-{status}"), &[&route[0], &route[1]], 5).await;
        let done = until(e, &job_id, |d| d.job.status == JobStatus::Failed).await;
        drop(stop);
        assert_eq!(
            done.attempts.len(),
            1,
            "{status}: not retried at this provider"
        );
        assert_eq!(done.attempts[0].http_status, Some(status));
        assert_eq!(
            done.attempts[0].error.as_ref().map(|x| x.kind.as_str()),
            Some("rejected")
        );
        assert_eq!(
            done.job.error.as_ref().map(|x| x.code.as_str()),
            Some("fallback_not_validated")
        );
        assert!(
            fallback.log().is_empty(),
            "{status}: the fallback saw no request"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_waits_at_least_its_retry_after() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(Dials {
        throttle: 1.0,
        retry_after_s: 1,
        ..quick(10)
    })
    .await;
    provider(e, "busy", &server.url(), 1000, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "throttled", &["busy"], 2).await;
    let done = until(e, &job_id, |d| d.job.status == JobStatus::Failed).await;
    assert_eq!(done.attempts.len(), 2);
    let first_done = parse(done.attempts[0].finished_at.as_deref());
    let second_sent = parse(done.attempts[1].sent_at.as_deref());
    let gap = second_sent - first_done;
    assert!(
        gap >= chrono::Duration::seconds(1),
        "the next attempt waited {gap}"
    );
    assert_eq!(done.attempts[0].http_status, Some(429));
    assert_eq!(
        done.attempts[0].error.as_ref().map(|x| x.kind.as_str()),
        Some("throttled")
    );
}

fn parse(at: Option<&str>) -> chrono::DateTime<chrono::Utc> {
    at.expect("a time").parse().expect("an RFC 3339 time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_from_http_is_unknown_unless_the_provider_honours_the_key_and_never_fails_over() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(Dials {
        server_error: 1.0,
        ..quick(10)
    })
    .await;
    provider(e, "plain", &server.url(), 1000, false).await;
    provider(e, "keyed", &server.url(), 1000, true).await;
    let (_executor, _stop) = start(e);

    let plain = submit(e, "plain-500", &["plain"], 5).await;
    let unknown = until(e, &plain, |d| d.job.status == JobStatus::Unknown).await;
    assert_eq!(unknown.attempts.len(), 1);
    assert_eq!(unknown.attempts[0].http_status, Some(500));

    // Retried at the same provider with the same key until the budget is spent, never at
    // another provider (which does not know the key); the last try is unknown.
    let keyed = submit(e, "keyed-500", &["keyed", "plain"], 3).await;
    let done = until(e, &keyed, |d| d.job.status == JobStatus::Unknown).await;
    let states: Vec<_> = done
        .attempts
        .iter()
        .map(|a| (a.provider.as_str(), a.state))
        .collect();
    assert_eq!(
        states,
        [
            ("keyed", AttemptState::Failed),
            ("keyed", AttemptState::Failed),
            ("keyed", AttemptState::Unknown)
        ]
    );
    let keys: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.idempotency_key.as_deref() == Some(keyed.as_str()))
        .collect();
    assert_eq!(keys.len(), 3, "with the same Idempotency-Key: the job id");
}

/// SPEC §6: an `http` provider's complete 2xx says the work was done, even when its body
/// cannot be read. Sent again, a payment would be made twice: it is `unknown`, sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2xx_that_is_not_json_from_an_http_provider_is_unknown_and_never_resent() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(Dials {
        malformed_json: 1.0,
        honour_idempotency_key: false,
        ..quick(10)
    })
    .await;
    provider(e, "garbled", &server.url(), 1000, false).await;
    provider(e, "spare", &server.url(), 1000, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "garbled", &["garbled", "spare"], 5).await;
    let settled = until(e, &job_id, |d| {
        matches!(d.job.status, JobStatus::Unknown | JobStatus::Failed)
    })
    .await;
    // Give a wrong executor the time it would take to send it again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let done = e.job(OWNER, &job_id).await.expect("job");
    assert_eq!(server.log().len(), 1, "sent once: {settled:#?}");
    assert_eq!(done.job.status, JobStatus::Unknown);
    assert_eq!(done.attempts.len(), 1);
    assert_eq!(done.attempts[0].state, AttemptState::Unknown);
    assert_eq!(done.attempts[0].http_status, Some(200));
    assert_eq!(
        done.attempts[0].error.as_ref().map(|x| x.kind.as_str()),
        Some("invalid_answer_unknown")
    );
    assert_eq!(done.job.result, None);
}

/// The same from a provider that honours `Idempotency-Key`: asked again only there, under the
/// same key, never at the next provider; its last try is `unknown`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2xx_that_is_not_json_from_a_keyed_http_provider_is_retried_only_there() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(Dials {
        malformed_json: 1.0,
        ..quick(10)
    })
    .await;
    provider(e, "garbled", &server.url(), 1000, true).await;
    provider(e, "spare", &server.url(), 1000, true).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "garbled-keyed", &["garbled", "spare"], 3).await;
    let done = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;
    let seen: Vec<_> = done
        .attempts
        .iter()
        .map(|a| {
            let kind = a.error.as_ref().map(|x| x.kind.clone()).unwrap_or_default();
            (a.provider.as_str(), a.state, kind)
        })
        .collect();
    let failed = (AttemptState::Failed, "invalid_answer_keyed".to_owned());
    assert_eq!(
        seen,
        [
            ("garbled", failed.0, failed.1.clone()),
            ("garbled", failed.0, failed.1),
            (
                "garbled",
                AttemptState::Unknown,
                "invalid_answer_unknown".to_owned()
            ),
        ]
    );
    let keys: Vec<_> = server
        .log()
        .into_iter()
        .map(|r| r.idempotency_key)
        .collect();
    assert_eq!(
        keys,
        vec![Some(job_id.clone()); 3],
        "the same key each time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_off_mid_body_is_unknown() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let url = cutting_server().await;
    provider(e, "cutter", &url, 2000, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "cut", &["cutter"], 5).await;
    let done = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;
    assert_eq!(
        done.attempts[0].error.as_ref().map(|x| x.kind.as_str()),
        Some("cut_off")
    );
    assert_eq!(
        done.attempts[0].request_id.as_deref(),
        Some("cut-1"),
        "saved when headers arrived"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_carries_the_job_id_as_idempotency_key_and_the_request_id_is_stored() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(quick(10)).await;
    provider(e, "echo", &server.url(), 1000, true).await;
    let (_executor, _stop) = start(e);
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(submit(e, &format!("echo-{i}"), &["echo"], 5).await);
    }
    for id in &ids {
        let done = until(e, id, |d| d.job.status == JobStatus::Succeeded).await;
        let attempt = &done.attempts[0];
        let seen = server
            .log()
            .into_iter()
            .find(|r| r.request_id == attempt.request_id.clone().unwrap_or_default())
            .expect("the provider's request id is stored");
        assert_eq!(seen.idempotency_key.as_deref(), Some(id.as_str()));
        assert_eq!(
            done.job.result.as_ref().and_then(|r| r.get("echo")),
            Some(&json!({ "key": done.job.idempotency_key }))
        );
    }
    assert!(server.log().iter().all(|r| r.idempotency_key.is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_resolves_unknown_attempts_from_the_status_url() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // Processed, answer lost: the status lookup says it went through.
    let dropper = sandbox(Dials {
        drop_after_processing: 1.0,
        ..quick(10)
    })
    .await;
    // Refused with a 500 that may hide work: the status lookup says it did not happen.
    let failing = sandbox(Dials {
        server_error: 1.0,
        ..quick(10)
    })
    .await;
    provider_until(e, "dropper", &dropper.url(), 1000, 1500, false).await;
    provider_until(e, "failing", &failing.url(), 1000, 1500, false).await;
    let (executor, _stop) = start(e);

    let went_through = submit(e, "went-through", &["dropper"], 5).await;
    let unknown = until(e, &went_through, |d| d.job.status == JobStatus::Unknown).await;
    match reconcile_when_due(&executor, &unknown.attempts[0]).await {
        Reconciled::Completed(done) => {
            assert_eq!(done.outcome, onejob_engine::testing::Outcome::Won)
        }
        other => panic!("expected a completion, got {other:?}"),
    }
    let done = e.job(OWNER, &went_through).await.expect("job");
    assert_eq!(done.job.status, JobStatus::Succeeded);
    assert_eq!(done.job.completed_by.as_ref(), Some(&done.attempts[0].id));
    assert_eq!(done.job.version, 1);
    // The lookup is recorded with its answer, with the change it made.
    let looked = done.events.iter().position(|ev| ev.kind == "looked_up");
    let won = done
        .events
        .iter()
        .position(|ev| ev.kind == "attempt_succeeded");
    assert!(looked.is_some() && looked < won, "{:#?}", done.events);
    let looked = &done.events[looked.unwrap_or_default()];
    assert_eq!(looked.detail["state"], "succeeded");
    assert_eq!(looked.detail["outcome"], "settled");

    let did_not = submit(e, "did-not-happen", &["failing"], 1).await;
    let unknown = until(e, &did_not, |d| d.job.status == JobStatus::Unknown).await;
    match reconcile_when_due(&executor, &unknown.attempts[0]).await {
        Reconciled::Failed(done) => assert_eq!(done.attempt.state, AttemptState::Failed),
        other => panic!("expected a failure, got {other:?}"),
    }
    let failed = until(e, &did_not, |d| d.job.status == JobStatus::Failed).await;
    assert_eq!(
        failed.attempts[0].error.as_ref().map(|x| x.kind.as_str()),
        Some("reconciled_failed")
    );
    let kinds: Vec<&str> = failed.events.iter().map(|ev| ev.kind.as_str()).collect();
    assert!(
        kinds
            .windows(2)
            .any(|w| w == ["looked_up", "attempt_failed"]),
        "{kinds:?}"
    );
}

/// Looks `attempt` up once its request can no longer be answered: asked earlier, the lookup
/// says how long is left and asks nothing.
async fn reconcile_when_due(executor: &Executor, attempt: &onejob_engine::Attempt) -> Reconciled {
    loop {
        match executor.reconcile(attempt).await.expect("reconcile") {
            Reconciled::TooEarly(wait) => {
                assert!(wait <= Duration::from_secs(10), "{wait:?}");
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}

/// A server that answers every request with `status` and a JSON error.
async fn refusing_server(status: u16) -> String {
    serve_raw(move |_| {
        format!(
            "HTTP/1.1 {status} Refused\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
        )
        .into_bytes()
    })
    .await
}

/// A server that sends a 200 head promising 100 bytes, then 10, then closes.
async fn cutting_server() -> String {
    serve_raw(|_| {
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: cut-1\r\ncontent-length: 100\r\n\r\n{\"partial\":".to_vec()
    })
    .await
}

/// A minimal HTTP/1.1 server on loopback that reads one request per connection and writes
/// the bytes `reply` makes, then closes.
async fn serve_raw(reply: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static) -> String {
    let server = RawServer::start(reply).expect("a loopback server");
    format!("{}/", server.url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_abandoned_while_in_flight_still_delivers_its_late_answer() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let first = sandbox(quick(1200)).await;
    let second = sandbox(quick(5000)).await;
    // Abandoned before its soft timeout (700 ms), answered after it (1200 ms).
    provider(e, "first", &first.url(), 700, false).await;
    provider(e, "second", &second.url(), 8000, false).await;
    let (_executor, _stop) = start(e);
    let job_id = submit(e, "abandoned-in-flight", &["first"], 5).await;
    let sent = until(e, &job_id, |d| {
        d.attempts
            .first()
            .is_some_and(|a| a.state == AttemptState::InFlight)
    })
    .await;
    let resolution = Resolution {
        retry_on: Some("second".into()),
        ..Resolution::default()
    };
    e.resolve(OWNER, &sent.attempts[0].id, Verdict::Abandoned, resolution)
        .await
        .expect("abandon before the soft timeout");
    let done = until(e, &job_id, |d| d.job.status == JobStatus::Succeeded).await;
    assert_eq!(done.job.completed_by.as_ref(), Some(&done.attempts[0].id));
    assert!(
        done.job.flagged_for_review,
        "a late answer of an abandoned attempt is flagged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_timeout_and_unavailable_are_retried_after_retry_after() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    for status in [408u16, 503] {
        let busy = serve_raw(move |_| {
            format!(
                "HTTP/1.1 {status} Busy\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            .into_bytes()
        })
        .await;
        let name = format!("busy-{status}");
        provider(e, &name, &busy, 1000, false).await;
        let (_executor, stop) = start(e);
        let job_id = submit(e, &name, &[&name], 2).await;
        let done = until(e, &job_id, |d| d.job.status == JobStatus::Failed).await;
        drop(stop);
        assert_eq!(done.attempts.len(), 2, "{status}: retried");
        for attempt in &done.attempts {
            assert_eq!(attempt.http_status, Some(status));
            assert_eq!(
                attempt.error.as_ref().map(|x| x.kind.as_str()),
                Some("throttled")
            );
        }
        let gap = parse(done.attempts[1].sent_at.as_deref())
            - parse(done.attempts[0].finished_at.as_deref());
        assert!(
            gap >= chrono::Duration::seconds(1),
            "{status}: waited {gap}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_lease_keeps_a_slow_attempt_in_flight_against_other_recoveries() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let slow = sandbox(quick(1500)).await;
    provider(e, "slow", &slow.url(), 5000, false).await;
    let options = ExecutorOptions {
        lease: Duration::from_millis(600),
        renew_every: Duration::from_millis(150),
        poll_every: Duration::from_millis(50),
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(e.clone(), options).expect("executor");
    let job_id = submit(e, "slow-but-alive", &["slow"], 5).await;
    executor.tick().await.expect("tick");
    // Another process recovering expired leases all the while.
    let other = ledger.reopen().await;
    let recovering = tokio::spawn(async move {
        let mut moved = 0;
        for _ in 0..40 {
            moved += other.recover_expired_leases().await.expect("recover");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        moved
    });
    let done = until(e, &job_id, |d| d.job.status == JobStatus::Succeeded).await;
    assert_eq!(
        recovering.await.expect("task"),
        0,
        "no lease expired while it was renewed"
    );
    assert_eq!(done.attempts[0].state, AttemptState::Succeeded);
    assert!(!kinds(&done).contains(&"recovered_unknown"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_process_running_an_in_process_sandbox_looks_it_up() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let config = json!({
        "name": "local-sandbox", "kind": "sandbox",
        "soft_timeout_ms": 1000, "hard_timeout_ms": 1500, "honours_idempotency_key": true,
        "status_url": "{base_url}/status/{idempotency_key}",
        "dials": { "latency_ms": 10, "jitter_ms": 0, "drop_after_processing": 1.0 }
    });
    add_provider(e, &config).await;
    let (sender, _stop) = start(e);
    let job_id = submit(e, "in-process", &["local-sandbox"], 5).await;
    let unknown = until(e, &job_id, |d| d.job.status == JobStatus::Unknown).await;

    let elsewhere =
        Executor::new(ledger.reopen().await, ExecutorOptions::default()).expect("executor");
    let refused = elsewhere.reconcile(&unknown.attempts[0]).await;
    assert_eq!(
        refused.expect_err("not its sandbox").code(),
        "invalid_input"
    );
    let still = e.job(OWNER, &job_id).await.expect("job");
    assert_eq!(
        still.attempts[0].state,
        AttemptState::Unknown,
        "not failed by a stranger"
    );

    match reconcile_when_due(&sender, &unknown.attempts[0]).await {
        Reconciled::Completed(done) => assert_eq!(done.job.status, JobStatus::Succeeded),
        other => panic!("expected a completion, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attempts_sent_at_once_follow_a_change_made_while_the_executor_runs() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let ledger = Ledger::new().await;
    let engine = &ledger.engine;
    // Holds each request 400 ms and counts how many it holds at once.
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen = most.clone();
    let url = serve_raw(move |_| {
        let holding = now.fetch_add(1, Ordering::SeqCst) + 1;
        seen.fetch_max(holding, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(400));
        now.fetch_sub(1, Ordering::SeqCst);
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"ok\":true}".to_vec()
    })
    .await;
    provider(engine, "slow", &url, 5_000, true).await;
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(submit(engine, &format!("k{i}"), &["slow"], 1).await);
    }
    let options = ExecutorOptions {
        max_in_flight: 1,
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(engine.clone(), options).expect("executor");
    let running = tokio::spawn({
        let executor = executor.clone();
        async move { executor.run_until_idle().await }
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(most.load(Ordering::SeqCst), 1, "one at a time at first");
    executor.set_max_in_flight(4);
    assert_eq!(executor.max_in_flight(), 4);
    running.await.expect("join").expect("run");
    assert_eq!(
        most.load(Ordering::SeqCst),
        4,
        "four at once after the change"
    );
    for id in &ids {
        let job = engine.job(OWNER, id).await.expect("job").job;
        assert_eq!(job.status, JobStatus::Succeeded, "{id}");
    }
}

/// A pass claims its jobs together; one whose claim fails (its stored intent no longer
/// validates, written behind the engine's back) must not hold up the others. The failing
/// claim is logged and passed over; the job beside it is claimed and sent in the same pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_claim_fails_holds_up_no_other_job() {
    let ledger = Ledger::new().await;
    let sandbox_intent =
        |text: &str| json!({ "route": ["sandbox"], "input": { "text": text } }).to_string();
    let poisoned = ledger
        .engine
        .submit(OWNER, "poisoned", &sandbox_intent("poisoned"))
        .await
        .expect("submit")
        .job;
    let fine = ledger
        .engine
        .submit(OWNER, "fine", &sandbox_intent("fine"))
        .await
        .expect("submit")
        .job;
    let raw = ledger.raw().await;
    let broken = Sql {
        sqlite: "UPDATE jobs SET intent = $2 WHERE id = $1",
        postgres: "UPDATE jobs SET intent = $2::json WHERE id::text = $1",
    };
    let changed = raw
        .execute(broken, &[&poisoned.id, r#"{"route": [], "input": {}}"#])
        .await
        .expect("break the stored intent");
    assert_eq!(changed, 1);
    raw.close().await;

    let executor =
        Executor::new(ledger.engine.clone(), ExecutorOptions::default()).expect("an executor");
    assert_eq!(
        executor.tick().await.expect("a pass"),
        1,
        "the pass claims the job beside the one that cannot be claimed"
    );
    let done = until(&ledger.engine, &fine.id, |d| {
        d.job.status == JobStatus::Succeeded
    })
    .await;
    assert_eq!(done.attempts.len(), 1, "{done:?}");
    let stuck = ledger.engine.job(OWNER, &poisoned.id).await.expect("job");
    assert!(stuck.attempts.is_empty(), "{stuck:?}");
}
