//! Connections to one server, kept and reused.
//!
//! HTTP/1.1 ([`Http1Pool`]) carries one call at a time per connection: a call
//! takes an idle connection from the pool (or opens one), sends, reads the
//! whole answer, and only then puts the connection back, so a connection in
//! the pool never has an answer half read. At most `max_idle` are kept; the
//! rest close when their call ends.
//!
//! HTTP/2 ([`Http2Conn`]) multiplexes every call on one connection: callers
//! clone its sender; when the connection has closed, the first caller to see it
//! opens the next one while holding the lock, and the others wait for it.
//!
//! A request is resent only when hyper hands it back unsent (the kept
//! connection was closed by the server before the request went out); a request
//! that may have reached the server is never resent, so each call resolves once.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

/// Why a call on a connection failed.
#[derive(Debug)]
pub(crate) enum SendError {
    /// No connection could be opened.
    Connect(String),
    /// The connection failed after the request may have gone out.
    Transport(String),
}

/// A connection's byte stream: plain TCP, or TLS over it.
pub(crate) trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Stream for T {}

/// How to open a connection to one server: TCP with Nagle off, then TLS when the URL asks for it.
#[derive(Clone)]
pub(crate) struct Connector {
    authority: String,
    timeout: Duration,
    tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl Connector {
    /// A connector to `authority` (HOST:PORT); over TLS when `tls` is given, offering `alpn`.
    pub fn new(
        authority: String,
        timeout: Duration,
        tls: Option<&crate::tls::ClientTls>,
        alpn: &[u8],
    ) -> Result<Self, String> {
        let tls = match tls {
            None => None,
            Some(tls) => {
                let host = authority.rsplit_once(':').map_or(authority.as_str(), |(h, _)| h);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let name = ServerName::try_from(host.to_string()).map_err(|e| format!("server name {host:?}: {e}"))?;
                Some((tls.connector(alpn), name))
            }
        };
        Ok(Connector { authority, timeout, tls })
    }

    async fn connect(&self) -> Result<TokioIo<Box<dyn Stream>>, String> {
        let connect = async {
            let tcp = TcpStream::connect(&self.authority).await.map_err(|e| e.to_string())?;
            tcp.set_nodelay(true).map_err(|e| e.to_string())?;
            let stream: Box<dyn Stream> = match &self.tls {
                None => Box::new(tcp),
                Some((connector, name)) => {
                    Box::new(connector.connect(name.clone(), tcp).await.map_err(|e| format!("TLS handshake: {e}"))?)
                }
            };
            Ok(TokioIo::new(stream))
        };
        let timeout = self.timeout;
        tokio::time::timeout(timeout, connect).await.map_err(|_| format!("no connection within {timeout:?}"))?
    }
}

/// Kept-alive HTTP/1.1 connections to one server.
pub(crate) struct Http1Pool {
    connector: Connector,
    max_idle: usize,
    idle: Mutex<Vec<http1::SendRequest<Full<Bytes>>>>,
}

impl Http1Pool {
    pub fn new(connector: Connector, max_idle: usize) -> Self {
        Http1Pool { connector, max_idle, idle: Mutex::new(Vec::new()) }
    }

    /// The idle connections; the lock is held only to push or pop one.
    fn idle(&self) -> MutexGuard<'_, Vec<http1::SendRequest<Full<Bytes>>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn connect(&self) -> Result<http1::SendRequest<Full<Bytes>>, SendError> {
        let io = self.connector.connect().await.map_err(SendError::Connect)?;
        let (sender, connection) =
            http1::handshake(io).await.map_err(|e| SendError::Connect(format!("HTTP/1.1 handshake: {e}")))?;
        tokio::spawn(async move {
            // Ends when the server closes or the sender is dropped.
            let _ = connection.await;
        });
        Ok(sender)
    }

    /// Sends `request` and reads its whole answer.
    pub async fn send(
        &self,
        mut request: hyper::Request<Full<Bytes>>,
    ) -> Result<(hyper::http::response::Parts, Bytes), SendError> {
        loop {
            let kept = self.idle().pop();
            let fresh = kept.is_none();
            let mut sender = match kept {
                Some(sender) => sender,
                None => self.connect().await?,
            };
            if sender.ready().await.is_err() {
                if fresh {
                    return Err(SendError::Connect("the connection closed at once".into()));
                }
                continue; // a kept connection the server closed: take another
            }
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let (parts, body) = response.into_parts();
                    let body = body.collect().await.map_err(|e| SendError::Transport(e.to_string()))?.to_bytes();
                    let close = parts
                        .headers
                        .get(hyper::header::CONNECTION)
                        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
                    if !close && !sender.is_closed() {
                        let mut idle = self.idle();
                        if idle.len() < self.max_idle {
                            idle.push(sender);
                        }
                    }
                    return Ok((parts, body));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if !fresh => request = unsent,
                    _ => return Err(SendError::Transport(e.into_error().to_string())),
                },
            }
        }
    }
}

/// One shared HTTP/2 connection to a server, reopened when it closes.
pub(crate) struct Http2Conn {
    connector: Connector,
    current: tokio::sync::Mutex<Option<http2::SendRequest<tonic::body::Body>>>,
}

impl Http2Conn {
    pub fn new(connector: Connector) -> Self {
        Http2Conn { connector, current: tokio::sync::Mutex::new(None) }
    }

    /// A sender on the open connection, opening one first when there is none.
    pub async fn sender(&self) -> Result<H2Service, SendError> {
        let mut current = self.current.lock().await;
        if let Some(sender) = current.as_ref().filter(|s| !s.is_closed()) {
            return Ok(H2Service(sender.clone()));
        }
        *current = None;
        let io = self.connector.connect().await.map_err(SendError::Connect)?;
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(4u32 << 20)
            .initial_connection_window_size(16u32 << 20)
            .handshake(io)
            .await
            .map_err(|e| SendError::Connect(format!("HTTP/2 handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        *current = Some(sender.clone());
        Ok(H2Service(sender))
    }
}

/// An HTTP/2 sender as the service tonic's generated client calls.
#[derive(Clone)]
pub(crate) struct H2Service(http2::SendRequest<tonic::body::Body>);

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<hyper::Response<hyper::body::Incoming>, hyper::Error>> + Send>>;

impl tower_service::Service<hyper::Request<tonic::body::Body>> for H2Service {
    type Response = hyper::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: hyper::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(self.0.send_request(request))
    }
}
