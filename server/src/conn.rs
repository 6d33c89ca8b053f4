//! Connection hygiene: a slow, idle or oversized client cannot hold the
//! server's resources for ever.
//!
//! - At most `max_connections` connections at once; past it a new connection
//!   is answered 503 (`Connection: close`) and closed once the client closes
//!   it or after half a second (what it sent meanwhile is read and dropped, so
//!   the close does not reset the connection under the answer). gRPC has its
//!   own `max_connections` (past it a connection is closed at once), and
//!   HTTP/2 keep-alive pings every `keep_alive_timeout`, closing a connection
//!   whose peer does not answer within `header_read_timeout`.
//! - A request's head must arrive within `header_read_timeout` of its first
//!   byte; a connection with no request in flight and no byte of a new one is
//!   closed after `keep_alive_timeout` (a new connection counts as idle until
//!   its first byte).
//! - A request's body must arrive within `body_read_timeout` of its head
//!   (else 408, connection closed); a `Content-Length` over the body limit is
//!   answered 413 at once, before any of the body is read. A gRPC message
//!   over the body limit fails with RESOURCE_EXHAUSTED as soon as its bytes
//!   pass the limit ([`GrpcBodyLimit`]).
//!
//! Concurrency: each connection is served by one task, which owns the hyper
//! connection and a watchdog timer. The connection's reads and its service
//! calls note their times in a shared [`Activity`] (atomics: the reader and
//! the service may run on other threads than the watchdog); the watchdog
//! sleeps until the earliest deadline the activity allows, or until the
//! activity says its deadline moved (the first byte of a head arrived, a
//! request ended: [`Activity::moved`], a `Notify` whose stored permit keeps a
//! wake-up that comes before the watchdog waits), re-reads it, and drops
//! the connection (closing the socket) once a deadline has passed with no
//! request in flight. A request in flight is never cut by the watchdog: its
//! body is bounded by the body read timeout, and its run by the request's
//! own deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tonic::Status;

use crate::metrics::{count, http_code};

/// The connection limits of an HTTP endpoint.
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub keep_alive_timeout: Duration,
    pub max_body_bytes: usize,
}

/// No time noted.
const NONE: u64 = u64::MAX;

/// What a connection's reads and requests tell its watchdog (ms since its start).
struct Activity {
    start: Instant,
    /// Requests being served (from their head to their response).
    in_flight: AtomicUsize,
    /// When the connection last had no request in flight.
    idle_since: AtomicU64,
    /// The first byte read while no request was in flight ([`NONE`]: none since).
    head_started: AtomicU64,
    /// Wakes the watchdog when its deadline moves: a head starts, a request ends.
    moved: Notify,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_started: AtomicU64::new(NONE),
            moved: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn read_some(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0
            && self.head_started.compare_exchange(NONE, self.now(), Ordering::AcqRel, Ordering::Acquire).is_ok()
        {
            // The deadline moves from the idle one to the head's: the watchdog must look again.
            self.moved.notify_one();
        }
    }

    fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_started.store(NONE, Ordering::Release);
    }

    fn request_done(&self) {
        self.idle_since.store(self.now(), Ordering::Release);
        self.head_started.store(NONE, Ordering::Release);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.moved.notify_one();
    }

    /// When the watchdog should close the connection (ms since its start), if nothing happens first;
    /// `None` while a request is in flight.
    fn deadline(&self, limits: &ConnLimits) -> Option<u64> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let ms = |d: Duration| d.as_millis() as u64;
        Some(match self.head_started.load(Ordering::Acquire) {
            NONE => self.idle_since.load(Ordering::Acquire) + ms(limits.keep_alive_timeout),
            started => started + ms(limits.header_read_timeout),
        })
    }
}

/// A connection's byte stream: plain TCP, or TLS over it.
enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Io {
    fn tcp(&self) -> &TcpStream {
        match self {
            Io::Plain(tcp) => tcp,
            Io::Tls(tls) => tls.get_ref().0,
        }
    }
}

/// Forwards a poll to the stream inside `Io`.
macro_rules! on_io {
    ($io:expr, $stream:ident => $call:expr) => {
        match $io {
            Io::Plain($stream) => $call,
            Io::Tls($stream) => $call,
        }
    };
}

