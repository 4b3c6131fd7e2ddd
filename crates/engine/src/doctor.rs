//! What the ledger in use is, and what on it weakens onejob's promise (SPEC §14): the backend,
//! where it is, its server's version and, on PostgreSQL, its replication (primary or standby,
//! the standbys streaming from it, whether any is synchronous, when a commit is acknowledged)
//! and the skew between its clock and this host's. Each risk says what it is, why it matters
//! and what to do. `onejob doctor` prints it; `onejob serve` names its risks on its start line.
//! docs/adr/0065 says which risks are named, from when, and why.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use specta::Type;

use crate::error::Result;
use crate::store::doctor::{self as doctor_rows, PgServer, Server, SqliteServer, StandbyRow};
use crate::Engine;

/// A skew between this host's clock and the ledger server's beyond which it is named a risk.
/// The ledger decides by its server's clock, so a skew breaks no rule; but what a host stamps
/// by its own clock (job ids, which order the jobs list; the ages and live clocks a window
/// shows) is off by the skew. A host kept by NTP is within milliseconds, and the measurement's
/// own error is half a round trip: over a second, the host's clock is not kept.
pub(crate) const CLOCK_SKEW_LIMIT: Duration = Duration::from_secs(1);

/// The ledger in use and the risks found on it.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct Diagnosis {
    pub ledger: LedgerInUse,
    /// Empty when nothing weakens the promise.
    pub risks: Vec<Risk>,
}

/// Which backend a ledger is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum LedgerBackend {
    Sqlite,
    Postgres,
}

/// What the ledger in use is.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct LedgerInUse {
    pub backend: LedgerBackend,
    /// The file's path, or the URL without its password.
    pub location: String,
    /// SQLite's version, or the PostgreSQL server's (`server_version`).
    pub server_version: String,
    /// On SQLite: how the file is written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqlite: Option<SqliteFile>,
    /// On PostgreSQL: the server's replication and clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres: Option<PostgresServer>,
}

/// How an embedded ledger's file is written.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct SqliteFile {
    /// `wal` when the engine opened it.
    pub journal_mode: String,
    /// `off`, `normal`, `full` or `extra`; the engine opens it `full`.
    pub synchronous: String,
}

/// A PostgreSQL ledger's server, as the ledger's connections see it.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct PostgresServer {
    /// The address and port the connection reached (`127.0.0.1:5432`); none over a socket.
    pub connected_to: Option<String>,
    /// It takes writes: not a standby in recovery.
    pub primary: bool,
    /// The standbys streaming from it (`pg_stat_replication`).
    pub standbys: Vec<StandbyInfo>,
    /// When it acknowledges a commit: `off`, `local`, `remote_write`, `on`, `remote_apply`.
    pub synchronous_commit: String,
    /// The standbys it waits for at commit; empty: none.
    pub synchronous_standby_names: String,
    /// The server's clock minus this host's, in milliseconds (positive: the server is ahead),
    /// to within half a round trip.
    pub clock_skew_ms: i32,
}

/// One standby streaming from the server. What the ledger's role may not see (without
/// `pg_read_all_stats`) is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct StandbyInfo {
    pub application_name: String,
    pub client_addr: Option<String>,
    /// `streaming`, `catchup`, `startup`, `backup` or `stopping`.
    pub state: Option<String>,
    /// `sync` or `quorum` (it confirms commits), `potential` or `async` (it does not).
    pub sync_state: Option<String>,
}

/// What a risk is about; each is explained in its [`Risk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum RiskCode {
    /// Standbys stream from the server and none is synchronous.
    NoSynchronousStandby,
    /// `synchronous_commit` acknowledges commits before they are durable where they must be.
    SynchronousCommitBelowOn,
    /// `synchronous_standby_names` names standbys and none of them is connected.
    SynchronousStandbyMissing,
    /// The ledger's role cannot see whether the standbys are synchronous.
    ReplicationHidden,
    /// The server is a standby: it takes no writes.
    NotPrimary,
    /// This host's clock and the server's differ by more than a second.
    ClockSkew,
    /// The SQLite file is not in WAL mode.
    JournalNotWal,
    /// The SQLite file is not written with `synchronous = full`.
    SynchronousBelowFull,
}

/// Something that weakens the promise on this ledger, in a person's words.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct Risk {
    pub code: RiskCode,
    pub what: String,
    pub why: String,
    pub what_to_do: String,
}

