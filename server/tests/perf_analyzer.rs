//! Triton's own load generator, perf_analyzer (from the tritonclient 2.41.0
//! wheel, fetched by scripts/setup-perf-analyzer.sh), run against the server
//! over HTTP (binary and JSON tensors) and gRPC with a CSV report: it must exit
//! 0, and the server-side counts it reads from the statistics extension must
//! match the requests it made.

mod common;

use std::path::PathBuf;
use std::process::Command;

use baton_scratch::Scratch;
use baton_server::ServerConfig;
use common::{repo_root, TestServer};

/// perf_analyzer and the folder of the libraries it needs.
fn perf_analyzer() -> (PathBuf, PathBuf) {
    let dir = repo_root().join(".cache/perf_analyzer");
    let (bin, lib) = (dir.join("bin/perf_analyzer"), dir.join("lib"));
    assert!(
        bin.is_file() && lib.join("libb64.so.0d").is_file() && lib.join("libcudart.so.12").is_file(),
        "{} or its libraries are missing: run scripts/setup.sh (it runs scripts/setup-perf-analyzer.sh)",
        bin.display()
    );
    (bin, lib)
}

/// The number after `label` in the section of perf_analyzer's report that starts with `section`.
fn figure(report: &str, section: &str, label: &str) -> u64 {
    let from = report.rfind(section).unwrap_or_else(|| panic!("no `{section}` in the report:\n{report}"));
    let line = report[from..]
        .lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .unwrap_or_else(|| panic!("no `{label}` after `{section}` in the report:\n{report}"));
    line.trim().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// Successful requests of model `mlp` by the statistics extension.
fn successes(server: &TestServer) -> u64 {
    let stats = server.get("/v2/models/mlp/stats").json();
    stats["model_stats"][0]["inference_stats"]["success"]["count"].as_u64().unwrap()
}

/// Runs perf_analyzer on `mlp` with `args`; checks its exit, its report and its CSV.
fn run(server: &TestServer, protocol: &str, args: &[&str]) {
    let (bin, lib) = perf_analyzer();
    let addr = if protocol == "grpc" { server.grpc } else { server.http };
    let dir = Scratch::new(&format!("perf-analyzer-{protocol}-{}", args.len()));
    let csv = dir.join("report.csv");
    const CONCURRENCY: u64 = 2;
    let before = successes(server);
    let output = Command::new(&bin)
        .env("LD_LIBRARY_PATH", &lib)
        .args(["-m", "mlp", "-u", &addr.to_string(), "-i", protocol, "-b", "1"])
        .args(["--concurrency-range", &format!("{CONCURRENCY}:{CONCURRENCY}")])
        .args(["--measurement-mode", "count_windows", "--measurement-request-count", "200"])
        // Stability is not what this test checks: any three windows do.
        .args(["-s", "1000", "-r", "10", "-f", csv.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    let report = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
    println!("perf_analyzer -i {protocol} {args:?}:\n{report}");
    assert!(output.status.success(), "perf_analyzer -i {protocol} {args:?} failed ({}):\n{report}", output.status);

    // The last window's figures: what the client made and what the server counted in it.
    let client = figure(&report, "Client:", "Request count:");
    let served = figure(&report, "Server:", "Successful request count:");
    let inferences = figure(&report, "Server:", "Inference count:");
    assert!(client >= 200, "the window has {client} requests, fewer than asked:\n{report}");
    // perf_analyzer reads the server's statistics just before and just after the
    // window. Every request it counts in the window was counted by the server
    // between the two reads, but for at most CONCURRENCY that finished on the
    // server just before the first read; requests finishing while the reads
    // themselves run are the server's only, a few per thousand at most.
    assert!(
        served + CONCURRENCY >= client && served <= client + client / 20 + CONCURRENCY,
        "server counted {served} requests in the window, the client made {client}:\n{report}"
    );
    // Batch 1: one inference a request. The server counts a request's inference when its
    // batch runs and its success when it is answered, so a read between the two (at most
    // CONCURRENCY requests, at either end of the window) sees one without the other.
    assert!(inferences.abs_diff(served) <= CONCURRENCY, "batch 1: one inference a request:\n{report}");
    let total = successes(server) - before;
    assert!(total >= client, "statistics count {total} requests in all, the last window alone had {client}");

    let csv = std::fs::read_to_string(&csv).expect("perf_analyzer wrote its CSV report");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a CSV header").split(',').collect();
    let row: Vec<&str> = lines.next().expect("a CSV row").split(',').collect();
    assert_eq!(header.len(), row.len(), "CSV header and row differ in length:\n{csv}");
    assert_eq!(row[0], CONCURRENCY.to_string(), "CSV row of concurrency {CONCURRENCY}:\n{csv}");
    let queue = header.iter().position(|h| *h == "Server Queue").expect("a Server Queue column");
    assert!(row[queue].parse::<u64>().is_ok(), "Server Queue is a number of µs:\n{csv}");
}

fn server() -> TestServer {
    TestServer::start_with(&["mlp.toml"], ServerConfig::ephemeral())
}

#[test]
fn perf_analyzer_http_binary_csv_matches_server_counts() {
    run(&server(), "http", &[]);
}

#[test]
fn perf_analyzer_http_json_csv_matches_server_counts() {
    run(&server(), "http", &["--input-tensor-format", "json", "--output-tensor-format", "json"]);
}

#[test]
fn perf_analyzer_grpc_csv_matches_server_counts() {
    run(&server(), "grpc", &[]);
}
