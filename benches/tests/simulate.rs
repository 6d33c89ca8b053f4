//! `baton simulate` end to end on cost-model pipelines (no ONNX Runtime needed):
//! its arithmetic on a case worked by hand, determinism, and its refusals.

mod common;

use common::pipelines::{node, one_node};
use common::{engines, folder, options, profile, Batches, Scratch};

const SUITE: &str = "simulate";

use std::path::{Path, PathBuf};

use baton::BatchingPolicy;
use baton_bench::load::{Arrivals, GeneratorPolicy};
use baton_bench::simulate::cpu::CpuUs;
use baton_bench::simulate::{simulate, SimOptions};

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

/// `one_node`'s pipeline (one row a batch) with `from` replaced by `to`, as `file`.
fn one_node_with(dir: &Path, file: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(one_node(dir, 1)).unwrap().replace(from, to);
    let pipeline = dir.join(file);
    std::fs::write(&pipeline, text).unwrap();
    pipeline
}

/// `one_node`'s pipeline (one row a batch) under the collaborative rule with real-time foreground batches.
fn realtime_one_node(dir: &Path) -> PathBuf {
    let scheduler = "[scheduler]\npolicy = \"collaborative\"\nforeground_realtime = true\n[inputs.x]";
    one_node_with(dir, "realtime.toml", "[inputs.x]", scheduler)
}

/// `one_node`'s pipeline (one row a batch) with two workers.
fn two_workers(dir: &Path) -> PathBuf {
    one_node_with(dir, "two_workers.toml", "max_batch = 1", "max_batch = 1\nworkers = 2")
}

#[test]
fn one_node_of_fixed_duration_at_concurrency_1_answers_one_request_per_duration() {
    let dir = folder(SUITE, "hand");
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
fn the_hop_holds_the_worker_unless_it_frees_the_worker_and_then_delays_the_answer_alone() {
    let dir = folder(SUITE, "hop_frees");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.model.hop_us = 1000.0;
    o.bench.concurrency = vec![2];
    let point = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0);
    let p = point(&o);
    assert_eq!(p.throughput_rps, 500.0, "a batch and its hop, 2 ms, per request");
    o.model.hop_frees_worker = true;
    let p = point(&o);
    assert_eq!(p.throughput_rps, 1000.0, "the worker starts the other client's batch as the hop begins");
    assert_eq!(
        (p.latency.min_us, p.latency.max_us),
        (2000, 2000),
        "each answer still a batch and a hop after its start"
    );
}

#[test]
fn admission_refuses_past_max_in_flight_and_a_full_bounded_entry_and_every_send_resolves_once() {
    let dir = folder(SUITE, "admission");
    let capped = one_node_with(&dir, "capped.toml", "name = \"one\"", "name = \"one\"\nmax_in_flight = 4");
    let mut o = options(capped, profile(&dir, &[("a", &[(1, &[1000.0])])]));
    // One 1-ms batch at a time against a request every 500 µs: half must be refused.
    o.bench.rate = vec![2000.0];
    o.bench.arrivals = Arrivals::Constant;
    let point = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0);
    let p = point(&o);
    assert!(p.requests.abs_diff(1000) <= 1, "the node's rate is answered: {}", p.requests);
    assert!(p.errors.abs_diff(1000) <= 1, "the rest is refused at once: {}", p.errors);
    assert!(p.latency.max_us <= 4000, "at most 4 in flight, 1 ms each: {} µs", p.latency.max_us);

    o.bench.pipeline = Some(one_node_with(&dir, "bounded.toml", "max_batch = 1", "max_batch = 1\nmax_queue = 2"));
    let p = point(&o);
    assert!(
        p.requests.abs_diff(1000) <= 1 && p.errors.abs_diff(1000) <= 1,
        "{} answered, {} refused",
        p.requests,
        p.errors
    );
    assert!(p.latency.max_us <= 3000, "two waiting and one running: {} µs", p.latency.max_us);
    // Closed loop: eight clients, two may wait; a refused client sends again and the run ends.
    o.bench.rate = Vec::new();
    o.bench.concurrency = vec![8];
    let p = point(&o);
    assert!(p.requests.abs_diff(1000) <= 1, "the node's rate is answered: {}", p.requests);
    assert!(p.errors > 0, "clients past the bound are refused");
}

#[test]
fn an_efficient_batches_node_takes_at_most_the_size_its_profile_makes_cheapest_per_row() {
    let dir = folder(SUITE, "efficient");
    // 4 rows cost 100 µs (25 a row), 8 rows 240 (30 a row), 1 and 2 rows 50 and 80.
    let sizes: &[(usize, &[f64])] = &[(1, &[50.0]), (2, &[80.0]), (4, &[100.0]), (8, &[240.0])];
    let eight = one_node(&dir, 8);
    let efficient = dir.join("efficient.toml");
    let text = std::fs::read_to_string(&eight).unwrap();
    std::fs::write(&efficient, text.replace("max_batch = 8", "max_batch = 8\nefficient_batches = true")).unwrap();
    let mut o = options(eight, profile(&dir, &[("a", sizes)]));
    o.bench.concurrency = vec![16];
    let batch = |o: &SimOptions| simulate(o, &engines()).unwrap().points[0].nodes[0].mean_batch;
    assert_eq!(batch(&o), 8.0, "16 clients: full batches of max_batch");
    o.bench.pipeline = Some(efficient);
    assert_eq!(batch(&o), 4.0, "capped at the cheapest size per row");
}

#[test]
fn a_node_in_pieces_costs_each_piece_at_its_own_size() {
    let dir = folder(SUITE, "pieces");
    let sizes: &[(usize, &[f64])] = &[(1, &[50.0]), (2, &[80.0]), (4, &[100.0]), (8, &[240.0])];
    let eight = one_node(&dir, 8);
    let pieces = dir.join("pieces.toml");
    let text = std::fs::read_to_string(&eight).unwrap();
    std::fs::write(&pieces, text.replace("max_batch = 8", "max_batch = 8\npiece_rows = 4")).unwrap();
    let mut o = options(eight, profile(&dir, &[("a", sizes)]));
    o.bench.concurrency = vec![16];
    let node = |o: &SimOptions| {
        let n = &simulate(o, &engines()).unwrap().points[0].nodes[0];
        (n.mean_batch, n.mean_compute_us)
    };
    assert_eq!(node(&o), (8.0, 240.0), "whole batches of 8 rows");
    o.bench.pipeline = Some(pieces);
    assert_eq!(node(&o), (8.0, 200.0), "the same batches, run as two pieces of 4 rows (100 µs each)");
}

#[test]
fn a_compute_scale_multiplies_the_nodes_profiled_times_and_names_unknown_nodes() {
    let dir = folder(SUITE, "scale");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0, 1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.compute_scale = vec!["a=1.5".into()];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!((p.latency.min_us, p.latency.max_us), (1500, 1500));
    assert_eq!(p.nodes[0].mean_compute_us, 1500.0);
    o.model.compute_scale = vec!["z=2".into()];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--compute-scale") && e.contains("`z`"), "{e}");
    o.model.compute_scale = vec!["a=-1".into()];
    assert!(simulate(&o, &engines()).unwrap_err().contains("`a=-1`"));
}

#[test]
fn a_compute_offset_adds_to_each_scaled_batch_takes_off_where_negative_and_names_unknown_nodes() {
    let dir = folder(SUITE, "offset");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0, 1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.compute_scale = vec!["a=1.5".into()];
    o.model.compute_offset = vec!["a=250".into()];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!((p.latency.min_us, p.latency.max_us), (1750, 1750), "1.5 × 1000 + 250");
    assert_eq!(p.nodes[0].mean_compute_us, 1750.0);
    assert_eq!(simulate(&o, &engines()).unwrap().settings["compute_offset"], serde_json::json!(["a=250"]));
    o.model.compute_offset = vec!["z=1".into()];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--compute-offset") && e.contains("`z`"), "{e}");
    o.model.compute_offset = vec!["a=-300".into()];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!(p.latency.max_us, 1200, "1.5 × 1000 − 300: a negative offset takes off");
    o.model.compute_offset = vec!["a=-700".into()];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!(p.latency.max_us, 1000, "1.5 × 1000 − 700 is below the profile's 1000");
    o.model.compute_offset = vec!["a=fast".into()];
    assert!(simulate(&o, &engines()).unwrap_err().contains("`a=fast`"));
}

