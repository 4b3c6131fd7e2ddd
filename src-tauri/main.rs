//! The onejob desktop app's entry point.

// No console window next to the app in release builds on Windows.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

fn main() -> ExitCode {
    // The context is generated here, not in the library, so the library and its tests build
    // before the UI has been built into `ui/dist`.
    match onejob_app::run(tauri::generate_context!()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onejob: {e}");
            ExitCode::FAILURE
        }
    }
}
