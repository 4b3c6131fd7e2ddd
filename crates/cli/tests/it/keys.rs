//! API keys in the OS keyring through the real binary: each test runs its own Secret Service
//! (gnome-keyring on a private D-Bus) and a real provider on 127.0.0.1 that records what it
//! was sent. The key must reach the provider's header and nothing else: no output, no
//! database file. No test reaches the keyring of the desktop the tests run on.

use crate::common;

use std::io::Write;
use std::process::Stdio;

use common::{finish, parse, Ledger, Run};
use onejob_engine::testing::SERVICE;
use onejob_testkit::raw_http::{header, json_response};
use onejob_testkit::{DesktopSession, RawServer, SecretService};
use serde_json::{json, Value};

/// A key no test output or file may contain.
const KEY: &str = "sk-keyring-planted-7d41c0ffee";
/// A variable nobody sets, named by providers whose key is therefore required.
const UNSET_VAR: &str = "ONEJOB_TEST_KEYS_NEVER_SET";

/// A provider on loopback that answers every request `200` with a Chat Completions envelope
/// (the whole of it is an `http` provider's result) and keeps each request.
fn recorder() -> RawServer {
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "{\"ok\":true}"}}]})
    .to_string();
    RawServer::start(move |_| json_response("200 OK", &body)).expect("a loopback server")
}

/// The `authorization` header of every request `server` received, in order.
fn authorizations(server: &RawServer) -> Vec<Option<String>> {
    server
        .requests()
        .iter()
        .map(|request| header(request, "authorization"))
        .collect()
}

/// A ledger, a Secret Service and a recording provider, with every run and its output kept so
/// the test can show at the end that the key appears in none of them.
struct World {
    ledger: Ledger,
    secrets: SecretService,
    provider: RawServer,
    runs: Vec<Run>,
}

impl World {
    fn new() -> World {
        World {
            ledger: Ledger::empty(),
            secrets: SecretService::start()
                .expect("a Secret Service (scripts/setup installs gnome-keyring and dbus)"),
            provider: recorder(),
            runs: Vec::new(),
        }
    }

    /// Runs `onejob` on this world's ledger and Secret Service with `stdin` as its input.
    fn run_with(&mut self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Run {
        let mut child = self
            .ledger
            .command(args)
            .envs(self.secrets.env())
            .env_remove(UNSET_VAR)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn onejob");
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(stdin.as_bytes()).expect("stdin written");
        drop(input);
        let run = finish(child.wait_with_output().expect("onejob ran"));
        self.runs.push(Run {
            code: run.code,
            stdout: run.stdout.clone(),
            stderr: run.stderr.clone(),
        });
        run
    }

    fn run(&mut self, args: &[&str]) -> Run {
        self.run_with(args, "", &[])
    }

    /// Adds a provider of `kind` at the recorder; `extra` fields are merged in.
    fn add_provider(&mut self, name: &str, kind: &str, extra: Value) {
        let base_url = match kind {
            "openai" => format!("{}/v1", self.provider.url),
            _ => format!("{}/charge", self.provider.url),
        };
        let mut config = json!({"name": name, "kind": kind, "base_url": base_url,
            "model": "m", "soft_timeout_ms": 5000, "hard_timeout_ms": 10000,
            "honours_idempotency_key": false});
        if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
            config.extend(extra);
        }
        self.run(&["provider", "add", "--json", &config.to_string()])
            .ok();
    }

    fn set_key(&mut self, name: &str, stdin: &str) -> Value {
        self.run_with(&["provider", "key", "set", name], stdin, &[])
            .ok()
    }

    /// The `key` status `provider list` shows for `name`.
    fn listed_key(&mut self, name: &str, env: &[(&str, &str)]) -> Value {
        let list = self.run_with(&["provider", "list"], "", env).ok();
        let providers = list["providers"].as_array().expect("providers").clone();
        let provider = providers
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {list}"));
        provider["key"].clone()
    }

    /// Submits one job to `provider` and waits for it; the run and the job's detail.
    fn submit_and_wait(&mut self, key: &str, provider: &str, env: &[(&str, &str)]) -> (Run, Value) {
        // Chat Completions messages: what an `openai` job without a contract sends, and a
        // body like any other for an `http` one.
        let input = json!({"messages": [{"role": "user", "content": "pay 1"}]});
        let intent = json!({"route": [provider], "input": input}).to_string();
        let args = [
            "submit",
            "--key",
            key,
            "--intent",
            &intent,
            "--wait",
            "--timeout-s",
            "30",
        ];
        let run = self.run_with(&args, "", env);
        let job = parse(&run.stdout)["job"]["id"]
            .as_str()
            .expect("job id")
            .to_owned();
        let detail = self.run(&["job", &job]).ok();
        (run, detail)
    }

