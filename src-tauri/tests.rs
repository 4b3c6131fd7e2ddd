//! Tests of the shell: the committed bindings match the commands, and the commands answer
//! through IPC on a real database with no window.

use onejob_engine::testing::{FailureKind, InternalCalls as _};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use specta_typescript::Typescript;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{WebviewWindow, WebviewWindowBuilder};

use super::*;

/// The first line of the generated bindings.
const HEADER: &str = "// Generated from src-tauri/commands.rs by \
`cargo test -p onejob-app --lib bindings_are_current`. Do not edit by hand.";

fn export_bindings(path: &Path) -> String {
    specta_builder::<Wry>()
        .export(Typescript::default().header(HEADER), path)
        .expect("the commands' types export to TypeScript");
    std::fs::read_to_string(path).expect("the exported bindings can be read back")
}

#[test]
fn bindings_are_current() {
    let scratch = tempfile::tempdir().unwrap();
    let first = export_bindings(&scratch.path().join("first.ts"));
    let second = export_bindings(&scratch.path().join("second.ts"));
    assert_eq!(first, second, "two exports of the same commands differ");
    assert!(first.starts_with(HEADER));

    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ui/src/bindings.ts");
    // Rewritten only on change, so an unchanged file keeps its timestamp for the UI build.
    if std::fs::read_to_string(&committed).ok().as_deref() != Some(first.as_str()) {
        std::fs::write(&committed, &first).unwrap();
    }
}

#[test]
fn every_command_is_permitted_and_granted_to_the_window() {
    // The mock runtime has no ACL, so this is what keeps the real window from being refused.
    let scratch = tempfile::tempdir().unwrap();
    let bindings = export_bindings(&scratch.path().join("bindings.ts"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src-tauri");
    let permissions = std::fs::read_to_string(root.join("permissions/commands.toml")).unwrap();
    let capability: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("capabilities/default.json")).unwrap(),
    )
    .unwrap();
    let granted = capability["permissions"].as_array().unwrap();

    let commands: Vec<&str> = bindings
        .split("__TAURI_INVOKE(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(!commands.is_empty(), "no command found in the bindings");
    // Notifications are shown and followed from the backend: the window may not use them.
    assert!(
        granted
            .iter()
            .all(|p| !p.as_str().unwrap_or("").starts_with("notification:")),
        "capabilities/default.json grants the window a notification permission it does not use"
    );
    for command in commands {
        let permission = format!("allow-{}", command.replace('_', "-"));
        assert!(
            permissions.contains(&format!("commands.allow = [\"{command}\"]")),
            "src-tauri/permissions/commands.toml has no permission for {command}"
        );
        assert!(
            granted.contains(&json!(permission)),
            "capabilities/default.json does not grant {permission}"
        );
    }
}

/// An app on the mock runtime serving the real commands over a fresh database.
struct Headless {
    // Dropped in this order: the window and app, then the engine, then its directory.
    window: MockWindow,
    _app: MockApp,
    engine: Engine,
    _dir: tempfile::TempDir,
}

type MockWindow = WebviewWindow<tauri::test::MockRuntime>;
type MockApp = tauri::App<tauri::test::MockRuntime>;

/// The provider the headless ledgers start with: a sandbox at a port nothing listens on.
const SANDBOX: &str = r#"{"name": "sandbox", "kind": "sandbox", "base_url": "http://127.0.0.1:9",
    "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "honours_idempotency_key": true}"#;

/// A new ledger file in `dir` with the [`SANDBOX`] provider.
fn ledger_with_the_sandbox(dir: &Path) -> Engine {
    tauri::async_runtime::block_on(async {
        let engine = Engine::open(dir.join("onejob.db")).await.unwrap();
        engine.add_provider(SANDBOX).await.unwrap();
        engine
    })
}

/// The app on the mock runtime with `state`, started as at launch, and its main window.
fn mock_app(state: AppState) -> (MockWindow, MockApp) {
    let app = with_commands(mock_builder(), state)
        .build(mock_context(noop_assets()))
        .unwrap();
    start(app.handle());
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    (window, app)
}

fn headless_app() -> Headless {
    // The commands remove providers and clear keys: never in the keyring of the desktop.
    onejob_testkit::isolate_keyring();
    let dir = tempfile::tempdir().unwrap();
    let engine = ledger_with_the_sandbox(dir.path());
    let (window, app) = mock_app(AppState::new(engine.clone()));
    Headless {
        window,
        _app: app,
        engine,
        _dir: dir,
    }
}

/// Invokes a command the way the UI does and returns its answer or its error as JSON.
fn invoke(window: &MockWindow, cmd: &str, args: Value) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(window, request).map(|body| body.deserialize::<Value>().unwrap())
}

/// The commands of a mock window, invoked the way the UI does.
trait Invoke {
    /// The window the commands are invoked on.
    fn window(&self) -> &MockWindow;

    /// Invokes a command that must succeed; its answer.
    fn ok(&self, cmd: &str, args: Value) -> Value {
        invoke(self.window(), cmd, args).unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
    }

    /// Invokes a command that must fail; its error.
    fn refused(&self, cmd: &str, args: Value) -> Value {
        match invoke(self.window(), cmd, args) {
            Ok(answer) => panic!("{cmd} answered {answer}"),
            Err(error) => error,
        }
    }
}

impl Invoke for MockWindow {
    fn window(&self) -> &MockWindow {
        self
    }
}

impl Invoke for Headless {
    fn window(&self) -> &MockWindow {
        &self.window
    }
}

/// Submits a job straight to the engine, as the CLI would; nothing executes it here.
fn submit(engine: &Engine, owner: &str, key: &str) -> String {
    let intent = r#"{"route": ["sandbox"], "input": {"n": 1}}"#;
    tauri::async_runtime::block_on(engine.submit(owner, key, intent))
        .unwrap()
        .job
        .id
}

#[test]
fn an_empty_ledger_lists_no_jobs_and_needs_no_attention() {
    let app = headless_app();
    let page = app.ok("list_jobs", json!({}));
    assert_eq!(page, json!({"jobs": [], "next": null}));
    let count = app.ok("needs_attention", json!({}));
    assert_eq!(count, json!(0));
}

#[test]
fn list_jobs_shows_only_the_local_owners_jobs_and_pages_by_cursor() {
    let app = headless_app();
    let first = submit(&app.engine, OWNER, "draft-1");
    let second = submit(&app.engine, OWNER, "draft-2");
    submit(&app.engine, "someone-else", "draft-3");

    let page = app.ok(
        "list_jobs",
        json!({"filter": {"status": "queued"}, "limit": 1}),
    );
    assert_eq!(page["jobs"][0]["id"], json!(second), "newest first");
    assert_eq!(page["next"], json!(second));

    let rest = app.ok("list_jobs", json!({"after": second, "limit": 1}));
    assert_eq!(rest["jobs"][0]["id"], json!(first));
    assert_eq!(rest["jobs"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        rest["next"],
        Value::Null,
        "the other owner's job is not listed"
    );

    let oldest = app.ok("list_jobs", json!({"limit": 1, "oldestFirst": true}));
    assert_eq!(oldest["jobs"][0]["id"], json!(first), "oldest first");
    let count = app.ok("count_jobs", json!({}));
    assert_eq!(count, json!(2), "only the local owner's jobs are counted");
    let none = app.ok("count_jobs", json!({"filter": {"status": "succeeded"}}));
    assert_eq!(none, json!(0));
}

#[test]
fn errors_reach_the_ui_as_the_tagged_union() {
    let app = headless_app();
    let error = app.refused("list_jobs", json!({"limit": 0}));
    assert_eq!(error["code"], json!("invalid_input"));
    assert_eq!(error["details"]["field"], json!("limit"));
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));

    let missing = app.refused("job", json!({"id": "nope"}));
    assert_eq!(missing["code"], json!("not_found"));
}

