//! A provider configuration is a closed set of fields, also in rows stored before the set was
//! closed; its URLs carry no credential, and no message repeats a URL's user info or query
//! string (SPEC §12). No test reaches the keyring of the desktop it runs on.

use crate::common;

use common::{start, until, Ledger, Raw, Sql, OWNER};
use onejob_engine::testing::PROVIDER_FIELDS;
use onejob_engine::testing::SERVICE;
use onejob_engine::{Engine, Error, JobStatus, KeyStatus};
use onejob_testkit::DesktopSession;
use serde_json::{json, Value};

/// A value planted where a secret would go; no refusal, listing or message may repeat it.
const PLANTED: &str = "sk-planted";

fn http_provider(name: &str, base_url: &str) -> Value {
    json!({
        "name": name, "kind": "http", "base_url": base_url,
        "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "honours_idempotency_key": false
    })
}

/// The refusal of `config`: `invalid_input` naming `field`, with nothing planted in it.
async fn refused(engine: &Engine, config: &Value, field: &str) -> String {
    let error = engine
        .add_provider(&config.to_string())
        .await
        .expect_err("refused");
    let shown = format!(
        "{error:?} {}",
        serde_json::to_string(&error).expect("error json")
    );
    assert!(!shown.contains(PLANTED), "{config}: {shown}");
    let Error::InvalidInput { details, message } = error else {
        panic!("{config}: not invalid_input: {shown}");
    };
    assert_eq!(details.field, field, "{config}: {message}");
    assert!(message.contains(field), "{message}");
    message
}

async fn listed(engine: &Engine, name: &str) -> Value {
    let providers = serde_json::to_value(engine.providers().await.expect("list")).expect("json");
    providers
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {providers}"))
        .clone()
}

fn assert_only_accepted_fields(provider: &Value) {
    for key in provider.as_object().expect("object").keys() {
        let accepted = PROVIDER_FIELDS.contains(&key.as_str())
            || ["created_at", "updated_at"].contains(&key.as_str());
        assert!(accepted, "{key} listed in {provider}");
    }
    assert!(!provider.to_string().contains(PLANTED), "{provider}");
}

#[tokio::test]
async fn an_unknown_field_is_refused_by_name_and_its_value_is_never_repeated() {
    let ledger = Ledger::new().await;
    let mut config = http_provider("p", "http://127.0.0.1:9/x");
    config["authorization"] = json!(format!("Bearer {PLANTED}"));
    let message = refused(&ledger.engine, &config, "provider.authorization").await;
    assert!(message.contains("not a provider field"), "{message}");
    assert!(message.contains("api_key_env"), "{message}");

    let mut config = http_provider("p", "http://127.0.0.1:9/x");
    config["headers"] = json!({ "X-Trace": PLANTED });
    let message = refused(&ledger.engine, &config, "provider.headers").await;
    for field in PROVIDER_FIELDS {
        assert!(
            message.contains(field),
            "{field} not among the accepted: {message}"
        );
    }
    let error = ledger
        .engine
        .provider("p")
        .await
        .expect_err("nothing added");
    assert!(matches!(error, Error::NotFound { .. }), "{error:?}");
}

#[tokio::test]
async fn a_url_with_user_info_is_refused_without_repeating_it() {
    let ledger = Ledger::new().await;
    for url in [
        format!("http://user:{PLANTED}@127.0.0.1:9/x"),
        format!("http://{PLANTED}@127.0.0.1:9/x"),
        format!("https://user:{PLANTED}@api.example.com/v1?mode=fast"),
    ] {
        let message = refused(
            &ledger.engine,
            &http_provider("p", &url),
            "provider.base_url",
        )
        .await;
        assert!(message.contains("user info"), "{message}");
    }
    let mut config = http_provider("p", "http://127.0.0.1:9/x");
    config["status_url"] = json!(format!(
        "http://user:{PLANTED}@127.0.0.1:9/status/{{job_id}}"
    ));
    refused(&ledger.engine, &config, "provider.status_url").await;
    // Not a URL at all: the refusal shows it without what would be its user info and query.
    let url = format!("ftp://user:{PLANTED}@127.0.0.1:9/x?k={PLANTED}");
    let message = refused(
        &ledger.engine,
        &http_provider("p", &url),
        "provider.base_url",
    )
    .await;
    assert!(message.contains("ftp://127.0.0.1:9/x"), "{message}");
}

