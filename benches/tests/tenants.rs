//! Tenant loads (`--tenants`): the simulator's buffers under a tenant order
//! (cost-model pipelines, virtual time, deterministic), the per-tenant figures,
//! and `baton bench`'s refusal of a tenant the pipeline lacks, with one short
//! real in-process run.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton::BatchingPolicy;
use baton_bench::load::{parse_tenants, TenantShare};
use baton_bench::measure::PointResult;
use baton_bench::simulate::simulate;
use baton_bench::BenchOptions;
use common::{engines, folder, options, profile};

const SUITE: &str = "tenants";

/// One cost-model node `a` (x -> a -> y) of batches of `max_batch`, under tenant
/// order `order` with tenants alice (weight 1) and bob (weight 3).
fn pipeline(dir: &Path, order: &str, max_batch: usize) -> PathBuf {
    let text = format!(
        r#"[pipeline]
name = "tenants"
[fairness]
order = "{order}"
tenants = {{ alice = 1, bob = 3 }}
[inputs.x]
to = ["a.x"]
[outputs.y]
from = "a.y"
[nodes.a]
max_batch = {max_batch}
[[nodes.a.stages]]
engine = "cost_model"
params.inputs = [{{ name = "x", dtype = "f32", shape = [-1, 4] }}]
params.outputs = [{{ name = "y", dtype = "f32", shape = [-1, 4] }}]
params.latency_us = 100
"#
    );
    let path = dir.join(format!("{order}_{max_batch}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn shares(text: &str) -> Vec<TenantShare> {
    parse_tenants(text).unwrap()
}

/// The point's figures of `tenant`: (answered, p99 µs).
fn tenant(p: &PointResult, name: &str) -> (u64, u64) {
    let t = p.tenants.iter().find(|t| t.tenant == name).unwrap_or_else(|| panic!("no tenant {name}"));
    (t.latency.count, t.latency.p99_us)
}

/// An open-loop point at `rate` requests/s of shares `tenants` on one node of 1 ms
/// batches of one row (1000 requests/s at most), under `order`.
fn one_point(dir: &Path, order: &str, tenants: &str, rate: f64) -> PointResult {
    let prof = profile(dir, &[("a", &[(1, &[1000.0])])]);
    let mut o = options(pipeline(dir, order, 1), prof);
    o.bench.rate = vec![rate];
    o.bench.tenants = shares(tenants);
    o.bench.seed = 5;
    simulate(&o, &engines()).unwrap().points.remove(0)
}

#[test]
fn two_backlogged_tenants_are_answered_in_their_weights() {
    let dir = folder(SUITE, "weights");
    // Equal shares at three times the node's rate: both tenants always wait, and
    // each batch of one is one round of the weighted order (weights 1 : 3).
    let p = one_point(&dir, "weighted", "alice=1,bob=1", 3000.0);
    let ((alice, _), (bob, _)) = (tenant(&p, "alice"), tenant(&p, "bob"));
    assert_eq!(alice + bob, p.requests, "every answer is some tenant's");
    assert_eq!(p.requests, 1000, "1 ms batches for a second");
    assert!(alice.abs_diff(250) <= 2 && bob.abs_diff(750) <= 2, "alice {alice}, bob {bob}");
    // Under fifo, the answers follow the arrivals: half each.
    let p = one_point(&dir, "fifo", "alice=1,bob=1", 3000.0);
    let ((alice, _), (bob, _)) = (tenant(&p, "alice"), tenant(&p, "bob"));
    assert!(alice.abs_diff(500) <= 2 && bob.abs_diff(500) <= 2, "fifo: alice {alice}, bob {bob}");
}

#[test]
fn under_a_flood_the_light_tenant_waits_less_under_the_weighted_order() {
    let dir = folder(SUITE, "flood");
    // alice sends 9 requests in 10, bob (of weight 3) one.
    for rate in [700.0, 1200.0] {
        let fifo = one_point(&dir, "fifo", "alice=9,bob=1", rate);
        let weighted = one_point(&dir, "weighted", "alice=9,bob=1", rate);
        let ((_, bob_fifo), (_, bob_weighted)) = (tenant(&fifo, "bob"), tenant(&weighted, "bob"));
        assert!(bob_weighted < bob_fifo, "{rate}/s: bob's p99 weighted {bob_weighted} µs, fifo {bob_fifo} µs");
        if rate > 1000.0 {
            // Past the node's rate alice's queue grows without bound; bob's does not.
            assert!(bob_weighted <= 3000, "{rate}/s: bob waits at most a batch or two: {bob_weighted} µs");
            assert!(bob_fifo > 50_000, "{rate}/s: under fifo bob waits behind the flood: {bob_fifo} µs");
        }
    }
}

#[test]
fn the_same_seed_gives_byte_identical_output_with_tenants() {
    let dir = folder(SUITE, "determinism");
    let prof = profile(&dir, &[("a", &[(1, &[90.0, 100.0, 400.0]), (8, &[300.0, 320.0, 500.0])])]);
    let run = |tag: &str| {
        let mut o = options(pipeline(&dir, "weighted", 8), prof.clone());
        o.bench.rate = vec![6000.0];
        o.bench.concurrency = vec![8];
        o.bench.priority_fraction = 0.1;
        o.bench.tenants = shares("alice=3,bob=1");
        o.bench.seed = 7;
        o.bench.policy = vec![BatchingPolicy::Collaborative, BatchingPolicy::Greedy];
        o.bench.json = Some(dir.join(format!("{tag}.json")));
        simulate(&o, &engines()).unwrap();
        std::fs::read(dir.join(format!("{tag}.json"))).unwrap()
    };
    let first = run("first");
    assert_eq!(first, run("second"));
    let report: serde_json::Value = serde_json::from_slice(&first).unwrap();
    for point in report["points"].as_array().unwrap() {
        let names: Vec<&str> =
            point["tenants"].as_array().unwrap().iter().map(|t| t["tenant"].as_str().unwrap()).collect();
        assert_eq!(names, ["alice", "bob"], "{point}");
        let counts: u64 = point["tenants"].as_array().unwrap().iter().map(|t| t["count"].as_u64().unwrap()).sum();
        assert_eq!(counts, point["requests"].as_u64().unwrap());
    }
    assert_eq!(report["settings"]["tenants"][0]["name"], "alice");
}

#[test]
fn a_tenant_the_pipeline_lacks_is_refused_by_name() {
    let dir = folder(SUITE, "unknown");
    let prof = profile(&dir, &[("a", &[(1, &[1000.0])])]);
    let mut o = options(pipeline(&dir, "weighted", 1), prof);
    o.bench.rate = vec![100.0];
    o.bench.tenants = shares("alice=1,carol=2");
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--tenants") && e.contains("`carol`") && e.contains("default, alice, bob"), "{e}");
    // `baton bench` refuses it before any request is sent.
    let e = baton_bench::bench_with(&o.bench, &engines()).unwrap_err();
    assert!(e.contains("--tenants") && e.contains("`carol`") && e.contains("default, alice, bob"), "{e}");
}

#[test]
fn a_real_bench_reports_each_tenants_answers() {
    let dir = folder(SUITE, "real");
    let args = BenchOptions {
        pipeline: Some(pipeline(&dir, "weighted", 8)),
        rate: vec![400.0],
        warmup: Duration::from_millis(100),
        duration: Duration::from_millis(400),
        tenants: shares("alice=3,bob=1"),
        ..BenchOptions::default()
    };
    let report = baton_bench::bench_with(&args, &engines()).unwrap();
    let p = &report.points[0];
    assert_eq!(p.errors, 0, "the runtime took every tenant's requests");
    let (alice, bob) = (tenant(p, "alice").0, tenant(p, "bob").0);
    assert!(alice > 0 && bob > 0, "alice {alice}, bob {bob}");
    assert_eq!(alice + bob, p.requests, "every answer is some tenant's");
}
