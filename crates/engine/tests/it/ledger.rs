//! The ledger's rules end to end on a real ledger: owners, one open attempt, the transition
//! table, late answers, restart recovery and bad input.

use crate::common;

use std::time::Duration;

use common::{intent, kinds, why, Ledger, Sql, OWNER};
use onejob_engine::testing::{AfterFailure, Cause, InternalCalls as _, Outcome};
use onejob_engine::{
    AttemptState, BulkAction, BulkFilter, BulkRequest, Error, JobPart, JobStatus, JobsQuery,
    Resolution, ShownValue, Verdict,
};
use serde_json::json;

fn code(result: Result<impl std::fmt::Debug, Error>) -> &'static str {
    result.expect_err("an error").code()
}

#[tokio::test]
async fn owners_are_isolated() {
    let ledger = Ledger::new().await;
    let body = intent(json!("x"));
    let mine = ledger.engine.submit("ann", "k", &body).await.expect("ann");
    let theirs = ledger.engine.submit("bob", "k", &body).await.expect("bob");
    assert_ne!(
        mine.job.id, theirs.job.id,
        "one key under two owners: two jobs"
    );
    assert!(!theirs.replayed);

    let attempt = ledger
        .engine
        .retry("ann", &mine.job.id, None)
        .await
        .expect("retry")
        .attempt;
    let not_found = |r: Result<_, Error>| match r {
        Err(Error::NotFound { .. }) => {}
        other => panic!("expected not_found, got {other:?}"),
    };
    not_found(ledger.engine.job("bob", &mine.job.id).await.map(|_| ()));
    not_found(ledger.engine.attempt("bob", &attempt.id).await.map(|_| ()));
    not_found(ledger.engine.cancel("bob", &mine.job.id).await.map(|_| ()));
    not_found(
        ledger
            .engine
            .retry("bob", &mine.job.id, None)
            .await
            .map(|_| ()),
    );
    not_found(
        ledger
            .engine
            .resolve("bob", &attempt.id, Verdict::Failed, Resolution::default())
            .await
            .map(|_| ()),
    );
    let page = ledger
        .engine
        .jobs("bob", &JobsQuery::default())
        .await
        .expect("page");
    assert_eq!(page.jobs.len(), 1);
    assert_eq!(page.jobs[0].id, theirs.job.id);
    // Nothing of ann's changed.
    let detail = ledger
        .engine
        .job("ann", &mine.job.id)
        .await
        .expect("ann's job");
    assert_eq!(detail.attempts[0].state, AttemptState::Pending);
    assert_eq!(detail.job.status, JobStatus::Running);
}

#[tokio::test]
async fn one_open_attempt_per_job() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let job_id = ledger.submit("one-open").await.job.id;
    let first = e
        .claim_attempt(&job_id, "primary")
        .await
        .expect("first")
        .attempt;

    let expect_blocked =
        |r: Result<onejob_engine::JobAttempt, Error>, blocker: &str, state: &str| match r {
            Err(Error::AttemptBlocked { details, .. }) => {
                assert_eq!(details.attempt_id, blocker);
                assert_eq!(details.state, state);
            }
            other => panic!("expected attempt_blocked, got {other:?}"),
        };
    expect_blocked(
        e.claim_attempt(&job_id, "fallback").await,
        &first.id,
        "pending",
    );
    expect_blocked(
        e.retry(OWNER, &job_id, Some("fallback")).await,
        &first.id,
        "pending",
    );
    e.mark_sent(&first.id, "x", Duration::from_secs(10))
        .await
        .expect("sent");
    expect_blocked(
        e.claim_attempt(&job_id, "fallback").await,
        &first.id,
        "in_flight",
    );
    e.mark_unknown(&first.id, why("soft_timeout"))
        .await
        .expect("unknown");
    expect_blocked(e.retry(OWNER, &job_id, None).await, &first.id, "unknown");

    // Failed frees the job for the next attempt …
    e.resolve(OWNER, &first.id, Verdict::Failed, Resolution::default())
        .await
        .expect("failed");
    let second = e
        .claim_attempt(&job_id, "fallback")
        .await
        .expect("after failed")
        .attempt;
    assert_eq!(second.number, 2);
    // … and so does abandoned.
    e.mark_sent(&second.id, "x", Duration::from_secs(10))
        .await
        .expect("sent");
    ledger.abandon(&second.id).await;
    let third = e
        .claim_attempt(&job_id, "primary")
        .await
        .expect("after abandoned")
        .attempt;
    assert_eq!(third.number, 3);

    // The database itself refuses a second open attempt, whoever writes it.
    let raw = ledger.raw().await;
    let second_open = Sql {
        sqlite: "INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at)
         VALUES ('raw', $1, 99, 'primary', 'unknown', 0, '2026-01-01T00:00:00.000Z')",
        postgres: "INSERT INTO attempts (id, job_id, number, provider, state, job_version)
         VALUES ('01900000-0000-7000-8000-0000000000ff', CAST($1 AS uuid), 99, 'primary', 'unknown', 0)",
    };
    let refused = raw
        .execute(second_open, &[&job_id])
        .await
        .expect_err("the partial unique index refuses it");
    assert_eq!(
        refused.as_database_error().map(|e| e.kind()),
        Some(sqlx::error::ErrorKind::UniqueViolation),
        "{refused}"
    );
    raw.close().await;
}

#[tokio::test]
async fn no_attempt_on_a_succeeded_or_cancelled_job() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let done = ledger.in_flight("done").await.attempt;
    e.complete(&done.id, &json!({ "ok": true }), Cause::Answer)
        .await
        .expect("answer");
    assert_eq!(
        code(e.claim_attempt(&done.job_id, "primary").await),
        "invalid_transition"
    );
    assert_eq!(
        code(e.retry(OWNER, &done.job_id, None).await),
        "invalid_transition"
    );

    let job = ledger.submit("cancelled").await.job;
    e.cancel(OWNER, &job.id).await.expect("cancel");
    assert_eq!(
        code(e.claim_attempt(&job.id, "primary").await),
        "invalid_transition"
    );
    assert_eq!(
        code(e.retry(OWNER, &job.id, Some("fallback")).await),
        "invalid_transition"
    );
    assert_eq!(code(e.cancel(OWNER, &job.id).await), "invalid_transition");
}

/// The operations that move an attempt, with the state each one aims for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Move {
    Send,
    Unknown,
    Fail,
    Abandon,
    Answer,
    PersonSucceeded,
    PersonFailed,
    PersonAbandoned,
}

impl Move {
    const ALL: [Move; 8] = [
        Move::Send,
        Move::Unknown,
        Move::Fail,
        Move::Abandon,
        Move::Answer,
        Move::PersonSucceeded,
        Move::PersonFailed,
        Move::PersonAbandoned,
    ];

    fn target(self) -> AttemptState {
        match self {
            Move::Send => AttemptState::InFlight,
            Move::Unknown => AttemptState::Unknown,
            Move::Fail | Move::PersonFailed => AttemptState::Failed,
            Move::Abandon | Move::PersonAbandoned => AttemptState::Abandoned,
            Move::Answer | Move::PersonSucceeded => AttemptState::Succeeded,
        }
    }

