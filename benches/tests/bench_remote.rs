//! `baton bench --url` against an in-process `baton serve` (127.0.0.1,
//! OS-picked ports), over HTTP and gRPC, closed and open loop, plain requests
//! and streams: every point measured, no errors, and the server answered
//! exactly the requests the bench says it got answers to.

// Of `common`, this file takes its scratch folders alone.
#[allow(dead_code)]
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use std::time::Duration;

use baton_bench::BenchOptions;
use baton_server::{Server, ServerConfig};
use serde_json::Value;

/// Options for a bench of `model` on the server at `url`, defaults otherwise.
fn remote(url: &str, model: Option<&str>) -> BenchOptions {
    BenchOptions { url: Some(url.into()), model: model.map(Into::into), ..BenchOptions::default() }
}

/// The sum of `baton_server_requests_total` series of the infer endpoint with these labels.
fn infer_answers(metrics: SocketAddr, protocol: &str, model: &str, code: &str) -> f64 {
    let mut stream = TcpStream::connect(metrics).unwrap();
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let labels = [
        format!("protocol=\"{protocol}\""),
        "endpoint=\"infer\"".to_string(),
        format!("model=\"{model}\""),
        format!("code=\"{code}\""),
    ];
    text.lines()
        .filter(|l| l.starts_with("baton_server_requests_total{") && labels.iter().all(|k| l.contains(k.as_str())))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}

#[test]
fn the_remote_bench_drives_a_server_over_http_and_grpc() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    baton_server::install_recorder();
    let engines = baton_engines::standard_registry();
    let runtimes = ["mlp.toml", "stateful.toml"]
        .map(|p| baton::Runtime::from_file(&root.join("configs").join(p), &engines).expect("scripts/setup.sh has run"));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let running = rt.block_on(Server::new(ServerConfig::ephemeral()).models(runtimes).start()).unwrap();
    let (http, grpc, metrics) =
        (running.http_addr().unwrap(), running.grpc_addr().unwrap(), running.metrics_addr().unwrap());

    let cases = [
        ("http", format!("http://{http}"), "mlp", 0),
        ("grpc", format!("grpc://{grpc}"), "mlp", 0),
        ("http", format!("http://{http}"), "stateful", 4),
        ("grpc", format!("grpc://{grpc}"), "stateful", 4),
    ];
    let dir = common::folder("bench-remote", "http-grpc");
    for (protocol, url, model, chunks) in cases {
        let json = dir.join(format!("{protocol}-{model}.json"));
        let args = BenchOptions {
            warmup: Duration::from_millis(100),
            duration: Duration::from_millis(300),
            concurrency: vec![1, 4],
            rate: vec![200.0],
            stream_chunks: chunks,
            json: Some(json.clone()),
            ..remote(&url, Some(model))
        };
        // The server labels HTTP answers by status, gRPC answers by code name.
        let (ok, refused) = if protocol == "http" { ("200", "400") } else { ("OK", "INVALID_ARGUMENT") };
        let before = infer_answers(metrics, protocol, model, ok);
        let report = baton_bench::bench(&args).expect("the remote bench runs");
        let after = infer_answers(metrics, protocol, model, ok);

        let written: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(written["pipeline"], model);
        assert_eq!(written["settings"]["url"], url.as_str());
        let points = written["points"].as_array().unwrap();
        let loads: Vec<(String, f64)> =
            points.iter().map(|p| (p["mode"].as_str().unwrap().to_string(), p["load"].as_f64().unwrap())).collect();
        assert_eq!(loads, [("closed".into(), 1.0), ("closed".into(), 4.0), ("open".into(), 200.0)], "{url}");
        for p in points {
            assert_eq!(p["errors"], 0, "{url} {model}: {p}");
            assert!(p["requests"].as_u64().unwrap() > 0, "{url} {model}: {p}");
            assert_eq!(p["policy"], url.as_str());
        }
        assert_eq!(written["settings"]["failures"], serde_json::json!({}), "{url} {model}");
        // Every answer the bench counted is one the server counted, and nothing more.
        let answered = written["settings"]["answered"].as_u64().unwrap();
        assert_eq!(after - before, answered as f64, "{url} {model}: server-side successes vs the bench's answers");
        let measured: u64 = report.points.iter().map(|p| p.requests).sum();
        assert!(measured <= answered, "{url} {model}: measured {measured} of {answered} answered");
        assert_eq!(infer_answers(metrics, protocol, model, refused), 0.0, "{url} {model}: no refused chunk");
    }
    rt.block_on(running.shutdown());
}

#[test]
fn the_remote_bench_refuses_what_it_cannot_do_clearly() {
    let args = remote("grpc://127.0.0.1:1", None);
    let e = baton_bench::bench(&args).unwrap_err();
    assert!(e.contains("--model"), "{e}");
    let args = BenchOptions { raw: true, ..remote("grpc://127.0.0.1:1", Some("m")) };
    assert!(baton_bench::bench(&args).unwrap_err().contains("--raw"));
    let args = remote("tcp://x:1", Some("m"));
    assert!(baton_bench::bench(&args).unwrap_err().contains("tcp://x:1"));
    // Nothing listens there: the metadata call fails naming the endpoint.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{free}");
    let args = remote(&url, Some("m"));
    let e = baton_bench::bench(&args).unwrap_err();
    assert!(e.contains(&url) && e.contains("cannot connect"), "{e}");
}
