//! The gRPC flood: HTTP/2 connections with many concurrent ModelInfer calls each.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use http::{HeaderMap, Request, Uri};

use baton_kserve_client::{wire, InferRequest};

use super::{Budget, Tally};

const RECONNECT_PAUSE: Duration = Duration::from_millis(10);
/// Bytes of small-frame overhead a connection's unread answers may hold (h2's `data_frame_budget`).
const DATA_FRAME_BUDGET: usize = 256 << 20;

/// gRPC status codes by number, as the protocol names them.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// One ModelInfer call's parts, built once and sent many times.
#[derive(Clone)]
pub struct Call {
    uri: Uri,
    frame: Bytes,
}

impl Call {
    pub fn new(authority: &str, request: &InferRequest) -> Call {
        let uri = format!("http://{authority}{}", wire::GRPC_INFER_PATH).parse().expect("a valid URI");
        Call { uri, frame: wire::grpc_frame(request) }
    }

    fn head(&self) -> Request<()> {
        Request::post(self.uri.clone())
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("a request of valid parts")
    }
}

/// The `grpc-status` of headers or trailers, by name.
fn status_of(headers: &HeaderMap) -> Option<String> {
    let code = headers.get("grpc-status")?.to_str().ok()?.parse::<usize>().ok()?;
    Some(CODES.get(code).map_or_else(|| format!("grpc-status {code}"), |name| (*name).to_string()))
}

/// Sends one call and reads its whole answer; its status.
async fn exchange(sender: &mut SendRequest<Bytes>, call: &Call) -> Result<String, h2::Error> {
    let (answer, mut body) = sender.send_request(call.head(), false)?;
    // A server that refuses from the headers alone (a trailers-only RESOURCE_EXHAUSTED) may
    // close the stream before the body is sent: its answer still counts, so a failed send
    // is the call's outcome only when no answer came.
    let sent = body.send_data(call.frame.clone(), true);
    let (head, mut received) = match answer.await {
        Ok(answer) => answer.into_parts(),
        Err(e) => return Err(sent.err().unwrap_or(e)),
    };
    if head.status != http::StatusCode::OK {
        return Ok(format!("HTTP {}", head.status.as_u16()));
    }
    if let Some(status) = status_of(&head.headers) {
        return Ok(status); // trailers-only answer
    }
    while let Some(chunk) = received.data().await {
        let chunk = chunk?;
        received.flow_control().release_capacity(chunk.len())?;
    }
    let trailers = received.trailers().await?;
    Ok(trailers.as_ref().and_then(status_of).unwrap_or_else(|| "no grpc-status".into()))
}

/// A failed call's label: how the stream or connection ended.
fn failure(e: &h2::Error) -> String {
    let frame = if e.is_go_away() {
        "GOAWAY"
    } else if e.is_reset() {
        "RST_STREAM"
    } else if e.is_io() {
        return "connection lost".into();
    } else {
        return "HTTP/2 error".into();
    };
    let by = if e.is_remote() { "server" } else { "client" };
    match e.reason() {
        Some(reason) => format!("{frame} {reason:?} ({by})"),
        None => format!("{frame} ({by})"),
    }
}

/// One stream slot's loop: calls back to back until the budget ends or the connection fails.
async fn calls(mut sender: SendRequest<Bytes>, call: Call, budget: Arc<Budget>, timeout: Duration) -> Tally {
    let mut tally = Tally::default();
    loop {
        sender = match sender.ready().await {
            Ok(s) => s,
            Err(_) => break, // the connection is gone; the connection task opens another
        };
        if !budget.claim() {
            break;
        }
        let started = Instant::now();
        match tokio::time::timeout(timeout, exchange(&mut sender, &call)).await {
            Ok(Ok(status)) => tally.record(&status, started.elapsed()),
            Ok(Err(e)) => tally.record(&failure(&e), started.elapsed()),
            Err(_) => tally.record("client timeout", started.elapsed()),
        }
    }
    tally
}

/// A connection's driver that also publishes the server's stream limit as it learns it.
struct Driver {
    connection: h2::client::Connection<tokio::net::TcpStream, Bytes>,
    stream_limit: Arc<AtomicUsize>,
}

impl Future for Driver {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let polled = Pin::new(&mut self.connection).poll(cx);
        let limit = self.connection.max_concurrent_send_streams();
        self.stream_limit.store(limit, Ordering::Relaxed);
        polled.map(|_| ())
    }
}

/// Opens a connection; its sender and the server's SETTINGS_MAX_CONCURRENT_STREAMS.
async fn open(authority: &str) -> Result<(SendRequest<Bytes>, usize), String> {
    let tcp = tokio::net::TcpStream::connect(authority).await.map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    // h2's guard against a hostile server ends a connection with GOAWAY
    // ENHANCE_YOUR_CALM once small DATA frames (answers) wait unread beyond a
    // budget of 25,600 bytes of overhead; thousands of concurrent calls per
    // connection outrun it, so the flood's budget is sized to them.
    let (sender, mut connection) = h2::client::Builder::new()
        .data_frame_budget(DATA_FRAME_BUDGET)
        .handshake(tcp)
        .await
        .map_err(|e| e.to_string())?;
    let mut ping_pong = connection.ping_pong().ok_or("the connection's ping was taken")?;
    let stream_limit = Arc::new(AtomicUsize::new(usize::MAX));
    tokio::spawn(Driver { connection, stream_limit: Arc::clone(&stream_limit) });
    // The server's SETTINGS come before its answer to the first ping.
    ping_pong.ping(h2::Ping::opaque()).await.map_err(|e| e.to_string())?;
    Ok((sender, stream_limit.load(Ordering::Relaxed)))
}

/// One connection with `streams` call loops, reopened if it fails before the budget ends.
pub async fn connection(
    authority: String,
    call: Call,
    streams: usize,
    budget: Arc<Budget>,
    timeout: Duration,
) -> Tally {
    let mut tally = Tally::default();
    while !budget.expired() {
        let (sender, stream_limit) = match open(&authority).await {
            Ok(opened) => opened,
            Err(_) => {
                tally.connect_failures += 1;
                tokio::time::sleep(RECONNECT_PAUSE).await;
                continue;
            }
        };
        tally.connections_opened += 1;
        let mut loops = tokio::task::JoinSet::new();
        // Calls past the server's limit would only wait in this client, their
        // wait counted as latency: like h2load, open at most that many.
        let width = streams.min(stream_limit);
        tally.widest = tally.widest.max(width);
        for _ in 0..width {
            loops.spawn(calls(sender.clone(), call.clone(), Arc::clone(&budget), timeout));
        }
        while let Some(done) = loops.join_next().await {
            tally.merge(done.unwrap_or_default());
        }
    }
    tally
}
