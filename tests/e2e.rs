//! End-to-end tests in the real window: each test starts its own Xvfb, tauri-driver (which
//! starts WebKitWebDriver and the app) and a fresh data directory, drives the UI through
//! classic WebDriver, and saves a screenshot of what it saw in `artifacts/`.
//! The harness is in `window/`.

// A step that fails should stop the test where it failed.
#![allow(clippy::unwrap_used)]

mod window;

use std::time::{Duration, Instant};

use fantoccini::Locator;
use onejob_engine::Verdict;
use serde_json::json;
use window::{run, sandbox, seed_jobs, Window};

#[test]
fn two_clicks_within_50_ms_make_one_job_and_an_edited_intent_a_new_one() {
    run(async {
        let w = Window::open(|_| async {}).await;
        w.wait_for("[data-testid=first-run]").await;
        w.screenshot("jobs-first-run").await;
        w.click("[data-screen=submit]").await;
        let key = w.attr("[data-testid=draft-key]", "title").await.unwrap();

        // Two clicks 10 ms apart, dispatched in the page so the gap is real.
        w.client
            .execute(
                "const b = document.querySelector('[data-testid=submit]'); b.click(); \
                 setTimeout(() => b.click(), 10);",
                vec![],
            )
            .await
            .unwrap();
        w.wait_text("[data-testid=outcomes]", |t| {
            t.contains("Already submitted")
        })
        .await;
        let ids = job_ids(&w).await;
        assert_eq!(ids.len(), 2, "one outcome per click");
        assert_eq!(ids[0], ids[1], "both clicks name the same job");
        let page = w.engine.jobs("local", &Default::default()).await.unwrap();
        assert_eq!(page.jobs.len(), 1, "two clicks, one job");
        assert_eq!(page.jobs[0].idempotency_key, key);
        w.screenshot("submit").await;

        // Re-submitting the unchanged draft: the same job again.
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.matches("Already submitted").count() == 2
        })
        .await;

        // A different intent after a submit gets a new key. The text is selected and typed
        // over, as a person does: WebDriver's clear() sets the value behind React's back, so a
        // re-render (a ledger change) would put the old intent back.
        let edit = r#"{"route": ["sandbox"], "input": {"prompt": "Say hello again"}}"#;
        let intent = w.wait_for("[data-testid=intent]").await;
        w.client
            .execute(
                "const t = arguments[0]; t.focus(); t.select();",
                vec![serde_json::to_value(&intent).unwrap()],
            )
            .await
            .unwrap();
        intent.send_keys(edit).await.unwrap();
        assert_eq!(
            intent.prop("value").await.unwrap().as_deref(),
            Some(edit),
            "the typed intent replaced the old one"
        );
        // The key follows once the engine has fingerprinted the new intent.
        let new_key = wait_key(&w, |k| k != key).await;
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.contains("Submitted: new job")
        })
        .await;
        let fresh = job_ids(&w).await;
        assert_eq!(fresh.len(), 1);
        assert_ne!(fresh[0], ids[0], "a new intent is a new job");
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.contains("Already submitted")
        })
        .await;
        assert_eq!(job_ids(&w).await, vec![fresh[0].clone(), fresh[0].clone()]);
        let page = w.engine.jobs("local", &Default::default()).await.unwrap();
        assert_eq!(page.jobs.len(), 2);
        assert!(page.jobs.iter().any(|j| j.idempotency_key == new_key));

        w.click("[data-screen=settings]").await;
        let db = w.attr("[data-testid=db-path]", "title").await.unwrap();
        assert!(db.ends_with("dev.onejob.app/onejob.db"), "{db}");
        w.screenshot("settings").await;
        w.click("[data-screen=providers]").await;
        w.wait_for("[data-provider=sandbox]").await;
        // A contract added from outside arrives on the ledger event; its check runs on a click.
        let contract = json!({"name": "summary",
            "schema": {"type": "object", "properties": {"summary": {"type": "string"}}},
            "template": {"system": "Summarise.", "user": "{{text}}"},
            "samples": [{"text": "Rain, then sun."}]});
        w.engine.add_contract(&contract.to_string()).await.unwrap();
        w.wait_text("[data-check='summary/sandbox']", |t| {
            t.contains("Never checked")
        })
        .await;
        w.click("[data-testid=run-check-summary-sandbox]").await;
        let shown = w
            .wait_text("[data-check='summary/sandbox'] [data-check-id]", |t| {
                t.contains("passed") || t.contains("failed")
            })
            .await;
        let checks = w.engine.contract_checks("summary").await.unwrap();
        assert_eq!(checks.len(), 1, "one click, one check");
        let verdict = if checks[0].passed { "passed" } else { "failed" };
        assert!(shown.contains(verdict), "{shown}");
        assert!(shown.contains(&checks[0].samples[0].reason), "{shown}");
        w.client
            .execute(
                "document.querySelector('[data-contract=summary]').scrollIntoView();",
                vec![],
            )
            .await
            .unwrap();
        w.screenshot("providers").await;
        w.click("[data-screen=jobs]").await;
        w.wait_for(".job-row").await;
        w.screenshot("jobs").await;
        w.close().await;
    });
}

