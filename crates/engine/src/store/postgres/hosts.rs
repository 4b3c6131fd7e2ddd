//! A ledger whose URL names several hosts (`postgres://u@h1:5432,h2:5432/db`, as libpq takes
//! it): a primary and its standbys (SPEC §14). onejob writes to the one that accepts writes,
//! whichever order they are listed in, and after a failover finds the new primary by itself
//! (docs/adr/0066). sqlx connects to one host; the choice is made here: each host in turn is
//! asked `pg_is_in_recovery()`, the first that answers "no" is the primary, and the pool, the
//! change feed and the liveness probe are pointed at it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use sqlx::postgres::{PgConnectOptions, PgPool};
use sqlx::{Connection, PgConnection};

use super::CONNECT_TIMEOUT;

/// One URL per host the URL names, each the URL as given with that host alone; the URL
/// itself when it names one. An empty host in the list is refused, naming its position.
pub(super) fn split(url: &str) -> Result<Vec<String>, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(vec![url.to_owned()]);
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (user, hosts) = match authority.rsplit_once('@') {
        Some((user, hosts)) => (format!("{user}@"), hosts),
        None => (String::new(), authority),
    };
    if !hosts.contains(',') {
        return Ok(vec![url.to_owned()]);
    }
    hosts
        .split(',')
        .enumerate()
        .map(|(n, host)| match host.trim() {
            "" => Err(format!(
                "host {} of the URL's list is empty; list hosts as h1:5432,h2:5432",
                n + 1
            )),
            host => Ok(format!("{scheme}://{user}{host}{tail}")),
        })
        .collect()
}

/// A host as shown: `host:port`.
fn shown(options: &PgConnectOptions) -> String {
    format!("{}:{}", options.get_host(), options.get_port())
}

/// The host written to now, and since when (the last time it changed).
#[derive(Debug, Clone)]
pub struct Primary {
    /// `host:port`.
    pub host: String,
    /// When onejob found it the primary after another was: `None` while it is the host found
    /// at open.
    pub since: Option<SystemTime>,
}

/// The hosts of one ledger, and which of them is written to now.
pub(super) struct Hosts {
    each: Vec<PgConnectOptions>,
    current: Mutex<(usize, Option<SystemTime>)>,
    /// A statement or a connection failed as if the host went away: ask again before the next
    /// connection.
    lost: AtomicBool,
    /// One search at a time for the whole process.
    finding: tokio::sync::Mutex<()>,
    /// The ledger's pool, pointed at the host found.
    pool: OnceLock<PgPool>,
    /// A primary was found once: finding another later is a move.
    found: AtomicBool,
}

impl Hosts {
    /// The hosts of `each` (the connection options of each, in the URL's order), writing to
    /// the first until [`Hosts::find`] says otherwise.
    pub fn new(each: Vec<PgConnectOptions>) -> Hosts {
        Hosts {
            each,
            current: Mutex::new((0, None)),
            lost: AtomicBool::new(false),
            finding: tokio::sync::Mutex::new(()),
            pool: OnceLock::new(),
            found: AtomicBool::new(false),
        }
    }

    /// The pool that [`Hosts::find`] points at the host it finds.
    pub fn keep_pointed(&self, pool: &PgPool) {
        let _ = self.pool.set(pool.clone());
    }

    /// Whether the URL names more than one host.
    pub fn several(&self) -> bool {
        self.each.len() > 1
    }

    /// The options of the host written to now.
    pub fn options(&self) -> PgConnectOptions {
        let (index, _) = *self.current.lock().unwrap_or_else(|e| e.into_inner());
        self.each[index].clone()
    }

    /// The host written to now, and since when.
    pub fn primary(&self) -> Primary {
        let (index, since) = *self.current.lock().unwrap_or_else(|e| e.into_inner());
        Primary {
            host: shown(&self.each[index]),
            since,
        }
    }

    /// Notes that the host written to may have gone: the next connection asks again first.
    pub fn suspect(&self) {
        if self.several() {
            self.lost.store(true, Ordering::Relaxed);
        }
    }

    /// Whether [`Hosts::suspect`] was called since the last search.
    pub fn suspected(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Asks each host in turn, the one written to now first, whether it accepts writes, and
    /// writes to the first that does from now on, pointing the pool at it. `Ok(true)` when the
    /// host changed; an error names every host and what each said when none accepts writes.
    pub async fn find(&self) -> Result<bool, String> {
        let _one = self.finding.lock().await;
        let (now, _) = *self.current.lock().unwrap_or_else(|e| e.into_inner());
        let order = (0..self.each.len()).map(|i| (now + i) % self.each.len());
        let mut said = Vec::new();
        for index in order {
            match accepts_writes(&self.each[index]).await {
                Ok(true) => {
                    self.lost.store(false, Ordering::Relaxed);
                    let moved = self.found.swap(true, Ordering::Relaxed);
                    if index == now {
                        return Ok(false);
                    }
                    let since = moved.then(SystemTime::now);
                    *self.current.lock().unwrap_or_else(|e| e.into_inner()) = (index, since);
                    if let Some(pool) = self.pool.get() {
                        pool.set_connect_options(self.each[index].clone());
                    }
                    return Ok(true);
                }
                Ok(false) => said.push(format!("{} is a standby", shown(&self.each[index]))),
                Err(e) => said.push(format!("{}: {e}", shown(&self.each[index]))),
            }
        }
        Err(format!(
            "none of its hosts accepts writes ({})",
            said.join("; ")
        ))
    }
}

/// Whether the server at `options` accepts writes: it answers, within [`CONNECT_TIMEOUT`],
/// that it is not in recovery.
async fn accepts_writes(options: &PgConnectOptions) -> Result<bool, String> {
    let asked = async {
        let mut conn = PgConnection::connect_with(options).await?;
        let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
            .fetch_one(&mut conn)
            .await?;
        conn.close().await?;
        Ok::<_, sqlx::Error>(!standby)
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, asked).await {
        Ok(Ok(primary)) => Ok(primary),
        Ok(Err(e)) => Err(first_line(&e.to_string())),
        Err(_) => Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())),
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_split_into_one_url_per_host() {
        assert_eq!(
            split("postgres://u:pw@h1:5432,h2:5433/db?sslmode=disable").unwrap(),
            vec![
                "postgres://u:pw@h1:5432/db?sslmode=disable",
                "postgres://u:pw@h2:5433/db?sslmode=disable"
            ]
        );
        assert_eq!(
            split("postgresql://h1,h2").unwrap(),
            vec!["postgresql://h1", "postgresql://h2"]
        );
        assert_eq!(
            split("postgres://u@[::1]:5432,127.0.0.1:5433/db").unwrap(),
            vec![
                "postgres://u@[::1]:5432/db",
                "postgres://u@127.0.0.1:5433/db"
            ]
        );
        assert_eq!(
            split("postgres://u@h1:5432/db").unwrap(),
            vec!["postgres://u@h1:5432/db"]
        );
        let empty = split("postgres://u@h1:5432,,h3/db").unwrap_err();
        assert!(empty.contains("host 2"), "{empty}");
    }
}
