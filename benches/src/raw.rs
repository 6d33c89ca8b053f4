//! The ceiling: ONNX Runtime called directly, without Baton, on each node whose
//! stages are a single ONNX stage — the session the `onnx` engine opens (same
//! model, threads, all graph optimizations; on a CUDA node ONNX Runtime's CUDA
//! provider with the node's options), pinned like the
//! node's first worker — in a tight loop at each batch size up to the node's
//! `max_batch`. Inputs are seeded random tensors of that batch (other dynamic
//! dims 1).
//!
//! Each run goes through ONNX Runtime's I/O binding by default (`--raw-io
//! binding`, raw ORT with its best I/O path): outputs bound once to host memory
//! (as a server must return them), inputs bound again before every run (on
//! CUDA, when ONNX Runtime copies them to the device, as a server must too).
//! `--raw-io plain` hands the inputs to `Session::run` as zero-copy views instead.
//!
//! `--raw-loops N` runs N such loops of a node at once, on N threads (each
//! pinned to the node's `cores[i % len]` when it has cores, each with its own
//! session), all measuring over the same interval: their summed rows/s is the
//! baseline for N workers (N loops sharing the memory bandwidth, not N × one).
//!
//! From these figures Baton's points get their ratios: throughput against the
//! best raw rows/s of the bottleneck node (the node whose best is lowest), and
//! latency at concurrency 1 against the raw batch-1 latency summed along the
//! pipeline's critical path.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use baton::{Dim, PipelineSpec, Tensor};
use hdrhistogram::Histogram;
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::{IoBinding, Session, SessionInputValue, SessionOutputs};
use ort::value::{DynValue, TensorRef};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use crate::load::generate;
use crate::measure::MAX_LATENCY_US;

/// Batch sizes measured by default (those ≤ the node's `max_batch`).
pub const DEFAULT_BATCHES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// How the raw loop hands inputs and outputs to ONNX Runtime (`--raw-io`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawIo {
    /// `Session::run` on zero-copy views of the inputs; ONNX Runtime allocates the outputs.
    Plain,
    /// I/O binding: outputs bound once to host memory, inputs bound before every run.
    #[default]
    Binding,
}

impl RawIo {
    pub const ALL: [RawIo; 2] = [RawIo::Plain, RawIo::Binding];

