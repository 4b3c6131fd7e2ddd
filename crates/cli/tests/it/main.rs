//! The command line's integration tests, one binary: each module was a test binary of its own,
//! and every one of them linked the whole engine. `cargo test -p onejob --test it` runs them
//! all; a module's path selects it (`--test it serve::`), and `--exact` a test. `common` is the
//! scaffolding they share: it runs the real `onejob` binary, which cargo builds for this one.

mod common;

mod budgets;
mod contracts;
mod doctor;
mod errors;
mod events;
mod executor;
mod failover;
mod faults;
mod full_disk;
mod help;
mod hosts;
mod jobs;
mod keys;
mod limits;
mod outage;
mod person;
mod providers;
mod sandbox;
mod serve;
mod spend;
mod standby;
mod submit;
mod tokens;
