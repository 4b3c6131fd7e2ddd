//! Provider configuration: what `provider add` accepts and the ledger stores.

pub mod http;
pub mod sandbox;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::intent::{check_depth, validate_name};

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
    /// The built-in loopback provider with fault dials.
    Sandbox,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Http => "http",
            ProviderKind::Sandbox => "sandbox",
        }
    }
}

/// A configured provider (SPEC §12). Fields beyond these are kept as given, for the kinds
/// that use them (the sandbox's dials, for one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The environment variable that holds the API key; never the key itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    pub soft_timeout_ms: u64,
    pub hard_timeout_ms: u64,
    pub honours_idempotency_key: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A provider as listed: its configuration and when it last changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provider {
    #[serde(flatten)]
    pub config: ProviderConfig,
    pub created_at: String,
    pub updated_at: String,
}

/// Field names that would hold a secret; refused so no key is ever stored.
const SECRET_FIELDS: [&str; 5] = ["api_key", "apikey", "key", "token", "secret"];

impl ProviderConfig {
    /// Parses and validates a provider configuration given as JSON text.
    pub fn parse(text: &str) -> Result<Self> {
        check_depth(text, "provider")?;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid_input("provider", format!("not valid JSON ({e})")))?;
        let Value::Object(fields) = &value else {
            return Err(Error::invalid_input("provider", "must be a JSON object"));
        };
        if let Some(secret) = fields
            .keys()
            .find(|k| SECRET_FIELDS.contains(&k.to_ascii_lowercase().as_str()))
        {
            return Err(Error::invalid_input(
                format!("provider.{secret}"),
                "API keys are never stored; name the environment variable in api_key_env",
            ));
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
        if let Some(dials) = self.extra.get("dials").filter(|d| !d.is_null()) {
            sandbox::Dials::parse(&dials.to_string()).map_err(|e| match e {
                Error::InvalidInput { details, message } => {
                    let why = message.strip_prefix(&format!("{}: ", details.field));
                    let field = format!("provider.{}", details.field);
                    Error::invalid_input(field, why.unwrap_or(&message).to_owned())
                }
                other => other,
            })?;
        }
        if let Some(url) = &self.status_url {
            // A template: `{base_url}`, `{idempotency_key}`, `{job_id}`, `{request_id}` are filled in.
            if !url.starts_with("{base_url}") {
                check_url("provider.status_url", url)?;
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
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() > "https://".len()
        && !url.chars().any(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(
            field,
            format!("{url:?} is not an http:// or https:// URL"),
        ))
    }
}

/// The first known field whose value has the wrong JSON type, for a precise message.
fn first_bad_field(fields: &Map<String, Value>) -> Option<String> {
    let expect = |name: &str, v: &Value| -> bool {
        match name {
            "name" | "base_url" | "model" | "api_key_env" | "status_url" => v.is_string(),
            "kind" => v
                .as_str()
                .is_some_and(|k| ["openai", "anthropic", "http", "sandbox"].contains(&k)),
            "soft_timeout_ms" | "hard_timeout_ms" | "context_window" => v.is_u64(),
            "honours_idempotency_key" => v.is_boolean(),
            _ => true,
        }
    };
    fields
        .iter()
        .find(|(k, v)| !v.is_null() && !expect(k, v))
        .map(|(k, _)| format!("provider.{k}"))
}
