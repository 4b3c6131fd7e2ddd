//! A throwaway PostgreSQL cluster for tests: `initdb` into a temporary directory, a server
//! listening on 127.0.0.1 only, on a free port, stopped and removed when dropped. `initdb`
//! refuses to run as root, so as root the cluster belongs to the `postgres` user that
//! Debian's package creates.

use std::io::{Error, ErrorKind};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod standby;

pub use standby::{Replicated, Standby, STANDBY_NAME};

/// The role the tests connect as: the cluster's superuser, trusted on loopback only.
const ROLE: &str = "onejob";
/// How long the server gets to accept connections.
const STARTUP: Duration = Duration::from_secs(30);

/// A running cluster. Dropping it stops the server (immediately: nothing in it is kept) and
/// removes its directory.
pub struct Postgres {
    server: Child,
    port: u16,
    bin: PathBuf,
    owner: Option<String>,
    dir: tempfile::TempDir,
    /// What [`Postgres::thaw`] continues: the `runuser` above the server (as root), the
    /// postmaster, then its children.
    frozen: Vec<u32>,
}

impl Postgres {
    /// Creates and starts a cluster with `fsync` on (commits are as durable as in production):
    /// what the benchmarks measure.
    pub fn start() -> std::io::Result<Postgres> {
        Postgres::start_with(&["max_connections=200"])
    }

    /// Creates and starts a cluster for a test pass: no `fsync`, no waiting for the WAL at
    /// commit, no full-page writes (nothing in it outlives the pass, so a crash may lose it), and
    /// room for the many connections hundreds of tests open at once.
    pub fn start_for_tests() -> std::io::Result<Postgres> {
        Postgres::start_with(&[
            "fsync=off",
            "synchronous_commit=off",
            "full_page_writes=off",
            "max_connections=400",
        ])
    }

    /// Creates and starts a cluster with the server settings `settings` (`name=value` each).
    pub fn start_with(settings: &[&str]) -> std::io::Result<Postgres> {
        let bin = bin_dir()?;
        let (dir, owner) = owned_dir()?;
        let data = dir.path().join("data");
        let init = ["-U", ROLE, "-A", "trust", "-E", "UTF8", "--no-instructions"];
        run_on_data(&owner, &bin.join("initdb"), &data, &init)?;
        Postgres::launch(bin, owner, dir, settings)
    }

