//! `with-postgres` gives the command it runs a live server in `ONEJOB_TEST_POSTGRES`, passes its
//! exit code on, and leaves nothing running or on disk afterwards, whatever the command did.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Runs `with-postgres bash -c script`.
fn with_postgres(script: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_with-postgres"))
        .args(["bash", "-c", script])
        .env_remove("ONEJOB_TEST_POSTGRES")
        .output()
        .expect("with-postgres runs")
}

/// The folder with-postgres said the cluster's data is in.
fn data_dir(stderr: &str) -> PathBuf {
    let line = stderr
        .lines()
        .find(|line| line.starts_with("with-postgres: a throwaway PostgreSQL at "))
        .unwrap_or_else(|| panic!("no line naming the server: {stderr}"));
    let after = line.split("(data in ").nth(1).expect("the data folder");
    PathBuf::from(after.split(')').next().expect("the data folder"))
}

#[test]
fn the_command_gets_a_live_server_and_its_code_is_passed_on_after_the_cluster_is_gone() {
    // The command sees the URL, reaches the server on it, and fails.
    let script = r#"
        set -e
        echo "url=$ONEJOB_TEST_POSTGRES"
        port="${ONEJOB_TEST_POSTGRES##*:}"
        exec 3<>"/dev/tcp/127.0.0.1/$port"
        echo "reached $port"
        exit 3
    "#;
    let out = with_postgres(script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    let url = stdout
        .lines()
        .find_map(|line| line.strip_prefix("url="))
        .unwrap_or_else(|| panic!("no URL: {stdout}"));
    assert!(url.starts_with("postgres://onejob@127.0.0.1:"), "{url}");
    let port: u16 = url.rsplit(':').next().expect("port").parse().expect("port");
    assert!(stdout.contains(&format!("reached {port}")), "{stdout}");
    assert!(stderr.contains(url), "the line names the server: {stderr}");

    // Gone: the port refuses, the folder is removed.
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    let dir = data_dir(&stderr);
    assert!(!dir.exists(), "{dir:?} is left behind");
}

#[test]
fn a_terminated_run_ends_its_command_and_stops_the_cluster() {
    let mut run = Command::new(env!("CARGO_BIN_EXE_with-postgres"))
        .args(["sleep", "600"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("with-postgres runs");
    let mut stderr = BufReader::new(run.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr
        .read_line(&mut line)
        .expect("the line naming the server");
    let dir = data_dir(&line);
    assert!(dir.exists(), "{line}");
    let killed = Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = run.wait().expect("with-postgres ends");
    // The command was killed (128 + SIGKILL), and only then was the cluster stopped.
    assert_eq!(status.code(), Some(128 + 9), "{status}");
    assert!(!dir.exists(), "{dir:?} is left behind");
}

#[test]
fn a_command_that_cannot_run_is_127_and_the_cluster_still_stops() {
    let out = Command::new(env!("CARGO_BIN_EXE_with-postgres"))
        .arg("/nonexistent/onejob-command")
        .output()
        .expect("with-postgres runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{stderr}");
    assert!(!data_dir(&stderr).exists());
}

#[test]
fn without_a_command_it_says_how_to_use_it_and_starts_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_with-postgres"))
        .output()
        .expect("with-postgres runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("usage: with-postgres"), "{stderr}");
}