#[test]
fn a_repeated_submit_of_one_draft_returns_the_same_job_and_a_new_intent_is_a_conflict() {
    let app = headless_app();
    let intent = r#"{"route": ["sandbox"], "input": {"n": 1}}"#;
    let args = json!({"key": "draft-1", "intentJson": intent});
    let first = app.ok("submit", args.clone());
    let second = app.ok("submit", args);
    assert_eq!(first["replayed"], json!(false));
    assert_eq!(second["replayed"], json!(true));
    assert_eq!(first["job"]["id"], second["job"]["id"]);

    let edited = r#"{"route": ["sandbox"], "input": {"n": 2}}"#;
    let conflict = app.refused("submit", json!({"key": "draft-1", "intentJson": edited}));
    assert_eq!(conflict["code"], json!("idempotency_conflict"));
    assert_eq!(conflict["details"]["existing_job_id"], first["job"]["id"]);
}

#[test]
fn the_fingerprint_is_the_one_a_submit_stores_and_ignores_how_the_intent_is_written() {
    let app = headless_app();
    let intent = r#"{"route": ["sandbox"], "input": {"n": 1, "text": "a"}}"#;
    let job = app.ok("submit", json!({"key": "draft-1", "intentJson": intent}));
    let fingerprint = |text: &str| invoke(&app.window, "fingerprint", json!({"intentJson": text}));
    assert_eq!(fingerprint(intent).unwrap(), job["job"]["fingerprint"]);
    // Another order, other whitespace, another number form and a null optional field: the same intent.
    let rewritten = "{ \"input\": {\"text\": \"a\", \"n\": 1.0},\n  \"route\": [\"sandbox\"], \"params\": null }";
    assert_eq!(fingerprint(rewritten).unwrap(), job["job"]["fingerprint"]);
    let other = fingerprint(r#"{"route": ["sandbox"], "input": {"n": 2, "text": "a"}}"#).unwrap();
    assert_ne!(other, job["job"]["fingerprint"]);

    let bad = fingerprint(r#"{"route": ["sandbox"], "input": {"n": 1"#).unwrap_err();
    assert_eq!(bad["code"], json!("invalid_input"));
    let unknown = fingerprint(r#"{"route": ["sandbox"], "input": {}, "paramz": {}}"#).unwrap_err();
    assert_eq!(unknown["details"]["field"], json!("intent.paramz"));
}

#[test]
fn retry_cancel_and_resolve_reach_the_engine() {
    let app = headless_app();
    let job_id = submit(&app.engine, OWNER, "draft-1");
    let started = app.ok("retry", json!({"jobId": job_id}));
    let attempt_id = started["attempt"]["id"].as_str().unwrap().to_owned();
    assert_eq!(started["attempt"]["state"], json!("pending"));

    let blocked = app.refused("retry", json!({"jobId": job_id}));
    assert_eq!(blocked["code"], json!("attempt_blocked"));
    assert_eq!(blocked["details"]["attempt_id"], json!(attempt_id));

    let abandoned = app.ok(
        "resolve",
        json!({"attemptId": attempt_id, "verdict": "abandoned",
               "resolution": {"result": null, "note": null, "retry_on": null}}),
    );
    assert_eq!(abandoned["attempt"]["state"], json!("abandoned"));
    assert_eq!(abandoned["job"]["status"], json!("queued"));

    let cancelled = app.ok("cancel", json!({"jobId": job_id}));
    assert_eq!(cancelled["status"], json!("cancelled"));
}

#[test]
fn bulk_start_and_bulk_run_act_on_every_matching_job_of_the_apps_owner_only() {
    let app = headless_app();
    let mine: Vec<String> = (0..3)
        .map(|i| submit(&app.engine, OWNER, &format!("draft-{i}")))
        .collect();
    let theirs = submit(&app.engine, "bob", "draft-0");
    let request = json!({"action": "cancel", "filter": {"status": "queued"}});
    let started = app.ok("bulk_start", json!({"key": "bulk-1", "request": request}));
    assert_eq!(started["replayed"], json!(false));
    assert_eq!(started["operation"]["matched"], json!(3));
    let id = started["operation"]["id"].as_str().unwrap().to_owned();

    // A confirmation declined: the set it fixed is discarded, and its key is free again.
    app.ok("bulk_discard", json!({"id": id}));
    let gone = app.refused("bulk_run", json!({"id": id}));
    assert_eq!(gone["code"], json!("not_found"));
    let started = app.ok("bulk_start", json!({"key": "bulk-1", "request": request}));
    assert_eq!(started["replayed"], json!(false));
    let id = started["operation"]["id"].as_str().unwrap().to_owned();

    let done = app.ok("bulk_run", json!({"id": id}));
    assert_eq!(done["changed"], json!(3), "{done}");
    assert_eq!(done["done"], json!(true));
    for job in &mine {
        let shown = tauri::async_runtime::block_on(app.engine.job(OWNER, job)).unwrap();
        assert_eq!(shown.job.status.as_str(), "cancelled");
    }
    let untouched = tauri::async_runtime::block_on(app.engine.job("bob", &theirs)).unwrap();
    assert_eq!(untouched.job.status.as_str(), "queued");

    let again = app.ok("bulk_start", json!({"key": "bulk-1", "request": request}));
    assert_eq!(again["replayed"], json!(true));
    assert_eq!(again["operation"]["changed"], json!(3));
}

#[test]
fn providers_show_the_configuration_and_the_sandbox_dials_and_save_them_back() {
    let app = headless_app();
    let listed = app.ok("providers", json!({}));
    let sandbox = &listed[0];
    assert_eq!(sandbox["name"], json!("sandbox"));
    assert_eq!(sandbox["dials"]["never_answer"], json!(0.0));

    let mut config = sandbox["config"].clone();
    config["dials"] = json!({"never_answer": 1.0, "latency_ms": 0, "jitter_ms": 0});
    let saved = app.ok("save_provider", json!({"configJson": config.to_string()}));
    assert_eq!(saved["dials"]["never_answer"], json!(1.0));
    assert_eq!(
        saved["dials"]["retry_after_s"],
        json!(1),
        "unset dials keep their defaults"
    );

    let secret = app.refused("save_provider",
        json!({"configJson": r#"{"name": "x", "kind": "http", "base_url": "http://127.0.0.1:1",
            "soft_timeout_ms": 1, "hard_timeout_ms": 1, "honours_idempotency_key": false, "api_key": "s"}"#}));
    assert_eq!(secret["details"]["field"], json!("provider.api_key"));

    app.ok("remove_provider", json!({"name": "sandbox"}));
    let none = app.ok("providers", json!({}));
    assert_eq!(none, json!([]));
}

#[test]
fn settings_name_the_database_file() {
    let app = headless_app();
    let settings = app.ok("settings", json!({}));
    let path = settings["db_path"].as_str().unwrap();
    assert!(path.ends_with("onejob.db"), "{path}");
    assert_eq!(settings["owner"], json!(OWNER));
}

/// Points the config folder at a fresh one for as long as the guard lives; tests that touch
/// it take turns, since the variable is the whole process's.
fn own_config_folder() -> (std::sync::MutexGuard<'static, ()>, tempfile::TempDir) {
    static CONFIG: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = CONFIG.lock().unwrap_or_else(|p| p.into_inner());
    let config = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_CONFIG_HOME", config.path());
    (guard, config)
}

#[test]
fn the_attempts_sent_at_once_are_checked_and_saved_for_the_next_start() {
    let (_config_lock, config) = own_config_folder();
    let app = headless_app();
    let saved = config.path().join("dev.onejob.app").join("concurrency");
    let settings = app.ok("settings", json!({}));
    assert_eq!(settings["concurrency"], json!(32), "the executor's default");

    for bad in [0, 1025] {
        let refused = app.refused("set_concurrency", json!({"n": bad}));
        assert_eq!(refused["code"], json!("invalid_input"), "{bad}");
        assert_eq!(refused["details"]["field"], json!("concurrency"));
        assert!(!saved.exists(), "nothing saved for {bad}");
    }
    let settings = app.ok("set_concurrency", json!({"n": 5}));
    assert_eq!(settings["concurrency"], json!(5));
    assert_eq!(std::fs::read_to_string(&saved).unwrap().trim(), "5");
    let again = app.ok("settings", json!({}));
    assert_eq!(again["concurrency"], json!(5));
}

#[test]
fn choosing_a_ledger_checks_it_refuses_a_password_and_saves_it_for_the_next_start() {
    let (_config_lock, config) = own_config_folder();
    let app = headless_app();
    let choice = config.path().join("dev.onejob.app").join("ledger");

    let refused = app.refused(
        "choose_ledger",
        json!({"location": "postgres://team:hunter2@127.0.0.1:1/ledger"}),
    );
    assert_eq!(refused["code"], json!("invalid_input"));
    assert_eq!(refused["details"]["field"], json!("ledger"));
    assert!(!refused.to_string().contains("hunter2"), "{refused}");
    assert!(!choice.exists(), "nothing saved");

    let other = app.refused(
        "choose_ledger",
        json!({"location": "mysql://127.0.0.1/ledger"}),
    );
    assert_eq!(other["details"]["field"], json!("ledger"));

    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("team.db");
    let settings = app.ok(
        "choose_ledger",
        json!({"location": file.display().to_string()}),
    );
    assert!(file.exists(), "checked by opening it");
    assert_eq!(
        std::fs::read_to_string(&choice).unwrap().trim(),
        file.display().to_string()
    );
    if std::env::var_os(ledger::ENV).is_none() {
        assert_eq!(settings["next_start"], json!(file.display().to_string()));
    }
    assert_eq!(settings["shared"], json!(false));

    app.ok("choose_ledger", json!({"location": "  "}));
    assert!(!choice.exists(), "back to the default file");
}

#[test]
fn a_contract_check_runs_against_a_provider_and_shows_per_sample_results_and_whether_it_counts() {
    use onejob_engine::sandbox::{Dials, Sandbox};

    let app = headless_app();
    let contract: serde_json::Value =
        serde_json::from_str(onejob_testkit::fixtures::SUMMARY_CONTRACT).expect("the contract");
    let quick = Dials {
        latency_ms: 5,
        jitter_ms: 0,
        ..Dials::default()
    };
    // The sandbox's chat mode answers an `openai` provider whose base_url is its url plus /v1.
    let server = tauri::async_runtime::block_on(async {
        app.engine
            .add_contract(&contract.to_string())
            .await
            .unwrap();
        Sandbox::start(([127, 0, 0, 1], 0).into(), quick.clone())
            .await
            .unwrap()
    });
    let openai = |extra: Value| {
        let mut config = json!({
            "name": "model-a", "kind": "openai", "base_url": format!("{}/v1", server.url()),
            "model": "sandbox-model", "soft_timeout_ms": 2000, "hard_timeout_ms": 5000,
            "honours_idempotency_key": false
        });
        if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
            config.extend(extra);
        }
        tauri::async_runtime::block_on(app.engine.add_provider(&config.to_string())).unwrap();
    };
    openai(json!({}));

    let listed = app.ok("contracts", json!({}));
    assert_eq!(listed[0]["name"], json!("summary"));
    assert_eq!(listed[0]["checks"], json!([]));
    let hash = listed[0]["hash"].clone();

    let check = app.ok(
        "check_contract",
        json!({"contract": "summary", "provider": "model-a"}),
    );
    assert_eq!(check["passed"], json!(true), "{check:#}");
    assert_eq!(check["current"], json!(true));
    assert_eq!(check["contract_hash"], hash);
    let samples = check["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    for sample in samples {
        assert_eq!(sample["passed"], json!(true));
        assert!(sample["latency_ms"].is_u64(), "{sample:#}");
        // No tokenizer is known for this model: "not checked", which does not fail the check.
        assert_eq!(sample["prompt_tokens"], Value::Null);
        assert!(sample["tokenizer"]
            .as_str()
            .unwrap()
            .starts_with("not checked"));
    }
    let listed = app.ok("contracts", json!({}));
    assert_eq!(listed[0]["checks"][0]["id"], check["id"]);
    assert_eq!(listed[0]["checks"][0]["current"], json!(true));

    server.set_dials(Dials {
        extra_key: 1.0,
        ..quick
    });
    let failed = app.ok(
        "check_contract",
        json!({"contract": "summary", "provider": "model-a"}),
    );
    assert_eq!(failed["passed"], json!(false));
    assert_eq!(failed["current"], json!(false));
    let reason = failed["samples"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("/unexpected"), "{reason}");

    server.set_dials(quick);
    app.ok(
        "check_contract",
        json!({"contract": "summary", "provider": "model-a"}),
    );
    // A changed provider: the passed check stays shown but no longer counts.
    openai(json!({"supports_json_schema": false}));
    let listed = app.ok("contracts", json!({}));
    let last = &listed[0]["checks"][0];
    assert_eq!(last["passed"], json!(true));
    assert_eq!(last["current"], json!(false));

    let missing = app.refused(
        "check_contract",
        json!({"contract": "nope", "provider": "model-a"}),
    );
    assert_eq!(missing["code"], json!("not_found"));
    tauri::async_runtime::block_on(server.stop());
}

#[test]
fn save_contract_stores_it_and_lists_its_content_and_template_fields() {
    let app = headless_app();
    let contract = json!({
        "name": "summary",
        "schema": {"type": "object", "properties": {"summary": {"type": "string"}}},
        "template": {"system": "Write in {{ lang }}.", "user": "Summarise {{text}} for {{reader.name}}, in {{lang}}"},
        "samples": [{"lang": "en", "text": "t", "reader": {"name": "Ann"}}]
    });
    let saved = app.ok(
        "save_contract",
        json!({"contractJson": contract.to_string()}),
    );
    assert_eq!(saved["name"], json!("summary"));
    assert_eq!(saved["fields"], json!(["lang", "text", "reader.name"]));
    assert_eq!(saved["schema"], contract["schema"]);
    assert_eq!(saved["template"], contract["template"]);
    assert_eq!(saved["samples"], contract["samples"]);
    assert_eq!(saved["checks"], json!([]));

    let listed = app.ok("contracts", json!({}));
    assert_eq!(listed[0]["fields"], saved["fields"]);
    assert_eq!(listed[0]["hash"], saved["hash"]);
}

#[test]
fn a_bad_contract_is_invalid_input_naming_the_field_and_changes_nothing() {
    let app = headless_app();
    let bad_schema = json!({
        "name": "summary", "schema": {"type": "strnig"},
        "template": {"user": "{{text}}"}, "samples": [{"text": "t"}]
    });
    let save = |contract: Value| {
        app.refused(
            "save_contract",
            json!({"contractJson": contract.to_string()}),
        )
    };
    let error = save(bad_schema);
    assert_eq!(error["code"], json!("invalid_input"));
    assert_eq!(error["details"]["field"], json!("contract.schema"));

    let missing_field = json!({
        "name": "summary", "schema": {"type": "object"},
        "template": {"user": "{{text}}"}, "samples": [{"other": "t"}]
    });
    let error = save(missing_field);
    assert_eq!(error["details"]["field"], json!("contract.samples.0"));
    assert_eq!(app.ok("contracts", json!({})), json!([]));
}

#[test]
fn providers_say_where_the_key_comes_from_and_never_hold_one() {
    let app = headless_app();
    let http = json!({"name": "billing", "kind": "http", "base_url": "http://127.0.0.1:9/charge",
        "api_key_env": "ONEJOB_TEST_UNSET_KEY_VARIABLE", "soft_timeout_ms": 1000,
        "hard_timeout_ms": 2000, "honours_idempotency_key": false});
    let saved = app.ok("save_provider", json!({"configJson": http.to_string()}));
    assert_eq!(
        saved["key"],
        json!({"source": "not_set", "required": true}),
        "a named variable that is not set, and no key in a keyring"
    );
    let listed = app.ok("providers", json!({}));
    let sandbox = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == json!("sandbox"))
        .unwrap();
    assert_eq!(
        sandbox["key"],
        json!({"source": "not_set", "required": false})
    );
}

#[test]
fn a_key_for_an_unknown_provider_is_not_found_and_a_bad_key_is_invalid_input() {
    let app = headless_app();
    let missing = app.refused(
        "set_provider_key",
        json!({"name": "nope", "key": "sk-not-stored"}),
    );
    assert_eq!(missing["code"], json!("not_found"));
    assert!(
        !missing.to_string().contains("sk-not-stored"),
        "the key is never repeated: {missing}"
    );
    let cleared = app.refused("clear_provider_key", json!({"name": "nope"}));
    assert_eq!(cleared["code"], json!("not_found"));

    let bad = app.refused(
        "set_provider_key",
        json!({"name": "sandbox", "key": "sk-one\nsk-two"}),
    );
    assert_eq!(bad["code"], json!("invalid_input"));
    assert_eq!(bad["details"]["field"], json!("key"));
    assert!(!bad.to_string().contains("sk-one"), "{bad}");
}

#[test]
fn find_feeds_the_search_and_the_provider_to_the_list_and_the_count() {
    let app = headless_app();
    let other = r#"{"name": "other", "kind": "sandbox", "base_url": "http://127.0.0.1:9",
        "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "honours_idempotency_key": true}"#;
    tauri::async_runtime::block_on(app.engine.add_provider(other)).unwrap();
    let order = submit(&app.engine, OWNER, "order-45");
    submit(&app.engine, OWNER, "order-46");
    let elsewhere = tauri::async_runtime::block_on(app.engine.submit(
        OWNER,
        "refund-1",
        r#"{"route": ["other"], "input": {}}"#,
    ))
    .unwrap()
    .job
    .id;

    let by_key = app.ok("list_jobs", json!({"filter": {"search": "order-45"}}));
    assert_eq!(by_key["jobs"][0]["id"], json!(order));
    assert_eq!(by_key["jobs"].as_array().map(Vec::len), Some(1));
    let count = app.ok("count_jobs", json!({"filter": {"search": "order-"}}));
    assert_eq!(count, json!(2));

    let by_id = app.ok("list_jobs", json!({"filter": {"search": &elsewhere[..20]}}));
    assert_eq!(by_id["jobs"][0]["id"], json!(elsewhere));

    let at_other = app.ok("list_jobs", json!({"filter": {"provider": "other"}}));
    assert_eq!(at_other["jobs"].as_array().map(Vec::len), Some(1));
    assert_eq!(at_other["jobs"][0]["id"], json!(elsewhere));
    let both = app.ok(
        "count_jobs",
        json!({"filter": {"search": "order-", "provider": "other", "status": "queued"}}),
    );
    assert_eq!(both, json!(0));

    // The rest of the filter a bulk operation takes: the open attempt's error kind and times.
    let count =
        |filter: serde_json::Value| invoke(&app.window, "count_jobs", json!({ "filter": filter }));
    assert_eq!(
        count(json!({"error_kind": "soft_timeout"})).unwrap(),
        json!(0)
    );
    assert_eq!(
        count(json!({"created_after": "2000-01-01"})).unwrap(),
        json!(3)
    );
    let before = app.ok(
        "list_jobs",
        json!({"filter": {"created_before": "2000-01-01T00:00:00Z"}}),
    );
    assert_eq!(before["jobs"], json!([]));
    let bad = count(json!({"created_before": "yesterday"})).unwrap_err();
    assert_eq!(bad["details"]["field"], json!("created_before"));
}

#[test]
fn a_removal_is_preceded_by_the_open_jobs_that_name_it() {
    let app = headless_app();
    let contract = json!({"name": "summary", "schema": {"type": "object"},
        "template": {"user": "{{text}}"}, "samples": [{"text": "t"}]});
    app.ok(
        "save_contract",
        json!({"contractJson": contract.to_string()}),
    );
    submit(&app.engine, OWNER, "draft-1");
    tauri::async_runtime::block_on(app.engine.submit(
        "someone-else",
        "draft-2",
        r#"{"route": ["sandbox"], "input": {"text": "t"}, "contract": "summary"}"#,
    ))
    .unwrap();

    let provider = app.ok("provider_in_use", json!({"name": "sandbox"}));
    assert_eq!(
        provider,
        json!({"queued": 2, "running": 0, "unknown": 0}),
        "every owner's open jobs count"
    );
    let named = app.ok("contract_in_use", json!({"name": "summary"}));
    assert_eq!(named, json!({"queued": 1, "running": 0, "unknown": 0}));

    app.ok("remove_contract", json!({"name": "summary"}));
    assert_eq!(app.ok("contracts", json!({})), json!([]));
    let gone = app.refused("remove_contract", json!({"name": "summary"}));
    assert_eq!(gone["code"], json!("not_found"));
    let unknown = invoke(&app.window, "provider_in_use", json!({"name": "nope"}));
    assert!(
        unknown == Ok(json!({"queued": 0, "running": 0, "unknown": 0}))
            || unknown
                .as_ref()
                .is_err_and(|e| e["code"] == json!("not_found")),
        "{unknown:?}"
    );
}

/// What the attention watcher announces, as it announces it, on a real ledger.
struct Watched {
    shown: std::sync::mpsc::Receiver<attention::Announcement>,
}

impl Watched {
    /// Starts the watcher on `engine` beyond `seen`, as the app does.
    fn start(engine: &Engine, seen: attention::Seen) -> Watched {
        let (tx, shown) = std::sync::mpsc::channel();
        let engine = engine.clone();
        tauri::async_runtime::spawn(notify::announce_news(engine, seen, move |a| {
            let _ = tx.send(a);
        }));
        Watched { shown }
    }

    /// The next announcement, waiting up to 15 s for it.
    fn next(&self) -> attention::Announcement {
        self.shown
            .recv_timeout(std::time::Duration::from_secs(15))
            .expect("an announcement")
    }

    /// Nothing more is announced in the next `secs` seconds.
    fn quiet_for(&self, secs: u64) {
        let more = self
            .shown
            .recv_timeout(std::time::Duration::from_secs(secs));
        assert!(more.is_err(), "announced again: {more:?}");
    }
}

/// Sends the job's next attempt and loses its answer: the attempt and the job become
/// `unknown`, as when a soft timeout passes. Returns the attempt's id.
fn goes_unknown(engine: &Engine, job_id: &str) -> String {
    tauri::async_runtime::block_on(async {
        let attempt = engine
            .claim_attempt(job_id, "sandbox")
            .await
            .unwrap()
            .attempt;
        engine
            .mark_sent(&attempt.id, "test", std::time::Duration::from_secs(60))
            .await
            .unwrap();
        let why = FailureKind::SoftTimeout.because("no answer in time");
        engine.mark_unknown(&attempt.id, why).await.unwrap();
        attempt.id
    })
}

/// The sandbox at one `currency` a request, doing the work and dropping every answer, with no
/// keyed replay: each attempt sent to it is charged and stays `unknown`, its price at risk.
fn priced_sandbox(engine: &Engine, currency: &str) {
    let config = json!({"name": "sandbox", "kind": "sandbox",
        "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "honours_idempotency_key": false,
        "price": {"currency": currency, "per_request": "1"},
        "dials": {"latency_ms": 0, "jitter_ms": 0, "drop_after_processing": 1.0,
            "honour_idempotency_key": false}});
    tauri::async_runtime::block_on(engine.add_provider(&config.to_string())).unwrap();
}

/// Sends the attempts of `jobs` with an executor, as the app's does (so a priced attempt is
/// charged as it is sent), and waits until each job is `unknown`.
fn sent_and_lost(engine: &Engine, jobs: &[(&str, &str)]) {
    use onejob_engine::testing::ExecutorSteps as _;
    tauri::async_runtime::block_on(async {
        let executor = Executor::new(engine.clone(), ExecutorOptions::default()).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        for (owner, id) in jobs {
            loop {
                let status = engine.job(owner, id).await.unwrap().job.status;
                if status == onejob_engine::JobStatus::Unknown {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "job {id} stayed {status:?}"
                );
                executor.tick().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    })
}

#[test]
fn spend_and_the_job_screen_show_what_the_apps_owner_has_at_risk_one_currency_at_a_time() {
    let app = headless_app();
    priced_sandbox(&app.engine, "USD");
    let mine = submit(&app.engine, OWNER, "order-1");
    let theirs = submit(&app.engine, "someone-else", "order-2");
    sent_and_lost(&app.engine, &[(OWNER, &mine), ("someone-else", &theirs)]);

    // The app's owner's spend only: one request at risk, not two.
    let spend = app.ok(
        "spend",
        json!({"by": "provider", "since": null, "currency": null}),
    );
    let usd = json!({"currency": "USD", "spent": "0.00", "at_risk": "1.00"});
    assert_eq!(spend["total"], usd, "{spend}");
    assert_eq!(
        spend["lines"],
        json!([{"key": "sandbox", "currency": "USD", "spent": "0.00", "at_risk": "1.00"}])
    );
    let view = app.ok("job", json!({ "id": mine }));
    assert_eq!(view["cost"], json!([usd]));
    assert_eq!(view["attempts"][0]["cost"], usd);

    // Two currencies are never added: the refusal names both, and either can be asked for.
    priced_sandbox(&app.engine, "EUR");
    let euros = submit(&app.engine, OWNER, "order-3");
    sent_and_lost(&app.engine, &[(OWNER, &euros)]);
    let refused = app.refused(
        "spend",
        json!({"by": "day", "since": null, "currency": null}),
    );
    assert_eq!(refused["code"], json!("invalid_input"));
    let said = refused["message"].as_str().unwrap();
    assert!(said.contains("EUR, USD"), "{said}");
    let eur = app.ok(
        "spend",
        json!({"by": "day", "since": null, "currency": "EUR"}),
    );
    assert_eq!(eur["total"]["currency"], json!("EUR"));
    assert_eq!(eur["total"]["at_risk"], json!("1.00"));
    let later = app.ok(
        "spend",
        json!({"by": "day", "since": "2999-01-01", "currency": "USD"}),
    );
    assert_eq!(later["total"], Value::Null);
}

#[test]
fn budgets_are_set_listed_and_removed_in_the_window_for_every_owner() {
    let app = headless_app();
    priced_sandbox(&app.engine, "USD");
    // The window is the local person, as the command line is: it sets any owner's budget.
    let config = json!({"limit": "1.50", "currency": "USD", "period": "day",
        "provider": "sandbox", "owner": "someone-else"});
    let set = app.ok(
        "set_budget",
        json!({"name": "theirs-a-day", "configJson": config.to_string()}),
    );
    assert_eq!(set["owner"], json!("someone-else"), "{set}");
    assert_eq!(set["used"], json!("0.00"));
    let theirs = submit(&app.engine, "someone-else", "order-1");
    sent_and_lost(&app.engine, &[("someone-else", &theirs)]);
    let listed = app.ok("budgets", json!({}));
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["name"], json!("theirs-a-day"));
    assert_eq!(listed[0]["used"], json!("1.00"), "{listed}");
    assert_eq!(listed[0]["limit"], json!("1.50"));

    // Refused by the part at fault, and nothing changes.
    let bad = json!({"limit": "1.50", "currency": "usd", "period": "day"});
    let refused = app.refused(
        "set_budget",
        json!({"name": "theirs-a-day", "configJson": bad.to_string()}),
    );
    assert_eq!(
        refused["details"]["field"],
        json!("budget.currency"),
        "{refused}"
    );
    assert_eq!(app.ok("budgets", json!({})), listed);

    app.ok("remove_budget", json!({"name": "theirs-a-day"}));
    assert_eq!(app.ok("budgets", json!({})), json!([]));
    let gone = app.refused("remove_budget", json!({"name": "theirs-a-day"}));
    assert_eq!(gone["code"], json!("not_found"), "{gone}");
}

/// A job of the app's owner, with a sandbox provider to send it to.
fn ledger_with_a_job(dir: &Path) -> (Engine, String) {
    let engine = ledger_with_the_sandbox(dir);
    let job = submit(&engine, OWNER, "order-1");
    (engine, job)
}

fn one(announcement: attention::Announcement) -> attention::Notice {
    match announcement {
        attention::Announcement::One(notice) => notice,
        many => panic!("one job expected, got {many:?}"),
    }
}

#[test]
fn a_job_that_becomes_unknown_again_after_an_abandon_is_announced_again() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, job) = ledger_with_a_job(dir.path());
    let seen = tauri::async_runtime::block_on(notify::starting_point(&engine)).unwrap();
    let watched = Watched::start(&engine, seen);

    let first = goes_unknown(&engine, &job);
    let told = one(watched.next());
    assert_eq!(
        (told.job_id.as_str(), told.attempt_id.as_str()),
        (job.as_str(), first.as_str())
    );

    tauri::async_runtime::block_on(engine.resolve(
        OWNER,
        &first,
        onejob_engine::Verdict::Abandoned,
        Default::default(),
    ))
    .unwrap();
    let second = goes_unknown(&engine, &job);
    let told = one(watched.next());
    assert_eq!(
        (told.job_id.as_str(), told.attempt_id.as_str()),
        (job.as_str(), second.as_str())
    );
    watched.quiet_for(2);
}

#[test]
fn jobs_a_crash_left_in_flight_are_announced_once_recovery_at_start_makes_them_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, job) = ledger_with_a_job(dir.path());
    let announced_before = submit(&engine, OWNER, "order-2");
    goes_unknown(&engine, &announced_before);
    tauri::async_runtime::block_on(async {
        let attempt = engine.claim_attempt(&job, "sandbox").await.unwrap().attempt;
        // Sent, then the app stopped: its lease ran out with nobody renewing it.
        let lease = std::time::Duration::from_millis(1);
        engine.mark_sent(&attempt.id, "gone", lease).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        engine.close().await;
    });

    let location = dir.path().join("onejob.db").display().to_string();
    let (engine, seen) = tauri::async_runtime::block_on(open_ledger(&location)).unwrap();
    let detail = tauri::async_runtime::block_on(engine.job(OWNER, &job)).unwrap();
    assert_eq!(
        detail.job.status,
        onejob_engine::JobStatus::Unknown,
        "recovered"
    );
    let watched = Watched::start(&engine, seen);
    let told = one(watched.next());
    assert_eq!(told.job_id, job, "only the job recovery made unknown");
    watched.quiet_for(2);
}

