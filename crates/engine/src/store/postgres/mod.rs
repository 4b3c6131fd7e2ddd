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
//!   listens on a connection of its own, pings it when it has been quiet for a while, and
//!   reconnects when the connection drops or stops answering.
//! - A server that stops answering without closing its connections (a host suspended or cut
//!   off) is noticed in seconds: a statement still waiting after `PATIENCE` makes the
//!   process ask the server on a new connection whether it answers at all; if it does not, the
//!   statement fails with `storage` and its connection is closed, never handed out again. A
//!   statement waiting on another host's row lock is left to wait: the server still answers.
//! - Migrations take sqlx's advisory lock, so processes that start together apply them once.
//! - A URL's password (or `PGPASSWORD`) never appears in a location or an error.
//!
//! - this file: opening a ledger (the pool, the connections' settings, the schema).
//! - `liveness.rs`: whether the server answers, and the watch every statement runs under.
//! - `tx.rs`: a write transaction on a watched connection.
//! - `listen.rs`: the change feed, `LISTEN` on a connection of its own.
//! - `url.rs`: telling a PostgreSQL URL, and keeping its password out of what is shown.

mod hosts;
mod listen;
mod liveness;
mod tx;
mod url;

pub use hosts::Primary;
pub(crate) use liveness::{PgConn, Watch};
pub(crate) use tx::PgTx;
pub use url::{is_url, redact};

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection};

use crate::error::{Error, Result, StorageKind};

use hosts::Hosts;
use liveness::Liveness;
use url::{options_password, scrub};

/// The channel the schema's triggers notify on every change.
pub(crate) const CHANNEL: &str = "onejob_changes";

/// How long a connection may take to open (and a pooled one to be handed out, its ping
/// included) before the server is reported unreachable: seconds, not the OS's TCP timeout.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a statement may wait for its answer before the process asks the server, on a new
/// connection, whether it answers at all; asked again as often while the statement waits.
pub(crate) const PATIENCE: Duration = Duration::from_secs(3);

/// How long that question waits for a connection and a `SELECT 1`: a server that answers
/// does so in milliseconds, even when it is busy.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Settings every connection of the ledger starts with. The server ends a transaction left
/// idle for 10 s (a frozen host's, SPEC §14) and any statement running for 30 s, and probes
/// an idle client's TCP connection after 5 s, every 2 s, three times: a host that vanished
/// holds nothing for long. (sqlx sets no client-side keepalive; a host's own deadlines are
/// `CONNECT_TIMEOUT` and the statement timeout.)
/// A commit waits until it is durable on the primary and, where the primary names synchronous
/// standbys, flushed on one of them (`synchronous_commit=on`), whatever the server's default:
/// an attempt's move to `in_flight` is never acknowledged before a standby that may take over
/// holds it (SPEC §14, docs/adr/0066).
const SESSION: [(&str, &str); 6] = [
    ("synchronous_commit", "on"),
    ("idle_in_transaction_session_timeout", "10s"),
    ("statement_timeout", "30s"),
    ("tcp_keepalives_idle", "5"),
    ("tcp_keepalives_interval", "2"),
    ("tcp_keepalives_count", "3"),
];

/// The pool of one PostgreSQL ledger.
#[derive(Clone)]
pub(crate) struct PgDb {
    pub pool: PgPool,
    /// The URL without its password, for display.
    pub location: String,
    /// Asks the server whether it answers, for statements that wait long.
    live: Arc<Liveness>,
}