#[tokio::test]
async fn a_secret_like_query_parameter_is_refused_by_name_and_a_harmless_query_is_kept() {
    let ledger = Ledger::new().await;
    for (query, name) in [
        (format!("api_key={PLANTED}"), "api_key"),
        (format!("mode=fast&access_token={PLANTED}"), "access_token"),
        (format!("x-api-key={PLANTED}"), "x-api-key"),
        (format!("X-Amz-Signature={PLANTED}"), "X-Amz-Signature"),
        (format!("Password={PLANTED}"), "Password"),
        (format!("sig={PLANTED}"), "sig"),
    ] {
        let url = format!("http://127.0.0.1:9/x?{query}");
        let message = refused(
            &ledger.engine,
            &http_provider("p", &url),
            "provider.base_url",
        )
        .await;
        assert!(message.contains(&format!("{name:?}")), "{message}");
    }
    for template in [
        format!("{{base_url}}/status/{{job_id}}?token={PLANTED}"),
        format!("http://127.0.0.1:9/status?auth={PLANTED}"),
    ] {
        let mut config = http_provider("p", "http://127.0.0.1:9/x");
        config["status_url"] = json!(template);
        refused(&ledger.engine, &config, "provider.status_url").await;
    }

    // A query string without a secret-like name is used exactly as given.
    let url = "http://127.0.0.1:9/x?mode=fast&model=m";
    let mut config = http_provider("p", url);
    config["status_url"] = json!("{base_url}/status/{request_id}?verbose=1");
    ledger
        .engine
        .add_provider(&config.to_string())
        .await
        .expect("a harmless query string is accepted");
    let provider = listed(&ledger.engine, "p").await;
    assert_eq!(provider["base_url"], url);
    assert_eq!(
        provider["status_url"],
        "{base_url}/status/{request_id}?verbose=1"
    );
}

#[tokio::test]
async fn a_listed_provider_carries_only_accepted_fields() {
    let ledger = Ledger::new().await;
    let every = json!({
        "name": "every", "kind": "anthropic", "base_url": "http://127.0.0.1:9",
        "model": "m", "api_key_env": "EVERY_KEY", "soft_timeout_ms": 1000,
        "hard_timeout_ms": 2000, "honours_idempotency_key": false,
        "status_url": "{base_url}/status/{job_id}", "context_window": 1000,
        "supports_json_schema": false, "tokenizer": "tiktoken",
        "anthropic_version": "2023-06-01", "dials": null
    });
    ledger
        .engine
        .add_provider(&every.to_string())
        .await
        .expect("every accepted field");
    let provider = listed(&ledger.engine, "every").await;
    assert_only_accepted_fields(&provider);
    assert_eq!(provider["anthropic_version"], "2023-06-01");

    let sandbox = json!({
        "name": "dialled", "kind": "sandbox", "soft_timeout_ms": 1000,
        "hard_timeout_ms": 2000, "honours_idempotency_key": true,
        "dials": {"latency_ms": 3, "throttle": 0.5}
    });
    ledger
        .engine
        .add_provider(&sandbox.to_string())
        .await
        .expect("sandbox with dials");
    let provider = listed(&ledger.engine, "dialled").await;
    assert_only_accepted_fields(&provider);
    assert_eq!(provider["dials"]["throttle"], 0.5);

    // A configuration stored before the set was closed still loads, without what it may not hold.
    let raw = ledger.raw().await;
    let mut legacy = http_provider("legacy", "http://127.0.0.1:9/x");
    legacy["authorization"] = json!(format!("Bearer {PLANTED}"));
    store_the_old_way(&raw, &legacy).await;
    raw.close().await;
    let provider = listed(&ledger.engine, "legacy").await;
    assert_only_accepted_fields(&provider);
}

