//! Regression tests for the paths to a second send or a lost acknowledgement that reading
//! and trying the product found: each test is named after what it proves.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{
    add_provider, intent, kinds, quick, run, sandbox, start_with, stop_and_wait, submit_intent,
    until, why, Ledger, Raw, Sql, OWNER,
};
use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::sandbox::Dials;
use onejob_engine::testing::{
    AfterFailure, Cause, ExecutorSteps as _, FailureKind, InternalCalls as _, Outcome, Replayed,
};
use onejob_engine::{
    AttemptState, Engine, JobAttempt, JobDetail, JobStatus, OpenOptions, Resolution, Verdict,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn options() -> ExecutorOptions {
    ExecutorOptions {
        poll_every: Duration::from_millis(50),
        backoff_base: Duration::from_millis(20),
        reconcile_every: Duration::from_millis(100),
        ..ExecutorOptions::default()
    }
}

// 0. A submit is acknowledged only after its commit.

#[tokio::test]
async fn a_submit_is_visible_to_every_other_connection_the_moment_it_returns() {
    let ledger = Ledger::new().await;
    let raw = ledger.raw().await;
    let stored_id =
        Sql::both("SELECT CAST(id AS TEXT) FROM jobs WHERE owner_id = $1 AND idempotency_key = $2");
    for n in 0..50 {
        let key = format!("seen-{n}");
        let job = ledger.submit(&key).await.job;
        let (stored,): (String,) = raw
            .fetch_one(stored_id, &[OWNER, &key])
            .await
            .expect("the acknowledged job is committed");
        assert_eq!(stored, job.id);
    }
    raw.close().await;
}

#[tokio::test]
async fn a_ledger_at_its_size_limit_refuses_a_submit_with_storage_and_keeps_what_it_acknowledged() {
    if onejob_testkit::sqlite_only("the limit is the SQLite file's page count") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("onejob.db");
    let first = Engine::open(&path).await.expect("open");
    first
        .add_provider(&common::provider_json("primary"))
        .await
        .expect("provider");
    first
        .add_provider(&common::provider_json("fallback"))
        .await
        .expect("provider");
    first.close().await;
    let pool = sqlite_pool(&path).await;
    let (pages,): (i64,) = sqlx::query_as("PRAGMA page_count")
        .fetch_one(&pool)
        .await
        .expect("pages");
    pool.close().await;

    // A disk with room for a few dozen 60 KB intents.
    let limits = OpenOptions {
        max_page_count: Some(u32::try_from(pages).expect("pages") + 400),
        ..OpenOptions::default()
    };
    let full = Engine::open_with(&path, limits).await.expect("open");
    let filler = "x".repeat(60 * 1024);
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    for n in 0..60 {
        let key = format!("big-{n}");
        match full
            .submit(OWNER, &key, &intent(json!({ "n": n, "filler": filler })))
            .await
        {
            Ok(s) => acknowledged.push((key, s.job.id)),
            Err(e) => {
                assert_eq!(e.code(), "storage", "{e:?}");
                refused.push(key);
            }
        }
    }
    assert!(!refused.is_empty(), "the disk filled up");
    assert!(!acknowledged.is_empty());
    full.close().await;

    let engine = Engine::open(&path).await.expect("reopen");
    for (key, id) in &acknowledged {
        let job = engine
            .job(OWNER, id)
            .await
            .expect("an acknowledged job is kept");
        assert_eq!(&job.job.idempotency_key, key);
        let other = engine
            .submit(OWNER, key, &intent(json!({ "another": true })))
            .await;
        assert_eq!(
            other.expect_err("its key is taken").code(),
            "idempotency_conflict"
        );
    }
    let (stored,): (i64,) = sqlx::query_as("SELECT count(*) FROM jobs")
        .fetch_one(&sqlite_pool(&path).await)
        .await
        .expect("count");
    assert_eq!(
        stored as usize,
        acknowledged.len(),
        "nothing refused was stored"
    );
}

async fn sqlite_pool(path: &std::path::Path) -> sqlx::SqlitePool {
    sqlx::SqlitePool::connect(&format!("sqlite:{}", path.display()))
        .await
        .expect("pool")
}

// 1. A status lookup decides only on an explicit state.

/// A listener on a free loopback port, and its URL ending in `path`.
async fn loopback(path: &str) -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}{path}", listener.local_addr().expect("addr"));
    (listener, url)
}

/// A server on loopback that hands each connection to `take`, counting them.
async fn counting_server(
    mut take: impl FnMut(tokio::net::TcpStream) + Send + 'static,
) -> (String, Arc<AtomicUsize>) {
    let (listener, url) = loopback("").await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            take(stream);
        }
    });
    (url, seen)
}

/// A server that answers every request with a bare 404 (no body), counting them.
async fn bare_404() -> (String, Arc<AtomicUsize>) {
    counting_server(|mut stream| {
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            let _ = stream.shutdown().await;
        });
    })
    .await
}

/// A sandbox that takes every request and never answers it, and does not know a key it has
/// seen.
async fn unanswering_sandbox() -> onejob_engine::sandbox::Sandbox {
    sandbox(Dials {
        never_answer: 1.0,
        honour_idempotency_key: false,
        ..quick(5)
    })
    .await
}

async fn payment_provider(engine: &Engine, base_url: &str, status_url: &str) {
    let config = json!({
        "name": "payments", "kind": "http", "base_url": base_url,
        "soft_timeout_ms": 200, "hard_timeout_ms": 400,
        "honours_idempotency_key": false, "status_url": status_url
    });
    add_provider(engine, &config).await;
}

