//! The shared backend (SPEC §14): one PostgreSQL database that several hosts use at once.
//!
//! - Write transactions run at READ COMMITTED with no ledger-wide lock: writers on different
//!   jobs never wait for each other. A transaction that reads to decide first locks the one
//!   job it concerns (`FOR NO KEY UPDATE`; a group locks all of its jobs in one statement, in
//!   id order), claims pass over a job another host holds (`SKIP LOCKED`), and every other
//!   decision is one guarded statement. The constraints (one job per key, one open attempt,
//!   guarded transitions, append-only history) stand beneath it on their own.
//! - Every connection ends a transaction left idle for 10 s and a statement running for 30 s,
//!   so a frozen host holds its jobs' locks for seconds at most.
//! - Times that decide come from the database's clock (`now()`), never a host's.
//! - Changes are announced with `NOTIFY onejob_changes` by statement triggers; `changes`
//!   listens, and reconnects when the connection drops.
//! - Migrations take sqlx's advisory lock, so processes that start together apply them once.
//! - A URL's password (or `PGPASSWORD`) never appears in a location or an error.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection};
use tokio::sync::watch;

use crate::error::{EmptyDetails, Error, Result};

/// The channel the schema's triggers notify on every change.
pub const CHANNEL: &str = "onejob_changes";

/// How long a connection may take to open (and a pooled one to be handed out, its ping
/// included) before the server is reported unreachable: seconds, not the OS's TCP timeout.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings every connection of the ledger starts with. The server ends a transaction left
/// idle for 10 s (a frozen host's, SPEC §14) and any statement running for 30 s, and probes
/// an idle client's TCP connection after 5 s, every 2 s, three times: a host that vanished
/// holds nothing for long. (sqlx sets no client-side keepalive; a host's own deadlines are
/// `CONNECT_TIMEOUT` and the statement timeout.)
const SESSION: [(&str, &str); 5] = [
    ("idle_in_transaction_session_timeout", "10s"),
    ("statement_timeout", "30s"),
    ("tcp_keepalives_idle", "5"),
    ("tcp_keepalives_interval", "2"),
    ("tcp_keepalives_count", "3"),
];

/// The pool of one PostgreSQL ledger.
#[derive(Clone)]
pub struct PgDb {
    pub pool: PgPool,
    /// The URL without its password, for display.
    pub location: String,
}

/// Whether `location` names a PostgreSQL ledger (`postgres://` or `postgresql://`).
pub fn is_url(location: &str) -> bool {
    let lower = location.get(..13).unwrap_or(location).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl PgDb {
    /// Connects to the database at `url` and brings its schema up to date.
    pub async fn open(url: &str) -> Result<PgDb> {
        let location = redact(url);
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            Error::invalid_input(
                "db",
                scrub(
                    &format!("{location} is not a PostgreSQL URL onejob can use: {e}"),
                    url,
                ),
            )
        })?;
        let options = options.application_name("onejob").options(SESSION);
        let secret = options_password(url);
        let fail = |e: sqlx::Error| open_error(&location, e, secret.as_deref());
        // One connection first: a pool retries a refused connection until its timeout, and
        // reports only that it timed out; this says at once what went wrong. A host that does
        // not answer at all is reported as soon as one that refuses.
        let probe = tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(&options))
            .await
            .map_err(|_| fail(sqlx::Error::PoolTimedOut))?
            .map_err(fail)?;
        probe.close().await.map_err(fail)?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            // A connection the server dropped while it sat in the pool (a restart, a
            // terminated backend) is found by a ping and closed, never handed out again.
            .test_before_acquire(true)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(fail)?;
        sqlx::migrate!("../../migrations/postgres")
            .run(&pool)
            .await
            .map_err(|e| match e {
                sqlx::migrate::MigrateError::Execute(e) => fail(e),
                other => Error::Storage {
                    message: format!("{location}: migration: {other}"),
                    details: EmptyDetails {},
                },
            })?;
        Ok(PgDb { pool, location })
    }

    /// A counter that rises whenever the ledger changes, whoever changed it: `LISTEN` on a
    /// connection of its own. When that connection drops it reconnects, and counts a change,
    /// since notifications sent meanwhile are lost.
    pub async fn changes(&self) -> Result<watch::Receiver<u64>> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen(CHANNEL).await?;
        let (tx, rx) = watch::channel(0u64);
        tokio::spawn(async move {
            let mut failures = 0u32;
            loop {
                tokio::select! {
                    () = tx.closed() => break,
                    next = listener.try_recv() => match next {
                        // A notification, or a lost connection that the next call restores.
                        Ok(_) => {
                            failures = 0;
                            tx.send_modify(|n| *n += 1);
                        }
                        // The server is unreachable: try again, a little later each time.
                        Err(_) => {
                            failures = failures.saturating_add(1);
                            let wait = Duration::from_millis(100 * u64::from(failures.min(50)));
                            tokio::time::sleep(wait).await;
                        }
                    },
                }
            }
        });
        Ok(rx)
    }
}

