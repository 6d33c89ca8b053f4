//! HTTP connection hygiene with raw TCP clients: a body that never finishes
//! arriving, a request head that never finishes, an idle keep-alive
//! connection, a declared body over the limit, and connections past the
//! limit; each is answered or closed within its configured bound, and the
//! server keeps serving. Bounds are set small here and each close is polled
//! for with a generous limit.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use baton_server::ServerConfig;
use common::TestServer;

/// Far more than any bound below: a close not seen by then is a failure.
const GENEROUS: Duration = Duration::from_secs(20);

fn server() -> TestServer {
    server_with(Duration::from_millis(300))
}

fn server_with(body_read_timeout: Duration) -> TestServer {
    let config = ServerConfig {
        max_body_bytes: 1_000_000,
        max_connections: 8,
        header_read_timeout: Duration::from_millis(300),
        body_read_timeout,
        keep_alive_timeout: Duration::from_millis(500),
        ..ServerConfig::ephemeral()
    };
    TestServer::start_with(&["mlp.toml"], config)
}

fn connect(server: &TestServer) -> TcpStream {
    let stream = TcpStream::connect(server.http).unwrap();
    stream.set_read_timeout(Some(GENEROUS)).unwrap();
    stream
}

/// Reads until the server closes the connection (or GENEROUS passes: a panic); returns what it sent.
fn read_until_closed(stream: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the server did not close the connection within {GENEROUS:?}: {e}"),
        }
        assert!(started.elapsed() < GENEROUS, "the server kept the connection open past {GENEROUS:?}");
    }
    (String::from_utf8_lossy(&got).to_string(), started.elapsed())
}

fn still_serving(server: &TestServer) {
    assert_eq!(server.get("/v2/health/ready").status, 200, "the server still answers");
}

