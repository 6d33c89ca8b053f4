//! Shared helpers for Baton's end-to-end tests (`tests/tests/*.rs`).
//!
//! - where things are: [`repo_root`], [`config`], [`model`];
//! - [`Direct`]: one model run straight through ONNX Runtime (no Baton), the
//!   reference the pipelines' answers are compared with;
//! - random inputs and float comparisons;
//! - [`Scratch`], [`TestFile`]: a test's own folder, or file in one, under the
//!   temp folder that goes when the test ends.
//!
//! The tests need what `scripts/setup.sh` provides: the ONNX Runtime library
//! in `.cache/` and the models in `models/`.

pub mod mixed;

use std::path::{Path, PathBuf};

use baton::{DType, Tensor};
use baton_stages::collab::session as collab;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::TensorRef;
use rand::Rng;

/// The repository root (this crate's parent folder).
pub fn repo_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// `configs/NAME` in the repository.
pub fn config(name: &str) -> PathBuf {
    repo_root().join("configs").join(name)
}

/// `models/NAME` in the repository; panics with the fix if `scripts/setup.sh` has not made it.
pub fn model(name: &str) -> PathBuf {
    let path = repo_root().join("models").join(name);
    assert!(path.is_file(), "{} is missing: run scripts/setup.sh", path.display());
    path
}

/// The engine registry the `baton` command uses (`onnx` and `cost_model`).
pub fn registry() -> baton::EngineRegistry {
    baton_engines::standard_registry()
}

/// One model run directly with ONNX Runtime, with the settings Baton's `onnx`
/// engine uses (all graph optimizations, 1 intra-op and 1 inter-op thread), in
/// the process's single ORT environment.
pub struct Direct {
    session: Session,
    outputs: Vec<(String, DType)>,
}

impl Direct {
    /// Loads `models/NAME`.
    pub fn load(name: &str) -> Direct {
        let path = model(name);
        let env = baton_engines::ort_library::environment().expect("ONNX Runtime loads (run scripts/setup.sh)");
        let session = (|| -> ort::Result<Session> {
            Session::builder(env)?
                .with_optimization_level(GraphOptimizationLevel::All)?
                .with_intra_threads(1)?
                .with_inter_threads(1)?
                .commit_from_file(&path)
        })()
        .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
        let outputs = session
            .outputs()
            .iter()
            .map(|o| {
                let spec = baton_engines::onnx::tensor_spec(o.name(), o.dtype()).expect("a supported tensor");
                (spec.name, spec.dtype)
            })
            .collect();
        Direct { session, outputs }
    }