/// The URL with its password replaced by `***`, in the user part and in a `password=` query
/// parameter alike.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => pair.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("&");
            format!("{path}?{query}")
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The password the connection will use: the URL's, or `PGPASSWORD`.
fn options_password(url: &str) -> Option<String> {
    let from_url = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split(['/', '?']).next())
        .and_then(|authority| authority.rsplit_once('@'))
        .and_then(|(user, _)| user.split_once(':'))
        .map(|(_, password)| password.to_owned());
    from_url
        .filter(|p| !p.is_empty())
        .or_else(|| std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()))
}

/// `text` with every occurrence of the password in `url` (or `PGPASSWORD`) replaced.
fn scrub(text: &str, url: &str) -> String {
    match options_password(url) {
        Some(secret) => text.replace(&secret, "***"),
        None => text.to_owned(),
    }
}

/// A failure to open, said in a person's terms: unreachable, refused, or lacking rights.
fn open_error(location: &str, e: sqlx::Error, secret: Option<&str>) -> Error {
    let message = match &e {
        sqlx::Error::Io(io) => {
            format!("cannot reach the PostgreSQL server of {location}: {io}")
        }
        sqlx::Error::PoolTimedOut => format!(
            "cannot reach the PostgreSQL server of {location}: no connection within {}s",
            CONNECT_TIMEOUT.as_secs()
        ),
        sqlx::Error::Tls(tls) => format!("{location}: TLS failed: {tls}"),
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            match code.as_str() {
                "28P01" | "28000" => {
                    format!("{location}: the server refused the login: {}", db.message())
                }
                "3D000" => format!("{location}: {}", db.message()),
                "42501" => format!(
                    "{location}: the role lacks the rights onejob needs (to create and change its \
                     tables in the database's public schema; grant them or make the role the \
                     database's owner): {}",
                    db.message()
                ),
                _ => format!("{location}: {}", db.message()),
            }
        }
        other => format!("{location}: {other}"),
    };
    let message = match secret {
        Some(secret) => message.replace(secret, "***"),
        None => message,
    };
    Error::Storage {
        message,
        details: EmptyDetails {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_survives_redaction() {
        assert_eq!(
            redact("postgres://alice:s3cret@db.example:5432/ledger"),
            "postgres://alice:***@db.example:5432/ledger"
        );
        assert_eq!(
            redact("postgresql://alice@127.0.0.1/ledger?password=s3cret&sslmode=disable"),
            "postgresql://alice@127.0.0.1/ledger?password=***&sslmode=disable"
        );
        assert_eq!(
            redact("postgres://127.0.0.1:5432/ledger"),
            "postgres://127.0.0.1:5432/ledger"
        );
        // An @ inside the password: the host is after the last one.
        assert_eq!(
            redact("postgres://bob:p@ss@h/db"),
            "postgres://bob:***@h/db"
        );
    }

    #[test]
    fn only_postgres_schemes_are_urls() {
        assert!(is_url("postgres://h/db"));
        assert!(is_url("PostgreSQL://h/db"));
        assert!(!is_url("/tmp/onejob.db"));
        assert!(!is_url("mysql://h/db"));
    }
}
