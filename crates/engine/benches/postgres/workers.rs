//! Worker processes: this benchmark's own binary run again with `ONEJOB_BENCH_WORKER` naming a
//! ledger, each with an Engine and an executor of its own, as `onejob worker` runs on another
//! host. It says `ready` once its ledger is open, starts on a line `go` and stops when its
//! input ends. Told to cancel a job instead, it is a person's `onejob cancel` on another host.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::Engine;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The ledger a worker process runs on; set, `main` runs a worker instead of the benchmark.
pub const WORKER: &str = "ONEJOB_BENCH_WORKER";
/// Attempts a worker process sends at once.
const IN_FLIGHT: &str = "ONEJOB_BENCH_WORKER_IN_FLIGHT";
/// When set, the worker drives only this job (`Executor::run_job`) and leaves every other alone.
const ONLY_JOB: &str = "ONEJOB_BENCH_WORKER_JOB";
/// When set, the process sends nothing: on `go` it cancels this job as a person would, and ends.
const CANCEL_JOB: &str = "ONEJOB_BENCH_WORKER_CANCEL";
/// How long a worker gets to open its ledger, and to stop once told.
const PATIENCE: Duration = Duration::from_secs(60);

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The worker's side: open the ledger, say `ready`, wait for `go`, run until input ends (or,
/// driving one job, until that job is settled).
pub async fn serve(url: String) -> Result<()> {
    let in_flight = std::env::var(IN_FLIGHT)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(onejob_engine::executor::DEFAULT_MAX_IN_FLIGHT);
    let engine = Engine::open(&url).await?;
    let options = ExecutorOptions {
        max_in_flight: in_flight,
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(engine.clone(), options)?;
    // Standard input is read on a thread of its own: a line starts the worker, its end stops it.
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut line = String::new();
        if stdin.read_line(&mut line).is_ok_and(|n| n > 0) {
            let _ = go_tx.send(());
            while stdin.read_line(&mut line).is_ok_and(|n| n > 0) {
                line.clear();
            }
        }
        let _ = stop_tx.send(());
    });
    println!("ready");
    if go_rx.await.is_ok() {
        if let Ok(job) = std::env::var(CANCEL_JOB) {
            engine.cancel(crate::common::OWNER, &job).await?;
            engine.close().await;
            return Ok(());
        }
        match std::env::var(ONLY_JOB) {
            Ok(job) => {
                tokio::select! {
                    driven = executor.run_job(&job, None) => { driven?; }
                    _ = stop_rx => {}
                }
            }
            Err(_) => {
                executor
                    .run(async {
                        let _ = stop_rx.await;
                    })
                    .await
            }
        }
    }
    engine.close().await;
    Ok(())
}

/// A worker process seen from the benchmark. Dropping it kills the process.
pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
}

impl Worker {
    /// Starts a worker on the ledger at `url` sending `in_flight` at once (driving only `job`
    /// when given); its error output goes to a file in `logs`. It returns once the worker's
    /// ledger is open.
    pub async fn start(
        url: &str,
        in_flight: usize,
        job: Option<&str>,
        logs: &Path,
        name: &str,
    ) -> Result<Worker> {
        Self::spawn(url, in_flight, job, None, logs, name).await
    }

    /// Starts a process on the ledger at `url` that, on `go`, cancels `job` as a person on
    /// another host would, and ends.
    pub async fn canceller(url: &str, job: &str, logs: &Path, name: &str) -> Result<Worker> {
        Self::spawn(url, 1, None, Some(job), logs, name).await
    }

    async fn spawn(
        url: &str,
        in_flight: usize,
        job: Option<&str>,
        cancel: Option<&str>,
        logs: &Path,
        name: &str,
    ) -> Result<Worker> {
        let log = logs.join(format!("{name}.log"));
        let mut command = Command::new(std::env::current_exe()?);
        command
            .env(WORKER, url)
            .env(IN_FLIGHT, in_flight.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log)?)
            .kill_on_drop(true);
        match job {
            Some(job) => command.env(ONLY_JOB, job),
            None => command.env_remove(ONLY_JOB),
        };
        match cancel {
            Some(job) => command.env(CANCEL_JOB, job),
            None => command.env_remove(CANCEL_JOB),
        };
        let mut child = command.spawn()?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let stdout = BufReader::new(stdout.ok_or("the worker's output is not piped")?);
        let mut worker = Worker {
            child,
            stdin,
            stdout,
            log,
        };
        let mut line = String::new();
        let read = tokio::time::timeout(PATIENCE, worker.stdout.read_line(&mut line)).await;
        if line.trim() != "ready" {
            return Err(format!(
                "worker {name} did not start ({read:?}): {}",
                worker.log_text()
            )
            .into());
        }
        Ok(worker)
    }

    /// Lets the worker start working.
    pub async fn go(&mut self) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("the worker was stopped")?;
        stdin.write_all(b"go\n").await?;
        Ok(stdin.flush().await?)
    }

    /// The worker's process id, for signals.
    pub fn pid(&self) -> Result<u32> {
        Ok(self.child.id().ok_or("the worker has exited")?)
    }

    /// Processor time the worker has used so far, user and system.
    pub fn cpu(&self) -> Option<Duration> {
        cpu_of(self.child.id()?)
    }

    /// Sends `signal` (`STOP`, `CONT`) to the worker.
    pub fn signal(&self, signal: &str) -> Result<()> {
        let sent = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid()?.to_string())
            .status()?;
        if !sent.success() {
            return Err(format!("kill -{signal} failed").into());
        }
        Ok(())
    }

    /// Ends the worker's input and waits for it to stop; an error (with what it printed) when it
    /// fails or does not stop in time.
    pub async fn stop(mut self) -> Result<()> {
        drop(self.stdin.take());
        let status = match tokio::time::timeout(PATIENCE, self.child.wait()).await {
            Ok(status) => status?,
            Err(_) => {
                self.child.kill().await?;
                return Err(format!("a worker did not stop: {}", self.log_text()).into());
            }
        };
        if !status.success() {
            return Err(format!("a worker failed ({status}): {}", self.log_text()).into());
        }
        Ok(())
    }

    /// The end of what the worker printed on its error output.
    fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

/// An error saying what did not happen within `limit`, once `deadline` has passed.
pub fn check_deadline(deadline: Instant, limit: Duration, what: &str) -> Result<()> {
    if Instant::now() >= deadline {
        return Err(format!("{what}: not within {limit:?}").into());
    }
    Ok(())
}

/// Processor time process `pid` has used so far, user and system, from `/proc/<pid>/stat` (in
/// clock ticks of 10 ms); `None` where there is no such file.
pub fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