    fn cause(self) -> Cause {
        match self {
            Move::Answer => Cause::Answer,
            Move::PersonSucceeded | Move::PersonFailed | Move::PersonAbandoned => Cause::Person,
            _ => Cause::Executor,
        }
    }
}

/// A fresh job with an attempt in `state`; returns the attempt id.
async fn attempt_in(ledger: &Ledger, key: &str, state: AttemptState) -> String {
    let e = &ledger.engine;
    let job_id = ledger.submit(key).await.job.id;
    if state == AttemptState::Pending {
        return e
            .claim_attempt(&job_id, "primary")
            .await
            .expect("claim")
            .attempt
            .id;
    }
    if state == AttemptState::Lost {
        let a = ledger.next_in_flight(&job_id, "primary").await.attempt;
        ledger.abandon(&a.id).await;
        let b = ledger.next_in_flight(&job_id, "fallback").await.attempt;
        e.complete(&b.id, &json!(1), Cause::Answer)
            .await
            .expect("b wins");
        let lost = e
            .complete(&a.id, &json!(2), Cause::Answer)
            .await
            .expect("a loses");
        assert_eq!(lost.attempt.state, AttemptState::Lost);
        return a.id;
    }
    let id = ledger.next_in_flight(&job_id, "primary").await.attempt.id;
    match state {
        AttemptState::InFlight => {}
        AttemptState::Unknown => {
            e.mark_unknown(&id, why("soft_timeout"))
                .await
                .expect("unknown");
        }
        AttemptState::Succeeded => {
            e.complete(&id, &json!(1), Cause::Answer)
                .await
                .expect("answer");
        }
        AttemptState::Failed => {
            e.fail_attempt(&id, why("http_400"), Some(400), AfterFailure::Requeue)
                .await
                .expect("failed");
        }
        AttemptState::Abandoned => {
            e.abandon_attempt(&id, "test").await.expect("abandoned");
        }
        _ => unreachable!(),
    }
    assert_eq!(e.attempt(OWNER, &id).await.expect("read").state, state);
    id
}

async fn apply(ledger: &Ledger, id: &str, m: Move) -> Result<AttemptState, Error> {
    let e = &ledger.engine;
    let person = |verdict, result| async move {
        let resolution = Resolution {
            result,
            ..Resolution::default()
        };
        e.resolve(OWNER, id, verdict, resolution)
            .await
            .map(|r| r.attempt.state)
    };
    match m {
        Move::Send => e
            .mark_sent(id, "x", Duration::from_secs(10))
            .await
            .map(|a| a.state),
        Move::Unknown => e
            .mark_unknown(id, why("soft_timeout"))
            .await
            .map(|a| a.state),
        Move::Fail => e
            .fail_attempt(id, why("http_400"), Some(400), AfterFailure::Requeue)
            .await
            .map(|r| r.attempt.state),
        Move::Abandon => e.abandon_attempt(id, "test").await.map(|r| r.attempt.state),
        Move::Answer => e
            .complete(id, &json!({ "late": true }), Cause::Answer)
            .await
            .map(|c| c.attempt.state),
        Move::PersonSucceeded => person(Verdict::Succeeded, Some(json!("ok"))).await,
        Move::PersonFailed => person(Verdict::Failed, None).await,
        Move::PersonAbandoned => person(Verdict::Abandoned, None).await,
    }
}

#[tokio::test]
async fn every_pair_not_allowed_is_an_invalid_transition() {
    let ledger = Ledger::new().await;
    let mut n = 0;
    for from in AttemptState::ALL {
        for m in Move::ALL {
            n += 1;
            let id = attempt_in(&ledger, &format!("pair-{n}"), from).await;
            let allowed = from.check(m.target(), m.cause(), &id).is_ok();
            let result = apply(&ledger, &id, m).await;
            let now = ledger.engine.attempt(OWNER, &id).await.expect("read").state;
            let settled = matches!(from, AttemptState::Succeeded | AttemptState::Lost);
            if m == Move::Answer && settled {
                // An answer for an attempt whose outcome is recorded is dropped and logged.
                assert_eq!(result.expect("dropped, not refused"), from);
                assert_eq!(now, from);
                continue;
            }
            match result {
                Ok(state) => {
                    assert!(allowed, "{from} --{m:?}--> {state} should be refused");
                    assert_eq!(state, now);
                    assert_eq!(state, m.target(), "{from} --{m:?}");
                }
                Err(err) => {
                    assert!(!allowed, "{from} --{m:?}--> refused: {err:?}");
                    assert_eq!(err.code(), "invalid_transition", "{from} --{m:?}");
                    assert_eq!(now, from, "a refused move leaves {from} as it was");
                }
            }
        }
    }
    // Whatever the table does not list never happens, including `pending` as a target.
    for from in AttemptState::ALL {
        assert!(!from.may_become(AttemptState::Pending));
    }
}

#[tokio::test]
async fn answers_lose_to_an_earlier_winner_from_every_state_that_allows_it() {
    let ledger = Ledger::new().await;
    for from in [
        AttemptState::InFlight,
        AttemptState::Unknown,
        AttemptState::Abandoned,
    ] {
        let e = &ledger.engine;
        let job_id = ledger.submit(&format!("lost-from-{from}")).await.job.id;
        let winner = ledger.next_in_flight(&job_id, "primary").await.attempt;
        ledger.abandon(&winner.id).await;
        let loser = ledger.next_in_flight(&job_id, "fallback").await.attempt;
        match from {
            AttemptState::Unknown => {
                e.mark_unknown(&loser.id, why("soft_timeout"))
                    .await
                    .expect("unknown");
            }
            AttemptState::Abandoned => {
                ledger.abandon(&loser.id).await;
            }
            _ => {}
        }
        e.complete(&winner.id, &json!("first"), Cause::Answer)
            .await
            .expect("won");
        let lost = e
            .complete(&loser.id, &json!("second"), Cause::Answer)
            .await
            .expect("lost");
        assert_eq!(lost.outcome, Outcome::Lost, "from {from}");
        assert_eq!(lost.attempt.state, AttemptState::Lost);
        assert_eq!(lost.job.result, Some(json!("first")));
    }
}

#[tokio::test]
async fn an_answer_after_cancel_is_dropped_and_flagged() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let a = ledger.in_flight("cancel-me").await.attempt;
    let cancelled = e.cancel(OWNER, &a.job_id).await.expect("cancel");
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(cancelled.version, 1, "cancelling bumps the version");

    let late = e
        .complete(&a.id, &json!({ "charged": 100 }), Cause::Answer)
        .await
        .expect("late");
    assert_eq!(late.outcome, Outcome::Dropped);
    assert_eq!(late.attempt.state, AttemptState::Lost);
    assert!(late.attempt.flagged_for_review);
    let detail = e.job(OWNER, &a.job_id).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Cancelled);
    assert_eq!(detail.job.result, None, "the payload is dropped");
    assert!(detail.job.flagged_for_review, "a person must see it");
    assert!(kinds(&detail).contains(&"late_answer_flagged"));
    assert_eq!(e.needs_attention(OWNER).await.expect("count"), 1);
}

