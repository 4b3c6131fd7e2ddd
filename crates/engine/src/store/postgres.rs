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
//!   off) is noticed in seconds: a statement still waiting after [`PATIENCE`] makes the
//!   process ask the server on a new connection whether it answers at all; if it does not, the
//!   statement fails with `storage` and its connection is closed, never handed out again. A
//!   statement waiting on another host's row lock is left to wait: the server still answers.
//! - Migrations take sqlx's advisory lock, so processes that start together apply them once.
//! - A URL's password (or `PGPASSWORD`) never appears in a location or an error.

use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection, Postgres, TransactionManager};
use tokio::sync::watch;

use crate::error::{Error, Result, StorageKind};

/// The channel the schema's triggers notify on every change.
pub const CHANNEL: &str = "onejob_changes";

/// How long a connection may take to open (and a pooled one to be handed out, its ping
/// included) before the server is reported unreachable: seconds, not the OS's TCP timeout.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a statement may wait for its answer before the process asks the server, on a new
/// connection, whether it answers at all; asked again as often while the statement waits.
pub const PATIENCE: Duration = Duration::from_secs(3);

/// How long that question waits for a connection and a `SELECT 1`: a server that answers
/// does so in milliseconds, even when it is busy.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one answer serves every statement that waits at once, so a hundred of them ask once.
const PROBE_FRESH: Duration = Duration::from_secs(1);

/// How long the change feed's connection may stay quiet before it is pinged.
const LISTEN_QUIET: Duration = Duration::from_secs(5);

/// The longest wait between two tries to reconnect the change feed.
const LISTEN_BACKOFF_CAP: Duration = Duration::from_secs(5);

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
    /// Asks the server whether it answers, for statements that wait long.
    live: Arc<Liveness>,
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
        let live = Arc::new(Liveness {
            options: options.clone(),
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
        let pool = PgPoolOptions::new()
            .max_connections(8)
            // A connection the server dropped while it sat in the pool (a restart, a
            // terminated backend) is found by a ping and closed, never handed out again.
            .test_before_acquire(true)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(fail)?;
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

    /// A connection from the pool, watched while statements run on it.
    pub async fn acquire(&self) -> sqlx::Result<PgConn> {
        Ok(PgConn {
            conn: self.pool.acquire().await?,
            watch: Watch {
                live: self.live.clone(),
                broken: AtomicBool::new(false),
                failed: AtomicBool::new(false),
            },
        })
    }

    /// A counter that rises whenever the ledger changes, whoever changed it: `LISTEN` on a
    /// connection of its own. When that connection drops, or stays quiet for [`LISTEN_QUIET`]
    /// and then does not answer a ping within [`PROBE_TIMEOUT`], it is dropped and another is
    /// made, with backoff; a change is counted once it listens again, since notifications sent
    /// meanwhile are lost.
    pub async fn changes(&self) -> Result<watch::Receiver<u64>> {
        let listener = listen(&self.live.options).await?;
        let (tx, rx) = watch::channel(0u64);
        let closed = self.pool.close_event();
        tokio::spawn(follow(listener, self.live.clone(), tx, closed));
        Ok(rx)
    }
}

/// `LISTEN` on a new connection, in a pool of its own: a connection given up on while the
/// server does not answer holds none of the ledger's pool.
async fn listen(options: &PgConnectOptions) -> sqlx::Result<PgListener> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_lazy_with(options.clone());
    let listening = async {
        let mut listener = PgListener::connect_with(&pool).await?;
        // A lost connection is replaced here, by a new listener, with backoff.
        listener.eager_reconnect(false);
        listener.listen(CHANNEL).await?;
        Ok(listener)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, listening)
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)?
}

