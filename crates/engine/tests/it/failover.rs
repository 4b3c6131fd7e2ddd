//! A ledger on a primary with standbys (SPEC §14 "A standby that takes over"), on real
//! throwaway clusters: a URL that names several hosts writes to the one that accepts writes,
//! whichever order they are listed in.

use onejob_engine::{Engine, Error};
use onejob_testkit::Postgres;

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