#[tokio::test]
async fn an_answer_for_an_attempt_a_person_marked_failed_is_dropped_and_flagged() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let a = ledger.in_flight("did-not-happen").await.attempt;
    e.mark_unknown(&a.id, why("soft_timeout"))
        .await
        .expect("unknown");
    let note = Resolution {
        note: Some("the dashboard shows no charge".into()),
        ..Resolution::default()
    };
    let resolved = e
        .resolve(OWNER, &a.id, Verdict::Failed, note)
        .await
        .expect("failed");
    assert_eq!(
        resolved.job.status,
        JobStatus::Queued,
        "the job may continue"
    );

    let err = e
        .complete(&a.id, &json!({ "charged": 100 }), Cause::Answer)
        .await
        .expect_err("a contradiction");
    match err {
        Error::InvalidTransition { details, .. } => assert!(details.flagged_for_review),
        other => panic!("expected invalid_transition, got {other:?}"),
    }
    let detail = e.job(OWNER, &a.job_id).await.expect("job");
    assert_eq!(
        detail.attempts[0].state,
        AttemptState::Failed,
        "it stays failed"
    );
    assert!(detail.attempts[0].flagged_for_review);
    assert!(detail.job.flagged_for_review);
    assert_eq!(detail.job.result, None);
    let flagged = detail
        .events
        .iter()
        .find(|e| e.kind == "late_answer_flagged")
        .expect("event");
    assert_eq!(
        flagged.detail["payload_sha256"],
        json!(onejob_engine::testing::canonical_sha256(
            &json!({ "charged": 100 })
        ))
    );
}

#[tokio::test]
async fn a_person_saying_it_went_through_claims_the_result_through_the_same_swap() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let a = ledger.in_flight("went-through").await.attempt;
    e.mark_unknown(&a.id, why("soft_timeout"))
        .await
        .expect("unknown");
    let resolution = Resolution {
        result: Some(json!({ "receipt": "r-1" })),
        note: Some("seen in the provider's dashboard".into()),
        retry_on: None,
    };
    let done = e
        .resolve(OWNER, &a.id, Verdict::Succeeded, resolution)
        .await
        .expect("resolve");
    assert_eq!(done.job.status, JobStatus::Succeeded);
    assert_eq!(done.job.completed_by.as_deref(), Some(a.id.as_str()));
    assert_eq!(done.job.version, 1);
    assert_eq!(done.attempt.state, AttemptState::Succeeded);
    let detail = e.job(OWNER, &a.job_id).await.expect("job");
    assert!(kinds(&detail).contains(&"resolved_by_person"));
}

#[tokio::test]
async fn a_persons_result_over_1_mib_is_refused_and_changes_nothing() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let a = ledger.in_flight("too-large").await.attempt;
    e.mark_unknown(&a.id, why("soft_timeout"))
        .await
        .expect("unknown");
    // Compact JSON of 1 MiB and one byte: the quotes and the key make up the rest.
    let text = "x".repeat(1024 * 1024 + 1 - r#"{"t":""}"#.len());
    let resolution = Resolution {
        result: Some(json!({ "t": text })),
        note: None,
        retry_on: None,
    };
    let err = e
        .resolve(OWNER, &a.id, Verdict::Succeeded, resolution)
        .await
        .expect_err("too large");
    assert_field(&err, "result", "a result over 1 MiB");
    let detail = e.job(OWNER, &a.job_id).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Unknown);
    assert_eq!(detail.attempts[0].state, AttemptState::Unknown);

    // Exactly 1 MiB is allowed.
    let text = "x".repeat(1024 * 1024 - r#"{"t":""}"#.len());
    let resolution = Resolution {
        result: Some(json!({ "t": text })),
        note: None,
        retry_on: None,
    };
    let done = e
        .resolve(OWNER, &a.id, Verdict::Succeeded, resolution)
        .await
        .expect("exactly 1 MiB");
    assert_eq!(done.job.status, JobStatus::Succeeded);
}

#[tokio::test]
async fn resolve_with_retry_on_starts_the_next_attempt_in_the_same_transaction() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let a = ledger.in_flight("retry-on").await.attempt;
    e.mark_unknown(&a.id, why("soft_timeout"))
        .await
        .expect("unknown");
    let resolution = Resolution {
        retry_on: Some("fallback".into()),
        ..Resolution::default()
    };
    let done = e
        .resolve(OWNER, &a.id, Verdict::Abandoned, resolution)
        .await
        .expect("resolve");
    assert_eq!(done.attempt.state, AttemptState::Abandoned);
    let next = done.next_attempt.expect("a next attempt");
    assert_eq!(
        (next.provider.as_str(), next.state, next.number),
        ("fallback", AttemptState::Pending, 2)
    );
    assert_eq!(done.job.status, JobStatus::Running);

    // A refused new attempt leaves the resolution undone too.
    let b = e.attempt(OWNER, &next.id).await.expect("b");
    let bad = Resolution {
        retry_on: Some("nowhere".into()),
        ..Resolution::default()
    };
    let refused = e.resolve(OWNER, &b.id, Verdict::Failed, bad).await;
    assert_field(
        &refused.expect_err("unknown provider"),
        "retry_on",
        "retry_on",
    );
    assert_eq!(
        e.attempt(OWNER, &b.id).await.expect("b").state,
        AttemptState::Pending
    );
}

#[tokio::test]
async fn retry_of_a_failed_job_bumps_the_version() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let a = ledger.in_flight("fail-then-retry").await.attempt;
    let error = onejob_engine::JobError {
        code: "budget_spent".into(),
        message: "no attempts left".into(),
    };
    let failed = e
        .fail_attempt(
            &a.id,
            why("http_503"),
            Some(503),
            AfterFailure::FailJob(error),
        )
        .await
        .expect("fail");
    assert_eq!(failed.job.status, JobStatus::Failed);
    assert_eq!(failed.job.version, 1);
    let retried = e
        .retry(OWNER, &a.job_id, Some("fallback"))
        .await
        .expect("retry");
    assert_eq!(retried.job.version, 2);
    assert_eq!(retried.job.status, JobStatus::Running);
    assert_eq!(retried.attempt.job_version, 2);
    assert_eq!(retried.attempt.provider, "fallback");
}