/// The change feed's loop: counts each notification until every receiver is gone or the
/// ledger is `closed`, and keeps a listening connection that answers.
async fn follow(
    listener: PgListener,
    live: Arc<Liveness>,
    tx: watch::Sender<u64>,
    closed: sqlx::pool::CloseEvent,
) {
    tokio::pin!(closed);
    let mut listener = Some(listener);
    let mut failures = 0u32;
    loop {
        let Some(listening) = listener.as_mut() else {
            // Reconnecting: a little later each time, up to LISTEN_BACKOFF_CAP.
            let wait = Duration::from_millis(100)
                .saturating_mul(1 << failures.min(6))
                .min(LISTEN_BACKOFF_CAP);
            tokio::select! {
                () = tx.closed() => break,
                () = &mut closed => break,
                () = tokio::time::sleep(wait) => {}
            }
            match listen(&live.options).await {
                Ok(again) => {
                    listener = Some(again);
                    failures = 0;
                    tx.send_modify(|n| *n += 1);
                }
                Err(_) => failures = failures.saturating_add(1),
            }
            continue;
        };
        let next = tokio::select! {
            () = tx.closed() => break,
            () = &mut closed => break,
            next = tokio::time::timeout(LISTEN_QUIET, listening.try_recv()) => next,
        };
        match next {
            Ok(Ok(Some(_))) => tx.send_modify(|n| *n += 1),
            // The connection was lost or failed: start over on a new one, and count a change
            // once it listens.
            Ok(Ok(None) | Err(_)) => listener = None,
            // Quiet for a while: a server that stopped answering says nothing either.
            Err(_) => {
                let ping = sqlx::query("SELECT 1").execute(&mut *listening);
                if !matches!(tokio::time::timeout(PROBE_TIMEOUT, ping).await, Ok(Ok(_))) {
                    listener = None;
                }
            }
        }
    }
}

/// Whether the ledger's server answers, asked on a new connection of its own: one question at a
/// time for the whole process, its answer shared for [`PROBE_FRESH`].
struct Liveness {
    options: PgConnectOptions,
    location: String,
    last: tokio::sync::Mutex<Option<(Instant, bool)>>,
}

impl Liveness {
    /// Whether the server answered a new connection and a `SELECT 1` within [`PROBE_TIMEOUT`]. A
    /// refusal said by the server (too many connections, say) is an answer.
    async fn answers(&self) -> bool {
        let mut last = self.last.lock().await;
        if let Some((at, answered)) = *last {
            if at.elapsed() < PROBE_FRESH {
                return answered;
            }
        }
        let asked = async {
            let mut conn = PgConnection::connect_with(&self.options).await?;
            sqlx::query("SELECT 1").execute(&mut conn).await?;
            conn.close().await
        };
        let answered = matches!(
            tokio::time::timeout(PROBE_TIMEOUT, asked).await,
            Ok(Ok(()) | Err(sqlx::Error::Database(_)))
        );
        *last = Some((Instant::now(), answered));
        answered
    }

    /// Waits for `work`. While it waits past [`PATIENCE`], asks whether the server answers,
    /// again every [`PATIENCE`]; `None`, the work given up on, when the server does not.
    async fn patiently<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                done = &mut work => return Some(done),
                () = tokio::time::sleep(PATIENCE) => {}
            }
            let answers = tokio::select! {
                biased;
                done = &mut work => return Some(done),
                answers = self.answers() => answers,
            };
            if !answers {
                return None;
            }
        }
    }

    /// The error of a statement given up on.
    fn not_answering(&self) -> sqlx::Error {
        let cause = format!(
            "its server is not answering: a statement had no reply for {} s and a new \
             connection none within {} s. The connection was dropped; what was asked may or may \
             not have been done (a submit of the same key again is recorded once)",
            PATIENCE.as_secs(),
            PROBE_TIMEOUT.as_secs()
        );
        crate::error::at(StorageKind::Unreachable, &self.location, Some(cause))
    }
}

/// What a connection of the ledger carries for the statements run on it: the server's
/// liveness, and whether a statement on it was given up on.
pub struct Watch {
    live: Arc<Liveness>,
    broken: AtomicBool,
    /// A statement failed on the server since the transaction began or last went back to its
    /// savepoint: the server has aborted the transaction, and will answer its `COMMIT` with a
    /// `ROLLBACK` that sqlx reports as success.
    failed: AtomicBool,
}

