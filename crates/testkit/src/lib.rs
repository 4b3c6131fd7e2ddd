//! Real services for onejob's tests, started privately per test and stopped when dropped.
//!
//! [`SecretService`] is a real Secret Service (gnome-keyring) on its own D-Bus session bus,
//! in a temporary directory: the OS keyring a person's desktop has, with no desktop, no
//! prompt, and nothing written outside the directory. [`MockLlm`] is a third-party
//! OpenAI-compatible server on loopback. [`Notifications`] is a desktop notification server
//! (dunst) that a test clicks like a person. [`RawServer`] is a bare HTTP server on loopback
//! whose every reply byte a test decides. [`Postgres`] is a throwaway PostgreSQL cluster on
//! loopback, [`Replicated`] a primary with a standby streaming from it, and [`Relay`] a relay
//! in front of one that can lose the answer to a commit the server made. [`seed_jobs`] fills a
//! SQLite ledger with many finished jobs at once.
//!
//! [`isolate_keyring`] is the one place that decides which keyring a test reaches: a private
//! [`SecretService`] it hands to a child, or none; never the keyring of the desktop the tests
//! run on. Everything here that makes a ledger or a service for a test applies it.
//!
//! [`ledger_location`] is where a test's ledger lives: a SQLite file, or a fresh PostgreSQL
//! database when [`TEST_POSTGRES`] names a server (`with-postgres` starts one and sets it), so
//! the engine's and the command line's tests run unchanged on both backends.

mod backend;
pub mod fixtures;
mod keyring;
mod mock_llm;
mod notifications;
mod postgres;
pub mod raw_http;
mod relay;
mod seed;

pub use backend::{
    backend, is_url, ledger_contents, ledger_exists, ledger_location, ledger_location_on,
    postgres_backend, sqlite_only, Backend, TEST_POSTGRES,
};
pub use keyring::{isolate_keyring, DesktopSession, NO_SESSION_BUS};
pub use mock_llm::MockLlm;
pub use notifications::Notifications;
pub use postgres::{Postgres, Replicated, Session, Standby, STANDBY_NAME};
pub use raw_http::RawServer;
pub use relay::Relay;
pub use seed::seed_jobs;