impl AsyncRead for Io {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        on_io!(self.get_mut(), s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Io {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        on_io!(self.get_mut(), s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        on_io!(self.get_mut(), s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        on_io!(self.get_mut(), s => Pin::new(s).poll_shutdown(cx))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        on_io!(self.get_mut(), s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        on_io!(self, s => s.is_write_vectored())
    }
}

/// A connection's socket, holding its slot under the connection limit until
/// dropped, and (HTTP) noting its reads in its [`Activity`].
pub(crate) struct Conn {
    io: Io,
    activity: Option<Arc<Activity>>,
    _slot: OwnedSemaphorePermit,
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Some(activity) = &this.activity {
            if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
                activity.read_some();
            }
        }
        polled
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = <TcpStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.tcp().connect_info()
    }
}

/// gRPC's incoming connections, at most `max` open at once: a connection past
/// the limit is closed at once (counted as RESOURCE_EXHAUSTED); each one's slot
/// frees when it closes.
pub(crate) fn limit_grpc(
    incoming: tonic::transport::server::TcpIncoming,
    max: usize,
) -> impl tonic::codegen::tokio_stream::Stream<Item = io::Result<Conn>> {
    use tonic::codegen::tokio_stream::StreamExt;
    let slots = Arc::new(Semaphore::new(max.max(1)));
    incoming.filter_map(move |accepted| match accepted {
        Ok(tcp) => match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => Some(Ok(Conn { io: Io::Plain(tcp), activity: None, _slot: slot })),
            Err(_) => {
                count("grpc", "connection", "", "RESOURCE_EXHAUSTED");
                None // dropping the socket closes it
            }
        },
        Err(e) => Some(Err(e)),
    })
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Marks a request in flight on its connection until dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_done();
    }
}

/// Serves `router` on `listener` under `limits` (over TLS when `tls` is given)
/// until `shutdown` resolves; then stops accepting, lets open connections
/// finish their requests, and returns.
pub(crate) async fn serve_http(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnLimits,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (closing, closed) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off a little rather than spin.
                    tracing::warn!("HTTP accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let _ = tcp.set_nodelay(true);
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            connections.spawn(refuse(tcp, limits.max_connections));
            continue;
        };
        let (router, closed, tls) = (router.clone(), closed.clone(), tls.clone());
        connections.spawn(async move {
            // The handshake happens on the connection's own task, so a slow one holds
            // only its slot; it must end within the header read timeout.
            let io = match tls {
                None => Io::Plain(tcp),
                Some(acceptor) => match tokio::time::timeout(limits.header_read_timeout, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => Io::Tls(Box::new(stream)),
                    Ok(Err(e)) => {
                        tracing::debug!("TLS handshake failed: {e}");
                        return count("http", "connection", "", "tls-handshake-failed");
                    }
                    Err(_) => return count("http", "connection", "", "tls-handshake-timeout"),
                },
            };
            serve_connection(io, slot, router, limits, closed).await;
        });
    }
    // Close the listening socket before draining: a client connecting now is refused
    // at once rather than queued in the backlog and reset when the drain ends.
    drop(listener);
    let _ = closing.send(true);
    while connections.join_next().await.is_some() {}
}

