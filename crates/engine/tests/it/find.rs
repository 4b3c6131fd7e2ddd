//! Find (SPEC §13): jobs by key, id and provider among 100,000, with keyset pages and counts;
//! the jobs a removal would touch; the attention list; removing a contract.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::{why, Ledger, Sql, OWNER};
use onejob_engine::testing::{Cause, Claim, InternalCalls as _};
use onejob_engine::{
    Engine, Error, Job, JobPart, JobStatus, JobsQuery, OpenJobs, Resolution, ShownValue, Verdict,
};
use serde_json::json;

/// How many jobs the large ledger holds.
const MANY: u32 = 100_000;

/// The id the seed gives job `i`: its text order is `i`'s order.
fn seeded_id(i: u32) -> String {
    format!("01900000-0000-7000-8000-{i:012}")
}

/// Writes `n` jobs straight into the ledger in one statement: keys `seed-<i>`, every tenth
/// `queued` and the rest `cancelled`, even ones routed to `primary`, odd ones to `fallback`.
/// The schema's triggers run as for any insert.
async fn seed(ledger: &Ledger, n: u32) {
    let raw = ledger.raw().await;
    let sql = Sql {
        sqlite: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < CAST($1 AS INTEGER))
         INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version,
                           created_at, updated_at)
         SELECT printf('01900000-0000-7000-8000-%012d', i), 'local', 'seed-' || i,
                printf('%064d', i),
                json_object('route', json_array(CASE i % 2 WHEN 0 THEN 'primary' ELSE 'fallback' END),
                            'input', json_object('n', i)),
                CASE i % 10 WHEN 0 THEN 'queued' ELSE 'cancelled' END, 0,
                strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         FROM n",
        postgres: "INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status, version)
         SELECT CAST('01900000-0000-7000-8000-' || lpad(CAST(i AS text), 12, '0') AS uuid),
                'local', 'seed-' || i, lpad(CAST(i AS text), 64, '0'),
                json_build_object('route', json_build_array(CASE i % 2 WHEN 0 THEN 'primary' ELSE 'fallback' END),
                                  'input', json_build_object('n', i)),
                CASE i % 10 WHEN 0 THEN 'queued' ELSE 'cancelled' END, 0
         FROM generate_series(1, CAST($1 AS integer)) AS n (i)",
    };
    raw.execute(sql, &[&n.to_string()]).await.expect("seed");
    raw.close().await;
}

/// What the seed holds for job `i`.
struct Seeded {
    key: String,
    queued: bool,
    provider: &'static str,
}

fn seeded(i: u32) -> Seeded {
    Seeded {
        key: format!("seed-{i}"),
        queued: i.is_multiple_of(10),
        provider: if i.is_multiple_of(2) {
            "primary"
        } else {
            "fallback"
        },
    }
}

fn query(search: Option<&str>, provider: Option<&str>, status: Option<JobStatus>) -> JobsQuery {
    JobsQuery {
        status,
        search: search.map(str::to_owned),
        provider: provider.map(str::to_owned),
        limit: Some(1000),
        ..JobsQuery::default()
    }
}

/// Every job the query finds, following `next` page by page; checks that ids strictly
/// descend (or ascend, oldest first) across pages and that the cursor advances.
async fn all_pages(engine: &Engine, query: &JobsQuery) -> Vec<Job> {
    let mut found: Vec<Job> = Vec::new();
    let mut query = query.clone();
    loop {
        let page = engine.jobs(OWNER, &query).await.expect("page");
        found.extend(page.jobs);
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
        assert!(found.len() <= MANY as usize, "the cursor does not advance");
    }
    for pair in found.windows(2) {
        if query.oldest_first {
            assert!(
                pair[0].id < pair[1].id,
                "{} then {}",
                pair[0].id,
                pair[1].id
            );
        } else {
            assert!(
                pair[0].id > pair[1].id,
                "{} then {}",
                pair[0].id,
                pair[1].id
            );
        }
    }
    found
}

