//! GPU nodes in the pipeline file and in the scheduler, with small Rust test
//! engines declared as running on a device (no GPU, no ONNX Runtime): the
//! `provider`, `device`, `cuda` and `[devices]` keys are validated with errors
//! naming the key; nodes on one device share its budget; the device goes to
//! priority nodes first; CPU nodes are not held back by a busy device.
//!
//! No timing: each test waits on conditions (an engine entered, a request
//! answered) and reads the scheduler's pick counter, which a decision raises
//! before it sends the batch.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::engine::{
    Dim, Engine, EngineError, EngineProvider, EngineRegistry, ModelSignature, StageRequest, TensorSpec,
};
use baton::execution::{ConvAlgoSearch, DeviceSpec, Execution};
use baton::spec::Resource;
use baton::{DType, PipelineConfig, PipelineSpec, Request, Runtime, Tensor};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use parking_lot::{Condvar, Mutex};
use serde::Deserialize;

/// Engines of kind `test`: each node's stage (by `params.node`) logs its entry,
/// then waits while the node's gate is closed. Gates start open.
#[derive(Clone, Default)]
struct GatedEngines {
    state: Arc<(Mutex<Gates>, Condvar)>,
    /// What `prepare` answers, when set (else it accepts every execution).
    refuse: Option<String>,
}

#[derive(Default)]
struct Gates {
    closed: Vec<String>,
    /// Nodes in the order their batches entered the engine.
    entered: Vec<String>,
    /// Batches inside an engine now, per node.
    inside: HashMap<String, usize>,
}

impl GatedEngines {
    fn close(&self, node: &str) {
        self.state.0.lock().closed.push(node.to_string());
    }

    fn open(&self, node: &str) {
        self.state.0.lock().closed.retain(|n| n != node);
        self.state.1.notify_all();
    }

    fn entered(&self) -> Vec<String> {
        self.state.0.lock().entered.clone()
    }

    fn inside(&self, node: &str) -> usize {
        self.state.0.lock().inside.get(node).copied().unwrap_or(0)
    }

    fn registry(&self) -> EngineRegistry {
        EngineRegistry::new().with("test", self.clone())
    }

    /// Opens every gate when dropped: a failing test fails instead of waiting on a closed gate.
    fn open_on_drop(&self) -> OpenOnDrop {
        OpenOnDrop(self.clone())
    }
}

struct OpenOnDrop(GatedEngines);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.state.0.lock().closed.clear();
        self.0.state.1.notify_all();
    }
}

fn column(name: &str) -> TensorSpec {
    TensorSpec { name: name.into(), dtype: DType::F32, shape: vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(1)] }
}

/// On a device it reports its inputs' bytes as copied to the device (as a GPU engine whose
/// inputs live in host memory would).
struct GatedEngine {
    node: String,
    state: Arc<(Mutex<Gates>, Condvar)>,
    on_device: bool,
    copied: u64,
}

impl Engine for GatedEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let (lock, cv) = &*self.state;
        let mut gates = lock.lock();
        gates.entered.push(self.node.clone());
        *gates.inside.entry(self.node.clone()).or_default() += 1;
        while gates.closed.contains(&self.node) {
            cv.wait(&mut gates);
        }
        *gates.inside.get_mut(&self.node).unwrap() -= 1;
        if self.on_device {
            self.copied += inputs.iter().map(|t| t.as_bytes().len() as u64).sum::<u64>();
        }
        Ok(vec![inputs[0].clone()])
    }

    fn host_device_bytes(&mut self) -> u64 {
        std::mem::take(&mut self.copied)
    }
}

impl EngineProvider for GatedEngines {
    fn prepare(&self, execution: &Execution) -> Result<(), EngineError> {
        let refused = |message| EngineError::Unavailable { location: execution.to_string(), message };
        self.refuse.clone().map_or(Ok(()), |message| Err(refused(message)))
    }
    fn inspect(&self, _stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        Ok(ModelSignature { inputs: vec![column("x")], outputs: vec![column("y")] })
    }
    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        let TestParams { node } = stage.params()?;
        let on_device = stage.execution != Execution::Cpu;
        Ok(Box::new(GatedEngine { node, state: self.state.clone(), on_device, copied: 0 }))
    }
}