impl Engine {
    /// The ledger in use and the risks on it; reads only. A server that cannot be reached is a
    /// `storage` error, as for any read.
    pub async fn doctor(&self) -> Result<Diagnosis> {
        let mut conn = self.read().await?;
        let sent = SystemTime::now();
        let server = doctor_rows::server(&mut conn).await?;
        let answered = SystemTime::now();
        let standbys = doctor_rows::standbys(&mut conn).await?;
        // The server read its clock between the two; the middle is as near as can be told.
        let round_trip = answered.duration_since(sent).unwrap_or_default();
        let host_ms = epoch_ms(sent + round_trip / 2);
        let location = self.location().to_owned();
        let ledger = match server {
            Server::Sqlite(file) => sqlite_ledger(location, file),
            Server::Postgres(server) => postgres_ledger(location, server, standbys, host_ms),
        };
        let risks = risks(&ledger);
        Ok(Diagnosis { ledger, risks })
    }
}

fn sqlite_ledger(location: String, file: SqliteServer) -> LedgerInUse {
    let synchronous = match file.synchronous {
        0 => "off".to_owned(),
        1 => "normal".to_owned(),
        2 => "full".to_owned(),
        3 => "extra".to_owned(),
        other => other.to_string(),
    };
    LedgerInUse {
        backend: LedgerBackend::Sqlite,
        location,
        server_version: file.version,
        sqlite: Some(SqliteFile {
            journal_mode: file.journal_mode.to_ascii_lowercase(),
            synchronous,
        }),
        postgres: None,
    }
}

fn postgres_ledger(
    location: String,
    server: PgServer,
    standbys: Vec<StandbyRow>,
    host_ms: i64,
) -> LedgerInUse {
    let skew = server.clock_ms.saturating_sub(host_ms);
    let clock_skew_ms = i32::try_from(skew).unwrap_or(if skew < 0 { i32::MIN } else { i32::MAX });
    LedgerInUse {
        backend: LedgerBackend::Postgres,
        location,
        server_version: server.version,
        sqlite: None,
        postgres: Some(PostgresServer {
            connected_to: server.connected_to,
            primary: server.is_primary,
            standbys: standbys
                .into_iter()
                .map(|row| StandbyInfo {
                    application_name: row.application_name,
                    client_addr: row.client_addr,
                    state: row.state,
                    sync_state: row.sync_state,
                })
                .collect(),
            synchronous_commit: server.synchronous_commit,
            synchronous_standby_names: server.synchronous_standby_names,
            clock_skew_ms,
        }),
    }
}

