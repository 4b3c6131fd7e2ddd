//! A real `onejob serve` process: started on a ledger with a token made by `onejob token
//! create`, its resident memory read from /proc, stopped by SIGTERM.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::OWNER;

type Error = Box<dyn std::error::Error>;

/// The `onejob` binary of this build (the bench profile's, optimised).
const ONEJOB: &str = env!("CARGO_BIN_EXE_onejob");
/// How long the server gets to print where it listens, and to stop.
const PATIENCE: Duration = Duration::from_secs(60);

/// A new token of the benchmark's owner on `ledger`, as a user makes one.
pub async fn create_token(ledger: &str) -> Result<String, Error> {
    let out = Command::new(ONEJOB)
        .args([
            "--db", ledger, "--owner", OWNER, "token", "create", "--name", "bench",
        ])
        .stdin(Stdio::null())
        .output()
        .await?;
    if !out.status.success() {
        return Err(format!(
            "onejob token create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let doc: Value = serde_json::from_slice(&out.stdout)?;
    doc["token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "onejob token create printed no token".into())
}

pub struct Server {
    child: Child,
    pid: u32,
    /// `http://127.0.0.1:PORT`, as the server printed it.
    pub url: String,
}

impl Server {
    /// `onejob serve --no-worker` on `ledger`, on a free port of 127.0.0.1, once it accepts
    /// connections.
    pub async fn start(ledger: &str) -> Result<Server, Error> {
        let mut child = Command::new(ONEJOB)
            .args([
                "--db",
                ledger,
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--no-worker",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let pid = child.id().ok_or("onejob serve ended at once")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .map_err(|_| "onejob serve did not say where it listens")??
            .ok_or("onejob serve ended before it listened")?;
        let doc: Value = serde_json::from_str(&line)?;
        let url = doc["listening"]
            .as_str()
            .ok_or_else(|| format!("onejob serve printed {line}"))?
            .to_owned();
        // What it prints when it stops is read and dropped, so the pipe never fills.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Server { child, pid, url })
    }

    /// The server's resident memory now (`VmRSS`) in MiB.
    pub fn rss_mib(&self) -> Result<f64, Error> {
        self.status_kib("VmRSS").map(|kib| kib / 1024.0)
    }

    /// The most the server has held resident since `reset_peak` (`VmHWM`), in MiB.
    pub fn peak_mib(&self) -> Result<f64, Error> {
        self.status_kib("VmHWM").map(|kib| kib / 1024.0)
    }

    /// Starts the peak over from the resident memory of now (Linux's `clear_refs` 5), so the
    /// peak printed is the one under load, not one of start-up.
    pub fn reset_peak(&self) -> Result<(), Error> {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid), "5")?;
        Ok(())
    }

    fn status_kib(&self, field: &str) -> Result<f64, Error> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| format!("no {field} in /proc/{}/status", self.pid).into())
    }

    /// SIGTERM, as a service manager stops it; killed if it has not ended in time.
    pub async fn stop(mut self) -> Result<(), Error> {
        Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await?;
        match tokio::time::timeout(PATIENCE, self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    return Err(format!("onejob serve stopped with {status}").into());
                }
            }
            Err(_) => {
                self.child.kill().await?;
                return Err("onejob serve did not stop on SIGTERM".into());
            }
        }
        Ok(())
    }
}
