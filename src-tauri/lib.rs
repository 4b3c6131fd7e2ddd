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
pub mod view;
pub mod webview;

use std::time::Duration;

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::{Engine, OpenOptions};
use tauri::{AppHandle, Context, Runtime, Wry};
use tauri_specta::Event;

use view::{LedgerChanged, OpenJob};

/// How often the ledger file is checked for changes made by any process.
pub(crate) const CHANGE_CHECK: Duration = Duration::from_millis(250);

/// The profile the app acts for (SPEC §1: the app's local profile is `local`).
pub const OWNER: &str = "local";

/// What every command works with: the engine on the app's database and the owner it acts for.
pub struct AppState {
    /// The ledger; clones share its pools. `None` when the one chosen in Settings is missing.
    engine: Option<Engine>,
    /// The ledger chosen in Settings that was not found at start, so none was opened.
    pub missing: Option<String>,
    /// Every read and write of the app is scoped to this owner.
    pub owner: String,
    /// The executor running inside the app, when one does (the headless tests run none).
    pub executor: Option<Executor>,
}

impl AppState {
    /// State acting for the app's own profile, [`OWNER`].
    pub fn new(engine: Engine) -> Self {
        AppState {
            engine: Some(engine),
            missing: None,
            owner: OWNER.to_owned(),
            executor: None,
        }
    }

    /// State with no ledger open, since the file chosen in Settings (`location`) is missing:
    /// every command but Settings' says so.
    pub fn ledger_missing(location: String) -> Self {
        AppState {
            engine: None,
            missing: Some(location),
            owner: OWNER.to_owned(),
            executor: None,
        }
    }

    /// The same state, with the executor the app runs.
    pub fn with_executor(self, executor: Executor) -> Self {
        AppState {
            executor: Some(executor),
            ..self
        }
    }

    /// The open ledger, or `storage` naming the missing one.
    pub fn engine(&self) -> Result<&Engine, onejob_engine::Error> {
        self.engine.as_ref().ok_or_else(|| {
            ledger::storage(format!(
                "no ledger is open: the ledger chosen in Settings, {}, is missing (was its drive \
                 unmounted?); in Settings, create a new one there or choose another",
                self.missing.as_deref().unwrap_or("?")
            ))
        })
    }

    /// How many attempts the app sends at once: its executor's, or the saved setting.
    pub fn concurrency(&self) -> u32 {
        match &self.executor {
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
            commands::choose_ledger,
            commands::set_concurrency,
            commands::first_paint,
            commands::job_paint,
        ])
        .events(tauri_specta::collect_events![LedgerChanged, OpenJob])
        // The engine's own fields are u32 or strings; the only 64-bit integers are inside
        // `serde_json::Value`'s numbers, which reach JavaScript as JSON numbers anyway.
        .dangerously_cast_bigints_to_number()
        // One TypeScript type per Rust type: the UI only ever receives the serialised shape.
        .disable_serde_phases()
}

/// Adds the app's state and commands to a Tauri builder; the window and the headless tests
/// share it, so both serve the same commands.
pub fn with_commands<R: Runtime>(builder: tauri::Builder<R>, state: AppState) -> tauri::Builder<R> {
    let specta = specta_builder::<R>();
    let engine = state.engine.clone();
    builder
        .manage(state)
        .invoke_handler(specta.invoke_handler())
        .setup(move |app| {
            specta.mount_events(app);
            if let Some(engine) = engine {
                forward_changes(app.handle().clone(), engine);
            }
            Ok(())
        })
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
        }
    });
}

/// Opens the ledger (see [`ledger::to_open`]: `ONEJOB_DB`, the choice saved in Settings, or
/// the file in the app's data folder, which the CLI uses by default too) and runs the app
/// until its last window closes. A file chosen in Settings that is gone is not made anew: the
/// window opens with no ledger and says so.
pub fn run(context: Context<Wry>) -> Result<(), RunError> {
    // WebKit's settings are its environment: set before any thread or window exists.
    webview::prepare(&webview::chosen());
    let (location, source) = ledger::to_open();
    ledger::opened_from(source);
    if ledger::is_missing(&location, source) {
        let app = with_commands(
            tauri::Builder::default(),
            AppState::ledger_missing(location),
        )
        .build(context)
        .map_err(RunError::Window)?;
        app.run(|_, _| {});
        return Ok(());
    }
    // Opened before any window exists, so no command can arrive before the state does.
    let (engine, seen) = tauri::async_runtime::block_on(open_ledger(&location))
        .map_err(|e| RunError::Database(location_shown(&location), e))?;
    // The executor runs inside the app for as long as the app runs.
    let options = ExecutorOptions {
        max_in_flight: sending::saved() as usize,
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(engine.clone(), options).map_err(RunError::Executor)?;
    let state = AppState::new(engine.clone()).with_executor(executor.clone());
    tauri::async_runtime::spawn(async move { executor.run(std::future::pending()).await });
    let app = with_commands(tauri::Builder::default(), state)
        .plugin(tauri_plugin_notification::init())
        .build(context)
        .map_err(RunError::Window)?;
    bench::arm(app.handle());
    notify::open_on_click(app.handle());
    notify::watch(app.handle().clone(), engine, seen);
    app.run(|_, _| {});
    Ok(())
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

/// A ledger's location as it may be shown: a URL without its password.
fn location_shown(location: &str) -> String {
    onejob_engine::store::postgres::redact(location)
}

/// Why the app could not start or stopped abnormally.
#[derive(Debug)]
pub enum RunError {
    /// The ledger (shown without a password) could not be opened or brought up to date.
    Database(String, onejob_engine::Error),
    /// The executor could not be set up.
    Executor(onejob_engine::Error),
    /// Tauri could not build or run the window.
    Window(tauri::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Database(location, e) => write!(
                f,
                "cannot open the ledger at {location}: {e} ({})",
                e.code()
            ),
            RunError::Executor(e) => write!(f, "cannot start the executor: {e}"),
            RunError::Window(e) => write!(f, "cannot run the window: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

#[cfg(test)]
mod tests;
