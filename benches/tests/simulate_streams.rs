//! `baton simulate` with streams, on cost-model pipelines (no ONNX Runtime needed):
//! the per-stream write-back order on the simulated trace, determinism, a case
//! worked by hand, and the refusals.

mod common;

use common::streams::{collab_like, mixed, mixed_profile, session_file};
use common::{engines, folder, options, profile};

const SUITE: &str = "simstreams";

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use baton::BatchingPolicy;
use baton_bench::load::Arrivals;
use baton_bench::simulate::cpu::CpuUs;
use baton_bench::simulate::engine::SimLoad;
use baton_bench::simulate::streams::Step;
use baton_bench::simulate::{simulate, trace_point, SimOptions};

/// One stateful node `vad`: chunk -> p, state written back.
fn one_stream_node(dir: &Path) -> PathBuf {
    let text = r#"
[pipeline]
name = "vad"
[inputs.chunk]
to = ["vad.chunk"]
[outputs.p]
from = "vad.p"
[nodes.vad]
max_batch = 8
[[nodes.vad.stages]]
engine = "cost_model"
params.inputs = [{ name = "chunk", dtype = "f32", shape = [-1, 4] }, { name = "state", dtype = "f32", shape = [-1, 2] }]
params.outputs = [{ name = "p", dtype = "f32", shape = [-1, 1] }, { name = "new_state", dtype = "f32", shape = [-1, 2] }]
[[nodes.vad.state]]
input = "state"
output = "new_state"
"#;
    let path = dir.join("vad.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn mixed_load(o: &mut SimOptions) {
    o.bench.stream_chunks = 6;
    o.bench.stream_inputs = vec!["chunk".into()];
    o.bench.stream_fraction = 0.5;
}

#[test]
fn a_chunk_never_starts_a_stateful_node_before_its_predecessors_write_back() {
    let dir = folder(SUITE, "order");
    // vad batches of 2-6 ms at 8 rows at most: a stream's next chunk (64 senders,
    // half the requests chunks, 20000 requests/s: one every 6.4 ms) often arrives
    // while its predecessor waits or runs, so the gate has chunks to hold.
    let mut o = options(mixed(&dir, 8), mixed_profile(&dir, &[2000.0, 3000.0, 6000.0]));
    mixed_load(&mut o);
    for policy in [BatchingPolicy::Greedy, BatchingPolicy::Collaborative] {
        o.bench.policy = vec![policy];
        let load = SimLoad::Open { rate: 20000.0, arrivals: Arrivals::Poisson };
        let (window, trace) = trace_point(&o, &engines(), load).unwrap();
        assert!(window.tally.all.len() > 1000, "{policy:?}: requests answered");
        assert_eq!(window.tally.errors, 0, "{policy:?}: no chunk refused");
        let parked = trace.iter().filter(|e| e.step == Step::Parked).count();
        assert!(parked > 100, "{policy:?}: chunks waited behind their stream's earlier chunk ({parked})");
        // Per stream: its chunks start and are written back in turn, k, k + 1, ... from its start
        // chunk (0, or a sender's first stream's own phase).
        let mut last: HashMap<u64, (Step, u64, u64)> = HashMap::new();
        let mut chunks_written = 0;
        for e in trace.iter().filter(|e| e.step != Step::Parked) {
            assert!(e.ns >= last.get(&e.chunk.id).map_or(0, |l| l.2), "the trace is in time order");
            match (last.get(&e.chunk.id), e.step) {
                (None, Step::Started) => assert!(e.chunk.start, "a stream's first start is its start chunk"),
                (Some(&(Step::Written, k, _)), Step::Started) => {
                    assert_eq!(e.chunk.k, k + 1, "stream {}: the next chunk after the write-back", e.chunk.id)
                }
                (Some(&(Step::Started, k, _)), Step::Written) => {
                    assert_eq!(e.chunk.k, k, "stream {}: the running chunk is written back", e.chunk.id);
                    chunks_written += 1;
                }
                (before, step) => panic!("stream {}: {step:?} of chunk {} after {before:?}", e.chunk.id, e.chunk.k),
            }
            last.insert(e.chunk.id, (e.step, e.chunk.k, e.ns));
        }
        assert!(chunks_written > 1000, "{policy:?}: chunks written back ({chunks_written})");
    }
}

#[test]
fn the_same_seed_gives_byte_identical_output_with_streams_and_cpu_terms() {
    let dir = folder(SUITE, "determinism");
    let prof = mixed_profile(&dir, &[150.0, 200.0, 400.0, 900.0]);
    let run = |tag: &str| {
        let mut o = options(mixed(&dir, 8), prof.clone());
        mixed_load(&mut o);
        o.bench.rate = vec![4000.0];
        o.bench.concurrency = vec![16];
        o.bench.seed = 11;
        o.bench.policy = vec![BatchingPolicy::Collaborative, BatchingPolicy::Greedy];
        o.bench.json = Some(dir.join(format!("{tag}.json")));
        o.bench.csv = Some(dir.join(format!("{tag}.csv")));
        // The runtime's own CPU as jobs on the cores, in their threads' classes.
        o.model.cpu = CpuUs { request_us: 5.0, batch_us: 8.0, task_us: 1.0, off_path: false, ..CpuUs::default() };
        let report = simulate(&o, &engines()).unwrap();
        assert!(report.points.iter().all(|p| p.priority_latency.count > 0), "final chunks were answered");
        (
            std::fs::read(dir.join(format!("{tag}.json"))).unwrap(),
            std::fs::read(dir.join(format!("{tag}.csv"))).unwrap(),
        )
    };
    assert_eq!(run("first"), run("second"));
}

#[test]
fn one_stream_at_a_time_of_fixed_duration_answers_one_chunk_per_duration() {
    let dir = folder(SUITE, "hand");
    let mut o = options(one_stream_node(&dir), profile(&dir, &[("vad", &[(1, &[1000.0]), (8, &[1000.0])])]));
    o.bench.concurrency = vec![1];
    o.bench.stream_chunks = 4;
    let report = simulate(&o, &engines()).unwrap();
    let p = &report.points[0];
    // Chunks answered at 1, 2, 3 ... ms, one stream of 4 chunks after another: the
    // measured second [0.5 s, 1.5 s) holds exactly 1000 chunks, a quarter of them final.
    assert_eq!(p.requests, 1000);
    assert_eq!(p.throughput_rps, 1000.0);
    assert_eq!((p.latency.min_us, p.latency.max_us), (1000, 1000));
    assert_eq!(p.priority_latency.count, 250, "each stream's final chunk is a priority task");
    assert_eq!(p.nodes[0].mean_compute_us, 1000.0);
}

#[test]
fn stream_loads_the_simulator_cannot_send_are_refused_with_the_reason() {
    let dir = folder(SUITE, "refusals");
    let prof = mixed_profile(&dir, &[100.0]);
    let err = |o: &SimOptions| simulate(o, &engines()).unwrap_err();
    let mut o = options(mixed(&dir, 8), prof.clone());
    o.bench.concurrency = vec![1];
    let e = err(&o);
    assert!(e.contains("node `vad` keeps per-stream state") && e.contains("--stream-chunks"), "{e}");
    mixed_load(&mut o);
    o.bench.rows = 2;
    let e = err(&o);
    assert!(e.contains("node `vad` keeps one row of state per stream") && e.contains("--rows 1"), "{e}");
    o.bench.rows = 1;
    o.bench.stream_inputs = vec!["audio".into()];
    assert!(err(&o).contains("no input `audio`"));
    o.bench.stream_inputs = vec!["chunk".into(), "x".into()];
    assert!(err(&o).contains("names every input"));
}

#[test]
fn a_session_paces_its_chunks_and_its_final_chunk_waits_for_the_image() {
    let dir = folder(SUITE, "sessions");
    let (ocr, one_ms): (&[f64], &[f64]) = (&[100_000.0], &[1000.0]);
    let fixed = |us: &'static [f64]| -> Vec<(usize, &'static [f64])> { vec![(1, us), (8, us)] };
    let prof = profile(&dir, &[("text", &fixed(ocr)), ("speech", &fixed(one_ms)), ("recommend", &fixed(one_ms))]);
    let mut o = options(collab_like(&dir), prof);
    o.bench.warmup = Duration::ZERO;
    o.bench.rate = vec![0.001];
    o.sessions = Some(baton_bench::simulate::SessionLoad { file: session_file(&dir, 1536), pace_ms: 32.0 });
    let report = simulate(&o, &engines()).unwrap();
    let p = &report.points[0];
    // One session at 0 (the next is due ~1000 s later): chunks 0 and 1 sent at 0 and
    // 32 ms take 1 ms each; the final chunk is due at 64 ms but waits for the image
    // (100 ms of OCR), then runs speech and recommend: answered at 102 ms, 38 ms after it was due.
    assert_eq!(p.requests, 3, "the chunks are reported, the image is not");
    assert_eq!((p.others_latency.count, p.others_latency.min_us, p.others_latency.max_us), (2, 1000, 1000));
    assert_eq!(p.priority_latency.count, 1);
    // The histogram keeps 3 significant digits: 38 000 µs reads back within 0.1%.
    let max = p.priority_latency.max_us;
    assert!((38_000..=38_038).contains(&max), "final chunk {max} µs");
}
