//! The onejob desktop shell: a window over the engine. It opens the app's database, hands
//! the UI the commands in [`commands`], and owns no rule of its own.

pub mod attention;
pub mod commands;
pub mod notify;
pub mod view;

use std::time::Duration;

use onejob_engine::executor::{Executor, ExecutorOptions};
use onejob_engine::{default_db_path, Engine};
use tauri::{AppHandle, Context, Runtime, Wry};
use tauri_specta::Event;

use view::{LedgerChanged, OpenJob};

/// How often the ledger file is checked for changes made by any process.
pub(crate) const CHANGE_CHECK: Duration = Duration::from_millis(250);

/// The profile the app acts for (SPEC §1: the app's local profile is `local`).
pub const OWNER: &str = "local";

/// What every command works with: the engine on the app's database and the owner it acts for.
pub struct AppState {
    /// The ledger; clones share its pools.
    pub engine: Engine,
    /// Every read and write of the app is scoped to this owner.
    pub owner: String,
}

impl AppState {
    /// State acting for the app's own profile, [`OWNER`].
    pub fn new(engine: Engine) -> Self {
        AppState {
            engine,
            owner: OWNER.to_owned(),
        }
    }
}

/// Every command and event the UI may use. The app serves exactly these, and the
/// TypeScript bindings in `ui/src/bindings.ts` are generated from the same list.
pub fn specta_builder<R: Runtime>() -> tauri_specta::Builder<R> {
    tauri_specta::Builder::new()
        .commands(tauri_specta::collect_commands![
            commands::submit,
            commands::list_jobs,
            commands::count_jobs,
            commands::needs_attention,
            commands::job,
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
            commands::first_paint,
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
            forward_changes(app.handle().clone(), engine);
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

/// Opens the database at [`default_db_path`] (Tauri's app data dir for `dev.onejob.app`, which
/// the CLI uses too) and runs the app until its last window closes.
pub fn run(context: Context<Wry>) -> Result<(), RunError> {
    // Opened before any window exists, so no command can arrive before the state does.
    let engine = tauri::async_runtime::block_on(Engine::open(default_db_path()))
        .map_err(RunError::Database)?;
    // The executor runs inside the app for as long as the app runs.
    let executor =
        Executor::new(engine.clone(), ExecutorOptions::default()).map_err(RunError::Executor)?;
    tauri::async_runtime::spawn(async move { executor.run(std::future::pending()).await });
    let app = with_commands(tauri::Builder::default(), AppState::new(engine.clone()))
        .plugin(tauri_plugin_notification::init())
        .build(context)
        .map_err(RunError::Window)?;
    let to_open = std::sync::Arc::new(notify::ToOpen::default());
    notify::watch(app.handle().clone(), engine, to_open.clone());
    app.run(move |handle, event| notify::on_run_event(handle, &event, &to_open));
    Ok(())
}

/// Why the app could not start or stopped abnormally.
#[derive(Debug)]
pub enum RunError {
    /// The database could not be opened or brought up to date.
    Database(onejob_engine::Error),
    /// The executor could not be set up.
    Executor(onejob_engine::Error),
    /// Tauri could not build or run the window.
    Window(tauri::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Database(e) => write!(
                f,
                "cannot open the database at {}: {} ({})",
                default_db_path().display(),
                e,
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