#[test]
fn a_burst_of_jobs_becoming_unknown_is_one_notification_counting_them() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, first) = ledger_with_a_job(dir.path());
    let seen = tauri::async_runtime::block_on(notify::starting_point(&engine)).unwrap();
    let mut jobs = vec![first];
    jobs.extend((2..=37).map(|i| submit(&engine, OWNER, &format!("order-{i}"))));
    for job in &jobs {
        goes_unknown(&engine, job);
    }
    let watched = Watched::start(&engine, seen);
    let shown = watched.next();
    assert_eq!(shown, attention::Announcement::Many(37));
    assert_eq!(shown.title(), "37 jobs need you");
    watched.quiet_for(3);
}

#[test]
fn a_ledger_typed_with_a_tilde_is_saved_and_shown_as_its_full_path() {
    let (_config_lock, config) = own_config_folder();
    let home = tempfile::tempdir().unwrap();
    let real_home = std::env::var_os("HOME");
    std::env::set_var("HOME", home.path());
    let app = headless_app();
    let settings = invoke(
        &app.window,
        "choose_ledger",
        json!({"location": "~/ledgers/../team.db"}),
    );
    match real_home {
        Some(real) => std::env::set_var("HOME", real),
        None => std::env::remove_var("HOME"),
    }
    let settings = settings.unwrap();
    let full = std::path::absolute(home.path().join("ledgers/../team.db")).unwrap();
    let full = full.display().to_string();
    assert!(full.starts_with('/') && !full.contains('~'), "{full}");
    let saved = config.path().join("dev.onejob.app").join("ledger");
    assert_eq!(std::fs::read_to_string(saved).unwrap().trim(), full);
    if std::env::var_os(ledger::ENV).is_none() {
        assert_eq!(settings["next_start"], json!(full), "shown as saved");
    }
    assert!(
        home.path().join("team.db").exists(),
        "the file in the home folder"
    );
}

