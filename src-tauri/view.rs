//! Shapes the UI receives that the engine does not export as such: a provider with its
//! configuration spelled out, a contract with its last checks, the app's settings, and the
//! event that announces a change.

use onejob_engine::contracts::check::Check;
use onejob_engine::contracts::Contract;
use onejob_engine::sandbox::Dials;
use onejob_engine::{Engine, Error, KeyStatus, Provider, ProviderKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A configured provider as the Providers screen shows it. No API key is ever here: only
/// where the key comes from (`key`) and the name of the environment variable that may hold one.
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
    /// Where the API key comes from at call time: the keyring, the environment, or nowhere.
    pub key: KeyStatus,
    pub created_at: String,
    pub updated_at: String,
}

impl ProviderView {
    /// Every provider, in the order given, each with where its key comes from.
    pub async fn all(
        engine: &Engine,
        providers: Vec<Provider>,
    ) -> Result<Vec<ProviderView>, Error> {
        let mut views = Vec::with_capacity(providers.len());
        for provider in providers {
            views.push(ProviderView::of(engine, provider).await?);
        }
        Ok(views)
    }

    /// One provider as shown, with where its key comes from.
    pub async fn of(engine: &Engine, provider: Provider) -> Result<ProviderView, Error> {
        let key = engine.key_status(&provider.config.name).await?;
        ProviderView::new(provider, key)
    }

    fn new(provider: Provider, key: KeyStatus) -> Result<Self, Error> {
        let c = provider.config;
        let dials = match c.kind {
            ProviderKind::Sandbox => Some(c.sandbox_dials()?),
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
            key,
            created_at: provider.created_at,
            updated_at: provider.updated_at,
        })
    }
}

/// A contract as the Providers screen and the Submit screen show it: its content (schema,
/// template, samples), the template's `{{fields}}`, what identifies the content, and the last
/// check against each provider it was checked with.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ContractView {
    pub name: String,
    /// The output JSON Schema as given.
    pub schema: Value,
    pub template: TemplateView,
    /// The sample inputs a check sends.
    pub samples: Vec<Value>,
    /// The template's variables, system text first, each once, in order of first use: the
    /// input fields a job under this contract must have.
    pub fields: Vec<String>,
    /// The hash of its schema, template and samples; a check made under another hash is stale.
    pub hash: String,
    pub updated_at: String,
    pub checks: Vec<Check>,
}

/// A contract's prompt template: a system text and a user text with `{{field}}` variables. The
/// engine's `Template` reads a missing system text as empty, which would make it optional here.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct TemplateView {
    pub system: String,
    pub user: String,
}

impl ContractView {
    /// A contract with the checks the engine gave for it.
    pub fn new(contract: Contract, checks: Vec<Check>) -> ContractView {
        let fields = contract.template.fields();
        ContractView {
            name: contract.name,
            schema: contract.schema,
            template: TemplateView {
                system: contract.template.system,
                user: contract.template.user,
            },
            samples: contract.samples,
            fields,
            hash: contract.hash,
            updated_at: contract.updated_at,
            checks,
        }
    }
}

/// What the Settings screen shows.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Settings {
    /// The ledger the app uses: the file (which the CLI uses by default too), or the
    /// PostgreSQL URL without its password; when none is open, the one that could not be.
    pub db_path: String,
    /// Whether a ledger is open. When not, the window says why (the ledger's status), and a
    /// ledger chosen here is opened at once.
    pub open: bool,
    /// Whether it is a PostgreSQL ledger shared with other hosts.
    pub shared: bool,
    /// Where it was named: `ONEJOB_DB`, the choice saved here, or the default file.
    pub source: crate::ledger::Source,
    /// The ledger chosen in Settings for the next start, when it is not the one in use.
    pub next_start: Option<String>,
    /// The profile the app acts for.
    pub owner: String,
    /// How many attempts the app's executor sends at once.
    pub concurrency: u32,
}

impl Settings {
    /// The settings of the running app.
    pub fn of(state: &crate::AppState) -> Settings {
        let location = state.location();
        let (next, _) = crate::ledger::to_open();
        let next = onejob_engine::store::postgres::redact(&next);
        Settings {
            open: state.not_open().is_none(),
            shared: onejob_engine::store::postgres::is_url(&location),
            next_start: (next != location).then_some(next),
            db_path: location,
            source: crate::ledger::source(),
            owner: crate::OWNER.to_owned(),
            concurrency: state.concurrency(),
        }
    }
}

/// Sent to the window whenever the ledger changes, from this process or another one sharing
/// the file; the UI re-reads what it shows. `seq` rises with every change seen.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct LedgerChanged {
    pub seq: u32,
}

/// Sent to the window when it should show a job: the one whose attention notification was
/// clicked.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct OpenJob {
    pub id: String,
}

/// Sent to the window after each batch of a bulk operation the window runs: how far it has come.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct BulkProgressed {
    pub id: String,
    pub progress: onejob_engine::BulkProgress,
}
