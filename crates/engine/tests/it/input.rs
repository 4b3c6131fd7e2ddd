//! What the engine is given, on both backends alike (SPEC §11): NUL anywhere is `invalid_input`
//! naming the field, never a `storage` error and never stored; an id or a cursor in any form
//! the UUID parser reads names what its canonical text names.

use crate::common;

use common::{intent, Ledger, OWNER};
use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{Error, JobStatus, JobsQuery, Resolution, Verdict};
use serde_json::{json, Value};

/// The field an `invalid_input` names; anything else fails the test.
fn field<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Err(Error::InvalidInput { details, .. }) => details.field,
        other => panic!("expected invalid_input, got {other:?}"),
    }
}

/// The forms of one UUID the parser reads besides its canonical text.
fn other_forms(id: &str) -> Vec<String> {
    vec![
        id.to_ascii_uppercase(),
        format!("urn:uuid:{id}"),
        format!("{{{id}}}"),
        id.replace('-', ""),
        format!("URN:UUID:{}", id.to_ascii_uppercase()),
    ]
}

fn query() -> JobsQuery {
    JobsQuery::default()
}

#[tokio::test]
async fn a_nul_anywhere_is_invalid_input_naming_the_field_on_both_backends() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let job = ledger.submit("clean").await.job;
    let attempt = ledger.in_flight("in-flight").await.attempt;
    let providers = ledger.count("providers").await;

    // An intent: in a string of its input, in a key, in its params, in a route name.
    let cases = [
        (
            json!({"route": ["primary"], "input": {"text": "a\u{0}b"}}),
            "intent.input.text",
        ),
        (
            json!({"route": ["primary"], "input": {"a\u{0}": 1}}),
            "intent.input",
        ),
        (
            json!({"route": ["primary"], "input": [1, ["\u{0}"]]}),
            "intent.input.1.0",
        ),
        (
            json!({"route": ["primary"], "input": 1, "params": {"stop": "\u{0}"}}),
            "intent.params.stop",
        ),
        (
            json!({"route": ["prim\u{0}ary"], "input": 1}),
            "intent.route.0",
        ),
        (
            json!({"route": ["primary"], "input": 1, "contract": "\u{0}"}),
            "intent.contract",
        ),
    ];
    for (n, (bad, named)) in cases.into_iter().enumerate() {
        let key = format!("nul-{n}");
        assert_eq!(field(e.submit(OWNER, &key, &bad.to_string()).await), named);
    }
    assert_eq!(
        field(e.submit(OWNER, "k\u{0}", &intent(json!(1))).await),
        "idempotency_key"
    );
    assert_eq!(
        field(e.submit("lo\u{0}cal", "k", &intent(json!(1))).await),
        "owner_id"
    );

    // Ids, a search, a provider, a cursor.
    assert_eq!(field(e.job(OWNER, "\u{0}").await), "job_id");
    assert_eq!(
        field(e.job(OWNER, &format!("{}\u{0}", job.id)).await),
        "job_id"
    );
    assert_eq!(field(e.attempt(OWNER, "a\u{0}").await), "attempt_id");
    assert_eq!(field(e.cancel(OWNER, "\u{0}").await), "job_id");
    let search = JobsQuery {
        search: Some("a\u{0}".to_owned()),
        ..query()
    };
    assert_eq!(field(e.jobs(OWNER, &search).await), "search");
    assert_eq!(field(e.count_jobs(OWNER, &search).await), "search");
    let provider = JobsQuery {
        provider: Some("\u{0}".to_owned()),
        ..query()
    };
    assert_eq!(field(e.jobs(OWNER, &provider).await), "provider");
    let after = JobsQuery {
        after: Some(format!("{}\u{0}", job.id)),
        ..query()
    };
    assert_eq!(field(e.jobs(OWNER, &after).await), "after");

    // A person's retry and verdicts.
    assert_eq!(
        field(e.retry(OWNER, &job.id, Some("x\u{0}")).await),
        "provider"
    );
    let verdict = |resolution: Resolution, verdict: Verdict| {
        let e = e.clone();
        let id = attempt.id.clone();
        async move { e.resolve(OWNER, &id, verdict, resolution).await }
    };
    let note = Resolution {
        note: Some("it did\u{0}not".to_owned()),
        ..Resolution::default()
    };
    assert_eq!(field(verdict(note, Verdict::Failed).await), "note");
    let result = Resolution {
        result: Some(json!({"answer": ["ok", "\u{0}"]})),
        ..Resolution::default()
    };
    assert_eq!(
        field(verdict(result, Verdict::Succeeded).await),
        "result.answer.1"
    );
    let keyed = Resolution {
        result: Some(json!({"\u{0}": 1})),
        ..Resolution::default()
    };
    assert_eq!(field(verdict(keyed, Verdict::Succeeded).await), "result");
    let retry_on = Resolution {
        retry_on: Some("x\u{0}".to_owned()),
        ..Resolution::default()
    };
    assert_eq!(
        field(verdict(retry_on, Verdict::Abandoned).await),
        "retry_on"
    );

    // Providers, contracts and tokens.
    let mut provider: Value = serde_json::from_str(&common::provider_json("third")).unwrap();
    provider["base_url"] = json!("http://127.0.0.1:9/\u{0}");
    assert_eq!(
        field(e.add_provider(&provider.to_string()).await),
        "provider.base_url"
    );
    assert_eq!(field(e.provider("prim\u{0}").await), "provider");
    assert_eq!(field(e.remove_provider("\u{0}").await), "provider");
    assert_eq!(field(e.jobs_naming_provider("\u{0}").await), "provider");
    let contract = json!({
        "name": "summary",
        "schema": {"type": "object", "properties": {"s": {"type": "string"}}},
        "template": {"user": "Summarise: {{text}}\u{0}"},
        "samples": [{"text": "a"}]
    });
    assert_eq!(
        field(e.add_contract(&contract.to_string()).await),
        "contract.template.user"
    );
    assert_eq!(field(e.contract("s\u{0}").await), "contract");
    assert_eq!(field(e.remove_contract("\u{0}").await), "contract");
    assert_eq!(field(e.contract_checks("\u{0}").await), "contract");
    assert_eq!(field(e.revoke_token("\u{0}").await), "token_id");
    assert_eq!(field(e.create_token(OWNER, Some("a\u{0}")).await), "name");

    // Nothing of it reached the ledger, and what was there is as it was.
    assert_eq!(ledger.count("jobs").await, 2);
    assert_eq!(ledger.count("attempts").await, 1);
    assert_eq!(ledger.count("providers").await, providers);
    assert_eq!(ledger.count("contracts").await, 0);
    let seen = e.job(OWNER, &job.id).await.expect("the job");
    assert_eq!(seen.job.status, JobStatus::Queued);
    let seen = e.attempt(OWNER, &attempt.id).await.expect("the attempt");
    assert_eq!(seen.state, onejob_engine::AttemptState::InFlight);
}

