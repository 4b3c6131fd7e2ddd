//! `onejob token create|list|revoke` through the real binary (SPEC §15): the token is printed
//! once and found nowhere after, each names its own owner, and a revoked one no longer opens
//! the ledger to its bearer.

use crate::common;

use common::Ledger;
use onejob_engine::{Engine, Error};
use serde_json::Value;

/// The owner the ledger gives for `token`, as the HTTP API will ask it.
fn authenticate(ledger: &Ledger, token: &str) -> Result<String, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let engine = Engine::open(&ledger.db).await.expect("open");
        let owner = engine.authenticate(token).await;
        engine.close().await;
        owner
    })
}

fn create(ledger: &Ledger, owner: &str, name: Option<&str>) -> Value {
    let mut args = vec!["token", "create", "--owner", owner];
    if let Some(name) = name {
        args.extend(["--name", name]);
    }
    ledger.run(&args).ok()
}

fn token_of(reply: &Value) -> String {
    reply["token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token in {reply}"))
        .to_owned()
}

#[test]
fn create_prints_the_token_once_and_list_never_shows_it() {
    let ledger = Ledger::new();
    let reply = create(&ledger, "alice", Some("deploy bot"));
    let token = token_of(&reply);
    assert!(token.starts_with("oj_") && token.len() >= 3 + 32, "{reply}");
    assert_eq!(reply["owner_id"], "alice", "{reply}");
    assert_eq!(reply["name"], "deploy bot", "{reply}");
    let id = common::id(&reply);

    let listed = ledger.run(&["token", "list"]);
    let doc = listed.ok();
    let tokens = doc["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 1, "{doc}");
    assert_eq!(tokens[0]["id"], id.as_str());
    assert_eq!(tokens[0]["owner_id"], "alice");
    assert!(tokens[0].get("token").is_none(), "{doc}");
    assert!(!listed.stdout.contains(&token[3..]), "{}", listed.stdout);

    // On a file ledger, no byte of it on disk holds the token.
    if !onejob_testkit::is_url(&ledger.db) {
        for suffix in ["", "-wal", "-shm"] {
            let path = format!("{}{suffix}", ledger.db);
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let found = bytes
                .windows(token.len() - 3)
                .any(|w| w == &token.as_bytes()[3..]);
            assert!(!found, "{path} holds the token");
        }
    }
}

#[test]
fn each_token_acts_as_its_own_owner() {
    let ledger = Ledger::new();
    let alice = token_of(&create(&ledger, "alice", None));
    let bob = token_of(&create(&ledger, "bob", None));
    assert_eq!(authenticate(&ledger, &alice).expect("alice"), "alice");
    assert_eq!(authenticate(&ledger, &bob).expect("bob"), "bob");
}

#[test]
fn a_revoked_token_is_refused_like_an_unknown_one() {
    let ledger = Ledger::new();
    let reply = create(&ledger, "alice", None);
    let token = token_of(&reply);
    let id = common::id(&reply);
    assert_eq!(authenticate(&ledger, &token).expect("before"), "alice");

    let revoked = ledger.run(&["token", "revoke", &id]).ok();
    assert_eq!(revoked["token"]["id"], id.as_str(), "{revoked}");
    assert!(revoked["token"]["revoked_at"].is_string(), "{revoked}");
    let listed = ledger.run(&["token", "list"]).ok();
    assert_eq!(
        listed["tokens"][0]["revoked_at"],
        revoked["token"]["revoked_at"]
    );

    let after = authenticate(&ledger, &token).expect_err("revoked");
    let unknown = authenticate(&ledger, "oj_0000").expect_err("unknown");
    assert_eq!(after.code(), "unauthorized");
    assert_eq!(after, unknown, "nothing tells revoked from unknown");
}

#[test]
fn bad_arguments_have_the_exit_codes_of_the_spec() {
    let ledger = Ledger::new();
    let unknown = ledger.run(&["token", "revoke", "01900000-0000-7000-8000-000000000001"]);
    assert_eq!(unknown.err(5)["code"], "not_found");
    let owner = ledger.run(&["token", "create", "--owner", "not an owner"]);
    assert_eq!(owner.err(2)["details"]["field"], "owner_id");
    let name = ledger.run(&["token", "create", "--owner", "alice", "--name", ""]);
    assert_eq!(name.err(2)["details"]["field"], "name");
    let listed = ledger.run(&["token", "list"]).ok();
    assert_eq!(
        listed["tokens"],
        Value::Array(vec![]),
        "a refused token left a row"
    );
}
