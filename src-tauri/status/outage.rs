//! A ledger that stops answering while the app runs: noticed by a command's storage error
//! that a read confirms, or by a heartbeat read; said to the window, and tried again until it
//! answers.

use std::sync::Mutex;
use std::time::Duration;

use onejob_engine::error::StorageKind;
use onejob_engine::{Engine, Error};
use tauri::{AppHandle, Manager, Runtime};
use tauri_specta::Event;

use crate::view::LedgerChanged;
use crate::{AppState, OWNER};

use super::{announce, LONGEST_WAIT};

/// How often an open ledger that answered is asked for a small read, to notice that it
/// stopped while nothing else reads.
const HEARTBEAT: Duration = Duration::from_secs(3);

/// A ledger that stopped answering while the app ran: since when, and what failed first.
struct Down {
    since: chrono::DateTime<chrono::Local>,
    message: String,
}

/// The running ledger's outages: set when a command's storage error is confirmed by a read
/// that fails too, cleared by the watcher ([`watch_outages`]) once a read answers again.
#[derive(Default)]
pub struct Outage {
    down: Mutex<Option<Down>>,
    /// Wakes the watcher when an outage begins.
    began: tokio::sync::Notify,
    /// One confirming read at a time: the others wait for its verdict.
    checking: tokio::sync::Mutex<()>,
}

impl Outage {
    /// Since when and why the ledger has not answered, if it has not.
    pub(super) fn current(&self) -> Option<(chrono::DateTime<chrono::Local>, String)> {
        let down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.as_ref().map(|d| (d.since, d.message.clone()))
    }

    fn begin(&self, message: &str) {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        if down.is_none() {
            *down = Some(Down {
                since: chrono::Local::now(),
                message: message.to_owned(),
            });
            self.began.notify_one();
        }
    }

    fn end(&self) -> bool {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.take().is_some()
    }
}

/// Whether the ledger answers a small read (the "needs attention" count).
async fn answers(engine: &Engine) -> bool {
    engine.needs_attention(OWNER).await.is_ok()
}

impl AppState {
    /// A command's answer, as the window should see it: a storage error from a ledger that
    /// does not answer a read either becomes an outage (the banner) and says so in words.
    /// Nothing is queued for later: what failed failed, and the person is told.
    pub async fn checked<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        let message = match &result {
            Err(Error::Storage { message, .. }) => message.clone(),
            _ => return result,
        };
        if self.outage.current().is_none() {
            let _one = self.outage.checking.lock().await;
            if self.outage.current().is_none() {
                let Ok(engine) = self.engine() else {
                    return result;
                };
                if answers(&engine).await {
                    return result;
                }
                self.outage.begin(&message);
            }
        }
        let Some((since, _)) = self.outage.current() else {
            return result;
        };
        Err(crate::ledger::storage(
            StorageKind::Unreachable,
            format!(
            "the ledger at {} is unreachable since {}; onejob keeps trying and the window says \
             when it answers again. This was not done, or its answer was lost: do it again then \
             (a submit of the same draft is recorded once, however often it is sent). What \
             failed: {message}",
            self.location(),
            since.format("%H:%M:%S")
        ),
        ))
    }
}

/// Watches for outages for as long as the app runs. While the ledger answers, it asks for a
/// small read every [`HEARTBEAT`]: the change feed does not say when its server went away,
/// and an idle window reads nothing; and it tells the window when the ledger's primary is
/// another than the one it was last told of (a failover to a standby). Once an outage begins (found so, or by a command) it
/// says so to the window, tries a read again, a little later each time (at most
/// [`LONGEST_WAIT`] apart), and when one answers says so and asks the window to read
/// everything again.
pub async fn watch_outages<R: Runtime>(app: AppHandle<R>) {
    loop {
        let state = app.state::<AppState>();
        tokio::select! {
            () = state.outage.began.notified() => {}
            () = tokio::time::sleep(HEARTBEAT) => {
                if let Ok(engine) = state.engine() {
                    if let Err(e) = engine.needs_attention(OWNER).await {
                        state.outage.begin(&e.to_string());
                    }
                }
            }
        }
        if state.outage.current().is_none() {
            // A failover the engine followed without a read failing here moves the primary
            // all the same: the window is told.
            if state.primary_moved() {
                announce(&app);
            }
            continue;
        }
        announce(&app);
        let mut wait = Duration::from_millis(500);
        loop {
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(LONGEST_WAIT);
            let Ok(engine) = state.engine() else {
                state.outage.end();
                break;
            };
            if answers(&engine).await {
                state.outage.end();
                announce(&app);
                refresh(&app);
                break;
            }
        }
    }
}

/// Asks the window to read what it shows again.
fn refresh<R: Runtime>(app: &AppHandle<R>) {
    if let Err(e) = (LedgerChanged { seq: 0 }).emit(app) {
        eprintln!("onejob: cannot announce a ledger change: {e}");
    }
}