    /// Starts a server on the cluster in `dir`'s `data` folder, on a free port of 127.0.0.1
    /// with its socket in `dir`, and returns once it accepts connections.
    fn launch(
        bin: PathBuf,
        owner: Option<String>,
        dir: tempfile::TempDir,
        settings: &[&str],
    ) -> std::io::Result<Postgres> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let server = as_owner(&owner, &bin.join("postgres"))
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-k"])
            .arg(dir.path())
            .args(settings.iter().flat_map(|setting| ["-c", setting]))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let cluster = Postgres {
            server,
            port,
            bin,
            owner,
            dir,
            frozen: Vec::new(),
        };
        cluster.wait_ready()?;
        Ok(cluster)
    }

    /// The URL of database `postgres` as the superuser, over TCP on loopback.
    pub fn url(&self) -> String {
        format!("{}/postgres", self.server_url())
    }

    /// The server's URL with no database: what `ONEJOB_TEST_POSTGRES` holds for a test pass.
    pub fn server_url(&self) -> String {
        format!("postgres://{ROLE}@127.0.0.1:{}", self.port)
    }

    /// The folder that holds the cluster's data and socket, removed when it is dropped.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Creates database `name` and returns its URL: one cluster serves many tests.
    pub fn database(&self, name: &str) -> std::io::Result<String> {
        // A ledger for a test: nothing run on it may reach a desktop's keyring.
        crate::isolate_keyring();
        crate::backend::psql(&self.url(), &format!("CREATE DATABASE \"{name}\""))
            .map_err(|e| Error::other(format!("cannot create database {name}: {e}")))?;
        Ok(self.database_url(name))
    }

    /// The URL of database `name` on this server as the superuser; it is not created.
    pub fn database_url(&self, name: &str) -> String {
        format!("{}/{name}", self.server_url())
    }

    /// Runs `sql` on database `database` as the superuser with `psql`; its rows, one a line,
    /// columns separated by `|`.
    pub fn sql(&self, database: &str, sql: &str) -> std::io::Result<String> {
        crate::backend::psql(&self.database_url(database), sql)
    }

    /// Runs `sql` on database `database` with `psql` in the background, for a test that watches
    /// a statement wait (for a lock, for a standby): the running `psql`, whose exit status says
    /// how the statement ended.
    pub fn spawn_sql(&self, database: &str, sql: &str) -> std::io::Result<Child> {
        Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.database_url(database))
            .args(["-c", sql])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
    }

    /// A `psql` session on database `database` that stays open, for a test that holds a
    /// transaction (and its locks) across other work.
    pub fn session(&self, database: &str) -> std::io::Result<Session> {
        let url = self.database_url(database);
        let psql = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &url])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Session { psql })
    }

    /// The cluster's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Restarts the server as a crash would (`pg_ctl restart -m immediate`): every connection
    /// is cut, nothing is shut down cleanly, and the server recovers from its WAL; it returns
    /// once the server accepts connections again. The restarted server is pg_ctl's child, with
    /// the original settings (`postmaster.opts`); dropping the cluster stops it all the same.
    pub fn restart_immediately(&mut self) -> std::io::Result<()> {
        let log = self.dir.path().join("restart.log");
        let log = log.to_string_lossy();
        self.pg_ctl(&["-l", &log, "restart", "-m", "immediate", "-w", "-t", "60"])?;
        // The first server exited; reap it now rather than at drop.
        let _ = self.server.wait();
        self.wait_ready()
    }

    /// Stops the server as an administrator would (`pg_ctl stop -m fast`: every connection is
    /// ended), keeping its data for [`Postgres::start_again`].
    pub fn stop(&self) -> std::io::Result<()> {
        self.pg_ctl(&["stop", "-m", "fast", "-w"])
    }

    /// Starts a server stopped by [`Postgres::stop`] again, on its port and loopback only; it
    /// returns once the server accepts connections.
    pub fn start_again(&self) -> std::io::Result<()> {
        let log = self.dir.path().join("restarted.log");
        let log = log.to_string_lossy();
        let options = format!(
            "-h 127.0.0.1 -p {} -k {}",
            self.port,
            self.dir.path().display()
        );
        self.pg_ctl(&["start", "-w", "-l", &log, "-o", &options])?;
        self.wait_ready()
    }

    /// Stops every process of the server with SIGSTOP, the postmaster first (so it starts no
    /// new one) and then each of its children, as a host that is suspended or cut off would
    /// be: connections stay open and nothing answers on them, and a new connection is accepted
    /// by the kernel and then hears nothing. [`Postgres::thaw`] (or dropping the cluster)
    /// lets them run on.
    pub fn freeze(&mut self) -> std::io::Result<()> {
        let postmaster = self.postmaster()?;
        // As root the server runs under `runuser`, which stops itself when its child stops
        // and must be continued too (it then continues its child).
        if let Some(runuser) = parent_of(postmaster).filter(|&p| name_of(p) == "runuser") {
            self.frozen.push(runuser);
        }
        signal(&[postmaster], "STOP")?;
        self.frozen.push(postmaster);
        let children = children_of(postmaster)?;
        signal(&children, "STOP")?;
        self.frozen.extend(children);
        Ok(())
    }

    /// Ends every process of the server with SIGKILL, as a crash of its host would: nothing is
    /// written or shut down, every connection is cut, and nothing answers on its port until
    /// the cluster is dropped (its folder is removed then).
    pub fn crash(&mut self) -> std::io::Result<()> {
        // A frozen process would take the kill only once continued.
        self.thaw()?;
        let postmaster = self.postmaster()?;
        let mut all = vec![postmaster];
        all.extend(children_of(postmaster)?);
        signal(&all, "KILL")?;
        // Reaped now (as root through `runuser`, which ends with its child).
        let _ = self.server.wait();
        Ok(())
    }

    /// Lets the processes stopped by [`Postgres::freeze`] run on, its children first.
    pub fn thaw(&mut self) -> std::io::Result<()> {
        let frozen = std::mem::take(&mut self.frozen);
        signal_each(frozen.iter().rev(), "CONT")
    }

    /// The postmaster's process id, from its `postmaster.pid` (the running server's, after a
    /// restart too).
    fn postmaster(&self) -> std::io::Result<u32> {
        let pid_file = self.dir.path().join("data").join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)?;
        text.lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .ok_or_else(|| Error::other(format!("no process id in {}", pid_file.display())))
    }

    /// Runs `pg_ctl` on the cluster's data folder as the cluster's owner; its error output
    /// becomes the error.
    fn pg_ctl(&self, args: &[&str]) -> std::io::Result<()> {
        let data = self.dir.path().join("data");
        run_on_data(&self.owner, &self.bin.join("pg_ctl"), &data, args)
    }

    fn wait_ready(&self) -> std::io::Result<()> {
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", ROLE])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            if ready.success() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(Error::new(
            ErrorKind::TimedOut,
            format!("PostgreSQL did not accept connections within {STARTUP:?}"),
        ))
    }
}