    pub fn name(self) -> &'static str {
        match self {
            RawIo::Plain => "plain",
            RawIo::Binding => "binding",
        }
    }

    /// The way called `name` (as [`RawIo::name`] writes it).
    pub fn from_name(name: &str) -> Option<RawIo> {
        RawIo::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One batch size of one node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RawPoint {
    pub batch: usize,
    /// Runs in the measured interval (all loops together).
    pub runs: u64,
    pub seconds: f64,
    /// Runs/s and rows/s summed over the loops.
    pub runs_per_s: f64,
    pub rows_per_s: f64,
    /// Median time of one run (the loops' runs together), µs.
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
    /// Core the (first) loop ran pinned to (the node's first worker's), if any.
    pub core: Option<usize>,
    /// Loops run at once (`--raw-loops`), each on its own thread and session.
    pub loops: usize,
    /// The core each loop ran pinned to (empty when the node has no cores).
    pub cores: Vec<usize>,
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
    /// How inputs and outputs went to ONNX Runtime: `binding` or `plain`.
    pub io: RawIo,
    /// Loops run at once per node (their rows/s summed).
    pub loops: usize,
    pub nodes: Vec<RawNode>,
    /// Nodes left out (not a single ONNX stage), with why.
    pub skipped: Vec<String>,
    pub bottleneck: Option<Bottleneck>,
    /// Raw batch-1 medians summed along the pipeline's longest path, µs
    /// (None when a node on some path has no raw figure).
    pub batch1_path_us: Option<f64>,
}

/// How the raw engine runs (`--raw-io`, `--raw-loops`, `--raw-batches`, `--raw-duration`).
#[derive(Clone, Debug, PartialEq)]
pub struct RawOptions {
    pub batches: Vec<usize>,
    pub duration: Duration,
    pub seed: u64,
    pub io: RawIo,
    /// Loops at once per node (at least 1).
    pub loops: usize,
    /// Only this node (all of them when `None`).
    pub node: Option<String>,
}

/// Measures every single-ONNX-stage node of `spec` (or `options.node` alone) at `options.batches` (≤ its
/// `max_batch`), `options.duration` per batch size. `progress` is told (node, batch) before each.
pub fn measure(
    spec: &PipelineSpec,
    options: &RawOptions,
    progress: impl FnMut(&str, usize) + Send,
) -> Result<RawReport, String> {
    let loops = options.loops.max(1);
    let progress = Mutex::new(progress);
    let mut nodes = Vec::new();
    let mut skipped = Vec::new();
    for node in spec.nodes.iter().filter(|n| options.node.as_ref().is_none_or(|only| *only == n.name)) {
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
            None => options.batches.iter().copied().filter(|&b| b >= 1 && b <= node.max_batch).collect(),
        };
        let intra = stage.request.intra_threads;
        let cores: Vec<usize> = if node.cores.is_empty() {
            Vec::new()
        } else {
            (0..loops).map(|i| node.cores[i % node.cores.len()]).collect()
        };
        let signature = &stage.signature;
        let name = node.name.as_str();
        // Every loop meets the others before its warm-up and before its measurement, so
        // that all measure over the same interval; a loop that failed (an error, or a panic
        // caught as one) keeps meeting them.
        let barrier = Barrier::new(loops);
        let failed = AtomicBool::new(false);
        let progress = &progress;
        let results: Vec<Result<Vec<Measured>, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..loops)
                .map(|i| {
                    let core = cores.get(i).copied();
                    let (barrier, failed, sizes) = (&barrier, &failed, &sizes);
                    std::thread::Builder::new()
                        .name(format!("bench-raw-{name}-{i}"))
                        .spawn_scoped(scope, move || -> Result<Vec<Measured>, String> {
                            if let Some(core) = core {
                                core_affinity::set_for_current(core_affinity::CoreId { id: core });
                            }
                            let mut error = None;
                            let mut session = match baton_engines::onnx::open_session(&stage.request) {
                                Ok(s) => Some(s),
                                Err(e) => {
                                    failed.store(true, Ordering::SeqCst);
                                    error = Some(e.to_string());
                                    None
                                }
                            };
                            let ok = |error: &Option<String>| error.is_none() && !failed.load(Ordering::SeqCst);
                            let mut rng = StdRng::seed_from_u64(options.seed);
                            let mut out = Vec::new();
                            for &batch in sizes {
                                if i == 0 {
                                    (progress.lock().unwrap_or_else(|e| e.into_inner()))(name, batch);
                                }
                                let inputs = signature
                                    .inputs
                                    .iter()
                                    .map(|s| generate(s, batch, &mut rng))
                                    .collect::<Result<Vec<Tensor>, String>>();
                                barrier.wait();
                                let mut runner = None;
                                if let (true, Some(session)) = (ok(&error), session.as_mut()) {
                                    let warmed = unpanicked(|| {
                                        inputs.and_then(|inputs| {
                                            let mut r = Runner::new(session, inputs, options.io)?;
                                            r.warm_up(session, batch, options.duration / 10)?;
                                            Ok(r)
                                        })
                                    });
                                    match warmed {
                                        Ok(r) => runner = Some(r),
                                        Err(e) => {
                                            failed.store(true, Ordering::SeqCst);
                                            error = Some(e);
                                        }
                                    }
                                }
                                barrier.wait();
                                if let (true, Some(session), Some(runner)) =
                                    (ok(&error), session.as_mut(), runner.as_mut())
                                {
                                    match unpanicked(|| runner.measure(session, batch, options.duration)) {
                                        Ok(m) => out.push(m),
                                        Err(e) => {
                                            failed.store(true, Ordering::SeqCst);
                                            error = Some(e);
                                        }
                                    }
                                }
                            }
                            match error {
                                Some(e) => Err(e),
                                None if failed.load(Ordering::SeqCst) => Err(String::new()),
                                None => Ok(out),
                            }
                        })
                        .expect("spawn a raw thread")
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("the raw loop panicked".into()))).collect()
        });
        let mut per_loop = Vec::new();
        let mut errors = Vec::new();
        for r in results {
            match r {
                Ok(m) => per_loop.push(m),
                Err(e) if !e.is_empty() => errors.push(e),
                Err(_) => {}
            }
        }
        if !errors.is_empty() || per_loop.len() != loops {
            let e = if errors.is_empty() { "a raw loop failed".into() } else { errors.join("; ") };
            return Err(format!("raw engine, node `{}`: {e}", node.name));
        }
        let points = (0..sizes.len()).map(|k| combine(per_loop.iter().map(|m| &m[k]))).collect();
        nodes.push(RawNode {
            node: node.name.clone(),
            model,
            intra_threads: intra,
            max_batch: node.max_batch,
            core: node.cores.first().copied(),
            loops,
            cores,
            points,
        });
    }
    let bottleneck = nodes
        .iter()
        .filter_map(|n| n.best().map(|b| Bottleneck { node: n.node.clone(), batch: b.batch, rows_per_s: b.rows_per_s }))
        .min_by(|a, b| a.rows_per_s.total_cmp(&b.rows_per_s));
    let batch1_path_us = critical_path(spec, &nodes);
    Ok(RawReport { io: options.io, loops, nodes, skipped, bottleneck, batch1_path_us })
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

