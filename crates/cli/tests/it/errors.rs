//! Errors as SPEC §11 prints them: `{"error": {code, message, details}}` on stderr and the
//! code's exit status; help on stdout with exit 0.

use crate::common;

use common::{finish, id, intent, Ledger};

#[test]
fn invalid_input_names_the_field_and_exits_2() {
    let ledger = Ledger::new();
    let cases: [(&str, String, &str); 4] = [
        ("", intent("1"), "idempotency_key"),
        ("k", "{not json".to_owned(), "intent"),
        (
            "k",
            r#"{"route":["nowhere"],"input":1}"#.to_owned(),
            "intent.route.0",
        ),
        (
            "k",
            format!("{}{}", "[".repeat(100), "]".repeat(100)),
            "intent",
        ),
    ];
    for (key, intent, field) in cases {
        let error = ledger
            .run(&["submit", "--key", key, "--intent", &intent])
            .err(2);
        assert_eq!(error["code"], "invalid_input", "{intent}");
        assert_eq!(error["details"]["field"], field, "{intent}");
        let message = error["message"].as_str().expect("message");
        assert!(message.contains(field), "{message}");
    }
    let error = ledger
        .run(&[
            "submit",
            "--key",
            "k",
            "--intent",
            "1",
            "--owner",
            "not an owner",
        ])
        .err(2);
    assert_eq!(error["details"]["field"], "owner_id");
}

#[test]
fn not_found_for_unknown_ids_and_other_owners_exits_5() {
    let ledger = Ledger::new();
    let unknown = uuid::Uuid::now_v7().to_string();
    for args in [
        vec!["job", unknown.as_str()],
        vec!["cancel", unknown.as_str()],
        vec!["retry", unknown.as_str()],
        vec!["resolve", unknown.as_str(), "--as", "failed"],
    ] {
        let error = ledger.run(&args).err(5);
        assert_eq!(error["code"], "not_found", "{args:?}");
        assert_eq!(error["details"]["id"], unknown.as_str(), "{args:?}");
    }

    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let attempt = ledger.retry(&job);
    let error = ledger.run(&["job", &job, "--owner", "other"]).err(5);
    assert_eq!(error["code"], "not_found");
    assert_eq!(error["details"]["entity"], "job");
    let error = ledger
        .run(&["resolve", &attempt, "--as", "failed", "--owner", "other"])
        .err(5);
    assert_eq!(error["details"]["entity"], "attempt");
    // The refusals changed nothing.
    let detail = ledger.run(&["job", &job]).ok();
    assert_eq!(detail["attempts"][0]["state"], "pending");
}

#[test]
fn cancel_twice_is_an_invalid_transition() {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let cancelled = ledger.run(&["cancel", &job]).ok();
    assert_eq!(cancelled["job"]["status"], "cancelled");
    assert_eq!(cancelled["job"]["version"], 1);

    let error = ledger.run(&["cancel", &job]).err(4);
    assert_eq!(error["code"], "invalid_transition");
    assert_eq!(error["details"]["entity"], "job");
    assert_eq!(error["details"]["from"], "cancelled");
    let error = ledger.run(&["retry", &job]).err(4);
    assert_eq!(error["code"], "invalid_transition");
}

#[test]
fn retry_while_an_attempt_is_open_is_blocked() {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let first = ledger.run(&["retry", &job]).ok();
    assert_eq!(first["job"]["status"], "running");
    assert_eq!(first["attempt"]["state"], "pending");
    assert_eq!(first["attempt"]["provider"], "primary");
    assert_eq!(first["attempt"]["number"], 1);
    let attempt = id(&first["attempt"]);

    let error = ledger.run(&["retry", &job, "--provider", "primary"]).err(4);
    assert_eq!(error["code"], "attempt_blocked");
    assert_eq!(error["details"]["attempt_id"], attempt.as_str());
    assert_eq!(error["details"]["job_id"], job.as_str());
    assert_eq!(error["details"]["state"], "pending");

    // Naming the provider explicitly does not get around it either.
    let error = ledger.run(&["retry", &job, "--provider", "primary"]).err(4);
    assert_eq!(error["details"]["attempt_id"], attempt.as_str());

    let detail = ledger.run(&["job", &job]).ok();
    assert_eq!(detail["attempts"].as_array().map(Vec::len), Some(1));
}

/// `retry --key`: a retry repeated after a lost answer answers the attempt the first one
/// started, `"replayed": true`, and starts nothing; another provider under the key is a
/// conflict (exit 3), and a bad key is named.
#[test]
fn a_retry_repeated_with_its_key_starts_nothing() {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let first = ledger.run(&["retry", &job, "--key", "again"]).ok();
    assert_eq!(first["replayed"], false, "{first}");
    let attempt = id(&first["attempt"]);
    let again = ledger.run(&["retry", &job, "--key", "again"]).ok();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(again["attempt"]["id"], attempt.as_str(), "{again}");
    let detail = ledger.run(&["job", &job]).ok();
    assert_eq!(detail["attempts"].as_array().map(Vec::len), Some(1));

    let error = ledger
        .run(&["retry", &job, "--key", "again", "--provider", "fallback"])
        .err(3);
    assert_eq!(error["code"], "idempotency_conflict");
    assert_eq!(error["details"]["existing_job_id"], job.as_str());
    let error = ledger.run(&["retry", &job, "--key", ""]).err(2);
    assert_eq!(error["details"]["field"], "idempotency_key");
}

