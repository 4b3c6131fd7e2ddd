//! The one place that decides which OS keyring a test can reach: a private Secret Service the
//! test starts ([`SecretService`]) and hands to a child process, or none at all.
//!
//! onejob finds the Secret Service through `DBUS_SESSION_BUS_ADDRESS` (or, when that is unset,
//! the bus in `XDG_RUNTIME_DIR`), once per process. Run in a person's desktop session, both
//! lead to the person's own keyring, where a test that removes its provider `primary` would
//! clear the person's `onejob`/`primary` key. [`isolate_keyring`] points the test process at
//! a bus that cannot exist before its first ledger is made, and every process it spawns
//! inherits that, unless the test gives it a private service's [`SecretService::env`].
//!
//! [`DesktopSession`] stands for such a person's session, for the tests that show it is never
//! reached.

use std::io::{Error, Write};
use std::process::{Command, Stdio};
use std::sync::Once;

use crate::SecretService;

/// The session bus address of every test process and of what it spawns: a socket under
/// `/dev/null`, a file, so no bus can ever listen there and every connection fails at once.
pub const NO_SESSION_BUS: &str = "unix:path=/dev/null/onejob-tests-reach-no-session-bus";

/// Set in the test process a [`DesktopSession`] runs, so the test knows to play its part.
const INSIDE: &str = "ONEJOB_TEST_IN_DESKTOP_SESSION";

/// Cuts this process, and every process it spawns from now on, off the session bus its
/// environment names, so onejob in a test (in process or as a child) never reaches a person's
/// keyring. Everything in this crate that makes a ledger or a Secret Service for a test calls
/// it ([`crate::ledger_location`], [`crate::Postgres::database`], [`SecretService::start`]); a
/// test that opens its ledger otherwise calls it first. Runs once per process.
pub fn isolate_keyring() {
    static ONCE: Once = Once::new();
    // Rust's readers of the environment (the keyring's D-Bus client, `Command`) take the lock
    // `set_var` takes.
    ONCE.call_once(|| std::env::set_var("DBUS_SESSION_BUS_ADDRESS", NO_SESSION_BUS));
}

/// A stand-in for a person's desktop session and the keyring in it: a private Secret Service
/// whose bus a test process is started with, the way a session hands its bus to every program
/// started in it. Dropping it stops the service.
pub struct DesktopSession {
    keyring: SecretService,
}

impl DesktopSession {
    /// Starts the session's keyring (see [`SecretService::start`]).
    pub fn start() -> std::io::Result<DesktopSession> {
        Ok(DesktopSession {
            keyring: SecretService::start()?,
        })
    }

    /// Whether this process is the test process [`DesktopSession::run_test`] started.
    pub fn inside() -> bool {
        std::env::var_os(INSIDE).is_some()
    }

    /// What the session gives a program started in it: its bus and its runtime directory.
    pub fn env(&self) -> Vec<(String, String)> {
        self.keyring
            .env()
            .into_iter()
            .filter(|(k, _)| k == "DBUS_SESSION_BUS_ADDRESS" || k == "XDG_RUNTIME_DIR")
            .collect()
    }

    /// Stores `secret` as the keyring's entry for `service` and `user`, as the person's own
    /// programs would.
    pub fn store(&self, service: &str, user: &str, secret: &str) -> std::io::Result<()> {
        let mut child = self
            .secret_tool(&["store", "--label=a person's key", "service", service])
            .args(["username", user])
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| Error::other(format!("secret-tool (libsecret-tools): {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(secret.as_bytes())?;
        }
        let status = child.wait()?;
        match status.success() {
            true => Ok(()),
            false => Err(Error::other(format!("secret-tool store: {status}"))),
        }
    }

    /// The keyring's entry for `service` and `user`, if it holds one.
    pub fn lookup(&self, service: &str, user: &str) -> std::io::Result<Option<String>> {
        let out = self
            .secret_tool(&["lookup", "service", service, "username", user])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::other(format!("secret-tool (libsecret-tools): {e}")))?;
        // secret-tool exits 1, saying nothing, when there is no such entry.
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
    }

    /// Starts a session whose keyring holds `secret` for `service` and `user`, runs the test
    /// `name` in it ([`DesktopSession::run_test`]), and returns the session with what its
    /// keyring holds for them afterwards.
    pub fn run_beside_key(
        name: &str,
        service: &str,
        user: &str,
        secret: &str,
    ) -> std::io::Result<(DesktopSession, Option<String>)> {
        let desktop = DesktopSession::start()?;
        desktop.store(service, user, secret)?;
        desktop.run_test(name)?;
        let kept = desktop.lookup(service, user)?;
        Ok((desktop, kept))
    }

    /// Runs the test `name` of this test binary again, alone, in a process started in this
    /// session ([`DesktopSession::env`], [`DesktopSession::inside`] true there). An error, with
    /// the run's output, unless that one test ran and passed.
    pub fn run_test(&self, name: &str) -> std::io::Result<()> {
        let out = Command::new(std::env::current_exe()?)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .envs(self.env())
            .env(INSIDE, "1")
            .stdin(Stdio::null())
            .output()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        // A name that matches no test passes too, having run nothing.
        if out.status.success() && stdout.contains("test result: ok. 1 passed") {
            return Ok(());
        }
        Err(Error::other(format!(
            "{name} in a desktop session: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )))
    }

    fn secret_tool(&self, args: &[&str]) -> Command {
        let mut command = Command::new("secret-tool");
        command.envs(self.keyring.env()).args(args);
        command
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_process_and_its_children_reach_no_session_bus() {
        isolate_keyring();
        assert_eq!(
            std::env::var("DBUS_SESSION_BUS_ADDRESS").as_deref(),
            Ok(NO_SESSION_BUS)
        );
        // The bus a child is given is the address that cannot exist, and connecting fails.
        let out = Command::new("dbus-send")
            .args(["--session", "--print-reply", "--dest=org.freedesktop.DBus"])
            .args(["/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"])
            .stdin(Stdio::null())
            .output()
            .expect("dbus-send runs (dbus-bin)");
        assert!(!out.status.success(), "a bus answered: {out:?}");
    }

    #[test]
    fn a_desktop_session_keeps_what_is_stored_in_it() {
        let desktop = DesktopSession::start().expect("a session's keyring");
        assert_eq!(
            desktop.lookup("onejob", "primary").expect("looked up"),
            None
        );
        desktop
            .store("onejob", "primary", "sk-a-persons-key")
            .expect("stored");
        assert_eq!(
            desktop.lookup("onejob", "primary").expect("looked up"),
            Some("sk-a-persons-key".to_owned())
        );
    }
}
