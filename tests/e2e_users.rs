//! End-to-end tests of what a person does in the window to use onejob for real: a provider
//! and its API key added in the form, a contract written and checked there and a job
//! submitted through its form, a contract tried on the built-in sandbox from the first-run
//! guide of a fresh ledger, a provider in use removed, one job found among 100,000, the
//! window on a PostgreSQL ledger showing another host's job as it is submitted, a ledger that
//! cannot be opened explained in the window, a shared ledger whose server goes away and
//! comes back, and one whose primary fails over to its standby; an unknown job's "What is known" panel beside its resolve actions; two hundred
//! unknown jobs settled after an outage in one decision; the Spend screen's chart and money at
//! risk over a priced provider; a price set in the provider form; a budget set in the window,
//! holding back what would pass it and showing its use.
//! The harness is in `window/`; screenshots go to `artifacts/`.

// A step that fails should stop the test where it failed.
#![allow(clippy::unwrap_used)]

mod window;

use std::path::Path;
use std::time::{Duration, Instant};

use fantoccini::Locator;
use onejob_engine::sandbox::{Dials, Sandbox};
use onejob_engine::testing::{FailureKind, InternalCalls as _, CHAT_PATH};
use onejob_engine::{BudgetPeriod, Engine, JobStatus, Resolution, Verdict};
use onejob_testkit::{MockLlm, Notifications, Postgres, Replicated, SecretService, Standby};
use serde_json::{json, Value};
use window::{checksum, run, sandbox, seed_jobs, Options, Window};

