//! The onejob desktop shell: a window over the engine. It opens the app's database, hands
//! the UI the commands in [`commands`], and owns no rule of its own.

pub mod attention;
pub mod bench;
pub mod commands;
pub mod files;
pub mod job_view;
pub mod ledger;
pub mod notify;
pub mod sending;
pub mod status;
pub mod view;
pub mod webview;

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::{Engine, OpenOptions};
use tauri::{AppHandle, Context, Manager, Runtime, Wry};
use tauri_specta::Event;

use view::{LedgerChanged, OpenJob};

/// How often the window and its notifications react to changes at most: changes that come
/// faster are folded into the next refresh. The ledger is watched by the engine's one feed,
/// which the executor shares (a file is checked every [`CHANGE_CHECK`]).
pub(crate) const REFRESH_EVERY: Duration = Duration::from_millis(250);

/// How often the engine's change feed checks a ledger file: the executor's interval, so the
/// window, its notifications and the executor share one feed.
pub(crate) use onejob_engine::executor::CHANGE_CHECK;

/// The profile the app acts for (SPEC §1: the app's local profile is `local`).
pub const OWNER: &str = "local";

/// What every command works with: the ledger (open, or why not), the owner it acts for, and
/// whether it still answers.
pub struct AppState {
    ledger: Mutex<Ledger>,
    /// Every read and write of the app is scoped to this owner.
    pub owner: String,
    /// Whether an opened ledger gets the app's executor and notifications: the window's app
    /// does, the headless tests' does not.
    desktop: bool,
    /// One opening at a time: "Try again", the background tries, a choice in Settings.
    pub(crate) opening: tokio::sync::Mutex<()>,
    /// Whether the background tries of a server that did not answer are running.
    pub(crate) retrying: AtomicBool,
    /// Whether the open ledger stopped answering, and since when.
    pub(crate) outage: status::Outage,
    /// The primary the window was last told of: another one found later is announced.
    pub(crate) told_primary: Mutex<Option<status::Primary>>,
}

/// The ledger of the running app.
enum Ledger {
    /// Open; clones of the engine share its pools.
    Open {
        engine: Engine,
        /// The executor running inside the app, when one does.
        executor: Option<Executor>,
    },
    /// Not open, and why.
    NotOpen(status::NotOpen),
}

impl AppState {
    /// State on an open ledger acting for the app's own profile, [`OWNER`], with no executor.
    pub fn new(engine: Engine) -> Self {
        AppState::with(
            Ledger::Open {
                engine,
                executor: None,
            },
            false,
        )
    }

    /// State with no ledger open, for the reason given: every command but Settings' and the
    /// ledger's own says so, and the window says what can be done.
    pub fn without_ledger(why: status::NotOpen) -> Self {
        AppState::with(Ledger::NotOpen(why), false)
    }

