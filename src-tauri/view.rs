//! Shapes the UI receives that the engine does not export as such: a provider with its
//! configuration spelled out, the app's settings, and the event that announces a change.

use onejob_engine::executor::sandbox_dials;
use onejob_engine::providers::sandbox::Dials;
use onejob_engine::{Engine, Error, Provider, ProviderKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A configured provider as the Providers screen shows it. API keys are never stored, so
/// none can be here: only the name of the environment variable that holds one.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ProviderView {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
    pub soft_timeout_ms: u64,
    pub hard_timeout_ms: u64,
    pub honours_idempotency_key: bool,
    pub status_url: Option<String>,
    pub context_window: Option<u64>,
    /// The sandbox's fault dials (defaults when none are set); absent for other kinds.
    pub dials: Option<Dials>,
    /// The whole stored configuration, so an edit can be saved back with nothing lost.
    pub config: Value,
    pub created_at: String,
    pub updated_at: String,
}

impl ProviderView {
    /// Every provider, in the order given.
    pub fn all(providers: Vec<Provider>) -> Result<Vec<ProviderView>, Error> {
        providers.into_iter().map(ProviderView::try_from).collect()
    }
}

impl TryFrom<Provider> for ProviderView {
    type Error = Error;

    fn try_from(provider: Provider) -> Result<Self, Error> {
        let c = provider.config;
        let dials = match c.kind {
            ProviderKind::Sandbox => Some(sandbox_dials(&c)?),
            _ => None,
        };
        let config = serde_json::to_value(&c).map_err(|e| Error::internal(e.to_string()))?;
        Ok(ProviderView {
            name: c.name,
            kind: c.kind,
            base_url: c.base_url,
            model: c.model,
            api_key_env: c.api_key_env,
            soft_timeout_ms: c.soft_timeout_ms,
            hard_timeout_ms: c.hard_timeout_ms,
            honours_idempotency_key: c.honours_idempotency_key,
            status_url: c.status_url,
            context_window: c.context_window,
            dials,
            config,
            created_at: provider.created_at,
            updated_at: provider.updated_at,
        })
    }
}

/// What the Settings screen shows.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Settings {
    /// The database file the app (and, by default, the CLI) uses.
    pub db_path: String,
    /// The profile the app acts for.
    pub owner: String,
}

impl Settings {
    /// The settings of the app running over `engine`.
    pub fn of(engine: &Engine) -> Settings {
        Settings {
            db_path: engine.path().display().to_string(),
            owner: crate::OWNER.to_owned(),
        }
    }
}

/// Sent to the window whenever the ledger changes, from this process or another one sharing
/// the file; the UI re-reads what it shows. `seq` rises with every change seen.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct LedgerChanged {
    pub seq: u32,
}
