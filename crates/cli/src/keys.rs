//! `provider key set` and `provider key clear`: a provider's API key in the OS keyring. The key
//! comes from standard input only, never an argument, and is never printed.

use std::io::{IsTerminal, Read};

use onejob_engine::providers::keys::MAX_KEY_BYTES;
use onejob_engine::{Engine, Error, Result};
use serde_json::{json, Value};

use crate::args::KeyCommand;

/// Refuses anything after the provider's name before the database is opened or stdin read.
/// The words never repeat what was given: it is most likely the key itself.
pub fn check_args(command: &KeyCommand) -> Result<()> {
    match command {
        KeyCommand::Set { extra, .. } if !extra.is_empty() => Err(Error::invalid_input(
            "key",
            "is read from standard input, never from an argument (arguments are visible to other \
             users and kept in shell history): run `onejob provider key set NAME` and type or pipe the key",
        )),
        _ => Ok(()),
    }
}

/// Runs the key command; prints `{"provider", "key": <KeyStatus>}` as it stands afterwards.
pub async fn run(engine: &Engine, command: KeyCommand) -> Result<Value> {
    let name = match command {
        KeyCommand::Set { name, .. } => {
            // An unknown provider is refused before anyone types a key for it.
            engine.provider(&name).await?;
            let key = read_key(&name)?;
            engine.set_provider_key(&name, &key).await?;
            name
        }
        KeyCommand::Clear { name } => {
            engine.clear_provider_key(&name).await?;
            name
        }
    };
    let status = engine.key_status(&name).await?;
    Ok(json!({ "provider": name, "key": status }))
}

/// The key from standard input: at a terminal read without echo, otherwise read up to just
/// past the limit (so a huge input is refused without being held); one trailing `\n` or
/// `\r\n` is dropped. The engine checks what remains.
fn read_key(provider: &str) -> Result<String> {
    let cannot_read =
        |why: String| Error::invalid_input("key", format!("cannot read standard input: {why}"));
    if std::io::stdin().is_terminal() {
        let prompt = format!("API key for {provider} (not shown): ");
        return rpassword::prompt_password(prompt).map_err(|e| cannot_read(e.to_string()));
    }
    // The limit, a `\r\n`, and one byte more: anything that long is refused as too long.
    let limit = u64::try_from(MAX_KEY_BYTES + 3).map_err(|e| Error::internal(e.to_string()))?;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot_read(e.to_string()))?;
    let text =
        String::from_utf8(bytes).map_err(|_| cannot_read("it is not UTF-8 text".to_owned()))?;
    Ok(strip_one_newline(&text).to_owned())
}

/// `key\n` and `key\r\n` are `key`; only one line ending is dropped.
fn strip_one_newline(text: &str) -> &str {
    text.strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_trailing_line_ending_is_dropped() {
        assert_eq!(strip_one_newline("k\n"), "k");
        assert_eq!(strip_one_newline("k\r\n"), "k");
        assert_eq!(strip_one_newline("k"), "k");
        assert_eq!(strip_one_newline("k\n\n"), "k\n");
    }
}