/// An app on the mock runtime with no ledger open, for the reason given.
fn headless_without_ledger(why: status::NotOpen) -> (MockWindow, MockApp) {
    mock_app(AppState::without_ledger(why))
}

#[test]
fn with_the_chosen_ledger_missing_the_window_says_so_and_can_make_a_new_one_there() {
    let (_config_lock, _config) = own_config_folder();
    let drive = tempfile::tempdir().unwrap();
    let gone = drive.path().join("unmounted").join("team.db");
    let gone_text = gone.display().to_string();
    let (window, _app) = headless_without_ledger(status::NotOpen::missing(&gone_text));

    let settings = window.ok("settings", json!({}));
    assert_eq!(settings["open"], json!(false));
    assert_eq!(settings["db_path"], json!(gone_text));
    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["state"]["is"], json!("not_open"));
    assert_eq!(shown["state"]["problem"], json!("missing"));
    assert_eq!(shown["state"]["retrying"], json!(false));
    let refused = window.refused("list_jobs", json!({}));
    assert_eq!(refused["code"], json!("storage"));
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("no ledger is open") && message.contains(&gone_text),
        "{message}"
    );
    // "Try again" looks for the file and never makes it.
    let again = window.ok("try_ledger_again", json!({}));
    assert_eq!(again["state"]["problem"], json!("missing"));
    assert!(!gone.exists(), "nothing made behind the person's back");

    // "Create a new one there": made, saved and in use at once.
    let settings = window.ok("choose_ledger", json!({"location": gone_text}));
    assert!(gone.exists());
    assert_eq!(settings["open"], json!(true));
    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["state"], json!({"is": "open"}));
    let page = window.ok("list_jobs", json!({}));
    assert_eq!(page["jobs"], json!([]));
}