impl PgDb {
    /// Connects to the database at `url` and brings its schema up to date.
    pub async fn open(url: &str) -> Result<PgDb> {
        let location = redact(url);
        let bad = |e: String| {
            Error::invalid_input(
                "db",
                scrub(
                    &format!("{location} is not a PostgreSQL URL onejob can use: {e}"),
                    url,
                ),
            )
        };
        let each = hosts::split(url)
            .map_err(bad)?
            .iter()
            .map(|one| {
                PgConnectOptions::from_str(one)
                    .map(|o| o.application_name("onejob").options(SESSION))
                    .map_err(|e| bad(e.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        let hosts = Arc::new(Hosts::new(each));
        // Several hosts: the one that accepts writes, whichever order they are listed in.
        if hosts.several() {
            if let Err(none) = hosts.find().await {
                let cause = scrub(&none, url);
                return Err(Error::storage(
                    StorageKind::Unreachable,
                    Some(&location),
                    Some(&cause),
                ));
            }
        }
        let options = hosts.options();
        let live = Arc::new(Liveness {
            hosts: hosts.clone(),
            location: location.clone(),
            last: tokio::sync::Mutex::new(None),
        });
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
        let several = hosts.several();
        let pool = PgPoolOptions::new()
            .max_connections(8)
            // Where the URL names several hosts, a connection to one that no longer accepts
            // writes (a primary demoted, or the pool pointed at it before a failover was
            // found) is refused, and the hosts are asked again before the next.
            .after_connect({
                let hosts = hosts.clone();
                move |conn, _| {
                    let hosts = hosts.clone();
                    Box::pin(async move {
                        if !several {
                            return Ok(());
                        }
                        let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
                            .fetch_one(conn)
                            .await?;
                        if standby {
                            hosts.suspect();
                            return Err(sqlx::Error::Protocol(
                                "the host connected to is a standby: it accepts no writes"
                                    .to_owned(),
                            ));
                        }
                        Ok(())
                    })
                }
            })
            // A connection the server dropped while it sat in the pool (a restart, a
            // terminated backend) is found by a ping and closed, never handed out again.
            .test_before_acquire(true)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(fail)?;
        hosts.keep_pointed(&pool);
        // Watched as a statement is: a server that stops answering mid-way (suspended, cut
        // off) fails the open in seconds; one busy or waiting on a lock is waited for.
        let migrated = live
            .patiently(sqlx::migrate!("../../migrations/postgres").run(&pool))
            .await
            .ok_or_else(|| {
                let cause = format!(
                    "its server stopped answering while its schema was brought up to date: \
                     nothing answered for {} s, nor a new connection within {} s (is it \
                     suspended?); opening the ledger again applies what is left, each change once",
                    PATIENCE.as_secs(),
                    PROBE_TIMEOUT.as_secs()
                );
                Error::storage(StorageKind::Unreachable, Some(&location), Some(&cause))
            })?;
        migrated.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(e) => fail(e),
            other => Error::storage(
                StorageKind::Failed,
                Some(&location),
                Some(&crate::error::migration_words(&other)),
            ),
        })?;
        Ok(PgDb {
            pool,
            location,
            live,
        })
    }
}

impl PgDb {
    /// The host written to now, and since when.
    pub fn primary(&self) -> Primary {
        self.live.hosts.primary()
    }
}

/// A failure to open, said in a person's terms: unreachable, refused, or lacking rights. The
/// password never appears, not even where the server repeats what it was given.
fn open_error(location: &str, e: sqlx::Error, secret: Option<&str>) -> Error {
    let refused = |cause: &str| (StorageKind::Failed, Some(cause.to_owned()));
    let (kind, cause) = match &e {
        sqlx::Error::Database(db) => match db.code().as_deref().unwrap_or_default() {
            "28P01" | "28000" => refused(
                "its server refused the login: check the user name and the password in the URL \
                 (or PGPASSWORD), and the server's pg_hba.conf",
            ),
            "3D000" => refused(
                "its database does not exist on the server: create it, or check its name in the \
                 URL",
            ),
            "42501" => refused(
                "the role lacks the rights onejob needs (to create and change its tables in the \
                 database's public schema; grant them or make the role the database's owner)",
            ),
            _ => return crate::error::located(location, true, CONNECT_TIMEOUT, e).into(),
        },
        _ => return crate::error::located(location, true, CONNECT_TIMEOUT, e).into(),
    };
    let error = Error::storage(kind, Some(location), cause.as_deref());
    match (secret, error) {
        (Some(secret), Error::Storage { message, details }) => Error::Storage {
            message: message.replace(secret, "***"),
            details,
        },
        (_, error) => error,
    }
}
