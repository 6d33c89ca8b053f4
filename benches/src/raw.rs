//! The ceiling: ONNX Runtime called directly, without Baton, on each node whose
//! stages are a single ONNX stage — the session the `onnx` engine opens (same
//! model, threads, all graph optimizations; on a CUDA node ONNX Runtime's CUDA
//! provider with the node's options), pinned like the
//! node's first worker — in a tight loop at each batch size up to the node's
//! `max_batch`. Inputs are seeded random tensors of that batch (other dynamic
//! dims 1), handed to ORT as zero-copy views each run, as the engine does.
//!
//! From these figures Baton's points get their ratios: throughput against the
//! best raw rows/s of the bottleneck node (the node whose best is lowest), and
//! latency at concurrency 1 against the raw batch-1 latency summed along the
//! pipeline's critical path.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton::{Dim, PipelineSpec, Tensor};
use ort::session::{Session, SessionInputValue};
use ort::value::TensorRef;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use crate::load::generate;
use crate::measure::MAX_LATENCY_US;

/// Batch sizes measured by default (those ≤ the node's `max_batch`).
pub const DEFAULT_BATCHES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// One batch size of one node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RawPoint {
    pub batch: usize,
    /// Runs in the measured interval.
    pub runs: u64,
    pub seconds: f64,
    pub runs_per_s: f64,
    pub rows_per_s: f64,
    /// Median time of one run, µs.
    pub median_us: f64,
    pub mean_us: f64,
    pub p99_us: f64,
}

/// The raw figures of one node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RawNode {
    pub node: String,
    pub model: PathBuf,
    pub intra_threads: usize,
    pub max_batch: usize,
    /// Core the loop ran pinned to (the node's first worker's), if any.
    pub core: Option<usize>,
    pub points: Vec<RawPoint>,
}

impl RawNode {
    /// The batch size with the most rows/s.
    pub fn best(&self) -> Option<&RawPoint> {
        self.points.iter().max_by(|a, b| a.rows_per_s.total_cmp(&b.rows_per_s))
    }

    /// Median latency of a batch-1 run, µs.
    pub fn batch1_us(&self) -> Option<f64> {
        self.points.iter().find(|p| p.batch == 1).map(|p| p.median_us)
    }
}

/// The node that limits throughput: the lowest best raw rows/s.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bottleneck {
    pub node: String,
    pub batch: usize,
    pub rows_per_s: f64,
}

/// All raw figures of a pipeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RawReport {
    pub nodes: Vec<RawNode>,
    /// Nodes left out (not a single ONNX stage), with why.
    pub skipped: Vec<String>,
    pub bottleneck: Option<Bottleneck>,
    /// Raw batch-1 medians summed along the pipeline's longest path, µs
    /// (None when a node on some path has no raw figure).
    pub batch1_path_us: Option<f64>,
}

/// Measures every single-ONNX-stage node of `spec` at `batches` (≤ its
/// `max_batch`), `duration` per batch size. `progress` is told (node, batch) before each.
pub fn measure(
    spec: &PipelineSpec,
    batches: &[usize],
    duration: Duration,
    seed: u64,
    mut progress: impl FnMut(&str, usize) + Send,
) -> Result<RawReport, String> {
    let mut nodes = Vec::new();
    let mut skipped = Vec::new();
    for node in &spec.nodes {
        let [stage] = node.stages.as_slice() else {
            skipped.push(format!("{}: {} stages (raw runs single-stage nodes)", node.name, node.stages.len()));
            continue;
        };
        if stage.engine != "onnx" {
            skipped.push(format!("{}: engine `{}` (raw runs ONNX stages)", node.name, stage.engine));
            continue;
        }
        let Some(model) = stage.request.model.clone() else {
            skipped.push(format!("{}: no model file", node.name));
            continue;
        };
        // A fixed batch dimension allows only that batch size.
        let fixed = stage.signature.inputs.iter().find_map(|i| match i.shape.first() {
            Some(Dim::Fixed(n)) => Some(*n),
            _ => None,
        });
        let sizes: Vec<usize> = match fixed {
            Some(n) => vec![n],
            None => batches.iter().copied().filter(|&b| b >= 1 && b <= node.max_batch).collect(),
        };
        let intra = stage.request.intra_threads;
        let core = node.cores.first().copied();
        let signature = stage.signature.clone();
        let name = node.name.clone();
        let mut points = Vec::new();
        let mut failure = None;
        // The loop runs on its own thread so it can be pinned like the node's worker.
        std::thread::scope(|scope| {
            let handle = std::thread::Builder::new()
                .name(format!("bench-raw-{name}"))
                .spawn_scoped(scope, || -> Result<Vec<RawPoint>, String> {
                    if let Some(core) = core {
                        core_affinity::set_for_current(core_affinity::CoreId { id: core });
                    }
                    let mut session = baton_engines::onnx::open_session(&stage.request).map_err(|e| e.to_string())?;
                    let mut rng = StdRng::seed_from_u64(seed);
                    let mut out = Vec::new();
                    for &batch in &sizes {
                        progress(&name, batch);
                        let inputs = signature.inputs.iter().map(|s| generate(s, batch, &mut rng)).collect::<Result<
                            Vec<Tensor>,
                            String,
                        >>(
                        )?;
                        out.push(run_batch(&mut session, &inputs, batch, duration)?);
                    }
                    Ok(out)
                })
                .expect("spawn the raw thread");
            match handle.join() {
                Ok(Ok(p)) => points = p,
                Ok(Err(e)) => failure = Some(e),
                Err(_) => failure = Some("the raw loop panicked".into()),
            }
        });
        if let Some(e) = failure {
            return Err(format!("raw engine, node `{}`: {e}", node.name));
        }
        nodes.push(RawNode {
            node: node.name.clone(),
            model,
            intra_threads: intra,
            max_batch: node.max_batch,
            core,
            points,
        });
    }
    let bottleneck = nodes
        .iter()
        .filter_map(|n| n.best().map(|b| Bottleneck { node: n.node.clone(), batch: b.batch, rows_per_s: b.rows_per_s }))
        .min_by(|a, b| a.rows_per_s.total_cmp(&b.rows_per_s));
    let batch1_path_us = critical_path(spec, &nodes);
    Ok(RawReport { nodes, skipped, bottleneck, batch1_path_us })
}

