//! The HTTP/1.1 flood: one request outstanding per connection, written at
//! once when the connection opens (as wrk does), and the connection opened
//! again when the server closes it. The request's bytes are built once; an
//! answer is read by its status line, `Content-Length` and `Connection`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use baton_kserve_client::{vocabulary::HEADER_LENGTH, wire, InferRequest};

use super::{Budget, Tally};

/// Pause after a failed connection attempt, so a refusing server is not hammered by a busy loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(10);
/// The longest answer head read.
const MAX_HEAD: usize = 64 << 10;

/// One infer request's bytes, built once and sent many times.
#[derive(Clone)]
pub struct Call(Bytes);

impl Call {
    pub fn new(authority: &str, request: &InferRequest) -> Call {
        let (head_length, body) = wire::http_body(request);
        let mut bytes = format!(
            "POST {} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/octet-stream\r\n\
             {HEADER_LENGTH}: {head_length}\r\ncontent-length: {}\r\n\r\n",
            wire::http_path(request),
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(&body);
        Call(bytes.into())
    }
}

/// What one answer said.
struct Answer {
    status: u16,
    /// The server keeps the connection open for another request.
    keep_alive: bool,
}

/// Reads one answer: its head, then its body (dropped).
async fn read_answer(stream: &mut BufReader<TcpStream>) -> std::io::Result<Answer> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut line = String::new();
    let mut read = stream.read_line(&mut line).await?;
    let status = line.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok()).ok_or_else(|| bad("no status line"))?;
    let (mut length, mut keep_alive) = (0usize, true);
    loop {
        line.clear();
        let n = stream.read_line(&mut line).await?;
        read += n;
        if n == 0 || read > MAX_HEAD {
            return Err(bad("the answer's head ended early or runs too long"));
        }
        let Some((name, value)) = line.trim_end().split_once(':') else { break }; // the empty line
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().map_err(|_| bad("a bad Content-Length"))?;
        } else if name.eq_ignore_ascii_case("connection") {
            keep_alive = !value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(bad("a chunked answer (baton flood reads Content-Length bodies)"));
        }
    }
    tokio::io::copy(&mut (&mut *stream).take(length as u64), &mut tokio::io::sink()).await?;
    Ok(Answer { status, keep_alive })
}

async fn open(authority: &str) -> std::io::Result<BufReader<TcpStream>> {
    let tcp = TcpStream::connect(authority).await?;
    tcp.set_nodelay(true)?;
    Ok(BufReader::new(tcp))
}

/// One connection's loop until the budget ends; its tally.
pub async fn connection(authority: String, call: Call, budget: Arc<Budget>, timeout: Duration) -> Tally {
    let mut tally = Tally::default();
    let mut kept: Option<BufReader<TcpStream>> = None;
    while !budget.expired() {
        let mut stream = match kept.take() {
            Some(s) => s,
            None => match open(&authority).await {
                Ok(s) => {
                    tally.connections_opened += 1;
                    tally.widest = 1;
                    s
                }
                Err(_) => {
                    tally.connect_failures += 1;
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                    continue;
                }
            },
        };
        if !budget.claim() {
            break;
        }
        let started = Instant::now();
        let exchange = async {
            stream.get_mut().write_all(&call.0).await?;
            read_answer(&mut stream).await
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(answer)) => {
                tally.record(&answer.status.to_string(), started.elapsed());
                if answer.keep_alive {
                    kept = Some(stream);
                }
            }
            Ok(Err(_)) => tally.record("transport error", started.elapsed()),
            Err(_) => tally.record("client timeout", started.elapsed()),
        }
    }
    tally
}
