//! Desktop notifications for jobs that newly need a person (SPEC §13 "Attention"), each
//! opening its job when clicked. On Linux a notification is sent through the desktop's
//! notification server with a default action, and a click on it opens the job and raises the
//! window. The notification plugin cannot report a click on the other desktops, so there the
//! window opens the job of the last notification when it next gains focus.

use std::sync::{Arc, Mutex};

use onejob_engine::Engine;
use tauri::{AppHandle, Manager, RunEvent, Runtime, WindowEvent};
#[cfg(not(target_os = "linux"))]
use tauri_plugin_notification::NotificationExt;
use tauri_specta::Event;

use crate::attention::{Notice, Seen};
use crate::view::OpenJob;
use crate::{CHANGE_CHECK, OWNER};

/// How many attention jobs are read at start, to remember them as already known (the most
/// the engine gives at once).
const AT_START: u32 = 1000;
/// How many of the most recently changed attention jobs are read after each ledger change.
const AFTER_CHANGE: u32 = 200;

/// The job of the last notification shown while the window was not focused, if it has not
/// been opened yet.
#[derive(Debug, Default)]
pub struct ToOpen(Mutex<Option<String>>);

impl ToOpen {
    // On Linux a click opens the job itself, so nothing waits for the focus there.
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    fn set(&self, job_id: String) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(job_id);
        }
    }

    fn take(&self) -> Option<String> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// Watches the ledger for as long as the app runs and shows one notification per job that
/// newly needs attention; jobs that needed it when the app started are not announced.
pub fn watch<R: Runtime>(app: AppHandle<R>, engine: Engine, to_open: Arc<ToOpen>) {
    tauri::async_runtime::spawn(async move {
        let mut changes = match engine.changes(CHANGE_CHECK).await {
            Ok(changes) => changes,
            Err(e) => {
                eprintln!("onejob: cannot watch the ledger for jobs that need attention: {e}");
                return;
            }
        };
        let mut seen = match engine.attention_jobs(OWNER, AT_START).await {
            Ok(jobs) => Seen::starting_with(&jobs),
            Err(e) => {
                eprintln!("onejob: cannot read the jobs that need attention: {e}");
                return;
            }
        };
        while changes.changed().await.is_ok() {
            let jobs = match engine.attention_jobs(OWNER, AFTER_CHANGE).await {
                Ok(jobs) => jobs,
                // A busy or locked file now says nothing about the next change: try then.
                Err(e) => {
                    eprintln!("onejob: cannot read the jobs that need attention: {e}");
                    continue;
                }
            };
            for notice in seen.news(&jobs) {
                show(&app, &notice, &to_open);
            }
        }
    });
}

/// Shows the notice with a default action; a click on it opens the job. The wait for the
/// click (or the notification's closing) runs on a thread of its own, since the server answers
/// only when the person acts or the notification expires.
#[cfg(target_os = "linux")]
fn show<R: Runtime>(app: &AppHandle<R>, notice: &Notice, _to_open: &ToOpen) {
    let app = app.clone();
    let (title, body, job_id) = (notice.title(), notice.body(), notice.job_id.clone());
    let spawned = std::thread::Builder::new()
        .name("onejob-notification".into())
        .spawn(move || {
            let shown = notify_rust::Notification::new()
                .appname("onejob")
                .summary(title)
                .body(&body)
                .action("default", "Open the job")
                .show();
            match shown {
                Ok(handle) => handle.wait_for_action(|action| {
                    if action == "default" {
                        open_job(&app, job_id);
                    }
                }),
                Err(e) => eprintln!("onejob: cannot show a notification: {e}"),
            }
        });
    if let Err(e) = spawned {
        eprintln!("onejob: cannot show a notification: {e}");
    }
}

/// Shows the notice through the plugin, and remembers its job for the window's next focus.
#[cfg(not(target_os = "linux"))]
fn show<R: Runtime>(app: &AppHandle<R>, notice: &Notice, to_open: &ToOpen) {
    if !window_focused(app) {
        to_open.set(notice.job_id.clone());
    }
    let shown = app
        .notification()
        .builder()
        .title(notice.title())
        .body(notice.body())
        .show();
    if let Err(e) = shown {
        eprintln!("onejob: cannot show a notification: {e}");
    }
}

/// Raises the main window and asks it to show the job.
fn open_job<R: Runtime>(app: &AppHandle<R>, id: String) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    if let Err(e) = (OpenJob { id }).emit(app) {
        eprintln!("onejob: cannot ask the window to open a job: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
fn window_focused<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window("main")
        .and_then(|w| w.is_focused().ok())
        .unwrap_or(false)
}

/// Opens the job of the last notification when the main window gains focus.
pub fn on_run_event<R: Runtime>(app: &AppHandle<R>, event: &RunEvent, to_open: &ToOpen) {
    if let RunEvent::WindowEvent {
        label,
        event: WindowEvent::Focused(true),
        ..
    } = event
    {
        if label != "main" {
            return;
        }
        if let Some(id) = to_open.take() {
            open_job(app, id);
        }
    }
}