/// The test engine's `params`: the node it runs in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestParams {
    node: String,
}

/// One node `name` fed by optional input `x_NAME`, answering `y_NAME`; `extra` lines follow its table.
fn node(name: &str, extra: &str) -> String {
    format!(
        "[inputs.x_{name}]\nto = [\"{name}.x\"]\noptional = true\n[outputs.y_{name}]\nfrom = \"{name}.y\"\n\
         [nodes.{name}]\nstages = [{{ engine = \"test\", params = {{ node = \"{name}\" }} }}]\n{extra}\n"
    )
}

const ON_CUDA0: &str = "provider = \"cuda\"\ndevice = 0";

fn spec(engines: &GatedEngines, toml: &str) -> Result<PipelineSpec, String> {
    let config = PipelineConfig::parse(toml).map_err(|e| e.to_string())?;
    PipelineSpec::build(&config, None, &engines.registry()).map_err(|e| e.to_string())
}

fn config_error(toml: &str, parts: &[&str]) {
    let err = spec(&GatedEngines::default(), toml).err().unwrap_or_else(|| panic!("accepted:\n{toml}"));
    for part in parts {
        assert!(err.contains(part), "the error should contain {part:?}: {err}");
    }
}

fn request(node: &str, x: f32) -> Request {
    Request::new().input(format!("x_{node}"), Tensor::from_vec(vec![1, 1], vec![x]).unwrap())
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A runtime recording its metrics into a recorder of its own; returns the runtime and the snapshotter.
fn start(engines: &GatedEngines, toml: &str) -> (Runtime, Snapshotter) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let config = PipelineConfig::parse(toml).unwrap();
    let runtime =
        metrics::with_local_recorder(&recorder, || Runtime::from_config(&config, None, &engines.registry())).unwrap();
    (runtime, snapshotter)
}

/// How many times the scheduler picked `node` so far.
fn picks(snapshotter: &Snapshotter, node: &str) -> u64 {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| {
            let key = key.key();
            key.name() == baton::metrics::PICKS && key.labels().any(|l| l.key() == "node" && l.value() == node)
        })
        .map(|(.., value)| match value {
            DebugValue::Counter(c) => c,
            _ => 0,
        })
        .sum()
}

#[test]
fn gpu_nodes_get_their_device_and_options_and_cpu_nodes_stay_on_cores() {
    let toml = format!(
        "{}{}{}[devices.cuda0]\nbudget = 3\n",
        node("a", &format!("{ON_CUDA0}\ncuda = {{ gpu_mem_limit = 1024, cudnn_conv_algo_search = \"heuristic\" }}")),
        node("b", "provider = \"cuda\"\ndevice = 1\ncost = 5"),
        node("c", "cost = 2"),
    );
    let spec = spec(&GatedEngines::default(), &toml).unwrap();
    let by_name = |n: &str| spec.nodes.iter().find(|node| node.name == n).unwrap();
    assert_eq!(
        spec.devices,
        vec![DeviceSpec { name: "cuda0".into(), budget: 3 }, DeviceSpec { name: "cuda1".into(), budget: 1 }],
        "a device without a [devices] entry gets a budget of 1"
    );
    assert_eq!(by_name("a").resource, Resource::Device(0));
    assert_eq!(by_name("b").resource, Resource::Device(1));
    assert!(matches!(by_name("c").resource, Resource::Cores { cost } if cost == 2.0));
    assert_eq!((by_name("a").cost, by_name("b").cost), (0.0, 0.0), "GPU nodes hold no cores");
    let Execution::Cuda { device, options } = &by_name("a").stages[0].request.execution else {
        panic!("node a runs on CUDA");
    };
    assert_eq!(
        (*device, options.gpu_mem_limit, options.cudnn_conv_algo_search),
        (0, Some(1024), ConvAlgoSearch::Heuristic)
    );
    assert_eq!(by_name("c").stages[0].request.execution, Execution::Cpu);
    assert_eq!(spec.compute_budget, 2.0, "the default compute budget adds up the CPU nodes' costs only");
}