#[tokio::test]
async fn restart_turns_expired_in_flight_into_unknown_and_keeps_pending_sendable() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let sent = ledger.submit("was-in-flight").await.job;
    let a = e
        .claim_attempt(&sent.id, "primary")
        .await
        .expect("claim")
        .attempt;
    e.mark_sent(&a.id, "crashed-executor", Duration::ZERO)
        .await
        .expect("sent");
    let held = ledger.submit("still-leased").await.job;
    let live = ledger.next_in_flight(&held.id, "primary").await.attempt;
    let waiting = ledger.submit("never-sent").await.job;
    let p = e
        .claim_attempt(&waiting.id, "primary")
        .await
        .expect("claim")
        .attempt;
    e.close().await;
    tokio::time::sleep(Duration::from_millis(5)).await;

    let restarted = ledger.reopen().await;
    let detail = restarted.job(OWNER, &sent.id).await.expect("job");
    assert_eq!(detail.attempts[0].state, AttemptState::Unknown);
    assert_eq!(detail.job.status, JobStatus::Unknown);
    let recovered = detail
        .events
        .iter()
        .find(|e| e.kind == "recovered_unknown")
        .expect("event");
    let reason = recovered.detail["reason"].as_str().expect("reason");
    assert!(
        reason.contains("crashed-executor") && reason.contains("may have been sent"),
        "{reason}"
    );

    assert_eq!(
        restarted
            .attempt(OWNER, &live.id)
            .await
            .expect("live")
            .state,
        AttemptState::InFlight
    );
    let pending = restarted.attempt(OWNER, &p.id).await.expect("pending");
    assert_eq!(pending.state, AttemptState::Pending);
    let sent_now = restarted
        .mark_sent(&p.id, "new-executor", Duration::from_secs(10))
        .await;
    assert_eq!(
        sent_now.expect("a pending attempt is still sendable").state,
        AttemptState::InFlight
    );
}

#[tokio::test]
async fn bad_input_is_named_and_changes_nothing() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    ledger.submit("existing").await;
    let (jobs, events) = (ledger.count("jobs").await, ledger.count("job_events").await);
    let ok = intent(json!("x"));
    let huge = intent(json!("x".repeat(1024 * 1024)));
    let deep = |n: usize| {
        format!(
            "{{\"route\":[\"primary\"],\"input\":{}1{}}}",
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    let cases: Vec<(&str, String, String, &str)> = vec![
        ("empty key", OWNER.into(), String::new(), "idempotency_key"),
        (
            "key over 255",
            OWNER.into(),
            "k".repeat(256),
            "idempotency_key",
        ),
        (
            "non-ASCII key",
            OWNER.into(),
            "klucz-żółw".into(),
            "idempotency_key",
        ),
        (
            "control character in key",
            OWNER.into(),
            "a\nb".into(),
            "idempotency_key",
        ),
        (
            "malformed owner",
            "ann smith".into(),
            "k".into(),
            "owner_id",
        ),
        ("empty owner", String::new(), "k".into(), "owner_id"),
    ];
    for (what, owner, key, field) in cases {
        let err = e.submit(&owner, &key, &ok).await.expect_err(what);
        assert_field(&err, field, what);
    }
    let intents: Vec<(&str, String, &str)> = vec![
        ("not JSON", "{route: [primary]".into(), "intent"),
        ("not an object", "[1, 2]".into(), "intent"),
        (
            "empty route",
            r#"{"route": [], "input": 1}"#.into(),
            "intent.route",
        ),
        ("no route", r#"{"input": 1}"#.into(), "intent.route"),
        (
            "unknown provider",
            r#"{"route": ["primary", "nowhere"], "input": 1}"#.into(),
            "intent.route.1",
        ),
        (
            "no input",
            r#"{"route": ["primary"]}"#.into(),
            "intent.input",
        ),
        (
            "unknown field",
            r#"{"route": ["primary"], "input": 1, "paramz": {}}"#.into(),
            "intent.paramz",
        ),
        ("over 1 MiB", huge, "intent"),
        ("65 levels", deep(64), "intent"),
        ("100,000 levels", deep(100_000), "intent"),
    ];
    for (what, body, field) in intents {
        let err = e.submit(OWNER, "k", &body).await.expect_err(what);
        assert_field(&err, field, what);
    }
    // 64 levels exactly is accepted: the intent object is the first.
    e.submit(OWNER, "deep-ok", &deep(63))
        .await
        .expect("64 levels");
    assert_eq!(ledger.count("jobs").await, jobs + 1);
    assert_eq!(ledger.count("job_events").await, events + 1);
}

fn assert_field(err: &Error, field: &str, what: &str) {
    match err {
        Error::InvalidInput { details, message } => {
            assert_eq!(details.field, field, "{what}: {message}");
            assert!(
                message.contains(field),
                "{what}: the message names the field: {message}"
            );
        }
        other => panic!("{what}: expected invalid_input, got {other:?}"),
    }
}

#[tokio::test]
async fn jobs_page_by_keyset_newest_first() {
    let ledger = Ledger::new().await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(ledger.submit(&format!("page-{i}")).await.job.id);
    }
    ledger.engine.cancel(OWNER, &ids[3]).await.expect("cancel");
    ids.reverse();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let query = JobsQuery {
            after,
            limit: Some(3),
            ..JobsQuery::default()
        };
        let page = ledger.engine.jobs(OWNER, &query).await.expect("page");
        seen.extend(page.jobs.iter().map(|j| j.id.clone()));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    let query = JobsQuery {
        status: Some(JobStatus::Cancelled),
        ..JobsQuery::default()
    };
    let cancelled = ledger.engine.jobs(OWNER, &query).await.expect("filtered");
    assert_eq!(cancelled.jobs.len(), 1);
    assert_eq!(cancelled.next, None);
    let bad = JobsQuery {
        limit: Some(0),
        ..JobsQuery::default()
    };
    assert_eq!(code(ledger.engine.jobs(OWNER, &bad).await), "invalid_input");
}

#[tokio::test]
async fn history_is_append_only() {
    let ledger = Ledger::new().await;
    ledger.submit("history").await;
    let raw = ledger.raw().await;
    let update = raw
        .execute(Sql::both("UPDATE job_events SET kind = 'edited'"), &[])
        .await;
    assert!(update
        .expect_err("no update")
        .to_string()
        .contains("append-only"));
    let delete = raw.execute(Sql::both("DELETE FROM job_events"), &[]).await;
    assert!(delete
        .expect_err("no delete")
        .to_string()
        .contains("append-only"));
    raw.close().await;
}

#[tokio::test]
async fn providers_refuse_secrets_and_bad_timeouts() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let with_key = r#"{"name":"p","kind":"http","base_url":"http://127.0.0.1:1/","soft_timeout_ms":1,"hard_timeout_ms":2,"honours_idempotency_key":false,"api_key":"sk-live-123"}"#;
    assert_field(
        &e.add_provider(with_key).await.expect_err("secret"),
        "provider.api_key",
        "secret",
    );
    let backwards = r#"{"name":"p","kind":"http","base_url":"http://127.0.0.1:1/","soft_timeout_ms":10,"hard_timeout_ms":2,"honours_idempotency_key":false}"#;
    assert_field(
        &e.add_provider(backwards).await.expect_err("timeouts"),
        "provider.hard_timeout_ms",
        "timeouts",
    );
    let bad_dials = r#"{"name":"s","kind":"sandbox","soft_timeout_ms":1,"hard_timeout_ms":2,"honours_idempotency_key":true,"dials":{"throttle":1.5}}"#;
    assert_field(
        &e.add_provider(bad_dials).await.expect_err("dials"),
        "provider.dials.throttle",
        "dials",
    );
    let (_, replaced) = e
        .add_provider(&common::provider_json("primary"))
        .await
        .expect("replace");
    assert!(replaced);
    e.remove_provider("fallback").await.expect("remove");
    assert_eq!(code(e.remove_provider("fallback").await), "not_found");
    let names: Vec<String> = e
        .providers()
        .await
        .expect("list")
        .into_iter()
        .map(|p| p.config.name)
        .collect();
    assert_eq!(names, ["primary", "sandbox"]);
}

