//! The connections: served while a slot is free, and one past the limit answered 503 at once;
//! each request within its deadline, TLS when the address is not loopback, and a graceful
//! stop that answers what is in hand.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use onejob_engine::{Error, Result};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

use crate::conn::{Answering, Service};
use crate::problem::{raw_answer, Problem};
use crate::ARRIVAL_DEADLINE;

/// Connections past the limit being answered 503 at once; past these, one is closed unanswered.
const REFUSING: usize = 64;
/// How long a refused connection's request is read and dropped after its answer, so that
/// closing it does not reset the answer away before the client reads it.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// How the server bounds its work.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once; one more is answered 503 with `Retry-After`, and each token
    /// holds at most a quarter of them in long requests.
    pub max_connections: usize,
    /// How long the graceful stop waits for answers in hand before it closes what is left.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 512,
            drain: Duration::from_secs(30),
        }
    }
}

/// How a serve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// Connections still open when the drain time ran out, closed without their answer.
    pub cut: usize,
}

/// Whether `addr` can be reached only from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    match addr.ip() {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The TLS configuration from a PEM certificate chain and its PEM private key.
pub fn tls_config(cert: &Path, key: &Path) -> Result<TlsAcceptor> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let read_error = |field: &str, path: &Path, e: &dyn std::fmt::Display| {
        Error::invalid_input(field, format!("{}: {e}", path.display()))
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| read_error("tls_cert", cert, &e))?;
    if chain.is_empty() {
        return Err(read_error("tls_cert", cert, &"holds no PEM certificate"));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| read_error("tls_key", key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, private))
        .map_err(|e| read_error("tls_key", key, &e))?;
    let mut config = config;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `router` on `listener` until `stop` resolves, then stops accepting, lets the
/// connections answer what they hold (up to `limits.drain`), and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<TlsAcceptor>,
    limits: Limits,
    stop: impl Future<Output = ()>,
) -> Served {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(ARRIVAL_DEADLINE)
        .keep_alive(true);
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of descriptors or a connection reset before it was taken: wait, go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Answers are small and latency matters more than packing.
        let _ = stream.set_nodelay(true);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Past the limit: told so at once rather than left unseen in the listen queue.
            if let Ok(refusal) = refusing.clone().try_acquire_owned() {
                let tls = tls.clone();
                tokio::spawn(async move {
                    let _refusal = refusal;
                    refuse(stream, tls).await;
                });
            }
            continue;
        };
        let watcher = graceful.watcher();
        let http = http.clone();
        let service = Service::new(router.clone());
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            match tls {
                None => serve_one(http, stream, service, watcher).await,
                Some(tls) => {
                    // The handshake is part of the request's arrival, and has its deadline.
                    let Ok(Ok(stream)) =
                        tokio::time::timeout(ARRIVAL_DEADLINE, tls.accept(stream)).await
                    else {
                        return;
                    };
                    serve_one(http, stream, service, watcher).await;
                }
            }
        });
    }
    drop(listener);
    let cut = tokio::select! {
        () = graceful.shutdown() => 0,
        () = tokio::time::sleep(limits.drain) => limits.max_connections - slots.available_permits(),
    };
    Served { cut }
}

async fn serve_one<I>(
    http: http1::Builder,
    io: I,
    service: Service,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = http.serve_connection(TokioIo::new(Answering::new(io)), service);
    let _ = watcher.watch(conn).await;
}

/// Answers a connection past the limit with 503 and `Retry-After`, then reads what it sent
/// for a moment and closes it.
async fn refuse(stream: TcpStream, tls: Option<TlsAcceptor>) {
    let answer = raw_answer(&Problem::too_many(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "the server holds as many connections as it serves at once; try again in a moment",
        1,
    ));
    match tls {
        None => answer_and_close(stream, &answer).await,
        Some(tls) => {
            if let Ok(Ok(stream)) = tokio::time::timeout(REFUSAL_LINGER, tls.accept(stream)).await {
                answer_and_close(stream, &answer).await;
            }
        }
    }
}

async fn answer_and_close<I: AsyncRead + AsyncWrite + Unpin>(mut io: I, answer: &[u8]) {
    // The answer follows the request's head (or a moment's wait for it): a client that reads
    // an answer before it has sent its request takes it for a broken connection.
    let mut seen = Vec::new();
    let head = async {
        let mut buf = [0u8; 4096];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.len() < 64 * 1024 {
            let n = io.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(REFUSAL_LINGER, head).await;
    let linger = async {
        io.write_all(answer).await?;
        io.flush().await?;
        io.shutdown().await?;
        let mut sink = [0u8; 4096];
        while io.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(REFUSAL_LINGER, linger).await;
}
