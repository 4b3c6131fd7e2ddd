//! `onejob sandbox`: the sandbox provider in the foreground, its url on the first line, until a
//! signal stops it.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout};
use std::time::Duration;

use common::{parse, Ledger};
use serde_json::Value;

/// Starts `onejob sandbox` on a free port; returns the child, its stdout and the url it printed.
fn start(ledger: &Ledger, dials: &str) -> (Child, BufReader<ChildStdout>, String) {
    let mut child = ledger.spawn(&["sandbox", "--listen", "127.0.0.1:0", "--dials", dials]);
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the first line");
    let first = parse(&line);
    let url = first["sandbox"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no url in {line:?}"))
        .to_owned();
    (child, stdout, url)
}

/// One request over a bare connection; the whole response as text.
fn post(url: &str, body: &str) -> String {
    let addr = url.strip_prefix("http://").expect("an http url");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let request = format!(
        "POST /jobs HTTP/1.1\r\nHost: {addr}\r\nIdempotency-Key: cli-1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("the response");
    response
}

/// Sends a signal by name and waits for the child; returns the rest of its stdout and its exit code.
fn signal(mut child: Child, mut stdout: BufReader<ChildStdout>, name: &str) -> (Value, i32) {
    let sent = std::process::Command::new("kill")
        .args([format!("-{name}"), child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill -{name}");
    let mut rest = String::new();
    stdout
        .read_to_string(&mut rest)
        .expect("the rest of stdout");
    let status = child.wait().expect("the sandbox exits");
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        err.read_to_string(&mut stderr).expect("stderr");
    }
    assert!(stderr.is_empty(), "stderr: {stderr}");
    (parse(&rest), status.code().unwrap_or(-1))
}

#[test]
fn the_sandbox_prints_its_url_answers_and_stops_on_sigterm() {
    let ledger = Ledger::empty();
    let (child, stdout, url) = start(&ledger, r#"{"latency_ms": 0, "jitter_ms": 0}"#);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(!url.ends_with(":0"), "the chosen port is printed: {url}");

    let response = post(&url, r#"{"hello": "sandbox"}"#);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("x-request-id: sbx-1"),
        "{response}"
    );
    let body = response.split("\r\n\r\n").nth(1).expect("a body");
    let answer: Value = serde_json::from_str(body).expect("JSON answer");
    assert_eq!(answer["echo"]["hello"], "sandbox");

    let (last, code) = signal(child, stdout, "TERM");
    assert_eq!(code, 0);
    assert_eq!(last["sandbox"]["url"], url.as_str());
    assert_eq!(last["sandbox"]["stopped"], true);
    assert_eq!(last["sandbox"]["requests"], 1);
}

#[test]
fn the_sandbox_stops_on_sigint_too() {
    let ledger = Ledger::empty();
    let dials = ledger.home().join("dials.json");
    std::fs::write(&dials, r#"{"server_error": 1.0, "latency_ms": 0}"#).expect("write dials");
    let (child, stdout, url) = start(&ledger, &format!("@{}", dials.display()));
    let response = post(&url, "{}");
    assert!(
        response.starts_with("HTTP/1.1 500"),
        "the dials were read: {response}"
    );
    let (last, code) = signal(child, stdout, "INT");
    assert_eq!(code, 0);
    assert_eq!(last["sandbox"]["requests"], 1);
}

#[test]
fn the_sandbox_refuses_a_non_loopback_address() {
    let ledger = Ledger::empty();
    let error = ledger.run(&["sandbox", "--listen", "0.0.0.0:0"]).err(2);
    assert_eq!(error["code"], "invalid_input");
    assert_eq!(error["details"]["field"], "listen");
}

#[test]
fn the_sandbox_refuses_bad_dials_naming_the_dial() {
    let ledger = Ledger::empty();
    let error = ledger
        .run(&[
            "sandbox",
            "--listen",
            "127.0.0.1:0",
            "--dials",
            r#"{"throttle": 1.5}"#,
        ])
        .err(2);
    assert_eq!(error["details"]["field"], "dials.throttle");
    let error = ledger
        .run(&["sandbox", "--listen", "not-an-address"])
        .err(2);
    assert_eq!(error["details"]["field"], "listen");
}
