//! A bare HTTP/1.1 server on loopback for tests that must decide every byte of a reply (a
//! refusal, a body cut short) and see every byte of each request.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a reply is made from: the whole request as received.
type Reply = dyn Fn(&[u8]) -> Vec<u8> + Send + Sync;

/// A server that reads one request per connection (its head and the body its Content-Length
/// announces), keeps it, writes the bytes `reply` makes of it, and closes. Its threads live as
/// long as the test binary: they only ever wait in `accept`.
pub struct RawServer {
    /// `http://127.0.0.1:PORT`, without a path.
    pub url: String,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl RawServer {
    /// Starts the server on a free loopback port.
    pub fn start(
        reply: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static,
    ) -> std::io::Result<RawServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (seen, reply): (_, Arc<Reply>) = (requests.clone(), Arc::new(reply));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, reply) = (seen.clone(), reply.clone());
                // One thread a connection, so a slow reply holds up no other request.
                std::thread::spawn(move || answer(stream, &seen, &*reply));
            }
        });
        Ok(RawServer { url, requests })
    }

    /// Every request received so far, head and body, in arrival order.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

fn answer(mut stream: TcpStream, seen: &Mutex<Vec<Vec<u8>>>, reply: &Reply) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !complete(&request) {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    if let Ok(mut all) = seen.lock() {
        all.push(request.clone());
    }
    let _ = stream.write_all(&reply(&request));
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// A whole response: `status` such as `"400 Bad Request"`, a JSON `body`, and
/// `Connection: close`.
pub fn json_response(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Whether the bytes hold a request's head and the body its Content-Length announces.
pub fn complete(request: &[u8]) -> bool {
    let text = String::from_utf8_lossy(request);
    let Some(end) = text.find("\r\n\r\n") else {
        return false;
    };
    let length = text[..end]
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    request.len() >= end + 4 + length
}

/// The value of header `name` in a request's head, if present.
pub fn header(request: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(request);
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    head.lines().skip(1).find_map(|line| {
        let (n, value) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}
