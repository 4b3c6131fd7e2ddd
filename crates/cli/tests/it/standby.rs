//! A ledger on a primary with a streaming standby (SPEC §14, "A standby that takes over"): a
//! server with standbys none of which is synchronous is named a risk by `onejob doctor` and on
//! `onejob serve`'s start line, and one with a synchronous standby is not. Each test starts its
//! own clusters (`onejob_testkit::Replicated`, `Postgres`), whatever the pass's backend.

use crate::common;
use crate::doctor::{doctor, risk_codes};

use std::time::Duration;

use common::processes::{faketime, libfaketime};
use common::serve::Server;
use common::Ledger;
use onejob_testkit::{Postgres, Replicated, Standby, STANDBY_NAME};
use serde_json::{json, Value};

/// The risk of a server with standbys none of which is synchronous.
const NO_SYNCHRONOUS_STANDBY: &str = "no_synchronous_standby";

/// A primary and a standby in `mode`, and a ledger on their database `ledger`, by a URL that
/// names both, the standby first: onejob writes to the primary.
fn replicated_ledger(mode: Standby) -> (Replicated, Ledger) {
    let pair = Replicated::start(mode).expect("a primary and a standby");
    pair.database("ledger").expect("a database on both");
    let ledger = Ledger::at(&pair.url_standby_first("ledger"));
    (pair, ledger)
}

/// The risk of a server without a synchronous standby, in `risks`, in a person's words.
fn assert_names_the_asynchronous_standby(doc: &Value) {
    assert_eq!(risk_codes(doc), vec![NO_SYNCHRONOUS_STANDBY], "{doc}");
    let risk = &doc["risks"][0];
    let text = |field: &str| risk[field].as_str().unwrap_or_default().to_owned();
    assert!(text("what").contains(STANDBY_NAME), "{risk}");
    assert!(
        text("why").contains("a failover can lose acknowledged jobs and send attempts twice"),
        "{risk}"
    );
    assert!(
        text("what_to_do").contains("synchronous_standby_names"),
        "{risk}"
    );
}

#[test]
fn onejob_doctor_names_an_asynchronous_standby_a_risk() {
    let (pair, ledger) = replicated_ledger(Standby::Asynchronous);
    let doc = doctor(&ledger, &[]);
    let server = &doc["ledger"]["postgres"];
    assert_eq!(doc["ledger"]["backend"], "postgres", "{doc}");
    assert_eq!(doc["ledger"]["location"], ledger.db.as_str(), "{doc}");
    let primary = format!("127.0.0.1:{}", pair.primary().port());
    assert_eq!(server["connected_to"], primary, "{doc}");
    assert_eq!(server["primary"], true, "{doc}");
    assert_eq!(
        server["standbys"],
        json!([{
            "application_name": STANDBY_NAME,
            "client_addr": "127.0.0.1",
            "state": "streaming",
            "sync_state": "async",
        }]),
        "{doc}"
    );
    assert_eq!(server["synchronous_standby_names"], "", "{doc}");
    assert_names_the_asynchronous_standby(&doc);
    drop(pair);

    // Named in synchronous_standby_names, the standby confirms each commit: no such risk.
    let (_pair, ledger) = replicated_ledger(Standby::Synchronous);
    let doc = doctor(&ledger, &[]);
    let server = &doc["ledger"]["postgres"];
    assert_eq!(server["standbys"][0]["sync_state"], "sync", "{doc}");
    assert_eq!(server["synchronous_standby_names"], STANDBY_NAME, "{doc}");
    assert_eq!(server["synchronous_commit"], "on", "{doc}");
    assert_eq!(risk_codes(&doc), Vec::<String>::new(), "{doc}");
}

#[test]
fn onejob_doctor_on_a_server_without_standbys_names_no_replication_risk() {
    let cluster = Postgres::start().expect("a PostgreSQL cluster");
    cluster.database("ledger").expect("a database");
    let port = cluster.port();
    // The cluster trusts loopback: the password is never asked for, only shown, redacted.
    let ledger = Ledger::at(&format!(
        "postgres://onejob:s3cret-in-url@127.0.0.1:{port}/ledger"
    ));
    let doc = doctor(&ledger, &[]);
    assert!(!doc.to_string().contains("s3cret"), "{doc}");
    let described = &doc["ledger"];
    assert_eq!(
        described["location"],
        format!("postgres://onejob:***@127.0.0.1:{port}/ledger")
    );
    let server = &described["postgres"];
    assert_eq!(server["connected_to"], format!("127.0.0.1:{port}"), "{doc}");
    assert_eq!(server["primary"], true, "{doc}");
    assert_eq!(server["standbys"], json!([]), "{doc}");
    assert_eq!(server["synchronous_commit"], "on", "{doc}");
    assert_eq!(server["synchronous_standby_names"], "", "{doc}");
    let skew = server["clock_skew_ms"].as_i64().expect("a skew");
    assert!(skew.abs() < 1000, "{doc}");
    assert_eq!(risk_codes(&doc), Vec::<String>::new(), "{doc}");

    // A host whose clock is a minute ahead of the server's is told so.
    let lib = libfaketime();
    let ahead = faketime(&lib, "+60s");
    let ahead: Vec<&str> = ahead.iter().map(String::as_str).collect();
    let doc = doctor(&ledger, &ahead);
    let skew = doc["ledger"]["postgres"]["clock_skew_ms"]
        .as_i64()
        .expect("a skew");
    assert!((-65_000..=-55_000).contains(&skew), "{doc}");
    assert_eq!(risk_codes(&doc), vec!["clock_skew"], "{doc}");
    let what = doc["risks"][0]["what"].as_str().unwrap_or_default();
    assert!(what.contains("ahead of the ledger's server's"), "{doc}");
}

#[test]
fn onejob_serve_names_an_asynchronous_standby_on_its_start_line() {
    let (pair, ledger) = replicated_ledger(Standby::Asynchronous);
    let mut server = Server::start(&ledger, &["--no-worker"]);
    assert_names_the_asynchronous_standby(&server.start);
    let stopped = server.terminate(Duration::from_secs(30));
    assert_eq!(stopped.code, 0, "{stopped:?}");
    drop(pair);

    // A synchronous standby: the start line is the plain one.
    let (_pair, ledger) = replicated_ledger(Standby::Synchronous);
    let mut server = Server::start(&ledger, &["--no-worker"]);
    assert!(server.start.get("risks").is_none(), "{}", server.start);
    let stopped = server.terminate(Duration::from_secs(30));
    assert_eq!(stopped.code, 0, "{stopped:?}");
}