    fn with(ledger: Ledger, desktop: bool) -> Self {
        AppState {
            ledger: Mutex::new(ledger),
            owner: OWNER.to_owned(),
            desktop,
            opening: tokio::sync::Mutex::new(()),
            retrying: AtomicBool::new(false),
            outage: status::Outage::default(),
            told_primary: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open ledger, or `storage` saying why none is open.
    pub fn engine(&self) -> Result<Engine, onejob_engine::Error> {
        match &*self.lock() {
            Ledger::Open { engine, .. } => Ok(engine.clone()),
            Ledger::NotOpen(why) => Err(why.error()),
        }
    }

    /// Why no ledger is open, when none is.
    pub fn not_open(&self) -> Option<status::NotOpen> {
        match &*self.lock() {
            Ledger::Open { .. } => None,
            Ledger::NotOpen(why) => Some(why.clone()),
        }
    }

    pub(crate) fn set_not_open(&self, why: status::NotOpen) {
        *self.lock() = Ledger::NotOpen(why);
    }

    /// The ledger in use or the one that could not be opened, as it may be shown.
    pub fn location(&self) -> String {
        match &*self.lock() {
            Ledger::Open { engine, .. } => engine.location().to_owned(),
            Ledger::NotOpen(why) => why.location(),
        }
    }

    /// The app's executor, when it runs one.
    pub fn executor(&self) -> Option<Executor> {
        match &*self.lock() {
            Ledger::Open { executor, .. } => executor.clone(),
            Ledger::NotOpen(_) => None,
        }
    }

    /// How many attempts the app sends at once: its executor's, or the saved setting.
    pub fn concurrency(&self) -> u32 {
        match self.executor() {
            Some(executor) => u32::try_from(executor.max_in_flight()).unwrap_or(u32::MAX),
            None => sending::saved(),
        }
    }
}

/// Every command and event the UI may use. The app serves exactly these, and the
/// TypeScript bindings in `ui/src/bindings.ts` are generated from the same list.
pub fn specta_builder<R: Runtime>() -> tauri_specta::Builder<R> {
    tauri_specta::Builder::new()
        .commands(tauri_specta::collect_commands![
            commands::submit,
            commands::fingerprint,
            commands::list_jobs,
            commands::count_jobs,
            commands::needs_attention,
            commands::job,
            commands::job_part,
            commands::save_job_part,
            commands::retry,
            commands::resolve,
            commands::cancel,
            commands::bulk_start,
            commands::bulk_run::<tauri::Wry>,
            commands::bulk_discard,
            commands::spend,
            commands::ledger_risks,
            commands::budgets,
            commands::set_budget,
            commands::remove_budget,
            commands::providers,
            commands::save_provider,
            commands::provider_in_use,
            commands::remove_provider,
            commands::set_provider_key,
            commands::clear_provider_key,
            commands::contracts,
            commands::save_contract,
            commands::contract_in_use,
            commands::remove_contract,
            commands::check_contract,
            commands::settings,
            commands::choose_ledger::<tauri::Wry>,
            commands::ledger_status,
            commands::try_ledger_again::<tauri::Wry>,
            commands::move_ledger_aside::<tauri::Wry>,
            commands::set_concurrency,
            commands::first_paint,
            commands::job_paint,
        ])
        .events(tauri_specta::collect_events![
            LedgerChanged,
            OpenJob,
            status::LedgerStatus,
            view::BulkProgressed
        ])
        // How many providers a bulk confirmation names at most, so the window can say when there
        // may be others.
        .constant("BULK_PROVIDERS_NAMED", onejob_engine::BULK_PROVIDERS_NAMED)
        // The engine's 64-bit integers (timeouts, context windows, a check's latencies and token
        // counts) stay far below 2^53, where JavaScript's numbers are exact; those inside
        // `serde_json::Value`'s numbers reach JavaScript as JSON numbers anyway.
        .dangerously_cast_bigints_to_number()
        // One TypeScript type per Rust type: the UI only ever receives the serialised shape.
        .disable_serde_phases()
}

/// Adds the app's state and commands to a Tauri builder; the window and the headless tests
/// share it, so both serve the same commands. Once built, [`start`] starts the rest.
pub fn with_commands<R: Runtime>(builder: tauri::Builder<R>, state: AppState) -> tauri::Builder<R> {
    builder
        .manage(state)
        .invoke_handler(specta_builder::<R>().invoke_handler())
}

/// Starts what runs beside the commands, once the app is built and before it runs (Tauri runs
/// a setup hook only once its event loop does, which the headless tests never start): the
/// events, the change feed of an open ledger, the background tries of one that did not answer,
/// and the watcher of outages.
pub fn start<R: Runtime>(app: &AppHandle<R>) {
    specta_builder::<R>().mount_events(app);
    let state = app.state::<AppState>();
    if let Ok(engine) = state.engine() {
        forward_changes(app.clone(), engine);
    }
    if let Some(why) = state.not_open() {
        status::not_opened(app, why);
    }
    tauri::async_runtime::spawn(status::watch_outages(app.clone()));
}

/// Emits [`LedgerChanged`] to the window whenever the ledger changes, for as long as the app
/// runs, so the UI refreshes on events instead of polling.
fn forward_changes<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    tauri::async_runtime::spawn(async move {
        let mut changes = match engine.changes(CHANGE_CHECK).await {
            Ok(changes) => changes,
            Err(e) => {
                eprintln!("onejob: cannot watch the ledger for changes: {e}");
                return;
            }
        };
        while changes.changed().await.is_ok() {
            let seq = u32::try_from(*changes.borrow_and_update() % u64::from(u32::MAX))
                .unwrap_or_default();
            if let Err(e) = (LedgerChanged { seq }).emit(&app) {
                eprintln!("onejob: cannot announce a ledger change: {e}");
            }
            // What changes meanwhile is announced once, after the pause.
            tokio::time::sleep(REFRESH_EVERY).await;
        }
    });
}

/// Opens the ledger (see [`ledger::to_open`]: `ONEJOB_DB`, the choice saved in Settings, or
/// the file in the app's data folder, which the CLI uses by default too) and runs the app
/// until its last window closes. A ledger that cannot be opened does not stop the app: the
/// window opens and says why (see [`status`]); a file chosen in Settings that is gone is not
/// made anew.
pub fn run(context: Context<Wry>) -> Result<(), RunError> {
    // WebKit's settings are its environment: set before any thread or window exists.
    webview::prepare(&webview::chosen());
    let (location, source) = ledger::to_open();
    ledger::opened_from(source);
    // Opened before any window exists, so the window's first reads find the ledger.
    let opened = if ledger::is_missing(&location, source) {
        Err(status::NotOpen::missing(&location))
    } else {
        tauri::async_runtime::block_on(open_ledger(&location))
            .map_err(|e| status::NotOpen::failed(&location, &e))
    };
    let (mut state, started) = match opened {
        Ok((engine, seen)) => {
            let executor = executor_for(&engine).map_err(RunError::Executor)?;
            let state = AppState::with(
                Ledger::Open {
                    engine: engine.clone(),
                    executor: Some(executor.clone()),
                },
                true,
            );
            (state, Some((engine, seen, executor)))
        }
        Err(why) => {
            // Said on the terminal too, for a person who started the app from one.
            eprintln!(
                "onejob: cannot open the ledger at {}: {}",
                why.location(),
                why.message
            );
            (AppState::without_ledger(why), None)
        }
    };
    state.desktop = true;
    let app = with_commands(tauri::Builder::default(), state)
        .plugin(tauri_plugin_notification::init())
        .build(context)
        .map_err(RunError::Window)?;
    start(app.handle());
    bench::arm(app.handle());
    notify::open_on_click(app.handle());
    if let Some((engine, seen, executor)) = started {
        // The executor runs inside the app for as long as the app runs.
        tauri::async_runtime::spawn(async move { executor.run(std::future::pending()).await });
        notify::watch(app.handle().clone(), engine, seen);
    }
    app.run(|_, _| {});
    Ok(())
}

/// The app's executor on `engine`, sending as many attempts at once as saved in Settings.
fn executor_for(engine: &Engine) -> Result<Executor, onejob_engine::Error> {
    let options = ExecutorOptions {
        max_in_flight: sending::saved() as usize,
        ..ExecutorOptions::default()
    };
    Executor::new(engine.clone(), options)
}

/// Continues the app on an opened ledger: the executor (in the window's app), the change feed
/// and the notifications start, and the window is told.
pub(crate) fn install<R: Runtime>(app: &AppHandle<R>, engine: Engine, seen: attention::Seen) {
    let state = app.state::<AppState>();
    let executor = if state.desktop {
        match executor_for(&engine) {
            Ok(executor) => Some(executor),
            Err(e) => {
                let why = status::NotOpen::failed(engine.location(), &e);
                status::not_opened(app, why);
                return;
            }
        }
    } else {
        None
    };
    *state.lock() = Ledger::Open {
        engine: engine.clone(),
        executor: executor.clone(),
    };
    if let Some(executor) = executor {
        // The executor runs inside the app for as long as the app runs.
        tauri::async_runtime::spawn(async move { executor.run(std::future::pending()).await });
    }
    forward_changes(app.clone(), engine.clone());
    if state.desktop {
        notify::watch(app.clone(), engine, seen);
    }
    status::announce(app);
    if let Err(e) = (LedgerChanged { seq: 0 }).emit(app) {
        eprintln!("onejob: cannot announce a ledger change: {e}");
    }
}

/// Opens the ledger at `location` and reads what already needs attention there before
/// recovery turns the attempts a crash left in flight into `unknown`, so those are announced.
pub async fn open_ledger(
    location: &str,
) -> Result<(Engine, attention::Seen), onejob_engine::Error> {
    let open = OpenOptions {
        recover: false,
        ..OpenOptions::default()
    };
    let engine = Engine::open_with(location, open).await?;
    let seen = notify::starting_point(&engine).await?;
    engine.recover_expired_leases().await?;
    Ok((engine, seen))
}

/// Why the app could not run its window. A ledger that cannot be opened is not one of them:
/// the window opens and says so.
#[derive(Debug)]
pub enum RunError {
    /// The executor could not be set up.
    Executor(onejob_engine::Error),
    /// Tauri could not build or run the window.
    Window(tauri::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Executor(e) => write!(f, "cannot start the executor: {e}"),
            RunError::Window(e) => write!(f, "cannot run the window: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

#[cfg(test)]
mod tests;
