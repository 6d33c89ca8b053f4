//! `baton simulate` end to end on cost-model pipelines (no ONNX Runtime needed):
//! its arithmetic on a case worked by hand, determinism, and its refusals.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton::BatchingPolicy;
use baton_bench::simulate::{simulate, SimOptions};
use baton_bench::BenchOptions;

/// A fresh folder for one test's files.
fn folder(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("baton-simulate-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A cost-model node `name` taking `input`, giving `output` ([N, 4] f32).
fn node(name: &str, input: &str, output: &str, max_batch: usize) -> String {
    format!(
        r#"
[nodes.{name}]
max_batch = {max_batch}
[[nodes.{name}.stages]]
engine = "cost_model"
params.inputs = [{{ name = "{input}", dtype = "f32", shape = [-1, 4] }}]
params.outputs = [{{ name = "{output}", dtype = "f32", shape = [-1, 4] }}]
params.latency_us = 100
"#
    )
}

/// One node `a`: x -> a -> y.
fn one_node(dir: &Path, max_batch: usize) -> PathBuf {
    let text = format!(
        "[pipeline]\nname = \"one\"\n[inputs.x]\nto = [\"a.x\"]\n[outputs.y]\nfrom = \"a.y\"\n{}",
        node("a", "x", "y", max_batch)
    );
    let path = dir.join("one.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A diamond: x -> a -> (b, c) -> d (a join) -> y.
fn diamond(dir: &Path) -> PathBuf {
    let mut text = String::from(
        "[pipeline]\nname = \"dia\"\n[scheduler]\ncompute_budget = 2.0\n[inputs.x]\nto = [\"a.x\"]\n[outputs.y]\nfrom = \"d.y\"\n",
    );
    text += &node("a", "x", "h", 8);
    text += &node("b", "h", "p", 8);
    text += &node("c", "h", "q", 8);
    text += r#"
[nodes.d]
max_batch = 8
[[nodes.d.stages]]
engine = "cost_model"
params.inputs = [{ name = "p", dtype = "f32", shape = [-1, 4] }, { name = "q", dtype = "f32", shape = [-1, 4] }]
params.outputs = [{ name = "y", dtype = "f32", shape = [-1, 4] }]
params.latency_us = 100

[[edges]]
from = "a.h"
to = "b.h"
[[edges]]
from = "a.h"
to = "c.h"
[[edges]]
from = "b.p"
to = "d.p"
[[edges]]
from = "c.q"
to = "d.q"
"#;
    let path = dir.join("dia.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A node's measured batch sizes, each with its samples (µs).
type Batches<'a> = &'a [(usize, &'a [f64])];

/// A profile: per node, per batch size, its samples (µs).
fn profile(dir: &Path, nodes: &[(&str, Batches)]) -> PathBuf {
    let nodes: serde_json::Map<String, serde_json::Value> = nodes
        .iter()
        .map(|(name, batches)| {
            let batches: Vec<serde_json::Value> = batches
                .iter()
                .map(|(b, s)| {
                    let mut sorted = s.to_vec();
                    sorted.sort_by(f64::total_cmp);
                    let q = |f: f64| sorted[((sorted.len() - 1) as f64 * f).round() as usize];
                    serde_json::json!({"batch": b, "runs": s.len(), "median_us": q(0.5), "p10_us": q(0.1),
                        "p90_us": q(0.9), "min_us": sorted[0], "max_us": sorted[sorted.len() - 1], "samples_us": s})
                })
                .collect();
            (
                name.to_string(),
                serde_json::json!({"provider": "cpu", "batches": batches, "memory_bytes": 0, "model_bytes": 0}),
            )
        })
        .collect();
    let path = dir.join("profile.json");
    std::fs::write(&path, serde_json::json!({"pipeline": "p.toml", "cores": 2, "nodes": nodes}).to_string()).unwrap();
    path
}

fn options(pipeline: PathBuf, profile: PathBuf) -> SimOptions {
    SimOptions {
        bench: BenchOptions {
            pipeline: Some(pipeline),
            warmup: Duration::from_millis(500),
            duration: Duration::from_secs(1),
            ..BenchOptions::default()
        },
        profile,
        wake_us: 0.0,
        hop_us: 0.0,
        cores: None,
        sessions: None,
    }
}

fn engines() -> baton::EngineRegistry {
    baton_engines::standard_registry()
}

#[test]
fn one_node_of_fixed_duration_at_concurrency_1_answers_one_request_per_duration() {
    let dir = folder("hand");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0, 1000.0])])]));
    o.bench.concurrency = vec![1];
    let report = simulate(&o, &engines()).unwrap();
    let p = &report.points[0];
    // Answers at 1, 2, 3 ... ms; the measured second [0.5 s, 1.5 s) holds exactly 1000 of them.
    assert_eq!(p.requests, 1000);
    assert_eq!(p.throughput_rps, 1000.0);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1000, 1000));
    assert_eq!(p.nodes[0].mean_compute_us, 1000.0);
}

