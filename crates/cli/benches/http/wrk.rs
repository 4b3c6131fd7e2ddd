//! Load from many keep-alive connections: Debian's `wrk` with `post.lua`, which makes each
//! request's key (fresh per request, or one for all) and prints what is read here.

use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::process::Command;

type Error = Box<dyn std::error::Error>;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/http/post.lua");

/// What one wrk run did, as `post.lua` reports it.
#[derive(Deserialize, Clone)]
pub struct Load {
    pub requests: u64,
    pub duration_us: u64,
    pub errors: Errors,
    pub p50_us: u64,
    pub p99_us: u64,
}

/// Requests that failed: `status` counts answers of 400 and above.
#[derive(Deserialize, Clone)]
pub struct Errors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub status: u64,
    pub timeout: u64,
}

impl Load {
    /// Answered requests a second, the failed ones left out.
    pub fn rate(&self) -> f64 {
        let ok = self.requests.saturating_sub(self.errors.total());
        ok as f64 / (self.duration_us as f64 / 1e6).max(f64::MIN_POSITIVE)
    }
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.status + self.timeout
    }
}

/// Installs Debian's wrk when it is missing, as scripts/setup installs packages.
pub fn ensure_installed() -> Result<(), Error> {
    if std::process::Command::new("wrk")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
    {
        return Ok(());
    }
    eprintln!("wrk is missing: installing Debian's package");
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
    let apt = |args: &[&str]| {
        let mut cmd = if root {
            std::process::Command::new("apt-get")
        } else {
            let mut sudo = std::process::Command::new("sudo");
            sudo.arg("apt-get");
            sudo
        };
        cmd.args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    // The package lists may be stale or absent on a fresh machine.
    let installed =
        apt(&["install", "-y", "wrk"]) || (apt(&["update"]) && apt(&["install", "-y", "wrk"]));
    if installed {
        Ok(())
    } else {
        Err("cannot install wrk (apt-get install -y wrk)".into())
    }
}

/// `connections` keep-alive connections POSTing for `duration`, each request with key
/// `prefix-THREAD-N` (`fresh`) or `prefix` itself (`!fresh`).
pub async fn post(
    url: &str,
    token: &str,
    intent: &str,
    prefix: &str,
    fresh: bool,
    connections: usize,
    duration: Duration,
) -> Result<Load, Error> {
    let out = Command::new("wrk")
        // As many threads as the machine's two cores; the server shares them.
        .args(["-t2", "-c", &connections.to_string()])
        .arg(format!("-d{}s", duration.as_secs().max(1)))
        .args(["--timeout", "10s", "-s", SCRIPT, url, "--", token, prefix])
        .arg(if fresh { "fresh" } else { "one" })
        .arg(intent)
        .stdin(Stdio::null())
        .output()
        .await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "wrk failed ({}): {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("wrk printed no summary: {stdout}"))?;
    Ok(serde_json::from_str(line)?)
}