/// What one loop measured at one batch size.
struct Measured {
    batch: usize,
    runs: u64,
    seconds: f64,
    /// Time of each run, ns.
    times: Histogram<u64>,
}

/// The loops' figures at one batch size together: runs and rows/s summed, times merged.
fn combine<'a>(loops: impl Iterator<Item = &'a Measured>) -> RawPoint {
    let mut times = new_ns_histogram();
    let (mut batch, mut runs, mut runs_per_s, mut seconds) = (0, 0, 0.0, 0.0f64);
    for m in loops {
        batch = m.batch;
        runs += m.runs;
        runs_per_s += m.runs as f64 / m.seconds.max(1e-9);
        seconds = seconds.max(m.seconds);
        times.add(&m.times).expect("histograms with the same bounds");
    }
    RawPoint {
        batch,
        runs,
        seconds,
        runs_per_s,
        rows_per_s: runs_per_s * batch as f64,
        median_us: times.value_at_quantile(0.5) as f64 / 1000.0,
        mean_us: times.mean() / 1000.0,
        p99_us: times.value_at_quantile(0.99) as f64 / 1000.0,
    }
}

fn new_ns_histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_US * 1000, 3).expect("valid histogram bounds")
}

/// One batch's inputs, ready to run the way `--raw-io` says.
pub struct Runner {
    inputs: Vec<Tensor>,
    bound: Option<Bound>,
}

/// The binding way: owned ORT copies of the inputs (made once: binding an owned
/// tensor on the CPU aliases it, where binding a view would copy it) and the binding.
struct Bound {
    names: Vec<String>,
    values: Vec<DynValue>,
    binding: IoBinding,
}

impl Runner {
    /// Inputs in the session's input order; with [`RawIo::Binding`], the outputs bound
    /// once to host memory.
    pub fn new(session: &Session, inputs: Vec<Tensor>, io: RawIo) -> Result<Runner, String> {
        let bound = match io {
            RawIo::Plain => None,
            RawIo::Binding => {
                let mut binding = session.create_binding().map_err(|e| e.to_string())?;
                let host = MemoryInfo::new(AllocationDevice::CPU, 0, AllocatorType::Device, MemoryType::Default)
                    .map_err(|e| e.to_string())?;
                for output in session.outputs() {
                    binding.bind_output_to_device(output.name(), &host).map_err(|e| e.to_string())?;
                }
                let names = session.inputs().iter().map(|i| i.name().to_string()).collect();
                let values = inputs.iter().map(owned).collect::<Result<Vec<_>, String>>()?;
                Some(Bound { names, values, binding })
            }
        };
        Ok(Runner { inputs, bound })
    }