/// Two long lists of ids are equal; a failure shows where they part, not all of them.
fn same(found: &[String], want: &[String]) {
    let parted = found.iter().zip(want).position(|(a, b)| a != b);
    assert!(
        parted.is_none() && found.len() == want.len(),
        "found {} ids, want {}; first difference at {parted:?}: {:?} vs {:?}",
        found.len(),
        want.len(),
        parted.map(|i| &found[i]),
        parted.map(|i| &want[i]),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_reaches_one_job_among_a_hundred_thousand_by_key_id_and_provider() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    seed(&ledger, MANY).await;
    // One job made by the engine: its id is a real UUIDv7, with hex letters in it.
    let real = ledger.submit("real-one").await.job;
    let expected = |keep: &dyn Fn(u32, &Seeded) -> bool| -> Vec<String> {
        (1..=MANY)
            .rev()
            .filter(|&i| keep(i, &seeded(i)))
            .map(seeded_id)
            .collect()
    };
    let ids = |jobs: &[Job]| jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>();

    // The full key: that job, and the keys it is a prefix of.
    let found = e
        .jobs(OWNER, &query(Some("seed-99999"), None, None))
        .await
        .expect("full key");
    assert_eq!(ids(&found.jobs), [seeded_id(99_999)]);
    assert_eq!(found.next, None);
    let found = e
        .jobs(OWNER, &query(Some("seed-4242"), None, None))
        .await
        .expect("full key");
    assert_eq!(
        ids(&found.jobs),
        expected(&|_, s| s.key.starts_with("seed-4242")),
        "seed-4242 and seed-42420…42429, newest first"
    );
    assert_eq!(
        found.jobs.last().map(|j| j.idempotency_key.as_str()),
        Some("seed-4242")
    );
    // A key prefix, counted the same way.
    let q = query(Some("seed-1234"), None, None);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 11);
    // The key is case-sensitive.
    assert_eq!(
        e.count_jobs(OWNER, &query(Some("SEED-1234"), None, None))
            .await
            .expect("count"),
        0
    );

    // An id prefix, in any case.
    let prefix = "01900000-0000-7000-8000-00000000424";
    let found = e
        .jobs(OWNER, &query(Some(prefix), None, None))
        .await
        .expect("id prefix");
    assert_eq!(
        ids(&found.jobs),
        expected(&|i, _| (4240..=4249).contains(&i))
    );
    let upper = real.id.to_uppercase();
    let found = e
        .jobs(OWNER, &query(Some(&upper), None, None))
        .await
        .expect("id");
    assert_eq!(ids(&found.jobs), [real.id.as_str()]);
    let q = query(Some(&real.id[..18]), None, None);
    assert_eq!(
        e.count_jobs(OWNER, &q).await.expect("count"),
        1,
        "{}",
        &real.id[..18]
    );

    // A prefix matching many jobs pages through all of them, and counts them.
    let q = query(Some("seed-1"), None, None);
    let want = expected(&|_, s| s.key.starts_with("seed-1"));
    assert_eq!(want.len(), 11_112);
    same(&ids(&all_pages(e, &q).await), &want);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 11_112);
    let q = query(Some("seed-1"), None, Some(JobStatus::Queued));
    let want = expected(&|_, s| s.key.starts_with("seed-1") && s.queued);
    same(&ids(&all_pages(e, &q).await), &want);
    assert_eq!(
        e.count_jobs(OWNER, &q).await.expect("count") as usize,
        want.len()
    );
    let oldest_first = JobsQuery {
        oldest_first: true,
        ..query(Some("seed-1"), None, Some(JobStatus::Queued))
    };
    let mut reversed = want.clone();
    reversed.reverse();
    same(&ids(&all_pages(e, &oldest_first).await), &reversed);

    // By provider, alone and with the other filters.
    // The real job is queued, and its route is primary then fallback.
    let q = query(None, Some("primary"), Some(JobStatus::Queued));
    let mut want = vec![real.id.clone()];
    want.extend(expected(&|_, s| s.provider == "primary" && s.queued));
    assert_eq!(want.len(), 10_001);
    same(&ids(&all_pages(e, &q).await), &want);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 10_001);
    let q = query(None, Some("fallback"), None);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 50_001);
    let q = query(Some("seed-1234"), Some("fallback"), None);
    let want = expected(&|_, s| s.key.starts_with("seed-1234") && s.provider == "fallback");
    assert_eq!(want.len(), 5);
    same(&ids(&all_pages(e, &q).await), &want);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 5);
    let q = query(Some(prefix), Some("primary"), None);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 5);
    let q = query(None, Some("nowhere"), None);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 0);

    // No filter: everything; the filters do not change what a count ignores.
    let all = MANY + 1;
    assert_eq!(
        e.count_jobs(OWNER, &JobsQuery::default())
            .await
            .expect("count"),
        all
    );
    let paged = JobsQuery {
        after: Some(seeded_id(5)),
        limit: Some(1),
        oldest_first: true,
        ..JobsQuery::default()
    };
    assert_eq!(e.count_jobs(OWNER, &paged).await.expect("count"), all);
}

