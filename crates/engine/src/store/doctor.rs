//! What `doctor` reads of the ledger's database: its server's version and settings and, on
//! PostgreSQL, the standbys streaming from it. Nothing here writes.

use sqlx::FromRow;

use super::{queries, query, Conn, Handle};

/// An embedded ledger's SQLite and how the connection writes the file.
#[derive(FromRow)]
pub struct SqliteServer {
    pub version: String,
    pub journal_mode: String,
    /// 0 off, 1 normal, 2 full, 3 extra.
    pub synchronous: i64,
}

/// A PostgreSQL ledger's server as the connection sees it.
#[derive(FromRow)]
pub struct PgServer {
    pub version: String,
    /// `address:port` the connection reached; none over a socket.
    pub connected_to: Option<String>,
    pub is_primary: bool,
    pub synchronous_commit: String,
    pub synchronous_standby_names: String,
    /// The server's clock, in milliseconds since the epoch.
    pub clock_ms: i64,
}

/// One standby of `pg_stat_replication`; what the role may not see is `None`.
#[derive(FromRow)]
pub struct StandbyRow {
    pub application_name: String,
    pub client_addr: Option<String>,
    pub state: Option<String>,
    pub sync_state: Option<String>,
}

/// The ledger's server, either backend.
pub enum Server {
    Sqlite(SqliteServer),
    Postgres(PgServer),
}

/// The server's version and settings, read in one statement (so its clock is read once, close
/// to when the statement was sent).
pub async fn server(h: &mut impl Handle) -> sqlx::Result<Server> {
    let sql = queries!("doctor/server");
    match h.conn() {
        Conn::Sqlite(conn, at) => sqlx::query_as(sql.sqlite)
            .fetch_one(conn)
            .await
            .map(Server::Sqlite)
            .map_err(|e| super::sqlite::named(at, e)),
        Conn::Postgres(conn, watch) => watch
            .guard(sqlx::query_as(sql.postgres).fetch_one(conn))
            .await
            .map(Server::Postgres),
    }
}

/// The standbys streaming from the server; none for SQLite, which has no standbys.
pub async fn standbys(h: &mut impl Handle) -> sqlx::Result<Vec<StandbyRow>> {
    match h.conn() {
        Conn::Sqlite(..) => Ok(Vec::new()),
        Conn::Postgres(conn, watch) => {
            let sql = query!(postgres, "doctor/standbys");
            watch.guard(sqlx::query_as(sql).fetch_all(conn)).await
        }
    }
}