    /// The key appears in no output of any run and in nothing the ledger wrote: no file of it
    /// (db, -wal, -shm), or no row of its database.
    fn assert_key_nowhere(&self, key: &str) {
        for run in &self.runs {
            assert!(
                !run.stdout.contains(key) && !run.stderr.contains(key),
                "the key leaked into {run:?}"
            );
        }
        let mut files = 0;
        for (name, bytes) in onejob_testkit::ledger_contents(&self.ledger.db) {
            assert!(
                !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                "the key is in {name}"
            );
            files += 1;
        }
        assert!(files >= 1, "no ledger file was looked at");
    }
}

#[test]
fn a_key_set_on_stdin_is_listed_as_keyring_and_sent_only_to_the_provider() {
    let mut world = World::new();
    world.add_provider("paid", "http", json!({"api_key_env": UNSET_VAR}));
    assert_eq!(
        world.listed_key("paid", &[]),
        json!({"source": "not_set", "required": true})
    );

    let set = world.set_key("paid", &format!("{KEY}\n"));
    assert_eq!(
        set,
        json!({"provider": "paid", "key": {"source": "keyring"}})
    );
    assert_eq!(world.listed_key("paid", &[]), json!({"source": "keyring"}));

    let (run, detail) = world.submit_and_wait("k1", "paid", &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(detail["job"]["status"], "succeeded", "{detail}");
    // One trailing newline was dropped: the header carries the key exactly.
    assert_eq!(
        authorizations(&world.provider),
        vec![Some(format!("Bearer {KEY}"))]
    );
    world.assert_key_nowhere(KEY);
}

#[test]
fn a_cleared_key_fails_the_attempt_misconfigured_before_anything_is_sent() {
    let mut world = World::new();
    world.add_provider("paid", "http", json!({"api_key_env": UNSET_VAR}));
    world.set_key("paid", &format!("{KEY}\r\n"));

    let cleared = world.run(&["provider", "key", "clear", "paid"]).ok();
    assert_eq!(
        cleared,
        json!({"provider": "paid", "key": {"source": "not_set", "required": true}})
    );
    // Clearing again is already done.
    world.run(&["provider", "key", "clear", "paid"]).ok();

    let (run, detail) = world.submit_and_wait("k1", "paid", &[]);
    assert_eq!(run.code, 10, "{run:?}");
    assert_eq!(detail["job"]["status"], "failed", "{detail}");
    let attempts = detail["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "{detail}");
    assert_eq!(attempts[0]["state"], "failed", "{detail}");
    assert_eq!(attempts[0]["sent_at"], Value::Null, "{detail}");
    assert_eq!(attempts[0]["error"]["kind"], "misconfigured", "{detail}");
    let message = attempts[0]["error"]["message"].as_str().expect("message");
    for how in [
        "onejob provider key set paid",
        "standard input",
        "Providers screen",
        &format!("export {UNSET_VAR}"),
    ] {
        assert!(message.contains(how), "{how:?} missing from {message:?}");
    }
    assert!(world.provider.requests().is_empty(), "something was sent");
    world.assert_key_nowhere(KEY);
}

#[test]
fn a_key_given_as_an_argument_is_refused_and_repeated_nowhere() {
    let mut world = World::new();
    world.add_provider("paid", "openai", json!({}));
    for args in [
        vec!["provider", "key", "set", "paid", KEY],
        vec!["provider", "key", "set", "paid", "--", KEY],
        vec!["provider", "key", "set", "paid", &format!("--{KEY}")],
        vec![
            "provider",
            "key",
            "set",
            "paid",
            &format!("-{KEY}"),
            "--db",
            "x",
        ],
    ] {
        let refused = world.run_with(&args, "", &[]);
        let error = refused.err(2);
        assert_eq!(error["code"], "invalid_input", "{args:?}: {error}");
        assert_eq!(error["details"]["field"], "key", "{args:?}: {error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("standard input")),
            "{error}"
        );
    }
    // Bad keys on stdin are refused, in words that do not repeat them.
    for stdin in [
        "",
        "  \n",
        &format!("{KEY}\nsecond line\n"),
        &format!("{KEY}\u{1b}"),
    ] {
        let error = world
            .run_with(&["provider", "key", "set", "paid"], stdin, &[])
            .err(2);
        assert_eq!(error["details"]["field"], "key", "{error}");
    }
    let long = format!("{KEY}{}", "k".repeat(5000));
    let error = world
        .run_with(&["provider", "key", "set", "paid"], &long, &[])
        .err(2);
    assert_eq!(error["details"]["field"], "key", "{error}");
    // Nothing was stored by any of them; the openai provider without api_key_env needs none.
    assert_eq!(
        world.listed_key("paid", &[]),
        json!({"source": "not_set", "required": false})
    );
    world.assert_key_nowhere(KEY);
}

#[test]
fn a_key_for_an_unknown_provider_is_not_found() {
    let mut world = World::new();
    let set = world.run_with(
        &["provider", "key", "set", "nobody"],
        &format!("{KEY}\n"),
        &[],
    );
    let error = set.err(5);
    assert_eq!(
        error["details"],
        json!({"entity": "provider", "id": "nobody"})
    );
    let clear = world.run(&["provider", "key", "clear", "nobody"]);
    assert_eq!(clear.err(5)["code"], "not_found");
    world.assert_key_nowhere(KEY);
}

#[test]
fn the_environment_variable_wins_over_the_keyring() {
    const VAR: &str = "ONEJOB_TEST_KEYS_ENV_WINS";
    const ENV_KEY: &str = "sk-from-the-environment-5150";
    let mut world = World::new();
    world.add_provider("llm", "openai", json!({"api_key_env": VAR}));
    world.set_key("llm", KEY);
    let env = [(VAR, ENV_KEY)];
    assert_eq!(
        world.listed_key("llm", &env),
        json!({"source": "env", "var": VAR})
    );
    assert_eq!(world.listed_key("llm", &[]), json!({"source": "keyring"}));

    let (run, detail) = world.submit_and_wait("k1", "llm", &env);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(detail["job"]["result"], json!({"ok": true}), "{detail}");
    let (run, _) = world.submit_and_wait("k2", "llm", &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        authorizations(&world.provider),
        vec![
            Some(format!("Bearer {ENV_KEY}")),
            Some(format!("Bearer {KEY}"))
        ]
    );
    world.assert_key_nowhere(KEY);
    world.assert_key_nowhere(ENV_KEY);
}

#[test]
fn removing_a_provider_removes_its_key() {
    let mut world = World::new();
    world.add_provider("paid", "http", json!({}));
    world.set_key("paid", KEY);
    assert_eq!(world.listed_key("paid", &[]), json!({"source": "keyring"}));
    let removed = world.run(&["provider", "remove", "paid"]);
    assert_eq!(removed.ok()["removed"], json!("paid"));
    // A provider of the same name added later does not inherit the key.
    world.add_provider("paid", "http", json!({}));
    assert_eq!(
        world.listed_key("paid", &[]),
        json!({"source": "not_set", "required": false})
    );
    let (run, _) = world.submit_and_wait("k1", "paid", &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(authorizations(&world.provider), vec![None]);
    world.assert_key_nowhere(KEY);
}

/// A key in the keyring of the desktop the tests run on, which no test may touch.
const PERSONS_KEY: &str = "sk-a-persons-own-key-5e2a";

#[test]
fn a_test_run_in_a_desktop_session_never_touches_its_keyring() {
    if DesktopSession::inside() {
        // What the command line's tests do: `primary` added, its key cleared, then removed.
        let ledger = Ledger::new();
        let cleared = ledger.run(&["provider", "key", "clear", "primary"]);
        assert!(
            cleared.code != 0 && cleared.stderr.contains("storage"),
            "no keyring is reachable: {cleared:?}"
        );
        let removed = ledger.run(&["provider", "remove", "primary"]);
        assert_eq!(removed.ok()["removed"], json!("primary"));
        return;
    }
    let (desktop, kept) = DesktopSession::run_beside_key(
        // Its path in this binary, as `--exact` takes it.
        "keys::a_test_run_in_a_desktop_session_never_touches_its_keyring",
        SERVICE,
        "primary",
        PERSONS_KEY,
    )
    .expect("the test passes in a desktop session holding the person's key");
    assert_eq!(kept.as_deref(), Some(PERSONS_KEY));

    // The person's own `onejob` does reach it there: the test would have seen a leak.
    let ledger = Ledger::new();
    let removed = finish(
        ledger
            .command(&["provider", "remove", "primary"])
            .envs(desktop.env())
            .output()
            .expect("onejob ran"),
    );
    assert_eq!(removed.ok()["removed"], json!("primary"));
    assert_eq!(desktop.lookup(SERVICE, "primary").expect("looked up"), None);
}
