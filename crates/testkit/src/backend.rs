//! Which ledger the engine's and the command line's tests run on, so one suite proves every
//! rule on both backends (SPEC §14), as River runs one driver suite against every database.
//!
//! Unset, [`TEST_POSTGRES`] leaves every test on its own SQLite file, as before. Set to a
//! PostgreSQL server's URL (`postgres://onejob@127.0.0.1:5433`, with no database or with
//! `/postgres`), every ledger a test asks for is a fresh database of its own on that server.
//! `with-postgres` starts a throwaway cluster and sets it for the command it runs.
//!
//! Everything here is synchronous (`psql`, `pg_dump`), so it works inside a tokio runtime
//! and outside one alike.

use std::io::{Error, ErrorKind};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::postgres::bin_dir;

/// The variable that moves the tests to PostgreSQL: a server URL, with no database.
pub const TEST_POSTGRES: &str = "ONEJOB_TEST_POSTGRES";

/// The database on a server that every role can connect to, where databases are created.
const MAINTENANCE_DB: &str = "postgres";

/// The backend a test pass runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite, one file per ledger: the default.
    Sqlite,
    /// A PostgreSQL server, one database per ledger: [`TEST_POSTGRES`] is set.
    Postgres,
}

/// The backend this test pass runs on.
pub fn backend() -> Backend {
    match test_server() {
        Some(_) => Backend::Postgres,
        None => Backend::Sqlite,
    }
}

/// Whether this test pass runs on PostgreSQL.
pub fn postgres_backend() -> bool {
    backend() == Backend::Postgres
}

/// For a test about the SQLite file itself (its WAL, its size limit, its folder): true, after
/// saying so on stderr, when this pass runs on PostgreSQL, where the test has no meaning; the
/// test then returns at once.
pub fn sqlite_only(about: &str) -> bool {
    let skip = postgres_backend();
    if skip {
        eprintln!("sqlite only: {about}");
    }
    skip
}

/// Where a test's ledger lives: `sqlite_path` (as given) on SQLite; on PostgreSQL a new, empty
/// database of its own on the [`TEST_POSTGRES`] server, as a `postgres://` URL. Either is what
/// `Engine::open`, `--db` and `ONEJOB_DB` take; a test that reopens "the same ledger" reopens
/// this location. The test process is cut off the desktop's keyring first
/// ([`crate::isolate_keyring`]).
///
/// # Panics
///
/// When the database cannot be created: the test cannot run without its ledger.
pub fn ledger_location(sqlite_path: &Path) -> String {
    let server = test_server();
    ledger_location_on(server.as_deref(), sqlite_path)
        .unwrap_or_else(|e| panic!("no ledger for the test: {e}"))
}

/// [`ledger_location`] with the server given rather than read from the environment.
pub fn ledger_location_on(server: Option<&str>, sqlite_path: &Path) -> std::io::Result<String> {
    // Before the test's first ledger, so nothing it runs on one can reach a desktop's keyring.
    crate::isolate_keyring();
    let Some(server) = server else {
        return sqlite_path.to_str().map(str::to_owned).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("the ledger's path is not UTF-8: {}", sqlite_path.display()),
            )
        });
    };
    let server = ServerUrl::parse(server)?;
    let name = format!("t_{}", uuid::Uuid::now_v7().simple());
    psql(
        &server.database(MAINTENANCE_DB),
        &format!("CREATE DATABASE \"{name}\""),
    )?;
    Ok(server.database(&name))
}

/// Whether a ledger has been created at `location`: the file exists, or the database holds
/// any table at all (a new database is empty until the engine first opens it).
///
/// # Panics
///
/// When the database cannot be asked.
pub fn ledger_exists(location: &str) -> bool {
    if !is_url(location) {
        return Path::new(location).exists();
    }
    let tables = psql(
        location,
        "SELECT count(*) FROM information_schema.tables \
         WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
    .unwrap_or_else(|e| panic!("cannot look into {location}: {e}"));
    tables.trim() != "0"
}

/// Everything the ledger at `location` has written, for a test that shows a secret is in none
/// of it: on SQLite every file in the ledger file's folder (the database, its WAL and shared
/// memory), on PostgreSQL a dump of the database; each as a name and its bytes.
///
/// # Panics
///
/// When a file cannot be read or the database cannot be dumped.
pub fn ledger_contents(location: &str) -> Vec<(String, Vec<u8>)> {
    if is_url(location) {
        let dump = run(Command::new(program("pg_dump")).args(["--no-owner", "-d", location]))
            .unwrap_or_else(|e| panic!("cannot dump {location}: {e}"));
        return vec![(format!("pg_dump {location}"), dump)];
    }
    let folder = Path::new(location).parent().unwrap_or(Path::new("."));
    let entries = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.display()));
    entries
        .map(|entry| {
            let path = entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.display()))
                .path();
            let bytes =
                std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path:?}: {e}"));
            (path.display().to_string(), bytes)
        })
        .collect()
}