/// The SHA-256 of a file's bytes, in hex.
fn checksum(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn a_file_that_is_not_a_database_is_explained_left_untouched_and_moved_aside_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("onejob.db");
    let noise: Vec<u8> = (0..64 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&db, &noise).unwrap();
    let before = checksum(&db);
    let target = db.display().to_string();

    // The app's own open, as at start: it fails and leaves the file as it was.
    let failed = tauri::async_runtime::block_on(open_ledger(&target))
        .err()
        .expect("a file of noise does not open");
    assert_eq!(checksum(&db), before, "a failed open changes nothing");
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["onejob.db"], "and makes nothing beside it");
    let why = status::NotOpen::failed(&target, &failed);
    assert_eq!(why.problem, status::Problem::NotADatabase, "{failed}");
    let (window, _app) = headless_without_ledger(why);

    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["location"], json!(target));
    assert_eq!(shown["state"]["problem"], json!("not_a_database"));
    assert_eq!(shown["state"]["retrying"], json!(false));
    assert!(shown["state"]["message"].as_str().unwrap().len() > 10);
    let again = window.ok("try_ledger_again", json!({}));
    assert_eq!(again["state"]["problem"], json!("not_a_database"));
    assert_eq!(checksum(&db), before, "trying again changes nothing");

    let moved = window.ok("move_ledger_aside", json!({}));
    let kept = PathBuf::from(moved["kept"].as_str().unwrap());
    assert_eq!(kept.parent(), db.parent(), "kept beside it");
    assert!(
        kept.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("onejob.db.unreadable-"),
        "{kept:?}"
    );
    assert_eq!(checksum(&kept), before, "the old file, byte for byte");
    assert!(!status::is_not_a_database(&db), "a new ledger in its place");
    assert_eq!(moved["status"]["state"], json!({"is": "open"}));
    let page = window.ok("list_jobs", json!({}));
    assert_eq!(page["jobs"], json!([]));
    // Asked again, there is nothing left to move.
    let refused = window.refused("move_ledger_aside", json!({}));
    assert_eq!(refused["code"], json!("invalid_input"));
}