#[test]
fn a_compute_scale_leaves_real_time_batches_at_the_profiles_times() {
    let dir = folder(SUITE, "scale_rt");
    let pipeline = realtime_one_node(&dir);
    let mut o = options(pipeline, profile(&dir, &[("a", &[(1, &[1000.0, 1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.compute_scale = vec!["a=1.5".into()];
    let run = |o: &SimOptions| simulate(o, &engines()).unwrap().points[0].nodes[0].mean_compute_us;
    assert_eq!(run(&o), 1500.0, "no priority task: every batch is in the normal class, scaled");
    o.bench.priority_fraction = 1.0;
    assert_eq!(run(&o), 1000.0, "every batch holds a priority task: real-time, the profile's times");
    o.bench.policy = vec![BatchingPolicy::Greedy];
    assert_eq!(run(&o), 1500.0, "greedy has no real-time class");
}

#[test]
fn a_sparse_stretch_slows_open_loads_by_their_density_and_leaves_closed_loops_alone() {
    let dir = folder(SUITE, "sparse");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[100.0, 100.0])])]));
    o.model.compute_scale = vec!["a=2".into()];
    o.model.sparse_stretch = vec!["a=3".into()];
    (o.model.sparse_rate, o.model.dense_rate) = (Some(100.0), Some(500.0));
    let compute = |o: &SimOptions| simulate(o, &engines()).unwrap().points[0].nodes[0].mean_compute_us;
    o.bench.concurrency = vec![1];
    assert_eq!(compute(&o), 200.0, "a closed loop: the scale alone");
    o.bench.concurrency = vec![];
    for (rate, want) in [(50.0, 600.0), (100.0, 600.0), (300.0, 400.0), (500.0, 200.0), (900.0, 200.0)] {
        o.bench.rate = vec![rate];
        assert_eq!(compute(&o), want, "at {rate} requests/s: 2 × 100 µs × the stretch at that density");
    }
    o.bench.priority_fraction = 1.0;
    o.bench.rate = vec![100.0];
    let rt = realtime_one_node(&dir);
    o.bench.pipeline = Some(rt);
    assert_eq!(compute(&o), 100.0, "real-time batches keep the profile's times");
}

/// `path`'s profile with node `node`'s idle gaps: (gap µs, extra µs).
fn with_idle_gaps(path: &Path, node: &str, gaps: &[(f64, f64)]) {
    let mut p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let gaps: Vec<serde_json::Value> = gaps
        .iter()
        .map(|&(gap_us, extra_us)| serde_json::json!({"gap_us": gap_us, "median_us": 0.0, "extra_us": extra_us}))
        .collect();
    p["nodes"][node]["idle_gaps"] = serde_json::json!(gaps);
    std::fs::write(path, p.to_string()).unwrap();
}

#[test]
fn a_normal_batch_pays_the_extra_its_nodes_idle_gap_measured_and_back_to_back_batches_pay_none() {
    let dir = folder(SUITE, "idle_gaps");
    let prof = profile(&dir, &[("a", &[(1, &[100.0, 100.0])])]);
    with_idle_gaps(&prof, "a", &[(10000.0, 300.0), (1000.0, 50.0)]);
    let mut o = options(one_node(&dir, 1), prof);
    o.model.idle_gaps = true;
    o.bench.arrivals = Arrivals::Constant;
    let compute = |o: &SimOptions| simulate(o, &engines()).unwrap().points[0].nodes[0].mean_compute_us;
    o.bench.concurrency = vec![1];
    assert_eq!(compute(&o), 100.0, "a closed loop without wake or hop: each batch starts as the last ends");
    o.bench.concurrency = vec![];
    o.bench.rate = vec![20.0];
    assert_eq!(compute(&o), 400.0, "50 ms apart: past the longest gap measured, its extra");
    // 1 ms apart: the worker spins 50 µs (`idle_spin_us`'s default) after each batch d, its
    // core awake, then parks: the gap is 1 ms less d less the spin, and
    // d = 100 + 50 × (950 - d) / 1000.
    o.bench.rate = vec![1000.0];
    let d = compute(&o);
    assert!((d - 147.5 / 1.05).abs() < 0.01, "linear from no extra at no gap, after the spin: {d}");
    let spinning = o.bench.pipeline.replace(one_node_with(
        &dir,
        "no_spin.toml",
        "max_batch = 1",
        "max_batch = 1\nidle_spin_us = 0",
    ));
    let d = compute(&o);
    assert!((d - 150.0 / 1.05).abs() < 0.01, "a worker that parks at once: the gap from its batch's end: {d}");
    // Spinning 2 ms, the worker never parks between batches 1 ms apart.
    o.bench.pipeline =
        Some(one_node_with(&dir, "long_spin.toml", "max_batch = 1", "max_batch = 1\nidle_spin_us = 2000"));
    let d = compute(&o);
    assert_eq!(d, 100.0, "a worker told while it spins: no gap");
    o.bench.pipeline = spinning;
    o.model.idle_gaps = false;
    assert_eq!(compute(&o), 100.0, "without --idle-gaps: the profile's times");
    o.model.idle_gaps = true;
    (o.bench.rate, o.bench.priority_fraction) = (vec![20.0], 1.0);
    o.bench.pipeline = Some(realtime_one_node(&dir));
    assert_eq!(compute(&o), 100.0, "real-time batches keep the profile's times");
    o.model.realtime_idle_gaps = true;
    o.model.realtime_scale = vec!["a=2".into()];
    assert_eq!(compute(&o), 500.0, "with --realtime-idle-gaps: their scaled time and the gap's extra");
}

#[test]
fn the_real_time_batches_times_are_reported_apart_as_the_runtime_reports_them() {
    let dir = folder(SUITE, "realtime_times");
    let mut o = options(realtime_one_node(&dir), profile(&dir, &[("a", &[(1, &[100.0])])]));
    (o.bench.rate, o.bench.arrivals) = (vec![100.0], Arrivals::Constant);
    let times = |o: &SimOptions| {
        let node = simulate(o, &engines()).unwrap().points.remove(0).nodes.remove(0);
        let count = |t: &[baton::stats::BatchTimes]| t.iter().flat_map(|t| &t.buckets).map(|b| b.2).sum::<u64>();
        (count(&node.batch_times), count(&node.realtime_batch_times), node.executions)
    };
    let (all, realtime, batches) = times(&o);
    assert_eq!((all, realtime), (batches, 0), "normal-class requests: no real-time batch");
    o.bench.priority_fraction = 1.0;
    let (all, realtime, batches) = times(&o);
    assert!(batches > 0 && all == batches && realtime == batches, "every batch real-time: {all} {realtime} {batches}");
}

#[test]
fn with_spin_wakes_a_worker_told_while_it_spins_takes_no_wake_up_and_a_parked_one_does() {
    let dir = folder(SUITE, "spin_wakes");
    let spinning = one_node_with(&dir, "spin.toml", "max_batch = 1", "max_batch = 1\nidle_spin_us = 5000");
    let mut o = options(spinning, profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.model.wake_us = 100.0;
    o.model.spin_wakes = true;
    let latency = |o: &SimOptions| {
        let l = simulate(o, &engines()).unwrap().points[0].latency.clone();
        (l.min_us, l.max_us)
    };
    o.bench.concurrency = vec![1];
    assert_eq!(latency(&o), (1000, 1000), "told as its last batch ends: spinning, no wake-up");
    o.bench.concurrency = vec![];
    (o.bench.rate, o.bench.arrivals) = (vec![20.0], Arrivals::Constant);
    assert_eq!(latency(&o), (1100, 1100), "50 ms apart, past its 5 ms spin: parked, the wake-up");
    (o.bench.concurrency, o.bench.rate) = (vec![1], vec![]);
    o.model.spin_wakes = false;
    assert_eq!(latency(&o), (1100, 1100), "without --spin-wakes every told worker wakes");
    o.model.spin_wakes = true;
    o.bench.pipeline = Some(realtime_one_node(&dir));
    o.bench.priority_fraction = 1.0;
    assert_eq!(latency(&o), (1100, 1100), "a real-time foreground worker never spins");
    // Two spinning workers on one core, two clients: each worker is told while the other is
    // busy, and waits for the core as a parked one does (its wake-up counted contended).
    let two = one_node_with(&dir, "spin2.toml", "max_batch = 1", "max_batch = 1\nworkers = 2\nidle_spin_us = 5000");
    (o.bench.pipeline, o.bench.priority_fraction, o.bench.concurrency) = (Some(two), 0.0, vec![2]);
    o.bench.policy = vec![BatchingPolicy::Greedy];
    o.model.cores = Some(1.0);
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    let w = &p.nodes[0].wakes;
    let lower = baton::log_buckets::bucket_lower_ns(baton::log_buckets::bucket(100_000));
    assert!(w.contended == w.count && w.contended_buckets.iter().all(|b| b.0 == lower), "{w:?}");
}

#[test]
fn idle_gaps_need_a_profile_that_measured_them() {
    let dir = folder(SUITE, "idle_gaps_refused");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.rate = vec![100.0];
    o.model.idle_gaps = true;
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--idle-gaps") && e.contains("measured no node's idle gaps"), "{e}");
}

#[test]
fn a_sparse_stretch_needs_both_rates_in_order_and_a_known_node() {
    let dir = folder(SUITE, "sparse_refused");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.rate = vec![100.0];
    o.model.sparse_stretch = vec!["a=3".into()];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--sparse-rate") && e.contains("--dense-rate"), "{e}");
    (o.model.sparse_rate, o.model.dense_rate) = (Some(500.0), Some(100.0));
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("below --dense-rate"), "{e}");
    (o.model.sparse_rate, o.model.dense_rate) = (Some(100.0), Some(500.0));
    o.model.sparse_stretch = vec!["z=3".into()];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--sparse-stretch") && e.contains("`z`"), "{e}");
    o.model.sparse_stretch = vec![];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("go with --sparse-stretch"), "{e}");
}