/// An open `psql` session (see [`Postgres::session`]); statements run as they are sent.
pub struct Session {
    psql: Child,
}

impl Session {
    /// Sends `sql` (statements ending in `;`) without waiting for its outcome.
    pub fn send(&mut self, sql: &str) -> std::io::Result<()> {
        use std::io::Write;
        let stdin = self
            .psql
            .stdin
            .as_mut()
            .ok_or_else(|| Error::other("the session's input is closed"))?;
        writeln!(stdin, "{sql}")?;
        stdin.flush()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Its end of input ends the session; an open transaction is rolled back.
        drop(self.psql.stdin.take());
        let _ = self.psql.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // A frozen server would ignore the stop below until it ran again.
        let _ = self.thaw();
        // An immediate shutdown: nothing in the cluster is kept. The folder goes with the TempDir.
        let stopped = as_owner(&self.owner, &self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["stop", "-m", "immediate", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            let _ = self.server.kill();
        }
        let _ = self.server.wait();
    }
}

/// The folder of Debian's PostgreSQL programs (the newest installed major version).
pub(crate) fn bin_dir() -> std::io::Result<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .map_err(|e| {
            Error::new(
                e.kind(),
                "PostgreSQL is not installed (scripts/setup installs Debian's postgresql)",
            )
        })?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            "no PostgreSQL under /usr/lib/postgresql",
        )
    })
}

/// A new temporary folder for a cluster and the user its server runs as: as root, the
/// `postgres` user, who is given the folder (`initdb` and `postgres` refuse to run as root).
fn owned_dir() -> std::io::Result<(tempfile::TempDir, Option<String>)> {
    let dir = tempfile::tempdir()?;
    let owner = is_root().then(|| "postgres".to_owned());
    if let Some(user) = &owner {
        let status = Command::new("chown")
            .args(["-R", user])
            .arg(dir.path())
            .status()?;
        if !status.success() {
            return Err(Error::other(format!(
                "cannot give the cluster's folder to {user}"
            )));
        }
    }
    Ok((dir, owner))
}

/// Runs `program -D data args…` as `owner` to its end; its error output becomes the error.
fn run_on_data(
    owner: &Option<String>,
    program: &Path,
    data: &Path,
    args: &[&str],
) -> std::io::Result<()> {
    let ran = as_owner(owner, program)
        .arg("-D")
        .arg(data)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    if ran.status.success() {
        return Ok(());
    }
    let name = program.file_name().unwrap_or_default().to_string_lossy();
    Err(Error::other(format!(
        "{name} {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&ran.stderr).trim()
    )))
}