/// Whether `location` names a PostgreSQL database rather than a SQLite file.
pub fn is_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// The server URL the environment gives, if any.
fn test_server() -> Option<String> {
    std::env::var(TEST_POSTGRES)
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// A server URL split where a database name goes: `postgres://user@host:port` and what
/// follows the database name (`?sslmode=…`), if anything.
struct ServerUrl {
    base: String,
    query: String,
}

impl ServerUrl {
    fn parse(url: &str) -> std::io::Result<ServerUrl> {
        let refused = |why: &str| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("{TEST_POSTGRES} must be a server URL like postgres://onejob@127.0.0.1:5432 ({why}): {url}"),
            )
        };
        let url = url.trim();
        let scheme_end = ["postgres://", "postgresql://"]
            .iter()
            .find(|scheme| url.starts_with(**scheme))
            .map(|scheme| scheme.len())
            .ok_or_else(|| refused("not a postgres:// URL"))?;
        let (head, query) = match url.find('?') {
            Some(at) => url.split_at(at),
            None => (url, ""),
        };
        let (base, database) = match head[scheme_end..].find('/') {
            Some(at) => head.split_at(scheme_end + at),
            None => (head, ""),
        };
        let database = database.trim_start_matches('/');
        if !database.is_empty() && database != MAINTENANCE_DB {
            return Err(refused("it names a database other than postgres"));
        }
        if base.len() == scheme_end {
            return Err(refused("it names no host"));
        }
        Ok(ServerUrl {
            base: base.to_owned(),
            query: query.to_owned(),
        })
    }

    fn database(&self, name: &str) -> String {
        format!("{}/{name}{}", self.base, self.query)
    }
}

/// Runs one SQL command on the database at `url` with `psql`; returns its unaligned output.
pub(crate) fn psql(url: &str, sql: &str) -> std::io::Result<String> {
    let out = run(Command::new(program("psql")).args([
        "-X",
        "-q",
        "-A",
        "-t",
        "-v",
        "ON_ERROR_STOP=1",
        "-d",
        url,
        "-c",
        sql,
    ]))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A program of the newest installed PostgreSQL, or its bare name (found on PATH) if none is
/// under /usr/lib/postgresql.
fn program(name: &str) -> std::path::PathBuf {
    bin_dir()
        .map(|bin| bin.join(name))
        .unwrap_or_else(|_| name.into())
}

/// Runs `command` to its end; its stdout, or its stderr as the error.
fn run(command: &mut Command) -> std::io::Result<Vec<u8>> {
    let out = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => Error::new(
                ErrorKind::NotFound,
                "PostgreSQL's programs are not installed (scripts/setup installs Debian's postgresql)",
            ),
            _ => e,
        })?;
    if !out.status.success() {
        return Err(Error::other(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Postgres;

    #[test]
    fn without_a_server_a_ledger_is_the_path_it_was_given() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("ledger").join("onejob.db");
        let location = ledger_location_on(None, &path).expect("a location");
        assert_eq!(location, path.to_str().expect("utf-8"));
        assert!(!is_url(&location));
        assert!(!ledger_exists(&location));
        std::fs::create_dir_all(dir.path().join("ledger")).expect("folder");
        std::fs::write(&path, b"a ledger file").expect("written");
        assert!(ledger_exists(&location));
        let contents = ledger_contents(&location);
        assert_eq!(contents.len(), 1, "{contents:?}");
        assert_eq!(contents[0].1, b"a ledger file");
    }

    #[test]
    fn under_a_server_every_ledger_is_a_fresh_database_of_its_own() {
        let cluster = Postgres::start_for_tests().expect("a cluster");
        let path = Path::new("/nowhere/onejob.db");
        let mut seen = Vec::new();
        // The variable's forms: no database, the maintenance database, a trailing slash.
        let server = cluster.server_url();
        for given in [server.clone(), cluster.url(), format!("{server}/")] {
            let location = ledger_location_on(Some(&given), path).expect("a database");
            let prefix = format!("{server}/t_");
            assert!(location.starts_with(&prefix), "{location}");
            let name = &location[server.len() + 1..];
            assert!(
                name.chars()
                    .all(|c| c == '_' || c.is_ascii_lowercase() || c.is_ascii_digit()),
                "{name}"
            );
            // It exists, it is empty, and it is nobody else's.
            assert!(is_url(&location));
            assert!(!ledger_exists(&location), "{location} is not empty");
            assert!(!seen.contains(&location), "{location} twice");
            psql(&location, "CREATE TABLE jobs (id text)").expect("a table");
            assert!(ledger_exists(&location));
            seen.push(location);
        }
        // Each database is separate: the table made in one is in no other.
        let fresh = ledger_location_on(Some(&server), path).expect("a database");
        assert!(!ledger_exists(&fresh));
        let dump = ledger_contents(&seen[0]);
        assert_eq!(dump.len(), 1);
        assert!(String::from_utf8_lossy(&dump[0].1).contains("CREATE TABLE public.jobs"));
    }

    #[test]
    fn a_server_url_naming_another_database_or_no_server_is_refused() {
        let path = Path::new("/nowhere/onejob.db");
        for url in [
            "postgres://onejob@127.0.0.1:5432/ledger",
            "mysql://onejob@127.0.0.1:5432",
            "postgres://",
        ] {
            let refused = ledger_location_on(Some(url), path).expect_err(url);
            assert_eq!(refused.kind(), ErrorKind::InvalidInput, "{url}: {refused}");
            assert!(refused.to_string().contains(TEST_POSTGRES), "{refused}");
        }
    }

    #[test]
    fn a_server_url_keeps_its_options_after_the_database_name() {
        let server = ServerUrl::parse("postgresql://u:pw@db.example:6543/postgres?sslmode=disable")
            .expect("parsed");
        assert_eq!(
            server.database("t_1"),
            "postgresql://u:pw@db.example:6543/t_1?sslmode=disable"
        );
    }
}
