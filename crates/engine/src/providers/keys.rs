//! API keys in the OS keyring (SPEC §12): Secret Service on Linux, Keychain on macOS,
//! Credential Manager on Windows. One entry per provider name (service `onejob`, user = the
//! provider's name), read at call time and never kept, logged, stored or put in an event or
//! an error. The environment variable named by `api_key_env` wins when it is set.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::failure::FailureKind;
use crate::model::AttemptError;
use crate::providers::{ProviderConfig, ProviderKind};
use crate::Engine;

/// The keyring service every onejob key is filed under; the user is the provider's name.
pub(crate) const SERVICE: &str = "onejob";
/// The longest key accepted, in bytes; real API keys are far shorter.
pub const MAX_KEY_BYTES: usize = 4096;
/// How long a keyring call may take before onejob stops waiting: a locked keyring may wait
/// on a prompt nobody sees.
const KEYRING_PATIENCE: Duration = Duration::from_secs(10);

/// Where a provider's API key comes from at call time; never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum KeyStatus {
    /// The variable named by `api_key_env` is set in this process's environment.
    Env { var: String },
    /// The OS keyring holds a key for this provider.
    Keyring,
    /// No key; `required` when the provider cannot be called without one.
    NotSet { required: bool },
}

/// Whether a provider cannot be called without a key: it names `api_key_env`, or it is an
/// `anthropic` provider (the Messages API refuses every request without `x-api-key`). The
/// built-in sandbox never needs one.
pub(crate) fn key_required(config: &ProviderConfig) -> bool {
    match config.kind {
        ProviderKind::Sandbox => false,
        ProviderKind::Anthropic => true,
        ProviderKind::Openai | ProviderKind::Http => config.api_key_env.is_some(),
    }
}

/// Checks a key a person gave before it goes to the keyring: not empty or blank, no line
/// break or other control character, at most [`MAX_KEY_BYTES`]. The error names the field
/// `key` and never repeats the key.
pub(crate) fn validate_api_key(key: &str) -> Result<()> {
    let why = if key.trim().is_empty() {
        Some("is empty; give the provider's API key".to_owned())
    } else if key.len() > MAX_KEY_BYTES {
        Some(format!(
            "is longer than {MAX_KEY_BYTES} bytes; an API key is far shorter"
        ))
    } else if key.contains(['\n', '\r']) {
        Some("has a line break; give the key alone, on one line".to_owned())
    } else if key.chars().any(char::is_control) {
        Some("has a control character; an API key has none".to_owned())
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::invalid_input("key", why)),
        None => Ok(()),
    }
}

/// The API key for a call to this provider, read now: the environment variable named by
/// `api_key_env` when it is set, else the keyring's entry, else none. A required key that is
/// missing is `misconfigured`, with how to set it; nothing is sent then.
pub(crate) async fn api_key(
    config: &ProviderConfig,
) -> std::result::Result<Option<String>, AttemptError> {
    // The built-in sandbox takes no key: it never asks the keyring (which may be locked and
    // prompt on a desktop) for each of its attempts.
    if config.kind == ProviderKind::Sandbox {
        return Ok(None);
    }
    if let Some(key) = from_env(config) {
        return Ok(Some(key));
    }
    // An unreachable keyring is read as an empty one: the key may still come from the
    // environment, and a provider that needs none works without a Secret Service.
    if let Ok(Some(key)) = keyring_get(&config.name).await {
        return Ok(Some(key));
    }
    if key_required(config) {
        return Err(FailureKind::Misconfigured.because(missing_key_message(config)));
    }
    Ok(None)
}

/// Where this provider's key comes from now, without reading more of it than whether it exists.
pub(crate) async fn status(config: &ProviderConfig) -> KeyStatus {
    if config.kind == ProviderKind::Sandbox {
        return KeyStatus::NotSet { required: false };
    }
    if let Some(var) = env_var_set(config) {
        return KeyStatus::Env { var };
    }
    match keyring_get(&config.name).await {
        Ok(Some(_)) => KeyStatus::Keyring,
        _ => KeyStatus::NotSet {
            required: key_required(config),
        },
    }
}

/// How to give a provider the key it lacks, in words for the attempt's error.
fn missing_key_message(config: &ProviderConfig) -> String {
    let name = &config.name;
    let env = match &config.api_key_env {
        Some(var) => format!("or export {var}"),
        None => "or name an environment variable that holds it in api_key_env".to_owned(),
    };
    format!(
        "provider {name} needs an API key and none is set: run `onejob provider key set {name}` \
         (the key on standard input), enter it on the app's Providers screen, {env}"
    )
}

fn env_var_set(config: &ProviderConfig) -> Option<String> {
    let var = config.api_key_env.as_ref()?;
    std::env::var_os(var).map(|_| var.clone())
}