#[test]
fn device_keys_on_a_cpu_node_are_errors_naming_the_key() {
    config_error(&node("a", "device = 1"), &["nodes.a.device", "provider = \"cuda\""]);
    config_error(&node("a", "cuda = { tf32 = false }"), &["nodes.a.cuda", "provider = \"cuda\""]);
}

#[test]
fn bad_cuda_options_are_errors_naming_the_key() {
    config_error(&node("a", "provider = \"rocm\""), &["provider", "rocm", "cpu", "cuda"]);
    config_error(
        &node("a", &format!("{ON_CUDA0}\ncuda = {{ cudnn_conv_algo_search = \"fast\" }}")),
        &["cudnn_conv_algo_search", "fast", "exhaustive"],
    );
    config_error(&node("a", &format!("{ON_CUDA0}\ncuda = {{ arena = 5 }}")), &["arena"]);
    config_error(
        &node("a", &format!("{ON_CUDA0}\ncuda = {{ gpu_mem_limit = 0 }}")),
        &["nodes.a.cuda.gpu_mem_limit", "at least 1"],
    );
    config_error(&node("a", "provider = \"cuda\"\ndevice = 64"), &["nodes.a.device", "out of range"]);
}

#[test]
fn a_cuda_graph_node_runs_fixed_buffers_per_size_and_without_sessions_per_size_is_refused() {
    let toml = node("a", &format!("{ON_CUDA0}\ncuda = {{ cuda_graph = true }}"));
    let spec = spec(&GatedEngines::default(), &toml).unwrap();
    let sizes = &spec.nodes[0].stages[0].request.batch_sizes;
    assert!(sizes.session_per_size() && sizes.fixed_buffers() && !sizes.is_empty());
    config_error(
        &node("a", &format!("{ON_CUDA0}\nsession_per_size = false\ncuda = {{ cuda_graph = true }}")),
        &["nodes.a.cuda.cuda_graph", "session_per_size = false"],
    );
}

#[test]
fn device_entries_must_be_used_and_have_a_budget() {
    config_error(
        &format!("{}[devices.cuda1]\nbudget = 2\n", node("a", ON_CUDA0)),
        &["devices.cuda1", "no node runs on `cuda1`", "cuda0"],
    );
    config_error(&format!("{}[devices.cuda0]\nbudget = 0\n", node("a", ON_CUDA0)), &["devices.cuda0.budget"]);
}

#[test]
fn a_remote_stage_on_a_cuda_node_is_an_error_naming_the_node() {
    let toml = "[inputs.x]\nto = [\"r.x\"]\n[outputs.y]\nfrom = \"r.y\"\n\
                [nodes.r]\nstages = [{ remote = \"grpc://localhost:8001\", model = \"m\" }]\nprovider = \"cuda\"\n";
    config_error(toml, &["nodes.r.stages[0].remote", "node `r`", "provider = \"cuda\""]);
}

#[test]
fn a_provider_that_cannot_ready_the_device_is_one_error_naming_the_node() {
    let engines = GatedEngines { refuse: Some("no GPU here; run scripts/setup.sh --gpu".into()), ..Default::default() };
    let err = spec(&engines, &format!("{}{}", node("cpu", ""), node("gpu", ON_CUDA0))).err().expect("refused");
    assert!(err.starts_with("nodes.gpu.provider: no GPU here; run scripts/setup.sh --gpu"), "{err}");
    // CPU nodes never ask their engines to prepare.
    spec(&engines, &node("cpu", "")).unwrap();
}

