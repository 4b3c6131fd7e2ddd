//! A primary and a streaming standby: what the standby holds, when the primary's commits wait
//! for it, and a failover that loses nothing a synchronous primary acknowledged.

use std::process::Child;
use std::time::{Duration, Instant};

use onejob_testkit::{Replicated, Standby, STANDBY_NAME};

/// The rows of `SELECT` on `database` of the server, one a line.
fn rows(server: &onejob_testkit::Postgres, database: &str, sql: &str) -> String {
    server
        .sql(database, sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .trim()
        .to_owned()
}

/// Waits up to `limit` for `ready` to say yes.
fn eventually(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the background `psql` has ended, and if so that it succeeded.
fn ended(psql: &mut Child) -> bool {
    match psql.try_wait().expect("psql's status") {
        Some(status) => {
            assert!(status.success(), "the statement failed: {status}");
            true
        }
        None => false,
    }
}

#[test]
fn a_write_on_the_primary_is_read_on_the_standby() {
    let pair = Replicated::start(Standby::Asynchronous).expect("a primary and a standby");
    let url = pair.database("ledger").expect("a database on both");
    let (primary, standby) = (pair.primary().port(), pair.standby().port());
    assert_eq!(
        url,
        format!("postgres://onejob@127.0.0.1:{primary},127.0.0.1:{standby}/ledger")
    );
    assert_eq!(
        pair.url_standby_first("ledger"),
        format!("postgres://onejob@127.0.0.1:{standby},127.0.0.1:{primary}/ledger")
    );
    assert_eq!(
        rows(pair.primary(), "ledger", "SELECT pg_is_in_recovery()"),
        "f"
    );
    assert_eq!(
        rows(pair.standby(), "ledger", "SELECT pg_is_in_recovery()"),
        "t"
    );
    assert_eq!(
        rows(
            pair.primary(),
            "postgres",
            "SELECT application_name, state, sync_state FROM pg_stat_replication"
        ),
        format!("{STANDBY_NAME}|streaming|async")
    );

    pair.primary()
        .sql("ledger", "CREATE TABLE t (n int); INSERT INTO t VALUES (7)")
        .expect("written on the primary");
    eventually(Duration::from_secs(30), "the row on the standby", || {
        pair.standby()
            .sql("ledger", "SELECT n FROM t")
            .is_ok_and(|n| n.trim() == "7")
    });
    // A standby takes no writes.
    let refused = pair.standby().sql("ledger", "INSERT INTO t VALUES (8)");
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("read-only")),
        "{refused:?}"
    );
}

/// A pair started in `mode` with table `t` in database `ledger`, its standby paused, and an
/// `INSERT` into `t` running on the primary.
fn insert_while_the_standby_is_paused(mode: Standby) -> (Replicated, Child) {
    let mut pair = Replicated::start(mode).expect("a primary and a standby");
    pair.database("ledger").expect("a database on both");
    pair.primary()
        .sql("ledger", "CREATE TABLE t (n int)")
        .expect("a table");
    pair.pause_standby().expect("paused");
    let insert = pair
        .primary()
        .spawn_sql("ledger", "INSERT INTO t VALUES (1)")
        .expect("psql runs");
    (pair, insert)
}

#[test]
fn a_synchronous_commit_waits_while_the_standby_is_paused_and_returns_after() {
    let (mut pair, mut insert) = insert_while_the_standby_is_paused(Standby::Synchronous);
    assert_eq!(
        rows(
            pair.primary(),
            "postgres",
            "SELECT sync_state FROM pg_stat_replication"
        ),
        "sync"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !ended(&mut insert),
        "a commit returned while its standby was paused"
    );
    // Not acknowledged, so not shown to others either; the standby does not have it.
    let count = "SELECT count(*) FROM t";
    assert_eq!(rows(pair.primary(), "ledger", count), "0");
    assert_eq!(rows(pair.standby(), "ledger", count), "0");

    pair.resume_standby().expect("resumed");
    eventually(Duration::from_secs(30), "the commit returned", || {
        ended(&mut insert)
    });
    assert_eq!(rows(pair.primary(), "ledger", count), "1");
    eventually(Duration::from_secs(30), "the row on the standby", || {
        pair.standby()
            .sql("ledger", count)
            .is_ok_and(|n| n.trim() == "1")
    });
}

#[test]
fn an_asynchronous_commit_does_not_wait_for_a_paused_standby() {
    let (mut pair, mut insert) = insert_while_the_standby_is_paused(Standby::Asynchronous);
    eventually(Duration::from_secs(10), "the commit returned", || {
        ended(&mut insert)
    });
    // Acknowledged, and only the primary has it.
    assert_eq!(
        rows(pair.standby(), "ledger", "SELECT count(*) FROM t"),
        "0"
    );
    pair.resume_standby().expect("resumed");
}

#[test]
fn after_a_crash_and_a_promotion_the_standby_takes_writes_and_holds_what_was_committed() {
    let mut pair = Replicated::start(Standby::Synchronous).expect("a primary and a standby");
    pair.database("ledger").expect("a database on both");
    pair.primary()
        .sql(
            "ledger",
            "CREATE TABLE t (n int); INSERT INTO t SELECT generate_series(1, 100)",
        )
        .expect("committed on the primary");
    let port = pair.primary().port();

    pair.crash_primary().expect("crashed");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the crashed primary still listens"
    );
    // Still a standby until promoted: it takes no writes.
    assert_eq!(
        rows(pair.standby(), "ledger", "SELECT pg_is_in_recovery()"),
        "t"
    );

    pair.promote_standby().expect("promoted");
    assert_eq!(
        rows(pair.standby(), "ledger", "SELECT pg_is_in_recovery()"),
        "f"
    );
    pair.standby()
        .sql("ledger", "INSERT INTO t VALUES (101)")
        .expect("the promoted standby takes writes");
    assert_eq!(
        rows(pair.standby(), "ledger", "SELECT count(*), sum(n) FROM t"),
        "101|5151"
    );
}

#[test]
fn dropping_the_pair_stops_both_servers_and_removes_their_folders() {
    let mut pair = Replicated::start(Standby::Synchronous).expect("a primary and a standby");
    // A paused standby too.
    pair.pause_standby().expect("paused");
    let ports = [pair.primary().port(), pair.standby().port()];
    let dirs = [
        pair.primary().dir().to_path_buf(),
        pair.standby().dir().to_path_buf(),
    ];
    drop(pair);
    for port in ports {
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }
    for dir in dirs {
        assert!(!dir.exists(), "{dir:?} is left behind");
    }
}
