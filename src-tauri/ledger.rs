//! Which ledger the app opens (SPEC §14): `ONEJOB_DB` when set (as for the CLI), else the
//! choice saved from Settings, else the embedded SQLite file in the app's data folder.
//!
//! A choice is saved as one line in `<config dir>/dev.onejob.app/ledger` and applies when the
//! app starts next: the running app keeps the ledger it opened. A PostgreSQL URL is saved
//! without a password, and one that carries a password is refused: the password belongs in
//! `~/.pgpass` (or `PGPASSFILE`, or `PGPASSWORD`), where PostgreSQL's own tools look too, so
//! the app never writes it down.

use std::path::PathBuf;

use onejob_engine::{default_db_path, Engine, Error};

/// The environment variable that names the ledger, for the app as for the CLI.
pub const ENV: &str = "ONEJOB_DB";

/// Where the choice made in Settings is kept.
pub fn choice_file() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join(onejob_engine::APP_IDENTIFIER)
        .join("ledger")
}

/// Where the ledger the running app opened was named; set once at start.
static OPENED_FROM: std::sync::OnceLock<Source> = std::sync::OnceLock::new();

/// Records where the running app's ledger was named.
pub fn opened_from(source: Source) {
    let _ = OPENED_FROM.set(source);
}

/// Where the running app's ledger was named (the default file when nothing was recorded).
pub fn source() -> Source {
    OPENED_FROM.get().copied().unwrap_or(Source::Default)
}

/// The choice saved from Settings, if any.
pub fn saved() -> Option<String> {
    let text = std::fs::read_to_string(choice_file()).ok()?;
    let line = text.lines().next()?.trim().to_owned();
    (!line.is_empty()).then_some(line)
}

/// The ledger the app opens at start, and where that choice came from.
pub fn to_open() -> (String, Source) {
    if let Some(env) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        return (env.to_string_lossy().into_owned(), Source::Environment);
    }
    if let Some(saved) = saved() {
        return (saved, Source::Settings);
    }
    (default_db_path().display().to_string(), Source::Default)
}

/// Where the ledger the app opened was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `ONEJOB_DB` was set.
    Environment,
    /// The choice saved from Settings.
    Settings,
    /// The embedded file in the app's data folder.
    Default,
}

/// Checks `location` by opening it, then saves it as the ledger to open from the next start.
/// Empty text goes back to the default file. A URL that carries a password is refused
/// (`invalid_input`, field `ledger`) without being opened or repeated.
pub async fn choose(location: &str) -> Result<Option<String>, Error> {
    let location = location.trim();
    let file = choice_file();
    if location.is_empty() {
        return match std::fs::remove_file(&file) {
            Ok(()) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(storage(format!("cannot remove {}: {e}", file.display()))),
        };
    }
    if has_password(location) {
        return Err(Error::invalid_input(
            "ledger",
            "this URL carries a password; onejob does not save passwords: leave it out of the \
             URL and put it in ~/.pgpass (or PGPASSFILE or PGPASSWORD), where PostgreSQL's own \
             tools find it too",
        ));
    }
    // Opened once now, so a mistake is reported here and not at the next start.
    let engine = Engine::open(location).await.map_err(|e| match e {
        Error::InvalidInput { message, .. } => Error::invalid_input("ledger", message),
        other => other,
    })?;
    let shown = engine.location().to_owned();
    engine.close().await;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| storage(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(&file, format!("{location}\n"))
        .map_err(|e| storage(format!("cannot write {}: {e}", file.display())))?;
    Ok(Some(shown))
}

/// Whether a PostgreSQL URL names a password (in the user part or as `password=`).
fn has_password(location: &str) -> bool {
    onejob_engine::store::postgres::is_url(location)
        && onejob_engine::store::postgres::redact(location) != location
}

pub(crate) fn storage(message: String) -> Error {
    Error::Storage {
        message,
        details: onejob_engine::error::EmptyDetails {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_a_url_is_noticed_and_a_path_is_never_a_url() {
        assert!(has_password("postgres://a:b@h/db"));
        assert!(has_password("postgresql://a@h/db?password=b"));
        assert!(!has_password("postgres://a@h/db"));
        assert!(!has_password("/home/a:b@c/onejob.db"));
    }
}
