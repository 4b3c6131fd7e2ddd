//! A team ledger that loses its primary (SPEC §14 "A standby that takes over"): a primary and a
//! synchronous standby on loopback, a worker with attempts in flight at a slow provider, submits
//! from the command line and from `onejob serve`, the primary killed as a crash would and the
//! standby promoted. Every face carries on by itself, every acknowledged job is on the new
//! primary, nothing is sent twice and every job settles. The test starts a cluster pair of its
//! own.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use common::processes::{add_http_provider, intent_for, poll, Running, SandboxProcess};
use common::serve::{token, Api, Server};
use common::{parse, Ledger};
use onejob_testkit::{Replicated, Standby};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Jobs each face submits before the crash, and again after it.
const EACH: usize = 6;

/// Submits job `key` from the command line until it is acknowledged (a failover makes a submit
/// fail for a few seconds: a client sends the same key again); its id.
fn cli_submit(ledger: &Ledger, key: &str) -> String {
    let intent = intent_for("slow", json!({ "key": key }));
    poll(
        Duration::from_secs(90),
        &format!("{key} acknowledged"),
        || {
            let run = ledger.run(&["submit", "--key", key, "--intent", &intent]);
            (run.code == 0).then(|| text(&parse(&run.stdout)["job"]["id"]))
        },
    )
}

/// The same over HTTP, with the `Idempotency-Key` sent again until the server says 201 or 200.
async fn http_submit(api: &Api, key: &str) -> String {
    let intent = intent_for("slow", json!({ "key": key }));
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let response = api.submit(key, &intent).await;
        let status = response.status();
        if status == StatusCode::CREATED || status == StatusCode::OK {
            let body: Value = response.json().await.expect("a JSON reply");
            return text(&body["job"]["id"]);
        }
        assert!(
            Instant::now() < deadline,
            "{key} never acknowledged over HTTP: {status}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// Every job on the ledger, by id, with its status, as the command line reads them.
fn statuses(ledger: &Ledger) -> HashMap<String, String> {
    let run = ledger.run(&["jobs", "--limit", "500"]);
    if run.code != 0 {
        return HashMap::new();
    }
    parse(&run.stdout)["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|job| (text(&job["id"]), text(&job["status"])))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failover_to_the_standby_mid_flight_loses_nothing_and_sends_nothing_twice() {
    let mut pair = Replicated::start(Standby::Synchronous).expect("a primary and a standby");
    // The primary first: once it is gone, every face must find the standby by itself.
    let url = pair.database("ledger").expect("a database");
    let ledger = Ledger::at(&url);
    let slow = SandboxProcess::start(&ledger, json!({ "latency_ms": 1500, "jitter_ms": 0 }));
    add_http_provider(&ledger, "slow", &slow.url, 30_000, 60_000, json!({}));
    let mut worker = Running::spawn(&ledger, &["worker", "--concurrency", "4"]);
    let mut server = Server::start(&ledger, &[]);
    let api = Api::new(&server, &token(&ledger, "local"));

    let mut acknowledged = Vec::new();
    for n in 0..EACH {
        acknowledged.push(cli_submit(&ledger, &format!("cli-before-{n}")));
        acknowledged.push(http_submit(&api, &format!("http-before-{n}")).await);
    }
    poll(Duration::from_secs(60), "attempts in flight", || {
        (!slow.log().is_empty()).then_some(())
    });

    pair.crash_primary().expect("the primary crashed");
    pair.promote_standby().expect("the standby promoted");
    for n in 0..EACH {
        acknowledged.push(cli_submit(&ledger, &format!("cli-after-{n}")));
        acknowledged.push(http_submit(&api, &format!("http-after-{n}")).await);
    }

    // Every job acknowledged, by either face, before or after, settles on the new primary.
    let settled = poll(Duration::from_secs(180), "every job settled", || {
        assert!(worker.is_running(), "the worker exited");
        assert!(server.process.is_running(), "the server exited");
        let now = statuses(&ledger);
        acknowledged
            .iter()
            .all(|id| now.get(id).is_some_and(|s| s == "succeeded"))
            .then_some(now)
    });
    assert_eq!(settled.len(), acknowledged.len(), "{settled:?}");
    // Nothing was sent twice: each job reached the provider once, under its own id.
    let keys = slow.keys();
    let distinct: HashSet<&String> = keys.iter().collect();
    assert_eq!(distinct.len(), keys.len(), "a job was sent twice: {keys:?}");
    assert_eq!(
        distinct,
        acknowledged.iter().collect::<HashSet<_>>(),
        "each acknowledged job sent once"
    );
    // The faces that stayed up carried on without a restart, on the new primary.
    let reply = api.get("/v1/jobs?limit=1").await;
    assert_eq!(reply.status(), StatusCode::OK);
    server.terminate(Duration::from_secs(30));
    worker.terminate(Duration::from_secs(30));
}