fn from_env(config: &ProviderConfig) -> Option<String> {
    std::env::var(config.api_key_env.as_ref()?).ok()
}

/// The keyring's key for a provider; `None` when it has none.
async fn keyring_get(provider: &str) -> Result<Option<String>> {
    let provider = provider.to_owned();
    blocking(move || match entry(&provider)?.get_password() {
        Ok(key) => Ok(Some(key)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(keyring_error("read the key from", &e)),
    })
    .await
}

async fn keyring_set(provider: &str, key: &str) -> Result<()> {
    let (provider, key) = (provider.to_owned(), key.to_owned());
    blocking(move || {
        entry(&provider)?
            .set_password(&key)
            .map_err(|e| keyring_error("store the key in", &e))
    })
    .await
}

/// Deletes the provider's entry; one that is not there is already cleared.
async fn keyring_delete(provider: &str) -> Result<()> {
    let provider = provider.to_owned();
    blocking(move || match entry(&provider)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(keyring_error("remove the key from", &e)),
    })
    .await
}

fn entry(provider: &str) -> Result<keyring::Entry> {
    keyring::Entry::new(SERVICE, provider).map_err(|e| keyring_error("open", &e))
}

/// Runs a keyring call, which blocks, off the async threads, and stops waiting after
/// [`KEYRING_PATIENCE`].
async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let task = tokio::task::spawn_blocking(call);
    match tokio::time::timeout(KEYRING_PATIENCE, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(Error::internal(format!("a keyring call failed: {e}"))),
        Err(_) => Err(storage(format!(
            "the OS keyring did not answer within {} s; is it locked?",
            KEYRING_PATIENCE.as_secs()
        ))),
    }
}

/// A keyring failure in words. Built from the variant, not the error's own text, so no
/// secret the error holds (`BadEncoding` carries the stored bytes) can reach a message.
fn keyring_error(doing: &str, e: &keyring::Error) -> Error {
    use keyring::Error as K;
    let why = match e {
        K::NoStorageAccess(inner) => format!("it cannot be accessed ({inner})"),
        K::PlatformFailure(inner) => format!("it failed ({inner})"),
        K::NoDefaultStore => {
            "there is none: no Secret Service is running in this session (on Linux, start gnome-keyring or another Secret Service), or this OS has no keyring onejob can use".to_owned()
        }
        K::BadEncoding(_) | K::BadDataFormat(..) => {
            "it holds something for this provider that is not a readable key; set the key again".to_owned()
        }
        K::Ambiguous(items) => format!(
            "it holds {} entries for this provider; remove the extra ones with the keyring's own tool",
            items.len()
        ),
        K::TooLong(field, limit) => format!("its {field} may be at most {limit} characters"),
        K::Invalid(field, reason) => format!("its {field} is invalid: {reason}"),
        other => format!("it refused ({})", variant_name(other)),
    };
    storage(format!("cannot {doing} the OS keyring: {why}"))
}

fn variant_name(e: &keyring::Error) -> &'static str {
    match e {
        keyring::Error::NotSupportedByStore(_) => "not supported by this keyring",
        keyring::Error::BadStoreFormat(_) => "the keyring's store is malformed",
        _ => "an unexpected keyring error",
    }
}

fn storage(message: String) -> Error {
    Error::keyring(message)
}

impl Engine {
    /// Where `provider`'s API key comes from at call time, never the key: `not_found` for a
    /// provider that is not configured. An unreachable keyring counts as one without the key.
    pub async fn key_status(&self, provider: &str) -> Result<KeyStatus> {
        let provider = self.provider(provider).await?;
        Ok(status(&provider.config).await)
    }

    /// Stores `key` as `provider`'s API key in the OS keyring, replacing any before. A bad
    /// key is `invalid_input` (field `key`) and changes nothing; an unknown provider is
    /// `not_found`; a keyring that cannot be reached or refuses is `storage`, in words that
    /// never carry the key.
    pub async fn set_provider_key(&self, provider: &str, key: &str) -> Result<()> {
        let provider = self.provider(provider).await?;
        validate_api_key(key)?;
        keyring_set(&provider.config.name, key).await
    }

    /// Removes `provider`'s key from the OS keyring; done when there is none. `not_found` for
    /// an unknown provider; a keyring that cannot be reached is `storage`.
    pub async fn clear_provider_key(&self, provider: &str) -> Result<()> {
        let provider = self.provider(provider).await?;
        keyring_delete(&provider.config.name).await
    }