#[tokio::test]
async fn a_new_ledger_can_submit_to_the_sandbox_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let location = onejob_testkit::ledger_location(&dir.path().join("new.db"));
    let engine = onejob_engine::Engine::open(&location).await.expect("open");
    let sandbox = engine
        .provider("sandbox")
        .await
        .expect("a sandbox provider");
    assert_eq!(sandbox.config.kind, onejob_engine::ProviderKind::Sandbox);
    let intent = r#"{"route": ["sandbox"], "input": {"prompt": "hello"}}"#;
    engine.submit(OWNER, "first", intent).await.expect("submit");
    // Removing it is a person's choice that a later open does not undo.
    engine.remove_provider("sandbox").await.expect("remove");
    engine.close().await;
    let reopened = onejob_engine::Engine::open(&location)
        .await
        .expect("reopen");
    assert_eq!(code(reopened.provider("sandbox").await), "not_found");
}

/// `close` returns once every connection is closed, the change feed's too. On SQLite the last
/// connection to close removes the WAL and its index, so after `close` the ledger is one file
/// that nothing changes any more under whoever reads it next (a copy, a backup, a test looking
/// for a secret in what the ledger wrote).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_returns_once_the_change_feeds_connection_is_closed() {
    if onejob_testkit::sqlite_only("the files a SQLite ledger's last connection removes") {
        return;
    }
    for round in 0..20 {
        let ledger = Ledger::new().await;
        let e = &ledger.engine;
        let _changes = e.changes(Duration::from_millis(5)).await.expect("changes");
        ledger.submit("one").await;
        e.close().await;
        let left: Vec<String> = std::fs::read_dir(ledger.dir.path())
            .expect("list")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name != "onejob.db")
            .collect();
        assert!(
            left.is_empty(),
            "round {round}: still there after close: {left:?}"
        );
    }
}

#[tokio::test]
async fn changes_are_announced_whoever_writes() {
    let ledger = Ledger::new().await;
    let mut changes = ledger
        .engine
        .changes(Duration::from_millis(20))
        .await
        .expect("watch");
    // Another engine on the file stands in for another process.
    let other = ledger.reopen().await;
    other
        .submit(OWNER, "from-elsewhere", &intent(json!(1)))
        .await
        .expect("submit");
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("announced in time")
        .expect("watcher alive");
    let before = *changes.borrow_and_update();
    ledger.submit("from-here").await;
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("announced in time")
        .expect("watcher alive");
    assert!(*changes.borrow() > before);
}

/// Connections watching the ledger for changes, with whatever else this process holds open on
/// it: on SQLite every connection of this process to the file (counted by its open files), on
/// PostgreSQL the connections listening on the database.
async fn watching(ledger: &Ledger) -> i64 {
    if onejob_testkit::is_url(&ledger.location) {
        let raw = ledger.raw().await;
        let listening: (i64,) = raw
            .fetch_one(
                Sql::both(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
                ),
                &[],
            )
            .await
            .expect("count listeners");
        raw.close().await;
        return listening.0;
    }
    let file = std::fs::canonicalize(&ledger.location).expect("the ledger's file");
    let open = std::fs::read_dir("/proc/self/fd").expect("this process's open files");
    let held = open
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| *target == file)
        .count();
    i64::try_from(held).expect("a count")
}

/// Every face of one engine (the window, its notifications, the executor, the HTTP API's
/// streams) watches through one feed: one connection checking the file, or one listening,
/// however many watch. Each copy announces every change made after it was taken.
#[tokio::test]
async fn the_faces_of_one_engine_share_one_change_feed() {
    let ledger = Ledger::new().await;
    let before = watching(&ledger).await;
    let every = Duration::from_millis(20);
    let mut first = ledger.engine.changes(every).await.expect("watch");
    // Each face holds a clone of the engine; one is content with fewer checks.
    let face = ledger.engine.clone();
    let mut second = face.changes(every).await.expect("watch");
    let mut slower = face
        .changes(Duration::from_millis(250))
        .await
        .expect("watch");
    assert!(first.same_channel(&second), "one feed");
    assert!(first.same_channel(&slower), "one feed");
    assert_eq!(
        watching(&ledger).await - before,
        1,
        "one connection watches for three faces"
    );
    // A copy taken after a change does not announce it.
    ledger.submit("before-the-last-copy").await;
    tokio::time::timeout(Duration::from_secs(5), first.changed())
        .await
        .expect("announced in time")
        .expect("feed alive");
    let mut last = face.changes(every).await.expect("watch");
    assert!(!last.has_changed().expect("feed alive"));

    ledger.submit("seen-by-all").await;
    for feed in [&mut first, &mut second, &mut slower, &mut last] {
        tokio::time::timeout(Duration::from_secs(5), feed.changed())
            .await
            .expect("announced in time")
            .expect("feed alive");
    }
    // Faces that stop watching leave the feed to the others.
    drop((first, second, slower));
    ledger.submit("after-three-left").await;
    tokio::time::timeout(Duration::from_secs(5), last.changed())
        .await
        .expect("announced in time")
        .expect("feed alive");
    // Closing the engine ends the feed for every face still holding a copy, and lets go of
    // its connection.
    ledger.engine.close().await;
    let ended = async { while last.changed().await.is_ok() {} };
    tokio::time::timeout(Duration::from_secs(10), ended)
        .await
        .expect("the feed ends with the engine");
    // A listening connection is let go of as the feed ends, not necessarily before.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while watching(&ledger).await > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        watching(&ledger).await,
        0,
        "nothing watches a closed ledger"
    );
}

#[tokio::test]
async fn the_far_end_of_the_list_is_one_page_away_and_counted() {
    let ledger = Ledger::new().await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(ledger.submit(&format!("end-{i}")).await.job.id);
    }
    let query = JobsQuery {
        limit: Some(3),
        oldest_first: true,
        ..JobsQuery::default()
    };
    let first = ledger
        .engine
        .jobs(OWNER, &query)
        .await
        .expect("oldest page");
    let got: Vec<_> = first.jobs.iter().map(|j| j.id.clone()).collect();
    assert_eq!(got, ids[..3]);
    let query = JobsQuery {
        after: first.next,
        ..query
    };
    let second = ledger
        .engine
        .jobs(OWNER, &query)
        .await
        .expect("next oldest page");
    assert_eq!(second.jobs[0].id, ids[3]);
    assert_eq!(
        ledger
            .engine
            .count_jobs(OWNER, &JobsQuery::default())
            .await
            .expect("count"),
        7
    );
    let queued = ledger
        .engine
        .count_jobs(OWNER, &status(JobStatus::Queued))
        .await;
    assert_eq!(queued.expect("count"), 7);
    let done = ledger
        .engine
        .count_jobs(OWNER, &status(JobStatus::Succeeded))
        .await;
    assert_eq!(done.expect("count"), 0);
}