#[test]
fn a_server_that_does_not_answer_is_said_so_and_tried_again_in_the_background() {
    // A loopback port with nothing listening: the connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://onejob@127.0.0.1:{port}/team");
    let failed = tauri::async_runtime::block_on(open_ledger(&url))
        .err()
        .expect("nothing answers there");
    let why = status::NotOpen::failed(&url, &failed);
    assert_eq!(why.problem, status::Problem::Unreachable, "{failed}");
    let (window, app) = headless_without_ledger(why);
    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["location"], json!(url));
    assert_eq!(shown["shared"], json!(true));
    assert_eq!(shown["state"]["problem"], json!("unreachable"));
    assert_eq!(shown["state"]["retrying"], json!(true));
    let state = app.state::<AppState>();
    assert!(
        state.retrying.load(std::sync::atomic::Ordering::SeqCst),
        "the background tries run"
    );
}

#[test]
fn a_shared_ledger_that_stops_answering_is_said_unreachable_and_every_action_says_so() {
    let cluster = onejob_testkit::Postgres::start().unwrap();
    let url = cluster.database("team").unwrap();
    let engine = tauri::async_runtime::block_on(Engine::open(&url)).unwrap();
    let (window, _app) = mock_app(AppState::new(engine));
    window.ok("list_jobs", json!({}));
    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["state"], json!({"is": "open"}));

    // The server goes away.
    drop(cluster);
    let intent = json!({"route": ["sandbox"], "input": {"n": 1}}).to_string();
    let refused = window.refused("submit", json!({"key": "while-down", "intentJson": intent}));
    assert_eq!(refused["code"], json!("storage"));
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("is unreachable since") && message.contains("do it again"),
        "{message}"
    );
    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["state"]["is"], json!("unreachable"), "{shown}");
    // A read says so too, without waiting to find out again.
    let read = window.refused("list_jobs", json!({}));
    assert!(
        read["message"]
            .as_str()
            .unwrap()
            .contains("is unreachable since"),
        "{read}"
    );
}

