//! Provider configuration: what `provider add` accepts and the ledger stores.

pub(crate) mod anthropic;
pub(crate) mod http;
pub mod keys;
pub(crate) mod openai;
pub(crate) mod url;
mod wire;

pub(crate) use wire::{build_request, decode, judge};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::contracts::Contract;
use crate::error::{Error, Result};
use crate::intent::{check_depth, validate_name};
use crate::model::AttemptError;
use crate::money::Price;
use crate::sandbox;

/// The kinds of provider onejob can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// An OpenAI-compatible Chat Completions endpoint.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// Any JSON-over-HTTP endpoint: the job's input is the body, the JSON answer the result.
    Http,
    /// The built-in loopback provider with fault dials. It echoes a job's input; a job with a
    /// contract it answers at its Chat Completions endpoint, as an `openai` provider would.
    Sandbox,
}

impl ProviderKind {
    /// The kind as configurations spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Http => "http",
            ProviderKind::Sandbox => "sandbox",
        }
    }
}

/// A configured provider (SPEC §12): a closed set of fields. [`ProviderConfig::parse`]
/// refuses any other field, so nothing a person adds by mistake (a key, a header) is stored
/// or listed. Reading a stored configuration ignores fields it does not know, so one saved
/// before the set was closed still loads, without them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderConfig {
    /// The name routes use: 1-128 characters of `A-Za-z0-9._@-`.
    pub name: String,
    /// How requests are built and answers read.
    pub kind: ProviderKind,
    /// Where requests go: an http(s) URL without user info or a secret-like query
    /// parameter. Optional only for a `sandbox`, which then runs in the executor's process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model an AI provider is asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The environment variable that holds the API key; never the key itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// After this long without an answer the attempt is `unknown`; the connection is kept.
    pub soft_timeout_ms: u64,
    /// After this long the connection is dropped; the attempt stays `unknown`.
    pub hard_timeout_ms: u64,
    /// Whether the provider deduplicates requests by `Idempotency-Key`.
    pub honours_idempotency_key: bool,
    /// How long, in seconds, the provider remembers a key (Stripe: 24 h). Set only where it
    /// honours keys; its `unknown` attempts are then replayed under their key (SPEC §16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_retention_s: Option<i64>,
    /// A status lookup URL, or a template of one: `{base_url}`, `{idempotency_key}`,
    /// `{job_id}` and `{request_id}` are filled in. Held to the same rules as `base_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_url: Option<String>,
    /// The model's context window in tokens, for the contract check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// `openai` kind: whether `response_format` may carry the contract's JSON schema (strict);
    /// when false, JSON mode is asked for and the schema is put in the system message.
    /// Absent means true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_json_schema: Option<bool>,
    /// How the contract check counts a prompt's tokens; absent means OpenAI's encoding when
    /// the model is an OpenAI model, otherwise "not checked".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    /// `anthropic` kind: the `anthropic-version` header sent; absent means
    /// `anthropic::DEFAULT_VERSION`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anthropic_version: Option<String>,
    /// `sandbox` kind: the fault dials (see [`sandbox::Dials`]); absent means the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dials: Option<Value>,
    /// What the provider charges (SPEC §17); absent, its attempts cost nothing known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

/// The longest key retention a provider may state: a year.
pub(crate) const MAX_KEY_RETENTION_S: i64 = 365 * 24 * 3600;

/// The fields a provider configuration may have; any other is `invalid_input`.
pub(crate) const PROVIDER_FIELDS: [&str; 16] = [
    "name",
    "kind",
    "base_url",
    "model",
    "api_key_env",
    "soft_timeout_ms",
    "hard_timeout_ms",
    "honours_idempotency_key",
    "key_retention_s",
    "status_url",
    "context_window",
    "supports_json_schema",
    "tokenizer",
    "anthropic_version",
    "dials",
    "price",
];

/// The tokenizers a contract check can count a prompt with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tokenizer {
    /// OpenAI's encodings, bundled: the model's own, or o200k_base for a model name it does not know.
    Tiktoken,
    /// A llama.cpp-style server's own `POST /tokenize` (after `/apply-template` where offered).
    LlamaTokenize,
}

