//! The engine's integration tests, one binary: each module was a test binary of its own, and
//! every one of them linked the whole engine. `cargo test -p onejob-engine --test it` runs them
//! all; a module's path selects it (`--test it ledger::`), and `--exact` a test
//! (`ledger::owners_are_isolated`). `common` is the scaffolding they share.

mod common;

mod anthropic;
mod budgets;
mod busy;
mod contracts;
mod cost;
mod executor;
mod failover;
mod feed;
mod find;
mod fracture_points;
mod input;
mod known;
mod ledger;
mod model;
mod never_twice;
mod openai;
mod postgres;
mod postgres_schema;
mod provider_config;
mod regressions;
mod sandbox;
mod tokens;