#[test]
fn a_draft_and_its_key_survive_a_visit_to_the_job_and_back() {
    run(async {
        let w = Window::open(|_| async {}).await;
        w.click("[data-screen=submit]").await;
        let key = w.attr("[data-testid=draft-key]", "title").await.unwrap();
        let intent = w
            .wait_for("[data-testid=intent]")
            .await
            .prop("value")
            .await
            .unwrap();
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.contains("Submitted: new job")
        })
        .await;
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.contains("Already submitted")
        })
        .await;

        // The job, opened from the "already submitted" line, then back to Submit.
        w.click("[data-testid=outcomes] [data-kind=replayed] [data-job-id]")
            .await;
        w.wait_for("#job-title").await;
        w.click("[data-screen=submit]").await;
        assert_eq!(
            w.attr("[data-testid=draft-key]", "title").await.unwrap(),
            key,
            "the draft came back with its key"
        );
        let field = w.wait_for("[data-testid=intent]").await;
        assert_eq!(field.prop("value").await.unwrap(), intent);
        assert_eq!(job_ids(&w).await.len(), 2, "and with its outcomes");
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.matches("Already submitted").count() == 2
        })
        .await;
        let page = w.engine.jobs("local", &Default::default()).await.unwrap();
        assert_eq!(page.jobs.len(), 1, "three clicks and a visit, one job");
        assert_eq!(page.jobs[0].idempotency_key, key);

        // Spaces added to the JSON are the same intent: the same key, already submitted.
        w.client
            .execute(
                "const t = arguments[0]; t.focus(); t.setSelectionRange(t.value.length, t.value.length);",
                vec![serde_json::to_value(&field).unwrap()],
            )
            .await
            .unwrap();
        field.send_keys("   ").await.unwrap();
        let spaced = format!("{}   ", intent.as_deref().unwrap());
        assert_eq!(
            field.prop("value").await.unwrap().as_deref(),
            Some(&*spaced)
        );
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.matches("Already submitted").count() == 3
        })
        .await;
        assert_eq!(wait_key(&w, |_| true).await, key);

        // A reload of the window keeps the draft too.
        w.client.refresh().await.unwrap();
        w.click("[data-screen=submit]").await;
        assert_eq!(wait_key(&w, |_| true).await, key);
        assert_eq!(
            w.wait_for("[data-testid=intent]")
                .await
                .prop("value")
                .await
                .unwrap()
                .as_deref(),
            Some(&*spaced)
        );
        assert_eq!(job_ids(&w).await.len(), 4);
        let page = w.engine.jobs("local", &Default::default()).await.unwrap();
        assert_eq!(page.jobs.len(), 1, "one intent, one job");

        // New draft is the one way to a new key on purpose: the next click makes a new job.
        w.click("[data-testid=new-draft]").await;
        let fresh = wait_key(&w, |k| k != key).await;
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.contains("Submitted: new job")
        })
        .await;
        let page = w.engine.jobs("local", &Default::default()).await.unwrap();
        assert_eq!(page.jobs.len(), 2);
        assert!(page.jobs.iter().any(|j| j.idempotency_key == fresh));
        w.screenshot("submit-draft").await;
        w.close().await;
    });
}