async fn pay(engine: &Engine, key: &str) -> String {
    let intent = json!({ "route": ["payments"], "input": { "amount": 100 } });
    submit_intent(engine, key, &intent).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_lookup_that_cannot_name_the_request_is_not_made_and_nothing_is_resent() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = unanswering_sandbox().await;
    payment_provider(e, &server.url(), "{base_url}/status/{request_id}").await;
    let job = pay(e, "no-request-id").await;
    let (executor, stop, task) = start_with(e, options());
    until(e, &job, |d| d.job.status == JobStatus::Unknown).await;
    // Many lookup periods pass.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop_and_wait(stop, task).await;
    let detail = e.job(OWNER, &job).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Unknown, "{detail:#?}");
    assert_eq!(detail.attempts.len(), 1);
    let posts = server
        .log()
        .into_iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 1, "the payment was sent once");
    let reconciled = executor.reconcile(&detail.attempts[0]).await;
    assert_eq!(
        reconciled.expect_err("nothing to ask").code(),
        "invalid_input"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_404_from_a_status_lookup_leaves_the_attempt_unknown() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = unanswering_sandbox().await;
    let (status, looked_up) = bare_404().await;
    payment_provider(
        e,
        &server.url(),
        &format!("{status}/payments/{{idempotency_key}}"),
    )
    .await;
    let job = pay(e, "bare-404").await;
    let (_executor, _stop, _task) = start_with(e, options());
    until(e, &job, |d| d.job.status == JobStatus::Unknown).await;
    // Three lookups reached the server and their answers are in the history (each is
    // recorded after its answer came back, a moment after the server counted it).
    let mut detail = e.job(OWNER, &job).await.expect("job");
    for _ in 0..100 {
        let recorded = detail.events.iter().filter(|ev| ev.kind == "looked_up");
        if looked_up.load(Ordering::SeqCst) >= 3 && recorded.count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        detail = e.job(OWNER, &job).await.expect("job");
    }
    assert!(
        looked_up.load(Ordering::SeqCst) >= 3,
        "looked up repeatedly"
    );
    assert_eq!(detail.job.status, JobStatus::Unknown, "{detail:#?}");
    assert_eq!(detail.attempts.len(), 1, "nothing was sent again");
    // Every lookup is in the history, with its answer.
    let looked: Vec<_> = detail
        .events
        .iter()
        .filter(|ev| ev.kind == "looked_up")
        .collect();
    assert!(looked.len() >= 3, "{:#?}", detail.events);
    for ev in looked {
        assert_eq!(
            ev.attempt_id.as_deref(),
            Some(detail.attempts[0].id.as_str())
        );
        assert_eq!(ev.detail["http_status"], 404);
        assert_eq!(ev.detail["outcome"], "still_unknown");
    }
    let posts = server
        .log()
        .into_iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 1);
}

// 2. One job never stops every job.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_provider_was_removed_fails_and_every_other_job_goes_on() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let stranded = submit_intent(e, "a", &json!({ "route": ["primary"], "input": 1 })).await;
    e.remove_provider("primary").await.expect("removed");
    let fine = submit_intent(e, "b", &json!({ "route": ["sandbox"], "input": 2 })).await;
    let executor = Executor::new(e.clone(), options()).expect("executor");
    executor
        .run_until_idle()
        .await
        .expect("the worker keeps going");
    let fine = e.job(OWNER, &fine).await.expect("job").job;
    assert_eq!(fine.status, JobStatus::Succeeded);
    let stranded = e.job(OWNER, &stranded).await.expect("job");
    assert_eq!(stranded.job.status, JobStatus::Failed, "{stranded:#?}");
    let error = stranded.job.error.expect("a named reason");
    assert_eq!(error.code, "misconfigured");
    assert!(error.message.contains("primary"), "{}", error.message);
    assert!(stranded.attempts.is_empty(), "nothing was sent");
}

// 3. A failure found before sending never touches a sent attempt.

/// An `http` provider `name` at `url`, with timeouts (5 s soft, 8 s hard) that its answers
/// come well within.
async fn patient_provider(engine: &Engine, name: &str, url: &str) {
    let config = json!({
        "name": name, "kind": "http", "base_url": url,
        "soft_timeout_ms": 5000, "hard_timeout_ms": 8000, "honours_idempotency_key": false
    });
    add_provider(engine, &config).await;
}

/// Fails `sent`'s attempt as found wrong before sending, which must be refused; the job's
/// detail afterwards.
async fn refused_as_unsent(e: &Engine, sent: &JobAttempt) -> JobDetail {
    let refused = e
        .fail_unsent(
            &sent.attempt.id,
            FailureKind::Misconfigured.because("no key here"),
        )
        .await;
    assert_eq!(refused.expect_err("refused").code(), "invalid_transition");
    e.job(OWNER, &sent.job.id).await.expect("job")
}

#[tokio::test]
async fn a_failure_found_before_sending_never_touches_an_attempt_already_sent() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let sent = ledger.in_flight("sent-elsewhere").await;
    let detail = refused_as_unsent(e, &sent).await;
    assert_eq!(detail.attempts[0].state, AttemptState::InFlight);
    assert_eq!(detail.job.status, JobStatus::Running);

    e.mark_unknown(&sent.attempt.id, why("soft_timeout"))
        .await
        .expect("unknown");
    let detail = refused_as_unsent(e, &sent).await;
    assert_eq!(detail.attempts[0].state, AttemptState::Unknown);
    assert_eq!(detail.attempts.len(), 1, "the route did not move on");

    // A pending one may fail before sending; the route then continues.
    let job = ledger.submit("never-sent").await.job;
    let claimed = e.claim_attempt(&job.id, "primary").await.expect("claim");
    let failed = e
        .fail_unsent(
            &claimed.attempt.id,
            FailureKind::Misconfigured.because("no key"),
        )
        .await
        .expect("failed");
    assert_eq!(failed.attempt.state, AttemptState::Failed);
    assert_eq!(failed.job.status, JobStatus::Queued);
}

