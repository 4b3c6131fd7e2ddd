//! Runs a command against a throwaway PostgreSQL cluster: the test pass on the second backend.
//!
//! `with-postgres cargo test -p onejob-engine -p onejob` starts a cluster tuned for tests
//! ([`Postgres::start_for_tests`]: loopback only, a free port, a temporary folder), gives the
//! command its URL in `ONEJOB_TEST_POSTGRES` (so every test ledger is a fresh database on it),
//! runs the command with this process's stdin, stdout and stderr, then stops the cluster and
//! removes its folder, whether the command passed, failed or was interrupted, and exits with the
//! command's code.

use std::ffi::OsString;
use std::process::ExitCode;

use onejob_testkit::{Postgres, TEST_POSTGRES};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The exit code when with-postgres itself fails, before or instead of the command.
const FAILED: u8 = 1;
/// The shell's code for a command that could not be run.
const NOT_RUN: u8 = 127;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: with-postgres COMMAND [ARGUMENT]...");
        return ExitCode::from(2);
    };
    let args: Vec<OsString> = args.collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("with-postgres: {e}");
            return ExitCode::from(FAILED);
        }
    };
    runtime.block_on(async {
        // Caught before the cluster exists, so an interrupt or a termination at any moment
        // (even one sent on reading the line below) ends the command and then this process
        // in order, never leaving the cluster and its folder behind.
        let signals = signal(SignalKind::interrupt()).and_then(|interrupt| {
            signal(SignalKind::terminate()).map(|terminate| (interrupt, terminate))
        });
        let signals = match signals {
            Ok(signals) => signals,
            Err(e) => {
                eprintln!("with-postgres: cannot watch for signals: {e}");
                return ExitCode::from(FAILED);
            }
        };
        let cluster = match Postgres::start_for_tests() {
            Ok(cluster) => cluster,
            Err(e) => {
                eprintln!("with-postgres: PostgreSQL did not start: {e}");
                return ExitCode::from(FAILED);
            }
        };
        eprintln!(
            "with-postgres: a throwaway PostgreSQL at {} (data in {}) for {}",
            cluster.server_url(),
            cluster.dir().display(),
            program.to_string_lossy()
        );
        let code = run(program, args, &cluster, signals).await;
        // Stops the server and removes its folder, whatever the command did.
        drop(cluster);
        code
    })
}

/// Runs the command to its end with the cluster's URL; its exit code. An interrupt is left to
/// the command; a termination ends it.
async fn run(
    program: OsString,
    args: Vec<OsString>,
    cluster: &Postgres,
    (mut interrupt, mut terminate): (Signal, Signal),
) -> ExitCode {
    let spawned = tokio::process::Command::new(&program)
        .args(&args)
        .env(TEST_POSTGRES, cluster.server_url())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "with-postgres: cannot run {}: {e}",
                program.to_string_lossy()
            );
            return ExitCode::from(NOT_RUN);
        }
    };
    loop {
        tokio::select! {
            status = child.wait() => {
                return match status {
                    Ok(status) => exit_code(status),
                    Err(e) => {
                        eprintln!("with-postgres: lost {}: {e}", program.to_string_lossy());
                        ExitCode::from(FAILED)
                    }
                };
            }
            // A terminal's interrupt reaches the whole foreground group: the command stops
            // by itself, and its end is awaited above.
            _ = interrupt.recv() => {}
            // A termination is for this process alone: the command is ended with it.
            _ = terminate.recv() => {
                let _ = child.start_kill();
            }
        }
    }
}

/// The command's exit code, or 128 + the signal that ended it, as a shell reports it.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(i32::from(FAILED));
    ExitCode::from(u8::try_from(code).unwrap_or(FAILED))
}