/// Waits up to 20 s for the draft's key to satisfy `check`, and returns it.
async fn wait_key(w: &Window, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let key = w.attr("[data-testid=draft-key]", "title").await.unwrap();
        if check(&key) {
            return key;
        }
        assert!(Instant::now() < deadline, "the draft's key stayed {key}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn job_ids(w: &Window) -> Vec<String> {
    let mut ids = Vec::new();
    for el in w
        .client
        .find_all(Locator::Css("[data-testid=outcomes] [data-job-id]"))
        .await
        .unwrap()
    {
        ids.push(el.attr("data-job-id").await.unwrap().unwrap());
    }
    ids
}

#[test]
fn an_unknown_attempt_blocks_retry_until_abandoned_and_went_through_records_the_result() {
    run(async {
        let w = Window::open(|engine| async move {
            sandbox(
                &engine,
                400,
                // Without honouring the key, a retry is processed (and held) again instead of
                // getting the first request's withheld answer back.
                json!({"never_answer": 1.0, "latency_ms": 0, "jitter_ms": 0,
                       "honour_idempotency_key": false}),
            )
            .await;
        })
        .await;
        let intent = r#"{"route": ["sandbox"], "input": {"n": 1}, "max_attempts": 1}"#;
        let job = w
            .engine
            .submit("local", "order-45", intent)
            .await
            .unwrap()
            .job;
        w.wait_text("[data-testid=needs-attention]", |t| t.ends_with('1'))
            .await;
        w.open_job(&job.id).await;

        // Unknown, with a live clock, and Retry blocked with the reason.
        w.wait_for("[data-testid=resolve]").await;
        let first = w.text("[data-testid=live-clock]").await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let later = w.text("[data-testid=live-clock]").await;
        assert_ne!(first, later, "the open attempt's clock runs");
        let reason = w.text("[data-testid=retry-blocked]").await;
        assert!(reason.contains("Attempt #1 is unknown"), "{reason}");
        assert_eq!(
            w.attr("[data-testid=retry]", "disabled").await.as_deref(),
            Some("true")
        );
        w.screenshot("job-unknown").await;

        // Abandon asks first; then Retry runs.
        w.click("[data-testid=resolve-abandoned]").await;
        let risk = w.text("[data-testid=confirm]").await;
        assert!(risk.contains("done twice"), "{risk}");
        assert_eq!(
            w.engine.job("local", &job.id).await.unwrap().attempts[0]
                .state
                .as_str(),
            "unknown",
            "nothing changes before the confirmation"
        );
        w.click("[data-testid=confirm-yes]").await;
        // With one attempt allowed, the job fails instead of retrying on its own.
        w.wait_text("[data-testid=retry-blocked], [data-testid=retry]", |_| true)
            .await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while w.attr("[data-testid=retry]", "disabled").await.is_some() {
            assert!(Instant::now() < deadline, "Retry never became possible");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        w.click("[data-testid=retry]").await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let detail = w.engine.job("local", &job.id).await.unwrap();
            if detail.attempts.len() == 2 && detail.attempts[1].state.as_str() == "unknown" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the retried attempt never became unknown: {detail:#?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // "It went through" with a pasted result.
        let pasted = w.wait_for("[data-testid=pasted-result]").await;
        pasted.send_keys(r#"{"charged": 100}"#).await.unwrap();
        w.click("[data-testid=resolve-succeeded]").await;
        w.click("[data-testid=confirm-yes]").await;
        w.wait_text("[data-testid=job-result]", |t| t.contains("charged"))
            .await;
        let detail = w.engine.job("local", &job.id).await.unwrap();
        assert_eq!(detail.job.status.as_str(), "succeeded");
        assert_eq!(detail.job.result, Some(json!({"charged": 100})));
        w.screenshot("job-resolved").await;
        w.close().await;
    });
}

#[test]
fn an_answer_after_a_cancel_is_flagged_for_review_and_counted() {
    run(async {
        let w = Window::open(|engine| async move {
            sandbox(&engine, 300, json!({"latency_ms": 2500, "jitter_ms": 0})).await;
        })
        .await;
        let job = w
            .engine
            .submit(
                "local",
                "late-1",
                r#"{"route": ["sandbox"], "input": {"n": 5}}"#,
            )
            .await
            .unwrap()
            .job;
        w.open_job(&job.id).await;
        w.wait_for("[data-testid=resolve]").await;
        w.click("[data-testid=cancel]").await;
        w.click("[data-testid=confirm-yes]").await;
        w.wait_for("[data-testid=job-flagged]").await;
        w.wait_text("[data-testid=needs-attention]", |t| t.ends_with('1'))
            .await;
        let detail = w.engine.job("local", &job.id).await.unwrap();
        assert_eq!(detail.job.status.as_str(), "cancelled");
        assert!(detail.job.flagged_for_review);
        w.screenshot("job-flagged").await;
        w.close().await;
    });
}

#[test]
fn a_late_answer_loses_the_race_and_the_timeline_shows_it() {
    run(async {
        let w = Window::open(|engine| async move {
            let dials =
                json!({"latency_ms": 3000, "jitter_ms": 0, "honour_idempotency_key": false});
            sandbox(&engine, 300, dials).await;
        })
        .await;
        let intent = r#"{"route": ["sandbox"], "input": {"n": 4}, "max_attempts": 2}"#;
        let job = w
            .engine
            .submit("local", "race-1", intent)
            .await
            .unwrap()
            .job;
        w.open_job(&job.id).await;
        w.wait_for("[data-testid=resolve]").await;
        // The second attempt answers at once; the first answers later and loses.
        sandbox(
            &w.engine,
            1000,
            json!({"latency_ms": 0, "jitter_ms": 0, "honour_idempotency_key": false}),
        )
        .await;
        let detail = w.engine.job("local", &job.id).await.unwrap();
        w.engine
            .resolve(
                "local",
                &detail.attempts[0].id,
                Verdict::Abandoned,
                Default::default(),
            )
            .await
            .unwrap();
        w.wait_for(".timeline-row[data-state=lost]").await;
        w.wait_for(".history tr[data-kind=race_lost]").await;
        let detail = w.engine.job("local", &job.id).await.unwrap();
        assert_eq!(detail.job.status.as_str(), "succeeded");
        assert_eq!(detail.attempts[0].state.as_str(), "lost");
        w.screenshot("job-race").await;
        w.close().await;
    });
}

/// How many jobs the large-list test seeds.
const MANY: u32 = 100_000;

/// A number the Jobs list exposes for tests, as a data attribute.
async fn list_number(w: &Window, name: &str) -> u32 {
    w.attr(".jobs-list", name).await.unwrap().parse().unwrap()
}

#[test]
fn a_hundred_thousand_jobs_page_in_as_they_scroll_into_view_and_the_end_in_one_page() {
    run(async {
        let w = Window::open(|engine| async move {
            let db = std::path::PathBuf::from(engine.location());
            seed_jobs(&db, MANY).await;
        })
        .await;
        let started = Instant::now();
        // Waits, not measures: a busy machine may take long; the test proves what was fetched.
        let busy = Duration::from_secs(90);
        w.wait_for_within(".job-row[data-job-id]", busy).await;
        println!(
            "first page of {MANY} jobs shown after {:?}",
            started.elapsed()
        );

        // Scroll down a screen at a time for a while: rows are fetched only as they show.
        for _ in 0..30 {
            w.client
                .execute(
                    "const l = document.querySelector('.jobs-list'); \
                     l.scrollTop = l.scrollTop + l.clientHeight; \
                     l.dispatchEvent(new Event('scroll'));",
                    vec![],
                )
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let page = 100;
        let deadline = Instant::now() + busy;
        let (fetched, last_shown) = loop {
            assert!(Instant::now() < deadline, "the rows in view never arrived");
            // Settled once every row in view has arrived.
            if w.client
                .find_all(Locator::Css(".job-row.placeholder"))
                .await
                .unwrap()
                .is_empty()
            {
                break (
                    list_number(&w, "data-fetched-rows").await,
                    list_number(&w, "data-last-shown").await,
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        println!("rows fetched {fetched} while scrolling to row {last_shown}");
        assert!(last_shown > 500, "the list scrolled far ({last_shown})");
        assert!(
            fetched <= last_shown + 1 + page,
            "fetched {fetched} rows to show {} (one page is {page})",
            last_shown + 1
        );

        // Jump to the very end: the oldest job shows, fetched as one page from that end rather
        // than every page in between.
        w.client
            .execute(
                "const l = document.querySelector('.jobs-list'); \
                 l.scrollTop = l.scrollHeight; l.dispatchEvent(new Event('scroll'));",
                vec![],
            )
            .await
            .unwrap();
        w.wait_for_within(
            ".job-row[data-job-id='01900000-0000-7000-8000-000000000001']",
            busy,
        )
        .await;
        let rows_at_end = w
            .client
            .find_all(Locator::Css(".job-row[data-job-id]"))
            .await
            .unwrap()
            .len() as u32;
        let at_end = list_number(&w, "data-fetched-rows").await;
        let refreshed = w.attr(".jobs-list", "data-refreshed-rows").await.unwrap();
        println!(
            "rows fetched {} to show the {rows_at_end} rows at the end (and {refreshed} again \
             after ledger changes)",
            at_end - fetched
        );
        assert_eq!(list_number(&w, "data-last-shown").await, MANY - 1);
        assert!(
            at_end - fetched <= rows_at_end + page,
            "fetched {} rows to show {rows_at_end} at the end (one page is {page})",
            at_end - fetched
        );
        let resident = w
            .client
            .find_all(Locator::Css(".job-row"))
            .await
            .unwrap()
            .len();
        assert!(
            resident < 200,
            "only the rows in view are rendered ({resident})"
        );
        w.screenshot("jobs-100k").await;
        w.close().await;
    });
}