/// A query for one status, as the Jobs list's filter asks.
fn status(status: JobStatus) -> JobsQuery {
    JobsQuery {
        status: Some(status),
        ..JobsQuery::default()
    }
}

/// Each move writes its event in the statement that makes it: one event per move made, the
/// details as the history shows them, and none for a move that was refused.
#[tokio::test]
async fn every_move_writes_its_own_event_and_a_refused_move_none() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let job = ledger.submit("events").await.job;
    let first = e.claim_attempt(&job.id, "primary").await.expect("claim");
    assert_eq!(first.job.status, JobStatus::Running);
    assert_eq!(first.attempt.state, AttemptState::Pending);
    let sent = e
        .mark_sent(&first.attempt.id, "executor-1", Duration::from_secs(30))
        .await
        .expect("sent");
    assert_eq!(sent.state, AttemptState::InFlight);
    assert!(sent.sent_at.is_some() && sent.lease_expires_at.is_some());
    // A second send of the same attempt is refused and leaves no trace.
    let again = e
        .mark_sent(&first.attempt.id, "executor-2", Duration::from_secs(30))
        .await;
    assert_eq!(code(again), "invalid_transition");
    let failed = e
        .fail_attempt(
            &first.attempt.id,
            why("boom"),
            Some(503),
            AfterFailure::Requeue,
        )
        .await
        .expect("failed");
    assert_eq!(failed.job.status, JobStatus::Queued);
    let retried = e
        .retry(OWNER, &job.id, Some("fallback"))
        .await
        .expect("retry");
    let done = e
        .complete(&retried.attempt.id, &json!({"text": "ok"}), Cause::Answer)
        .await;
    assert_eq!(
        code(done),
        "invalid_transition",
        "a pending attempt is not answered"
    );
    e.mark_sent(&retried.attempt.id, "executor-1", Duration::from_secs(30))
        .await
        .expect("sent");
    let done = e
        .complete(&retried.attempt.id, &json!({"text": "ok"}), Cause::Answer)
        .await
        .expect("complete");
    assert_eq!(done.outcome, Outcome::Won);
    assert_eq!(done.job.status, JobStatus::Succeeded);
    assert_eq!(done.job.result, Some(json!({"text": "ok"})));
    assert_eq!(done.attempt.state, AttemptState::Succeeded);

    let history = e.job(OWNER, &job.id).await.expect("job").events;
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "submitted",
            "attempt_created",
            "attempt_sent",
            "attempt_failed",
            "attempt_created",
            "attempt_sent",
            "attempt_succeeded"
        ]
    );
    assert_eq!(
        history[1].detail,
        json!({"number": 1, "provider": "primary", "explicit": false})
    );
    assert_eq!(
        history[4].detail,
        json!({"number": 2, "provider": "fallback", "explicit": true})
    );
    assert_eq!(history[2].detail["executor_id"], "executor-1");
    assert_eq!(history[2].detail["lease_ms"], 30_000);
    assert_eq!(history[3].detail["http_status"], 503);
    for (event, attempt) in history[1..4].iter().zip([&first.attempt.id; 3]) {
        assert_eq!(event.attempt_id.as_ref(), Some(attempt));
    }
}

#[tokio::test]
async fn a_large_result_is_read_whole_only_when_asked_for_by_its_owner() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let big = json!({ "rows": vec!["x".repeat(100); 50_000] });
    let a = ledger.in_flight("large").await.attempt;
    e.complete(&a.id, &big, Cause::Answer)
        .await
        .expect("complete");
    let id = a.job_id.clone();

    // The job's detail and its history are read whole as before; the shown form is the face's.
    let detail = e.job(OWNER, &id).await.expect("job");
    assert!(matches!(
        ShownValue::of(detail.job.result.clone().expect("result")),
        ShownValue::Large { .. }
    ));

    assert_eq!(
        e.job_part(OWNER, &id, JobPart::Result)
            .await
            .expect("result"),
        big
    );
    assert_eq!(
        e.job_part(OWNER, &id, JobPart::Intent)
            .await
            .expect("intent"),
        detail.job.intent
    );
    let last = u32::try_from(detail.events.len() - 1).expect("a short history");
    assert_eq!(
        e.job_part(OWNER, &id, JobPart::EventDetail { index: last })
            .await
            .expect("detail"),
        detail.events[last as usize].detail
    );

    let past = JobPart::EventDetail { index: last + 1 };
    assert_eq!(code(e.job_part(OWNER, &id, past).await), "not_found");
    assert_eq!(
        code(e.job_part("someone-else", &id, JobPart::Result).await),
        "not_found"
    );
    let queued = ledger.submit("no-result").await.job.id;
    assert_eq!(
        code(e.job_part(OWNER, &queued, JobPart::Result).await),
        "not_found"
    );
}

/// A job of `owner` routed to `provider` alone, whose one attempt there is `unknown` for the
/// rule `kind`.
async fn unknown_job(
    ledger: &Ledger,
    owner: &str,
    key: &str,
    provider: &str,
    kind: &str,
) -> String {
    let e = &ledger.engine;
    let body = json!({ "route": [provider], "input": key }).to_string();
    let job = e.submit(owner, key, &body).await.expect("submit").job;
    let claimed = ledger.next_in_flight(&job.id, provider).await;
    e.mark_unknown(&claimed.attempt.id, why(kind))
        .await
        .expect("unknown");
    job.id
}

fn resolve_all(verdict: Verdict, filter: BulkFilter) -> BulkRequest {
    BulkRequest {
        action: BulkAction::Resolve,
        filter,
        verdict: Some(verdict),
        provider: None,
        dry_run: false,
    }
}

/// The events of the job that name the bulk operation `id`.
async fn naming(ledger: &Ledger, owner: &str, job_id: &str, id: &str) -> Vec<String> {
    let detail = ledger.engine.job(owner, job_id).await.expect("job");
    detail
        .events
        .iter()
        .filter(|e| e.detail["bulk"] == id)
        .map(|e| e.kind.clone())
        .collect()
}

/// The confirmation names the providers of the set it fixed, not of the whole ledger: another
/// owner's provider and a job outside the filter are not among them; a dry run fixes no set.
#[tokio::test]
async fn a_bulk_operation_names_the_providers_of_its_set() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    unknown_job(&ledger, OWNER, "at-primary", "primary", "soft_timeout").await;
    unknown_job(&ledger, OWNER, "at-fallback", "fallback", "soft_timeout").await;
    unknown_job(&ledger, "bob", "bobs", "primary", "soft_timeout").await;
    let running = ledger.in_flight("running").await.job.id;
    let every_unknown = resolve_all(Verdict::Abandoned, BulkFilter::default());
    let started = e
        .bulk_start(OWNER, "both", &every_unknown)
        .await
        .expect("started")
        .operation;
    assert_eq!(started.matched, 2);
    assert_eq!(started.providers, vec!["fallback", "primary"]);
    let only = resolve_all(
        Verdict::Abandoned,
        BulkFilter {
            error_kind: Some("soft_timeout".into()),
            search: Some("at-primary".into()),
            ..Default::default()
        },
    );
    let one = e
        .bulk_start(OWNER, "one", &only)
        .await
        .expect("one")
        .operation;
    assert_eq!(
        (one.matched, one.providers.clone()),
        (1, vec!["primary".to_owned()])
    );
    // Read back as it stands, the same names.
    let id = started.id.clone().expect("an id");
    assert_eq!(
        e.bulk_operation(OWNER, &id).await.expect("read").providers,
        started.providers
    );
    let mut dry = every_unknown.clone();
    dry.dry_run = true;
    let counted = e
        .bulk_start(OWNER, "dry", &dry)
        .await
        .expect("dry")
        .operation;
    assert!(counted.providers.is_empty(), "{counted:?}");
    assert_eq!(
        e.job(OWNER, &running).await.expect("job").job.status,
        JobStatus::Running
    );
}