#[test]
fn two_gpu_nodes_never_run_more_batches_than_the_device_budget_and_cpu_nodes_go_on() {
    let engines = GatedEngines::default();
    let toml = format!("{}{}{}[devices.cuda0]\nbudget = 1\n", node("a", ON_CUDA0), node("b", ON_CUDA0), node("c", ""));
    let (runtime, snapshotter) = start(&engines, &toml);
    let _open = engines.open_on_drop();
    engines.close("a");
    let on_a = runtime.submit(request("a", 1.0));
    wait_until("a's batch holds the device", || engines.inside("a") == 1);
    let on_b = runtime.submit(request("b", 2.0));
    // A CPU node runs while the device is busy; the decision that picked it had b pending.
    runtime.submit(request("c", 3.0)).wait().unwrap();
    assert_eq!(picks(&snapshotter, "b"), 0, "b waits while a holds the device's only slot");
    assert_eq!(runtime.pending(1), (1, 0));
    engines.open("a");
    on_a.wait().unwrap();
    on_b.wait().unwrap();
    assert_eq!(picks(&snapshotter, "b"), 1);
    assert_eq!(engines.entered(), ["a", "c", "b"]);
}

#[test]
fn a_device_with_a_budget_of_two_runs_two_batches_at_once() {
    let engines = GatedEngines::default();
    let toml = format!("{}{}[devices.cuda0]\nbudget = 2\n", node("a", ON_CUDA0), node("b", ON_CUDA0));
    let (runtime, _) = start(&engines, &toml);
    let _open = engines.open_on_drop();
    engines.close("a");
    engines.close("b");
    let tickets = [runtime.submit(request("a", 1.0)), runtime.submit(request("b", 2.0))];
    wait_until("both batches are on the device", || engines.inside("a") == 1 && engines.inside("b") == 1);
    engines.open("a");
    engines.open("b");
    for t in tickets {
        t.wait().unwrap();
    }
}

#[test]
fn a_cpu_node_runs_a_batch_on_every_worker_at_once_under_the_default_budget() {
    let engines = GatedEngines::default();
    let toml = node("a", "workers = 3\nmax_batch = 1");
    assert_eq!(spec(&engines, &toml).unwrap().compute_budget, 3.0, "cost 1 × 3 workers");
    let (runtime, _) = start(&engines, &toml);
    let _open = engines.open_on_drop();
    engines.close("a");
    let tickets: Vec<_> = (0..3).map(|i| runtime.submit(request("a", i as f32))).collect();
    wait_until("each of the three workers runs a batch", || engines.inside("a") == 3);
    engines.open("a");
    for t in tickets {
        t.wait().unwrap();
    }
}

#[test]
fn the_device_goes_to_the_priority_node_first() {
    let engines = GatedEngines::default();
    // `a` would win on inference priority (3 tasks against 1); `b` holds a priority task.
    let toml = format!(
        "{}{}{}[devices.cuda0]\nbudget = 1\n",
        node("a", ON_CUDA0),
        node("b", ON_CUDA0),
        node("holder", ON_CUDA0)
    );
    let (runtime, _) = start(&engines, &toml);
    let _open = engines.open_on_drop();
    engines.close("holder");
    let held = runtime.submit(request("holder", 0.0));
    wait_until("the holder has the device", || engines.inside("holder") == 1);
    let normal: Vec<_> = (1..=3).map(|i| runtime.submit(request("a", i as f32))).collect();
    let urgent = runtime.submit(request("b", 9.0).priority(true));
    assert_eq!((runtime.pending(0).0, runtime.pending(1)), (3, (1, 1)));
    engines.open("holder");
    held.wait().unwrap();
    urgent.wait().unwrap();
    for t in normal {
        t.wait().unwrap();
    }
    assert_eq!(engines.entered()[..3], ["holder", "b", "a"], "{:?}", engines.entered());
}

