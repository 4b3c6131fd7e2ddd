//! Desktop notifications for jobs that newly need a person (SPEC §13 "Attention"), and the
//! job to open when the window next gains focus: the notification plugin cannot report a click
//! on desktop, so focusing the window after a notification is taken as the click.

use std::sync::{Arc, Mutex};

use onejob_engine::Engine;
use tauri::{AppHandle, Manager, RunEvent, Runtime, WindowEvent};
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
                show(&app, &notice);
                if !window_focused(&app) {
                    to_open.set(notice.job_id);
                }
            }
        }
    });
}

fn show<R: Runtime>(app: &AppHandle<R>, notice: &Notice) {
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
            if let Err(e) = (OpenJob { id }).emit(app) {
                eprintln!("onejob: cannot ask the window to open a job: {e}");
            }
        }
    }
}
