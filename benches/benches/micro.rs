//! Criterion micro-benchmarks of Baton's hot paths, each beside its baseline:
//! - the scheduler's decision (the collaborative rule's selection) for 8, 64 and 1024 nodes;
//! - batch stitch and split against a plain `memcpy` of the same bytes;
//! - the submit → answer round trip through a runtime with a no-op stage
//!   (the hand-off cost in both directions, with no inference in it).
//!
//! Run with `cargo bench -p baton-bench --bench micro`.

use std::hint::black_box;
use std::time::Duration;

use baton::config::{OnMisfit, Selection};
use baton::scheduler::select::{Collaborative, NodeLoad, NodeSelector, Running};
use baton::tensor::stitch;
use baton::{
    DType, Dim, EngineRegistry, FunctionStage, ModelSignature, PipelineConfig, Request, Runtime, StageOutput, Tensor,
    TensorSpec,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn loads(n: usize) -> Vec<NodeLoad> {
    // A spread of queues, weights, costs and a few priority nodes, deterministic.
    (0..n)
        .map(|i| NodeLoad {
            pending: (i * 7919) % 64,
            priority_pending: usize::from(i % 13 == 0),
            weight: 0.5 + (i % 5) as f64 * 0.25,
            cost: 1.0 + (i % 3) as f64,
            can_start: i % 4 != 0,
            waited_ns: 0,
            max_batch: 32,
            boost: 0.0,
            running: usize::from(i % 4 == 0),
            mean_batch_ns: 1000 + (i % 7) as u64 * 500,
        })
        .collect()
}

fn scheduler_decision(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduler_decision");
    for n in [8, 64, 1024] {
        let loads = loads(n);
        for (name, selection) in [("budget", Selection::Budget), ("count", Selection::Count)] {
            let mut policy = Collaborative::new(selection, n as f64 / 2.0, n / 4 + 1, OnMisfit::Stop);
            let mut picked = Vec::new();
            group.bench_with_input(BenchmarkId::new(name, n), &loads, |b, loads| {
                b.iter(|| {
                    policy.select(black_box(loads), Running::default(), &mut picked);
                    black_box(picked.len())
                })
            });
        }
    }
    group.finish();
}

fn stitch_split(c: &mut Criterion) {
    let mut group = c.benchmark_group("stitch_split");
    // 32 requests of one 256-float row (the MLP's input), and of one 3x64x64 image.
    for (label, row) in [("mlp_row_1KiB", vec![256usize]), ("image_48KiB", vec![3, 64, 64])] {
        let mut shape = vec![1];
        shape.extend(&row);
        let elements: usize = row.iter().product();
        let parts: Vec<Tensor> =
            (0..32).map(|i| Tensor::from_vec(shape.clone(), vec![i as f32; elements]).unwrap()).collect();
        let refs: Vec<&Tensor> = parts.iter().collect();
        let bytes = (32 * elements * 4) as u64;
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(BenchmarkId::new("stitch_32", label), |b| b.iter(|| stitch(black_box(&refs)).unwrap()));
        let batch = stitch(&refs).unwrap();
        group.bench_function(BenchmarkId::new("split_32_views", label), |b| {
            b.iter(|| (0..32).map(|i| batch.rows(i..i + 1)).map(|t| black_box(t).len()).sum::<usize>())
        });
        group.bench_function(BenchmarkId::new("split_32_compact", label), |b| {
            b.iter(|| (0..32).map(|i| batch.rows(i..i + 1).compact()).map(|t| black_box(t).len()).sum::<usize>())
        });
        // Baseline: one allocation and one memcpy per part into a contiguous buffer.
        let sources: Vec<Vec<u8>> = parts.iter().map(|p| p.as_bytes().to_vec()).collect();
        group.bench_function(BenchmarkId::new("memcpy_baseline", label), |b| {
            b.iter(|| {
                let mut out = Vec::<u8>::with_capacity(bytes as usize);
                for s in &sources {
                    out.extend_from_slice(black_box(s));
                }
                black_box(out)
            })
        });
    }
    group.finish();
}

fn handoff(c: &mut Criterion) {
    let spec = |name: &str| TensorSpec {
        name: name.into(),
        dtype: DType::F32,
        shape: vec![Dim::Dynamic(None), Dim::Fixed(4)],
    };
    let identity =
        FunctionStage::new(ModelSignature { inputs: vec![spec("x")], outputs: vec![spec("y")] }, |inputs, _| {
            Ok(StageOutput { tensors: vec![inputs[0].clone()], rows: None })
        });
    let registry = EngineRegistry::new().with_function("identity", identity);
    let config = PipelineConfig::parse(
        "[inputs.x]\nto = [\"n.x\"]\n[outputs.y]\nfrom = \"n.y\"\n[nodes.n]\nstages = [{ function = \"identity\" }]\n",
    )
    .unwrap();
    let runtime = Runtime::from_config(&config, None, &registry).unwrap();
    let x = Tensor::from_vec(vec![1, 4], vec![1.0f32; 4]).unwrap();
    let mut group = c.benchmark_group("handoff");
    group.bench_function("submit_wait_round_trip_noop_stage", |b| {
        b.iter(|| runtime.submit(Request::new().input("x", x.clone())).wait().unwrap())
    });
    group.finish();
    runtime.shutdown();
}

criterion_group! {
    name = micro;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = scheduler_decision, stitch_split, handoff
}
criterion_main!(micro);