#[tokio::test]
async fn a_blank_search_is_no_filter_and_a_long_one_is_refused() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    for key in ["alpha", "alpine", " spaced"] {
        ledger.submit(key).await;
    }
    for blank in ["", "   ", "\t"] {
        let q = query(Some(blank), Some(" "), None);
        assert_eq!(
            e.count_jobs(OWNER, &q).await.expect("count"),
            3,
            "{blank:?}"
        );
        assert_eq!(e.jobs(OWNER, &q).await.expect("page").jobs.len(), 3);
    }
    assert_eq!(
        e.count_jobs(OWNER, &query(Some("alp"), None, None))
            .await
            .expect("count"),
        2
    );
    // A key may begin with a space: the text is matched as given.
    assert_eq!(
        e.count_jobs(OWNER, &query(Some(" sp"), None, None))
            .await
            .expect("count"),
        1
    );

    let longest = "k".repeat(255);
    assert_eq!(
        e.count_jobs(OWNER, &query(Some(&longest), None, None))
            .await
            .expect("count"),
        0
    );
    let too_long = "k".repeat(256);
    for result in [
        e.jobs(OWNER, &query(Some(&too_long), None, None))
            .await
            .map(|_| ()),
        e.count_jobs(OWNER, &query(Some(&too_long), None, None))
            .await
            .map(|_| ()),
    ] {
        match result {
            Err(Error::InvalidInput { details, message }) => {
                assert_eq!(details.field, "search");
                assert!(message.contains("search"), "{message}");
            }
            other => panic!("expected invalid_input, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn find_never_shows_another_owners_job() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let theirs = e
        .submit("someone-else", "secret-key", &common::intent(json!({})))
        .await
        .expect("submit")
        .job;
    for search in ["secret", theirs.id.as_str(), &theirs.id[..8]] {
        let q = query(Some(search), None, None);
        assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 0, "{search}");
        assert!(e.jobs(OWNER, &q).await.expect("page").jobs.is_empty());
    }
    let q = query(None, Some("primary"), None);
    assert_eq!(e.count_jobs(OWNER, &q).await.expect("count"), 0);
    assert_eq!(e.count_jobs("someone-else", &q).await.expect("count"), 1);
}

#[tokio::test]
async fn a_provider_finds_jobs_that_ran_there_outside_their_route() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let only_primary = json!({"route": ["primary"], "input": {}}).to_string();
    let job = e
        .submit(OWNER, "elsewhere", &only_primary)
        .await
        .expect("submit")
        .job;
    let at_fallback = query(None, Some("fallback"), None);
    assert_eq!(e.count_jobs(OWNER, &at_fallback).await.expect("count"), 0);
    assert_eq!(
        e.jobs_naming_provider("fallback").await.expect("open"),
        OpenJobs::default()
    );

    // A person runs it at a provider its route does not name.
    let attempt = e
        .claim_attempt(&job.id, "fallback")
        .await
        .expect("claim")
        .attempt;
    assert_eq!(attempt.provider, "fallback");
    let found = e.jobs(OWNER, &at_fallback).await.expect("page");
    assert_eq!(
        found.jobs.iter().map(|j| &j.id).collect::<Vec<_>>(),
        [&job.id]
    );
    // Its open attempt is there: removing the provider would touch it.
    let open = OpenJobs {
        running: 1,
        ..OpenJobs::default()
    };
    assert_eq!(
        e.jobs_naming_provider("fallback").await.expect("open"),
        open
    );

    // Once that attempt is closed and the job has moved on, it no longer depends on fallback,
    // though Find still shows that it ran there.
    e.fail_unsent(&attempt.id, why("connect"))
        .await
        .expect("fail");
    assert_eq!(
        e.jobs_naming_provider("fallback").await.expect("open"),
        OpenJobs::default()
    );
    assert_eq!(e.count_jobs(OWNER, &at_fallback).await.expect("count"), 1);
}