    /// Removes the keyring entry of a provider that was just removed, best effort: the
    /// provider is gone either way, and a keyring that cannot be reached holds nothing to clear.
    pub(crate) async fn forget_provider_key(&self, provider: &str) {
        let name = provider.to_owned();
        let forgotten = blocking(move || {
            // No keyring in this session (a headless machine): nothing was kept, nothing to say.
            if keyring::Entry::store_status().is_err() {
                return Ok(());
            }
            match entry(&name)?.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                Err(e) => Err(keyring_error("remove the key from", &e)),
            }
        })
        .await;
        if let Err(e) = forgotten {
            eprintln!("onejob: provider {provider} was removed; its API key was not: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLANTED: &str = "sk-planted-4f1c";

    fn refused(key: &str) -> Error {
        validate_api_key(key).expect_err("refused")
    }

    fn field_of(error: &Error) -> &str {
        match error {
            Error::InvalidInput { details, .. } => &details.field,
            other => panic!("not invalid_input: {other:?}"),
        }
    }

    #[test]
    fn an_ordinary_key_is_accepted() {
        validate_api_key("sk-proj-abc_DEF-123").expect("accepted");
        validate_api_key(&"k".repeat(MAX_KEY_BYTES)).expect("exactly the limit");
        validate_api_key("key with inner spaces").expect("spaces are printable");
    }

    #[test]
    fn empty_and_blank_keys_are_refused() {
        for key in ["", " ", "\t  "] {
            assert_eq!(field_of(&refused(key)), "key", "{key:?}");
        }
    }

    #[test]
    fn line_breaks_and_control_characters_are_refused() {
        for key in [
            format!("{PLANTED}\n"),
            format!("{PLANTED}\r\nmore"),
            format!("{PLANTED}\u{0}"),
            format!("{PLANTED}\u{1b}[0m"),
            format!("{PLANTED}\u{7f}"),
        ] {
            let error = refused(&key);
            assert_eq!(field_of(&error), "key");
            assert!(!error.to_string().contains(PLANTED), "{error}");
        }
    }

    #[test]
    fn a_key_longer_than_the_limit_is_refused_without_repeating_it() {
        let key = format!("{PLANTED}{}", "k".repeat(MAX_KEY_BYTES));
        let error = refused(&key);
        assert_eq!(field_of(&error), "key");
        assert!(error.to_string().contains("4096"), "{error}");
        assert!(!error.to_string().contains(PLANTED), "{error}");
    }

    #[test]
    fn a_key_is_required_by_api_key_env_or_the_anthropic_kind() {
        let config = |kind: &str, env: Option<&str>| {
            let mut json = serde_json::json!({"name": "p", "kind": kind,
                "base_url": "http://127.0.0.1:9/", "soft_timeout_ms": 1,
                "hard_timeout_ms": 1, "honours_idempotency_key": false});
            if let Some(env) = env {
                json["api_key_env"] = env.into();
            }
            ProviderConfig::parse(&json.to_string()).expect("valid")
        };
        assert!(key_required(&config("anthropic", None)));
        assert!(key_required(&config("http", Some("VAR"))));
        assert!(key_required(&config("openai", Some("VAR"))));
        assert!(!key_required(&config("openai", None)));
        assert!(!key_required(&config("http", None)));
        assert!(!key_required(&config("sandbox", None)));
    }

    #[test]
    fn the_missing_key_message_says_how_to_set_it() {
        let json = r#"{"name":"paid","kind":"openai","base_url":"http://127.0.0.1:9/v1","api_key_env":"PAID_KEY","soft_timeout_ms":1,"hard_timeout_ms":1,"honours_idempotency_key":false}"#;
        let message = missing_key_message(&ProviderConfig::parse(json).expect("valid"));
        assert!(
            message.contains("onejob provider key set paid"),
            "{message}"
        );
        assert!(message.contains("standard input"), "{message}");
        assert!(message.contains("Providers screen"), "{message}");
        assert!(message.contains("export PAID_KEY"), "{message}");
    }

    #[test]
    fn key_statuses_serialise_as_a_tagged_union() {
        let json = |s: &KeyStatus| serde_json::to_value(s).expect("serialises");
        assert_eq!(
            json(&KeyStatus::Env { var: "V".into() }),
            serde_json::json!({"source": "env", "var": "V"})
        );
        assert_eq!(
            json(&KeyStatus::Keyring),
            serde_json::json!({"source": "keyring"})
        );
        assert_eq!(
            json(&KeyStatus::NotSet { required: true }),
            serde_json::json!({"source": "not_set", "required": true})
        );
    }

    #[tokio::test]
    async fn the_sandbox_takes_no_key_and_never_asks_the_keyring() {
        let json = r#"{"name":"sandbox","kind":"sandbox","api_key_env":"ONEJOB_TEST_NEVER_SET_FOR_SANDBOX","soft_timeout_ms":1,"hard_timeout_ms":1,"honours_idempotency_key":true}"#;
        let config = ProviderConfig::parse(json).expect("valid");
        assert!(!key_required(&config));
        assert_eq!(api_key(&config).await.expect("no key, no failure"), None);
        assert_eq!(status(&config).await, KeyStatus::NotSet { required: false });
    }
}