#[test]
fn bytes_engines_copy_between_host_and_device_are_counted_per_node_and_cpu_nodes_read_0() {
    let engines = GatedEngines::default();
    let (runtime, snapshotter) = start(&engines, &format!("{}{}", node("a", ON_CUDA0), node("c", "")));
    for i in 0..3 {
        runtime.submit(request("a", i as f32)).wait().unwrap();
    }
    for i in 0..2 {
        runtime.submit(request("c", i as f32)).wait().unwrap();
    }
    let stats = runtime.node_stats();
    assert_eq!((stats[0].name.as_str(), stats[0].host_device_bytes), ("a", 3 * 4), "three 1×1 f32 inputs");
    assert_eq!((stats[1].name.as_str(), stats[1].host_device_bytes), ("c", 0));
    let metric: u64 = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == baton::metrics::HOST_DEVICE_BYTES)
        .map(|(.., value)| match value {
            DebugValue::Counter(c) => c,
            _ => 0,
        })
        .sum();
    assert_eq!(metric, 12, "the metric counts the same bytes");
}

/// The batch sizes node `name`'s first stage runs at.
fn batch_sizes(spec: &PipelineSpec, name: &str) -> Vec<usize> {
    let node = spec.nodes.iter().find(|n| n.name == name).unwrap();
    node.stages[0].request.batch_sizes.sizes().to_vec()
}

#[test]
fn a_cuda_node_runs_powers_of_two_and_halfway_sizes_and_a_cpu_node_its_own_rows() {
    let toml = format!(
        "{}{}{}",
        node("a", &format!("{ON_CUDA0}\nmax_batch = 24")),
        node("b", "max_batch = 24"),
        node("c", &format!("{ON_CUDA0}\nmax_batch = 8\nbatch_sizes = []")),
    );
    let built = spec(&GatedEngines::default(), &toml).unwrap();
    assert_eq!(batch_sizes(&built, "a"), [1, 2, 3, 4, 6, 8, 12, 16, 24]);
    assert_eq!(batch_sizes(&built, "b"), Vec::<usize>::new(), "a CPU node runs each batch at its rows");
    assert_eq!(batch_sizes(&built, "c"), Vec::<usize>::new(), "`batch_sizes = []` opts out");
    let declared = spec(&GatedEngines::default(), &node("d", "max_batch = 8\nbatch_sizes = [2, 8]")).unwrap();
    assert_eq!(batch_sizes(&declared, "d"), [2, 8], "a CPU node may declare sizes");
}

#[test]
fn batch_sizes_that_leave_a_batch_without_a_size_or_do_not_ascend_are_refused() {
    config_error(&node("a", "max_batch = 8\nbatch_sizes = [1, 4]"), &["nodes.a.batch_sizes", "(4)", "max_batch (8)"]);
    config_error(&node("a", "max_batch = 8\nbatch_sizes = [4, 2, 8]"), &["nodes.a.batch_sizes", "ascending"]);
    config_error(&node("a", "max_batch = 8\nbatch_sizes = [0, 8]"), &["nodes.a.batch_sizes", "at least 1"]);
}

#[test]
fn efficient_batches_with_batch_sizes_are_refused_naming_both_keys() {
    config_error(
        &node("a", "max_batch = 8\nbatch_sizes = [2, 8]\nefficient_batches = true"),
        &["nodes.a.efficient_batches", "[2, 8]", "`batch_sizes`"],
    );
    // A CUDA node's default sizes count too; `batch_sizes = []` lets its batches choose their rows.
    config_error(
        &node("c", &format!("{ON_CUDA0}\nmax_batch = 8\nefficient_batches = true")),
        &["nodes.c.efficient_batches"],
    );
    let chosen = node("c", &format!("{ON_CUDA0}\nmax_batch = 8\nbatch_sizes = []\nefficient_batches = true"));
    assert!(spec(&GatedEngines::default(), &chosen).unwrap().nodes[0].efficient_batches);
}