#[test]
fn a_body_that_stops_arriving_gets_408_and_the_connection_closes() {
    let server = server();
    let mut stream = connect(&server);
    let head = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{";
    stream.write_all(head.as_bytes()).unwrap();
    let (answer, _) = read_until_closed(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 408"), "answer: {answer}");
    assert!(answer.contains("--body-read-timeout"), "the message names the flag: {answer}");
    still_serving(&server);
}

#[test]
fn a_head_that_stops_arriving_is_closed() {
    let server = server();
    let mut stream = connect(&server);
    stream.write_all(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n").unwrap();
    let (answer, _) = read_until_closed(&mut stream);
    assert!(!answer.contains("200 OK"), "an unfinished head is not answered: {answer}");
    still_serving(&server);
}

/// A server whose header read timeout (2 s) and keep-alive timeout (5 s) are
/// far enough apart, and long enough, that a loaded machine's delays do not
/// blur them: each close is checked against its own bound, within a factor under 2.
fn server_with_timeouts() -> TestServer {
    let config = ServerConfig {
        header_read_timeout: Duration::from_secs(2),
        keep_alive_timeout: Duration::from_secs(5),
        ..ServerConfig::ephemeral()
    };
    TestServer::start_with(&["mlp.toml"], config)
}

#[test]
fn a_half_sent_head_is_closed_at_the_header_read_timeout_not_the_keep_alive_one() {
    let server = server_with_timeouts();
    let mut stream = connect(&server);
    // Let the watchdog settle on the idle deadline first: the head's first byte must move it.
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    stream.write_all(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n").unwrap();
    let (answer, _) = read_until_closed(&mut stream);
    let took = started.elapsed();
    assert!(!answer.contains("200 OK"), "an unfinished head is not answered: {answer}");
    assert!(took >= Duration::from_millis(1800), "closed after {took:?}, before the 2 s header read timeout");
    assert!(took < Duration::from_millis(3900), "closed after {took:?}: not counted from the head's first byte");
    still_serving(&server);
}

#[test]
fn a_connection_that_sends_nothing_is_closed_at_the_keep_alive_timeout() {
    let server = server_with_timeouts();
    let mut stream = connect(&server);
    let started = Instant::now();
    let (answer, _) = read_until_closed(&mut stream);
    let took = started.elapsed();
    assert!(answer.is_empty(), "nothing asked, nothing answered: {answer}");
    assert!(took >= Duration::from_millis(4500), "closed after {took:?}, before the 5 s keep-alive timeout");
    assert!(took < Duration::from_millis(9900), "closed after {took:?}, long past the keep-alive timeout");
    still_serving(&server);
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_serving() {
    let server = server();
    let mut stream = connect(&server);
    stream.write_all(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (answer, took) = read_until_closed(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 200"), "the request is answered first: {answer}");
    assert!(answer.contains(r#"{"live":true}"#), "live body: {answer}");
    assert!(took >= Duration::from_millis(400), "closed after {took:?}, before the keep-alive timeout");
    still_serving(&server);
}

#[test]
fn a_declared_body_over_the_limit_gets_413_at_once() {
    let server = server();
    let mut stream = connect(&server);
    let head = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n{";
    stream.write_all(head.as_bytes()).unwrap();
    // 413, not the body timeout's 408: it was refused without waiting for the body.
    let (answer, _) = read_until_closed(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 413"), "answer: {answer}");
    assert!(answer.contains("over the server's limit of 1000000 bytes"), "answer: {answer}");
    still_serving(&server);
}

#[test]
fn connections_past_the_limit_get_503_until_slots_free() {
    // A long body timeout: the held connections stay until the client closes them.
    let server = server_with(Duration::from_secs(60));
    // Eight connections each send a head declaring a body and one byte of it. The
    // server accepts in arrival order, so all eight hold a slot before the ninth.
    let held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = connect(&server);
            let head = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{";
            s.write_all(head.as_bytes()).unwrap();
            s
        })
        .collect();
    let extra = common::request(server.http, "GET", "/v2/health/live", &[], b"");
    assert_eq!(extra.status, 503, "ninth connection: {extra:?}");
    assert!(extra.error().contains("--max-connections"), "the message names the flag: {}", extra.error());
    drop(held);
    // Their slots are freed once the server sees them closed.
    let deadline = Instant::now() + GENEROUS;
    while server.get("/v2/health/live").status != 200 {
        assert!(Instant::now() < deadline, "connection slots not freed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A raw gRPC (HTTP/2) connection: sends the client preface and reads what the
/// server answers; `Some(bytes)` (its SETTINGS) or `None` when it closed at once.
fn h2_hello(server: &TestServer) -> Option<usize> {
    let mut stream = TcpStream::connect(server.grpc).unwrap();
    stream.set_read_timeout(Some(GENEROUS)).unwrap();
    // A closed socket may refuse the write; the read then tells.
    let _ = stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0");
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => None,
        Err(e) => panic!("no answer and no close within {GENEROUS:?}: {e}"),
    }
}

#[test]
fn grpc_connections_past_the_limit_are_closed_until_slots_free() {
    let server = server();
    let held: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(server.grpc).unwrap()).collect();
    assert_eq!(h2_hello(&server), None, "a ninth gRPC connection is closed at once");
    drop(held);
    let deadline = Instant::now() + GENEROUS;
    while h2_hello(&server).is_none() {
        assert!(Instant::now() < deadline, "gRPC connection slots not freed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The server's first SETTINGS frame on a fresh gRPC connection: (identifier, value) pairs.
fn h2_settings(server: &TestServer) -> Vec<(u16, u32)> {
    let mut stream = TcpStream::connect(server.grpc).unwrap();
    stream.set_read_timeout(Some(GENEROUS)).unwrap();
    stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").unwrap();
    let mut header = [0u8; 9];
    stream.read_exact(&mut header).unwrap();
    assert_eq!(header[3], 0x4, "the server's first frame is SETTINGS: {header:?}");
    let len = usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).unwrap();
    payload
        .chunks_exact(6)
        .map(|s| (u16::from_be_bytes([s[0], s[1]]), u32::from_be_bytes([s[2], s[3], s[4], s[5]])))
        .collect()
}

#[test]
fn a_grpc_connection_is_told_its_concurrent_stream_limit() {
    const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    let config = ServerConfig { grpc_max_concurrent_streams: 16, ..ServerConfig::ephemeral() };
    let server = TestServer::start_with(&["mlp.toml"], config);
    let settings = h2_settings(&server);
    assert!(settings.contains(&(MAX_CONCURRENT_STREAMS, 16)), "SETTINGS {settings:?}");
}
