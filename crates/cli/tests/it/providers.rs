//! `provider add|list|remove`: configuration in, never a secret.

use crate::common;

use common::{intent, Ledger, PRIMARY};

/// The names `provider list` shows, in its order.
fn provider_names(ledger: &Ledger) -> Vec<String> {
    let list = ledger.run(&["provider", "list"]).ok();
    list["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| p["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[test]
fn providers_are_added_listed_replaced_and_removed() {
    let ledger = Ledger::empty();
    let added = ledger.run(&["provider", "add", "--json", PRIMARY]).ok();
    assert_eq!(added["replaced"], false);
    assert_eq!(added["provider"]["name"], "primary");
    assert_eq!(added["provider"]["kind"], "http");
    assert_eq!(added["provider"]["base_url"], "http://127.0.0.1:9/echo");

    let file = ledger.home().join("fallback.json");
    std::fs::write(
        &file,
        r#"{"name":"fallback","kind":"openai","base_url":"http://127.0.0.1:9/v1","model":"m","api_key_env":"FALLBACK_KEY","soft_timeout_ms":500,"hard_timeout_ms":500,"honours_idempotency_key":true}"#,
    )
    .expect("write provider");
    let added = ledger
        .run(&["provider", "add", "--json", &format!("@{}", file.display())])
        .ok();
    assert_eq!(added["replaced"], false);
    assert_eq!(added["provider"]["api_key_env"], "FALLBACK_KEY");

    let replaced = ledger
        .run(&[
            "provider",
            "add",
            "--json",
            &PRIMARY.replace("1000,", "2000,"),
        ])
        .ok();
    assert_eq!(replaced["replaced"], true);
    assert_eq!(replaced["provider"]["soft_timeout_ms"], 2000);

    let names = provider_names(&ledger);
    // A new ledger comes with the built-in sandbox.
    assert_eq!(names, ["fallback", "primary", "sandbox"]);

    let removed = ledger.run(&["provider", "remove", "fallback"]).ok();
    assert_eq!(
        removed,
        serde_json::json!({ "removed": "fallback", "open_jobs": {"queued": 0, "running": 0, "unknown": 0} })
    );
    let list = ledger.run(&["provider", "list"]).ok();
    assert_eq!(list["providers"].as_array().map(Vec::len), Some(2));

    let error = ledger.run(&["provider", "remove", "nope"]).err(5);
    assert_eq!(error["code"], "not_found");
    assert_eq!(error["details"]["entity"], "provider");
    assert_eq!(error["details"]["id"], "nope");
}

#[test]
fn provider_add_refuses_secrets_and_bad_config() {
    let ledger = Ledger::empty();
    let with_key = PRIMARY.replace(r#""kind""#, r#""api_key":"sk-live-123","kind""#);
    let run = ledger.run(&["provider", "add", "--json", &with_key]);
    assert!(!run.stderr.contains("sk-live-123"), "{run:?}");
    let error = run.err(2);
    assert_eq!(error["code"], "invalid_input");
    assert_eq!(error["details"]["field"], "provider.api_key");

    for (json, field) in [
        ("{", "provider"),
        (r#"{"name":"p"}"#, "provider.kind"),
        (
            &PRIMARY.replace("http://127.0.0.1:9/echo", "ftp://x"),
            "provider.base_url",
        ),
    ] {
        let error = ledger.run(&["provider", "add", "--json", json]).err(2);
        assert_eq!(error["details"]["field"], field, "{json}");
    }
    let missing = format!("@{}", ledger.home().join("nope.json").display());
    let error = ledger.run(&["provider", "add", "--json", &missing]).err(2);
    assert_eq!(error["details"]["field"], "provider");

    let names = provider_names(&ledger);
    assert_eq!(names, ["sandbox"], "nothing refused was added");
}

#[test]
fn provider_add_refuses_unknown_fields_and_credentials_in_urls_without_repeating_them() {
    let ledger = Ledger::empty();
    let planted = "sk-planted";
    let unknown = PRIMARY.replace(
        r#""kind""#,
        &format!(r#""authorization":"Bearer {planted}","kind""#),
    );
    let user_info = PRIMARY.replace("http://", &format!("http://user:{planted}@"));
    let secret_query = PRIMARY.replace("/echo", &format!("/echo?api_key={planted}"));
    for (json, field) in [
        (unknown, "provider.authorization"),
        (user_info, "provider.base_url"),
        (secret_query, "provider.base_url"),
    ] {
        let run = ledger.run(&["provider", "add", "--json", &json]);
        assert!(!run.stderr.contains(planted), "{run:?}");
        let error = run.err(2);
        assert_eq!(error["code"], "invalid_input", "{json}");
        assert_eq!(error["details"]["field"], field, "{json}");
    }

    let harmless = PRIMARY.replace("/echo", "/echo?mode=fast");
    let added = ledger.run(&["provider", "add", "--json", &harmless]).ok();
    assert_eq!(
        added["provider"]["base_url"],
        "http://127.0.0.1:9/echo?mode=fast"
    );
    let list = ledger.run(&["provider", "list"]).ok();
    assert!(!list.to_string().contains(planted), "{list}");
    let primary = list["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["name"] == "primary")
        .expect("primary listed");
    let mut fields: Vec<&str> = primary
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    // `key` says where the API key comes from, never the key.
    assert_eq!(
        primary["key"],
        serde_json::json!({"source": "not_set", "required": false})
    );
    assert_eq!(
        fields,
        [
            "base_url",
            "created_at",
            "hard_timeout_ms",
            "honours_idempotency_key",
            "key",
            "kind",
            "name",
            "soft_timeout_ms",
            "updated_at"
        ]
    );
}

#[test]
fn a_removed_provider_can_no_longer_be_routed_to() {
    let ledger = Ledger::new();
    ledger.run(&["provider", "remove", "primary"]).ok();
    let error = ledger
        .run(&["submit", "--key", "k", "--intent", &intent("1")])
        .err(2);
    assert_eq!(error["details"]["field"], "intent.route.0");
}

#[test]
fn removing_a_provider_says_which_open_jobs_named_it() {
    let ledger = Ledger::new();
    for key in ["a", "b", "c"] {
        ledger.submit(key, &intent("1"));
    }
    let running = common::id(&ledger.submit("d", &intent("2"))["job"]);
    ledger.retry(&running);
    let cancelled = common::id(&ledger.submit("e", &intent("3"))["job"]);
    ledger.run(&["cancel", &cancelled]).ok();
    ledger
        .run(&[
            "--owner",
            "someone-else",
            "submit",
            "--key",
            "a",
            "--intent",
            &intent("1"),
        ])
        .ok();

    let removed = ledger.run(&["provider", "remove", "primary"]).ok();
    assert_eq!(
        removed,
        serde_json::json!({ "removed": "primary", "open_jobs": {"queued": 4, "running": 1, "unknown": 0} }),
        "three queued and one running here, one queued of another owner; the cancelled one is closed"
    );
}

#[test]
fn a_key_retention_is_listed_and_refused_by_name_without_honoured_keys() {
    let ledger = Ledger::empty();
    let keyed = PRIMARY.replace(
        "\"honours_idempotency_key\":false",
        "\"honours_idempotency_key\":true,\"key_retention_s\":86400",
    );
    assert_ne!(keyed, PRIMARY);
    let added = ledger.run(&["provider", "add", "--json", &keyed]).ok();
    assert_eq!(added["provider"]["key_retention_s"], 86400);
    let list = ledger.run(&["provider", "list"]).ok();
    let sandbox = list["providers"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == "sandbox"))
        .expect("the built-in sandbox");
    assert_eq!(sandbox["key_retention_s"], 86400);

    let unkeyed = PRIMARY.replace(
        "\"honours_idempotency_key\":false",
        "\"honours_idempotency_key\":false,\"key_retention_s\":86400",
    );
    let error = ledger.run(&["provider", "add", "--json", &unkeyed]).err(2);
    assert_eq!(error["code"], "invalid_input");
    assert_eq!(error["details"]["field"], "provider.key_retention_s");
}

/// A provider's prices (SPEC §17) are decimal strings, kept to the digit; a price written as a
/// number, with a part a price does not have, too many decimal places or no currency is
/// refused naming the part at fault, and nothing is stored.
#[test]
fn a_price_is_kept_to_the_digit_and_refused_by_the_part_at_fault() {
    let ledger = Ledger::empty();
    let priced = |price: &str| {
        PRIMARY.replace(
            "\"honours_idempotency_key\":false",
            &format!("\"honours_idempotency_key\":false,\"context_window\":8000,\"price\":{price}"),
        )
    };
    let price = r#"{"currency":"USD","per_request":"0.010","per_1k_input_tokens":"0.15","per_1k_output_tokens":"0.000000001"}"#;
    assert_ne!(priced(price), PRIMARY);
    let added = ledger
        .run(&["provider", "add", "--json", &priced(price)])
        .ok();
    // Shown without trailing zeros past the cents.
    let expected = serde_json::json!({"currency": "USD", "per_request": "0.01",
        "per_1k_input_tokens": "0.15", "per_1k_output_tokens": "0.000000001"});
    assert_eq!(added["provider"]["price"], expected);
    let list = ledger.run(&["provider", "list"]).ok();
    let primary = list["providers"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == "primary"))
        .expect("primary");
    assert_eq!(primary["price"], expected);

    for (price, field, says) in [
        (
            r#"{"currency":"USD","per_request":0.01}"#,
            "provider.price.per_request",
            "decimal string",
        ),
        (
            r#"{"currency":"USD","per_token":"0.01"}"#,
            "provider.price.per_token",
            "not a price field",
        ),
        (
            r#"{"currency":"USD","per_request":"0.0000000001"}"#,
            "provider.price.per_request",
            "decimal places",
        ),
        (
            r#"{"currency":"USD","per_request":"-1"}"#,
            "provider.price.per_request",
            "not an amount",
        ),
        (
            r#"{"per_request":"0.01"}"#,
            "provider.price.currency",
            "required",
        ),
        (
            r#"{"currency":"dollars","per_request":"0.01"}"#,
            "provider.price.currency",
            "currency code",
        ),
        (r#"{"currency":"USD"}"#, "provider.price", "no amount"),
        (r#""0.01""#, "provider.price", "must be an object"),
    ] {
        let json = priced(price).replace("\"primary\"", "\"other\"");
        let error = ledger.run(&["provider", "add", "--json", &json]).err(2);
        assert_eq!(error["code"], "invalid_input", "{price}");
        assert_eq!(error["details"]["field"], field, "{price}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{price}: {message}");
    }
    let list = ledger.run(&["provider", "list"]).ok();
    assert_eq!(
        list["providers"].as_array().map(Vec::len),
        Some(2),
        "nothing refused was added"
    );
}