/// The longest path through the DAG, weighting each node by its raw batch-1 median.
fn critical_path(spec: &PipelineSpec, nodes: &[RawNode]) -> Option<f64> {
    let weight: Vec<Option<f64>> =
        spec.nodes.iter().map(|n| nodes.iter().find(|r| r.node == n.name).and_then(RawNode::batch1_us)).collect();
    let parents = spec.parents();
    let mut finish = vec![0.0f64; spec.nodes.len()];
    for &n in &spec.topo_order {
        let start = parents[n].iter().map(|&p| finish[p]).fold(0.0, f64::max);
        finish[n] = start + weight[n]?;
    }
    finish.into_iter().reduce(f64::max)
}

/// Warms up, then runs `inputs` for `duration`, timing each run.
fn run_batch(session: &mut Session, inputs: &[Tensor], batch: usize, duration: Duration) -> Result<RawPoint, String> {
    let once = |session: &mut Session| -> Result<(), String> {
        let values = inputs.iter().map(view).collect::<Result<Vec<_>, String>>()?;
        let outputs = session.run(values.as_slice()).map_err(|e| format!("batch {batch}: {e}"))?;
        drop(outputs);
        Ok(())
    };
    // Warm-up: a tenth of the duration, at least a few runs.
    let warm_until = Instant::now() + duration / 10;
    let mut warm = 0;
    while warm < 3 || Instant::now() < warm_until {
        once(session)?;
        warm += 1;
    }
    let mut times =
        hdrhistogram::Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_US * 1000, 3).expect("valid histogram bounds");
    let start = Instant::now();
    let mut runs = 0u64;
    loop {
        let t = Instant::now();
        once(session)?;
        times.saturating_record(t.elapsed().as_nanos().max(1) as u64);
        runs += 1;
        if start.elapsed() >= duration {
            break;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let runs_per_s = runs as f64 / seconds;
    Ok(RawPoint {
        batch,
        runs,
        seconds,
        runs_per_s,
        rows_per_s: runs_per_s * batch as f64,
        median_us: times.value_at_quantile(0.5) as f64 / 1000.0,
        mean_us: times.mean() / 1000.0,
        p99_us: times.value_at_quantile(0.99) as f64 / 1000.0,
    })
}

/// A zero-copy ORT view of a tensor, as the `onnx` engine makes them.
fn view(tensor: &Tensor) -> Result<SessionInputValue<'_>, String> {
    fn make<'a, T: baton::Element + ort::value::PrimitiveTensorElementType + std::fmt::Debug>(
        tensor: &'a Tensor,
    ) -> Result<SessionInputValue<'a>, String> {
        let data = tensor.as_slice::<T>().map_err(|e| e.to_string())?;
        TensorRef::from_array_view((tensor.shape(), data)).map(SessionInputValue::from).map_err(|e| e.to_string())
    }
    baton::with_element_type!(tensor.dtype(), T => make::<T>(tensor))
}