#[tokio::test]
async fn a_bulk_resolve_changes_exactly_the_jobs_that_matched_when_it_started() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let mut set = Vec::new();
    for i in 0..5 {
        set.push(
            unknown_job(
                &ledger,
                OWNER,
                &format!("out-{i}"),
                "primary",
                "soft_timeout",
            )
            .await,
        );
    }
    // Outside the filter: another provider, another rule, another owner, a job still running.
    let elsewhere = unknown_job(&ledger, OWNER, "elsewhere", "fallback", "soft_timeout").await;
    let other_rule =
        unknown_job(&ledger, OWNER, "other-rule", "primary", "connection_broken").await;
    let bobs = unknown_job(&ledger, "bob", "out-0", "primary", "soft_timeout").await;
    let running = ledger.in_flight("running").await.job.id;
    let filter = BulkFilter {
        provider: Some("primary".into()),
        error_kind: Some("soft_timeout".into()),
        ..Default::default()
    };

    // A dry run counts what would match and records nothing.
    let mut dry = resolve_all(Verdict::Failed, filter.clone());
    dry.dry_run = true;
    let counted = e
        .bulk_start(OWNER, "dry", &dry)
        .await
        .expect("dry run")
        .operation;
    assert_eq!((counted.matched, counted.changed, counted.id), (5, 0, None));
    assert_eq!(ledger.count("bulk_operations").await, 0);

    let started = e
        .bulk_start(
            OWNER,
            "after-the-outage",
            &resolve_all(Verdict::Failed, filter),
        )
        .await
        .expect("started");
    assert!(!started.replayed);
    let id = started.operation.id.clone().expect("an id");
    assert_eq!(started.operation.matched, 5);
    assert!(!started.operation.done);

    // Meanwhile: a new job matches the filter, and one of the set is settled alone.
    let late = unknown_job(&ledger, OWNER, "late", "primary", "soft_timeout").await;
    let moved = &set[2];
    let moved_attempt = e.job(OWNER, moved).await.expect("job").attempts[0]
        .id
        .clone();
    e.resolve(
        OWNER,
        &moved_attempt,
        Verdict::Succeeded,
        Resolution {
            result: Some(json!({"seen": "on the provider's dashboard"})),
            ..Default::default()
        },
    )
    .await
    .expect("settled alone");

    let mut seen = Vec::new();
    let done = e.bulk_run(OWNER, &id, |p| seen.push(p)).await.expect("run");
    assert!(done.done);
    assert_eq!((done.matched, done.changed), (5, 4));
    assert_eq!(done.skipped.len(), 1, "{done:?}");
    assert_eq!(done.skipped[0].job_id, *moved);
    assert_eq!(done.skipped[0].code, "invalid_transition");
    assert_eq!(seen.last().map(|p| p.decided), Some(5));

    for job_id in set.iter().filter(|j| *j != moved) {
        let detail = e.job(OWNER, job_id).await.expect("job");
        assert_eq!(detail.job.status, JobStatus::Queued, "{job_id}");
        assert_eq!(detail.attempts[0].state, AttemptState::Failed);
        assert_eq!(
            naming(&ledger, OWNER, job_id, &id).await,
            ["resolved_by_person"]
        );
    }
    // The one settled alone keeps its result; nothing of the operation is in its history.
    let kept = e.job(OWNER, moved).await.expect("job");
    assert_eq!(kept.job.status, JobStatus::Succeeded);
    assert!(naming(&ledger, OWNER, moved, &id).await.is_empty());
    for (owner, job_id) in [
        (OWNER, &late),
        (OWNER, &elsewhere),
        (OWNER, &other_rule),
        ("bob", &bobs),
    ] {
        let untouched = e.job(owner, job_id).await.expect("job");
        assert_eq!(untouched.job.status, JobStatus::Unknown, "{job_id}");
    }
    assert_eq!(
        e.job(OWNER, &running).await.expect("job").job.status,
        JobStatus::Running
    );
    // Another owner cannot see the operation.
    assert_eq!(code(e.bulk_operation("bob", &id).await), "not_found");
}

#[tokio::test]
async fn a_bulk_operation_repeated_with_its_key_changes_nothing_twice() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let mut jobs = Vec::new();
    for i in 0..4 {
        jobs.push(unknown_job(&ledger, OWNER, &format!("k-{i}"), "primary", "soft_timeout").await);
    }
    let freed = e
        .bulk(
            OWNER,
            "free",
            &resolve_all(Verdict::Abandoned, BulkFilter::default()),
            |_| {},
        )
        .await
        .expect("resolved");
    assert_eq!(freed.operation.changed, 4);

    // A retry starts a paid attempt per job: the same key again starts none.
    let retry = BulkRequest {
        action: BulkAction::Retry,
        filter: BulkFilter {
            status: Some(JobStatus::Queued),
            ..Default::default()
        },
        verdict: None,
        provider: Some("fallback".into()),
        dry_run: false,
    };
    let first = e
        .bulk(OWNER, "again", &retry, |_| {})
        .await
        .expect("retried");
    assert!(!first.replayed);
    assert_eq!((first.operation.matched, first.operation.changed), (4, 4));
    let id = first.operation.id.clone().expect("id");
    let attempts = ledger.count("attempts").await;

    // The jobs are queued again meanwhile: a new run would retry them; the key's does not.
    for job_id in &jobs {
        let open = e.job(OWNER, job_id).await.expect("job").attempts[1]
            .id
            .clone();
        ledger.abandon(&open).await;
    }
    let again = e
        .bulk(OWNER, "again", &retry, |_| {})
        .await
        .expect("replayed");
    assert_eq!(
        ledger.count("attempts").await,
        attempts,
        "no attempt started twice"
    );
    assert!(again.replayed);
    assert_eq!(again.operation, first.operation);
    for job_id in &jobs {
        assert_eq!(
            naming(&ledger, OWNER, job_id, &id).await,
            ["attempt_created"],
            "one attempt per job, named once"
        );
    }

    // Another request under the key is a conflict naming the operation.
    let mut other = retry.clone();
    other.provider = Some("primary".into());
    let conflict = e
        .bulk(OWNER, "again", &other, |_| {})
        .await
        .expect_err("conflict");
    assert_eq!(conflict.code(), "idempotency_conflict");
    assert!(conflict.to_string().contains(&id), "{conflict}");
}