#[test]
fn a_woken_worker_waits_for_a_slice_or_the_running_batchs_end_only_while_every_core_is_taken() {
    let dir = folder(SUITE, "slice");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(1.0);
    o.model.slice_us = 5000.0;
    // One request at a time: its worker always finds the core free.
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!((p.latency.min_us, p.latency.max_us), (1000, 1000));
    // Two workers on one core, two clients: shared, every batch takes 2000 µs. A worker
    // woken while the other runs waits up to a slice (1 ms) while the other has the core
    // alone: some answers come sooner, some later, none more than a slice later, and the
    // core's work is the same (a closed loop's mean stays 2 ms).
    let pipeline = two_workers(&dir);
    o.bench.pipeline = Some(pipeline);
    o.bench.concurrency = vec![2];
    o.bench.policy = vec![BatchingPolicy::Greedy];
    o.model.slice_us = 0.0;
    let shared = simulate(&o, &engines()).unwrap().points[0].latency.clone();
    assert_eq!((shared.min_us, shared.max_us), (2000, 2000));
    o.model.slice_us = 1000.0;
    let sliced = simulate(&o, &engines()).unwrap().points[0].latency.clone();
    assert!(sliced.min_us < 2000 && sliced.max_us > 2000 && sliced.max_us <= 3000, "{sliced:?}");
    assert!((sliced.mean_us - 2000.0).abs() < 5.0, "{sliced:?}");
    o.model.slice_us = -1.0;
    assert!(simulate(&o, &engines()).unwrap_err().contains("--slice-us"));
}

#[test]
fn a_woken_worker_waits_no_longer_than_the_running_batch_even_where_the_slice_is_longer() {
    let dir = folder(SUITE, "slice_or_end");
    // The diamond on one core, a request at a time, 1 ms a batch: `b` and `c` are told
    // together, one runs and the other wakes to a taken core. It waits for a slice (up to
    // 5 ms) or, sooner, `b`'s end, when that thread sleeps and the core is free: so the
    // core never idles while work waits and every answer takes the four batches' 4 ms.
    let batches: Batches = &[(1, &[1000.0]), (8, &[1000.0])];
    let prof = profile(&dir, &[("a", batches), ("b", batches), ("c", batches), ("d", batches)]);
    let mut o = options(diamond(&dir), prof);
    (o.bench.concurrency, o.model.cores, o.model.slice_us) = (vec![1], Some(1.0), 5000.0);
    let l = simulate(&o, &engines()).unwrap().points.remove(0).latency;
    assert!(l.min_us >= 4000 && l.max_us <= 4001, "within a µs of the four batches: {l:?}");
}

/// A `baton bench --json` file of pipeline `one` whose node `a` recorded wake-ups in two
/// buckets: free ones in [2000, 2048) ns and contended ones in [50, 51) ms.
fn recorded_wake_ups(dir: &Path) -> PathBuf {
    let path = dir.join("wakes.json");
    let wakes = r#"{"free_buckets": [[2000, 2048, 7]], "contended_buckets": [[50000000, 51000000, 3]]}"#;
    let text = format!(r#"{{"pipeline": "one", "points": [{{"nodes": [{{"name": "a", "wakes": {wakes}}}]}}]}}"#);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn recorded_wake_ups_are_drawn_by_class_as_the_workers_are_told() {
    let dir = folder(SUITE, "wake_delays");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(1.0);
    o.model.wake_delays = vec![recorded_wake_ups(&dir)];
    // One request at a time: no other worker is busy when one is told, a free wake-up of 2 µs.
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!((p.latency.min_us, p.latency.max_us), (1002, 1002), "{:?}", p.latency);
    let wakes = &p.nodes[0].wakes;
    assert_eq!((wakes.count, wakes.contended, wakes.p50_us), (p.requests, 0, 1.92), "a wake-up a batch, reported");
    // Two workers, one core, two clients: in the measured second each worker is told while
    // the other is busy (running, or told and still waking, as the runtime counts busy), so
    // every wake-up is contended: 50-51 ms, then 1-2 ms of compute on the shared core.
    o.bench.pipeline = Some(two_workers(&dir));
    o.bench.concurrency = vec![2];
    o.bench.policy = vec![BatchingPolicy::Greedy];
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    let l = &p.latency;
    assert!(l.min_us >= 51_000 && l.max_us <= 53_000, "{l:?}");
    assert_eq!(p.nodes[0].wakes.contended, p.nodes[0].wakes.count);
    // Another pipeline's record is refused, naming the file.
    std::fs::write(dir.join("other.json"), r#"{"pipeline": "dia", "points": []}"#).unwrap();
    o.model.wake_delays = vec![dir.join("other.json")];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("other.json") && e.contains("`dia`"), "{e}");
}

/// `one_node`'s pipeline (one row a batch) deciding on 1 ms ticks only, under the collaborative rule.
fn ticks_only(dir: &Path) -> PathBuf {
    let scheduler = "[scheduler]\npolicy = \"collaborative\"\ntick_us = 1000\ndecide_on_arrival = false\n[inputs.x]";
    one_node_with(dir, "ticks.toml", "[inputs.x]", scheduler)
}

#[test]
fn recorded_tick_lateness_delays_each_tick_by_the_class_of_the_last_decision() {
    let dir = folder(SUITE, "tick_delays");
    let mut o = options(ticks_only(&dir), profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(1.0);
    // On time: a request sent as the last is answered (100 µs after a tick) waits 900 µs for the next.
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1000, 1000), "{:?}", p.latency);
    // Ticks late by 200 µs after a decision that left a core free, 300 µs after one that took every core.
    let path = dir.join("ticks.json");
    let ticks = r#"{"free_buckets": [[200000, 200001, 4]], "contended_buckets": [[300000, 300001, 2]]}"#;
    std::fs::write(&path, format!(r#"{{"pipeline": "one", "points": [{{"nodes": [], "scheduler_ticks": {ticks}}}]}}"#))
        .unwrap();
    o.model.tick_delays = vec![path];
    // One core: the decision that runs the batch takes it, so the next tick is 1.3 ms on.
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1300, 1300), "{:?}", p.latency);
    o.model.cores = Some(2.0);
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1200, 1200), "{:?}", p.latency);
    // A record without ticks (a remote run's) is refused, naming the option and the file.
    let none = dir.join("none.json");
    std::fs::write(&none, r#"{"pipeline": "one", "points": [{"nodes": []}]}"#).unwrap();
    o.model.tick_delays = vec![none];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--tick-delays") && e.contains("none.json"), "{e}");
}