/// SPEC §4: a storage error is never taken for a verdict. The provider's row cannot be read
/// between the claim and the send (its table is out of reach, as when the connection drops);
/// the attempt is not failed `misconfigured` (which would fail over, or fail the job): it
/// stays `pending`, and once the ledger answers again it is sent, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_error_before_sending_is_no_verdict_and_the_attempt_is_sent_once_later() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(quick(5)).await;
    patient_provider(e, "payee", &server.url()).await;
    let job = submit_intent(
        e,
        "read-fails",
        &json!({ "route": ["payee", "primary"], "input": 1 }),
    )
    .await;
    let claimed = e.claim_attempt(&job, "payee").await.expect("claim");
    let raw = ledger.raw().await;
    let away = Sql::both("ALTER TABLE providers RENAME TO providers_away");
    raw.execute(away, &[]).await.expect("out of reach");

    let (_executor, stop, task) = start_with(e, options());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let meanwhile = e
        .attempt(OWNER, &claimed.attempt.id)
        .await
        .expect("attempt");
    assert_eq!(meanwhile.state, AttemptState::Pending, "{meanwhile:#?}");
    assert!(server.log().is_empty(), "nothing was sent meanwhile");

    let back = Sql::both("ALTER TABLE providers_away RENAME TO providers");
    raw.execute(back, &[]).await.expect("back");
    raw.close().await;
    let done = until(e, &job, |d| d.job.status != JobStatus::Running).await;
    stop_and_wait(stop, task).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(done.attempts.len(), 1, "no second attempt: {done:#?}");
    assert_eq!(done.attempts[0].id, claimed.attempt.id);
    assert_eq!(server.log().len(), 1, "sent once");
}

// 4. Nothing is sent, or left pending, for a job that is over.

#[tokio::test]
async fn an_attempt_is_never_sent_after_its_job_succeeded_nor_left_pending() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let first = ledger.unknown("late-winner").await;
    let resolution = Resolution {
        retry_on: Some("fallback".to_owned()),
        ..Resolution::default()
    };
    let resolved = e
        .resolve(OWNER, &first.attempt.id, Verdict::Abandoned, resolution)
        .await
        .expect("abandoned with a retry");
    let second = resolved.next_attempt.expect("a pending retry");
    assert_eq!(second.state, AttemptState::Pending);

    let late = e
        .complete(&first.attempt.id, &json!({ "paid": true }), Cause::Answer)
        .await
        .expect("late answer");
    assert_eq!(late.outcome, Outcome::Won);
    assert_eq!(late.job.status, JobStatus::Succeeded);

    let sent = e
        .mark_sent(&second.id, "executor-x", Duration::from_secs(10))
        .await;
    assert_eq!(sent.expect_err("never sent").code(), "invalid_transition");
    let detail = e.job(OWNER, &first.job.id).await.expect("job");
    assert_eq!(
        detail.attempts[1].state,
        AttemptState::Abandoned,
        "{detail:#?}"
    );
    assert!(detail.attempts.iter().all(|a| !a.state.is_open()));
    assert!(e.pending_attempts(100).await.expect("pending").is_empty());
    assert!(kinds(&detail).contains(&"attempt_abandoned"));
}

#[tokio::test]
async fn cancelling_closes_the_open_attempt_and_its_late_answer_is_flagged() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let sent = ledger.in_flight("cancelled-in-flight").await;
    let job = e.cancel(OWNER, &sent.job.id).await.expect("cancel");
    assert_eq!(job.status, JobStatus::Cancelled);
    let detail = e.job(OWNER, &job.id).await.expect("job");
    assert_eq!(detail.attempts[0].state, AttemptState::Abandoned);
    let late = e
        .complete(&sent.attempt.id, &json!({ "charged": true }), Cause::Answer)
        .await
        .expect("late");
    assert_eq!(late.outcome, Outcome::Dropped);
    assert!(late.job.flagged_for_review);
    assert_eq!(late.job.status, JobStatus::Cancelled);
}

// 5. The smaller ones.

#[tokio::test]
async fn an_answer_for_an_attempt_a_person_marked_succeeded_is_logged_and_flagged() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let sent = ledger.unknown("person-said-yes").await;
    let resolution = Resolution {
        result: Some(json!({ "by": "person" })),
        ..Resolution::default()
    };
    e.resolve(OWNER, &sent.attempt.id, Verdict::Succeeded, resolution)
        .await
        .expect("resolved");
    let late = e
        .complete(
            &sent.attempt.id,
            &json!({ "by": "provider" }),
            Cause::Answer,
        )
        .await
        .expect("dropped, not refused");
    assert_eq!(late.outcome, Outcome::Dropped);
    assert_eq!(
        late.job.result,
        Some(json!({ "by": "person" })),
        "the result never changes"
    );
    assert!(late.job.flagged_for_review);
    let detail = e.job(OWNER, &sent.job.id).await.expect("job");
    let flagged = detail
        .events
        .iter()
        .filter(|ev| ev.kind == "late_answer_flagged")
        .count();
    assert_eq!(flagged, 1, "{:?}", kinds(&detail));
}