#[tokio::test]
async fn a_bulk_operation_declined_before_it_ran_is_discarded_and_one_that_ran_is_kept() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let job = unknown_job(&ledger, OWNER, "out-0", "primary", "soft_timeout").await;
    let before = e.job(OWNER, &job).await.expect("job");
    let filter = BulkFilter {
        provider: Some("primary".into()),
        ..Default::default()
    };
    let asked = e
        .bulk_start(
            OWNER,
            "asked",
            &resolve_all(Verdict::Failed, filter.clone()),
        )
        .await
        .expect("started")
        .operation;
    let id = asked.id.expect("an id");
    assert_eq!(asked.matched, 1);
    assert_eq!(code(e.bulk_discard("bob", &id).await), "not_found");
    e.bulk_discard(OWNER, &id).await.expect("discarded");
    assert_eq!(ledger.count("bulk_operations").await, 0);
    assert_eq!(ledger.count("bulk_items").await, 0);
    assert_eq!(code(e.bulk_run(OWNER, &id, |_| {}).await), "not_found");
    let untouched = e.job(OWNER, &job).await.expect("job");
    assert_eq!(untouched.job.status, JobStatus::Unknown);
    assert_eq!(untouched.events.len(), before.events.len());

    // The key is free again; an operation that decided its jobs stays on record.
    let ran = e
        .bulk(
            OWNER,
            "asked",
            &resolve_all(Verdict::Abandoned, filter),
            |_| {},
        )
        .await
        .expect("ran");
    assert!(!ran.replayed);
    let ran = ran.operation.id.expect("an id");
    assert_eq!(
        code(e.bulk_discard(OWNER, &ran).await),
        "invalid_transition"
    );
    assert_eq!(ledger.count("bulk_operations").await, 1);
    assert_eq!(
        naming(&ledger, OWNER, &job, &ran).await,
        ["resolved_by_person"]
    );
}

#[tokio::test]
async fn the_jobs_list_takes_the_open_attempts_error_kind_and_creation_times_as_a_bulk_operation_does(
) {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let mut made = Vec::new();
    for (key, kind) in [
        ("first", "soft_timeout"),
        ("second", "connection_broken"),
        ("third", "soft_timeout"),
    ] {
        made.push(unknown_job(&ledger, OWNER, key, "primary", kind).await);
        // Apart by more than the ledger's millisecond, so each time falls between two jobs.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let created = |i: usize| {
        let id = made[i].clone();
        async move { e.job(OWNER, &id).await.expect("job").job.created_at }
    };
    let (first, third) = (created(0).await, created(2).await);
    let listed = |query: JobsQuery| async move {
        let page = e.job_summaries(OWNER, &query).await.expect("a page");
        let count = e.count_jobs(OWNER, &query).await.expect("a count");
        // What a bulk operation with the same filter would take.
        let dry = BulkRequest {
            action: BulkAction::Cancel,
            filter: query.filter(),
            verdict: None,
            provider: None,
            dry_run: true,
        };
        let would = e.bulk_start(OWNER, "dry", &dry).await.expect("dry run");
        let ids: Vec<String> = page.jobs.into_iter().map(|j| j.id).collect();
        assert_eq!(count as usize, ids.len());
        assert_eq!(would.operation.matched, count);
        ids
    };
    let kind = |k: &str| JobsQuery {
        error_kind: Some(k.into()),
        ..JobsQuery::default()
    };
    assert_eq!(
        listed(kind("soft_timeout")).await,
        [made[2].clone(), made[0].clone()]
    );
    assert_eq!(listed(kind("connection_broken")).await, [made[1].clone()]);
    assert_eq!(listed(kind("  ")).await.len(), 3, "blank is no filter");
    let after_first = JobsQuery {
        created_after: Some(first.clone()),
        ..JobsQuery::default()
    };
    assert_eq!(
        listed(after_first.clone()).await,
        [made[2].clone(), made[1].clone()]
    );
    let between = JobsQuery {
        created_before: Some(third.clone()),
        ..after_first
    };
    assert_eq!(listed(between.clone()).await, [made[1].clone()]);
    assert!(listed(JobsQuery {
        error_kind: Some("soft_timeout".into()),
        ..between
    })
    .await
    .is_empty());
    // A date is its midnight UTC: every job of today was created after it.
    let today = JobsQuery {
        created_after: Some(first[..10].to_owned()),
        ..JobsQuery::default()
    };
    assert_eq!(listed(today).await.len(), 3);

    let bad_time = JobsQuery {
        created_before: Some("yesterday".into()),
        ..JobsQuery::default()
    };
    let field = |result: Result<u32, Error>| match result {
        Err(Error::InvalidInput { details, .. }) => details.field,
        other => panic!("expected invalid_input, got {other:?}"),
    };
    assert_eq!(
        field(e.count_jobs(OWNER, &bad_time).await),
        "created_before"
    );
    let long_kind = kind(&"k".repeat(65));
    assert_eq!(field(e.count_jobs(OWNER, &long_kind).await), "error_kind");
}

/// A bulk operation decides its jobs a few per transaction; on SQLite, where the process writes
/// through one connection, a batch ends after the job it is deciding as soon as another write
/// waits for the writer, so a submit beside a 10,000-job operation waits for one job of it, not
/// for a batch (the benchmark's submit p99 beside it went from 26.9 ms to about 4). Here a
/// submitter floods the ledger while 40 jobs are resolved: on SQLite some batch ends before
/// its eight jobs; on either backend every submit is answered and every job decided once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_operation_lets_a_waiting_write_in_after_one_job() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    for i in 0..40 {
        unknown_job(
            &ledger,
            OWNER,
            &format!("wait-{i}"),
            "primary",
            "soft_timeout",
        )
        .await;
    }
    let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let submitter = {
        let (e, running) = (e.clone(), running.clone());
        tokio::spawn(async move {
            let mut answered = 0;
            while running.load(std::sync::atomic::Ordering::SeqCst) {
                let key = format!("beside-{answered}");
                e.submit(OWNER, &key, &intent(json!(answered)))
                    .await
                    .expect("a submit beside the operation");
                answered += 1;
            }
            answered
        })
    };
    let mut steps = Vec::new();
    let filter = BulkFilter {
        status: Some(JobStatus::Unknown),
        ..Default::default()
    };
    let done = e
        .bulk(
            OWNER,
            "beside",
            &resolve_all(Verdict::Abandoned, filter),
            |p| steps.push(p.decided),
        )
        .await
        .expect("resolved");
    running.store(false, std::sync::atomic::Ordering::SeqCst);
    let answered = submitter.await.expect("submitter");
    assert_eq!(done.operation.changed, 40);
    assert!(answered > 0, "no submit was answered beside the operation");
    let sizes: Vec<u32> = steps
        .iter()
        .scan(0, |before, &decided| {
            let size = decided - *before;
            *before = decided;
            Some(size)
        })
        .collect();
    if !onejob_testkit::is_url(&ledger.location) {
        let (_, full) = sizes.split_last().expect("a step");
        assert!(
            full.iter().any(|&size| size < 8),
            "every batch ran to its eight jobs while {answered} submits waited: {sizes:?}"
        );
    }
}
