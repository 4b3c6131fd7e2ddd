//! The records of a contract check (SPEC §8): how each sample fared, and the stored check.
//! Checks are run by the executor, which does all sending (`executor/contract_check.rs`).
//! The faces show them as they are (the window's bindings included).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use specta::Type;

/// One sample's outcome in a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct SampleResult {
    pub passed: bool,
    /// Why it failed, or what passing meant.
    pub reason: String,
    /// From sending to the whole answer; `None` when nothing was sent.
    pub latency_ms: Option<u64>,
    /// The rendered prompt's tokens by the provider's tokenizer; `None`: not checked.
    pub prompt_tokens: Option<u64>,
    /// What counted `prompt_tokens`, or why nothing did.
    pub tokenizer: String,
    /// The provider's context window, when it declares one.
    pub context_window: Option<u64>,
    /// The token usage the provider reported for its answer.
    pub usage: Option<Value>,
}

/// One stored contract check: whether every sample passed, and how each fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct Check {
    pub id: String,
    pub contract: String,
    /// The contract's hash when it was checked.
    pub contract_hash: String,
    pub provider: String,
    /// The provider's `updated_at` when it was checked.
    pub provider_updated_at: String,
    /// Every sample passed.
    pub passed: bool,
    pub samples: Vec<SampleResult>,
    pub checked_at: String,
    /// Whether it still counts for automatic failover: neither the contract nor the provider
    /// changed since, and it passed.
    pub current: bool,
}
