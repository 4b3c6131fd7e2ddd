//! Behaviours the model-based test (`model/`) found at odds with SPEC.md, each reproduced
//! on its own, deterministically.

use crate::common;

use common::{why, Ledger, OWNER};
use onejob_engine::testing::{Cause, Claim, InternalCalls as _};
use onejob_engine::{JobStatus, Resolution, Verdict};
use serde_json::json;
use sqlx::Connection;

/// A status lookup starts while an attempt is `unknown`; before it returns, the person cancels
/// the job (which closes the attempt as `abandoned`). The lookup then says the provider did the
/// work. SPEC §5: an answer that arrives after the job was cancelled is dropped and flagged for
/// review, "the side effect may have happened, and the person must be able to see that".
#[tokio::test]
async fn a_lookup_that_finds_the_work_done_after_a_cancel_is_flagged_for_review() {
    let ledger = Ledger::new().await;
    let attempt = ledger.in_flight("lookup-after-cancel").await.attempt;
    let e = &ledger.engine;
    e.mark_unknown(&attempt.id, why("timeout"))
        .await
        .expect("unknown");
    e.cancel(OWNER, &attempt.job_id).await.expect("cancel");

    let looked_up = e
        .complete(&attempt.id, &json!({ "done": true }), Cause::Reconciliation)
        .await;

    let refused = looked_up.expect_err("an abandoned attempt moves only by a late answer");
    assert_eq!(refused.code(), "invalid_transition");
    let detail = e.job(OWNER, &attempt.job_id).await.expect("job");
    assert_eq!(detail.job.status, JobStatus::Cancelled);
    assert!(
        detail.job.flagged_for_review,
        "the lookup found the work done after the cancel ({refused:?}), yet the job is not flagged for review"
    );
    assert!(detail.attempts[0].flagged_for_review);
    assert!(detail
        .events
        .iter()
        .any(|ev| ev.kind == "late_answer_flagged"));
}

/// On PostgreSQL, a statement that fails aborts its whole transaction. A person's second retry
/// while the first retry's attempt is open was refused by the one-open-attempt index as an
/// error, and the ledger's next statement (reading the open attempt, to name it) then failed
/// with `storage` instead of the `attempt_blocked` SPEC §4 promises (the model test's schedule:
/// submit, retry, retry). The refusal is now a row not inserted, on both backends.
#[tokio::test]
async fn a_second_retry_while_one_is_open_is_attempt_blocked_naming_it_on_every_backend() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let job = ledger.submit("retry-twice").await.job;
    let first = e
        .retry(OWNER, &job.id, None)
        .await
        .expect("the first retry");
    let second = e
        .retry(OWNER, &job.id, None)
        .await
        .expect_err("a second attempt while the first is open");
    assert_eq!(second.code(), "attempt_blocked", "{second:?}");
    match second {
        onejob_engine::Error::AttemptBlocked { details, .. } => {
            assert_eq!(details.attempt_id, first.attempt.id);
        }
        other => panic!("{other:?}"),
    }
}

/// A person's call that the ledger refused after its transaction took the job's lock (a
/// stranger's retry or cancel, a verdict on another owner's attempt) returned its refusal with
/// the transaction only dropped, and a dropped transaction is rolled back a moment later, by a
/// task of its own. Until then the job stayed locked: on PostgreSQL another host's claim passed
/// over it (`Skipped`), which the model test saw as a claim skipped where the route policy
/// fails the job (PostgreSQL pass, seed 16153235488316134047, step 34). Every write now rolls
/// back before it answers with a refusal.
#[tokio::test(flavor = "current_thread")]
async fn a_refused_call_holds_no_lock_past_its_answer() {
    const STRANGER: &str = "intruder";
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let other = ledger.reopen().await;
    let job = ledger.submit("refused-no-lock").await.job;
    let mut check = LockCheck::open(&ledger.location).await;
    let running = ledger.in_flight("refused-no-lock-attempt").await.attempt;
    for round in 0..100 {
        let refused = e.retry(STRANGER, &job.id, None).await.expect_err("retry");
        assert_eq!(refused.code(), "not_found");
        check
            .assert_free(&job.id, round, "a stranger's retry")
            .await;

        let key = format!("stranger-{round}");
        let refused = e.retry_keyed(STRANGER, &key, &job.id, None).await;
        assert_eq!(refused.expect_err("keyed retry").code(), "not_found");
        check
            .assert_free(&job.id, round, "a stranger's keyed retry")
            .await;

        let refused = e.cancel(STRANGER, &job.id).await.expect_err("cancel");
        assert_eq!(refused.code(), "not_found");
        check
            .assert_free(&job.id, round, "a stranger's cancel")
            .await;

        let verdict = e
            .resolve(
                STRANGER,
                &running.id,
                Verdict::Failed,
                Resolution::default(),
            )
            .await;
        assert_eq!(verdict.expect_err("resolve").code(), "not_found");
        check
            .assert_free(&running.job_id, round, "a stranger's verdict")
            .await;
    }
    // And so the next claim, by another host, claims the job at once.
    match other.claim_next(&job.id).await.expect("claim") {
        Claim::Attempt(_) => {}
        claimed => panic!("another host's claim after the refusals: {claimed:?}"),
    }
}

/// A connection beside the engines that asks whether a job's lock is free, without waiting:
/// on PostgreSQL by locking its row, on SQLite by taking the file's write lock. Opened before
/// the calls it checks, so that each check is one statement sent at once.
enum LockCheck {
    Postgres(sqlx::PgConnection),
    Sqlite(sqlx::SqliteConnection),
}

impl LockCheck {
    async fn open(location: &str) -> LockCheck {
        if onejob_testkit::is_url(location) {
            let conn = sqlx::PgConnection::connect(location).await;
            LockCheck::Postgres(conn.expect("connect"))
        } else {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(location)
                .busy_timeout(std::time::Duration::ZERO);
            let conn = sqlx::SqliteConnection::connect_with(&options).await;
            LockCheck::Sqlite(conn.expect("connect"))
        }
    }

    async fn assert_free(&mut self, job_id: &str, round: usize, after: &str) {
        assert!(
            self.free(job_id).await,
            "round {round}: {after} was refused, yet the job's lock was held after the answer"
        );
    }

    async fn free(&mut self, job_id: &str) -> bool {
        match self {
            LockCheck::Postgres(conn) => {
                let sql = "SELECT id::text FROM jobs WHERE id = onejob_uuid($1) FOR UPDATE NOWAIT";
                let locked = sqlx::query_scalar::<_, String>(sql)
                    .bind(job_id)
                    .fetch_optional(&mut *conn)
                    .await;
                match locked {
                    Ok(_) => true,
                    Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("55P03") => {
                        false
                    }
                    Err(other) => panic!("the lock check: {other}"),
                }
            }
            LockCheck::Sqlite(conn) => {
                match sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await {
                    Ok(_) => {
                        let rolled_back = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                        rolled_back.expect("rollback");
                        true
                    }
                    Err(sqlx::Error::Database(db)) if db.message().contains("locked") => false,
                    Err(other) => panic!("the lock check: {other}"),
                }
            }
        }
    }
}
