//! A primary and a standby that streams from it (PostgreSQL's streaming replication), both on
//! loopback, for the tests of a ledger that loses its primary (SPEC §14, "A standby that takes
//! over"). The standby is a base backup of the primary (`pg_basebackup -R`, which leaves it
//! following the primary) started on a port of its own; its walreceiver reports to the
//! primary as [`STANDBY_NAME`], which a synchronous primary names in
//! `synchronous_standby_names`.

use std::io::{Error, ErrorKind};
use std::time::{Duration, Instant};

use super::{bin_dir, owned_dir, run_on_data, signal, Postgres, ROLE};

/// The standby's `application_name` on the primary: what `pg_stat_replication` lists it as and
/// what a synchronous primary's `synchronous_standby_names` names.
pub const STANDBY_NAME: &str = "standby";

/// The replication slot the primary keeps for the standby: WAL the standby has not received
/// yet (while it is paused) is never removed under it.
const SLOT: &str = "standby";

/// How long the standby gets to catch up or to be promoted.
const PATIENCE: Duration = Duration::from_secs(30);

/// Whether the primary waits for the standby at commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standby {
    /// A commit returns once the standby has flushed it (`synchronous_standby_names` names
    /// the standby, `synchronous_commit = on`): a failover loses nothing acknowledged.
    Synchronous,
    /// A commit returns once the primary has flushed it; the standby follows as it can, and a
    /// failover may lose the last commits.
    Asynchronous,
}

/// A running primary and a standby streaming from it. Dropping it stops both (immediately:
/// nothing in them is kept) and removes their folders; a paused standby is resumed first.
pub struct Replicated {
    primary: Postgres,
    standby: Postgres,
    mode: Standby,
}

impl Replicated {
    /// A primary with `fsync` on (commits as durable as in production, as [`Postgres::start`])
    /// and a standby streaming from it; returns once the primary lists the standby as streaming
    /// (and as `sync` when `mode` is [`Standby::Synchronous`]).
    pub fn start(mode: Standby) -> std::io::Result<Replicated> {
        Replicated::start_with(mode, &["max_connections=200"])
    }

    /// [`Replicated::start`] with the server settings `settings` (`name=value` each) on both
    /// servers; the replication settings are added to them.
    pub fn start_with(mode: Standby, settings: &[&str]) -> std::io::Result<Replicated> {
        // `pg_basebackup` connects for replication from 127.0.0.1, which initdb's pg_hba.conf
        // trusts (`host replication all 127.0.0.1/32 trust`) for the cluster's superuser.
        let mut primary_settings = settings.to_vec();
        primary_settings.extend(["wal_level=replica", "max_wal_senders=4"]);
        let synchronous = format!("synchronous_standby_names={STANDBY_NAME}");
        if mode == Standby::Synchronous {
            primary_settings.extend([synchronous.as_str(), "synchronous_commit=on"]);
        }
        let primary = Postgres::start_with(&primary_settings)?;
        let standby = start_standby(&primary, settings)?;
        let pair = Replicated {
            primary,
            standby,
            mode,
        };
        pair.wait_streaming()?;
        Ok(pair)
    }

    /// The server that was started as the primary (after [`Replicated::crash_primary`], a dead
    /// one).
    pub fn primary(&self) -> &Postgres {
        &self.primary
    }

    /// The server that was started as the standby (after [`Replicated::promote_standby`], the
    /// primary).
    pub fn standby(&self) -> &Postgres {
        &self.standby
    }

    /// Whether the primary was started waiting for the standby at commit.
    pub fn mode(&self) -> Standby {
        self.mode
    }

    /// The URL of database `database` naming both servers, the primary first:
    /// `postgres://onejob@127.0.0.1:P1,127.0.0.1:P2/database`.
    pub fn url(&self, database: &str) -> String {
        hosts_url(&[&self.primary, &self.standby], database)
    }

    /// [`Replicated::url`] with the standby named first.
    pub fn url_standby_first(&self, database: &str) -> String {
        hosts_url(&[&self.standby, &self.primary], database)
    }

    /// Creates database `name` on the primary and returns once the standby has it too; its
    /// URL naming both servers, the primary first ([`Replicated::url`]).
    pub fn database(&self, name: &str) -> std::io::Result<String> {
        self.primary.database(name)?;
        let exists = format!("SELECT count(*) FROM pg_database WHERE datname = '{name}'");
        wait_for(&format!("the standby to have database {name}"), || {
            Ok(self.standby.sql("postgres", &exists)?.trim() == "1")
        })?;
        Ok(self.url(name))
    }

    /// Kills the primary's every process with SIGKILL, as a crash of its host would (see
    /// [`Postgres::crash`]); the standby goes on, still a standby, until it is promoted.
    pub fn crash_primary(&mut self) -> std::io::Result<()> {
        self.primary.crash()
    }

