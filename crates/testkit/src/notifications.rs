//! A real desktop notification server for the end-to-end tests: dunst, on a given X display
//! and session bus, with notifications that stay until acted on, driven like a person through
//! `dunstctl` (a click on a notification is its default action).

use std::io::Error;
use std::process::{Child, Command, Stdio};

/// Notifications never expire here, so a slow test still finds them on screen.
const DUNSTRC: &str = "[global]\n    follow = none\n[urgency_low]\n    timeout = 0\n\
[urgency_normal]\n    timeout = 0\n[urgency_critical]\n    timeout = 0\n";

/// A running dunst, killed and reaped when dropped.
pub struct Notifications {
    child: Child,
    env: Vec<(String, String)>,
    _dir: tempfile::TempDir,
}

impl Notifications {
    /// Starts dunst on `display` and the session bus of `bus` (a `DBUS_SESSION_BUS_ADDRESS`
    /// pair at least), and returns once it owns the notification service there.
    pub fn start(display: &str, bus: &[(String, String)]) -> std::io::Result<Notifications> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("dunstrc");
        std::fs::write(&config, DUNSTRC)?;
        let mut env: Vec<(String, String)> = bus
            .iter()
            .filter(|(k, _)| k == "DBUS_SESSION_BUS_ADDRESS")
            .cloned()
            .collect();
        env.push(("DISPLAY".into(), display.into()));
        let child = crate::spawn_quiet(
            Command::new("dunst")
                .arg("-config")
                .arg(&config)
                .envs(env.iter().cloned()),
            "dunst",
            "apt-get install dunst",
        )?;
        let server = Notifications {
            child,
            env,
            _dir: dir,
        };
        let not_yet = "dunst did not take the notification service";
        crate::ready_within_10s(not_yet, || server.ctl(&["debug"]).is_ok())?;
        Ok(server)
    }

    /// How many notifications are on screen now.
    pub fn displayed(&self) -> std::io::Result<u32> {
        let out = self.ctl(&["count", "displayed"])?;
        out.trim()
            .parse()
            .map_err(|_| Error::other(format!("dunstctl count said {out:?}")))
    }

    /// Clicks the notification at `position` (0 is the newest on screen): its default action.
    pub fn click(&self, position: u32) -> std::io::Result<()> {
        self.ctl(&["action", &position.to_string()]).map(|_| ())
    }

    /// Closes the newest notification on screen, as a person dismissing it.
    pub fn close_newest(&self) -> std::io::Result<()> {
        self.ctl(&["close"]).map(|_| ())
    }

    fn ctl(&self, args: &[&str]) -> std::io::Result<String> {
        let out = Command::new("dunstctl")
            .args(args)
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .output()?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(Error::other(format!(
                "dunstctl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }
}

impl Drop for Notifications {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