/// The processes whose parent is `parent`, read from /proc.
fn children_of(parent: u32) -> std::io::Result<Vec<u32>> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // Gone since the listing, or not readable: not a child to stop.
        if parent_of(pid) == Some(parent) {
            children.push(pid);
        }
    }
    Ok(children)
}

/// The parent of process `pid`, from `/proc/<pid>/stat`: `pid (name) state ppid …`, where the
/// name may hold spaces and parentheses.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The program name of process `pid`, empty if it is gone.
fn name_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

/// Sends signal `name` (`STOP`, `CONT`) to every process of `pids`.
fn signal(pids: &[u32], name: &str) -> std::io::Result<()> {
    signal_each(pids.iter(), name)
}

fn signal_each<'a>(pids: impl Iterator<Item = &'a u32>, name: &str) -> std::io::Result<()> {
    let pids: Vec<String> = pids.map(u32::to_string).collect();
    if pids.is_empty() {
        return Ok(());
    }
    let sent = Command::new("kill")
        .arg(format!("-{name}"))
        .args(&pids)
        .stderr(Stdio::piped())
        .output()?;
    let stderr = String::from_utf8_lossy(&sent.stderr);
    // A backend that exited since it was listed needs no signal.
    let gone = |line: &str| line.contains("No such process");
    if sent.status.success() || stderr.lines().all(gone) {
        return Ok(());
    }
    Err(Error::other(format!(
        "kill -{name} {} failed: {}",
        pids.join(" "),
        stderr.trim()
    )))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// `program` run as `owner` (through runuser) when one is given.
fn as_owner(owner: &Option<String>, program: &Path) -> Command {
    match owner {
        Some(user) => {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", user, "--"]).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_starts_makes_databases_and_is_gone_when_dropped() {
        let cluster = Postgres::start().expect("a cluster starts");
        let url = cluster.database("first").expect("a database");
        assert!(
            url.ends_with("/first") && url.contains("127.0.0.1"),
            "{url}"
        );
        let port = cluster.port();
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        drop(cluster);
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }

    #[test]
    fn a_frozen_cluster_answers_nothing_until_it_is_thawed() {
        let mut cluster = Postgres::start().expect("a cluster starts");
        let url = format!("{}?connect_timeout=2", cluster.url());
        assert_eq!(
            crate::backend::psql(&url, "SELECT 1")
                .expect("answered")
                .trim(),
            "1"
        );
        cluster.freeze().expect("frozen");
        let started = Instant::now();
        let frozen = crate::backend::psql(&url, "SELECT 1");
        assert!(frozen.is_err(), "a frozen server answered: {frozen:?}");
        assert!(
            started.elapsed() >= Duration::from_secs(2),
            "refused, not frozen"
        );
        cluster.thaw().expect("thawed");
        assert_eq!(
            crate::backend::psql(&url, "SELECT 1")
                .expect("answered")
                .trim(),
            "1"
        );
    }

    #[test]
    fn a_test_cluster_trades_durability_for_speed_and_takes_many_connections() {
        let show = |cluster: &Postgres, setting: &str| {
            crate::backend::psql(&cluster.url(), &format!("SHOW {setting}"))
                .expect("shown")
                .trim()
                .to_owned()
        };
        let tests = Postgres::start_for_tests().expect("a cluster");
        for setting in ["fsync", "synchronous_commit", "full_page_writes"] {
            assert_eq!(show(&tests, setting), "off", "{setting}");
        }
        assert_eq!(show(&tests, "max_connections"), "400");
        assert_eq!(show(&tests, "listen_addresses"), "127.0.0.1");
        drop(tests);
        let durable = Postgres::start().expect("a cluster");
        assert_eq!(show(&durable, "fsync"), "on");
        assert_eq!(show(&durable, "synchronous_commit"), "on");
    }
}
