//! The event feed behind `GET /v1/events` (SPEC §15): an owner's events in one order, resumed
//! from any position the feed gave without missing or repeating one, on both backends; on
//! PostgreSQL also when an event commits after one with a later id was already read.

use crate::common;

use std::time::{Duration, Instant};

use common::{intent, Ledger, Raw, OWNER};
use onejob_engine::{Engine, Error, FeedEvent};
use serde_json::json;

/// Reads the feed from `after` page by page until `enough` holds of what was read, or 20 s
/// passed (on PostgreSQL an event waits for every transaction of the server that began before
/// its own, other tests' included); returns what was read and where to resume.
async fn read_until(
    engine: &Engine,
    after: &str,
    enough: impl Fn(&[FeedEvent]) -> bool,
) -> (Vec<FeedEvent>, String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut read = Vec::new();
    let mut next = after.to_owned();
    while !enough(&read) && Instant::now() < deadline {
        let page = engine.feed(OWNER, &next, 1000).await.expect("feed");
        if page.events.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        read.extend(page.events);
        next = page.next;
    }
    (read, next)
}

/// Each event as (its job, its kind), to compare with what happened.
fn happened(events: &[FeedEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| (e.event.job_id.clone(), e.event.kind.clone()))
        .collect()
}

fn ids(events: &[FeedEvent]) -> Vec<&str> {
    events.iter().map(|e| e.id.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_resume_after_the_last_event_in_order_and_only_the_owners() {
    let ledger = Ledger::new().await;
    let engine = &ledger.engine;
    let start = engine.feed_end(OWNER).await.expect("the feed's end");

    let a = ledger.submit("a").await.job;
    let other = engine
        .submit("someone-else", "x", &intent(json!({ "text": "x" })))
        .await
        .expect("another owner's submit")
        .job;
    let b = ledger.submit("b").await.job;
    ledger.next_in_flight(&a.id, "primary").await;
    engine
        .cancel("someone-else", &other.id)
        .await
        .expect("another owner's cancel");
    let c = ledger.submit("c").await.job;
    engine.cancel(OWNER, &b.id).await.expect("cancel");

    let expected: Vec<(String, String)> = [
        (&a.id, "submitted"),
        (&b.id, "submitted"),
        (&a.id, "attempt_created"),
        (&a.id, "attempt_sent"),
        (&c.id, "submitted"),
        (&b.id, "job_cancelled"),
    ]
    .into_iter()
    .map(|(job, kind)| (job.clone(), kind.to_owned()))
    .collect();
    let (all, end) = read_until(engine, &start, |read| read.len() >= expected.len()).await;
    assert_eq!(happened(&all), expected, "the owner's events, in order");

    // From each event's position: exactly the events after it.
    for (k, event) in all.iter().enumerate() {
        let page = engine.feed(OWNER, &event.id, 1000).await.expect("resume");
        assert_eq!(page.events, all[k + 1..], "after event {k}");
        assert_eq!(page.next, end, "next after event {k}");
    }
    // Nothing after the last: an empty page, and `next` stays where it was asked from.
    let empty = engine.feed(OWNER, &end, 1000).await.expect("at the end");
    assert!(empty.events.is_empty(), "{empty:?}");
    assert_eq!(empty.next, end);

    // Two at a time, each page resumed from the last one's `next`: the same events.
    let mut paged = Vec::new();
    let mut next = start.clone();
    loop {
        let page = engine.feed(OWNER, &next, 2).await.expect("a page of two");
        assert!(page.events.len() <= 2, "{page:?}");
        if page.events.is_empty() {
            break;
        }
        next = page.next;
        paged.extend(page.events);
    }
    assert_eq!(ids(&paged), ids(&all));

    // The limit is taken as 1 to 1000 rather than refused.
    let one = engine.feed(OWNER, &start, 0).await.expect("limit 0");
    assert_eq!(ids(&one.events), ids(&all[..1]));
    let many = engine.feed(OWNER, &start, 5000).await.expect("limit 5000");
    assert_eq!(ids(&many.events), ids(&all));

    // The other owner sees only its own job's events.
    let theirs = engine
        .feed("someone-else", &start, 1000)
        .await
        .expect("the other owner's feed");
    assert!(
        theirs.events.iter().all(|e| e.event.job_id == other.id),
        "{theirs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_starting_at_the_feeds_end_gets_the_events_that_commit_afterwards() {
    let ledger = Ledger::new().await;
    let engine = &ledger.engine;
    let before = ledger.submit("before").await.job;
    let end = engine.feed_end(OWNER).await.expect("the feed's end");
    let after = ledger.submit("after").await.job;

    let submitted = (after.id.clone(), "submitted".to_owned());
    let (read, _) = read_until(engine, &end, |read| happened(read).contains(&submitted)).await;
    assert!(happened(&read).contains(&submitted), "{read:?}");
    if !onejob_testkit::postgres_backend() {
        // On PostgreSQL the end may also let through what committed while another transaction
        // of the server was open; on SQLite it is exactly the last event.
        assert!(read.iter().all(|e| e.event.job_id != before.id), "{read:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_that_commits_after_a_later_one_still_reaches_a_resumer() {
    if !onejob_testkit::postgres_backend() {
        eprintln!("postgres only: on SQLite id order is commit order");
        return;
    }
    let ledger = Ledger::new().await;
    let engine = &ledger.engine;
    let start = engine.feed_end(OWNER).await.expect("the feed's end");
    let early = ledger.submit("early").await.job;
    let later = ledger.submit("later").await.job;
    let (_, from) = read_until(engine, &start, |read| read.len() >= 2).await;

    // A transaction writes an event first (the lower id) and stays open…
    let Raw::Postgres(pool) = ledger.raw().await else {
        unreachable!("a PostgreSQL ledger")
    };
    let mut open = pool.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO job_events (job_id, kind, actor, detail)
         VALUES ($1::uuid, 'late_answer_flagged', 'system', '{\"committed\": \"late\"}')",
    )
    .bind(&early.id)
    .execute(&mut *open)
    .await
    .expect("an event in the open transaction");
    // …while another event (a higher id) commits, and a client reads.
    engine.cancel(OWNER, &later.id).await.expect("cancel");
    let meanwhile = engine.feed(OWNER, &from, 1000).await.expect("feed");
    // Then the first commits, and the client resumes where it left off.
    open.commit().await.expect("commit");
    let expected = vec![
        (early.id.clone(), "late_answer_flagged".to_owned()),
        (later.id.clone(), "job_cancelled".to_owned()),
    ];
    let (resumed, _) = read_until(engine, &meanwhile.next, |read| {
        read.len() + meanwhile.events.len() >= expected.len()
    })
    .await;

    let mut streamed = meanwhile.events.clone();
    streamed.extend(resumed);
    assert_eq!(
        happened(&streamed),
        expected,
        "every event reaches the resumer once, in commit order"
    );
    assert!(
        meanwhile.events.is_empty(),
        "the later commit is held back while the earlier transaction is open: {meanwhile:?}"
    );
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_position_is_invalid_input_naming_last_event_id() {
    let ledger = Ledger::new().await;
    let engine = &ledger.engine;
    ledger.submit("a").await;
    let this_backends_other_form = if onejob_testkit::postgres_backend() {
        "12"
    } else {
        "1-2"
    };
    for position in [
        "",
        "abc",
        "-",
        "1-",
        "-1",
        "x-1",
        "1-x",
        "1.5",
        " 1",
        "1 ",
        "+1",
        "1-2-3",
        "99999999999999999999",
        "1-99999999999999999999",
        this_backends_other_form,
    ] {
        match engine.feed(OWNER, position, 10).await {
            Err(Error::InvalidInput { details, message }) => {
                assert_eq!(details.field, "last_event_id", "{position:?}: {message}");
                assert!(message.contains("position"), "{message}");
            }
            other => panic!("{position:?}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_past_the_feeds_end_from_another_ledger_is_refused() {
    let this = Ledger::new().await;
    this.submit("here").await;
    let other = Ledger::new().await;
    let start = other.engine.feed_end(OWNER).await.expect("the other's end");
    for key in ["one", "two", "three"] {
        other.submit(key).await;
    }
    let (_, theirs) = read_until(&other.engine, &start, |read| read.len() >= 3).await;

    match this.engine.feed(OWNER, &theirs, 10).await {
        Err(Error::InvalidInput { details, message }) => {
            assert_eq!(details.field, "last_event_id", "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_written_alone_is_announced_as_a_change() {
    let ledger = Ledger::new().await;
    let job = ledger.submit("a").await.job;
    let mut changes = ledger
        .engine
        .changes(Duration::from_millis(20))
        .await
        .expect("changes");
    changes.borrow_and_update();
    let raw = ledger.raw().await;
    raw.execute(
        common::Sql {
            sqlite: "INSERT INTO job_events (job_id, at, kind, actor) VALUES ($1, '2026-01-01T00:00:00.000Z', 'late_answer_flagged', 'system')",
            postgres: "INSERT INTO job_events (job_id, kind, actor) VALUES ($1::uuid, 'late_answer_flagged', 'system')",
        },
        &[&job.id],
    )
    .await
    .expect("an event alone");
    raw.close().await;
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("announced")
        .expect("the change feed runs");
}

/// SPEC §15: a stream's cost per second does not grow with the ledger's history. An owner whose
/// jobs are idle while others' are busy gets an empty page whose `next` passes over the others'
/// events, so its next poll reads only what is new; nothing of its own is skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_owners_feed_passes_over_other_owners_events_and_misses_none_of_its_own() {
    let ledger = Ledger::new().await;
    let engine = &ledger.engine;
    let start = engine.feed_end(OWNER).await.expect("the feed's end");
    let mut theirs = Vec::new();
    for n in 0..30 {
        let submitted = engine
            .submit("busy", &format!("k{n}"), &intent(json!({ "n": n })))
            .await
            .expect("another owner's submit");
        theirs.push(submitted.job.id);
    }
    // The other owner's last event, once every event up to it is settled.
    let (busy, _) = {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let page = engine.feed("busy", &start, 1000).await.expect("feed");
            if page.events.len() == theirs.len() || Instant::now() > deadline {
                break (page.events, page.next);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    assert_eq!(busy.len(), theirs.len(), "{busy:?}");
    let their_last = busy.last().expect("their last event").id.clone();

    // The idle owner's page is empty, and its `next` is past the other owner's events.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut page = engine.feed(OWNER, &start, 1000).await.expect("feed");
    while page.next != their_last && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        page = engine.feed(OWNER, &start, 1000).await.expect("feed");
    }
    assert!(page.events.is_empty(), "{page:?}");
    assert_eq!(
        page.next, their_last,
        "an empty page passes over the others' events"
    );
    let again = engine.feed(OWNER, &page.next, 1000).await.expect("feed");
    assert!(again.events.is_empty(), "{again:?}");
    assert_eq!(again.next, their_last);

    // Its own next event is read from there, and so is every one after a full page.
    let mine = ledger.submit("mine").await.job;
    let (read, _) = read_until(engine, &page.next, |read| !read.is_empty()).await;
    assert_eq!(happened(&read), vec![(mine.id, "submitted".to_owned())]);
    let full = engine.feed("busy", &start, 10).await.expect("a full page");
    assert_eq!(full.events.len(), 10);
    assert_eq!(
        full.next, full.events[9].id,
        "a full page ends at its last event"
    );
}