/// Writes a provider's row as a version before the closed set did: `config` as given, whatever
/// fields it holds.
async fn store_the_old_way(raw: &Raw, config: &Value) {
    let insert = Sql {
        sqlite: "INSERT INTO providers (name, kind, config, created_at, updated_at) \
                 VALUES ($1, $2, $3, '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z')",
        postgres: "INSERT INTO providers (name, kind, config, created_at, updated_at) \
                   VALUES ($1, $2, CAST($3 AS json), '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z')",
    };
    let (name, kind) = (config["name"].as_str(), config["kind"].as_str());
    let (name, kind) = (name.expect("a name"), kind.expect("a kind"));
    raw.execute(insert, &[name, kind, &config.to_string()])
        .await
        .expect("insert a legacy row");
}

/// A provider's row as stored: its configuration's text and its `updated_at`.
async fn stored(raw: &Raw, name: &str) -> (String, String) {
    let select = Sql {
        sqlite: "SELECT config, updated_at FROM providers WHERE name = $1",
        postgres:
            "SELECT CAST(config AS text), CAST(updated_at AS text) FROM providers WHERE name = $1",
    };
    raw.fetch_one(select, &[name]).await.expect("the row")
}

/// The migration that rewrites stored configurations to the closed set, as `_sqlx_migrations`
/// names it on both backends.
const CLOSED_SET_MIGRATION: &str = "provider fields";

#[tokio::test]
async fn a_configuration_stored_before_the_set_was_closed_keeps_only_its_fields_once_the_ledger_is_opened(
) {
    let ledger = Ledger::new().await;
    // The ledger as a version before the migration left it: the migration not applied, and a
    // row holding a pasted key and headers beside the fields of the set.
    let raw = ledger.raw().await;
    let forgotten = raw
        .execute(
            Sql::both("DELETE FROM _sqlx_migrations WHERE description = $1"),
            &[CLOSED_SET_MIGRATION],
        )
        .await
        .expect("forget the migration");
    assert_eq!(forgotten, 1, "{CLOSED_SET_MIGRATION:?} was applied once");
    let known = http_provider("legacy", "http://127.0.0.1:9/x");
    let mut legacy = known.clone();
    legacy["api_key"] = json!(format!("{PLANTED}-4f1c"));
    legacy["headers"] = json!({ "Authorization": format!("Bearer {PLANTED}"), "X-Trace": "1" });
    store_the_old_way(&raw, &legacy).await;
    let (_, updated_at) = stored(&raw, "legacy").await;
    // Stored by the engine, so it holds only fields of the set.
    let primary = stored(&raw, "primary").await;
    raw.close().await;

    let reopened = ledger.reopen().await;
    let raw = ledger.raw().await;
    let (config, updated_at_after) = stored(&raw, "legacy").await;
    assert!(!config.contains(PLANTED), "{config}");
    let config: Value = serde_json::from_str(&config).expect("json");
    assert_eq!(config, known, "only the fields of the set, as they were");
    assert_eq!(
        updated_at_after, updated_at,
        "the provider is unchanged, so its contract checks stay current"
    );
    assert_eq!(stored(&raw, "primary").await, primary, "left as it was");
    raw.close().await;
    let provider = listed(&reopened, "legacy").await;
    assert_only_accepted_fields(&provider);
    assert_eq!(provider["base_url"], "http://127.0.0.1:9/x");
}

#[tokio::test]
async fn a_failed_send_never_puts_the_urls_query_string_in_a_message() {
    let ledger = Ledger::new().await;
    // Port 9 refuses the connection: the attempt fails as never sent, with reqwest's error.
    let url = format!("http://127.0.0.1:9/x?mode={PLANTED}");
    ledger
        .engine
        .add_provider(&http_provider("plain", &url).to_string())
        .await
        .expect("a value is not a name: accepted");
    let intent = json!({"route": ["plain"], "input": {}, "max_attempts": 2});
    let job = ledger
        .engine
        .submit(OWNER, "k", &intent.to_string())
        .await
        .expect("submit")
        .job;
    let (_executor, stop) = start(&ledger.engine);
    let detail = until(&ledger.engine, &job.id, |d| {
        d.job.status == JobStatus::Failed
    })
    .await;
    drop(stop);
    let attempts = serde_json::to_string(&detail.attempts).expect("json");
    let events = serde_json::to_string(&detail.events).expect("json");
    assert!(attempts.contains("never_sent"), "{attempts}");
    assert!(!attempts.contains(PLANTED), "{attempts}");
    assert!(!events.contains(PLANTED), "{events}");
}