/// Milliseconds since the epoch of `at`.
fn epoch_ms(at: SystemTime) -> i64 {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// The risks the ledger's facts show, most serious first.
fn risks(ledger: &LedgerInUse) -> Vec<Risk> {
    let mut risks = Vec::new();
    if let Some(file) = &ledger.sqlite {
        sqlite_risks(file, &mut risks);
    }
    if let Some(server) = &ledger.postgres {
        postgres_risks(server, &mut risks);
    }
    risks
}

fn risk(code: RiskCode, what: String, why: &str, what_to_do: &str) -> Risk {
    Risk {
        code,
        what,
        why: why.to_owned(),
        what_to_do: what_to_do.to_owned(),
    }
}

fn sqlite_risks(file: &SqliteFile, risks: &mut Vec<Risk>) {
    if file.synchronous != "full" && file.synchronous != "extra" {
        risks.push(risk(
            RiskCode::SynchronousBelowFull,
            format!(
                "the ledger file is written with synchronous = {}",
                file.synchronous
            ),
            "a commit is acknowledged before it is on the disk: a power loss or a crash of the \
             operating system can lose acknowledged jobs and send attempts twice",
            "open the ledger only with onejob, which writes it with synchronous = full",
        ));
    }
    if file.journal_mode != "wal" {
        risks.push(risk(
            RiskCode::JournalNotWal,
            format!(
                "the ledger file's journal mode is {}, not wal",
                file.journal_mode
            ),
            "readers and the writer block each other: the app, workers and the command line \
             wait on one another and may fail as busy",
            "keep the ledger on a local file system (WAL needs shared memory, which a network \
             share does not give)",
        ));
    }
}

fn postgres_risks(server: &PostgresServer, risks: &mut Vec<Risk>) {
    if !server.primary {
        risks.push(risk(
            RiskCode::NotPrimary,
            "the ledger's server is a standby (in recovery)".to_owned(),
            "it takes no writes: no job can be submitted, sent or settled",
            "point the ledger at the primary, or name every host in the URL \
             (postgres://user@h1:5432,h2:5432/db) so onejob finds the one that takes writes",
        ));
    }
    let hidden = server.standbys.iter().any(|s| s.sync_state.is_none());
    let confirming = server
        .standbys
        .iter()
        .any(|s| matches!(s.sync_state.as_deref(), Some("sync" | "quorum")));
    if hidden {
        risks.push(risk(
            RiskCode::ReplicationHidden,
            "the ledger's role cannot see whether its server's standbys are synchronous".to_owned(),
            "whether a failover can lose acknowledged jobs and send attempts twice cannot be told",
            "grant the role pg_read_all_stats (GRANT pg_read_all_stats TO the role) and run \
             onejob doctor again",
        ));
    } else if !server.standbys.is_empty() && !confirming {
        let names: Vec<String> = server
            .standbys
            .iter()
            .map(|s| {
                let state = s.sync_state.as_deref().unwrap_or("unknown");
                format!("{} ({state})", s.application_name)
            })
            .collect();
        risks.push(risk(
            RiskCode::NoSynchronousStandby,
            format!(
                "standbys stream from the ledger's server and none is synchronous: {}",
                names.join(", ")
            ),
            "a failover can lose acknowledged jobs and send attempts twice: the primary \
             acknowledges a commit before any standby has it, so a promoted standby may lack \
             jobs that were acknowledged and hold as pending attempts whose requests already \
             went out",
            "name the standby in synchronous_standby_names on the primary (its \
             application_name, e.g. synchronous_standby_names = 'FIRST 1 (standby)'), keep \
             synchronous_commit at on, and reload the configuration (SELECT pg_reload_conf())",
        ));
    }
    synchronous_commit_risks(server, confirming || hidden, risks);
    clock_risk(server.clock_skew_ms, risks);
}

/// `synchronous_commit` below `on`, and synchronous standbys named but absent.
fn synchronous_commit_risks(server: &PostgresServer, confirming: bool, risks: &mut Vec<Risk>) {
    let level = server.synchronous_commit.as_str();
    let replicated = !server.standbys.is_empty() || !server.synchronous_standby_names.is_empty();
    let why = match level {
        "off" => Some(
            "the server acknowledges a commit before it is on its own disk: a crash of the \
             server can lose acknowledged jobs and send attempts twice",
        ),
        "local" if replicated => Some(
            "the server acknowledges a commit before any standby has it: a failover can lose \
             acknowledged jobs and send attempts twice",
        ),
        "remote_write" if replicated => Some(
            "the server acknowledges a commit once a standby has received it but before the \
             standby has it on disk: a crash of both can lose acknowledged jobs and send \
             attempts twice",
        ),
        _ => None,
    };
    if let Some(why) = why {
        risks.push(risk(
            RiskCode::SynchronousCommitBelowOn,
            format!("synchronous_commit is {level}"),
            why,
            "set synchronous_commit to on (or remote_apply) for the ledger: in the server's \
             configuration, or ALTER ROLE the_role SET synchronous_commit = on",
        ));
    }
    let waits = !matches!(level, "off" | "local");
    if waits && !server.synchronous_standby_names.is_empty() && !confirming {
        risks.push(risk(
            RiskCode::SynchronousStandbyMissing,
            format!(
                "synchronous_standby_names is '{}' and no standby it names is connected",
                server.synchronous_standby_names
            ),
            "every commit waits until one connects: submits, sends and answers stall",
            "start the standby, or make its application_name match a name in \
             synchronous_standby_names",
        ));
    }
}

fn clock_risk(skew_ms: i32, risks: &mut Vec<Risk>) {
    let limit = i64::try_from(CLOCK_SKEW_LIMIT.as_millis()).unwrap_or(i64::MAX);
    if i64::from(skew_ms).abs() <= limit {
        return;
    }
    let side = if skew_ms > 0 { "behind" } else { "ahead of" };
    risks.push(risk(
        RiskCode::ClockSkew,
        format!(
            "this host's clock is {} ms {side} the ledger's server's",
            i64::from(skew_ms).abs()
        ),
        "the ledger decides by its server's clock, so no rule breaks; but what this host \
         stamps by its own clock (job ids, which order the jobs list; the ages and live clocks \
         a window shows) disagrees with what the other hosts stamp",
        "keep this host's clock and the server's synchronised (NTP: chrony or \
         systemd-timesyncd)",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standby(sync_state: Option<&str>) -> StandbyInfo {
        StandbyInfo {
            application_name: "standby".to_owned(),
            client_addr: Some("10.0.0.2".to_owned()),
            state: Some("streaming".to_owned()),
            sync_state: sync_state.map(str::to_owned),
        }
    }

    fn server(standbys: Vec<StandbyInfo>, commit: &str, names: &str) -> PostgresServer {
        PostgresServer {
            connected_to: Some("10.0.0.1:5432".to_owned()),
            primary: true,
            standbys,
            synchronous_commit: commit.to_owned(),
            synchronous_standby_names: names.to_owned(),
            clock_skew_ms: 3,
        }
    }

    fn codes(server: &PostgresServer) -> Vec<RiskCode> {
        let mut risks = Vec::new();
        postgres_risks(server, &mut risks);
        risks.iter().map(|r| r.code).collect()
    }

    use RiskCode::*;

    #[test]
    fn a_server_with_standbys_none_synchronous_is_a_risk_and_one_synchronous_is_not() {
        assert_eq!(codes(&server(vec![], "on", "")), vec![]);
        assert_eq!(
            codes(&server(vec![standby(Some("async"))], "on", "")),
            vec![NoSynchronousStandby]
        );
        assert_eq!(
            codes(&server(vec![standby(Some("potential"))], "on", "standby")),
            vec![NoSynchronousStandby, SynchronousStandbyMissing]
        );
        for confirming in ["sync", "quorum"] {
            let standbys = vec![standby(Some(confirming)), standby(Some("async"))];
            assert_eq!(codes(&server(standbys, "on", "FIRST 1 (standby)")), vec![]);
        }
        // Unseen: neither called safe nor unsafe.
        assert_eq!(
            codes(&server(vec![standby(None)], "on", "")),
            vec![ReplicationHidden]
        );
    }

    #[test]
    fn synchronous_commit_below_on_is_a_risk_where_it_weakens_a_commit() {
        // Off loses commits on a crash of the server alone.
        assert_eq!(
            codes(&server(vec![], "off", "")),
            vec![SynchronousCommitBelowOn]
        );
        // Without a standby, local and remote_write flush locally as on does.
        for level in ["local", "remote_write", "on", "remote_apply"] {
            assert_eq!(codes(&server(vec![], level, "")), vec![], "{level}");
        }
        let sync = || vec![standby(Some("sync"))];
        for level in ["local", "remote_write"] {
            assert_eq!(
                codes(&server(sync(), level, "standby")),
                vec![SynchronousCommitBelowOn],
                "{level}"
            );
        }
        // Names with nobody connected: every commit waits, unless commits do not wait at all.
        assert_eq!(
            codes(&server(vec![], "on", "standby")),
            vec![SynchronousStandbyMissing]
        );
        assert_eq!(
            codes(&server(vec![], "local", "standby")),
            vec![SynchronousCommitBelowOn]
        );
    }

    #[test]
    fn a_standby_as_the_ledger_and_a_skewed_clock_are_risks() {
        let mut read_only = server(vec![], "on", "");
        read_only.primary = false;
        assert_eq!(codes(&read_only), vec![NotPrimary]);
        for (skew, risky) in [(1000, false), (-1000, false), (1001, true), (-60_000, true)] {
            let mut skewed = server(vec![], "on", "");
            skewed.clock_skew_ms = skew;
            let expected = if risky { vec![ClockSkew] } else { vec![] };
            assert_eq!(codes(&skewed), expected, "{skew}");
        }
        let mut risks = Vec::new();
        clock_risk(-1500, &mut risks);
        assert_eq!(
            risks[0].what,
            "this host's clock is 1500 ms ahead of the ledger's server's"
        );
    }

    #[test]
    fn a_sqlite_file_not_in_wal_or_not_synchronous_full_is_a_risk() {
        let file = |journal: &str, synchronous: &str| SqliteFile {
            journal_mode: journal.to_owned(),
            synchronous: synchronous.to_owned(),
        };
        let codes = |file: SqliteFile| {
            let mut risks = Vec::new();
            sqlite_risks(&file, &mut risks);
            risks.iter().map(|r| r.code).collect::<Vec<_>>()
        };
        assert_eq!(codes(file("wal", "full")), vec![]);
        assert_eq!(codes(file("wal", "extra")), vec![]);
        assert_eq!(codes(file("wal", "normal")), vec![SynchronousBelowFull]);
        assert_eq!(codes(file("delete", "full")), vec![JournalNotWal]);
    }
}
