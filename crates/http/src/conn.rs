//! One connection as the router meets it: each request carries the moment by which it must
//! have arrived whole (its headers and its body together), and the answers hyper writes by
//! itself to a head it cannot parse leave as problem+json like every other error.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;
use tower::ServiceExt;

use crate::body::ArrivalDeadline;
use crate::problem::{raw_answer, Problem};
use crate::ARRIVAL_DEADLINE;

/// When the connection began to read its current request: when it was accepted, then each
/// time an answer has been sent whole (hyper reads the next request's head from then on).
struct Reading {
    base: Instant,
    since_ms: AtomicU64,
}

impl Reading {
    fn mark(&self) {
        let ms = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.since_ms.store(ms, Ordering::Relaxed);
    }

    fn deadline(&self) -> Instant {
        self.base + Duration::from_millis(self.since_ms.load(Ordering::Relaxed)) + ARRIVAL_DEADLINE
    }
}

/// The router as one connection's hyper service.
#[derive(Clone)]
pub struct Service {
    router: Router,
    reading: Arc<Reading>,
}

impl Service {
    /// The service of a connection whose first request starts arriving now.
    pub fn new(router: Router) -> Service {
        Service {
            router,
            reading: Arc::new(Reading {
                base: Instant::now(),
                since_ms: AtomicU64::new(0),
            }),
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for Service {
    type Response = Response<Body>;
    type Error = std::convert::Infallible;
    type Future =
        Pin<Box<dyn Future<Output = Result<Response<Body>, std::convert::Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let mut request = request.map(Body::new);
        request
            .extensions_mut()
            .insert(ArrivalDeadline(self.reading.deadline()));
        let router = self.router.clone();
        let reading = self.reading.clone();
        Box::pin(async move {
            let response = router.oneshot(request).await?;
            Ok(response.map(|inner| Body::new(Sent { inner, reading })))
        })
    }
}

/// An answer's body that, once sent whole or dropped, marks the connection as reading again.
struct Sent {
    inner: Body,
    reading: Arc<Reading>,
}

impl Drop for Sent {
    fn drop(&mut self) {
        self.reading.mark();
    }
}

impl hyper::body::Body for Sent {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's bytes, with hyper's own bodiless answer to a head it cannot parse (400, 414,
/// 431) replaced by the same status as problem+json; hyper closes the connection after it.
pub struct Answering<I> {
    inner: I,
    /// A replacement being written: its bytes, how many went out, and how many of hyper's it
    /// stands for.
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<I> Answering<I> {
    pub fn new(inner: I) -> Answering<I> {
        Answering {
            inner,
            replacing: None,
        }
    }
}

/// The status and head length of an answer hyper made itself: one of its parse-error statuses,
/// without the content type every answer of the router carries.
fn hypers_own(buf: &[u8]) -> Option<(StatusCode, usize)> {
    let rest = buf.strip_prefix(b"HTTP/1.1 ")?;
    let status = match rest.get(..4)? {
        b"400 " => StatusCode::BAD_REQUEST,
        b"414 " => StatusCode::URI_TOO_LONG,
        b"431 " => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        _ => return None,
    };
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    (!head.contains("\r\ncontent-type:")).then_some((status, end))
}

fn replacement(status: StatusCode) -> Vec<u8> {
    let (field, why) = match status {
        StatusCode::URI_TOO_LONG => ("path", "the request's target is too long"),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
            "headers",
            "too many request headers, or too large; at most 100 are read",
        ),
        _ => (
            "request",
            "the request's head is not HTTP/1.1 this server reads",
        ),
    };
    raw_answer(&Problem::refused(status, field, why))
}

impl<I: AsyncRead + Unpin> AsyncRead for Answering<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Answering<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.replacing.is_none() {
            match hypers_own(buf) {
                Some((status, head)) => self.replacing = Some((replacement(status), 0, head)),
                None => return Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        let this = &mut *self;
        let Some((bytes, written, stands_for)) = this.replacing.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        while *written < bytes.len() {
            let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        let stands_for = *stands_for;
        this.replacing = None;
        Poll::Ready(Ok(stands_for))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bodiless_parse_answers_are_replaced() {
        let hyper = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(
            hypers_own(hyper),
            Some((StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, hyper.len()))
        );
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\n\r\n{}";
        assert_eq!(hypers_own(ours), None);
        assert_eq!(hypers_own(b"HTTP/1.1 200 OK\r\n\r\n"), None);
    }
}