    /// Runs once and hands the outputs to `f`. With binding, the inputs are bound
    /// again first (on CUDA, ONNX Runtime copies them to the device then).
    pub fn run<R>(&mut self, session: &mut Session, f: impl FnOnce(&SessionOutputs) -> R) -> Result<R, String> {
        match &mut self.bound {
            None => {
                let values = self.inputs.iter().map(view).collect::<Result<Vec<_>, String>>()?;
                let outputs = session.run(values.as_slice()).map_err(|e| e.to_string())?;
                Ok(f(&outputs))
            }
            Some(b) => {
                for (name, value) in b.names.iter().zip(&b.values) {
                    b.binding.bind_input(name.as_str(), value).map_err(|e| e.to_string())?;
                }
                let outputs = session.run_binding(&b.binding).map_err(|e| e.to_string())?;
                Ok(f(&outputs))
            }
        }
    }

    /// Runs for `duration` (at least 3 runs), untimed.
    fn warm_up(&mut self, session: &mut Session, batch: usize, duration: Duration) -> Result<(), String> {
        let until = Instant::now() + duration;
        let mut warm = 0;
        while warm < 3 || Instant::now() < until {
            self.run(session, |_| ()).map_err(|e| format!("batch {batch}: {e}"))?;
            warm += 1;
        }
        Ok(())
    }

    /// Runs for `duration`, timing each run.
    fn measure(&mut self, session: &mut Session, batch: usize, duration: Duration) -> Result<Measured, String> {
        let mut times = new_ns_histogram();
        let start = Instant::now();
        let mut runs = 0u64;
        loop {
            let t = Instant::now();
            self.run(session, |_| ()).map_err(|e| format!("batch {batch}: {e}"))?;
            times.saturating_record(t.elapsed().as_nanos().max(1) as u64);
            runs += 1;
            if start.elapsed() >= duration {
                break;
            }
        }
        Ok(Measured { batch, runs, seconds: start.elapsed().as_secs_f64(), times })
    }
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

/// An owned ORT copy of a tensor.
fn owned(tensor: &Tensor) -> Result<DynValue, String> {
    fn make<T: baton::Element + ort::value::PrimitiveTensorElementType + std::fmt::Debug + Clone>(
        tensor: &Tensor,
    ) -> Result<DynValue, String> {
        let data = tensor.as_slice::<T>().map_err(|e| e.to_string())?.to_vec();
        ort::value::Tensor::from_array((tensor.shape().to_vec(), data)).map(|t| t.into_dyn()).map_err(|e| e.to_string())
    }
    baton::with_element_type!(tensor.dtype(), T => make::<T>(tensor))
}

/// `f`'s result, a panic in it turned into an error (a raw loop that panicked must still
/// meet the other loops at their barrier).
fn unpanicked<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|panic| Err(format!("the raw loop panicked: {}", baton::engine::panic_message(panic.as_ref()))))
}

#[cfg(test)]
mod tests {
    use super::unpanicked;

    #[test]
    fn a_panic_in_a_raw_loop_becomes_its_error() {
        let err = unpanicked::<()>(|| panic!("kernel launch failed")).unwrap_err();
        assert_eq!(err, "the raw loop panicked: kernel launch failed");
        assert_eq!(unpanicked(|| Ok::<_, String>(3)), Ok(3));
        assert_eq!(unpanicked::<()>(|| Err("plain".into())), Err("plain".to_string()));
    }
}
