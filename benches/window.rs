//! `cargo bench -p onejob-app --bench window`: the window's cold start and resident memory
//! beside a bare Tauri window measured in the same run, with their ratios. The measuring is
//! `tests/bench_app.sh` (it builds the release binaries and runs them under Xvfb); this only
//! runs it, so `cargo bench` prints the window's figures beside the engine's.

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bench_app.sh");
    match Command::new("bash").arg(script).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            eprintln!("the window benchmark failed: {status}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("cannot run {script}: {e}");
            ExitCode::FAILURE
        }
    }
}