#[test]
fn piece_rows_past_max_batch_off_the_sizes_or_with_a_session_per_size_are_refused_naming_the_key() {
    config_error(&node("a", "max_batch = 8\npiece_rows = 16"), &["nodes.a.piece_rows", "max_batch (8)"]);
    config_error(&node("a", "max_batch = 8\npiece_rows = 0"), &["nodes.a.piece_rows", "between 1"]);
    config_error(
        &node("a", "max_batch = 8\nbatch_sizes = [2, 4, 8]\npiece_rows = 3"),
        &["nodes.a.piece_rows", "one of the node's batch sizes [2, 4, 8]"],
    );
    // A CUDA node's default sizes run a session each: pieces need one session for them all.
    config_error(
        &node("c", &format!("{ON_CUDA0}\nmax_batch = 8\npiece_rows = 4")),
        &["nodes.c.piece_rows", "`session_per_size = false`"],
    );
    let one_session = node("c", &format!("{ON_CUDA0}\nmax_batch = 8\npiece_rows = 4\nsession_per_size = false"));
    let built = spec(&GatedEngines::default(), &one_session).unwrap();
    assert_eq!(built.nodes[0].stages[0].request.batch_sizes.piece_rows(), Some(4));
    let cpu = spec(&GatedEngines::default(), &node("a", "max_batch = 32\npiece_rows = 8")).unwrap();
    assert_eq!(cpu.nodes[0].stages[0].request.batch_sizes.piece_rows(), Some(8));
    assert_eq!(batch_sizes(&cpu, "a"), Vec::<usize>::new(), "pieces pad nothing of their own");
}

#[test]
fn batch_sizes_on_a_node_with_per_stream_state_are_refused_naming_the_node() {
    let toml = "[inputs.x]\nto = [\"s.x\"]\n[outputs.y]\nfrom = \"s.y\"\n\
                [nodes.s]\nstages = [{ engine = \"test\", params = { node = \"s\" } }]\nmax_batch = 4\n\
                batch_sizes = [1, 2, 4]\nstate = [{ output = \"y\", input = \"x\" }]\n";
    config_error(toml, &["nodes.s.batch_sizes", "node `s` keeps per-stream state"]);
}

/// Which outputs of node `name`'s first stage stay in device memory, when the test
/// engine stands in for the onnx engine (the rule keeps only ONNX stages' outputs there).
fn device_outputs(toml: &str, name: &str) -> Vec<bool> {
    let config = PipelineConfig::parse(&toml.replace("engine = \"test\"", "engine = \"onnx\"")).unwrap();
    let registry = EngineRegistry::new().with("onnx", GatedEngines::default());
    let spec = PipelineSpec::build(&config, None, &registry).unwrap_or_else(|e| panic!("{e}"));
    spec.nodes.iter().find(|n| n.name == name).unwrap().stages[0].request.device_outputs.clone()
}

/// `a` feeds `b` (`a.y` → `b.x`); `b.y` is the pipeline output.
fn chain(a: &str, b: &str) -> String {
    format!(
        "[inputs.x]\nto = [\"a.x\"]\n[outputs.y]\nfrom = \"b.y\"\n[[edges]]\nfrom = \"a.y\"\nto = \"b.x\"\n\
         [nodes.a]\nstages = [{{ engine = \"test\", params = {{ node = \"a\" }} }}]\n{a}\n\
         [nodes.b]\nstages = [{{ engine = \"test\", params = {{ node = \"b\" }} }}]\n{b}\n"
    )
}

#[test]
fn an_output_read_only_by_nodes_on_the_same_gpu_stays_in_its_memory() {
    assert_eq!(device_outputs(&chain(ON_CUDA0, ON_CUDA0), "a"), [true]);
    assert_eq!(
        device_outputs(&chain(ON_CUDA0, ON_CUDA0), "b"),
        Vec::<bool>::new(),
        "a pipeline output comes to the host"
    );
    assert_eq!(device_outputs(&chain(ON_CUDA0, ""), "a"), Vec::<bool>::new(), "a CPU node reads host memory");
    let other = "provider = \"cuda\"\ndevice = 1";
    assert_eq!(device_outputs(&chain(ON_CUDA0, other), "a"), Vec::<bool>::new(), "another device reads host memory");
    // Also a pipeline output: it must come to the host.
    let both = chain(ON_CUDA0, ON_CUDA0) + "[outputs.h]\nfrom = \"a.y\"\n";
    assert_eq!(device_outputs(&both, "a"), Vec::<bool>::new());
}
