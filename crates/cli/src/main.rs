//! `onejob`: the command line face of the onejob engine. It parses, calls one engine
//! function, and prints JSON; every rule lives in the engine.

mod args;
mod bulk;
mod commands;
mod contract;
mod keys;
mod output;
mod serve;
mod signals;
mod wait;
mod worker;

use std::process::ExitCode;

use clap::Parser;
use onejob_engine::Error;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return output::parse_failure(&err),
    };
    // A server answers many clients at once and uses every core; every other command is one
    // call, and one thread starts faster.
    let runtime = if matches!(cli.command, args::Command::Serve(_)) {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => return output::failure(&Error::internal(format!("cannot start: {e}"))),
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(value) => output::reply(&value),
        Err(error) => output::failure(&error),
    }
}