/// Looks every 100 ms, up to 20 s, until `look` gives a value, and returns it; past 20 s the
/// test fails with the last look's `Err`, which says what was seen instead.
async fn eventually<T, F, Fut>(mut look: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match look().await {
            Ok(value) => return value,
            Err(seen) => assert!(Instant::now() < deadline, "{seen}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits up to 20 s for the job to reach `status`, and returns it.
async fn wait_status(engine: &Engine, id: &str, status: JobStatus) -> onejob_engine::JobDetail {
    eventually(|| async move {
        let detail = engine.job("local", id).await.unwrap();
        match detail.job.status == status {
            true => Ok(detail),
            false => Err(format!(
                "job {id} stayed {:?}: {:?}",
                detail.job.status, detail.attempts
            )),
        }
    })
    .await
}

/// Submits `intent` to `engine` under `key` as the app's owner; the job.
async fn submit(engine: &Engine, key: &str, intent: Value) -> onejob_engine::Job {
    engine
        .submit("local", key, &intent.to_string())
        .await
        .unwrap()
        .job
}

/// A private session bus (a Secret Service's), and the environment that points the app at it.
fn private_bus() -> (SecretService, Vec<(String, String)>) {
    let secrets = SecretService::start().expect("a private session bus starts");
    let bus = secrets
        .env()
        .into_iter()
        .filter(|(k, _)| k == "DBUS_SESSION_BUS_ADDRESS")
        .collect();
    (secrets, bus)
}

/// The window on a private session bus with a notification server on it, over a ledger whose
/// sandbox does the work and then drops every answer, so each attempt becomes unknown; the
/// sandbox honours Idempotency-Keys as `honour_key` says. `seed` runs on the ledger before the
/// app starts. The Secret Service returned keeps the bus up.
async fn announcing_window<F, Fut>(
    honour_key: bool,
    seed: F,
) -> (Window, Notifications, SecretService)
where
    F: FnOnce(Engine) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (secrets, bus) = private_bus();
    let dials = json!({"latency_ms": 50, "drop_after_processing": 1.0,
        "honour_idempotency_key": honour_key});
    let w = Window::open_with(Options { env: bus.clone() }, |e| async move {
        sandbox(&e, 300, dials).await;
        seed(e).await;
    })
    .await;
    let notifications =
        Notifications::start(&w.display, &bus).expect("dunst starts (apt-get install dunst)");
    (w, notifications, secrets)
}

/// A throwaway PostgreSQL cluster and the URL of its database `team`.
fn team_database() -> (Postgres, String) {
    let cluster = Postgres::start().unwrap();
    let url = cluster.database("team").unwrap();
    (cluster, url)
}

/// Waits until `n` notifications are on screen, then checks for 1.5 s that no more follow.
async fn shown(notifications: &Notifications, n: u32) {
    eventually(|| async move {
        match notifications.displayed().unwrap() >= n {
            true => Ok(()),
            false => Err(format!("notification {n} was not shown")),
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        notifications.displayed().unwrap(),
        n,
        "one notification per time a job became unknown"
    );
}

/// The id of the job the latest submit in the window made.
async fn submitted_job(w: &Window) -> String {
    w.text_once_shown("[data-testid=outcomes]").await;
    w.attr("[data-testid=outcomes] [data-job-id]", "data-job-id")
        .await
        .expect("the outcome names its job")
}

/// Waits for the Jobs list's row of the job `id`.
async fn wait_for_row(w: &Window, id: &str) {
    w.wait_for(&format!(".job-row[data-job-id='{id}']")).await;
}

/// Waits for the Job screen of the job `id`.
async fn wait_for_job_screen(w: &Window, id: &str) {
    w.wait_for(&format!(".screen.job[data-job-id='{id}']"))
        .await;
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_containing(&path, needle));
        } else if let Ok(bytes) = std::fs::read(&path) {
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// A third-party OpenAI-compatible server that answers a chat completion only to a request
/// carrying `Authorization: Bearer <key>`, and 401 to any other.
fn llm_wanting(key: &str) -> String {
    let answer = json!({"id": "chatcmpl-e2e", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"paid\": true}"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}});
    json!({"rules": [
        {"path": "/v1/chat/completions", "method": "POST", "match": "@",
         "response": {"status": 401, "content": "{\"error\": {\"message\": \"no or wrong API key\"}}"}},
        {"path": "/v1/chat/completions", "method": "POST",
         "match": format!("headers.authorization == 'Bearer {key}'"),
         "response": {"status": 200, "content": answer.to_string()}}
    ]})
    .to_string()
}

#[test]
fn an_api_key_typed_into_the_provider_form_reaches_the_provider_and_is_stored_nowhere_else() {
    run(async {
        // Planted: a value found nowhere else, so any copy of it is this key.
        let key = format!("sk-planted-{}", uuid_like());
        let (secrets, bus) = private_bus();
        let llm = MockLlm::start(&llm_wanting(&key)).expect("mock-llm starts");
        // The app needs only the private bus; its data directories stay the harness's.
        let w = Window::open_with(Options { env: bus }, |e| async move {
            sandbox(&e, 5_000, json!({})).await;
        })
        .await;

        add_openai_provider(&w, "llm", &format!("{}/v1", llm.url), "gpt-4o-mini").await;
        w.fill("[data-testid=provider-key]", &key).await;
        w.screenshot("provider-form").await;
        w.click("[data-testid=provider-save]").await;
        w.wait_for("[data-provider=llm]").await;
        // The form is cleared and says only where the key is.
        w.click("[data-testid=provider-edit-llm]").await;
        w.wait_text("[data-testid=provider-key-status]", |t| {
            t.contains("keyring")
        })
        .await;
        let typed = w.attr("[data-testid=provider-key]", "value").await;
        assert!(
            typed.as_deref().unwrap_or("").is_empty(),
            "the key is never shown again: {typed:?}"
        );
        w.screenshot("provider-key-in-keyring").await;
        w.click("[data-testid=provider-cancel]").await;

        // The keyring holds it, under the provider's name.
        let stored = std::process::Command::new("secret-tool")
            .args(["lookup", "service", "onejob", "username", "llm"])
            .envs(secrets.env())
            .output()
            .expect("secret-tool runs (libsecret-tools)");
        assert_eq!(String::from_utf8_lossy(&stored.stdout).trim(), key);

        w.click("[data-screen=submit]").await;
        let intent = json!({"route": ["llm"],
            "input": {"messages": [{"role": "user", "content": "Charge order 17."}]}});
        w.fill("[data-testid=intent]", &intent.to_string()).await;
        w.click("[data-testid=submit]").await;
        let id = submitted_job(&w).await;
        // mock-llm answers 200 only to a request that carried the key.
        let done = wait_status(&w.engine, &id, JobStatus::Succeeded).await;
        assert_eq!(done.attempts.len(), 1);
        assert_eq!(done.attempts[0].http_status, Some(200));
        assert_eq!(done.job.result, Some(json!({"paid": true})));
        w.open_job(&id).await;
        w.wait_text("[data-testid=job-tokens]", |t| {
            t.contains("12") && t.contains('5')
        })
        .await;
        w.screenshot("job-tokens").await;

        // Nowhere else: not in the database files, the app's data, config or cache, nor
        // anything the app or its driver printed.
        let needle = key.as_bytes();
        assert_eq!(files_containing(w.dir(), needle), Vec::<String>::new());
        let printed = w.outputs();
        assert!(
            !printed.windows(needle.len()).any(|p| p == needle),
            "the app printed the key"
        );
        let job_json = serde_json::to_string(&w.engine.job("local", &id).await.unwrap()).unwrap();
        assert!(!job_json.contains(&key), "the key is in the job's record");
        w.close().await;
        drop(llm);
    });
}

/// A value unlikely to appear anywhere by chance.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{nanos:x}{:x}", std::process::id())
}

/// Adds an `openai` provider through the form, with no key.
async fn add_openai_provider(w: &Window, name: &str, base_url: &str, model: &str) {
    w.click("[data-screen=providers]").await;
    w.click("[data-testid=provider-add]").await;
    w.pick("[data-testid=provider-kind]", "openai").await;
    w.fill("[data-testid=provider-name]", name).await;
    w.fill("[data-testid=provider-base_url]", base_url).await;
    w.fill("[data-testid=provider-model]", model).await;
}

#[test]
fn a_contract_added_in_the_window_is_checked_and_a_job_submitted_through_its_form_succeeds() {
    run(async {
        // The sandbox's Chat Completions endpoint on loopback: a model that answers with JSON
        // made to fit the schema it is asked for.
        let chat = Sandbox::start("127.0.0.1:0".parse().unwrap(), Dials::default())
            .await
            .unwrap();
        let w = Window::open(|_| async {}).await;
        add_openai_provider(&w, "chat", &format!("{}/v1", chat.url()), "sandbox").await;
        w.click("[data-testid=provider-save]").await;
        w.wait_for("[data-provider=chat]").await;

        w.click("[data-testid=contract-add]").await;
        w.fill("[data-testid=contract-name]", "greeting").await;
        // A schema that is not JSON Schema gets words beside it, and nothing is saved.
        w.fill("[data-testid=contract-schema]", "{\"type\": \"objekt\"}")
            .await;
        w.wait_for("[data-testid=contract-error-schema]").await;
        let schema = json!({"type": "object",
            "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]});
        w.fill("[data-testid=contract-schema]", &schema.to_string())
            .await;
        w.wait_for("[data-testid=contract-schema-ok]").await;
        w.fill("[data-testid=contract-system]", "You greet people.")
            .await;
        w.fill(
            "[data-testid=contract-user]",
            "Greet {{name}} from {{city}}.",
        )
        .await;
        w.wait_text("[data-testid=contract-fields]", |t| {
            t.contains("name") && t.contains("city")
        })
        .await;
        w.fill(
            "[data-testid=contract-samples]",
            &json!([{"name": "Ada", "city": "London"}]).to_string(),
        )
        .await;
        w.screenshot("contract-editor").await;
        w.click("[data-testid=contract-save]").await;
        w.wait_for("[data-contract=greeting]").await;
        assert_eq!(w.engine.contract("greeting").await.unwrap().schema, schema);

        w.click("[data-testid=run-check-greeting-chat]").await;
        w.wait_text("[data-check='greeting/chat'] [data-check-id]", |t| {
            t.contains("passed")
        })
        .await;
        let checks = w.engine.contract_checks("greeting").await.unwrap();
        assert!(checks.len() == 1 && checks[0].passed, "{checks:?}");

        w.click("[data-screen=submit]").await;
        w.pick("[data-testid=submit-contract]", "greeting").await;
        // The route: chat alone.
        if !w
            .shows("[data-testid=submit-route] [data-provider=chat]")
            .await
        {
            w.pick("[data-testid=submit-route-add]", "chat").await;
        }
        if w.shows("[data-testid=submit-route] [data-provider=sandbox]")
            .await
        {
            w.click("[data-testid=submit-route-remove-sandbox]").await;
        }
        w.fill("[data-testid=submit-field-name]", "Grace").await;
        w.fill("[data-testid=submit-field-city]", "Arlington").await;
        w.screenshot("submit-by-contract").await;
        w.click("[data-testid=submit]").await;
        let id = submitted_job(&w).await;
        let done = wait_status(&w.engine, &id, JobStatus::Succeeded).await;
        let intent: &Value = &done.job.intent;
        assert_eq!(intent["contract"], json!("greeting"));
        assert_eq!(intent["route"], json!(["chat"]));
        assert_eq!(
            intent["input"],
            json!({"name": "Grace", "city": "Arlington"})
        );
        assert!(done.job.result.as_ref().unwrap()["greeting"].is_string());
        // One request for the check's sample, one for the job, both to the chat endpoint.
        let asked = chat.log();
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert!(asked.iter().all(|r| r.path == CHAT_PATH), "{asked:?}");
        assert_eq!(asked[1].idempotency_key.as_deref(), Some(id.as_str()));
        w.close().await;
        chat.stop().await;
    });
}

#[test]
fn on_a_fresh_ledger_a_contract_is_tried_on_the_built_in_sandbox_and_a_job_by_it_succeeds() {
    run(async {
        // Nothing seeded: the ledger has only the provider every new one gets, `sandbox`.
        let w = Window::open(|_| async {}).await;
        let providers = w.engine.providers().await.unwrap();
        assert_eq!(providers.len(), 1, "{providers:?}");

        // The first-run guide makes the sample contract and checks it against the sandbox.
        w.click("[data-testid=first-run-contract]").await;
        w.wait_text("[data-testid=first-run-contract-result]", |t| {
            t.contains("passed") && t.contains("2 of 2")
        })
        .await;
        w.screenshot("first-run-contract").await;
        let checks = w.engine.contract_checks("sandbox-sample").await.unwrap();
        assert!(
            checks.len() == 1 && checks[0].passed && checks[0].provider == "sandbox",
            "{checks:?}"
        );

        w.click("[data-testid=first-run-contract-submit]").await;
        w.pick("[data-testid=submit-contract]", "sandbox-sample")
            .await;
        w.wait_for("[data-testid=submit-route] [data-provider=sandbox]")
            .await;
        w.fill("[data-testid=submit-field-name]", "Grace").await;
        w.click("[data-testid=submit]").await;
        let id = submitted_job(&w).await;
        let done = wait_status(&w.engine, &id, JobStatus::Succeeded).await;
        assert_eq!(done.job.intent["contract"], json!("sandbox-sample"));
        assert_eq!(done.job.intent["route"], json!(["sandbox"]));
        assert_eq!(done.job.intent["input"], json!({"name": "Grace"}));
        // The sandbox's chat answer, made to fit the contract's schema.
        assert_eq!(
            done.job.result,
            Some(json!({"greeting": "sandbox", "language": "en"}))
        );
        w.open_job(&id).await;
        w.wait_text("[data-testid=job-tokens]", |t| {
            !t.is_empty() && !t.contains("none reported")
        })
        .await;
        w.screenshot("first-run-contract-job").await;
        w.close().await;
    });
}

#[test]
fn an_unknown_jobs_what_is_known_panel_stands_beside_the_resolve_actions_with_the_body_one_click_away(
) {
    run(async {
        let w = Window::open(|e| async move {
            // The work is done, then the answer is dropped mid-response: the attempt is unknown.
            sandbox(
                &e,
                5_000,
                json!({"latency_ms": 50, "drop_after_processing": 1.0}),
            )
            .await;
        })
        .await;
        let intent = json!({"route": ["sandbox"], "input": {"order": 77, "amount": "12.50"}});
        let job = submit(&w.engine, "order-77", intent).await;
        let detail = wait_status(&w.engine, &job.id, JobStatus::Unknown).await;
        let rule = detail.known[0].rule.clone().unwrap().code;
        w.open_job(&job.id).await;
        let panel = ".resolve-beside [data-testid=what-is-known]";
        w.wait_for(panel).await;
        w.wait_for(".resolve-beside [data-testid=resolve-failed]")
            .await;
        let said = w
            .wait_text("[data-testid=known-rule]", |t| t.contains(&rule))
            .await;
        assert!(said.contains(&rule), "{said}");
        let sent = w.text("[data-testid=known-sent]").await;
        assert!(sent.contains("by executor"), "{sent}");
        let request = w.text("[data-testid=known-request]").await;
        assert!(request.contains("POST http://127.0.0.1:"), "{request}");
        assert!(
            request.contains(&format!("idempotency-key: {}", job.id)),
            "{request}"
        );
        let body = w.text("[data-testid=known-body]").await;
        let sha = &detail.known[0].sent.as_ref().unwrap().body_sha256;
        assert!(body.contains(sha.as_str()), "{body}");
        w.click("[data-testid=show-sent-body]").await;
        let shown = w
            .wait_text("[data-testid=sent-body]", |t| t.contains("12.50"))
            .await;
        assert!(shown.contains("\"order\": 77"), "{shown}");
        w.screenshot("what-is-known").await;
        w.close().await;
    });
}

/// A provider at a port nothing listens on, with no status lookup and no keyed replays: its
/// `unknown` attempts stay as they are until a person decides.
async fn silent_provider(e: &Engine, name: &str) {
    let config = json!({"name": name, "kind": "http", "base_url": "http://127.0.0.1:9/",
        "soft_timeout_ms": 1000, "hard_timeout_ms": 5000, "honours_idempotency_key": false});
    e.add_provider(&config.to_string()).await.unwrap();
}

/// A job of the app's owner whose one attempt at `provider` was sent and never answered: `unknown`.
async fn unknown_at(e: &Engine, key: &str, provider: &str) -> String {
    let intent = json!({"route": [provider], "input": {"payment": key}});
    let job = submit(e, key, intent).await;
    let claimed = e.claim_attempt(&job.id, provider).await.unwrap();
    let attempt = &claimed.attempt.id;
    e.mark_sent(
        attempt,
        "executor-before-the-outage",
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    e.mark_unknown(
        attempt,
        FailureKind::SoftTimeout.because("no answer in time"),
    )
    .await
    .unwrap();
    job.id
}

#[test]
fn after_an_outage_a_person_settles_two_hundred_unknown_jobs_in_one_decision() {
    run(settle_an_outage(None));
}

/// The same on a shared PostgreSQL ledger: the window's bulk operation runs there, beside the
/// ledger's other hosts.
#[test]
fn after_an_outage_a_person_settles_two_hundred_unknown_jobs_in_one_decision_on_postgres() {
    let cluster = Postgres::start().unwrap();
    let url = cluster.database("outage").unwrap();
    run(settle_an_outage(Some(url)));
}

/// Two hundred jobs left `unknown` at one provider and three at another, on the app's own
/// ledger or on the PostgreSQL database `postgres`; the person settles the two hundred in the
/// window in one decision while two of them are settled elsewhere.
async fn settle_an_outage(postgres: Option<String>) {
    let seed = |e: Engine| async move {
        silent_provider(&e, "payments").await;
        silent_provider(&e, "ledgerbank").await;
        let mut outage = Vec::new();
        for n in 0..200 {
            outage.push(unknown_at(&e, &format!("pay-{n:03}"), "payments").await);
        }
        let mut elsewhere = Vec::new();
        for n in 0..3 {
            elsewhere.push(unknown_at(&e, &format!("bank-{n}"), "ledgerbank").await);
        }
        (outage, elsewhere)
    };
    let picture = match postgres {
        Some(_) => "bulk-confirm-postgres",
        None => "bulk-confirm",
    };
    let (w, engine, outage, elsewhere) = match postgres {
        None => {
            let mut seeded = None;
            let w = Window::open(|e| {
                let seeded = &mut seeded;
                async move {
                    *seeded = Some(seed(e).await);
                }
            })
            .await;
            let (outage, elsewhere) = seeded.unwrap();
            let engine = w.engine.clone();
            (w, engine, outage, elsewhere)
        }
        Some(url) => {
            let engine = Engine::open(&url).await.unwrap();
            let (outage, elsewhere) = seed(engine.clone()).await;
            let w = open_on(&url).await;
            (w, engine, outage, elsewhere)
        }
    };
    {
        // The filter: unknown jobs at payments.
        w.click("[data-screen=jobs]").await;
        w.click(".filter-option[data-status=unknown]").await;
        w.wait_text("[data-testid=jobs-loaded]", |t| t == "203 jobs")
            .await;
        w.pick("[data-testid=jobs-provider]", "payments").await;
        w.wait_text("[data-testid=jobs-loaded]", |t| t == "200 jobs")
            .await;
        // Select all, and the one decision: it went through.
        let select = w
            .wait_text("[data-testid=bulk-select]", |t| t.contains("200"))
            .await;
        assert_eq!(select, "Select all 200 matching");
        w.click("[data-testid=bulk-select]").await;
        w.click("[data-testid=bulk-succeeded]").await;
        let asked = w.text_once_shown("[data-testid=bulk-ask]").await;
        assert!(
            asked.contains("It went through: resolve the unknown attempt of 200 jobs at payments."),
            "{asked}"
        );
        // The single job's words for what recording a success risks.
        assert!(
            asked.contains(
                "if the provider did not in fact do it, the job shows a success that never happened."
            ),
            "{asked}"
        );
        let yes = w.text("[data-testid=bulk-confirm-yes]").await;
        assert_eq!(yes, "It went through: 200 jobs");
        w.screenshot(picture).await;

        // Meanwhile, two of them are settled one by one elsewhere (the command line, another
        // window): the ledger moves on while the confirmation is open.
        let moved = [outage[17].clone(), outage[150].clone()];
        for job in &moved {
            let attempt = engine.job("local", job).await.unwrap().attempts[0]
                .id
                .clone();
            let seen = Resolution {
                result: Some(json!({"seen": "on the provider's dashboard"})),
                ..Default::default()
            };
            engine
                .resolve("local", &attempt, Verdict::Succeeded, seen)
                .await
                .unwrap();
        }
        w.wait_text("[data-testid=jobs-loaded]", |t| t == "198 jobs")
            .await;
        // The confirmation still names the set it fixed as it opened.
        assert!(w
            .text("[data-testid=bulk-ask]")
            .await
            .contains("200 jobs at payments"));

        // Every state of the progress line the window shows, as it shows it.
        w.client
            .execute(
                "window.progressSeen = [];                  new MutationObserver(() => {                    const p = document.querySelector('[data-testid=bulk-progress]');                    if (p) window.progressSeen.push(p.textContent);                  }).observe(document.body, {subtree: true, childList: true, characterData: true});",
                vec![],
            )
            .await
            .unwrap();
        w.click("[data-testid=bulk-confirm-yes]").await;
        let result = w
            .wait_text("[data-testid=bulk-result]", |t| t.contains("resolved"))
            .await;
        assert!(
            result.contains("198 resolved, 2 skipped: moved meanwhile"),
            "{result}"
        );
        let progress = w
            .client
            .execute("return window.progressSeen;", vec![])
            .await
            .unwrap();
        let progress: Vec<String> = serde_json::from_value(progress).unwrap();
        assert!(
            progress.iter().any(|p| p.contains("of 200 decided")),
            "{progress:?}"
        );
        // The skipped ones, listed.
        let mut listed = Vec::new();
        for li in w
            .client
            .find_all(Locator::Css("[data-testid=bulk-skipped] li"))
            .await
            .unwrap()
        {
            assert!(li.text().await.unwrap().contains("moved meanwhile"));
            listed.push(li.attr("data-job-id").await.unwrap().unwrap());
        }
        listed.sort();
        let mut expected = moved.to_vec();
        expected.sort();
        assert_eq!(listed, expected);

        // The ledger: each job of the set decided once, by the operation, the others untouched.
        let first = engine.job("local", &outage[0]).await.unwrap();
        let op = first
            .events
            .iter()
            .find_map(|e| e.detail["bulk"].as_str().map(str::to_owned))
            .expect("an event names the operation");
        let shown = engine.bulk_operation("local", &op).await.unwrap();
        assert_eq!((shown.matched, shown.changed, shown.done), (200, 198, true));
        for job in &outage {
            let detail = engine.job("local", job).await.unwrap();
            let naming: Vec<&str> = detail
                .events
                .iter()
                .filter(|e| e.detail["bulk"] == op.as_str())
                .map(|e| e.kind.as_str())
                .collect();
            assert_eq!(detail.job.status, JobStatus::Succeeded, "{job}");
            assert_eq!(detail.attempts.len(), 1, "{job}");
            if moved.contains(job) {
                assert!(naming.is_empty(), "{job}: {naming:?}");
                assert_eq!(
                    detail.job.result,
                    Some(json!({"seen": "on the provider's dashboard"}))
                );
            } else {
                assert_eq!(naming, ["resolved_by_person"], "{job}");
            }
        }
        for job in &elsewhere {
            let detail = engine.job("local", job).await.unwrap();
            assert_eq!(detail.job.status, JobStatus::Unknown, "{job}");
            assert!(
                detail.events.iter().all(|e| e.detail.get("bulk").is_none()),
                "{job}"
            );
        }
        w.close().await;
    }
}

#[test]
fn removing_a_provider_in_use_explains_itself() {
    run(async {
        let w = Window::open(|e| async move {
            sandbox(&e, 5_000, json!({})).await;
            // A provider that takes a minute: its jobs stay queued or running.
            let slow = json!({"name": "payments", "kind": "sandbox", "soft_timeout_ms": 120_000,
                "hard_timeout_ms": 180_000, "honours_idempotency_key": true,
                "dials": {"latency_ms": 60_000}});
            e.add_provider(&slow.to_string()).await.unwrap();
            for n in 0..3 {
                let intent = json!({"route": ["payments"], "input": {"order": n}});
                e.submit("local", &format!("order-{n}"), &intent.to_string())
                    .await
                    .unwrap();
            }
        })
        .await;
        w.click("[data-screen=providers]").await;
        w.click("[data-testid=provider-remove-payments]").await;
        let said = w
            .text_once_shown("[data-testid=remove-provider-counts]")
            .await;
        assert!(
            said.contains("3 queued or running jobs fail as misconfigured"),
            "{said}"
        );
        w.screenshot("provider-remove").await;
        // Keeping it changes nothing.
        w.click("[data-testid=remove-provider-no]").await;
        assert_eq!(w.engine.providers().await.unwrap().len(), 2);
        w.click("[data-testid=provider-remove-payments]").await;
        w.text_once_shown("[data-testid=remove-provider-counts]")
            .await;
        w.click("[data-testid=remove-provider-yes]").await;
        eventually(|| async {
            match w.engine.providers().await.unwrap().len() {
                1 => Ok(()),
                _ => Err("payments was never removed".to_owned()),
            }
        })
        .await;
        w.close().await;
    });
}

#[test]
fn search_finds_a_job_by_key_among_a_hundred_thousand() {
    run(async {
        let w = Window::open(|e| async move {
            seed_jobs(std::path::Path::new(e.location()), 100_000).await;
            sandbox(&e, 5_000, json!({})).await;
        })
        .await;
        let intent = json!({"route": ["sandbox"], "input": {"invoice": 1130}});
        let wanted = submit(&w.engine, "invoice-2026-11-30-ada", intent).await;
        w.click("[data-screen=jobs]").await;
        w.fill("[data-testid=jobs-search]", "invoice-2026").await;
        w.wait_text("[data-testid=jobs-loaded]", |t| t == "1 job")
            .await;
        // The count and the list are read apart: the list may show its page a moment after.
        let rows = eventually(|| async {
            let rows = w
                .client
                .find_all(Locator::Css(".job-row[data-job-id]"))
                .await
                .unwrap();
            match rows.len() {
                1 => Ok(rows),
                n => Err(format!("{n} rows listed, not the 1 counted")),
            }
        })
        .await;
        assert_eq!(
            rows[0].attr("data-job-id").await.unwrap().as_deref(),
            Some(wanted.id.as_str())
        );
        w.screenshot("jobs-find").await;
        // By its id's first characters as well.
        w.fill("[data-testid=jobs-search]", &wanted.id[..13]).await;
        wait_for_row(&w, &wanted.id).await;
        w.close().await;
    });
}

#[test]
fn a_notification_for_a_job_that_became_unknown_opens_that_job_when_clicked() {
    run(async {
        // A private session bus (the Secret Service's) with a real notification server on it.
        let (w, notifications, _secrets) = announcing_window(true, |e| async move {
            // A job that needed a person before the app started is not announced.
            let old = submit(
                &e,
                "old",
                json!({"route": ["sandbox"], "input": {"order": "old"}}),
            )
            .await;
            let executor = onejob_engine::executor::Executor::new(
                e.clone(),
                onejob_engine::executor::ExecutorOptions::default(),
            )
            .unwrap();
            executor.run_job(&old.id, None).await.unwrap();
            assert_eq!(
                e.job("local", &old.id).await.unwrap().job.status,
                JobStatus::Unknown
            );
        })
        .await;
        w.click("[data-screen=providers]").await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            notifications.displayed().unwrap(),
            0,
            "the old job is not announced"
        );

        let intent = json!({"route": ["sandbox"], "input": {"order": 18}});
        let job = submit(&w.engine, "order-18", intent).await;
        wait_status(&w.engine, &job.id, JobStatus::Unknown).await;
        shown(&notifications, 1).await;
        // The whole X screen, the notification over the window.
        let shot = window::artifacts().join("notification.png");
        let grabbed = std::process::Command::new("import")
            .args(["-display", &w.display, "-window", "root"])
            .arg(&shot)
            .status()
            .expect("import runs (imagemagick)");
        assert!(grabbed.success());
        notifications.click(0).unwrap();
        wait_for_job_screen(&w, &job.id).await;
        w.wait_for("[data-testid=resolve]").await;
        w.close().await;
    });
}

#[test]
fn a_job_that_becomes_unknown_twice_is_announced_twice() {
    run(async {
        // Every answer is dropped after the work is done: each attempt becomes unknown.
        // The key is not honoured, so a second attempt is not answered from the first.
        let (w, notifications, _secrets) = announcing_window(false, |_| async {}).await;

        let intent = json!({"route": ["sandbox"], "input": {"order": 21}});
        let job = submit(&w.engine, "order-21", intent).await;
        let first = wait_status(&w.engine, &job.id, JobStatus::Unknown).await;
        shown(&notifications, 1).await;

        // A person abandons the attempt and sends the job again; that attempt times out too.
        let resolution = onejob_engine::Resolution {
            retry_on: Some("sandbox".into()),
            ..Default::default()
        };
        let attempt = &first.attempts[0].id;
        w.engine
            .resolve(
                "local",
                attempt,
                onejob_engine::Verdict::Abandoned,
                resolution,
            )
            .await
            .unwrap();
        eventually(|| async {
            let detail = w.engine.job("local", &job.id).await.unwrap();
            match detail.job.status == JobStatus::Unknown && detail.attempts.len() == 2 {
                true => Ok(()),
                false => Err(format!(
                    "the second attempt never became unknown: {:?} {:?}",
                    detail.job.status, detail.attempts
                )),
            }
        })
        .await;
        shown(&notifications, 2).await;

        // Another job after it: the click opens the job of the notification clicked, not the
        // last one shown.
        let other = json!({"route": ["sandbox"], "input": {"order": 22}});
        let other = submit(&w.engine, "order-22", other).await;
        wait_status(&w.engine, &other.id, JobStatus::Unknown).await;
        shown(&notifications, 3).await;
        // The other job's notification is dismissed; the first job's newest is clicked.
        notifications.close_newest().unwrap();
        assert_eq!(notifications.displayed().unwrap(), 2);
        w.screenshot("announced-twice").await;
        notifications.click(0).unwrap();
        wait_for_job_screen(&w, &job.id).await;
        w.close().await;
    });
}

#[test]
fn the_window_on_a_shared_postgres_ledger_shows_another_hosts_job_as_it_is_submitted() {
    run(async {
        let (_cluster, url) = team_database();
        let options = Options {
            env: vec![("ONEJOB_DB".to_owned(), url.clone())],
        };
        let w = Window::open_with(options, |_| async {}).await;

        w.click("[data-screen=settings]").await;
        w.wait_text("[data-testid=ledger-kind]", |t| {
            t.contains("PostgreSQL") && t.contains("ONEJOB_DB")
        })
        .await;
        let shown = w.attr("[data-testid=db-path]", "title").await.unwrap();
        assert_eq!(shown, url, "the URL (it has no password here)");
        w.screenshot("settings-postgres").await;

        w.click("[data-screen=jobs]").await;
        w.wait_for(".jobs-list").await;
        // Another host: its own engine on the same database, no shared process or file.
        let other = Engine::open(&url).await.unwrap();
        let intent = json!({ "route": ["sandbox"], "input": { "from": "another host" } });
        let job = submit(&other, "from-another-host", intent).await;
        // LISTEN/NOTIFY reaches the window: the list refreshes without a click.
        wait_for_row(&w, &job.id).await;
        // The app's own executor, on the shared ledger, runs it to its one result.
        wait_status(&other, &job.id, JobStatus::Succeeded).await;
        w.screenshot("jobs-postgres").await;
    });
}

/// The app started on `ledger` (ONEJOB_DB), whatever state it is in.
async fn open_on(ledger: &str) -> Window {
    let options = Options {
        env: vec![("ONEJOB_DB".to_owned(), ledger.to_owned())],
    };
    Window::open_with(options, |_| async {}).await
}

#[test]
fn a_ledger_that_cannot_be_opened_is_explained_in_the_window_and_left_untouched() {
    run(async {
        // A file of random bytes where the ledger should be.
        let folder = tempfile::tempdir().unwrap();
        let db = folder.path().join("team.db");
        let mut noise = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::fs::File::open("/dev/urandom").unwrap(), 256 * 1024),
            &mut noise,
        )
        .unwrap();
        std::fs::write(&db, &noise).unwrap();
        let before = checksum(&db);
        let w = open_on(&db.display().to_string()).await;
        w.wait_for("[data-testid=ledger-not-open][data-problem=not_a_database]")
            .await;
        let shown = w.text("[data-testid=ledger-not-open]").await;
        assert!(shown.contains(&db.display().to_string()), "which: {shown}");
        assert!(shown.contains("not a database"), "what failed: {shown}");
        assert!(shown.contains("Check the path"), "what to check: {shown}");
        w.screenshot("ledger-not-a-database").await;
        assert_eq!(checksum(&db), before, "opening it changed nothing");

        // Trying again fails the same way and changes nothing either.
        w.click("[data-testid=ledger-try-again]").await;
        w.wait_for("[data-testid=ledger-tried]").await;
        assert_eq!(checksum(&db), before);
        // "Use another ledger" is Settings.
        w.click("[data-testid=ledger-use-another]").await;
        w.wait_for("[data-testid=ledger-closed]").await;
        w.wait_for("[data-testid=ledger-location]").await;
        w.click("[data-screen=jobs]").await;

        // Moved aside: kept, renamed, beside a new ledger the app continues on.
        w.click("[data-testid=ledger-move-aside]").await;
        let kept = w.text("[data-testid=ledger-kept]").await;
        let kept = Path::new(&kept);
        assert_eq!(kept.parent(), Some(folder.path()), "beside it: {kept:?}");
        assert!(
            kept.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("team.db.unreadable-"),
            "{kept:?}"
        );
        assert_eq!(checksum(kept), before, "the old file, byte for byte");
        w.wait_for("[data-testid=first-run]").await;
        w.screenshot("ledger-moved-aside").await;
        let fresh = Engine::open(&db).await.unwrap();
        assert!(fresh
            .jobs("local", &Default::default())
            .await
            .unwrap()
            .jobs
            .is_empty());
        fresh.close().await;
        w.close().await;

        // A PostgreSQL server that is down when the app starts.
        let (cluster, url) = team_database();
        cluster.stop().expect("the server stops");
        let started = Instant::now();
        let w = open_on(&url).await;
        w.wait_for("[data-testid=ledger-not-open][data-problem=unreachable]")
            .await;
        let shown = w.text("[data-testid=ledger-not-open]").await;
        assert!(shown.contains(&url), "which: {shown}");
        assert!(shown.contains("is unreachable"), "what failed: {shown}");
        assert!(
            shown.contains("Check that the PostgreSQL server is running"),
            "{shown}"
        );
        w.wait_for("[data-testid=ledger-retrying]").await;
        println!("explained {:?} after the start", started.elapsed());
        w.screenshot("ledger-server-down").await;

        // The server comes up: the window continues by itself.
        cluster.start_again().expect("the server starts again");
        w.wait_for("[data-testid=first-run]").await;
        assert!(!w.shows("[data-testid=ledger-not-open]").await);
        w.close().await;
    });
}

#[test]
fn the_window_says_the_shared_ledger_is_unreachable_and_recovers() {
    run(async {
        let (cluster, url) = team_database();
        let w = open_on(&url).await;
        w.wait_for("[data-testid=first-run]").await;

        cluster.stop().expect("the server stops");
        let banner = w
            .wait_text("[data-testid=ledger-unreachable]", |t| {
                t.contains("unreachable since")
            })
            .await;
        assert!(
            banner.contains(&url) && banner.contains("retrying"),
            "{banner}"
        );
        // An action meanwhile is refused in words, and nothing is kept to be sent later.
        w.click("[data-screen=submit]").await;
        w.click("[data-testid=submit]").await;
        let outcome = w.text_once_shown("[data-testid=outcomes]").await;
        assert!(
            outcome.contains("is unreachable since") && outcome.contains("do it again"),
            "{outcome}"
        );
        w.screenshot("ledger-unreachable").await;

        cluster.start_again().expect("the server starts again");
        eventually(|| async {
            match w.shows("[data-testid=ledger-unreachable]").await {
                false => Ok(()),
                true => Err("the banner stayed after the server came back".to_owned()),
            }
        })
        .await;
        let other = Engine::open(&url).await.unwrap();
        let page = other.jobs("local", &Default::default()).await.unwrap();
        assert!(
            page.jobs.is_empty(),
            "the refused submit was not queued: {page:?}"
        );

        // The same draft again, without a restart: one job, run to its result.
        w.click("[data-testid=submit]").await;
        let id = w
            .wait_text("[data-testid=outcomes]", |t| {
                t.contains("Submitted: new job")
            })
            .await;
        assert!(!id.is_empty());
        let page = other.jobs("local", &Default::default()).await.unwrap();
        assert_eq!(page.jobs.len(), 1);
        wait_status(&other, &page.jobs[0].id, JobStatus::Succeeded).await;
        w.click("[data-screen=jobs]").await;
        wait_for_row(&w, &page.jobs[0].id).await;
        other.close().await;
        w.close().await;
    });
}

#[test]
fn the_settings_screen_and_the_ledger_banner_through_a_failover() {
    run(async {
        let mut pair = Replicated::start(Standby::Synchronous).unwrap();
        let url = pair.database("team").unwrap();
        let first = format!("127.0.0.1:{}", pair.primary().port());
        let second = format!("127.0.0.1:{}", pair.standby().port());
        let w = open_on(&url).await;
        w.wait_for("[data-testid=first-run]").await;
        w.click("[data-screen=settings]").await;
        w.wait_text("[data-testid=ledger-primary]", |t| t == first)
            .await;
        let note = w.text("[data-testid=ledger-primary-note]").await;
        assert!(note.contains("its primary"), "{note}");
        assert!(!w.shows("[data-testid=ledger-primary-moved]").await);

        // The primary's host dies; the standby is not promoted yet, so nothing accepts writes.
        pair.crash_primary().unwrap();
        w.wait_text("[data-testid=ledger-unreachable]", |t| {
            t.contains("unreachable since")
        })
        .await;
        pair.promote_standby().unwrap();
        let moved = format!("The ledger's primary is now {second}, since ");
        let banner = w
            .wait_text("[data-testid=ledger-primary-moved]", |t| t.contains(&moved))
            .await;
        assert!(banner.contains("a standby took over"), "{banner}");
        eventually(|| async {
            match w.shows("[data-testid=ledger-unreachable]").await {
                false => Ok(()),
                true => Err("the unreachable banner stayed after the failover".to_owned()),
            }
        })
        .await;
        w.wait_text("[data-testid=ledger-primary]", |t| t == second)
            .await;
        let note = w.text("[data-testid=ledger-primary-note]").await;
        assert!(note.contains(&moved), "Settings says it too: {note}");
        w.screenshot("failover").await;

        // A job submitted in the window now is written to the new primary and runs there.
        w.click("[data-screen=submit]").await;
        w.click("[data-testid=submit]").await;
        w.wait_text("[data-testid=outcomes]", |t| {
            t.contains("Submitted: new job")
        })
        .await;
        let id = submitted_job(&w).await;
        let on_new_primary = format!("SELECT count(*) FROM jobs WHERE id = '{id}'");
        assert_eq!(
            pair.standby().sql("team", &on_new_primary).unwrap().trim(),
            "1"
        );
        let other = Engine::open(&url).await.unwrap();
        assert_eq!(other.primary().unwrap().host, second);
        wait_status(&other, &id, JobStatus::Succeeded).await;

        // Dismissed, the banner goes; Settings still says where the ledger is written.
        w.click("[data-testid=ledger-primary-moved-dismiss]").await;
        assert!(!w.shows("[data-testid=ledger-primary-moved]").await);
        w.click("[data-screen=settings]").await;
        let note = w.text("[data-testid=ledger-primary-note]").await;
        assert!(note.contains(&moved), "{note}");
        other.close().await;
        w.close().await;
    });
}

/// The sandbox at 0.05 USD a request, with `dials`; it honours no Idempotency-Key, so an
/// unknown attempt stays unknown until a person decides.
async fn priced_sandbox(e: &Engine, dials: Value) {
    let config = json!({"name": "sandbox", "kind": "sandbox", "soft_timeout_ms": 1_000,
        "hard_timeout_ms": 60_000, "honours_idempotency_key": false,
        "price": {"currency": "USD", "per_request": "0.05"}, "dials": dials});
    e.add_provider(&config.to_string()).await.unwrap();
}

#[test]
fn the_spend_screen_shows_the_chart_and_the_money_at_risk() {
    run(async {
        let w = Window::open(|e| async move {
            priced_sandbox(&e, json!({"latency_ms": 20, "jitter_ms": 0})).await;
        })
        .await;
        // Three jobs answered at 0.05 USD each: 0.15 USD spent.
        for n in 1..=3 {
            let intent = json!({"route": ["sandbox"], "input": {"invoice": n}});
            let job = submit(&w.engine, &format!("invoice-{n}"), intent).await;
            wait_status(&w.engine, &job.id, JobStatus::Succeeded).await;
        }
        // Then the work is done and the answer dropped: one request's worth at risk.
        priced_sandbox(
            &w.engine,
            json!({"latency_ms": 20, "jitter_ms": 0, "drop_after_processing": 1.0,
                "honour_idempotency_key": false}),
        )
        .await;
        let intent = json!({"route": ["sandbox"], "input": {"invoice": 4}});
        let lost = submit(&w.engine, "invoice-4", intent).await;
        wait_status(&w.engine, &lost.id, JobStatus::Unknown).await;

        w.click("[data-screen=spend]").await;
        w.wait_for("[data-testid=spend-by-day] .recharts-surface .recharts-bar-rectangle")
            .await;
        w.wait_for("[data-testid=spend-by-provider] .recharts-surface")
            .await;
        let at_risk = w
            .wait_text("[data-testid=at-risk-amount]", |t| t == "0.05 USD")
            .await;
        assert_eq!(at_risk, "0.05 USD");
        let spent = w.text("[data-testid=spend-total]").await;
        assert_eq!(spent, "Spent: 0.15 USD");
        let sandbox = w
            .text("[data-testid=spend-by-provider] tr[data-key=sandbox]")
            .await;
        assert!(
            sandbox.contains("0.15 USD") && sandbox.contains("0.05 USD"),
            "{sandbox}"
        );
        w.screenshot("spend").await;

        // The link opens the Jobs list on the unknown jobs: the one whose money is at risk.
        w.click("[data-testid=show-unknown]").await;
        wait_for_row(&w, &lost.id).await;
        w.wait_text("[data-testid=jobs-loaded]", |t| t == "1 job")
            .await;
        assert_eq!(
            w.attr("[data-status=unknown]", "aria-pressed")
                .await
                .as_deref(),
            Some("true")
        );
        // And the job itself says what its attempt has at risk.
        w.click(&format!(".job-row[data-job-id='{}']", lost.id))
            .await;
        let attempt = w.text("[data-testid=attempt-cost]").await;
        assert_eq!(attempt, "0.05 USD at risk");
        let job = w.text("[data-testid=job-cost]").await;
        assert_eq!(job, "0.05 USD at risk");
        w.screenshot("job-cost").await;
        w.close().await;
    });
}

/// What the input `css` holds now, as typed or as the form filled it in.
async fn value_of(w: &Window, css: &str) -> String {
    let field = w.wait_for(css).await;
    field.prop("value").await.unwrap().unwrap_or_default()
}

#[test]
fn a_provider_form_sets_a_price() {
    run(async {
        // A fresh ledger: only the built-in sandbox, without a price.
        let w = Window::open(|_| async {}).await;
        w.click("[data-screen=providers]").await;
        w.click("[data-testid=provider-edit-sandbox]").await;
        let price = [
            ("price_currency", "USD"),
            ("price_per_request", "0.0125"),
            ("price_per_1k_input_tokens", "0.15"),
            ("price_per_1k_output_tokens", "0.60"),
            // An answer priced per output token is bounded by the context window where a job
            // gives no max_tokens: without it, its worst case could not be counted.
            ("context_window", "8192"),
        ];
        for (field, typed) in price {
            w.fill(&format!("[data-testid=provider-{field}]"), typed)
                .await;
        }
        w.screenshot("provider-price").await;
        w.click("[data-testid=provider-save]").await;
        w.wait_text("[data-provider=sandbox]", |t| {
            t.contains(
                "0.0125 USD a request, 0.15 USD per 1k input tokens, 0.60 USD per 1k output tokens",
            )
        })
        .await;

        // The engine holds that price exactly, as decimals, and the context window with it.
        let sandbox = w.engine.provider("sandbox").await.unwrap().config;
        let held = sandbox.price.expect("the sandbox has a price");
        assert_eq!(
            serde_json::to_value(&held).unwrap(),
            json!({"currency": "USD", "per_request": "0.0125",
                "per_1k_input_tokens": "0.15", "per_1k_output_tokens": "0.60"})
        );
        let nanos = [
            held.per_request,
            held.per_1k_input_tokens,
            held.per_1k_output_tokens,
        ]
        .map(|amount| amount.and_then(|a| a.nanos()));
        assert_eq!(
            nanos,
            [Some(12_500_000), Some(150_000_000), Some(600_000_000)]
        );
        assert_eq!(sandbox.context_window, Some(8192));

        // Opened again, the form shows it as it was set.
        w.click("[data-testid=provider-edit-sandbox]").await;
        for (field, typed) in price {
            let shown = value_of(&w, &format!("[data-testid=provider-{field}]")).await;
            assert_eq!(shown, typed, "{field}");
        }
        w.close().await;
    });
}

/// Sent and answered, or kept back by budget `name` until its next period: `Some(true)` for
/// sent, `Some(false)` for kept back, `None` while neither.
fn sent_or_kept_back(detail: &onejob_engine::JobDetail, name: &str) -> Option<bool> {
    let kept = detail
        .events
        .iter()
        .any(|e| e.kind == "budget_reached" && e.detail["budget"] == json!(name));
    match detail.job.status {
        JobStatus::Succeeded => Some(true),
        JobStatus::Queued if kept && detail.job.not_before.is_some() => Some(false),
        _ => None,
    }
}

#[test]
fn a_budget_set_in_the_window_holds_and_shows_its_use() {
    run(async {
        let w = Window::open(|e| async move {
            priced_sandbox(&e, json!({"latency_ms": 20, "jitter_ms": 0})).await;
        })
        .await;
        w.click("[data-screen=spend]").await;
        w.wait_for("[data-testid=budgets-none]").await;
        // Two requests' worth a day at the sandbox, at 0.05 USD a request.
        w.click("[data-testid=budget-add]").await;
        w.fill("[data-testid=budget-name]", "sandbox-a-day").await;
        w.fill("[data-testid=budget-limit]", "0.10").await;
        w.fill("[data-testid=budget-currency]", "USD").await;
        w.pick("[data-testid=budget-period]", "day").await;
        w.pick("[data-testid=budget-provider]", "sandbox").await;
        w.screenshot("budget-form").await;
        w.click("[data-testid=budget-save]").await;
        w.wait_text(
            "[data-budget=sandbox-a-day] [data-testid=budget-use]",
            |t| t == "0.00 / 0.10 USD",
        )
        .await;
        let budgets = w.engine.budgets(None).await.unwrap();
        assert_eq!(budgets.len(), 1, "{budgets:?}");
        let set = &budgets[0];
        assert_eq!(
            (
                set.name.as_str(),
                set.limit.as_str(),
                set.currency.as_str(),
                set.provider.as_deref(),
                set.owner.as_deref(),
                set.period
            ),
            (
                "sandbox-a-day",
                "0.10",
                "USD",
                Some("sandbox"),
                None,
                BudgetPeriod::Day
            )
        );

        // Three jobs: two are sent, and the third is kept back until the next day.
        let mut jobs = Vec::new();
        for n in 1..=3 {
            let intent = json!({"route": ["sandbox"], "input": {"invoice": n}});
            jobs.push(submit(&w.engine, &format!("invoice-{n}"), intent).await.id);
        }
        let outcomes = eventually(|| {
            let (engine, jobs) = (&w.engine, &jobs);
            async move {
                let mut outcomes = Vec::new();
                for id in jobs {
                    let detail = engine.job("local", id).await.unwrap();
                    match sent_or_kept_back(&detail, "sandbox-a-day") {
                        Some(sent) => outcomes.push(sent),
                        None => {
                            return Err(format!(
                                "job {id} is neither sent nor kept back: {detail:?}"
                            ))
                        }
                    }
                }
                Ok(outcomes)
            }
        })
        .await;
        assert_eq!(
            outcomes.iter().filter(|sent| **sent).count(),
            2,
            "{outcomes:?}"
        );

        // The Spend screen shows the budget used up, and the engine holds it so.
        let used = w
            .wait_text(
                "[data-budget=sandbox-a-day] [data-testid=budget-use]",
                |t| t == "0.10 / 0.10 USD",
            )
            .await;
        assert_eq!(used, "0.10 / 0.10 USD");
        let state = w
            .text("[data-budget=sandbox-a-day] [data-testid=budget-state]")
            .await;
        assert!(state.starts_with("reached"), "{state}");
        let scope = w
            .text("[data-budget=sandbox-a-day] [data-testid=budget-scope]")
            .await;
        assert_eq!(scope, "every owner's jobs at sandbox");
        w.wait_text("[data-testid=spend-total]", |t| t == "Spent: 0.10 USD")
            .await;
        let held = w.engine.budgets(None).await.unwrap();
        assert_eq!(held[0].used, "0.10", "{held:?}");
        w.screenshot("budgets").await;
        w.close().await;
    });
}