/// Serves one connection's requests with its watchdog (see the module's
/// concurrency notes) until it closes, times out, or `closed` says the server
/// is shutting down (then it finishes the request in flight and closes).
async fn serve_connection(
    io: Io,
    slot: OwnedSemaphorePermit,
    router: axum::Router,
    limits: ConnLimits,
    mut closed: tokio::sync::watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let tracked = Conn { io, activity: Some(Arc::clone(&activity)), _slot: slot };
    let on_request = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        on_request.request_started();
        let in_flight = InFlight(Arc::clone(&on_request));
        let router = router.clone();
        async move {
            let response = tower::ServiceExt::oneshot(router, request.map(Body::new)).await;
            drop(in_flight);
            response
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(None::<Duration>).keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(tracked), service);
    tokio::pin!(conn);
    let mut shutting = false;
    loop {
        let wake = match activity.deadline(&limits) {
            Some(ms) => activity.start + Duration::from_millis(ms),
            // A request is in flight: look again after the shortest timeout.
            None => Instant::now() + limits.header_read_timeout.min(limits.keep_alive_timeout),
        };
        tokio::select! {
            _ = &mut conn => break,
            _ = activity.moved.notified() => {}
            _ = tokio::time::sleep_until(wake) => {
                if activity.deadline(&limits).is_some_and(|ms| activity.now() >= ms) {
                    break; // dropping the connection closes the socket
                }
            }
            _ = closed.wait_for(|&c| c), if !shutting => {
                shutting = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Answers a connection over the limit 503 and closes it.
async fn refuse(mut tcp: TcpStream, limit: usize) {
    let body = json!({ "error": format!("server busy: {limit} connections open (--max-connections)") }).to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    count("http", "connection", "", "503");
    let _ = tokio::time::timeout(Duration::from_secs(1), tcp.write_all(response.as_bytes())).await;
    let _ = tcp.shutdown().await;
    linger(tcp).await;
}

/// How long a refused connection's unread request may keep it open after the answer.
const LINGER: Duration = Duration::from_millis(500);
/// How many bytes of a refused connection's request are read and dropped at most.
const LINGER_BYTES: usize = 64 << 10;

/// Reads and drops what the client sent until it closes (at most [`LINGER`]
/// and [`LINGER_BYTES`]): closing a socket with unread input sends a reset,
/// which can destroy the answer before the client reads it.
async fn linger(mut tcp: TcpStream) {
    let mut sink = [0u8; 4096];
    let mut read = 0;
    let drain = async {
        while read < LINGER_BYTES {
            match tcp.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

fn closing_answer(status: StatusCode, message: String) -> Response {
    count("http", "connection", "", http_code(status));
    let mut response =
        (status, [(header::CONTENT_TYPE, "application/json")], json!({ "error": message }).to_string()).into_response();
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Middleware: reads the whole body within the body read timeout (408 past it),
/// refusing a declared or actual body over the limit (413) before reading on.
pub(crate) async fn read_body(limits: ConnLimits, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let limit = limits.max_body_bytes;
    if declared.is_some_and(|n| n > limit as u64) {
        return closing_answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request body of {} bytes is over the server's limit of {limit} bytes (--max-body-bytes)",
                declared.unwrap_or(0)
            ),
        );
    }
    let bytes = match tokio::time::timeout(limits.body_read_timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => {
            return closing_answer(
                StatusCode::REQUEST_TIMEOUT,
                format!("request body not received within {:?} (--body-read-timeout)", limits.body_read_timeout),
            );
        }
        Ok(Err(e)) => {
            let source = std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_default();
            if format!("{e} {source}").contains("length limit") {
                return closing_answer(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body over the server's limit of {limit} bytes (--max-body-bytes)"),
                );
            }
            return closing_answer(StatusCode::BAD_REQUEST, format!("could not read the request body: {e}"));
        }
        Ok(Ok(bytes)) => bytes,
    };
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// A gRPC call's HTTP request.
type GrpcRequest = tonic::codegen::http::Request<tonic::body::Body>;

/// The service with its request bodies capped at `limit` bytes: past it the call
/// fails with RESOURCE_EXHAUSTED (as gRPC's own servers answer an oversized
/// message) before more is buffered. tonic's own message limit is lifted, so
/// this is the one that applies.
#[derive(Clone)]
pub(crate) struct GrpcBodyLimit<S> {
    pub inner: S,
    pub limit: usize,
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for GrpcBodyLimit<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tonic::codegen::Service<GrpcRequest> for GrpcBodyLimit<S>
where
    S: tonic::codegen::Service<GrpcRequest>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: GrpcRequest) -> Self::Future {
        let limit = self.limit;
        self.inner.call(request.map(|body| tonic::body::Body::new(LimitedBody { inner: body, left: limit, limit })))
    }
}

struct LimitedBody {
    inner: tonic::body::Body,
    left: usize,
    limit: usize,
}

impl http_body::Body for LimitedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<http_body::Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(|f| f.data_ref())) {
            let len = data.map_or(0, Bytes::len);
            if len > this.left {
                return Poll::Ready(Some(Err(Status::resource_exhausted(format!(
                    "request message over the server's limit of {} bytes (--max-body-bytes)",
                    this.limit
                )))));
            }
            this.left -= len;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
