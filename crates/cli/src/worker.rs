//! `onejob worker`: the engine's executor, headless.

use std::io::IsTerminal;

use onejob_engine::executor::{check_max_in_flight, Executor, ExecutorOptions};
use onejob_engine::{Engine, Result};
use serde_json::{json, Value};

use crate::signals::Signals;

/// Runs the executor on `engine`. Without `once` it runs until SIGINT or SIGTERM, then waits for
/// the attempts it sent to end; a second signal stops it at once (what was in flight becomes
/// `unknown` when its lease expires, never re-sent). With `once` it returns when nothing is
/// left to send and every connection it holds has ended; a signal stops it at once. It keeps
/// at most `concurrency` attempts in flight.
pub async fn run(engine: &Engine, once: bool, concurrency: usize) -> Result<Value> {
    check_max_in_flight(concurrency)?;
    let options = ExecutorOptions {
        max_in_flight: concurrency,
        ..ExecutorOptions::default()
    };
    let executor = Executor::new(engine.clone(), options)?;
    let signals = Signals::listen()?;
    let forced = if once {
        tokio::select! {
            ran = executor.run_until_idle() => ran.map(|()| false)?,
            () = signals.received(1) => true,
        }
    } else {
        let stop = async {
            signals.received(1).await;
            if std::io::stderr().is_terminal() {
                eprintln!(
                    "onejob worker: stopping once the attempts in flight have ended; signal again to stop now"
                );
            }
        };
        tokio::select! {
            () = executor.run(stop) => false,
            () = signals.received(2) => true,
        }
    };
    Ok(json!({ "worker": { "id": executor.id(), "stopped": true, "forced": forced } }))
}