#[test]
fn measured_terms_add_to_each_hop_and_cores_are_shared() {
    let dir = folder("terms");
    // c=2 on one node with two workers and one core: both batches run at half speed.
    let text =
        std::fs::read_to_string(one_node(&dir, 1)).unwrap().replace("max_batch = 1", "max_batch = 1\nworkers = 2");
    let pipeline = dir.join("two_workers.toml");
    std::fs::write(&pipeline, text).unwrap();
    let mut o = options(pipeline, profile(&dir, &[("a", &[(1, &[900.0])])]));
    o.bench.concurrency = vec![2];
    o.cores = Some(1.0);
    o.wake_us = 100.0;
    o.hop_us = 50.0;
    o.bench.policy = vec![BatchingPolicy::Greedy];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    // Each request: 100 µs wake, 1800 µs of shared compute, 50 µs hand-off (under
    // 2048 µs, where the histogram holds every µs).
    assert_eq!((p.latency.min_us, p.latency.max_us), (1950, 1950));
    assert_eq!(p.nodes[0].mean_compute_us, 1800.0);
}

#[test]
fn the_same_seed_gives_byte_identical_output() {
    let dir = folder("determinism");
    let samples: &[f64] = &[90.0, 100.0, 110.0, 150.0, 400.0];
    let batches: Batches = &[(1, samples), (8, &[300.0, 320.0, 500.0])];
    let prof = profile(&dir, &[("a", batches), ("b", batches), ("c", batches), ("d", batches)]);
    let run = |tag: &str| {
        let mut o = options(diamond(&dir), prof.clone());
        o.bench.rate = vec![3000.0];
        o.bench.concurrency = vec![8];
        o.bench.priority_fraction = 0.1;
        o.bench.seed = 7;
        o.bench.policy = vec![BatchingPolicy::Collaborative, BatchingPolicy::Greedy, BatchingPolicy::Dynamic];
        o.bench.json = Some(dir.join(format!("{tag}.json")));
        o.bench.csv = Some(dir.join(format!("{tag}.csv")));
        simulate(&o, &engines()).unwrap();
        (
            std::fs::read(dir.join(format!("{tag}.json"))).unwrap(),
            std::fs::read(dir.join(format!("{tag}.csv"))).unwrap(),
        )
    };
    let (first, second) = (run("first"), run("second"));
    assert_eq!(first, second);
    let text = String::from_utf8(first.0).unwrap();
    assert!(text.contains("\"policy\": \"greedy\""), "the report holds every policy");
}

#[test]
fn a_profile_missing_a_node_or_of_another_pipeline_is_refused() {
    let dir = folder("refusals");
    let one: Batches = &[(1, &[100.0]), (8, &[300.0])];
    let o = options(diamond(&dir), profile(&dir, &[("a", one), ("b", one), ("c", one)]));
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("no entry for node `d`"), "{e}");
    let o = options(one_node(&dir, 8), profile(&dir, &[("a", one), ("other", one)]));
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("another pipeline") && e.contains("`other`"), "{e}");
    let o = options(one_node(&dir, 8), profile(&dir, &[("a", &[(1, &[100.0]), (4, &[200.0])])]));
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("node `a` can form batches of 5 rows"), "{e}");
}

/// A chain of `n` nodes: x -> n0 -> n1 -> ... -> y.
fn chain(dir: &Path, n: usize) -> PathBuf {
    let mut text = format!(
        "[pipeline]\nname = \"chain\"\n[inputs.x]\nto = [\"n0.t0\"]\n[outputs.y]\nfrom = \"n{}.t{n}\"\n",
        n - 1
    );
    for k in 0..n {
        text += &node(&format!("n{k}"), &format!("t{k}"), &format!("t{}", k + 1), 8);
        if k > 0 {
            text += &format!("[[edges]]\nfrom = \"n{}.t{k}\"\nto = \"n{k}.t{k}\"\n", k - 1);
        }
    }
    let path = dir.join("chain.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn eight_nodes_sharing_one_core_all_run_and_answer() {
    let dir = folder("shared");
    let samples: &[f64] = &[5.0, 50.0, 100.0, 3000.0];
    let batches: Batches = &[(1, samples), (8, samples)];
    let names: Vec<String> = (0..8).map(|k| format!("n{k}")).collect();
    let nodes: Vec<(&str, Batches)> = names.iter().map(|n| (n.as_str(), batches)).collect();
    let prof = profile(&dir, &nodes);
    for seed in 0..4 {
        // One core for up to eight running batches: every start and end moves the others' ends,
        // and finished batches' slots are reused while stale ends are still queued.
        let mut o = options(chain(&dir, 8), prof.clone());
        o.bench.rate = vec![2_000.0, 20_000.0];
        o.bench.policy = vec![BatchingPolicy::Greedy];
        o.bench.seed = seed;
        o.cores = Some(1.0);
        let report = simulate(&o, &engines()).unwrap();
        for p in &report.points {
            let tasks: Vec<u64> = p.nodes.iter().map(|n| n.tasks).collect();
            assert!(p.requests > 0 && tasks.iter().all(|&t| t > 0), "seed {seed}: {tasks:?}");
        }
    }
}
