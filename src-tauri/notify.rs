//! Desktop notifications for jobs that newly need a person (SPEC §13 "Attention"). A click
//! on one opens its job, on every desktop: the notification plugin reports which
//! notification was clicked, and the job rides in it. A burst of jobs at once is one
//! notification counting them, which opens no one job; focusing the window opens nothing.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use onejob_engine::{Engine, Job, JobDetail};
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_notification::NotificationExt;
use tauri_specta::Event;
use tokio::time::Instant;

use crate::attention::{announcements, Announcement, Notice, Seen};
use crate::view::OpenJob;
use crate::{CHANGE_CHECK, OWNER, REFRESH_EVERY};

/// How many attention jobs are read at most at once: the most the engine gives.
const AT_MOST: u32 = 1000;
/// How many of the most recently changed attention jobs are read after each ledger change.
const AFTER_CHANGE: u32 = 200;
/// How long news waits for the rest of a burst (an outage makes jobs unknown over a while).
const GATHER: Duration = Duration::from_secs(1);
/// After a notification counting a burst, how long the next one gathers before it is shown.
const QUIET: Duration = Duration::from_secs(10);
/// The notification's extra field that names its job.
const JOB: &str = "job_id";

/// What already needs attention before the app does anything: read before recovery turns
/// the attempts a crash left in flight into `unknown`, so those are announced.
pub async fn starting_point(engine: &Engine) -> Result<Seen, onejob_engine::Error> {
    let jobs = engine.attention_jobs(OWNER, AT_MOST).await?;
    let mut details = Vec::with_capacity(jobs.len());
    for job in &jobs {
        details.push(engine.job(OWNER, &job.id).await?);
    }
    Ok(Seen::starting_with(&details))
}

/// Watches the ledger for as long as the app runs and shows what newly needs attention
/// beyond `seen`, first what is already there, then after each change.
pub fn watch<R: Runtime>(app: AppHandle<R>, engine: Engine, seen: Seen) {
    let ids = AtomicI32::new(1);
    tauri::async_runtime::spawn(async move {
        announce_news(engine, seen, |a| show(&app, &a, &ids)).await;
    });
}

/// Calls `announce` with each notification to show, for as long as the ledger can be watched.
pub async fn announce_news(engine: Engine, mut seen: Seen, mut announce: impl FnMut(Announcement)) {
    let mut changes = match engine.changes(CHANGE_CHECK).await {
        Ok(changes) => changes,
        Err(e) => {
            eprintln!("onejob: cannot watch the ledger for jobs that need attention: {e}");
            return;
        }
    };
    let mut last_burst: Option<Instant> = None;
    loop {
        let mut news = read_news(&engine, &mut seen).await;
        if !news.is_empty() {
            let until = Instant::now() + GATHER;
            let until = last_burst.map_or(until, |at| until.max(at + QUIET));
            tokio::time::sleep_until(until).await;
            news.extend(read_news(&engine, &mut seen).await);
            let shown = announcements(news);
            if matches!(shown.as_slice(), [Announcement::Many(_)]) {
                last_burst = Some(Instant::now());
            }
            shown.into_iter().for_each(&mut announce);
        }
        if changes.changed().await.is_err() {
            return;
        }
        // Changes that come faster are read together, by the reading after the pause.
        tokio::time::sleep(REFRESH_EVERY).await;
        changes.borrow_and_update();
    }
}

/// What needs attention now and was not told yet; only jobs changed since their last reading
/// are read in full.
async fn read_news(engine: &Engine, seen: &mut Seen) -> Vec<Notice> {
    let mut jobs = attention_jobs(engine, AFTER_CHANGE).await;
    // A full page of changed jobs: older ones may have changed too.
    if jobs.len() == AFTER_CHANGE as usize && seen.to_look_at(&jobs).len() == jobs.len() {
        jobs = attention_jobs(engine, AT_MOST).await;
    }
    let mut details: Vec<JobDetail> = Vec::new();
    for job in seen.to_look_at(&jobs) {
        match engine.job(OWNER, &job.id).await {
            Ok(detail) => details.push(detail),
            // Read again at the next change, since its reading is not recorded.
            Err(e) => eprintln!("onejob: cannot read job {}: {e}", job.id),
        }
    }
    seen.news(&details)
}

async fn attention_jobs(engine: &Engine, limit: u32) -> Vec<Job> {
    // A busy or locked file now says nothing about the next change: try then.
    engine
        .attention_jobs(OWNER, limit)
        .await
        .unwrap_or_else(|e| {
            eprintln!("onejob: cannot read the jobs that need attention: {e}");
            Vec::new()
        })
}

/// Shows one notification; its job, if it names one, rides in it for the click.
fn show<R: Runtime>(app: &AppHandle<R>, announcement: &Announcement, ids: &AtomicI32) {
    let mut builder = app
        .notification()
        .builder()
        .id(ids.fetch_add(1, Ordering::Relaxed))
        .title(announcement.title())
        .body(announcement.body());
    if let Some(job_id) = announcement.job_id() {
        builder = builder.extra(JOB, job_id);
    }
    if let Err(e) = builder.show() {
        eprintln!("onejob: cannot show a notification: {e}");
    }
}

/// Opens the clicked notification's job, or only raises the window for one that names none.
pub fn open_on_click<R: Runtime>(app: &AppHandle<R>) {
    let handle = app.clone();
    let registered = app.notification().on_action(move |performed| {
        if performed.action_id() != "tap" {
            return;
        }
        let job_id = performed
            .notification()
            .and_then(|n| n.extra().get(JOB))
            .and_then(|id| id.as_str())
            .map(str::to_owned);
        raise(&handle);
        if let Some(id) = job_id {
            if let Err(e) = (OpenJob { id }).emit(&handle) {
                eprintln!("onejob: cannot ask the window to open a job: {e}");
            }
        }
    });
    if let Err(e) = registered {
        eprintln!("onejob: cannot follow clicks on notifications: {e}");
    }
}

/// Brings the main window to the front.
fn raise<R: Runtime>(app: &AppHandle<R>) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}