    /// Runs the model on named inputs; returns every output by name, in the model's order.
    /// BYTES tensors go through `ort`'s own string calls, which take and give UTF-8 only.
    pub fn run(&mut self, inputs: &[(&str, &Tensor)]) -> Vec<(String, Tensor)> {
        let mut values: Vec<(String, SessionInputValue<'_>)> = Vec::with_capacity(inputs.len());
        for (name, tensor) in inputs {
            let shape = tensor.shape();
            if tensor.dtype() == DType::Bytes {
                let strings: Vec<String> = tensor
                    .as_strings()
                    .expect("a BYTES tensor")
                    .iter()
                    .map(|s| String::from_utf8(s.to_vec()).expect("direct ORT strings are UTF-8"))
                    .collect();
                let value = ort::value::Tensor::from_string_array((shape.to_vec(), strings.as_slice()))
                    .expect("a string tensor");
                values.push((name.to_string(), SessionInputValue::from(value)));
                continue;
            }
            let value = baton::with_element_type!(tensor.dtype(), T => {
                let data = tensor.as_slice::<T>().expect("dtype matches");
                SessionInputValue::from(TensorRef::from_array_view((shape, data)).expect("a valid ORT view"))
            });
            values.push((name.to_string(), value));
        }
        let outputs = self.session.run(values).expect("direct ORT run");
        self.outputs
            .iter()
            .map(|(name, dtype)| {
                let value = &outputs[name.as_str()];
                if *dtype == DType::Bytes {
                    let (shape, strings) = value.try_extract_strings().expect("a string output");
                    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
                    return (name.clone(), Tensor::from_strings(shape, strings).expect("output tensor"));
                }
                let tensor = baton::with_element_type!(*dtype, T => {
                    let (shape, data) = value.try_extract_tensor::<T>().expect("output dtype as declared");
                    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
                    Tensor::from_slice(shape, data).expect("output tensor")
                });
                (name.clone(), tensor)
            })
            .collect()
    }

    /// Runs the model and returns output `name`.
    pub fn run_one(&mut self, inputs: &[(&str, &Tensor)], name: &str) -> Tensor {
        self.run(inputs)
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
            .unwrap_or_else(|| panic!("the model has no output `{name}`"))
    }
}

/// A `[rows, width]` f32 tensor of values uniform in [-1, 1).
pub fn random_f32(rng: &mut impl Rng, rows: usize, width: usize) -> Tensor {
    let data: Vec<f32> = (0..rows * width).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    Tensor::from_vec(vec![rows, width], data).expect("shape matches data")
}

/// Largest absolute element difference; panics if dtype or shape differ.
pub fn max_abs_diff(got: &Tensor, want: &Tensor) -> f64 {
    assert_eq!(got.dtype(), want.dtype(), "dtypes differ");
    assert_eq!(got.shape(), want.shape(), "shapes differ");
    got.to_f64_vec().iter().zip(want.to_f64_vec()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)
}

/// Whether two tensors are bitwise equal (dtype, shape and bytes).
pub fn bitwise_equal(got: &Tensor, want: &Tensor) -> bool {
    got == want
}

/// Tolerance for comparing a batched pipeline answer with a direct, unbatched
/// ORT run: ORT's matrix kernels may sum in another order for another batch
/// size, so results can differ in the last bits.
pub const TOLERANCE: f64 = 1e-5;

/// Running record of how pipeline answers compare with direct runs.
#[derive(Debug, Default, Clone, Copy)]
pub struct Agreement {
    pub compared: usize,
    pub bitwise: usize,
    pub max_abs_diff: f64,
}

impl Agreement {
    /// Records one comparison; panics (naming `what`) if shape/dtype differ or the difference exceeds [`TOLERANCE`].
    pub fn check(&mut self, what: &str, got: &Tensor, want: &Tensor) {
        assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()), "{what}: dtype/shape");
        let diff = max_abs_diff(got, want);
        assert!(diff <= TOLERANCE, "{what}: max abs diff {diff} > {TOLERANCE}\n got  {got:?}\n want {want:?}");
        self.compared += 1;
        self.bitwise += usize::from(bitwise_equal(got, want));
        self.max_abs_diff = self.max_abs_diff.max(diff);
    }

    /// Panics unless every comparison was bitwise equal (same ORT kernels, so batching
    /// should not change a single bit; the message gives the largest difference seen).
    pub fn assert_bitwise(&self, what: &str) {
        assert_eq!(
            self.bitwise,
            self.compared,
            "{what}: {} of {} tensors differ from direct ORT in some bits (max abs diff {:e}, within {TOLERANCE})",
            self.compared - self.bitwise,
            self.compared,
            self.max_abs_diff
        );
    }
}

/// How long a test waits for one answer before calling the request lost (a
/// guard against hangs, far above any real latency; not a timing assertion).
pub const LOST_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits for a ticket's answer; panics, saying so, if none comes within [`LOST_AFTER`].
pub fn answer(ticket: baton::Ticket) -> baton::RequestResult {
    match ticket.wait_timeout(LOST_AFTER) {
        Ok(result) => result,
        Err(_) => panic!("a ticket did not resolve within {LOST_AFTER:?}: request lost"),
    }
}

/// Batch sizes (rows per executed batch) recorded for `node` of `pipeline`
/// since [`record_metrics`] was called, in this test binary.
///
/// Runtimes register their metric handles when they start, so call
/// [`record_metrics`] before starting the runtime you want to observe.
pub fn batch_sizes(pipeline: &str, node: &str) -> Vec<f64> {
    let mut store = metrics_store().lock().unwrap_or_else(|e| e.into_inner());
    absorb(&mut store);
    let id = (baton::metrics::BATCH_SIZE.to_string(), pipeline.to_string(), node.to_string());
    store.1.histograms.get(&id).cloned().unwrap_or_default()
}

/// The sum of the counters named `name` whose labels include all of `labels`
/// (needs [`record_metrics`] before the runtime starts).
pub fn counter_total(name: &str, labels: &[(&str, &str)]) -> u64 {
    let mut store = metrics_store().lock().unwrap_or_else(|e| e.into_inner());
    absorb(&mut store);
    let matches = |(n, have): &(String, Vec<(String, String)>)| {
        n == name && labels.iter().all(|(k, v)| have.iter().any(|(hk, hv)| hk == k && hv == v))
    };
    store.1.counters.iter().filter(|(key, _)| matches(key)).map(|(_, n)| n).sum()
}