#[test]
fn the_ledger_status_names_the_primary_and_the_watcher_tells_the_window_when_it_moved() {
    let mut pair = onejob_testkit::Replicated::start(onejob_testkit::Standby::Synchronous)
        .expect("a primary and a standby");
    let url = pair.database("team").unwrap();
    let engine = tauri::async_runtime::block_on(Engine::open(&url)).unwrap();
    // Built without `start`: no watcher runs while the primary goes, so the move is found by
    // the engine's own reads (as the executor's would), never by an outage the watcher saw.
    let app = with_commands(mock_builder(), AppState::new(engine.clone()))
        .build(mock_context(noop_assets()))
        .unwrap();
    specta_builder::<tauri::test::MockRuntime>().mount_events(app.handle());
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let (first, second) = (
        format!("127.0.0.1:{}", pair.primary().port()),
        format!("127.0.0.1:{}", pair.standby().port()),
    );
    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["primary"], json!({"host": first, "since": null}));

    pair.crash_primary().unwrap();
    pair.promote_standby().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while tauri::async_runtime::block_on(engine.needs_attention(OWNER)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the engine never found the promoted standby"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    let (told, heard) = std::sync::mpsc::channel();
    status::LedgerStatus::listen_any(app.handle(), move |event| {
        let _ = told.send(event.payload);
    });
    tauri::async_runtime::spawn(status::watch_outages(app.handle().clone()));
    let status = heard
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the window is told of the new primary");
    assert_eq!(status.state, status::LedgerState::Open, "{status:?}");
    let primary = status.primary.expect("a PostgreSQL ledger's primary");
    assert_eq!(primary.host, second);
    let since = primary.since.expect("since when, after a failover");
    assert!(
        chrono::DateTime::parse_from_rfc3339(&since).is_ok(),
        "{since}"
    );
    let shown = window.ok("ledger_status", json!({}));
    assert_eq!(shown["primary"], json!({"host": second, "since": since}));
    // Told once: the watcher says nothing more while the primary stays.
    assert!(heard
        .recv_timeout(std::time::Duration::from_secs(4))
        .is_err());
}

#[test]
fn a_ledger_file_has_no_primary() {
    let app = headless_app();
    let shown = app.ok("ledger_status", json!({}));
    assert_eq!(shown["primary"], json!(null));
    assert_eq!(shown["state"], json!({"is": "open"}));
}

/// A job of the local owner that succeeded with `result`, its answer recorded as the executor
/// would; its intent carries `intent_input`.
fn succeeded_with(engine: &Engine, key: &str, intent_input: Value, result: &Value) -> String {
    let intent = json!({"route": ["sandbox"], "input": intent_input}).to_string();
    tauri::async_runtime::block_on(async {
        let job = engine.submit(OWNER, key, &intent).await.unwrap().job;
        let claimed = engine.claim_attempt(&job.id, "sandbox").await.unwrap();
        let id = &claimed.attempt.id;
        engine
            .mark_sent(id, "executor-test", std::time::Duration::from_secs(10))
            .await
            .unwrap();
        engine
            .complete(id, result, onejob_engine::testing::Cause::Answer)
            .await
            .unwrap();
        job.id
    })
}