#[test]
fn a_tasks_queue_time_is_its_wait_to_be_picked_and_its_workers_wake_up_and_each_hand_on_is_counted() {
    let dir = folder(SUITE, "queue_times");
    let mut o = options(ticks_only(&dir), profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(1.0);
    o.model.wake_us = 50.0;
    o.model.hand_on_us = vec!["a=30".into()];
    // Each request is sent as the last is answered: a tick's decision, 50 µs to the worker's
    // start, 100 µs compute and a 30 µs hand-on later. It waits 820 µs for the next tick
    // (picked) and 50 more for the worker.
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1000, 1000), "{:?}", p.latency);
    let lower_us = |us: u64| baton::log_buckets::bucket_lower_ns(baton::log_buckets::bucket(us * 1000)) as f64 / 1000.0;
    let (n, q) = (&p.nodes[0], &p.nodes[0].queue);
    assert_eq!((q.p50_us, q.p99_us), (lower_us(870), lower_us(870)), "{q:?}");
    assert_eq!((q.picked_p50_us, q.picked_p99_us), (lower_us(820), lower_us(820)), "{q:?}");
    assert_eq!((n.hand_on_p99_us, n.mean_hand_on_us), (lower_us(30), 30.0), "{n:?}");
    let lower_ns = baton::log_buckets::bucket_lower_ns(baton::log_buckets::bucket(30_000));
    assert!(
        matches!(n.hand_on_buckets[..], [(lower, _, count)] if lower == lower_ns && count == n.executions),
        "every batch's hand-on in its bucket: {:?}",
        n.hand_on_buckets
    );
}

#[test]
fn a_simulated_point_reports_the_core_time_its_jobs_took_as_a_real_run_reads_its_process_cpu() {
    let dir = folder(SUITE, "busy_cores");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(2.0);
    o.model.wake_us = 100.0;
    // One request at a time: 100 µs waking, 100 µs on one core of two.
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    let cpu = p.cpu.expect("a simulated point reports its CPU");
    assert!((cpu.busy_cores - 0.5).abs() < 0.01, "{cpu:?}");
    assert!((cpu.compute_us_per_request - 100.0).abs() < 0.5, "{cpu:?}");
    assert!(cpu.runtime_us_per_request.abs() < 0.5, "no runtime CPU terms: {cpu:?}");
    // The runtime's CPU per request is a job on the cores too.
    o.model.cpu = CpuUs { request_us: 20.0, ..CpuUs::default() };
    let cpu = simulate(&o, &engines()).unwrap().points.remove(0).cpu.unwrap();
    assert!((cpu.runtime_us_per_request - 20.0).abs() < 0.5, "{cpu:?}");
}

#[test]
fn the_scheduler_threads_cpu_per_tick_takes_its_share_of_the_cores() {
    let dir = folder(SUITE, "tick_cpu");
    let pipeline = one_node_with(&dir, "ticked.toml", "[inputs.x]", "[scheduler]\ntick_us = 1000\n[inputs.x]");
    let mut o = options(pipeline, profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(1.0);
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    assert_eq!(p.throughput_rps, 10_000.0, "100 µs batches back to back");
    // 250 µs of tick work each ms on the one core: half the core for 500 µs, then all of it
    // for the batches, so they get 750 µs of work in every ms.
    o.model.cpu = CpuUs { tick_us: 250.0, ..CpuUs::default() };
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    assert!((p.throughput_rps - 7_500.0).abs() <= 75.0, "{}", p.throughput_rps);
    let share = p.nodes[0].cpu_per_wall.unwrap();
    assert!((share - 0.75).abs() <= 0.01, "the batches ran {share} of their time on the core");
    o.model.cpu = CpuUs { tick_us: -1.0, ..CpuUs::default() };
    assert!(simulate(&o, &engines()).unwrap_err().contains("--tick-cpu-us"));
}

#[test]
fn a_workers_decision_after_its_batch_takes_its_share_of_the_cores_and_delays_no_output() {
    let dir = folder(SUITE, "decision_cpu");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(1.0);
    o.model.cpu = CpuUs { decision_us: 500.0, ..CpuUs::default() };
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    // The answer goes at the batch's end, and the client's next batch shares the one core
    // with the decision: both at half speed for 1000 µs, then the batch's last 500 µs alone.
    assert!((p.throughput_rps - 666.7).abs() <= 7.0, "{}", p.throughput_rps);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1500, 1500));
    o.model.cores = Some(2.0);
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    assert_eq!(p.throughput_rps, 1000.0, "on two cores the decision takes the other one");
    assert_eq!(p.latency.max_us, 1000, "and delays no answer");
    o.model.cpu = CpuUs { decision_us: -1.0, ..CpuUs::default() };
    assert!(simulate(&o, &engines()).unwrap_err().contains("--decision-cpu-us"));
}

#[test]
fn the_load_generators_sends_run_one_at_a_time_and_latency_counts_from_the_send_or_the_schedule() {
    let dir = folder(SUITE, "generator");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.rate = vec![1000.0];
    o.bench.arrivals = Arrivals::Constant;
    o.model.cores = Some(2.0);
    let latency = |o: &SimOptions| {
        let p = simulate(o, &engines()).unwrap().points.remove(0);
        (p.latency.min_us, p.latency.max_us)
    };
    assert_eq!(latency(&o), (100, 100), "no generator: each request's one batch");
    // A 300 µs send each ms, started on time: the request reaches the runtime when it ends.
    o.model.cpu = CpuUs { send_us: 300.0, ..CpuUs::default() };
    assert_eq!(latency(&o), (400, 400), "counted from the send");
    o.bench.latency_from_schedule = true;
    assert_eq!(latency(&o), (400, 400), "the same from the schedule: no send waits");
    // A 1.5 ms send each ms: each send waits for the one before, later with every request.
    o.model.cpu = CpuUs { send_us: 1500.0, ..CpuUs::default() };
    let (first, last) = latency(&o);
    assert!(first >= 1600 && last > 2 * first, "the lag grows: {first}..{last} µs");
    o.bench.latency_from_schedule = false;
    assert_eq!(latency(&o), (1600, 1600), "from the send the wait does not show");
    o.model.cpu = CpuUs { send_us: -1.0, ..CpuUs::default() };
    assert!(simulate(&o, &engines()).unwrap_err().contains("--send-cpu-us"));
}

/// One node of 100-µs batches on two cores, sent at constant gaps, latency counted from the
/// schedule: the generator's sends and wakes show whole in each latency. With the folder
/// of its files, to hold while the options are used.
fn on_schedule(test: &str) -> (Scratch, SimOptions) {
    let dir = folder(SUITE, test);
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[100.0])])]));
    o.bench.arrivals = Arrivals::Constant;
    o.bench.latency_from_schedule = true;
    o.model.cores = Some(2.0);
    (dir, o)
}

#[test]
fn a_send_due_while_the_generator_sleeps_starts_when_it_wakes_and_one_queued_does_not_wait_again() {
    let (_dir, mut o) = on_schedule("generator_wake");
    let latency = |o: &SimOptions| {
        let p = simulate(o, &engines()).unwrap().points.remove(0);
        (p.latency.min_us, p.latency.max_us)
    };
    // 1000 requests/s, 10 µs sends: the generator sleeps between them and wakes 40 µs late.
    o.bench.rate = vec![1000.0];
    o.model.cpu = CpuUs { send_us: 10.0, send_wake_us: 40.0, ..CpuUs::default() };
    assert_eq!(latency(&o), (150, 150), "the wake, the send, the batch");
    o.model.cpu.send_wake_us = 0.0;
    assert_eq!(latency(&o), (110, 110), "without the term");
    // 10 000 requests/s (100 µs apart), 150 µs sends: after the first the generator never
    // sleeps, so only the first send waits for a wake and every latency moves by it once.
    o.bench.rate = vec![10_000.0];
    o.model.cpu = CpuUs { send_us: 150.0, send_wake_us: 40.0, ..CpuUs::default() };
    let mean = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0).latency.mean_us;
    let (woken, (min, max)) = (mean(&o), latency(&o));
    assert!(max > min + 1000, "the sends fall behind: {min}..{max} µs");
    o.model.cpu.send_wake_us = 0.0;
    let moved = woken - mean(&o);
    assert!((moved - 40.0).abs() < 0.5, "one wake, not one per send: every latency moved {moved} µs");
    o.model.cpu.send_wake_us = -1.0;
    assert!(simulate(&o, &engines()).unwrap_err().contains("--send-wake-us"));
}

