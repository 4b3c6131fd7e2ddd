//! A person's decisions through `resolve`: verdicts, `--retry-on`, and the moves SPEC §4 refuses.

mod common;

use common::{id, intent, Ledger};

#[test]
fn resolve_abandoned_with_retry_on_then_fail_the_next_attempt() {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let first = ledger.retry(&job);

    let reply = ledger
        .run(&[
            "resolve",
            &first,
            "--as",
            "abandoned",
            "--retry-on",
            "primary",
            "--note",
            "the provider is silent",
        ])
        .ok();
    assert_eq!(reply["job"]["id"], job.as_str());
    assert_eq!(reply["job"]["status"], "running");
    assert_eq!(reply["attempt"]["id"], first.as_str());
    assert_eq!(reply["attempt"]["state"], "abandoned");
    let next = &reply["next_attempt"];
    assert_eq!(next["state"], "pending");
    assert_eq!(next["number"], 2);
    assert_eq!(next["provider"], "primary");
    let second = id(next);

    // A pending attempt was never sent: "it went through" is not a move it can make.
    let error = ledger
        .run(&[
            "resolve",
            &second,
            "--as",
            "succeeded",
            "--result",
            r#"{"ok":true}"#,
        ])
        .err(4);
    assert_eq!(error["code"], "invalid_transition");
    assert_eq!(error["details"]["id"], second.as_str());
    assert_eq!(error["details"]["from"], "pending");
    assert_eq!(error["details"]["to"], "succeeded");

    let reply = ledger.run(&["resolve", &second, "--as", "failed"]).ok();
    assert_eq!(reply["attempt"]["state"], "failed");
    assert_eq!(reply["job"]["status"], "queued");
    assert!(reply.get("next_attempt").is_none(), "{reply}");

    // Both verdicts are in the history, the note with them.
    let detail = ledger.run(&["job", &job]).ok();
    let states: Vec<_> = detail["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["state"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(states, ["abandoned", "failed"]);
    let events = detail["events"].as_array().expect("events");
    let resolved: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "resolved_by_person")
        .collect();
    assert_eq!(resolved.len(), 2, "{events:?}");
    assert_eq!(resolved[0]["detail"]["note"], "the provider is silent");
    assert_eq!(resolved[0]["actor"], "user");

    // A finished attempt cannot be resolved again.
    let error = ledger
        .run(&["resolve", &second, "--as", "abandoned"])
        .err(4);
    assert_eq!(error["code"], "invalid_transition");
}

#[test]
fn resolve_refuses_bad_arguments_before_touching_the_attempt() {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let attempt = ledger.retry(&job);

    let error = ledger
        .run(&[
            "resolve",
            &attempt,
            "--as",
            "succeeded",
            "--result",
            "{ok: true}",
        ])
        .err(2);
    assert_eq!(error["details"]["field"], "result");
    let missing = format!("@{}", ledger.home().join("nope.json").display());
    let error = ledger
        .run(&[
            "resolve",
            &attempt,
            "--as",
            "succeeded",
            "--result",
            &missing,
        ])
        .err(2);
    assert_eq!(error["details"]["field"], "result");
    let error = ledger
        .run(&["resolve", &attempt, "--as", "failed", "--result", "1"])
        .err(2);
    assert_eq!(error["details"]["field"], "result");
    let error = ledger.run(&["resolve", &attempt, "--as", "perhaps"]).err(2);
    assert_eq!(error["details"]["field"], "as");
    let error = ledger.run(&["resolve", &attempt]).err(2);
    assert_eq!(error["details"]["field"], "as");

    let detail = ledger.run(&["job", &job]).ok();
    assert_eq!(detail["attempts"][0]["state"], "pending");
}

#[test]
fn cancel_abandons_a_pending_attempt_that_was_never_sent() {
    let ledger = Ledger::new();
    let job = id(&ledger.submit("k", &intent("1"))["job"]);
    let attempt = ledger.retry(&job);
    let reply = ledger.run(&["cancel", &job]).ok();
    assert_eq!(reply["job"]["status"], "cancelled");
    assert_eq!(reply["job"]["error"]["code"], "cancelled");
    let detail = ledger.run(&["job", &job]).ok();
    assert_eq!(detail["attempts"][0]["id"], attempt.as_str());
    assert_eq!(detail["attempts"][0]["state"], "abandoned");
    assert!(detail["events"]
        .as_array()
        .expect("events")
        .iter()
        .any(|e| e["kind"] == "attempt_abandoned" && e["detail"]["never_sent"] == true));
}