use std::io::{BufRead, BufReader, Error, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the daemons get to come up before `start` gives up.
const STARTUP: Duration = Duration::from_secs(20);
/// The well-known bus name a Secret Service owns.
const SECRETS: &str = "org.freedesktop.secrets";

/// A running Secret Service on a private session bus, with an unlocked default collection
/// ("login") that accepts new items without a prompt. Dropping it kills and waits for both
/// daemons and removes every file they wrote.
pub struct SecretService {
    bus: Child,
    keyring: Child,
    address: String,
    root: tempfile::TempDir,
}

impl SecretService {
    /// Starts `dbus-daemon` with a session bus of its own and `gnome-keyring-daemon` (secrets
    /// only) on it, unlocked with a throwaway password, and returns once the default
    /// collection answers on the bus. Fails when either program is missing (`scripts/setup`
    /// installs them) or does not come up within 20 s.
    pub fn start() -> std::io::Result<SecretService> {
        // The service is for the children the test hands it to; the test process reaches none.
        isolate_keyring();
        let root = tempfile::Builder::new().prefix("onejob-ss-").tempdir()?;
        let dirs = Dirs::new(root.path())?;
        let (mut bus, address) = start_bus(&dirs)?;
        let keyring = match start_keyring(&env_of(&address, root.path())) {
            Ok(keyring) => keyring,
            Err(e) => {
                stop(&mut bus);
                return Err(e);
            }
        };
        // From here on a failure drops `service`, which stops both daemons.
        let mut service = SecretService {
            bus,
            keyring,
            address,
            root,
        };
        service.wait_for_default_collection()?;
        Ok(service)
    }

    /// The environment a child process needs to use this Secret Service: the bus address, and
    /// private home, data, config and runtime directories, so nothing reaches the real ones.
    pub fn env(&self) -> Vec<(String, String)> {
        env_of(&self.address, self.root.path())
    }

    /// Where gnome-keyring keeps its keyring files, for tests that look inside them.
    pub fn keyrings_dir(&self) -> PathBuf {
        Dirs::of(self.root.path()).data.join("keyrings")
    }

    /// Polls until the default collection exists and the service answers for it; gnome-keyring
    /// takes the bus name before it has created the login collection.
    fn wait_for_default_collection(&mut self) -> std::io::Result<()> {
        let deadline = Instant::now() + STARTUP;
        loop {
            if let Some(status) = self.keyring.try_wait()? {
                return Err(Error::other(format!(
                    "gnome-keyring-daemon exited at start ({status})"
                )));
            }
            let alias = Command::new("dbus-send")
                .envs(self.env())
                .args([
                    "--session",
                    "--print-reply",
                    &format!("--dest={SECRETS}"),
                    "/org/freedesktop/secrets",
                    "org.freedesktop.Secret.Service.ReadAlias",
                    "string:default",
                ])
                .stderr(Stdio::null())
                .output()
                .map_err(|e| missing("dbus-send", e))?;
            if String::from_utf8_lossy(&alias.stdout).contains("/collection/") {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::new(
                    ErrorKind::TimedOut,
                    format!("{SECRETS} had no default collection after {STARTUP:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        stop(&mut self.keyring);
        stop(&mut self.bus);
    }
}

/// Kills a daemon and waits for it, so no zombie is left; it may have exited already.
fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn env_of(address: &str, root: &Path) -> Vec<(String, String)> {
    let dirs = Dirs::of(root);
    let path = |p: &Path| p.to_string_lossy().into_owned();
    vec![
        ("DBUS_SESSION_BUS_ADDRESS".to_owned(), address.to_owned()),
        ("HOME".to_owned(), path(&dirs.home)),
        ("XDG_DATA_HOME".to_owned(), path(&dirs.data)),
        ("XDG_CONFIG_HOME".to_owned(), path(&dirs.config)),
        ("XDG_RUNTIME_DIR".to_owned(), path(&dirs.runtime)),
    ]
}

/// The private directories under the temporary root.
struct Dirs {
    home: PathBuf,
    data: PathBuf,
    config: PathBuf,
    runtime: PathBuf,
}

impl Dirs {
    fn of(root: &Path) -> Dirs {
        Dirs {
            home: root.join("home"),
            data: root.join("data"),
            config: root.join("config"),
            runtime: root.join("run"),
        }
    }

    fn new(root: &Path) -> std::io::Result<Dirs> {
        let dirs = Dirs::of(root);
        for dir in [&dirs.home, &dirs.data, &dirs.config, &dirs.runtime] {
            std::fs::create_dir_all(dir)?;
        }
        // The runtime directory's owner alone may use it, as XDG asks and gnome-keyring checks.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dirs.runtime, std::fs::Permissions::from_mode(0o700))?;
        Ok(dirs)
    }
}

/// A session bus listening only in the runtime directory, with no service activation (so
/// nothing can start a real keyring behind the test's back); returns it and its address.
fn start_bus(dirs: &Dirs) -> std::io::Result<(Child, String)> {
    let config = dirs.home.join("bus.conf");
    std::fs::write(&config, bus_config(&dirs.runtime))?;
    let mut bus = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", config.display()))
        .args(["--nofork", "--print-address=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| missing("dbus-daemon", e))?;
    let mut address = String::new();
    let read = match bus.stdout.take() {
        Some(out) => BufReader::new(out).read_line(&mut address),
        None => Err(Error::other("dbus-daemon's stdout was not captured")),
    };
    let address = address.trim().to_owned();
    let read = read.and_then(|_| match address.is_empty() {
        true => Err(Error::other("dbus-daemon printed no address")),
        false => Ok(()),
    });
    if let Err(e) = read {
        stop(&mut bus);
        return Err(e);
    }
    Ok((bus, address))
}

fn bus_config(runtime: &Path) -> String {
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
        runtime.display()
    )
}

/// gnome-keyring with only its Secret Service, in the foreground so it can be killed and
/// waited for. `--unlock` reads the login keyring's password from stdin and creates that
/// keyring, unlocked, as the default collection; an empty password would make it prompt.
fn start_keyring(env: &[(String, String)]) -> std::io::Result<Child> {
    let mut keyring = Command::new("gnome-keyring-daemon")
        .args(["--foreground", "--components=secrets", "--unlock"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| missing("gnome-keyring-daemon", e))?;
    let written = match keyring.stdin.take() {
        // Dropping stdin closes it: the daemon reads the password up to end of file.
        Some(mut stdin) => stdin.write_all(b"throwaway-test-keyring"),
        None => Err(Error::other(
            "gnome-keyring-daemon's stdin was not captured",
        )),
    };
    if let Err(e) = written {
        stop(&mut keyring);
        return Err(e);
    }
    Ok(keyring)
}

/// Spawns `command`, its output discarded; a failure to start names `program` and `hint`, how
/// to get it.
pub(crate) fn spawn_quiet(
    command: &mut Command,
    program: &str,
    hint: &str,
) -> std::io::Result<Child> {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::new(e.kind(), format!("cannot start {program} ({e}): {hint}")))
}

/// Asks `ready` every 50 ms for up to 10 s; a timeout if it never says yes, saying `not_yet`
/// (what did not happen) and how long was waited.
pub(crate) fn ready_within_10s(
    not_yet: &str,
    mut ready: impl FnMut() -> bool,
) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(Error::new(
        ErrorKind::TimedOut,
        format!("{not_yet} within 10 s"),
    ))
}

fn missing(program: &str, e: Error) -> Error {
    if e.kind() == ErrorKind::NotFound {
        Error::new(
            ErrorKind::NotFound,
            format!("{program} is not installed; scripts/setup installs it"),
        )
    } else {
        Error::new(e.kind(), format!("{program}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret_tool(service: &SecretService, args: &[&str], stdin: Option<&str>) -> String {
        let mut child = Command::new("secret-tool")
            .envs(service.env())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("secret-tool runs (libsecret-tools)");
        let mut input = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).expect("written");
        }
        drop(input);
        let out = child.wait_with_output().expect("waited");
        assert!(out.status.success(), "secret-tool {args:?}: {}", out.status);
        String::from_utf8(out.stdout).expect("utf-8")
    }

    #[test]
    fn a_fresh_service_stores_and_returns_a_secret_without_a_prompt() {
        let service = SecretService::start().expect("started");
        let attrs = ["service", "onejob-testkit", "username", "round-trip"];
        let mut store = vec!["store", "--label=testkit"];
        store.extend(attrs);
        secret_tool(&service, &store, Some("s3cret-value"));
        let mut lookup = vec!["lookup"];
        lookup.extend(attrs);
        assert_eq!(secret_tool(&service, &lookup, None), "s3cret-value");
        assert!(service.keyrings_dir().join("login.keyring").exists());
    }

    #[test]
    fn dropping_the_service_stops_both_daemons_and_removes_its_files() {
        let service = SecretService::start().expect("started");
        let root = service.root.path().to_path_buf();
        let pids = [service.bus.id(), service.keyring.id()];
        drop(service);
        assert!(!root.exists(), "{root:?} is left behind");
        for pid in pids {
            // Waited for, so not even a zombie is left: the pid is gone from /proc.
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "{pid} still runs"
            );
        }
    }
}