impl Watch {
    /// Runs one statement (or `BEGIN`, `COMMIT`) on the watched connection. While it waits past
    /// [`PATIENCE`], the server is asked whether it answers, again every [`PATIENCE`]: a wait
    /// on a lock goes on (the database ends a frozen host's transaction after 10 s, and any
    /// statement after 30 s); a server that does not answer fails it with `storage`, and marks
    /// the connection broken so that it is closed instead of given back. A statement that
    /// fails because its connection failed or was ended by the server names the ledger, as a
    /// failed connect does, and its connection is closed too.
    pub async fn guard<T>(
        &self,
        statement: impl Future<Output = sqlx::Result<T>>,
    ) -> sqlx::Result<T> {
        match self.live.patiently(statement).await {
            Some(done) => self.named(done),
            None => {
                self.broken.store(true, Ordering::Relaxed);
                Err(self.live.not_answering())
            }
        }
    }

    /// `done`, with a failure worded to name the ledger (a constraint's refusal is kept as it
    /// is, for its caller to read); a connection whose server is unreachable is then broken.
    fn named<T>(&self, done: sqlx::Result<T>) -> sqlx::Result<T> {
        if let Err(sqlx::Error::Database(_)) = &done {
            self.failed.store(true, Ordering::Relaxed);
        }
        done.map_err(|e| {
            let named = crate::error::located(&self.live.location, true, CONNECT_TIMEOUT, e);
            if crate::error::is_unreachable(&named) {
                self.broken.store(true, Ordering::Relaxed);
            }
            named
        })
    }

    /// Forgets a failed statement: the transaction began anew, or went back to its savepoint.
    pub(crate) fn clear_failed(&self) {
        self.failed.store(false, Ordering::Relaxed);
    }

    /// Whether a statement failed on the server since [`Watch::clear_failed`].
    fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether a statement on this connection was given up on.
    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }
}

/// A connection from the ledger's pool with its [`Watch`]: closed instead of given back when a
/// statement on it was given up on, since what it would answer next is anyone's guess.
pub struct PgConn {
    conn: PoolConnection<Postgres>,
    watch: Watch,
}

impl PgConn {
    /// The connection and its watch, for the statements of one operation.
    pub fn parts(&mut self) -> (&mut PgConnection, &Watch) {
        (&mut self.conn, &self.watch)
    }

    /// Closes the connection when dropped instead of giving it back to the pool.
    pub fn close_on_drop(&mut self) {
        self.conn.close_on_drop();
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        if self.watch.is_broken() {
            self.conn.close_on_drop();
        }
    }
}

/// A write transaction on a watched connection. Dropped while open, it rolls back as sqlx's
/// own does (the `ROLLBACK` goes out before the connection's next use), or, on a broken
/// connection, ends with the connection, which is closed.
pub struct PgTx {
    conn: PgConn,
    open: bool,
}

type Manager = sqlx::postgres::PgTransactionManager;

impl PgTx {
    /// `BEGIN` on `conn`.
    pub async fn begin(mut conn: PgConn) -> sqlx::Result<PgTx> {
        let (raw, watch) = conn.parts();
        watch.guard(Manager::begin(raw, None)).await?;
        watch.clear_failed();
        Ok(PgTx { conn, open: true })
    }

    /// `COMMIT`; nothing written may be reported before this returns `Ok`. A transaction one of
    /// whose statements failed (its error swallowed by a caller) is refused and rolled back:
    /// the server would answer its `COMMIT` with `ROLLBACK`, which sqlx reports as success,
    /// and a write reported durable would be gone.
    pub async fn commit(mut self) -> sqlx::Result<()> {
        let (raw, watch) = self.conn.parts();
        if watch.has_failed() {
            watch.guard(Manager::rollback(raw)).await?;
            self.open = false;
            return Err(sqlx::Error::Protocol(
                "a statement of this transaction failed, so the server rolled it back;                  nothing of it was written"
                    .to_owned(),
            ));
        }
        watch.guard(Manager::commit(raw)).await?;
        self.open = false;
        Ok(())
    }

    /// `ROLLBACK` now.
    pub async fn rollback(mut self) -> sqlx::Result<()> {
        let (raw, watch) = self.conn.parts();
        watch.guard(Manager::rollback(raw)).await?;
        self.open = false;
        Ok(())
    }

    /// The connection and its watch.
    pub fn parts(&mut self) -> (&mut PgConnection, &Watch) {
        self.conn.parts()
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        if self.open && !self.conn.watch.is_broken() {
            Manager::start_rollback(&mut self.conn.conn);
        }
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
