//! The app benchmark's way to the Job screen: with `ONEJOB_BENCH_OPEN_JOB` set to a job's id,
//! a second after the Jobs screen's first paint the window is asked to open that job, and the
//! moment is printed (`open-job-epoch-ms`); the Job screen reports when it showed the job.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tauri::{AppHandle, Wry};
use tauri_specta::Event;

use crate::view::OpenJob;

/// The variable naming the job to open.
pub const OPEN_JOB: &str = "ONEJOB_BENCH_OPEN_JOB";

/// The running app, kept only when a job is to be opened.
static APP: OnceLock<AppHandle<Wry>> = OnceLock::new();

/// Keeps the app's handle when the benchmark names a job to open; otherwise does nothing.
pub fn arm(app: &AppHandle<Wry>) {
    if std::env::var_os(OPEN_JOB).is_some() {
        let _ = APP.set(app.clone());
    }
}

/// Opens the named job a second from now, when [`arm`] kept the app.
pub fn after_first_paint() {
    let (Some(app), Some(id)) = (APP.get(), std::env::var_os(OPEN_JOB)) else {
        return;
    };
    let app = app.clone();
    let id = id.to_string_lossy().into_owned();
    std::thread::spawn(move || {
        // The Jobs screen's own start settles first, so it is not counted in the job's time.
        std::thread::sleep(Duration::from_secs(1));
        println!("open-job-epoch-ms {}", epoch_ms());
        if let Err(e) = (OpenJob { id }).emit(&app) {
            eprintln!("onejob: cannot ask the window to open a job: {e}");
        }
    });
}

/// Now, in milliseconds since the Unix epoch: the marks the benchmark subtracts.
pub fn epoch_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