#[test]
fn retry_on_an_unknown_provider_names_it() {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let error = ledger.run(&["retry", &job, "--provider", "nowhere"]).err(2);
    assert_eq!(error["details"]["field"], "provider");
}

#[test]
fn help_exits_0_for_every_command() {
    let ledger = Ledger::empty();
    let commands: [&[&str]; 15] = [
        &[],
        &["submit"],
        &["job"],
        &["jobs"],
        &["retry"],
        &["resolve"],
        &["cancel"],
        &["provider"],
        &["provider", "add"],
        &["provider", "list"],
        &["provider", "remove"],
        &["reconcile"],
        &["worker"],
        &["sandbox"],
        &["doctor"],
    ];
    for command in commands {
        for flag in ["--help", "-h"] {
            let mut args = command.to_vec();
            args.push(flag);
            let run = ledger.run(&args);
            assert_eq!(run.code, 0, "{args:?}: {run:?}");
            assert!(run.stdout.contains("Usage: onejob"), "{args:?}: {run:?}");
            assert!(run.stderr.is_empty(), "{args:?}: {run:?}");
        }
    }
    let run = ledger.run(&["help", "resolve"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("--retry-on"), "{run:?}");
    let run = ledger.run(&["--help"]);
    for code in [
        "10 when it failed",
        "11 when",
        "12 when --timeout-s",
        "`doctor` exits 14",
    ] {
        assert!(run.stdout.contains(code), "{code}: {run:?}");
    }
    let run = ledger.run(&["--version"]);
    assert_eq!(run.code, 0, "{run:?}");
    // Help never opens the ledger.
    assert!(!ledger.exists());
}

#[test]
fn usage_errors_are_invalid_input_json() {
    let ledger = Ledger::new();
    let cases: [(&[&str], &str); 10] = [
        (&["jobs", "--frobnicate"], "arguments"),
        (&["frobnicate"], "arguments"),
        (&[], "arguments"),
        (&["submit", "--intent", "{}"], "key"),
        (&["job"], "id"),
        (&["resolve", "some-attempt", "--as", "maybe"], "as"),
        (&["jobs", "--limit", "many"], "limit"),
        (&["reconcile"], "attempt_id"),
        (&["worker", "--twice"], "arguments"),
        (
            &[
                "submit",
                "--key",
                "k",
                "--intent",
                "{}",
                "--wait",
                "--timeout-s",
                "0",
            ],
            "timeout_s",
        ),
    ];
    for (args, field) in cases {
        let error = ledger.run(args).err(2);
        assert_eq!(error["code"], "invalid_input", "{args:?}");
        assert_eq!(error["details"]["field"], field, "{args:?}");
        let message = error["message"].as_str().expect("message");
        assert!(!message.contains('\n'), "{message:?}");
        assert!(!message.contains("Usage:"), "{message:?}");
    }
}

#[test]
fn a_url_for_the_database_is_refused_without_repeating_its_password_or_making_a_folder() {
    let ledger = Ledger::empty();
    // Nobody listens on this port: a PostgreSQL URL is tried, and fails as unreachable.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a port")
        .local_addr()
        .expect("addr")
        .port();
    let cases = [
        (
            format!("postgres://team:hunter2-secret@127.0.0.1:{free}/ledger"),
            (1, "storage", None, "is unreachable"),
        ),
        (
            format!("postgresql://team:hunter2-secret@127.0.0.1:{free}/ledger"),
            (1, "storage", None, "is unreachable"),
        ),
        (
            "mysql://team:hunter2-secret@127.0.0.1/ledger".to_owned(),
            (2, "invalid_input", Some("db"), "not a ledger"),
        ),
    ];
    for (url, (exit, code, field, says)) in cases {
        let run = finish(
            ledger
                .command(&["--db", &url, "jobs"])
                .current_dir(ledger.home())
                .output()
                .expect("run onejob"),
        );
        let error = run.err(exit);
        assert_eq!(error["code"], code, "{url}");
        if let Some(field) = field {
            assert_eq!(error["details"]["field"], field, "{url}");
        }
        let message = error["message"].as_str().expect("a message");
        assert!(message.contains(says), "{url}: {message}");
        for run_output in [&run.stdout, &run.stderr] {
            assert!(!run_output.contains("hunter2"), "{url}: {run_output}");
        }
    }
    // Nothing named after a scheme appeared where the command ran.
    let made: Vec<_> = std::fs::read_dir(ledger.home())
        .expect("the temp dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(':'))
        .collect();
    assert!(made.is_empty(), "{made:?}");
}
