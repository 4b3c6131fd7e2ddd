//! Which ledger the app opens (SPEC §14): `ONEJOB_DB` when set (as for the CLI), else the
//! choice saved from Settings, else the embedded SQLite file in the app's data folder.
//!
//! A choice is saved as one line in `<config dir>/dev.onejob.app/ledger` and applies when the
//! app starts next: the running app keeps the ledger it opened. A PostgreSQL URL is saved
//! without a password, and one that carries a password is refused: the password belongs in
//! `~/.pgpass` (or `PGPASSFILE`, or `PGPASSWORD`), where PostgreSQL's own tools look too, so
//! the app never writes it down. A file is saved as an absolute path, `~` expanded, so the
//! folder the app starts from never changes which file it opens; and a saved file that is
//! gone at start is not made anew behind the person's back (see [`is_missing`]).

use std::path::{Path, PathBuf};

use onejob_engine::error::StorageKind;
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

/// Where the ledger the running app opened was named: set at start, and again when a ledger
/// chosen in Settings is opened because none was.
static OPENED_FROM: std::sync::Mutex<Option<Source>> = std::sync::Mutex::new(None);

/// Records where the running app's ledger was named.
pub fn opened_from(source: Source) {
    *OPENED_FROM.lock().unwrap_or_else(|p| p.into_inner()) = Some(source);
}

/// Where the running app's ledger was named (the default file when nothing was recorded).
pub fn source() -> Source {
    OPENED_FROM
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or(Source::Default)
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

/// Whether the ledger to open is a file chosen in Settings that is not there any more (its
/// drive unmounted, or the file removed): opening it would make a new, empty ledger in its
/// place, so the app asks first. A file named by `ONEJOB_DB` or the default file is made when
/// missing, as the CLI does.
pub fn is_missing(location: &str, source: Source) -> bool {
    source == Source::Settings
        && !onejob_engine::store::postgres::is_url(location)
        && !Path::new(location).exists()
}

/// A file ledger's path as it is checked, saved and shown: `~` and `~/…` expanded to the home
/// folder, then made absolute against the current folder. A URL is left as it is.
pub fn absolute(location: &str) -> Result<String, Error> {
    if onejob_engine::store::postgres::is_url(location) || location.contains("://") {
        return Ok(location.to_owned());
    }
    let path = match location.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', std::path::MAIN_SEPARATOR]) => {
            let home = dirs::home_dir().ok_or_else(|| {
                Error::invalid_input(
                    "ledger",
                    "~ names the home folder, which is not known here; give the full path",
                )
            })?;
            match rest.trim_start_matches(['/', std::path::MAIN_SEPARATOR]) {
                "" => home,
                rest => home.join(rest),
            }
        }
        _ => PathBuf::from(location),
    };
    let path = std::path::absolute(&path).map_err(|e| {
        Error::invalid_input(
            "ledger",
            format!("{location} cannot be made a full path: {e}"),
        )
    })?;
    Ok(path.display().to_string())
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

/// Checks `location` by opening it, then saves it as the ledger to open from the next start;
/// a file as its absolute path (see [`absolute`]). Empty text goes back to the default file.
/// A URL that carries a password is refused (`invalid_input`, field `ledger`) without being
/// opened or repeated.
pub async fn choose(location: &str) -> Result<Option<String>, Error> {
    let location = location.trim();
    let file = choice_file();
    if location.is_empty() {
        return match std::fs::remove_file(&file) {
            Ok(()) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(storage(
                StorageKind::Failed,
                format!("cannot remove {}: {e}", file.display()),
            )),
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
    let location = absolute(location)?;
    let location = location.as_str();
    // Opened once now, so a mistake is reported here and not at the next start.
    let engine = Engine::open(location).await.map_err(|e| match e {
        Error::InvalidInput { message, .. } => Error::invalid_input("ledger", message),
        other => other,
    })?;
    let shown = engine.location().to_owned();
    engine.close().await;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            storage(
                StorageKind::Failed,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
    }
    std::fs::write(&file, format!("{location}\n")).map_err(|e| {
        storage(
            StorageKind::Failed,
            format!("cannot write {}: {e}", file.display()),
        )
    })?;
    Ok(Some(shown))
}

/// Whether a PostgreSQL URL names a password (in the user part or as `password=`).
fn has_password(location: &str) -> bool {
    onejob_engine::store::postgres::is_url(location)
        && onejob_engine::store::postgres::redact(location) != location
}

/// `storage` of `kind` for a failure of the app's own files (its settings, a file moved aside)
/// or of its ledger as the window says it, in the app's words.
pub(crate) fn storage(kind: StorageKind, message: String) -> Error {
    Error::Storage {
        message,
        details: onejob_engine::error::StorageDetails { kind },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_path_is_made_absolute_with_the_home_folder_for_a_tilde() {
        let home = dirs::home_dir().expect("a home folder");
        let cwd = std::env::current_dir().expect("a current folder");
        assert_eq!(
            absolute("~/team.db").unwrap(),
            home.join("team.db").display().to_string()
        );
        assert_eq!(absolute("~").unwrap(), home.display().to_string());
        assert_eq!(
            absolute("team.db").unwrap(),
            cwd.join("team.db").display().to_string()
        );
        // Only the home folder is `~`; a file named so elsewhere stays a name.
        assert_eq!(
            absolute("~team.db").unwrap(),
            cwd.join("~team.db").display().to_string()
        );
        let full = cwd.join("a").join("team.db").display().to_string();
        assert_eq!(absolute(&full).unwrap(), full);
        assert_eq!(absolute("postgres://a@h/db").unwrap(), "postgres://a@h/db");
    }

    #[test]
    fn only_a_file_chosen_in_settings_that_is_gone_is_missing() {
        let dir = tempfile::tempdir().expect("a folder");
        let there = dir.path().join("team.db");
        std::fs::write(&there, b"").expect("a file");
        let gone = dir.path().join("unmounted").join("team.db");
        let (there, gone) = (there.display().to_string(), gone.display().to_string());
        assert!(is_missing(&gone, Source::Settings));
        assert!(!is_missing(&there, Source::Settings));
        assert!(
            !is_missing(&gone, Source::Environment),
            "ONEJOB_DB makes it, as the CLI"
        );
        assert!(
            !is_missing(&gone, Source::Default),
            "the first start makes it"
        );
        assert!(!is_missing("postgres://a@127.0.0.1/db", Source::Settings));
    }

    #[test]
    fn a_password_in_a_url_is_noticed_and_a_path_is_never_a_url() {
        assert!(has_password("postgres://a:b@h/db"));
        assert!(has_password("postgresql://a@h/db?password=b"));
        assert!(!has_password("postgres://a@h/db"));
        assert!(!has_password("/home/a:b@c/onejob.db"));
    }
}