/// A result of about 5 MB, the size a provider may answer.
fn five_megabytes() -> Value {
    let rows: Vec<Value> = (0..50_000)
        .map(|i| json!({"row": i, "text": "x".repeat(80)}))
        .collect();
    json!({ "rows": rows })
}

#[test]
fn a_large_result_and_intent_reach_the_job_screen_as_their_size_and_first_part() {
    let app = headless_app();
    let big = five_megabytes();
    let pretty = serde_json::to_string_pretty(&big).unwrap();
    let id = succeeded_with(
        &app.engine,
        "large",
        json!({"blob": "y".repeat(70_000)}),
        &big,
    );

    let view = app.ok("job", json!({ "id": id }));
    let result = &view["job"]["result"];
    assert_eq!(result["shown"], json!("large"));
    // Its size is the length of its JSON text as the ledger holds it, measured there.
    let stored = serde_json::to_string(&big).unwrap();
    assert_eq!(result["size"], json!(stored.len()));
    let first = result["first_part"].as_str().unwrap();
    assert!(!first.is_empty() && first.len() <= 4096, "{}", first.len());
    assert!(pretty.starts_with(first));
    // The same first part as indenting the whole value gives.
    match onejob_engine::ShownValue::of(big.clone()) {
        onejob_engine::ShownValue::Large { first_part, .. } => assert_eq!(first, first_part),
        whole => panic!("{whole:?}"),
    }
    assert_eq!(view["job"]["intent"]["shown"], json!("large"));
    // The whole answer stays small: nothing of the values but their first parts.
    let sent = view.to_string().len();
    assert!(sent < 32 * 1024, "the Job screen's data is {sent} bytes");
    assert!(
        !view.to_string().contains("49999"),
        "the last row is not sent"
    );

    let whole = app.ok("job_part", json!({"id": id, "part": {"part": "result"}}));
    assert_eq!(whole, big);
    let intent = app.ok("job_part", json!({"id": id, "part": {"part": "intent"}}));
    assert_eq!(intent["input"]["blob"].as_str().map(str::len), Some(70_000));
}

#[test]
fn the_jobs_list_reads_only_what_it_shows_not_a_five_megabyte_result() {
    let app = headless_app();
    let id = succeeded_with(
        &app.engine,
        "large",
        json!({"blob": "y".repeat(70_000)}),
        &five_megabytes(),
    );
    let page = app.ok("list_jobs", json!({}));
    let row = &page["jobs"][0];
    assert_eq!(row["id"], json!(id));
    assert_eq!(row["idempotency_key"], json!("large"));
    assert_eq!(row["status"], json!("succeeded"));
    assert_eq!(row["route"], json!(["sandbox"]), "the route the list shows");
    let sent = page.to_string().len();
    assert!(sent < 2 * 1024, "the Jobs list's page is {sent} bytes");
}

#[test]
fn a_small_result_and_event_details_reach_the_job_screen_whole() {
    let app = headless_app();
    let id = succeeded_with(&app.engine, "small", json!({"n": 1}), &json!({"ok": true}));
    let view = app.ok("job", json!({ "id": id }));
    assert_eq!(
        view["job"]["result"],
        json!({"shown": "whole", "value": {"ok": true}})
    );
    assert_eq!(
        view["job"]["intent"],
        json!({"shown": "whole", "value": {"route": ["sandbox"], "input": {"n": 1}}})
    );
    let events = view["events"].as_array().unwrap();
    assert!(!events.is_empty());
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event["detail"]["shown"], json!("whole"), "{event}");
        let detail = app.ok(
            "job_part",
            json!({"id": id, "part": {"part": "event_detail", "index": index}}),
        );
        assert_eq!(detail, event["detail"]["value"]);
    }
    let past = app.refused(
        "job_part",
        json!({"id": id, "part": {"part": "event_detail", "index": events.len()}}),
    );
    assert_eq!(past["code"], json!("not_found"));
}

#[test]
fn save_to_a_file_writes_the_whole_value_to_a_new_file_in_the_downloads_folder() {
    let (_config_lock, config) = own_config_folder();
    let downloads = tempfile::tempdir().unwrap();
    std::fs::write(
        config.path().join("user-dirs.dirs"),
        format!("XDG_DOWNLOAD_DIR=\"{}\"\n", downloads.path().display()),
    )
    .unwrap();
    let app = headless_app();
    let big = five_megabytes();
    let id = succeeded_with(&app.engine, "large", json!({"n": 1}), &big);
    let args = json!({"id": id, "part": {"part": "result"}});

    let first = app.ok("save_job_part", args.clone());
    let path = PathBuf::from(first["path"].as_str().unwrap());
    assert_eq!(
        path,
        downloads.path().join(format!("onejob-{id}-result.json"))
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(first["size"], json!(text.len()));
    assert_eq!(text, serde_json::to_string_pretty(&big).unwrap());

    // A second save never writes over the first.
    std::fs::write(&path, "kept").unwrap();
    let second = app.ok("save_job_part", args);
    let again = downloads
        .path()
        .join(format!("onejob-{id}-result (2).json"));
    assert_eq!(second["path"], json!(again.display().to_string()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept");
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&again).unwrap()).unwrap(),
        big
    );

    let other = submit(&app.engine, "someone-else", "theirs");
    let refused = app.refused(
        "save_job_part",
        json!({"id": other, "part": {"part": "intent"}}),
    );
    assert_eq!(refused["code"], json!("not_found"));
    assert_eq!(std::fs::read_dir(downloads.path()).unwrap().count(), 2);
}

/// Settings names a ledger whose server has standbys, none synchronous, a risk (SPEC §14): a
/// failover there can lose acknowledged jobs and send attempts twice. With a synchronous
/// standby, and on a file, it names none.
#[test]
fn settings_names_an_asynchronous_standby_a_risk() {
    for (mode, named) in [
        (onejob_testkit::Standby::Asynchronous, true),
        (onejob_testkit::Standby::Synchronous, false),
    ] {
        let pair = onejob_testkit::Replicated::start(mode).expect("a primary and a standby");
        let url = pair.url_standby_first("postgres");
        let engine = tauri::async_runtime::block_on(Engine::open(&url)).unwrap();
        let app = with_commands(mock_builder(), AppState::new(engine))
            .build(mock_context(noop_assets()))
            .unwrap();
        let window = WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .unwrap();
        let risks = window.ok("ledger_risks", json!({}));
        let codes: Vec<&str> = risks
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["code"].as_str())
            .collect();
        assert_eq!(
            codes.contains(&"no_synchronous_standby"),
            named,
            "{mode:?}: {risks}"
        );
        if named {
            let risk = &risks[0];
            for part in ["what", "why", "what_to_do"] {
                assert!(risk[part].as_str().is_some_and(|t| !t.is_empty()), "{risk}");
            }
        }
    }
    let app = headless_app();
    assert_eq!(app.ok("ledger_risks", json!({})), json!([]));
}
