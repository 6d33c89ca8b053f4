//! Runs `baton bench` for real on configs/mlp.toml (ONNX Runtime, tiny
//! durations, two policies, the raw engine) and checks the JSON it writes.

// Of `common`, this file takes its scratch folders alone.
#[allow(dead_code)]
mod common;

use std::time::Duration;

use baton::BatchingPolicy;
use baton_bench::BenchOptions;
use serde_json::Value;

#[test]
fn bench_on_the_mlp_writes_every_point_and_the_raw_figures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = common::folder("bench-mlp", "mlp");
    let json = dir.join("bench.json");
    let csv = json.with_extension("csv");
    let svg = json.with_extension("svg");
    let pipeline = root.join("configs/mlp.toml");
    let args = BenchOptions {
        pipeline: Some(pipeline),
        warmup: Duration::from_millis(100),
        duration: Duration::from_millis(300),
        concurrency: vec![1, 4],
        policy: vec![BatchingPolicy::Collaborative, BatchingPolicy::Dynamic],
        raw: true,
        raw_duration: Duration::from_millis(100),
        priority_fraction: 0.25,
        json: Some(json.clone()),
        csv: Some(csv.clone()),
        plot: Some(svg.clone()),
        ..BenchOptions::default()
    };
    baton_bench::bench(&args).expect("the bench runs");

    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["pipeline"], "mlp");

    check_raw(&report["raw"]);
    check_points(&report["points"]);
    check_batch_sizes(&report["batch_sizes"]);

    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv_text.lines();
    assert!(lines.next().unwrap().starts_with("policy,mode,load,throughput_rps,"));
    assert_eq!(lines.count(), 4);
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.contains("<svg") && svg_text.contains("collaborative p50"));
}

#[test]
fn a_sweep_writes_a_csv_row_for_every_point_of_every_round_and_policy() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = common::folder("bench-mlp", "sweep");
    let csv = dir.join("sweep.csv");
    let args = BenchOptions {
        pipeline: Some(root.join("configs/mlp.toml")),
        warmup: Duration::from_millis(50),
        duration: Duration::from_millis(200),
        sweep: vec![20.0, 40.0],
        capacity_rate: Some(2000.0),
        repeat: 2,
        policy: vec![BatchingPolicy::Greedy, BatchingPolicy::Collaborative],
        csv: Some(csv.clone()),
        ..BenchOptions::default()
    };
    baton_bench::bench(&args).expect("the sweep runs");
    let text = std::fs::read_to_string(&csv).expect("the sweep writes the CSV it was asked for");
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("policy,mode,load,throughput_rps,"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2 * 2 * 2, "2 loads × 2 policies × 2 rounds: {text}");
    for (policy, load) in [("greedy", "400"), ("greedy", "800"), ("collaborative", "400"), ("collaborative", "800")] {
        let matching = rows.iter().filter(|r| r.starts_with(&format!("{policy},open,{load}"))).count();
        assert_eq!(matching, 2, "{policy} at {load}/s, once a round: {text}");
    }
}

/// The raw engine's figures: the one node, batch sizes 1..32, each with positive throughput.
fn check_raw(raw: &Value) {
    let nodes = raw["nodes"].as_array().expect("raw.nodes");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0]["node"], "mlp");
    let batches: Vec<u64> =
        nodes[0]["points"].as_array().unwrap().iter().map(|p| p["batch"].as_u64().unwrap()).collect();
    assert_eq!(batches, [1, 2, 4, 8, 16, 32]);
    for p in nodes[0]["points"].as_array().unwrap() {
        assert!(p["rows_per_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["median_us"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_eq!(raw["io"], "binding", "I/O binding is the default raw path");
    assert_eq!(raw["loops"], 1);
    assert_eq!(nodes[0]["loops"], 1);
    assert_eq!(raw["bottleneck"]["node"], "mlp");
    assert!(raw["batch1_path_us"].as_f64().unwrap() > 0.0);
}

/// Baton's points: policy × concurrency, in order, each with throughput, no errors, and ratios.
fn check_points(points: &Value) {
    let points = points.as_array().expect("points");
    let seen: Vec<(String, u64)> = points
        .iter()
        .map(|p| (p["policy"].as_str().unwrap().to_string(), p["load"].as_f64().unwrap() as u64))
        .collect();
    let expected: Vec<(String, u64)> =
        [("collaborative", 1), ("collaborative", 4), ("dynamic", 1), ("dynamic", 4)].map(|(p, c)| (p.into(), c)).into();
    assert_eq!(seen, expected);
    for p in points {
        assert_eq!(p["mode"], "closed");
        assert!(p["throughput_rps"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["rows_per_s"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["errors"], 0, "{p}");
        let latency = &p["latency"];
        let p50 = latency["p50_us"].as_u64().unwrap();
        assert!(p50 > 0 && p50 <= latency["p99_us"].as_u64().unwrap(), "{p}");
        assert!(p["priority_latency"]["count"].as_u64().unwrap() > 0, "priority requests are reported apart: {p}");
        assert!(p["ratio_to_raw"].as_f64().unwrap() > 0.0, "{p}");
        let node = &p["nodes"][0];
        assert_eq!(node["name"], "mlp");
        assert!(node["mean_batch"].as_f64().unwrap() >= 1.0, "{p}");
        assert!(node["mean_compute_us"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["p50_minus_raw_us"].is_null(), p["load"].as_f64() != Some(1.0), "{p}");
        check_raw_beside(p);
    }
}

/// The raw figures measured beside a point (the default `--raw-ratios beside`): the
/// bottleneck at its best batch before and after it, whose mean the point's ratio divides by;
/// a point at concurrency 1 has the batch-1 path beside it too.
fn check_raw_beside(p: &Value) {
    let beside = &p["raw_beside"];
    assert_eq!(beside["node"], "mlp", "{p}");
    let (before, after) =
        (beside["before"]["rows_per_s"].as_f64().unwrap(), beside["after"]["rows_per_s"].as_f64().unwrap());
    assert!(before > 0.0 && after > 0.0, "{p}");
    let ratio = p["rows_per_s"].as_f64().unwrap() / ((before + after) / 2.0);
    assert!((p["ratio_to_raw"].as_f64().unwrap() - ratio).abs() < 1e-9 * ratio, "{p}");
    if p["load"].as_f64() == Some(1.0) {
        let path = |side: &str| beside[side]["batch1_path_us"].as_f64().unwrap();
        let p50 = p["latency"]["p50_us"].as_f64().unwrap();
        let want = p50 - (path("before") + path("after")) / 2.0;
        assert!((p["p50_minus_raw_us"].as_f64().unwrap() - want).abs() < 1e-6, "{p}");
    }
}

/// Batch sizes per policy: the node's sizes, each compared with raw at that size or above.
fn check_batch_sizes(batch_sizes: &Value) {
    let policies = batch_sizes.as_array().expect("batch_sizes");
    assert_eq!(policies.len(), 2);
    for p in policies {
        let sizes = p["nodes"][0]["sizes"].as_array().expect("sizes");
        assert!(!sizes.is_empty(), "{p}");
        for s in sizes {
            assert!(s["executions"].as_u64().unwrap() > 0, "{s}");
            assert!(s["max_us"].as_f64().unwrap() >= s["mean_us"].as_f64().unwrap(), "{s}");
            assert!(s["raw_batch"].as_u64().unwrap() >= s["batch"].as_u64().unwrap(), "{s}");
            assert!(s["max_to_raw"].as_f64().unwrap() > 0.0, "{s}");
        }
    }
}