#[tokio::test]
async fn open_jobs_naming_a_provider_or_a_contract_are_counted_for_every_owner() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    e.add_contract(&summary_contract().to_string())
        .await
        .expect("contract");
    let with = |route: &[&str], contract: bool| {
        let mut intent = json!({"route": route, "input": {"text": "t"}});
        if contract {
            intent["contract"] = json!("summary");
        }
        intent.to_string()
    };
    let submit = async |owner: &str, key: &str, intent: String| {
        e.submit(owner, key, &intent).await.expect("submit").job
    };
    // queued: one per owner, both naming primary and the contract.
    submit(OWNER, "queued", with(&["primary"], true)).await;
    submit("other", "queued", with(&["fallback", "primary"], true)).await;
    // running at primary, with the contract.
    let running = submit(OWNER, "running", with(&["primary"], true)).await;
    e.claim_attempt(&running.id, "primary")
        .await
        .expect("claim");
    // unknown at primary, without it.
    let unknown = ledger.in_flight("unknown").await;
    e.mark_unknown(&unknown.attempt.id, why("timeout"))
        .await
        .expect("unknown");
    // Closed jobs count for nothing.
    let cancelled = submit(OWNER, "cancelled", with(&["primary"], true)).await;
    e.cancel(OWNER, &cancelled.id).await.expect("cancel");

    let primary = e.jobs_naming_provider("primary").await.expect("primary");
    assert_eq!(
        primary,
        OpenJobs {
            queued: 2,
            running: 1,
            unknown: 1
        }
    );
    let fallback = e.jobs_naming_provider("fallback").await.expect("fallback");
    assert_eq!(
        fallback,
        OpenJobs {
            queued: 1,
            running: 0,
            unknown: 1
        },
        "the other owner's queued job and the unknown one name fallback"
    );
    let contract = e.jobs_naming_contract("summary").await.expect("summary");
    assert_eq!(
        contract,
        OpenJobs {
            queued: 2,
            running: 1,
            unknown: 0
        }
    );
    assert_eq!(
        e.jobs_naming_contract("none").await.expect("none"),
        OpenJobs::default()
    );
    assert_eq!(
        e.jobs_naming_provider("none").await.expect("none"),
        OpenJobs::default()
    );
    assert_eq!(
        serde_json::to_value(primary).expect("json"),
        json!({"queued": 2, "running": 1, "unknown": 1})
    );
}

fn summary_contract() -> serde_json::Value {
    json!({
        "name": "summary",
        "schema": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
        "template": {"system": "You summarise.", "user": "Summarise: {{text}}"},
        "samples": [{"text": "The cat sat on the mat."}]
    })
}

#[tokio::test]
async fn a_removed_contract_fails_its_open_jobs_at_their_claim_and_no_other() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    e.add_contract(&summary_contract().to_string())
        .await
        .expect("contract");
    let named = json!({"route": ["primary"], "input": {"text": "t"}, "contract": "summary"});
    let named = e
        .submit(OWNER, "named", &named.to_string())
        .await
        .expect("submit")
        .job;
    let plain = ledger.submit("plain").await.job;

    e.remove_contract("summary").await.expect("remove");
    match e.remove_contract("summary").await {
        Err(Error::NotFound { .. }) => {}
        other => panic!("a second removal is not_found, got {other:?}"),
    }
    assert!(matches!(
        e.contract("summary").await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        e.contract_checks("summary").await,
        Err(Error::NotFound { .. })
    ));
    // A new job may no longer name it.
    let again = json!({"route": ["primary"], "input": {"text": "t"}, "contract": "summary"});
    assert!(e.submit(OWNER, "again", &again.to_string()).await.is_err());

    match e.claim_next(&named.id).await.expect("claim") {
        Claim::Failed(job) => {
            assert_eq!(job.status, JobStatus::Failed);
            let error = job.error.expect("error");
            assert_eq!(error.code, "misconfigured");
            assert!(error.message.contains("summary"), "{}", error.message);
        }
        other => panic!("expected the job to fail, got {other:?}"),
    }
    let detail = e.job(OWNER, &named.id).await.expect("job");
    assert!(detail.attempts.is_empty(), "nothing was sent: {detail:#?}");
    match e.claim_next(&plain.id).await.expect("claim") {
        Claim::Attempt(claimed) => assert_eq!(claimed.attempt.provider, "primary"),
        other => panic!("every other job goes on, got {other:?}"),
    }

    // Added again, the name starts with no checks.
    e.add_contract(&summary_contract().to_string())
        .await
        .expect("again");
    assert!(e
        .contract_checks("summary")
        .await
        .expect("checks")
        .is_empty());
}