/// Moves a snapshot into `seen`: a snapshot drains histograms and counters, so
/// everything seen is kept here, for every caller.
fn absorb((snapshotter, seen): &mut (metrics_util::debugging::Snapshotter, Seen)) {
    use metrics_util::debugging::DebugValue;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let label = |name: &str| key.labels().find(|l| l.key() == name).map(|l| l.value().to_string());
        match value {
            DebugValue::Histogram(values) => {
                let id =
                    (key.name().to_string(), label("pipeline").unwrap_or_default(), label("node").unwrap_or_default());
                seen.histograms.entry(id).or_default().extend(values.into_iter().map(|v| v.into_inner()));
            }
            DebugValue::Counter(n) => {
                let labels = key.labels().map(|l| (l.key().to_string(), l.value().to_string())).collect();
                *seen.counters.entry((key.name().to_string(), labels)).or_default() += n;
            }
            DebugValue::Gauge(_) => {}
        }
    }
}

/// Installs a metrics recorder for this test binary (once) so [`batch_sizes`] can read batch sizes.
pub fn record_metrics() {
    let _ = metrics_store();
}

/// Metrics seen so far in this test binary.
#[derive(Default)]
struct Seen {
    /// (name, pipeline, node) -> every value recorded.
    histograms: std::collections::HashMap<(String, String, String), Vec<f64>>,
    /// (name, labels) -> total.
    counters: std::collections::HashMap<(String, Vec<(String, String)>), u64>,
}

fn metrics_store() -> &'static std::sync::Mutex<(metrics_util::debugging::Snapshotter, Seen)> {
    static STORE: std::sync::OnceLock<std::sync::Mutex<(metrics_util::debugging::Snapshotter, Seen)>> =
        std::sync::OnceLock::new();
    STORE.get_or_init(|| {
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("no other metrics recorder in this test binary");
        std::sync::Mutex::new((snapshotter, Seen::default()))
    })
}

/// How a test starts a shipped config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduling {
    /// The file as it is.
    AsShipped,
    /// The scheduler decides only on 20 ms ticks (`decide_on_arrival = false`),
    /// so requests submitted together wait and are batched together.
    Accumulate,
    /// Background batches at the workers' own nice (`background_nice = 0`): for tests of
    /// what a pipeline answers, whatever else the machine runs. (With the kernel's
    /// autogroup off, other processes' load at nice 0 takes the cores from a niced node,
    /// and sessions waiting on its answers can outlast their streams' idle timeout.)
    NoBackground,
}

/// Starts `configs/NAME` (models resolve against `configs/` as usual).
pub fn start(name: &str, scheduling: Scheduling) -> baton::Runtime {
    start_with(name, scheduling, &registry())
}

/// [`start`] with the engines of `engines`.
pub fn start_with(name: &str, scheduling: Scheduling, engines: &baton::EngineRegistry) -> baton::Runtime {
    let path = config(name);
    let mut cfg = baton::PipelineConfig::read(&path).unwrap_or_else(|e| panic!("{e}"));
    match scheduling {
        Scheduling::AsShipped => {}
        Scheduling::Accumulate => {
            cfg.scheduler.decide_on_arrival = false;
            cfg.scheduler.tick_us = 20_000;
        }
        Scheduling::NoBackground => cfg.scheduler.background_nice = 0,
    }
    baton::Runtime::from_config(&cfg, Some(&path), engines).unwrap_or_else(|e| panic!("{name} starts: {e}"))
}

/// Streams every session of `data` through `runtime` at once, each on its own thread
/// (stream id = its index) with `stream`; the results in session order. A session that fails panics.
pub fn every_session_at_once(
    runtime: &baton::Runtime,
    data: &collab::Sessions,
    stream: fn(&baton::Runtime, &collab::Session, u64) -> Result<collab::SessionResult, String>,
) -> Vec<collab::SessionResult> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = data
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| scope.spawn(move || stream(runtime, s, i as u64).unwrap_or_else(|e| panic!("{e}"))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Streams every committed session through `runtime` at once (one thread each), as the
/// collab pipeline's users would; the results by session id. A session that fails panics.
pub fn stream_every_session(
    runtime: &baton::Runtime,
    data: &collab::Sessions,
) -> std::collections::HashMap<String, collab::SessionResult> {
    let results = every_session_at_once(runtime, data, collab::stream_session);
    results.into_iter().map(|r| (r.id.clone(), r)).collect()
}

pub use baton_scratch::Scratch;

/// A file written for one test, alone in a fresh temp folder that is removed
/// when this is dropped (when the test ends, passed or failed).
pub struct TestFile {
    path: PathBuf,
    _dir: Scratch,
}

impl TestFile {
    /// Writes `text` to `NAME` in a new folder `baton-e2e-KIND-XXXXXX` under the temp dir.
    pub fn write(kind: &str, name: &str, text: &str) -> TestFile {
        let dir = Scratch::new(&format!("e2e-{kind}"));
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        TestFile { path, _dir: dir }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for TestFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TestFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}