#[test]
fn the_generators_wake_by_sleep_takes_its_sleeps_class_and_the_report_counts_the_sends_by_it() {
    let (_dir, mut o) = on_schedule("generator_wake_by_sleep");
    // Sleeps below 10, 30, 100 and 300 µs, and longer, wake 5, 10, 15, 20 and 40 µs late.
    let by_sleep = vec![5.0, 10.0, 15.0, 20.0, 40.0];
    o.model.cpu = CpuUs { send_us: 10.0, send_wake_by_sleep_us: by_sleep, ..CpuUs::default() };
    let run = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0);
    // 1000 requests/s: after each 10 µs send the generator sleeps about 950 µs (the longest
    // class); 10 000/s: 75 µs (below 100).
    for (rate, wake, below) in [(1000.0, 40.0, None), (10_000.0, 15.0, Some(100))] {
        o.bench.rate = vec![rate];
        let p = run(&o);
        let expected = (100.0 + 10.0 + wake) as u64;
        assert_eq!((p.latency.min_us, p.latency.max_us), (expected, expected), "at {rate}/s");
        let classes: Vec<(bool, Option<u64>, f64)> =
            p.send_lags.iter().map(|c| (c.slept, c.slept_below_us, c.mean_lag_us)).collect();
        assert_eq!(classes, [(true, below, wake)], "at {rate}/s");
        assert_eq!(p.mean_send_lag_us, wake);
    }
    o.model.cpu.send_wake_by_sleep_us = vec![5.0, 10.0];
    assert!(simulate(&o, &engines()).unwrap_err().contains("--send-wake-by-sleep takes 5 values"));
    o.model.cpu.send_wake_by_sleep_us = vec![5.0, 10.0, 15.0, -1.0, 40.0];
    assert!(simulate(&o, &engines()).unwrap_err().contains("--send-wake-by-sleep"));
}

#[test]
fn the_generators_run_holds_a_core_and_a_job_preempted_there_waits_while_another_core_idles() {
    let dir = folder(SUITE, "generator_holds_core");
    // x feeds two nodes at once, b and c (920 µs a batch), each on a core of two; a 100 µs
    // send each ms. Each send starts while both batches still run.
    let mut text = String::from(
        "[pipeline]\nname = \"fork\"\n[scheduler]\ncompute_budget = 2.0\n[inputs.x]\nto = [\"b.x\", \"c.x\"]\n\
         [outputs.yb]\nfrom = \"b.y\"\n[outputs.yc]\nfrom = \"c.y\"\n",
    );
    text += &node("b", "x", "y", 1);
    text += &node("c", "x", "y", 1);
    let pipeline = dir.join("fork.toml");
    std::fs::write(&pipeline, text).unwrap();
    let mut o = options(pipeline, profile(&dir, &[("b", &[(1, &[920.0])]), ("c", &[(1, &[920.0])])]));
    (o.bench.rate, o.bench.arrivals) = (vec![1000.0], Arrivals::Constant);
    o.model.cpu = CpuUs { send_us: 100.0, ..CpuUs::default() };
    o.model.cores = Some(2.0);
    let latency = |o: &SimOptions| {
        let l = simulate(o, &engines()).unwrap().points.remove(0).latency;
        (l.min_us, l.max_us)
    };
    let compute = |o: &SimOptions| {
        let p = simulate(o, &engines()).unwrap().points.remove(0);
        p.nodes.iter().map(|n| n.mean_compute_us).sum::<f64>() / 2.0
    };
    // Shared: the send and the two batches run at 2/3 of a core each until the batches end,
    // which costs each batch a third of what the send overlapped (at most 60 µs in all).
    let (min, max) = latency(&o);
    assert!(min >= 1020 && max <= 1060, "shared: {min}..{max} µs");
    // Held: the send takes a core whole; the batch it preempted waits the send's 100 µs on
    // that core while its sibling ends on the other and leaves it idle. Each time the same
    // node's batch is the one held, its next starts 20 µs later (the run of 1500 draws holds
    // runs of ten or so).
    o.model.generator_holds_core = true;
    let (min, max) = latency(&o);
    assert!(min >= 1120 && max <= 1400, "held: {min}..{max} µs");
    let held = compute(&o);
    assert!(held >= 960.0, "one batch of two a request is held 100 µs: {held} µs a batch");
    // Core queues hold it too: the send preempts the batch on the generator's core. And the
    // node whose batch ends last starts its next on the core left free, the generator's,
    // every time: it is held at every send and falls further behind each time.
    (o.model.generator_holds_core, o.model.core_queues) = (false, true);
    let (min, max) = latency(&o);
    assert!(min >= 1120 && max > 2000, "queued: {min}..{max} µs");
    (o.model.generator_holds_core, o.model.core_queues) = (true, false);
    // With a core free as the run starts, it preempts nothing: the send, then the batches
    // undisturbed.
    o.model.cores = Some(3.0);
    assert_eq!(latency(&o), (1020, 1020), "a free core: no job waits behind the generator");
    // A generator at nice 10 holds no core: it shares them by its weight (110 against the
    // batches' 1024), so its slow sends stretch the batches by 5% where they overlap.
    o.model.cores = Some(2.0);
    o.bench.generator_nice = 10;
    let niced = compute(&o);
    assert!(niced > 920.0 && niced < held - 15.0, "at nice 10 no batch is held: {niced} against {held} µs a batch");
    o.bench.generator_policy = GeneratorPolicy::Realtime;
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--generator-nice") && e.contains("realtime"), "{e}");
    (o.bench.generator_policy, o.bench.generator_nice) = (GeneratorPolicy::Normal, 20);
    assert!(simulate(&o, &engines()).unwrap_err().contains("between 0 and 19"));
    o.bench.generator_nice = 0;
    o.model.cpu.send_us = 0.0;
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--generator-holds-core") && e.contains("--send-cpu-us"), "{e}");
}

/// Three workers of one node, 100 µs a batch, three clients, two cores.
fn three_workers_on_two_cores(dir: &Path) -> SimOptions {
    let three = one_node_with(dir, "three.toml", "max_batch = 1", "max_batch = 1\nworkers = 3");
    let budget = std::fs::read_to_string(&three)
        .unwrap()
        .replace("name = \"one\"", "name = \"one\"\n[scheduler]\ncompute_budget = 3.0");
    std::fs::write(&three, budget).unwrap();
    let mut o = options(three, profile(dir, &[("a", &[(1, &[100.0])])]));
    o.bench.concurrency = vec![3];
    o.model.cores = Some(2.0);
    o
}

#[test]
fn under_core_queues_a_job_waits_on_its_core_while_another_core_is_idle() {
    let dir = folder(SUITE, "core_queues");
    let mut o = three_workers_on_two_cores(&dir);
    let latency = |o: &SimOptions| {
        let l = simulate(o, &engines()).unwrap().points.remove(0).latency;
        (l.min_us, l.max_us)
    };
    assert_eq!(latency(&o), (150, 150), "one pool: three batches at 2/3 of a core each");
    // Queues: two batches take a core each, the third waits on one of them, and when the
    // other core's batch ends it stays where it is.
    o.model.core_queues = true;
    assert_eq!(latency(&o), (100, 200), "a core each, or behind one");
    o.model.cores = Some(1.5);
    assert!(simulate(&o, &engines()).unwrap_err().contains("whole number of cores"));
    (o.model.cores, o.model.generator_holds_core, o.model.cpu.send_us) = (Some(2.0), true, 10.0);
    assert!(simulate(&o, &engines()).unwrap_err().contains("give one"));
}