    /// Promotes the standby (`pg_ctl promote`) and returns once it accepts writes.
    pub fn promote_standby(&mut self) -> std::io::Result<()> {
        // A paused walreceiver would hold the promotion up: it is ended by it.
        self.standby.thaw()?;
        self.standby.pg_ctl(&["promote", "-w", "-t", "60"])?;
        wait_for("the promoted standby to accept writes", || {
            Ok(self
                .standby
                .sql("postgres", "SELECT pg_is_in_recovery()")?
                .trim()
                == "f")
        })
    }

    /// Stops the standby's walreceiver with SIGSTOP: the standby stops receiving WAL and
    /// confirming it to the primary, so a synchronous primary's commits wait, while the standby
    /// still answers queries (with what it had). [`Replicated::resume_standby`] (or dropping
    /// the pair) lets it run on.
    pub fn pause_standby(&mut self) -> std::io::Result<()> {
        let mut receiver = String::new();
        wait_for("the standby's walreceiver", || {
            receiver = self
                .standby
                .sql("postgres", "SELECT pid FROM pg_stat_wal_receiver")?
                .trim()
                .to_owned();
            Ok(!receiver.is_empty())
        })?;
        let pid: u32 = receiver
            .parse()
            .map_err(|_| Error::other(format!("not a process id: {receiver}")))?;
        signal(&[pid], "STOP")?;
        self.standby.frozen.push(pid);
        Ok(())
    }

    /// Lets the walreceiver stopped by [`Replicated::pause_standby`] run on; the standby
    /// catches up, and the commits that waited for it return.
    pub fn resume_standby(&mut self) -> std::io::Result<()> {
        self.standby.thaw()
    }

    /// Waits until the primary lists the standby as streaming, and as `sync` when it was
    /// started synchronous.
    fn wait_streaming(&self) -> std::io::Result<()> {
        let state = format!(
            "SELECT state || ' ' || sync_state FROM pg_stat_replication \
             WHERE application_name = '{STANDBY_NAME}'"
        );
        let want = match self.mode {
            Standby::Synchronous => "streaming sync",
            Standby::Asynchronous => "streaming async",
        };
        wait_for(&format!("the primary to list the standby {want}"), || {
            Ok(self.primary.sql("postgres", &state)?.trim() == want)
        })
    }
}

/// A base backup of `primary` into a new folder, started as a standby that streams from it
/// under [`STANDBY_NAME`], with `settings` as the primary's own (a hot standby needs at least
/// the primary's `max_connections`).
fn start_standby(primary: &Postgres, settings: &[&str]) -> std::io::Result<Postgres> {
    let bin = bin_dir()?;
    let (dir, owner) = owned_dir()?;
    let port = primary.port().to_string();
    // -R writes standby.signal and the connection to follow; -C -S make the primary keep a
    // slot for the standby; -c fast does not wait for the primary's next checkpoint.
    let data = dir.path().join("data");
    let from = ["-h", "127.0.0.1", "-p", &port, "-U", ROLE];
    let backup = ["-R", "-X", "stream", "-C", "-S", SLOT, "-c", "fast"];
    run_on_data(
        &owner,
        &bin.join("pg_basebackup"),
        &data,
        &[&from[..], &backup].concat(),
    )?;
    // Given on the command line, it wins over what -R wrote; it names the standby to the
    // primary.
    let follow = format!(
        "primary_conninfo=host=127.0.0.1 port={port} user={ROLE} application_name={STANDBY_NAME}"
    );
    let mut standby_settings = settings.to_vec();
    standby_settings.extend([follow.as_str(), "hot_standby=on"]);
    Postgres::launch(bin, owner, dir, &standby_settings)
}

/// `postgres://onejob@127.0.0.1:P1,127.0.0.1:P2/database`, the servers in the order given.
fn hosts_url(servers: &[&Postgres], database: &str) -> String {
    let hosts: Vec<String> = servers
        .iter()
        .map(|server| format!("127.0.0.1:{}", server.port()))
        .collect();
    format!("postgres://{ROLE}@{}/{database}", hosts.join(","))
}

/// Asks `ready` every 50 ms for up to [`PATIENCE`]; a timeout naming `what` was waited for if
/// it never says yes. An error from `ready` is a "not yet": a server may refuse
/// connections for a moment while it changes role.
fn wait_for(what: &str, mut ready: impl FnMut() -> std::io::Result<bool>) -> std::io::Result<()> {
    let deadline = Instant::now() + PATIENCE;
    let mut last = None;
    while Instant::now() < deadline {
        match ready() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let why = last.map(|e| format!(" (last: {e})")).unwrap_or_default();
    Err(Error::new(
        ErrorKind::TimedOut,
        format!("waited {PATIENCE:?} for {what} in vain{why}"),
    ))
}