#[tokio::test]
async fn an_id_in_any_form_of_its_uuid_names_the_same_job_or_attempt() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let running = ledger.in_flight("running").await;
    let (job_id, attempt_id) = (running.job.id.clone(), running.attempt.id.clone());
    for form in other_forms(&job_id) {
        let detail = e
            .job(OWNER, &form)
            .await
            .unwrap_or_else(|e| panic!("{form}: {e}"));
        assert_eq!(detail.job.id, job_id, "{form}");
        assert_eq!(detail.attempts.len(), 1, "{form}");
    }
    for form in other_forms(&attempt_id) {
        let attempt = e
            .attempt(OWNER, &form)
            .await
            .unwrap_or_else(|e| panic!("{form}: {e}"));
        assert_eq!(attempt.id, attempt_id, "{form}");
    }
    // A person's actions by another form act on the one job.
    let resolved = e
        .resolve(
            OWNER,
            &attempt_id.to_ascii_uppercase(),
            Verdict::Abandoned,
            Resolution::default(),
        )
        .await
        .expect("abandoned by its id in upper case");
    assert_eq!(resolved.attempt.id, attempt_id);
    let cancelled = e
        .cancel(OWNER, &format!("urn:uuid:{job_id}"))
        .await
        .expect("cancelled by its URN");
    assert_eq!(cancelled.id, job_id);
    assert_eq!(cancelled.status, JobStatus::Cancelled);

    // Text that is no UUID names nothing, on both backends alike; so does another owner's id.
    for nothing in ["nope", "0190", "urn:uuid:", "{}", &format!("{job_id}x")] {
        let refused = [
            code(e.job(OWNER, nothing).await),
            code(e.cancel(OWNER, nothing).await),
            code(e.attempt(OWNER, nothing).await),
        ];
        assert_eq!(refused, ["not_found"; 3], "{nothing}");
    }
    let stranger = e
        .job("someone-else", &job_id.to_ascii_uppercase())
        .await
        .map(|_| ())
        .expect_err("another owner's job");
    assert_eq!(stranger.code(), "not_found");
}

#[tokio::test]
async fn a_cursor_in_upper_case_pages_on() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    for n in 0..5 {
        ledger.submit(&format!("job-{n}")).await;
    }
    let page = |after: Option<String>| {
        let e = e.clone();
        async move {
            let query = JobsQuery {
                after,
                limit: Some(2),
                ..JobsQuery::default()
            };
            e.jobs(OWNER, &query).await
        }
    };
    let first = page(None).await.expect("the first page");
    let next = first.next.clone().expect("a next page");
    let second = page(Some(next.clone())).await.expect("the second page");
    let ids = |jobs: &[onejob_engine::Job]| jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>();
    assert_eq!(second.jobs.len(), 2);
    assert!(!ids(&first.jobs).contains(&second.jobs[0].id));
    for form in other_forms(&next) {
        let again = page(Some(form.clone()))
            .await
            .unwrap_or_else(|e| panic!("{form}: {e}"));
        assert_eq!(ids(&again.jobs), ids(&second.jobs), "{form}");
        assert_eq!(again.next, second.next, "{form}");
    }
    // Walking every page by upper-case cursors sees each job once.
    let mut seen = ids(&first.jobs);
    let mut after = first.next.map(|c| c.to_ascii_uppercase());
    while let Some(cursor) = after {
        let page = page(Some(cursor)).await.expect("a page");
        seen.extend(ids(&page.jobs));
        after = page.next.map(|c| c.to_ascii_uppercase());
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    seen.dedup();
    assert_eq!(seen.len(), 5, "{seen:?}");
    // Text that is no cursor is refused, naming `after`, on both backends alike.
    for bad in ["nope", "urn:uuid:", "{}"] {
        assert_eq!(field(page(Some(bad.to_owned())).await), "after", "{bad}");
    }
}

/// The code of a call that must fail.
fn code<T>(result: onejob_engine::Result<T>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(e) => e.code(),
    }
}