#[tokio::test]
async fn a_retry_after_of_a_year_waits_an_hour_and_the_event_records_both() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let sent = ledger.in_flight("throttled-for-a-year").await;
    let year = Duration::from_secs(365 * 24 * 3600);
    let after = AfterFailure::RequeueAfter {
        wait: year,
        retry_after: Some(year),
    };
    let done = e
        .fail_attempt(&sent.attempt.id, why("throttled"), Some(429), after)
        .await
        .expect("failed");
    assert_eq!(done.job.status, JobStatus::Queued);
    let not_before = done.job.not_before.expect("a backoff");
    let at = chrono::DateTime::parse_from_rfc3339(&not_before).expect("a time");
    let wait = at.signed_duration_since(chrono::Utc::now());
    assert!(wait <= chrono::Duration::seconds(3600), "{not_before}");
    assert!(wait >= chrono::Duration::seconds(3500), "{not_before}");
    let detail = e.job(OWNER, &sent.job.id).await.expect("job");
    let backoff = detail
        .events
        .iter()
        .find(|ev| ev.kind == "backoff_set")
        .expect("a backoff event");
    assert_eq!(backoff.detail["retry_after_s"], json!(year.as_secs()));
    assert_eq!(backoff.detail["capped"], json!(true));
    assert_eq!(
        e.claim_next(&sent.job.id).await.expect("claim"),
        onejob_engine::testing::Claim::Skipped,
        "the backoff is read inside the claim"
    );
}

/// Sends one attempt to a provider that answers after `latency_ms`, while another process
/// holds the write lock for `hold_ms` from the moment it is in flight; checks that its answer
/// was neither taken for `unknown` nor lost.
async fn answered_once_through_a_lock(latency_ms: u32, lease_ms: u64, hold_ms: u64) {
    let ledger = Ledger::new().await;
    let limits = OpenOptions {
        busy_timeout: Duration::from_millis(50),
        ..OpenOptions::default()
    };
    let e = Engine::open_with(&ledger.location, limits)
        .await
        .expect("open");
    let server = sandbox(quick(latency_ms)).await;
    patient_provider(&e, "slow", &server.url()).await;
    let job = submit_intent(&e, "slow", &json!({ "route": ["slow"], "input": 1 })).await;
    let options = ExecutorOptions {
        lease: Duration::from_millis(lease_ms),
        renew_every: Duration::from_millis(200),
        ..options()
    };
    let (_executor, stop, task) = start_with(&e, options);
    until(&e, &job, |d| {
        d.attempts
            .first()
            .is_some_and(|a| a.state == AttemptState::InFlight)
    })
    .await;
    let raw = ledger.raw().await;
    hold_the_write_lock(&raw, Duration::from_millis(hold_ms)).await;
    raw.close().await;
    let done = until(&e, &job, |d| {
        d.job.status == JobStatus::Succeeded
            || d.attempts
                .first()
                .is_some_and(|a| a.state != AttemptState::InFlight)
    })
    .await;
    stop_and_wait(stop, task).await;
    let seen = kinds(&done);
    assert!(!seen.contains(&"attempt_unknown"), "{seen:?}");
    assert!(!seen.contains(&"recovered_unknown"), "{seen:?}");
    assert_eq!(done.attempts.len(), 1);
    assert_eq!(done.attempts[0].state, AttemptState::Succeeded);
}

