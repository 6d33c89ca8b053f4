//! `baton flood` against an in-process `baton serve` whose in-flight and
//! connection bounds are tiny, so that the flood is refused in part: every
//! request the flood sends is counted once, under the status the server
//! answered, and the server's own counters agree status by status.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use baton_bench::flood::{self, FloodOptions, FloodReport};
use baton_server::{Server, ServerConfig};

/// The server's `baton_server_requests_total` for `protocol`, summed by code.
fn answers_by_code(metrics: SocketAddr, protocol: &str) -> BTreeMap<String, f64> {
    let mut stream = TcpStream::connect(metrics).unwrap();
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let mut codes = BTreeMap::new();
    let protocol = format!("protocol=\"{protocol}\"");
    for line in text.lines().filter(|l| l.starts_with("baton_server_requests_total{") && l.contains(&protocol)) {
        let code = line.split("code=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
        let value: f64 = line.rsplit_once(' ').unwrap().1.parse().unwrap();
        *codes.entry(code.to_string()).or_default() += value;
    }
    codes
}

fn options(url: String, connections: usize, streams: usize, requests: u64) -> FloodOptions {
    FloodOptions {
        url,
        model: "mlp".into(),
        connections,
        streams,
        duration: Duration::from_secs(300),
        requests: Some(requests),
        rows: 1,
        client_threads: 2,
        request_timeout: Duration::from_secs(60),
    }
}

fn status_count(report: &FloodReport, status: &str) -> u64 {
    report.statuses.iter().find(|s| s.status == status).map_or(0, |s| s.latency.count)
}

/// Floods, and checks the report against the server's counters of `protocol`.
fn flood_and_compare(options: &FloodOptions, metrics: SocketAddr, protocol: &str, allowed: &[&str]) -> FloodReport {
    let request = flood::request_for(options).expect("the model's metadata");
    let before = answers_by_code(metrics, protocol);
    let report = flood::flood(options, &request).expect("the flood runs");
    let after = answers_by_code(metrics, protocol);

    assert_eq!(report.sent, options.requests.unwrap(), "the flood sends exactly its budget");
    let counted: u64 = report.statuses.iter().map(|s| s.latency.count).sum();
    assert_eq!(counted, report.sent, "every request is counted under one status: {report:?}");
    for row in &report.statuses {
        assert!(allowed.contains(&row.status.as_str()), "unexpected status {} in {report:?}", row.status);
        let server = after.get(&row.status).copied().unwrap_or(0.0) - before.get(&row.status).copied().unwrap_or(0.0);
        let count = row.latency.count as f64;
        match row.status.as_str() {
            "transport error" => {}
            "503" => {
                // The server answers a connection past its cap 503 at once, before
                // reading: the client counts it as its request's answer, as a
                // transport error when the close races its request, or not at all
                // when its budget ended between opening and sending.
                let at_most = count + status_count(&report, "transport error") as f64 + options.connections as f64;
                assert!((count..=at_most).contains(&server), "the server refused {server} connections: {report:?}");
            }
            _ => assert_eq!(server, count, "the server counted {server} × {}: {report:?}", row.status),
        }
    }
    report
}

#[test]
fn every_flooded_request_is_counted_once_under_the_status_the_server_answered() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    baton_server::install_recorder();
    let engines = baton_engines::standard_registry();
    let mlp = baton::Runtime::from_file(&root.join("configs/mlp.toml"), &engines).expect("scripts/setup.sh has run");
    let config = ServerConfig { max_in_flight: Some(2), max_connections: 4, ..ServerConfig::ephemeral() };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let running = rt.block_on(Server::new(config).models(vec![mlp]).start()).unwrap();
    let (http, grpc, metrics) =
        (running.http_addr().unwrap(), running.grpc_addr().unwrap(), running.metrics_addr().unwrap());

    // 12 connections against a cap of 4: the kept-alive ones hold the slots, the others are answered 503.
    let report = flood_and_compare(
        &options(format!("http://{http}"), 12, 1, 600),
        metrics,
        "http",
        &["200", "429", "503", "transport error"],
    );
    let ok = status_count(&report, "200");
    assert!(ok > 0, "some requests are served: {report:?}");
    assert!(report.connections_opened >= 12, "every connection opened at least once: {report:?}");

    // 2 connections × 16 calls against an in-flight bound of 2.
    let report = flood_and_compare(
        &options(format!("grpc://{grpc}"), 2, 16, 600),
        metrics,
        "grpc",
        &["OK", "RESOURCE_EXHAUSTED"],
    );
    assert_eq!(report.streams, 16, "the server allows 16 concurrent calls per connection");
    let ok = status_count(&report, "OK");
    assert!(ok > 0, "some requests are served: {report:?}");
    rt.block_on(running.shutdown());
}