#[tokio::test]
async fn the_attention_list_holds_unknown_and_flagged_jobs_newest_change_first() {
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    ledger.submit("queued").await;
    let unknown = ledger.in_flight("unknown").await;
    e.mark_unknown(&unknown.attempt.id, why("timeout"))
        .await
        .expect("unknown");
    // A late answer for a cancelled job is flagged for review.
    let late = ledger.in_flight("late").await;
    e.cancel(OWNER, &late.job.id).await.expect("cancel");
    tokio::time::sleep(Duration::from_millis(5)).await;
    e.complete(&late.attempt.id, &json!({"ok": true}), Cause::Answer)
        .await
        .expect("late answer");
    // A resolved one leaves the list.
    let resolved = ledger.in_flight("resolved").await;
    e.mark_unknown(&resolved.attempt.id, why("timeout"))
        .await
        .expect("unknown");
    e.resolve(
        OWNER,
        &resolved.attempt.id,
        Verdict::Failed,
        Resolution::default(),
    )
    .await
    .expect("resolve");
    e.submit("other", "theirs", &common::intent(json!({})))
        .await
        .expect("submit");

    let list = e.attention_jobs(OWNER, 10).await.expect("attention");
    let keys: Vec<&str> = list.iter().map(|j| j.idempotency_key.as_str()).collect();
    assert_eq!(keys, ["late", "unknown"]);
    assert!(list[0].flagged_for_review);
    assert_eq!(list[1].status, JobStatus::Unknown);
    assert_eq!(e.needs_attention(OWNER).await.expect("count"), 2);
    let one = e.attention_jobs(OWNER, 1).await.expect("attention");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].idempotency_key, "late");
    assert!(e
        .attention_jobs("other", 10)
        .await
        .expect("other")
        .is_empty());
    for limit in [0, onejob_engine::MAX_PAGE + 1] {
        match e.attention_jobs(OWNER, limit).await {
            Err(Error::InvalidInput { details, .. }) => assert_eq!(details.field, "limit"),
            other => panic!("limit {limit}: expected invalid_input, got {other:?}"),
        }
    }
    let unique: HashSet<_> = list.iter().map(|j| &j.id).collect();
    assert_eq!(unique.len(), list.len());
}

/// A value of about 5 MB, the size a provider may answer: rows of text, none repeated.
fn five_megabytes() -> serde_json::Value {
    let rows: Vec<serde_json::Value> = (0..50_000)
        .map(|i| json!({"row": i, "text": "x".repeat(80)}))
        .collect();
    json!({ "rows": rows })
}

/// A job whose intent carries `input` and whose answer is `result`, succeeded.
async fn succeeded_with(
    ledger: &Ledger,
    key: &str,
    input: serde_json::Value,
    result: &serde_json::Value,
) -> Job {
    let e = &ledger.engine;
    let job = e
        .submit(OWNER, key, &common::intent(input))
        .await
        .expect("submit")
        .job;
    let sent = ledger.next_in_flight(&job.id, "primary").await;
    e.complete(&sent.attempt.id, result, Cause::Answer)
        .await
        .expect("answer");
    job
}