/// Holds the ledger's write lock for `hold`, as another process's long write would. On SQLite
/// that is the one writer's lock, and every write of an engine fails with `busy` meanwhile; on
/// PostgreSQL an exclusive lock on the tables an attempt's writes touch, which reads pass and
/// writes wait for.
async fn hold_the_write_lock(raw: &Raw, hold: Duration) {
    match raw {
        Raw::Sqlite(pool) => {
            let holder = pool.begin_with("BEGIN IMMEDIATE").await.expect("lock");
            tokio::time::sleep(hold).await;
            holder.rollback().await.expect("unlock");
        }
        Raw::Postgres(pool) => {
            let mut holder = pool.begin().await.expect("begin");
            sqlx::query("LOCK TABLE jobs, attempts, job_events IN EXCLUSIVE MODE")
                .execute(&mut *holder)
                .await
                .expect("lock");
            tokio::time::sleep(hold).await;
            holder.rollback().await.expect("unlock");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_renewal_that_fails_on_storage_is_retried_until_the_lease_would_expire() {
    // The lock outlasts several renewals but not the lease; the answer comes after the lease
    // would have run out had the renewer given up.
    answered_once_through_a_lock(4000, 3000, 2000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_arrives_while_its_write_fails_is_retried_not_lost() {
    // The answer arrives (at 1 s) while the lock is held (for 2 s).
    answered_once_through_a_lock(1000, 5000, 2000).await;
}

/// A server that accepts connections and never answers, counting them.
async fn silent_server() -> (String, Arc<AtomicUsize>) {
    let mut held = Vec::new();
    counting_server(move |stream| held.push(stream)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_status_lookup_does_not_hold_up_claiming() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = unanswering_sandbox().await;
    let (status, looked_up) = silent_server().await;
    let config = json!({
        "name": "payments", "kind": "http", "base_url": server.url(),
        "soft_timeout_ms": 200, "hard_timeout_ms": 3_000,
        "honours_idempotency_key": false,
        "status_url": format!("{status}/status/{{idempotency_key}}")
    });
    add_provider(e, &config).await;
    let stuck = pay(e, "stuck").await;
    let (_executor, stop, _task) = start_with(e, options());
    until(e, &stuck, |d| d.job.status == JobStatus::Unknown).await;
    // The first lookup waits for the payment's hard deadline (3 s) to pass.
    for _ in 0..400 {
        if looked_up.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(looked_up.load(Ordering::SeqCst) > 0, "a lookup hangs now");
    // While it hangs (until its own deadline, 3 s), a new job is claimed, sent and answered.
    let next = submit_intent(e, "next", &json!({ "route": ["sandbox"], "input": 1 })).await;
    let done = until(e, &next, |d| d.job.status == JobStatus::Succeeded).await;
    assert_eq!(done.attempts.len(), 1);
    drop(stop);
}

/// When each status lookup was made.
type Lookups = Arc<std::sync::Mutex<Vec<std::time::Instant>>>;

/// A payment provider that records its work only once it is done, as many do: its status
/// lookup answers "not found" while a request is still being processed (`hold`), and the
/// answer afterwards. It counts the payments and keeps when each lookup was made.
async fn slow_recorder(hold: Duration) -> (String, Arc<AtomicUsize>, Lookups) {
    let (listener, url) = loopback("").await;
    let paid = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let lookups = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (paying, asked) = (paid.clone(), lookups.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (paying, done, asked) = (paying.clone(), done.clone(), asked.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let body = if head.starts_with("GET /status/") {
                    asked
                        .lock()
                        .expect("the lookups")
                        .push(std::time::Instant::now());
                    if done.load(Ordering::SeqCst) > 0 {
                        Some(("200 OK", r#"{"state":"succeeded","result":{"paid":true}}"#))
                    } else {
                        Some(("404 Not Found", r#"{"state":"not_found"}"#))
                    }
                } else {
                    paying.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(hold).await;
                    done.fetch_add(1, Ordering::SeqCst);
                    Some(("200 OK", r#"{"paid":true}"#))
                };
                if let Some((status, body)) = body {
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    let _ = stream.shutdown().await;
                }
            });
        }
    });
    (url, paid, lookups)
}

/// SPEC §6: an attempt that turned `unknown` at its soft timeout may still be answered until its
/// hard deadline; a status lookup before then asks a provider still at work, which says "not
/// found", and the payment would be sent a second time. No lookup is made before the hard
/// deadline has passed since the attempt was sent; the answer arrives and wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_lookup_never_runs_while_the_request_may_still_be_answered() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let hard = Duration::from_millis(2500);
    let (url, paid, lookups) = slow_recorder(Duration::from_millis(1500)).await;
    let config = json!({
        "name": "payments", "kind": "http", "base_url": format!("{url}/pay"),
        "soft_timeout_ms": 200, "hard_timeout_ms": hard.as_millis() as u64,
        "honours_idempotency_key": false,
        "status_url": format!("{url}/status/{{idempotency_key}}")
    });
    add_provider(e, &config).await;
    let job = pay(e, "still-at-work").await;
    // Lookups are due every 100 ms.
    let (_executor, stop, task) = start_with(e, options());
    let unknown = until(e, &job, |d| d.job.status == JobStatus::Unknown).await;
    let unknown_seen = std::time::Instant::now();
    assert_eq!(unknown.attempts[0].state, AttemptState::Unknown);
    let done = until(e, &job, |d| d.job.status.is_terminal()).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(done.attempts.len(), 1, "{done:#?}");
    assert_eq!(paid.load(Ordering::SeqCst), 1, "the payment was sent once");
    // Past the hard deadline, lookups of a settled attempt are not made either.
    tokio::time::sleep(hard).await;
    stop_and_wait(stop, task).await;
    // The answer came before the hard deadline, so no lookup was ever due.
    let early: Vec<Duration> = lookups
        .lock()
        .expect("the lookups")
        .iter()
        .map(|at| at.saturating_duration_since(unknown_seen))
        .collect();
    assert!(
        early.is_empty(),
        "looked up while the request could still be answered, after the unknown: {early:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1, "the payment was sent once");
}

// 5. Keyed replay (SPEC §16): the same request under the same key, only where the provider
//    keeps the key, never before the hard deadline.

/// How a key-keeping test provider answers a request whose key it has seen.
#[derive(Clone, Copy)]
enum Repeat {
    /// As Stripe does: 409 while the first request with the key is still at work, then the
    /// stored answer.
    Stored,
    /// With this status, whatever the state of the work: a provider that does not know its
    /// own key.
    Refused(u16),
}

/// What a test payment provider saw: each request's key, body and arrival, and the work it
/// did per key.
#[derive(Default)]
struct Payments {
    requests: Vec<(String, Vec<u8>, std::time::Instant)>,
    effects: std::collections::HashMap<String, usize>,
    answers: std::collections::HashMap<String, String>,
}

type Seen = Arc<std::sync::Mutex<Payments>>;

/// A payment provider on loopback that deduplicates by `Idempotency-Key`: the first request
/// with a key does the work (counted per key), which takes `work`, and answers 200; a repeat is
/// answered as `repeat` says.
async fn keyed_provider(work: Duration, repeat: Repeat) -> (String, Seen) {
    let (listener, url) = loopback("/pay").await;
    let seen: Seen = Arc::default();
    let state = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let state = state.clone();
            tokio::spawn(async move {
                let Some((key, body)) = read_request(&mut stream).await else {
                    return;
                };
                let first = {
                    let mut s = state.lock().expect("state");
                    s.requests
                        .push((key.clone(), body.clone(), std::time::Instant::now()));
                    let first = !s.effects.contains_key(&key);
                    if first {
                        *s.effects.entry(key.clone()).or_default() += 1;
                    }
                    first
                };
                let (status, answer) = if first {
                    tokio::time::sleep(work).await;
                    let answer = json!({ "paid": true, "key": key }).to_string();
                    state
                        .lock()
                        .expect("state")
                        .answers
                        .insert(key.clone(), answer.clone());
                    ("200 OK".to_owned(), answer)
                } else {
                    let stored = state.lock().expect("state").answers.get(&key).cloned();
                    match (repeat, stored) {
                        (Repeat::Stored, Some(answer)) => ("200 OK".to_owned(), answer),
                        (Repeat::Stored, None) => (
                            "409 Conflict".to_owned(),
                            r#"{"error":"a request with this key is in progress"}"#.to_owned(),
                        ),
                        (Repeat::Refused(code), _) => (
                            format!("{code} Refused"),
                            r#"{"error":"no such idempotency key"}"#.to_owned(),
                        ),
                    }
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (url, seen)
}

/// Reads one request: its `Idempotency-Key` and its body.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    let length: usize = header("content-length:")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let key = header("idempotency-key:").unwrap_or_default();
    while buf.len() < end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((key, buf[end..end + length].to_vec()))
}

/// A payment provider that honours keys, keeping them `retention_s` when given.
async fn keyed_payments(
    engine: &Engine,
    name: &str,
    base_url: &str,
    hard_ms: u64,
    honours: bool,
    retention_s: Option<i64>,
) {
    let mut config = json!({
        "name": name, "kind": "http", "base_url": base_url,
        "soft_timeout_ms": 200, "hard_timeout_ms": hard_ms,
        "honours_idempotency_key": honours,
    });
    if let Some(retention) = retention_s {
        config["key_retention_s"] = json!(retention);
    }
    add_provider(engine, &config).await;
}

async fn pay_at(engine: &Engine, provider: &str, key: &str) -> String {
    let intent = json!({ "route": [provider], "input": { "amount": 100, "to": key } });
    submit_intent(engine, key, &intent).await
}

fn replays(detail: &onejob_engine::JobDetail) -> Vec<&serde_json::Value> {
    detail
        .events
        .iter()
        .filter(|e| e.kind == "replayed")
        .map(|e| &e.detail)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_attempt_at_a_provider_that_keeps_keys_is_settled_by_replay_with_one_effect() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // The work outlives the soft timeout (200 ms) and the hard deadline (600 ms).
    let (url, seen) = keyed_provider(Duration::from_millis(2500), Repeat::Stored).await;
    keyed_payments(e, "payments", &url, 600, true, Some(600)).await;
    let job = pay_at(e, "payments", "order-45").await;
    let (_executor, stop, task) = start_with(e, options());
    let unknown = until(e, &job, |d| d.job.status == JobStatus::Unknown).await;
    assert_eq!(unknown.attempts[0].state, AttemptState::Unknown);
    let done = until(e, &job, |d| d.job.status.is_terminal()).await;
    stop_and_wait(stop, task).await;

    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(done.attempts.len(), 1, "settled under the same attempt");
    assert_eq!(done.attempts[0].state, AttemptState::Succeeded);
    assert_eq!(done.job.result, Some(json!({ "paid": true, "key": job })));
    let seen = seen.lock().expect("seen");
    assert_eq!(
        seen.effects.values().copied().collect::<Vec<_>>(),
        vec![1],
        "the provider did the work once"
    );
    assert!(
        seen.requests.len() >= 3,
        "a 409 while at work, then the stored answer"
    );
    let (first_key, first_body, _) = &seen.requests[0];
    assert_eq!(first_key, &job.to_lowercase(), "the key is the job id");
    for (key, body, _) in &seen.requests {
        assert_eq!(
            (key, body),
            (first_key, first_body),
            "the same key and body"
        );
    }
    let replayed = replays(&done);
    assert!(
        replayed
            .iter()
            .any(|r| r["outcome"] == "retries_later" && r["http_status"] == 409),
        "{replayed:#?}"
    );
    let last = replayed.last().expect("replays");
    assert_eq!(last["outcome"], "settled", "{replayed:#?}");
    assert_eq!(last["http_status"], 200);
    let won = done
        .events
        .iter()
        .find(|ev| ev.kind == "attempt_succeeded")
        .expect("won");
    assert_eq!(won.detail["via"], "replay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_replay_without_retention_past_it_or_at_a_provider_that_does_not_keep_keys() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let work = Duration::from_secs(30);
    let (no_retention, seen_a) = keyed_provider(work, Repeat::Stored).await;
    let (no_keys, seen_b) = keyed_provider(work, Repeat::Stored).await;
    let (short, seen_c) = keyed_provider(work, Repeat::Stored).await;
    keyed_payments(e, "no-retention", &no_retention, 800, true, None).await;
    keyed_payments(e, "no-keys", &no_keys, 800, false, None).await;
    // Kept 61 s, less the margin (60 s): gone before the hard deadline (1.5 s) passes.
    keyed_payments(e, "short", &short, 1500, true, Some(61)).await;
    let jobs = [
        pay_at(e, "no-retention", "a").await,
        pay_at(e, "no-keys", "b").await,
        pay_at(e, "short", "c").await,
    ];
    let (executor, stop, task) = start_with(e, options());
    for job in &jobs {
        until(e, job, |d| d.job.status == JobStatus::Unknown).await;
    }
    // Past every hard deadline, many replay periods pass.
    tokio::time::sleep(Duration::from_millis(4000)).await;
    for job in &jobs {
        let detail = e.job(OWNER, job).await.expect("job");
        assert_eq!(detail.job.status, JobStatus::Unknown, "{detail:#?}");
        assert!(replays(&detail).is_empty(), "{detail:#?}");
        let asked = executor.replay(&detail.attempts[0]).await;
        assert_eq!(
            asked.expect_err("never replayed").code(),
            "invalid_input",
            "{job}"
        );
    }
    stop_and_wait(stop, task).await;
    for seen in [seen_a, seen_b, seen_c] {
        assert_eq!(seen.lock().expect("seen").requests.len(), 1, "sent once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_never_runs_before_the_hard_deadline() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let hard = Duration::from_millis(2500);
    let (url, seen) = keyed_provider(Duration::from_millis(3500), Repeat::Stored).await;
    keyed_payments(
        e,
        "payments",
        &url,
        hard.as_millis() as u64,
        true,
        Some(600),
    )
    .await;
    let job = pay_at(e, "payments", "early").await;
    let (executor, stop, task) = start_with(e, options());
    let unknown = until(e, &job, |d| d.job.status == JobStatus::Unknown).await;
    // Asked at once, the replay waits for the hard deadline and sends nothing.
    match executor.replay(&unknown.attempts[0]).await {
        Ok(Replayed::TooEarly(wait)) => assert!(wait > Duration::ZERO),
        other => panic!("{other:?}"),
    }
    let done = until(e, &job, |d| d.job.status.is_terminal()).await;
    stop_and_wait(stop, task).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    let seen = seen.lock().expect("seen");
    assert!(seen.requests.len() >= 2, "replayed");
    let first = seen.requests[0].2;
    let soonest = seen.requests[1..]
        .iter()
        .map(|r| r.2.saturating_duration_since(first))
        .min()
        .expect("a replay");
    // The attempt was sent (by the ledger's clock) a moment before its request arrived here.
    assert!(
        soonest + Duration::from_millis(150) >= hard,
        "replayed {soonest:?} after the first send, before its hard deadline {hard:?}"
    );
    assert_eq!(seen.effects.values().sum::<usize>(), 1);
}

/// Moves attempt `id`'s `sent_at` back by `hours`: as if it had been sent that long ago.
async fn sent_hours_ago(raw: &Raw, id: &str, hours: u32) {
    let back = Sql {
        sqlite: "UPDATE attempts
                 SET sent_at = strftime('%Y-%m-%dT%H:%M:%fZ', sent_at, '-' || $2 || ' hours')
                 WHERE id = $1",
        postgres: "UPDATE attempts SET sent_at = sent_at - CAST($2 || ' hours' AS interval)
                   WHERE id = CAST($1 AS uuid)",
    };
    let moved = raw
        .execute(back, &[id, &hours.to_string()])
        .await
        .expect("sent earlier");
    assert_eq!(moved, 1);
}

/// Claims and sends `job`'s attempt, which a keyed `503` fails (it may have done the work, so
/// the retry goes to the same provider under the same key), then claims and sends the retry,
/// which times out: the ids of the two attempts, the second `unknown`.
async fn a_keyed_retry_then_unknown(e: &Engine, job: &str) -> (String, String) {
    let first = claim_and_send(e, job).await;
    let why = FailureKind::ServerErrorKeyed.because("503");
    e.fail_attempt(&first, why, Some(503), AfterFailure::Requeue)
        .await
        .expect("failed");
    let second = claim_and_send(e, job).await;
    e.mark_unknown(&second, FailureKind::Timeout.because("no answer"))
        .await
        .expect("unknown");
    (first, second)
}

/// Claims `job`'s next attempt and marks it sent, under an hour's lease; the attempt's id.
async fn claim_and_send(e: &Engine, job: &str) -> String {
    let id = match e.claim_next(job).await.expect("claim") {
        onejob_engine::testing::Claim::Attempt(ja) => ja.attempt.id,
        other => panic!("{other:?}"),
    };
    e.mark_sent(&id, "executor-test", Duration::from_secs(3600))
        .await
        .expect("sent");
    id
}

/// Found by the model-based test: the key is the job's, so a provider keeps it from its first
/// use there, not from the send of the attempt being replayed. A keyed retry sent hours after
/// the first attempt, then `unknown`, must not be replayed once the first send is past the
/// retention less the margin: the provider may have forgotten the key that holds the work.
#[tokio::test]
async fn a_replay_window_counts_from_the_keys_first_send_at_the_provider_not_the_attempts_own() {
    let ledger = Ledger::new().await;
    let (e, raw) = (&ledger.engine, ledger.raw().await);
    // Kept a day, less the margin (2.4 h): 21.6 h.
    keyed_payments(
        e,
        "payments",
        "http://127.0.0.1:9/pay",
        1000,
        true,
        Some(86_400),
    )
    .await;
    let job = pay_at(e, "payments", "retried-hours-later").await;
    let (first, second) = a_keyed_retry_then_unknown(e, &job).await;
    // The retry went out 8 h after the first send; 20 h have passed since: the key was first
    // used 28 h ago.
    sent_hours_ago(&raw, &first, 28).await;
    sent_hours_ago(&raw, &second, 20).await;
    let refused = e.replay_gate(&second).await.expect_err("not replayed");
    assert_eq!(refused.code(), "invalid_input", "{refused:?}");
    let window = e.replay_window(&second).await.expect("window");
    assert_eq!(window.left, None, "{window:?}");
    let due = e.replayable_attempts(100).await.expect("replayable");
    assert!(due.iter().all(|a| a.id != second), "{due:?}");

    // Within the retention of the first send, the retry is replayed.
    let other = pay_at(e, "payments", "retried-soon").await;
    let (first, second) = a_keyed_retry_then_unknown(e, &other).await;
    sent_hours_ago(&raw, &first, 21).await;
    sent_hours_ago(&raw, &second, 20).await;
    match e.replay_gate(&second).await.expect("gate") {
        onejob_engine::testing::ReplayGate::Now { left, .. } => {
            assert!(
                left < Duration::from_secs(3600),
                "{left:?}: counted from the first send"
            )
        }
        other => panic!("{other:?}"),
    }
    let due = e.replayable_attempts(100).await.expect("replayable");
    assert!(due.iter().any(|a| a.id == second), "{due:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_answered_with_another_4xx_flags_the_attempt_for_review_and_leaves_it_unknown() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let (url, seen) = keyed_provider(Duration::from_secs(30), Repeat::Refused(422)).await;
    keyed_payments(e, "payments", &url, 600, true, Some(600)).await;
    let job = pay_at(e, "payments", "forgotten").await;
    let (_executor, stop, task) = start_with(e, options());
    let flagged = until(e, &job, |d| d.attempts.iter().any(|a| a.flagged_for_review)).await;
    // Many replay periods later, nothing more was sent.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    stop_and_wait(stop, task).await;
    let detail = e.job(OWNER, &job).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Unknown, "{detail:#?}");
    assert_eq!(detail.attempts.len(), 1);
    assert_eq!(detail.attempts[0].state, AttemptState::Unknown);
    assert!(detail.attempts[0].flagged_for_review);
    let replayed = replays(&detail);
    assert_eq!(replayed.len(), 1, "{replayed:#?}");
    assert_eq!(replayed[0]["outcome"], "flagged");
    assert_eq!(replayed[0]["http_status"], 422);
    assert_eq!(
        replays(&flagged).len(),
        1,
        "flagged with its replay's event"
    );
    assert_eq!(seen.lock().expect("seen").requests.len(), 2, "one replay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandboxs_slow_work_dial_leaves_a_job_unknown_that_settles_by_replay_offline() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let server = sandbox(Dials {
        slow_work: 1.0,
        slow_work_ms: 2000,
        ..quick(5)
    })
    .await;
    let config = json!({
        "name": "sbx", "kind": "sandbox", "base_url": server.url(),
        "soft_timeout_ms": 200, "hard_timeout_ms": 500,
        "honours_idempotency_key": true, "key_retention_s": 86_400,
    });
    add_provider(e, &config).await;
    let job = pay_at(e, "sbx", "slow").await;
    let (_executor, stop, task) = start_with(e, options());
    until(e, &job, |d| d.job.status == JobStatus::Unknown).await;
    let done = until(e, &job, |d| d.job.status.is_terminal()).await;
    stop_and_wait(stop, task).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(done.attempts.len(), 1);
    let outcomes: Vec<String> = server.log().into_iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes.iter().filter(|o| *o == "slow_work").count(),
        1,
        "the work was done once: {outcomes:?}"
    );
    assert!(outcomes.contains(&"in_progress".to_owned()), "{outcomes:?}");
    assert_eq!(outcomes.last().map(String::as_str), Some("replayed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_sandbox_is_replayed_to_only_by_the_executor_that_runs_it() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let config = json!({
        "name": "sbx", "kind": "sandbox",
        "soft_timeout_ms": 200, "hard_timeout_ms": 500,
        "honours_idempotency_key": true, "key_retention_s": 86_400,
        "dials": { "latency_ms": 5, "jitter_ms": 0, "slow_work": 1.0, "slow_work_ms": 2500 },
    });
    add_provider(e, &config).await;
    let job = pay_at(e, "sbx", "in-process").await;
    // One executor sends it to the sandbox it runs, and returns once the job is unknown.
    let sender = Executor::new(e.clone(), options()).expect("executor");
    let unknown = sender.run_job(&job, None).await.expect("sent");
    assert_eq!(unknown.status, JobStatus::Unknown);
    // Another never replays it: a sandbox of its own would not know the key, and would pay again.
    let (other, stop, task) = start_with(e, options());
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let detail = e.job(OWNER, &job).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Unknown, "{detail:#?}");
    assert!(replays(&detail).is_empty(), "{detail:#?}");
    let asked = other.replay(&detail.attempts[0]).await;
    assert_eq!(asked.expect_err("not its sandbox").code(), "invalid_input");
    stop_and_wait(stop, task).await;
    // The sender's own loop replays it to its sandbox, which did the work, and it settles.
    let (stop, task) = run(&sender);
    let done = until(e, &job, |d| d.job.status.is_terminal()).await;
    stop_and_wait(stop, task).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(done.attempts.len(), 1);
    assert_eq!(
        replays(&done).last().map(|r| &r["outcome"]),
        Some(&json!("settled"))
    );
}

/// While a replay is out under the attempt's key, a person cannot say "it did not happen" or
/// stop waiting for it (and retry elsewhere): the replay may be the request that does the work,
/// and the person's retry would do it a second time. Once the replay's answer is in, it decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_cannot_say_it_did_not_happen_while_a_replay_of_it_is_out() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    // The first request never gets its answer out in time (8 s of work, a 2 s hard deadline);
    // the provider did nothing for it. The replay does the work, in 1.5 s.
    let (listener, url) = loopback("/pay").await;
    let requests = Arc::new(AtomicUsize::new(0));
    let effects = Arc::new(AtomicUsize::new(0));
    let (seen, done) = (requests.clone(), effects.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (seen, done) = (seen.clone(), done.clone());
            tokio::spawn(async move {
                let Some((key, _)) = read_request(&mut stream).await else {
                    return;
                };
                if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                    tokio::time::sleep(Duration::from_secs(8)).await;
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1500)).await;
                done.fetch_add(1, Ordering::SeqCst);
                let answer = json!({ "paid": true, "key": key }).to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    keyed_payments(e, "payments", &url, 2000, true, Some(86_400)).await;
    keyed_payments(e, "fallback", &url, 2000, true, None).await;
    let job = pay_at(e, "payments", "order-46").await;
    let (_executor, stop, task) = start_with(e, options());
    let unknown = until(e, &job, |d| d.job.status == JobStatus::Unknown).await;
    let attempt = unknown.attempts[0].id.clone();
    // The replay is out: the provider has it and has not answered.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while requests.load(Ordering::SeqCst) < 2 {
        assert!(std::time::Instant::now() < deadline, "no replay was sent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        effects.load(Ordering::SeqCst),
        0,
        "the replay is still at work"
    );
    for verdict in [Verdict::Abandoned, Verdict::Failed] {
        let resolution = Resolution {
            retry_on: Some("fallback".into()),
            ..Resolution::default()
        };
        let refused = e
            .resolve(OWNER, &attempt, verdict, resolution)
            .await
            .expect_err("a replay is out");
        assert_eq!(refused.code(), "attempt_blocked", "{refused}");
        assert!(refused.to_string().contains("replay"), "{refused}");
    }
    let done = until(e, &job, |d| d.job.status.is_terminal()).await;
    stop_and_wait(stop, task).await;
    assert_eq!(done.job.status, JobStatus::Succeeded, "{done:#?}");
    assert_eq!(done.attempts.len(), 1, "nothing was sent elsewhere");
    assert_eq!(effects.load(Ordering::SeqCst), 1, "the work was done once");
    assert_eq!(
        done.attempts[0].lease_expires_at, None,
        "the hold is let go"
    );
}
