//! A loopback relay in front of a PostgreSQL server that can cut a connection at a moment a
//! test chooses: after the server made a commit and before its answer (the client never hears
//! that it was made), or in the middle of a statement. That is what a server restarted, or a
//! connection cut, at the wrong moment does.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the relay waits, having passed a commit on, for the server to make it.
const COMMIT_TIME: Duration = Duration::from_millis(500);
/// The protocol version a startup message carries (3.0); the requests before it (SSL, GSS,
/// cancel) carry other codes.
const PROTOCOL_3: u32 = 196_608;

/// A TCP relay on 127.0.0.1 to a PostgreSQL server on another loopback port. Every byte is
/// passed on unchanged until the relay is armed, with [`Relay::lose_commit_answer`] or
/// [`Relay::cut_statement`]; then it cuts the first connection that binds a parameter
/// containing the given text, once. Connections after it are relayed as before.
pub struct Relay {
    port: u16,
    server_port: u16,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// The text a bound parameter must contain for its connection to be cut, and where.
    armed: Mutex<Option<(Vec<u8>, Cut)>>,
    /// How many connections were cut.
    cut: AtomicUsize,
    stopped: AtomicBool,
}

/// Where an armed relay cuts a connection.
#[derive(Clone, Copy, PartialEq)]
enum Cut {
    /// After the server received the transaction's `COMMIT`, before its answer.
    CommitAnswer,
    /// Before the statement that binds the text reaches the server.
    Statement,
}

impl Relay {
    /// Relays a new port on 127.0.0.1 to the server on 127.0.0.1:`server_port`.
    pub fn start(server_port: u16) -> std::io::Result<Relay> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let shared = accepting.clone();
                std::thread::spawn(move || relay(client, server, &shared));
            }
        });
        Ok(Relay {
            port,
            server_port,
            shared,
        })
    }

    /// The relay's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `url`, a PostgreSQL URL of the relayed server, through the relay instead.
    pub fn url_for(&self, url: &str) -> String {
        url.replacen(
            &format!("127.0.0.1:{}", self.server_port),
            &format!("127.0.0.1:{}", self.port),
            1,
        )
    }

    /// Arms the relay: the next transaction that binds a parameter containing `needle` has its
    /// `COMMIT` passed to the server, which is given time to make it; then the connection is
    /// closed both ways without the server's answer reaching the client.
    pub fn lose_commit_answer(&self, needle: &str) {
        *lock(&self.shared.armed) = Some((needle.as_bytes().to_vec(), Cut::CommitAnswer));
    }

    /// Arms the relay: the next statement that binds a parameter containing `needle` never
    /// reaches the server; its connection is closed both ways instead, mid-statement.
    pub fn cut_statement(&self, needle: &str) {
        *lock(&self.shared.armed) = Some((needle.as_bytes().to_vec(), Cut::Statement));
    }

    /// How many connections it has cut so far.
    pub fn cut(&self) -> usize {
        self.shared.cut.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees it is stopped.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Relays one connection: the server's bytes back as they come, unless muted; the client's
/// message by message, watching for the transaction whose commit answer is to be lost.
fn relay(mut client: TcpStream, mut server: TcpStream, shared: &Shared) {
    let muted = Arc::new(AtomicBool::new(false));
    let (Ok(mut from_server), Ok(mut to_client)) = (server.try_clone(), client.try_clone()) else {
        return;
    };
    let answers_muted = muted.clone();
    let answers = std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from_server.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if answers_muted.load(Ordering::SeqCst)
                        || to_client.write_all(&buf[..n]).is_err()
                    {
                        break;
                    }
                }
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
    });
    let _ = requests(&mut client, &mut server, shared, &muted);
    let _ = server.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
    let _ = answers.join();
}

/// Passes the client's messages on until either side closes, or the armed commit is passed.
fn requests(
    client: &mut TcpStream,
    server: &mut TcpStream,
    shared: &Shared,
    muted: &AtomicBool,
) -> std::io::Result<()> {
    // Untyped messages first: SSL or GSS requests, then the startup message.
    loop {
        let message = read_untyped(client)?;
        server.write_all(&message)?;
        if message.len() >= 8
            && u32::from_be_bytes([message[4], message[5], message[6], message[7]]) == PROTOCOL_3
        {
            break;
        }
    }
    let mut bound_needle = false;
    loop {
        let (kind, message) = read_typed(client)?;
        let body = &message[5..];
        match kind {
            b'B' => {
                let mut armed = lock(&shared.armed);
                if let Some((needle, cut)) = armed.as_ref() {
                    let binds = body.windows(needle.len()).any(|w| w == needle.as_slice());
                    if binds && *cut == Cut::Statement {
                        *armed = None;
                        shared.cut.fetch_add(1, Ordering::SeqCst);
                        return Ok(());
                    }
                    bound_needle |= binds;
                }
            }
            b'Q' => {
                let text = String::from_utf8_lossy(body)
                    .trim_end_matches('\0')
                    .trim()
                    .to_ascii_uppercase();
                if text.starts_with("COMMIT")
                    && bound_needle
                    && lock(&shared.armed).take().is_some()
                {
                    muted.store(true, Ordering::SeqCst);
                    server.write_all(&message)?;
                    std::thread::sleep(COMMIT_TIME);
                    shared.cut.fetch_add(1, Ordering::SeqCst);
                    return Ok(());
                }
                if text.starts_with("BEGIN")
                    || text.starts_with("ROLLBACK")
                    || text.starts_with("COMMIT")
                {
                    bound_needle = false;
                }
            }
            _ => {}
        }
        server.write_all(&message)?;
    }
}

/// One untyped message (a length, then the rest), whole.
fn read_untyped(from: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut length = [0u8; 4];
    from.read_exact(&mut length)?;
    let rest = (u32::from_be_bytes(length) as usize).saturating_sub(4);
    let mut message = length.to_vec();
    message.resize(4 + rest, 0);
    from.read_exact(&mut message[4..])?;
    Ok(message)
}

/// One typed message (a type byte, a length, then the rest), whole, and its type.
fn read_typed(from: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    from.read_exact(&mut head)?;
    let rest =
        (u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize).saturating_sub(4);
    let mut message = head.to_vec();
    message.resize(5 + rest, 0);
    from.read_exact(&mut message[5..])?;
    Ok((head[0], message))
}