#[test]
fn under_whole_cores_a_job_waits_for_the_first_core_that_frees_and_none_shares_one() {
    let dir = folder(SUITE, "whole_cores");
    let mut o = three_workers_on_two_cores(&dir);
    o.model.whole_cores = true;
    let p = simulate(&o, &engines()).unwrap().points.remove(0);
    // Two batches hold a core each and take 100 µs; the third waits for the first to end.
    assert_eq!((p.latency.min_us, p.latency.max_us), (100, 200), "a whole core each, or after one");
    // A job's time counts from its start, its wait for a core within it: half the batches
    // ran at once (100 µs), half waited a whole batch (200 µs), none shared a core.
    let times = &p.nodes[0].batch_times[0].buckets;
    assert_eq!(times.iter().map(|b| b.0).collect::<Vec<_>>(), vec![98_304, 196_608], "{times:?}");
    assert_eq!(times[0].2, times[1].2);
    assert!((p.throughput_rps - 20_000.0).abs() < 100.0, "both cores always busy: {}", p.throughput_rps);
    o.model.core_queues = true;
    assert!(simulate(&o, &engines()).unwrap_err().contains("--whole-cores"));
    (o.model.core_queues, o.model.cores) = (false, Some(1.5));
    assert!(simulate(&o, &engines()).unwrap_err().contains("--whole-cores needs a whole number of cores"));
}

#[test]
fn closed_loop_clients_send_in_turn_so_batches_after_the_first_need_not_hold_every_client() {
    let dir = folder(SUITE, "client_sends");
    // One node, 100 µs a batch of any size up to 8, eight clients, two cores.
    let sizes: Vec<(usize, &[f64])> = (1..=8).map(|b| (b, &[100.0][..])).collect();
    let mut o = options(one_node(&dir, 8), profile(&dir, &[("a", &sizes)]));
    o.bench.concurrency = vec![8];
    o.model.cores = Some(2.0);
    let point = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0);
    let p = point(&o);
    assert_eq!(p.nodes[0].mean_batch, 8.0, "without sends the clients step together");
    // A 30 µs send each, in turn: the first client's request starts a batch while the others
    // are still sending, so batches hold fewer than all eight.
    o.model.cpu = CpuUs { client_send_us: 30.0, ..CpuUs::default() };
    let p = point(&o);
    assert!(p.nodes[0].mean_batch < 6.0, "mean batch {}", p.nodes[0].mean_batch);
    assert!(p.latency.min_us >= 130, "a send and a batch at least: {} µs", p.latency.min_us);
}

#[test]
fn real_time_sends_leave_on_schedule_while_normal_ones_wait_behind_real_time_batches() {
    let dir = folder(SUITE, "generator_policy");
    // One core; every batch (all requests priority) runs real-time for 1 ms; 500 requests/s.
    let mut o = options(realtime_one_node(&dir), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.rate = vec![500.0];
    o.bench.priority_fraction = 1.0;
    o.bench.latency_from_schedule = true;
    o.model.cores = Some(1.0);
    o.model.cpu = CpuUs { send_us: 100.0, ..CpuUs::default() };
    let lag = |o: &SimOptions| {
        let from_schedule = simulate(o, &engines()).unwrap().points.remove(0).latency.mean_us;
        let mut from_send = o.clone();
        from_send.bench.latency_from_schedule = false;
        let from_send = simulate(&from_send, &engines()).unwrap().points.remove(0).latency.mean_us;
        from_schedule - from_send
    };
    assert_eq!(o.bench.generator_policy, GeneratorPolicy::Normal, "the bench's default");
    o.bench.generator_policy = GeneratorPolicy::Realtime;
    let realtime = lag(&o);
    // At the normal policy a send due during a batch gets 5% of the core until the batch ends.
    o.bench.generator_policy = GeneratorPolicy::Normal;
    let normal = lag(&o);
    assert!(realtime < 20.0, "above the workers a send waits only for the sends before it: {realtime} µs");
    assert!(normal > 150.0, "behind the real-time batches: {normal} µs");
}

/// A `baton stalls` record: `stalls` stalls of `us` µs in one second on `core`, none on the other.
fn stall_record(dir: &Path, core: usize, stalls: usize, us: f64) -> PathBuf {
    let lengths = vec![us; stalls];
    let cores: Vec<serde_json::Value> = (0..2)
        .map(|c| serde_json::json!({"core": c, "stalls_us": if c == core { lengths.clone() } else { vec![] }}))
        .collect();
    let record = serde_json::json!({"kind": "baton-core-stalls", "threshold_us": 2.0, "duration_s": 1.0,
        "read_us": 0.03, "cores": cores});
    let path = dir.join(format!("stalls_{core}.json"));
    std::fs::write(&path, record.to_string()).unwrap();
    path
}

#[test]
fn a_core_stall_stops_the_worker_pinned_there_and_a_loose_one_by_chance() {
    let dir = folder(SUITE, "core_stalls");
    // Concurrency 1 on one node of 1 ms batches, two cores; core 0 stalls 1000 times a
    // second for 200 µs (covering 1 - e^-0.2 = 18% of the time).
    let pinned = one_node_with(&dir, "pinned.toml", "max_batch = 1", "max_batch = 1\ncores = [0]");
    let mut o = options(pinned, profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.bench.duration = std::time::Duration::from_secs(20);
    o.model.cores = Some(2.0);
    let throughput = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0).throughput_rps;
    assert_eq!(throughput(&o), 1000.0, "without stalls");
    o.model.core_stalls = Some(stall_record(&dir, 0, 1000, 200.0));
    let stalled = throughput(&o);
    assert!((790.0..850.0).contains(&stalled), "the pinned worker stops 18% of the time: {stalled}/s");
    o.model.core_stalls = Some(stall_record(&dir, 1, 1000, 200.0));
    assert_eq!(throughput(&o), 1000.0, "the other core's stalls leave the pinned worker alone");
    // Not pinned: a stall of core 1 takes the lone batch with the chance it runs there,
    // one in two (covering 1 - e^-0.1 = 9.5% of the time).
    o.bench.pipeline = Some(one_node(&dir, 1));
    let loose = throughput(&o);
    assert!((880.0..930.0).contains(&loose), "the loose worker stops half as often: {loose}/s");
}

#[test]
fn a_stall_holds_the_idle_threads_on_its_core_only_when_asked() {
    let dir = folder(SUITE, "stalls_hold_idle");
    // 100 requests a second, evenly spaced, on one node of 100 µs batches whose worker spins
    // for work between them (10 s of spinning: all the time); core 0 stalls 10 times a
    // second for 5 ms. Not pinned, the worker is on core 0 with the chance 1 in 2.
    let spinning = one_node_with(&dir, "spinning.toml", "max_batch = 1", "max_batch = 1\nidle_spin_us = 10000000");
    let mut o = options(spinning, profile(&dir, &[("a", &[(1, &[100.0])])]));
    (o.bench.concurrency, o.bench.rate, o.bench.arrivals) = (vec![], vec![100.0], Arrivals::Constant);
    o.bench.duration = std::time::Duration::from_secs(60);
    o.model.cores = Some(2.0);
    o.model.core_stalls = Some(stall_record(&dir, 0, 10, 5000.0));
    let latency = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0).latency;
    let apart = latency(&o);
    assert!(apart.p99_us < 200, "a stall stops a running batch only, rarely caught: {apart:?}");
    o.model.stalls_hold_idle = true;
    let held = latency(&o);
    // The worker stands held 10 × 5 ms × 1/2 = 2.5% of the time; a request that comes
    // meanwhile waits for the stall's end, 2.5 ms on average: 60 µs more on the mean.
    assert!(held.p99_us >= 1000, "a request behind a held worker waits out the stall: {held:?}");
    let more = held.mean_us - apart.mean_us;
    assert!((30.0..100.0).contains(&more), "{more} µs more on the mean");
    // The generator asleep between its sends (1 µs each, latency from the schedule) is held
    // the same way, and the worker pinned to the other core is not.
    let pinned =
        one_node_with(&dir, "pinned.toml", "max_batch = 1", "max_batch = 1\nidle_spin_us = 10000000\ncores = [1]");
    o.bench.pipeline = Some(pinned);
    o.bench.latency_from_schedule = true;
    o.model.cpu = CpuUs { send_us: 1.0, ..CpuUs::default() };
    let generator_held = latency(&o);
    let more = generator_held.mean_us - apart.mean_us;
    assert!((30.0..100.0).contains(&more), "the sends wait out the stall: {more} µs more on the mean");
    o.model.stalls_hold_idle = false;
    assert!(latency(&o).p99_us < 200, "not asked: the sleeping generator is not held");
    o.model.core_stalls = None;
    o.model.stalls_hold_idle = true;
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--stalls-hold-idle") && e.contains("--core-stalls"), "{e}");
}

