//! `GET /v1/events` of `onejob serve`, read with curl: a job submitted by another process
//! reaches an open stream, and a client that reconnects with `Last-Event-ID` gets exactly
//! what it missed, and only its owner's events.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::serve::{token, Server};
use common::sse::{Sent, Stream};
use common::{id, intent, Ledger};

fn is<'a>(kind: &'a str, key: &'a str) -> impl Fn(&Sent) -> bool + 'a {
    move |s| s.data["kind"] == kind && s.data["detail"]["idempotency_key"] == key
}

#[test]
fn a_job_submitted_by_the_cli_reaches_an_open_stream_and_a_reconnect_gets_what_it_missed() {
    let ledger = Ledger::new();
    let token = token(&ledger, "local");
    // No worker: the only events are the ones this test makes.
    let mut server = Server::start(&ledger, &["--no-worker"]);
    let url = server.url.clone();

    let stream = Stream::open(&url, &token, None);
    let first = ledger.submit("first", &intent(r#"{"t":"first"}"#));
    let seen = stream.until(is("submitted", "first"));
    assert_eq!(seen.len(), 1, "a new stream starts at the end: {seen:#?}");
    assert_eq!(seen[0].data["job_id"], first["job"]["id"]);
    let resume_at = seen[0].id.clone();
    drop(stream);

    // Missed while no stream was open: another owner's job, then two of this owner's.
    let theirs = ledger
        .command(&[
            "--owner",
            "someone-else",
            "submit",
            "--key",
            "theirs",
            "--intent",
            &intent(r#"{"t":"x"}"#),
        ])
        .output()
        .expect("submit");
    assert!(theirs.status.success());
    let first_id = id(&first["job"]);
    ledger.run(&["cancel", &first_id]).ok();
    ledger.submit("second", &intent(r#"{"t":"second"}"#));

    let again = Stream::open(&url, &token, Some(&resume_at));
    let missed = again.until(is("submitted", "second"));
    let kinds: Vec<(String, String)> = missed
        .iter()
        .map(|s| {
            let key = s.data["detail"]["idempotency_key"].as_str().unwrap_or("");
            (
                s.data["kind"].as_str().unwrap_or("").to_owned(),
                key.to_owned(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("job_cancelled".to_owned(), String::new()),
            ("submitted".to_owned(), "second".to_owned())
        ],
        "exactly what was missed, in order, only this owner's: {missed:#?}"
    );
    assert!(missed.iter().all(|s| s.id != resume_at));

    // A malformed position is refused before any stream starts.
    let refused = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("{url}/v1/events"),
        ])
        .args([
            "-H",
            &format!("Authorization: Bearer {token}"),
            "-H",
            "Last-Event-ID: nope",
        ])
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&refused.stdout), "400");

    let stopped = server.terminate(Duration::from_secs(30));
    assert_eq!(stopped.code, 0, "{stopped:?}");
}
