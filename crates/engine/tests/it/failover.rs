//! A ledger on a primary with standbys (SPEC §14 "A standby that takes over"), on real
//! throwaway clusters (a primary and a standby streaming from it, on loopback): a URL that
//! names several hosts writes to the one that accepts writes, whichever order they are listed
//! in, and an attempt's move to `in_flight` is never acknowledged, so never sent, before a
//! synchronous standby holds it.

use std::time::{Duration, Instant};

use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{AttemptState, Engine, Error};
use onejob_testkit::{Postgres, Replicated, Standby};

const OWNER: &str = "local";

/// A port on 127.0.0.1 nobody listens on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a port")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_may_list_a_host_that_is_down_first_and_onejob_writes_to_the_one_that_answers() {
    let cluster = Postgres::start().expect("a cluster");
    let _ = cluster.database("ledger").expect("a database");
    let (down, up) = (free_port(), cluster.port());
    for hosts in [
        format!("127.0.0.1:{down},127.0.0.1:{up}"),
        format!("127.0.0.1:{up},127.0.0.1:{down}"),
    ] {
        let url = format!("postgres://onejob@{hosts}/ledger");
        let engine = Engine::open(&url).await.expect("open");
        assert_eq!(engine.location(), url);
        let primary = engine.primary().expect("a PostgreSQL ledger");
        assert_eq!(primary.host, format!("127.0.0.1:{up}"));
        let key = format!("listed-{hosts}");
        let job = engine
            .submit(OWNER, &key, r#"{"route": ["sandbox"], "input": {}}"#)
            .await
            .expect("a submit on the host that answers");
        let again = engine.job(OWNER, &job.job.id).await.expect("read back");
        assert_eq!(again.job.idempotency_key, key);
        engine.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_whose_hosts_all_refuse_says_what_each_said_and_never_the_password() {
    let (one, two) = (free_port(), free_port());
    let url = format!("postgres://alice:hunter2@127.0.0.1:{one},127.0.0.1:{two}/ledger");
    let Err(Error::Storage { message, .. }) = Engine::open(&url).await else {
        panic!("{url} opened");
    };
    assert!(!message.contains("hunter2"), "{message}");
    assert!(
        message.contains("none of its hosts accepts writes"),
        "{message}"
    );
    for port in [one, two] {
        assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    }
    let empty = format!("postgres://alice:hunter2@127.0.0.1:{one},,127.0.0.1:{two}/ledger");
    let Err(Error::InvalidInput { message, .. }) = Engine::open(&empty).await else {
        panic!("{empty} opened");
    };
    assert!(message.contains("host 2"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_url_may_list_the_standby_first_and_onejob_writes_to_the_primary() {
    let pair = Replicated::start(Standby::Synchronous).expect("a primary and a standby");
    let _ = pair.database("ledger").expect("a database");
    let url = pair.url_standby_first("ledger");
    let engine = Engine::open(&url).await.expect("open");
    let primary = engine.primary().expect("a PostgreSQL ledger");
    assert_eq!(primary.host, format!("127.0.0.1:{}", pair.primary().port()));
    assert!(primary.since.is_none(), "{primary:?}");
    let job = engine
        .submit(
            OWNER,
            "standby-first",
            r#"{"route": ["sandbox"], "input": {}}"#,
        )
        .await
        .expect("a submit, written to the primary");
    // Acknowledged, so on the synchronous standby already (flushed; replayed a moment later).
    let on_standby = format!("SELECT count(*) FROM jobs WHERE id = '{}'", job.job.id);
    let deadline = Instant::now() + Duration::from_secs(10);
    while pair
        .standby()
        .sql("ledger", &on_standby)
        .expect("the standby")
        .trim()
        != "1"
    {
        assert!(
            Instant::now() < deadline,
            "the standby never showed the job"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    engine.close().await;
}

/// The synchronous standby stops confirming: an attempt's move to `in_flight` waits for it,
/// also past the statement timeout every connection has (30 s), though the database's own
/// default asks no commit to wait for a standby, and is not acknowledged, so the executor,
/// which sends only once the move is, sends nothing; once the standby confirms, the move is
/// acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_flight_move_is_never_acknowledged_before_the_standby_has_it() {
    let mut pair = Replicated::start(Standby::Synchronous).expect("a primary and a standby");
    let url = pair.database("ledger").expect("a database");
    // The database's own default waits for no standby: onejob's connections must ask for it.
    pair.primary()
        .sql(
            "ledger",
            "ALTER DATABASE ledger SET synchronous_commit = local",
        )
        .expect("a default that waits for no standby");
    let engine = Engine::open(&url).await.expect("open");
    let job = engine
        .submit(OWNER, "held-back", r#"{"route": ["sandbox"], "input": 1}"#)
        .await
        .expect("submit")
        .job;
    let attempt = engine
        .claim_attempt(&job.id, "sandbox")
        .await
        .expect("a pending attempt")
        .attempt;

    pair.pause_standby().expect("the standby paused");
    let moving = {
        let (engine, id) = (engine.clone(), attempt.id.clone());
        tokio::spawn(async move {
            engine
                .mark_sent(&id, "executor-1", Duration::from_secs(300))
                .await
        })
    };
    tokio::time::sleep(Duration::from_secs(35)).await;
    assert!(
        !moving.is_finished(),
        "the move to in_flight was acknowledged while only the primary held it: {:?}",
        moving.await
    );

    pair.resume_standby().expect("the standby resumed");
    let moved = tokio::time::timeout(Duration::from_secs(60), moving)
        .await
        .expect("acknowledged once the standby has it")
        .expect("the task")
        .expect("the move");
    assert_eq!(moved.state, AttemptState::InFlight);
    engine.close().await;
}