/// What an AI provider's answer carried, read out of its kind's envelope.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decoded {
    pub output: Output,
    /// The provider's token usage, as it reported it.
    pub usage: Option<Value>,
    /// The answer's own id (`chatcmpl-…`, `msg_…`).
    pub id: Option<String>,
}

/// The model's answer: message text to be parsed, or JSON the envelope already holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    Text(String),
    Json(Value),
}

/// A provider as listed: its configuration and when it last changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provider {
    /// The configuration as it was last added.
    #[serde(flatten)]
    pub config: ProviderConfig,
    /// When the provider was first added.
    pub created_at: String,
    /// When its configuration last changed.
    pub updated_at: String,
}

/// Field names that would hold a secret; refused so no key is ever stored.
const SECRET_FIELDS: [&str; 5] = ["api_key", "apikey", "key", "token", "secret"];

impl ProviderConfig {
    /// The sandbox dials of this configuration (`"dials": {…}`), defaults when absent.
    pub fn sandbox_dials(&self) -> Result<crate::sandbox::Dials> {
        match &self.dials {
            None | Some(Value::Null) => Ok(crate::sandbox::Dials::default()),
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|e| Error::invalid_input("provider.dials", e.to_string())),
        }
    }

    /// Parses and validates a provider configuration given as JSON text.
    pub fn parse(text: &str) -> Result<Self> {
        check_depth(text, "provider")?;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid_input("provider", format!("not valid JSON ({e})")))?;
        crate::input::refuse_nul_in_json("provider", &value)?;
        let Value::Object(fields) = &value else {
            return Err(Error::invalid_input("provider", "must be a JSON object"));
        };
        if let Some(secret) = fields
            .keys()
            .find(|k| SECRET_FIELDS.contains(&k.to_ascii_lowercase().as_str()))
        {
            return Err(Error::invalid_input(
                format!("provider.{secret}"),
                "API keys are never stored in a provider: keep the key in the OS keyring with \
                 `onejob provider key set NAME`, or name its environment variable in api_key_env",
            ));
        }
        // The value is never repeated: an unknown field may well hold a secret.
        if let Some(unknown) = fields
            .keys()
            .find(|k| !PROVIDER_FIELDS.contains(&k.as_str()))
        {
            let mut why = format!(
                "is not a provider field; a provider has only {}",
                PROVIDER_FIELDS.join(", ")
            );
            if url::suggests_secret(unknown) {
                why.push_str(
                    "; API keys are never stored: name the environment variable that holds one in api_key_env",
                );
            }
            return Err(Error::invalid_input(format!("provider.{unknown}"), why));
        }
        for field in [
            "name",
            "kind",
            "soft_timeout_ms",
            "hard_timeout_ms",
            "honours_idempotency_key",
        ] {
            if !fields.contains_key(field) {
                return Err(Error::invalid_input(
                    format!("provider.{field}"),
                    "is required",
                ));
            }
        }
        if let Some(price) = fields.get("price").filter(|p| !p.is_null()) {
            Price::check_json(price, "provider.price")?;
        }
        let config: ProviderConfig = serde_json::from_value(value.clone()).map_err(|e| {
            let field = first_bad_field(fields).unwrap_or("provider".to_owned());
            Error::invalid_input(field, format!("has the wrong type ({e})"))
        })?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<()> {
        validate_name("provider.name", &self.name)?;
        match (&self.base_url, self.kind) {
            (Some(url), _) => check_url("provider.base_url", url)?,
            (None, ProviderKind::Sandbox) => {}
            (None, _) => {
                return Err(Error::invalid_input(
                    "provider.base_url",
                    "is required for this kind",
                ))
            }
        }
        if let Some(dials) = self.dials.as_ref().filter(|d| !d.is_null()) {
            sandbox::Dials::parse(&dials.to_string()).map_err(|e| match e {
                Error::InvalidInput { details, message } => {
                    let why = message.strip_prefix(&format!("{}: ", details.field));
                    let field = format!("provider.{}", details.field);
                    Error::invalid_input(field, why.unwrap_or(&message).to_owned())
                }
                other => other,
            })?;
        }
        if let Some(template) = &self.status_url {
            // A template: `{base_url}`, `{idempotency_key}`, `{job_id}`, `{request_id}` are
            // filled in. One that starts from `base_url` is checked as if on a plain host;
            // `base_url` itself was checked above.
            let url = match template.strip_prefix("{base_url}") {
                Some(rest) => format!("http://base-url.invalid{rest}"),
                None => template.clone(),
            };
            url::check(&url, template)
                .map_err(|why| Error::invalid_input("provider.status_url", why))?;
        }
        if let Some(version) = &self.anthropic_version {
            let ok = !version.is_empty()
                && version.len() <= 64
                && version.bytes().all(|b| b.is_ascii_graphic());
            if !ok {
                return Err(Error::invalid_input(
                    "provider.anthropic_version",
                    "must be 1-64 visible ASCII characters, such as 2023-06-01",
                ));
            }
        }
        if self.soft_timeout_ms == 0 {
            return Err(Error::invalid_input(
                "provider.soft_timeout_ms",
                "must be at least 1",
            ));
        }
        if self.hard_timeout_ms < self.soft_timeout_ms {
            return Err(Error::invalid_input(
                "provider.hard_timeout_ms",
                format!(
                    "{} is shorter than soft_timeout_ms {}; the hard deadline comes after the soft timeout",
                    self.hard_timeout_ms, self.soft_timeout_ms
                ),
            ));
        }
        if let Some(retention) = self.key_retention_s {
            if !self.honours_idempotency_key {
                return Err(Error::invalid_input(
                    "provider.key_retention_s",
                    "is only meaningful for a provider that honours Idempotency-Key; set honours_idempotency_key to true, or leave key_retention_s out",
                ));
            }
            if !(1..=MAX_KEY_RETENTION_S).contains(&retention) {
                return Err(Error::invalid_input(
                    "provider.key_retention_s",
                    format!(
                        "{retention} is not a retention onejob can use; it must be from 1 to {MAX_KEY_RETENTION_S} seconds (Stripe keeps a key 86400 s)"
                    ),
                ));
            }
        }
        if let Some(price) = &self.price {
            price.validate("provider.price")?;
            if price.per_1k_output_tokens.is_some() && self.context_window.is_none() {
                return Err(Error::invalid_input(
                    "provider.price.per_1k_output_tokens",
                    "needs the provider's context_window: an answer's length is bounded only by it where a job gives no max_tokens, and without a bound an attempt's worst case could not be counted (SPEC §17)",
                ));
            }
        }
        if let Some(var) = &self.api_key_env {
            let ok = !var.is_empty() && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !ok {
                return Err(Error::invalid_input(
                    "provider.api_key_env",
                    "must be the name of an environment variable (A-Z a-z 0-9 _)",
                ));
            }
        }
        Ok(())
    }
}

fn check_url(field: &str, url: &str) -> Result<()> {
    url::check(url, url).map_err(|why| Error::invalid_input(field, why))
}

/// The first known field whose value has the wrong JSON type, for a precise message.
fn first_bad_field(fields: &Map<String, Value>) -> Option<String> {
    let expect = |name: &str, v: &Value| -> bool {
        match name {
            "name" | "base_url" | "model" | "api_key_env" | "status_url" | "anthropic_version" => {
                v.is_string()
            }
            "dials" => v.is_object(),
            "kind" => v
                .as_str()
                .is_some_and(|k| ["openai", "anthropic", "http", "sandbox"].contains(&k)),
            "soft_timeout_ms" | "hard_timeout_ms" | "context_window" => v.is_u64(),
            "key_retention_s" => v.is_i64(),
            "honours_idempotency_key" | "supports_json_schema" => v.is_boolean(),
            "tokenizer" => v
                .as_str()
                .is_some_and(|t| ["tiktoken", "llama_tokenize"].contains(&t)),
            _ => true,
        }
    };
    fields
        .iter()
        .find(|(k, v)| !v.is_null() && !expect(k, v))
        .map(|(k, _)| format!("provider.{k}"))
}

#[cfg(test)]
mod tests;