#[tokio::test]
async fn a_contract_check_never_puts_the_urls_query_string_in_a_reason() {
    let ledger = Ledger::new().await;
    let contract = json!({
        "name": "c", "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "template": {"system": "s", "user": "say {{x}}"}, "samples": [{"x": "hi"}]
    });
    ledger
        .engine
        .add_contract(&contract.to_string())
        .await
        .expect("contract");
    let config = json!({
        "name": "llm", "kind": "openai", "base_url": format!("http://127.0.0.1:9/v1?mode={PLANTED}"),
        "model": "m", "soft_timeout_ms": 1000, "hard_timeout_ms": 2000,
        "honours_idempotency_key": false, "tokenizer": "llama_tokenize", "context_window": 100
    });
    ledger
        .engine
        .add_provider(&config.to_string())
        .await
        .expect("provider");
    let check = ledger
        .engine
        .check_contract("c", "llm")
        .await
        .expect("check");
    let shown = serde_json::to_string(&check).expect("json");
    assert!(!check.passed, "{shown}");
    assert!(
        shown.contains("127.0.0.1:9"),
        "the reasons still say where: {shown}"
    );
    assert!(!shown.contains(PLANTED), "{shown}");
}

#[tokio::test]
async fn a_test_run_in_a_desktop_session_never_touches_its_keyring() {
    const PERSONS_KEY: &str = "sk-a-persons-own-key-5e2a";
    if DesktopSession::inside() {
        // What the engine's tests do, in process: `primary` on the tests' ledger, its key
        // looked up and cleared, the provider removed.
        let ledger = Ledger::new().await;
        let status = ledger.engine.key_status("primary").await.expect("status");
        assert_eq!(status, KeyStatus::NotSet { required: false });
        let cleared = ledger.engine.clear_provider_key("primary").await;
        assert!(
            matches!(cleared, Err(Error::Storage { .. })),
            "no keyring is reachable: {cleared:?}"
        );
        ledger
            .engine
            .remove_provider("primary")
            .await
            .expect("removed");
        return;
    }
    let (_desktop, kept) = DesktopSession::run_beside_key(
        // Its path in this binary, as `--exact` takes it.
        "provider_config::a_test_run_in_a_desktop_session_never_touches_its_keyring",
        SERVICE,
        "primary",
        PERSONS_KEY,
    )
    .expect("the test passes in a desktop session holding the person's key");
    assert_eq!(kept.as_deref(), Some(PERSONS_KEY));
}

#[tokio::test]
async fn a_key_retention_is_refused_without_honoured_keys_and_unless_a_positive_number_of_seconds()
{
    let ledger = Ledger::new().await;
    let e = &ledger.engine;
    let mut config = http_provider("keys", "http://127.0.0.1:9/x");
    config["key_retention_s"] = json!(86_400);
    let message = refused(e, &config, "provider.key_retention_s").await;
    assert!(message.contains("honours_idempotency_key"), "{message}");
    config["honours_idempotency_key"] = json!(true);
    for bad in [
        json!(0),
        json!(-5),
        json!(1.5),
        json!("a day"),
        json!(10_000_000_000_i64),
    ] {
        config["key_retention_s"] = bad;
        refused(e, &config, "provider.key_retention_s").await;
    }
    config["key_retention_s"] = json!(86_400);
    e.add_provider(&config.to_string()).await.expect("added");
    assert_eq!(listed(e, "keys").await["key_retention_s"], 86_400);
    // The built-in sandbox keeps its keys a day, so its unknown attempts settle by replay.
    let sandbox = e.provider("sandbox").await.expect("the built-in sandbox");
    assert_eq!(sandbox.config.key_retention_s, Some(86_400));
}