#[test]
fn recorded_batch_times_stretch_normal_class_batches_over_the_profile() {
    let dir = folder(SUITE, "batch_times");
    let pipeline = realtime_one_node(&dir);
    // The runtime ran node `a`'s one-row batches in 2.0-2.1 ms, twice the profile's 1 ms.
    let record = dir.join("times.json");
    let node = r#"{"name": "a", "batch_times": [{"batch_size": 1, "buckets": [[2000000, 2100000, 9]]}]}"#;
    std::fs::write(&record, format!(r#"{{"pipeline": "one", "points": [{{"nodes": [{node}]}}]}}"#)).unwrap();
    let mut o = options(pipeline, profile(&dir, &[("a", &[(1, &[1000.0, 1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.compute_scale = vec!["a=5".into()];
    o.model.batch_times = vec![record];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert!(p.latency.min_us >= 2000 && p.latency.max_us <= 2100, "stretched, not scaled: {:?}", p.latency);
    assert!(p.nodes[0].compute_p99_us >= 1900.0, "the report shows the simulated batch times");
    o.bench.priority_fraction = 1.0;
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!((p.latency.min_us, p.latency.max_us), (1000, 1000), "real-time batches keep the profile's times");
}

#[test]
fn measured_terms_add_to_each_hop_and_cores_are_shared() {
    let dir = folder(SUITE, "terms");
    // c=2 on one node with two workers and one core: both batches run at half speed.
    let pipeline = two_workers(&dir);
    let mut o = options(pipeline, profile(&dir, &[("a", &[(1, &[900.0])])]));
    o.bench.concurrency = vec![2];
    o.model.cores = Some(1.0);
    o.model.wake_us = 100.0;
    o.model.hop_us = 50.0;
    o.bench.policy = vec![BatchingPolicy::Greedy];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    // Each request: 100 µs wake, 1800 µs of shared compute, 50 µs hand-off (under
    // 2048 µs, where the histogram holds every µs).
    assert_eq!((p.latency.min_us, p.latency.max_us), (1950, 1950));
    assert_eq!(p.nodes[0].mean_compute_us, 1800.0);
}

#[test]
fn a_nodes_hand_on_adds_to_its_batches_hops_and_unknown_nodes_are_named() {
    let dir = folder(SUITE, "hand_on");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.hop_us = 50.0;
    o.model.hand_on_us = vec!["a=200".into()];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    // Each request: 1000 µs of compute, then 200 µs of hand-on and the 50 µs hop.
    assert_eq!((p.latency.min_us, p.latency.max_us), (1250, 1250));
    assert_eq!(p.nodes[0].mean_hand_on_us, 200.0, "the report shows the hand-on");
    o.model.hand_on_us = vec!["nope=1".into()];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--hand-on-us") && e.contains("`nope`"), "{e}");
}

#[test]
fn a_nodes_route_time_delays_its_outputs_without_holding_its_worker() {
    let dir = folder(SUITE, "route");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.route_us = vec!["a=300".into()];
    let p = &simulate(&o, &engines()).unwrap().points[0];
    assert_eq!((p.latency.min_us, p.latency.max_us), (1300, 1300), "1000 µs of compute, then 300 µs on the way");
    // Two clients: with the route the worker runs a batch every 1000 µs; a hop of the same
    // 300 µs holds it for 1300.
    o.bench.concurrency = vec![2];
    let throughput = |o: &SimOptions| simulate(o, &engines()).unwrap().points[0].throughput_rps;
    assert!((throughput(&o) - 1000.0).abs() < 5.0, "{}", throughput(&o));
    o.model.route_us = Vec::new();
    o.model.hop_us = 300.0;
    assert!((throughput(&o) - 1000.0 / 1.3).abs() < 5.0, "{}", throughput(&o));
    o.model.route_us = vec!["nope=1".into()];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--route-us") && e.contains("`nope`"), "{e}");
}

#[test]
fn a_real_time_batch_takes_its_nodes_real_time_route_and_a_normal_one_its_route() {
    let dir = folder(SUITE, "realtime_route");
    let mut o = options(realtime_one_node(&dir), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.route_us = vec!["a=300".into()];
    o.model.realtime_route_us = vec!["a=100".into()];
    let latency = |o: &SimOptions| {
        let p = &simulate(o, &engines()).unwrap().points[0];
        (p.latency.min_us, p.latency.max_us)
    };
    assert_eq!(latency(&o), (1300, 1300), "no priority task: normal batches, the route");
    o.bench.priority_fraction = 1.0;
    assert_eq!(latency(&o), (1100, 1100), "every batch real-time: its own route");
    o.model.realtime_route_us = vec![];
    assert_eq!(latency(&o), (1300, 1300), "without one a real-time batch takes the route");
    o.model.realtime_route_us = vec!["nope=1".into()];
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--realtime-route-us") && e.contains("`nope`"), "{e}");
}

#[test]
fn a_real_time_batchs_worker_wakes_after_its_own_term_and_records_it_in_its_class() {
    let dir = folder(SUITE, "realtime_wake");
    let mut o = options(realtime_one_node(&dir), profile(&dir, &[("a", &[(1, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.model.wake_us = 300.0;
    o.model.realtime_wake_us = Some(100.0);
    let run = |o: &SimOptions| simulate(o, &engines()).unwrap().points.remove(0);
    let p = run(&o);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1300, 1300), "no priority task: normal batches, the wake term");
    assert_eq!(p.nodes[0].wakes.realtime, 0);
    o.bench.priority_fraction = 1.0;
    let p = run(&o);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1100, 1100), "every batch real-time: its own wake term");
    assert_eq!((p.nodes[0].wakes.realtime, p.nodes[0].wakes.count), (p.requests, p.requests), "in its class");
    // Drawn from a record's real-time wake-ups (50-51 µs) in place of the term; its free
    // ones (2 ms) draw for no worker.
    let record = dir.join("realtime_wakes.json");
    let wakes = r#"{"free_buckets": [[2000000, 2048000, 5]], "contended_buckets": [],
        "realtime_buckets": [[50000, 51000, 3]]}"#;
    let text = format!(r#"{{"pipeline": "one", "points": [{{"nodes": [{{"name": "a", "wakes": {wakes}}}]}}]}}"#);
    std::fs::write(&record, text).unwrap();
    o.model.realtime_wake_delays = vec![record];
    let p = run(&o);
    assert!(p.latency.min_us >= 1050 && p.latency.max_us <= 1051, "the real-time draws: {:?}", p.latency);
    o.bench.priority_fraction = 0.0;
    let p = run(&o);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1300, 1300), "normal workers keep the wake term");
    (o.model.realtime_wake_delays, o.bench.priority_fraction) = (vec![], 1.0);
    o.model.realtime_wake_us = None;
    let p = run(&o);
    assert_eq!(
        (p.latency.min_us, p.latency.max_us),
        (1300, 1300),
        "without one a real-time worker takes the wake term"
    );
    o.model.realtime_wake_us = Some(-1.0);
    let e = simulate(&o, &engines()).unwrap_err();
    assert!(e.contains("--realtime-wake-us"), "{e}");
}

#[test]
fn the_runtime_cpu_of_a_request_adds_to_its_latency_by_hand() {
    let dir = folder(SUITE, "cpu_latency");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[800.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cpu = CpuUs { request_us: 100.0, batch_us: 150.0, task_us: 50.0, off_path: false, ..CpuUs::default() };
    let p = &simulate(&o, &engines()).unwrap().points[0];
    // Alone on the cores: 100 µs entering, 800 µs of batch, 150 + 50 µs handing on.
    assert_eq!((p.latency.min_us, p.latency.max_us), (1100, 1100));
    assert_eq!(p.nodes[0].mean_compute_us, 800.0);
}

#[test]
fn runtime_cpu_off_the_path_delays_no_request_but_takes_its_share_of_the_cores() {
    let dir = folder(SUITE, "cpu_beside");
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &[800.0])])]));
    o.bench.concurrency = vec![1];
    o.model.cores = Some(3.0);
    o.model.cpu = CpuUs { request_us: 100.0, batch_us: 150.0, task_us: 50.0, off_path: true, ..CpuUs::default() };
    let p = &simulate(&o, &engines()).unwrap().points[0];
    // A request's entering, its batch and the previous batch's handing-on each have a
    // core: nothing delays the request, 800 µs each.
    assert_eq!((p.latency.min_us, p.latency.max_us), (800, 800));
    // Two workers on one core with a backlog: each request still costs the core 800 + 200 µs.
    let pipeline = two_workers(&dir);
    o.bench.pipeline = Some(pipeline);
    o.bench.concurrency = vec![8];
    o.bench.policy = vec![BatchingPolicy::Greedy];
    o.model.cores = Some(1.0);
    o.model.cpu = CpuUs { request_us: 0.0, batch_us: 150.0, task_us: 50.0, off_path: true, ..CpuUs::default() };
    let rate = simulate(&o, &engines()).unwrap().points[0].throughput_rps;
    assert!((999.0..=1001.0).contains(&rate), "{rate}");
}

#[test]
fn a_pinned_batch_keeps_its_core_from_the_runtimes_other_jobs_while_another_core_is_left() {
    let dir = folder(SUITE, "pinned_core");
    let pinned = one_node_with(&dir, "pinned.toml", "max_batch = 1", "max_batch = 1\ncores = [0]");
    let mut o = options(pinned, profile(&dir, &[("a", &[(1, &[800.0])])]));
    o.bench.rate = vec![1000.0];
    o.model.cores = Some(2.0);
    // Each request's entering is a job of 1.5 ms beside the batches: at 1000 requests/s,
    // one and a half of them run on average, often two or more while a batch does.
    o.model.cpu = CpuUs { request_us: 1500.0, off_path: true, ..CpuUs::default() };
    let compute = |o: &SimOptions| simulate(o, &engines()).unwrap().points[0].nodes[0].mean_compute_us;
    assert_eq!(compute(&o), 800.0, "the pinned batch runs alone on its core; the others share the one left");
    o.bench.pipeline = Some(one_node(&dir, 1));
    let loose = compute(&o);
    assert!(loose > 850.0, "not pinned, the batch shares both cores with the others: {loose}");
    o.bench.pipeline = Some(one_node_with(&dir, "pinned.toml", "max_batch = 1", "max_batch = 1\ncores = [0]"));
    o.model.cores = Some(1.0);
    let one_core = compute(&o);
    assert!(one_core > 850.0, "no core left for the others: every job shares the one: {one_core}");
}

#[test]
fn the_runtime_cpu_of_a_batch_takes_its_share_of_the_cores() {
    let dir = folder(SUITE, "cpu_share");
    // Two workers, one core, always a backlog: the core never idles, so each
    // request costs the core its batch (800 µs) and its hand-on (150 + 50 µs):
    // 1000 requests a second, where the batches alone would give 1250.
    let pipeline = two_workers(&dir);
    let mut o = options(pipeline, profile(&dir, &[("a", &[(1, &[800.0])])]));
    o.bench.concurrency = vec![8];
    o.bench.policy = vec![BatchingPolicy::Greedy];
    o.model.cores = Some(1.0);
    let without = simulate(&o, &engines()).unwrap().points[0].throughput_rps;
    o.model.cpu = CpuUs { request_us: 0.0, batch_us: 150.0, task_us: 50.0, off_path: false, ..CpuUs::default() };
    let with = simulate(&o, &engines()).unwrap().points[0].throughput_rps;
    assert!((1249.0..=1251.0).contains(&without), "{without}");
    assert!((999.0..=1001.0).contains(&with), "{with}");
}

#[test]
fn a_simulated_batch_runs_on_a_core_the_share_of_its_time_the_shared_cores_give_it() {
    let dir = folder(SUITE, "on_core");
    let mut o = options(two_workers(&dir), profile(&dir, &[("a", &[(1, &[800.0])])]));
    o.bench.policy = vec![BatchingPolicy::Greedy];
    o.model.cores = Some(1.0);
    o.bench.concurrency = vec![1, 8];
    let report = simulate(&o, &engines()).unwrap();
    let share = |i: usize| report.points[i].nodes[0].cpu_per_wall.unwrap();
    assert_eq!(share(0), 1.0, "one request at a time: a batch has the core to itself");
    // Two workers always busy on one core: each batch runs at half speed, 1600 µs for 800 of work.
    assert!((share(1) - 0.5).abs() < 0.01, "{}", share(1));
    assert!((report.points[1].nodes[0].mean_compute_us - 1600.0).abs() < 20.0);
}

#[test]
fn an_outlier_fence_drops_the_profiles_far_tail() {
    let dir = folder(SUITE, "fence");
    let mut samples = vec![1000.0; 19];
    samples.push(9000.0);
    let mut o = options(one_node(&dir, 1), profile(&dir, &[("a", &[(1, &samples)])]));
    o.bench.concurrency = vec![1];
    let kept = simulate(&o, &engines()).unwrap().points[0].latency.max_us;
    o.model.outlier_fence = Some(3.0);
    let dropped = simulate(&o, &engines()).unwrap().points[0].latency.max_us;
    assert!(kept > 1000, "the 9 ms sample is drawn without the fence: {kept}");
    assert_eq!(dropped, 1000);
    o.model.outlier_fence = Some(-1.0);
    assert!(simulate(&o, &engines()).unwrap_err().contains("--outlier-fence"));
}

#[test]
fn the_same_seed_gives_byte_identical_output() {
    let dir = folder(SUITE, "determinism");
    let samples: &[f64] = &[90.0, 100.0, 110.0, 150.0, 400.0];
    let batches: Batches = &[(1, samples), (8, &[300.0, 320.0, 500.0])];
    let prof = profile(&dir, &[("a", batches), ("b", batches), ("c", batches), ("d", batches)]);
    for node in ["a", "b", "c", "d"] {
        with_idle_gaps(&prof, node, &[(100.0, 20.0), (1000.0, 80.0)]);
    }
    let run = |tag: &str, cpu: CpuUs| {
        let mut o = options(diamond(&dir), prof.clone());
        o.model.cpu = cpu;
        (o.model.idle_gaps, o.model.spin_wakes, o.model.wake_us) = (tag.starts_with("cpu"), true, 20.0);
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
    let (first, second) = (run("first", CpuUs::default()), run("second", CpuUs::default()));
    assert_eq!(first, second);
    let cpu = CpuUs { request_us: 20.0, batch_us: 5.0, task_us: 1.0, off_path: false, ..CpuUs::default() };
    assert_eq!(run("cpu1", cpu.clone()), run("cpu2", cpu), "the same with the runtime's CPU terms and the idle gaps");
    let text = String::from_utf8(first.0).unwrap();
    assert!(text.contains("\"policy\": \"greedy\""), "the report holds every policy");
}

#[test]
fn a_profile_missing_a_node_or_of_another_pipeline_is_refused() {
    let dir = folder(SUITE, "refusals");
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
    let dir = folder(SUITE, "shared");
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
        o.model.cores = Some(1.0);
        let report = simulate(&o, &engines()).unwrap();
        for p in &report.points {
            let tasks: Vec<u64> = p.nodes.iter().map(|n| n.tasks).collect();
            assert!(p.requests > 0 && tasks.iter().all(|&t| t > 0), "seed {seed}: {tasks:?}");
        }
    }
}