#[tokio::test]
async fn the_jobs_list_reads_only_what_it_shows_not_a_five_megabyte_result() {
    let ledger = Ledger::new().await;
    let big = succeeded_with(
        &ledger,
        "large",
        json!({"blob": "y".repeat(900_000)}),
        &five_megabytes(),
    )
    .await;
    let small = ledger.submit("small").await.job;

    let page = ledger
        .engine
        .job_summaries(OWNER, &JobsQuery::default())
        .await
        .expect("page");
    let ids: Vec<&str> = page.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, [small.id.as_str(), big.id.as_str()], "newest first");
    let large = &page.jobs[1];
    assert_eq!(large.idempotency_key, "large");
    assert_eq!(large.status, JobStatus::Succeeded);
    assert_eq!(
        large.route,
        ["primary", "fallback"],
        "the route the list shows"
    );
    assert_eq!(page.jobs[0].status, JobStatus::Queued);
    // Two jobs of 6 MB between them make a page of a few hundred bytes.
    let bytes = serde_json::to_string(&page).expect("json").len();
    assert!(bytes < 4 * 1024, "the list's page is {bytes} bytes");

    // The same filters and cursor as the full page.
    let full = ledger
        .engine
        .jobs(OWNER, &JobsQuery::default())
        .await
        .expect("full page");
    assert_eq!(full.jobs.len(), 2);
    let rest = ledger
        .engine
        .job_summaries(
            OWNER,
            &JobsQuery {
                limit: Some(1),
                status: Some(JobStatus::Succeeded),
                ..JobsQuery::default()
            },
        )
        .await
        .expect("one");
    assert_eq!(rest.jobs.len(), 1);
    assert_eq!(rest.jobs[0].id, big.id);
    assert_eq!(rest.next, None);
}

#[tokio::test]
async fn a_large_value_is_measured_by_the_ledger_and_only_its_first_part_is_read() {
    let ledger = Ledger::new().await;
    let result = five_megabytes();
    let job = succeeded_with(
        &ledger,
        "large",
        json!({"blob": "y".repeat(70_000)}),
        &result,
    )
    .await;
    let e = &ledger.engine;

    let shown = e.job_shown(OWNER, &job.id).await.expect("shown");
    let stored = serde_json::to_string(&result).expect("json");
    let Some(ShownValue::Large { size, first_part }) = &shown.job.result else {
        panic!("{:?}", shown.job.result);
    };
    // Its size is its JSON text's length in bytes as the ledger holds it, the same on both
    // backends; its first part is the start of its indented text, as measuring it whole gives.
    assert_eq!(*size as usize, stored.len());
    let ShownValue::Large {
        first_part: whole_first,
        ..
    } = ShownValue::of(result.clone())
    else {
        panic!("a 5 MB value is large");
    };
    assert_eq!(first_part, &whole_first);
    assert!(first_part.len() <= 4096 && !first_part.is_empty());
    let intent = e.job(OWNER, &job.id).await.expect("job").job.intent;
    let ShownValue::Large { size, first_part } = &shown.job.intent else {
        panic!("{:?}", shown.job.intent);
    };
    let stored_intent = serde_json::to_string(&intent).expect("json");
    assert_eq!(*size as usize, stored_intent.len());
    assert!(serde_json::to_string_pretty(&intent)
        .expect("json")
        .starts_with(first_part.as_str()));
    // The whole value is still one call away.
    assert_eq!(
        e.job_part(OWNER, &job.id, JobPart::Result)
            .await
            .expect("whole"),
        result
    );
    // Everything else as the full read gives it.
    let full = e.job(OWNER, &job.id).await.expect("job");
    assert_eq!(shown.job.status, full.job.status);
    assert_eq!(shown.job.completed_by, full.job.completed_by);
    assert_eq!(shown.attempts, full.attempts);
    assert_eq!(shown.events, full.events);

    // A small value comes whole; another owner's job is not found.
    let small = ledger.submit("small").await.job;
    let shown = e.job_shown(OWNER, &small.id).await.expect("small");
    assert_eq!(
        shown.job.intent,
        ShownValue::Whole {
            value: small.intent
        }
    );
    assert_eq!(shown.job.result, None);
    let err = e.job_shown("someone-else", &small.id).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
}
