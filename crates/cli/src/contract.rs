//! `onejob contract add|list|remove|check`: output contracts and their checks against providers.

use clap::Subcommand;
use onejob_engine::{Engine, Result};
use serde_json::{json, Value};

/// Exit code of a check that ran and failed (SPEC §12).
pub const CHECK_FAILED: u8 = 13;

#[derive(Debug, Subcommand)]
pub enum ContractCommand {
    /// Add an output contract, or replace the one of the same name; a changed schema,
    /// template or samples invalidates every earlier check of it
    Add {
        /// The contract as JSON, or @FILE (@- reads stdin): {"name", "schema": {JSON Schema},
        /// "template": {"system": "…", "user": "… {{field}} …"}, "samples": [{input}, …]}
        #[arg(long, value_name = "JSON|@FILE")]
        json: String,
    },
    /// List the contracts, each with its last check against every provider it was checked with
    List,
    /// Remove a contract and its checks; jobs that name it keep the name, and an open one fails
    /// "misconfigured" at its next attempt. Prints {"removed", "open_jobs": {"queued",
    /// "running", "unknown"}}: the open jobs that named it, of every owner
    Remove {
        /// The contract's name
        name: String,
    },
    /// Run every sample against a provider at temperature 0 and store the result; exits 0 when
    /// it passed, 13 when it ran and failed
    Check {
        /// The contract's name
        name: String,
        /// The provider to check it against
        #[arg(long, value_name = "P")]
        provider: String,
    },
}

/// A contract subcommand with its `--json` argument read, so a bad file fails before the
/// database is opened.
pub enum Call {
    Add(String),
    List,
    Remove(String),
    Check { name: String, provider: String },
}

impl ContractCommand {
    /// Reads `--json` (inline, `@FILE` or `@-`) with `read_text`.
    pub fn read(self, read_text: impl Fn(&str, &str) -> Result<String>) -> Result<Call> {
        Ok(match self {
            ContractCommand::Add { json } => Call::Add(read_text("contract", &json)?),
            ContractCommand::List => Call::List,
            ContractCommand::Remove { name } => Call::Remove(name),
            ContractCommand::Check { name, provider } => Call::Check { name, provider },
        })
    }
}

/// Runs one contract subcommand; returns the document to print and the exit code.
pub async fn run(engine: &Engine, call: Call) -> Result<(Value, u8)> {
    match call {
        Call::Add(text) => {
            let added = engine.add_contract(&text).await?;
            let doc = json!({
                "contract": added.contract,
                "replaced": added.replaced,
                "changed": added.changed,
            });
            Ok((doc, 0))
        }
        Call::List => {
            let mut listed = Vec::new();
            for contract in engine.contracts().await? {
                let checks = engine.contract_checks(&contract.name).await?;
                let mut doc = json!(contract);
                doc["checks"] = json!(checks);
                listed.push(doc);
            }
            Ok((json!({ "contracts": listed }), 0))
        }
        Call::Remove(name) => {
            // Counted first: once it is removed, these are the jobs that named it.
            let open_jobs = engine.jobs_naming_contract(&name).await?;
            engine.remove_contract(&name).await?;
            Ok((json!({ "removed": name, "open_jobs": open_jobs }), 0))
        }
        Call::Check { name, provider } => {
            let check = engine.check_contract(&name, &provider).await?;
            let code = if check.passed { 0 } else { CHECK_FAILED };
            Ok((json!({ "check": check }), code))
        }
    }
}
