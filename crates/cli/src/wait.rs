//! `submit --wait`: submit, then drive the job with the engine's executor until it ends, and
//! exit by how it ended.

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::{Engine, Job, JobDetail, JobError, JobStatus, Result};
use serde_json::json;

use crate::output::Reply;

/// The exit codes of `submit --wait` (SPEC §12), beside the error codes of SPEC §11.
pub const EXIT_FAILED: u8 = 10;
pub const EXIT_UNKNOWN: u8 = 11;
pub const EXIT_TIMED_OUT: u8 = 12;

/// How often the progress line is redrawn.
const REDRAW_EVERY: Duration = Duration::from_millis(200);

/// Submits (or replays) the intent and waits for the job: `{"job", "replayed"}` with exit 0
/// when it succeeded, 10 when it failed or was cancelled, 11 when it is `unknown`, 12 when
/// `timeout_s` ran out first. Errors of the submit itself keep their SPEC §11 codes.
pub async fn submit_and_wait(
    engine: &Engine,
    owner: &str,
    key: &str,
    intent: &str,
    timeout_s: Option<u64>,
) -> Result<Reply> {
    let submitted = engine.submit(owner, key, intent).await?;
    let executor = Executor::new(engine.clone(), ExecutorOptions::default())?;
    // A timeout too large for the clock is no timeout at all.
    let deadline = timeout_s.and_then(|s| Instant::now().checked_add(Duration::from_secs(s)));
    let job_id = submitted.job.id.clone();
    let wait = executor.run_job(&job_id, deadline);
    let waited = if std::io::stderr().is_terminal() {
        with_progress(engine, owner, &job_id, wait).await?
    } else {
        wait.await?
    };
    let (job, code) = ended(engine, waited).await?;
    let doc = json!({ "job": job, "replayed": submitted.replayed });
    Ok(Reply { doc, code })
}

/// The exit code of a wait that left the job as it is, with the reason in `error` when it
/// did not succeed.
async fn ended(engine: &Engine, mut job: Job) -> Result<(Job, u8)> {
    let reason = |code: &str, message: String| JobError {
        code: code.to_owned(),
        message,
    };
    let code = match job.status {
        JobStatus::Succeeded => 0,
        JobStatus::Failed | JobStatus::Cancelled => EXIT_FAILED,
        JobStatus::Unknown => {
            let detail = engine.job(&job.owner_id, &job.id).await?;
            let open = detail.attempts.iter().rev().find(|a| a.state.is_open());
            let why = open
                .and_then(|a| {
                    a.error
                        .as_ref()
                        .map(|e| format!("attempt {} {}: {}", a.number, e.kind, e.message))
                })
                .unwrap_or_else(|| "an attempt's outcome is unknown".to_owned());
            job.error = Some(reason(
                "unknown",
                format!("{why}; resolve it before another attempt"),
            ));
            EXIT_UNKNOWN
        }
        JobStatus::Queued | JobStatus::Running => {
            job.error = Some(reason(
                "wait_timeout",
                format!(
                    "still {} when the wait ended; an attempt this process was sending is left to its lease and becomes unknown unless its answer was recorded",
                    job.status
                ),
            ));
            EXIT_TIMED_OUT
        }
    };
    Ok((job, code))
}

/// Runs the wait while a line on stderr says where the job stands, cleared when it ends.
async fn with_progress(
    engine: &Engine,
    owner: &str,
    job_id: &str,
    wait: impl Future<Output = Result<Job>>,
) -> Result<Job> {
    let started = Instant::now();
    let mut line = ProgressLine::default();
    tokio::pin!(wait);
    loop {
        tokio::select! {
            waited = &mut wait => {
                line.clear();
                return waited;
            }
            () = tokio::time::sleep(REDRAW_EVERY) => {
                // A read that fails now is only a missed redraw; the wait reports real errors.
                if let Ok(detail) = engine.job(owner, job_id).await {
                    line.show(&describe(&detail, started.elapsed()));
                }
            }
        }
    }
}

/// `job 0193a1b2…4a5b running: attempt 1 at sandbox in_flight (2.1 s)`.
fn describe(detail: &JobDetail, waited: Duration) -> String {
    let job = &detail.job;
    let short = short_id(&job.id);
    let seconds = waited.as_secs_f64();
    match detail.attempts.last() {
        Some(a) => format!(
            "job {short} {}: attempt {} at {} {} ({seconds:.1} s)",
            job.status,
            a.number,
            a.provider,
            a.state.as_str()
        ),
        None => format!("job {short} {} ({seconds:.1} s)", job.status),
    }
}

/// The head and tail of an id: a UUIDv7's head is its time, so the tail tells jobs apart.
fn short_id(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= 12 {
        return id.to_owned();
    }
    let head: String = chars[..8].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
}

/// One line of stderr, rewritten in place.
#[derive(Default)]
struct ProgressLine {
    shown: bool,
}

impl ProgressLine {
    fn show(&mut self, text: &str) {
        // Back to the start of the line, then erase what a longer previous text left behind.
        self.write(&format!("\r{text}\x1b[K"));
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            self.write("\r\x1b[K");
            self.shown = false;
        }
    }

    fn write(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        // A progress line that cannot be drawn is not worth failing the wait for.
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn detail(attempts: Value) -> JobDetail {
        let job = json!({
            "id": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "owner_id": "local",
            "idempotency_key": "k", "fingerprint": "f", "intent": {}, "status": "running",
            "version": 0, "completed_by": null, "result": null, "error": null,
            "flagged_for_review": false, "created_at": "t", "updated_at": "t",
            "finished_at": null, "not_before": null
        });
        serde_json::from_value(json!({ "job": job, "attempts": attempts, "events": [] }))
            .expect("a job detail")
    }

    #[test]
    fn the_progress_line_names_the_open_attempt() {
        let attempt = json!({
            "id": "a", "job_id": "j", "number": 1, "provider": "sandbox", "state": "in_flight",
            "job_version": 0, "request_id": null, "http_status": null, "error": null,
            "executor_id": null, "lease_expires_at": null, "flagged_for_review": false,
            "created_at": "t", "sent_at": null, "finished_at": null
        });
        assert_eq!(
            describe(&detail(json!([attempt])), Duration::from_millis(2140)),
            "job 0193a1b2…4a5b running: attempt 1 at sandbox in_flight (2.1 s)"
        );
        assert_eq!(
            describe(&detail(json!([])), Duration::from_millis(50)),
            "job 0193a1b2…4a5b running (0.1 s)"
        );
    }
}
