//! The OpenAPI document as a client meets it: served by a real server on loopback without a
//! token, the same bytes as the committed `docs/openapi.json`, and every operation it
//! describes routed and guarded as it says.

use std::path::PathBuf;

use onejob_engine::Engine;
use onejob_http::{Api, Limits};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

/// A server on a free loopback port over a fresh ledger; it stops when the sender is dropped.
async fn start() -> (String, oneshot::Sender<()>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let ledger = onejob_testkit::ledger_location(&dir.path().join("ledger.db"));
    let engine = Engine::open(&ledger).await.expect("the ledger opens");
    let (_stopping_tx, stopping) = watch::channel(false);
    let api = Api::new(engine, stopping).await.expect("the API starts");
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _stopping_tx = _stopping_tx;
        let router = onejob_http::router(api);
        onejob_http::serve(listener, router, None, Limits::default(), async {
            let _ = stopped.await;
        })
        .await;
    });
    (url, stop, dir)
}

fn committed() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    std::fs::read_to_string(path).expect("docs/openapi.json can be read")
}

#[tokio::test]
async fn the_document_is_served_without_a_token_and_is_the_committed_one() {
    let (url, _stop, _dir) = start().await;
    let answer = reqwest::get(format!("{url}/v1/openapi.json"))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let served = answer.text().await.unwrap();
    assert_eq!(
        served,
        committed(),
        "the served document is not docs/openapi.json"
    );
    assert_eq!(served, onejob_http::openapi::document_json());
}

#[tokio::test]
async fn every_described_operation_is_routed_and_asks_for_a_token() {
    let (url, _stop, _dir) = start().await;
    let doc = onejob_http::openapi::document();
    let client = reqwest::Client::new();
    let operations = onejob_http::openapi::operations(&doc);
    assert!(operations.len() >= 8, "{}", operations.len());
    for (method, path, operation) in operations {
        let public = operation.security.as_ref().is_some_and(Vec::is_empty);
        let concrete = path.replace("{id}", "0190a4c2-0000-7000-8000-000000000000");
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let answer = client
            .request(method.clone(), format!("{url}{concrete}"))
            .header("content-type", "application/json")
            .header("idempotency-key", "k-1")
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        if public {
            assert_eq!(status, 200, "{method} {path}");
            continue;
        }
        // An unrouted path would be 404 and an unrouted method 405, both before any token.
        assert_eq!(status, 401, "{method} {path} without a token");
        let documented = &operation.responses.responses;
        assert!(
            documented.contains_key("401"),
            "{method} {path} does not describe its 401"
        );
        let problem: Value = answer.json().await.unwrap();
        assert_eq!(
            problem["code"], "unauthorized",
            "{method} {path}: {problem}"
        );
    }
}
