//! A third-party OpenAI-compatible server on loopback: `@dwmkerr/mock-llm` from npm, which
//! `scripts/setup` installs into `crates/engine/tests/mock-llm/`. Its answers are rules
//! matched against each request (JMESPath), so a test states exactly what it must receive.

use std::io::{Error, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

/// How to install the server when it is missing.
const SETUP: &str = "npm ci --prefix crates/engine/tests/mock-llm (scripts/setup runs it)";

/// A mock-llm process on a free 127.0.0.1 port, killed and reaped when dropped.
pub struct MockLlm {
    child: Child,
    /// `http://127.0.0.1:PORT`, without `/v1`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl MockLlm {
    /// Starts the server with `config` (mock-llm's YAML config; JSON is YAML, so a
    /// serialised `serde_json::Value` is written as it is) and returns once `/health` answers.
    pub fn start(config: &str) -> std::io::Result<MockLlm> {
        let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../engine/tests/mock-llm/node_modules/.bin/mock-llm");
        if !bin.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("@dwmkerr/mock-llm is not installed: run `{SETUP}`"),
            ));
        }
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("mock-llm.yaml");
        std::fs::write(&path, config)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = crate::spawn_quiet(
            Command::new(&bin)
                .arg("--config")
                .arg(&path)
                .current_dir(dir.path())
                .env("HOST", "127.0.0.1")
                .env("PORT", port.to_string()),
            "mock-llm",
            &format!("run `{SETUP}`"),
        )?;
        let server = MockLlm {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let not_yet = format!("mock-llm at {} did not answer /health", server.url);
        crate::ready_within_10s(&not_yet, || healthy(port))?;
        Ok(server)
    }
}

/// Whether `GET /health` answers 200.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let request =
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
