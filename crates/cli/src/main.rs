//! `onejob`: the command line face of the onejob engine. It parses, calls one engine
//! function, and prints JSON; every rule lives in the engine.

mod args;
mod commands;
mod contract;
mod keys;
mod output;
mod signals;
mod wait;
mod worker;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return output::parse_failure(&err),
    };
    match commands::run(cli).await {
        Ok(value) => output::reply(&value),
        Err(error) => output::failure(&error),
    }
}
