//! The pipeline file: a TOML schema, parsed strictly.
//!
//! This module only says what a pipeline file may contain (unknown keys are
//! errors, never ignored); [`crate::spec`] checks that what it says makes
//! sense and turns it into a [`crate::spec::PipelineSpec`]. Every field has a
//! default that suits a small pipeline; units are in the field docs.
//!
//! ```toml
//! [pipeline]
//! name = "diamond"
//!
//! [scheduler]
//! tick_us = 500            # scheduling period, µs
//! compute_budget = 2.0     # sum of node `cost` that may run at once
//!
//! [inputs.x]
//! to = ["embed.x"]         # feeds input `x` of node `embed`
//!
//! [outputs.out]
//! from = "join.out"        # output `out` of node `join`
//!
//! [nodes.embed]
//! stages = [{ model = "../models/embed.onnx" }]
//! max_batch = 32
//!
//! [[edges]]
//! from = "embed.h"
//! to = "join.h"
//!
//! [[nodes.embed.worker_groups]]   # optional: workers of different kinds (see WorkerGroupConfig)
//! kind = "wide"
//! workers = 1
//! intra_threads = 4
//!
//! [fairness]               # optional: tenants' shares of each node's batches
//! order = "weighted"       # "fifo" (default), "weighted" (the weighted-fair rule) or "stride"
//! tenants = { alice = 1, bob = 2 }
//! granule = 8              # split requests larger than max_batch into jobs of 8·k rows
//!
//! [devices.cuda0]          # optional: a GPU nodes run on (`provider = "cuda"`, see crate::execution)
//! budget = 2               # batches that may run on it at once
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::execution::{CudaOptions, DeviceConfig, ProviderKind};

mod scheduler;
pub use scheduler::{BackgroundScope, BatchingPolicy, OnMisfit, SchedulerConfig, Selection};

/// A whole pipeline file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    #[serde(default)]
    pub pipeline: PipelineSection,
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// Pipeline inputs by name: the tensors a request carries.
    #[serde(default)]
    pub inputs: BTreeMap<String, InputConfig>,
    /// Pipeline outputs by name: the tensors a request's answer carries.
    #[serde(default)]
    pub outputs: BTreeMap<String, OutputConfig>,
    /// Inference nodes by name.
    #[serde(default)]
    pub nodes: BTreeMap<String, NodeConfig>,
    /// Tensor routes between nodes.
    #[serde(default)]
    pub edges: Vec<EdgeConfig>,
    /// Per-stream state limits.
    #[serde(default)]
    pub streams: StreamsConfig,
    /// Request-level fairness between tenants, and decomposition of large
    /// requests (see [`FairnessConfig`]).
    #[serde(default)]
    pub fairness: FairnessConfig,
    /// GPUs the nodes share, by name (`cuda0`, ...): each one's budget (see [`crate::execution`]).
    #[serde(default)]
    pub devices: BTreeMap<String, DeviceConfig>,
}

/// `[streams]`: limits on per-stream state (write-back edges).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamsConfig {
    /// A stream with no chunk for this long is closed and its state freed, ms.
    pub idle_timeout_ms: u64,
    /// Most bytes of state all open streams may hold together; a new stream past it is refused.
    pub max_state_bytes: usize,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        StreamsConfig { idle_timeout_ms: 60_000, max_state_bytes: 256 << 20 }
    }
}

/// `[[nodes.NAME.state]]`: a write-back edge. After a stream's chunk succeeds, the
/// node's `output` becomes its `input` for that stream's next chunk.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    /// The node input the state feeds (not fed by edges or pipeline inputs).
    pub input: String,
    /// The node output written back.
    pub output: String,
    /// Initial value for a new stream: a `.npy` file (relative to the pipeline file). Default: zeros.
    pub initial: Option<String>,
    /// Shape of one stream's state without the batch dim, when the model leaves dims dynamic.
    pub shape: Option<Vec<usize>>,
}

/// `[pipeline]`: name and admission.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineSection {
    /// Name the pipeline is served and reported under.
    pub name: String,
    /// Most requests in flight (submitted, not yet answered) at once; past it
    /// `submit` answers at once with a queue-full error.
    pub max_in_flight: usize,
}

impl Default for PipelineSection {
    fn default() -> Self {
        PipelineSection { name: "pipeline".into(), max_in_flight: 65_536 }
    }
}

/// `[inputs.NAME]`: one pipeline input.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputConfig {
    /// Node inputs it feeds, as `node.tensor`.
    pub to: Vec<String>,
    /// Expected dtype (checked against the models; taken from them when absent).
    pub dtype: Option<String>,
    /// Expected shape, batch dim first, `-1` for dynamic dims (checked against the models).
    pub shape: Option<Vec<i64>>,
    /// A request may leave it out: then the nodes that need it (and everything
    /// downstream of them) do not run for that request, and the outputs they
    /// would produce are absent from its answer.
    #[serde(default)]
    pub optional: bool,
}

/// `[outputs.NAME]`: one pipeline output.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// The node output it is, as `node.tensor`.
    pub from: String,
}

/// `[nodes.NAME]`: one inference node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Model stages run in sequence on each batch; a stage's inputs come from
    /// the node's inputs or from earlier stages' outputs, by tensor name.
    pub stages: Vec<StageConfig>,
    /// Most rows (dim 0) stitched into one batch.
    #[serde(default = "defaults::max_batch")]
    pub max_batch: usize,
    /// Collaborative rule: most rows in a batch that holds a priority task
    /// (priority tasks first, then others up to this), so the answer waits on a
    /// shorter batch ("Priority batch cap" in docs/scheduling.md). Default: `max_batch`.
    pub priority_max_batch: Option<usize>,
    /// Each worker caps its batches at the size whose rows cost least, as it measures its own
    /// batches (the powers of two up to `max_batch`, and `max_batch`): for a model whose cost
    /// per row rises past some size on this machine. See `docs/scheduling.md`, "Efficient
    /// batches". Refused with `batch_sizes` (those fix the sizes instead).
    #[serde(default)]
    pub efficient_batches: bool,
    /// Collaboration weight: inference priority = pending tasks × weight.
    #[serde(default = "defaults::one")]
    pub weight: f64,
    /// Compute this node holds against the scheduler's budget while it runs.
    #[serde(default = "defaults::one")]
    pub cost: f64,
    /// Worker threads, each owning its own engine sessions (default 1). Leave
    /// it out when the node has `worker_groups` (their `workers` add up instead).
    pub workers: Option<usize>,
    /// Cores to pin workers to: worker i runs on `cores[i % len]`. Empty: not pinned.
    #[serde(default)]
    pub cores: Vec<usize>,
    /// Engine intra-op threads per worker (ONNX Runtime `intra_op_num_threads`).
    #[serde(default = "defaults::one_usize")]
    pub intra_threads: usize,
    /// Engine inter-op threads per worker.
    #[serde(default = "defaults::one_usize")]
    pub inter_threads: usize,
    /// How long an idle worker spins for its next instruction before parking, µs.
    #[serde(default = "defaults::idle_spin_us")]
    pub idle_spin_us: u64,
    /// Write-back edges: per-stream state carried to the stream's next chunk.
    #[serde(default)]
    pub state: Vec<StateConfig>,
    /// Ragged batching: inputs whose dynamic dims may differ between requests and are padded.
    #[serde(default)]
    pub pad: Vec<PadConfig>,
    /// Most tasks waiting in this node's buffer. A request that would enter the
    /// pipeline at this node while that many wait is refused at once (a queue-full
    /// error naming the node). Tasks arriving from upstream nodes are already
    /// admitted and never refused; `pipeline.max_in_flight` bounds them. Default: no
    /// bound of its own.
    pub max_queue: Option<usize>,
    /// Fault injection for drills and tests (off unless given).
    pub faults: Option<FaultConfig>,
    /// Workers of different kinds instead of `workers` identical ones (see
    /// [`WorkerGroupConfig`]). Empty: every worker is alike, as without groups.
    #[serde(default)]
    pub worker_groups: Vec<WorkerGroupConfig>,
    /// With `worker_groups`: a task that waited this long for a worker of a
    /// group that fits it without being taken *fails its round*: it goes to
    /// the back of its queue to be retried, and the retry is counted
    /// (`baton_placement_retries_total`, [`crate::NodeStats::placement_retries`]).
    /// Checked every scheduler tick. Unset: tasks wait without retries.
    pub placement_timeout_us: Option<u64>,
    /// A remote node only (its stage names `remote`): most batches in flight to
    /// the server at once (default 4). It holds no local cores: its batches
    /// take nothing from `compute_budget`; one worker thread per batch in flight.
    pub window: Option<usize>,
    /// Where the node's model stages run: `cpu` (default) or `cuda` (see [`crate::execution`]).
    #[serde(default)]
    pub provider: ProviderKind,
    /// With `provider = "cuda"`: the CUDA device index (default 0).
    pub device: Option<usize>,
    /// With `provider = "cuda"`: the CUDA provider's options.
    pub cuda: Option<CudaOptions>,
    /// The batch sizes (rows) the node's ONNX stages run at: a batch is padded
    /// up to the next size with zero rows, dropped from the outputs, and every
    /// size runs once when the node's workers start, so the first request of a
    /// size pays no set-up (see [`crate::batch_sizes`]). `[]`: batches run at
    /// the rows they have. Default: powers of two and the sizes halfway between
    /// them up to `max_batch` on a CUDA node without per-stream state, `[]` otherwise. Refused on a node with
    /// `state` (its rows are streams, not independent rows).
    pub batch_sizes: Option<Vec<usize>>,
    /// Whether each of the node's batch sizes runs in an ONNX Runtime session of its own,
    /// which only ever sees that size's shape (see [`crate::batch_sizes`]). Default: `true` on
    /// a CUDA node with batch sizes, `false` otherwise; `true` needs batch sizes.
    pub session_per_size: Option<bool>,
    /// The most rows one engine run takes: a larger batch runs through each ONNX stage in
    /// pieces of this many rows, one after another, each written into the batch's own output
    /// buffers (see [`crate::batch_sizes`], "Pieces"). For a model that runs a row cheapest at
    /// a batch smaller than the node's `max_batch`, while the node still stitches, routes and
    /// answers whole batches. Default: whole batches.
    pub piece_rows: Option<usize>,
}

/// `[[nodes.NAME.worker_groups]]`: a group of a node's workers of one *kind*.
///
/// ```toml
/// [nodes.embed]
/// stages = [{ model = "embed.onnx" }]
/// max_batch = 32
/// placement_timeout_us = 2000      # a task not placed within 2 ms is retried (counted)
/// [[nodes.embed.worker_groups]]
/// kind = "narrow"                  # a name requests can ask for
/// workers = 2
/// intra_threads = 1
/// max_rows = 8                     # capacity: most rows per batch, so a larger task never runs here
/// [[nodes.embed.worker_groups]]
/// kind = "wide"
/// workers = 1
/// intra_threads = 4
/// cores = [2, 3]
/// ```
///
/// A task may run on a worker of a group when the group's capacity holds it
/// (`max_rows`) and, if its request asks for a kind ([`crate::Request::worker_kind`])
/// that this node has, the group is of that kind. A request asking for a kind
/// this node lacks runs on any group here (kinds are per node: a pipeline may
/// give only some nodes a "wide" group); a kind no node has is refused as
/// invalid input, naming it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerGroupConfig {
    /// The group's kind: unique within the node.
    pub kind: String,
    /// Worker threads in the group.
    #[serde(default = "defaults::one_usize")]
    pub workers: usize,
    /// Engine intra-op threads per worker of this group (default: the node's `intra_threads`).
    pub intra_threads: Option<usize>,
    /// Engine inter-op threads per worker of this group (default: the node's `inter_threads`).
    pub inter_threads: Option<usize>,
    /// Cores to pin this group's workers to: its worker i runs on `cores[i % len]`
    /// (default: the node's `cores`, by the worker's index in the node).
    #[serde(default)]
    pub cores: Vec<usize>,
    /// Capacity: most rows one batch of this group holds (default: the node's
    /// `max_batch`); a task with more rows is never placed here.
    pub max_rows: Option<usize>,
}

/// `[nodes.NAME.faults]`: makes a share of this node's stage runs fail on purpose,
/// to see that the rest of the pipeline keeps its promises. Each stage run draws
/// once: with probability `error` it fails with an error, `panic` it panics
/// (caught; the stage's engine is then recreated), `slow` it takes `slow_factor`
/// times as long. Draws come from a generator seeded by `seed`, the node and the
/// worker, so a drill repeats.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    /// Share of stage runs that return an error, 0..=1.
    pub error: f64,
    /// Share of stage runs that panic, 0..=1.
    pub panic: f64,
    /// Share of stage runs that are slowed down, 0..=1.
    pub slow: f64,
    /// How many times its own time a slowed run takes (at least 1).
    pub slow_factor: f64,
    /// Seed of the draws.
    pub seed: u64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig { error: 0.0, panic: 0.0, slow: 0.0, slow_factor: 10.0, seed: 0 }
    }
}

/// `[[nodes.NAME.pad]]`: lets requests whose `input` differs along `axes` batch
/// together, padded with `value` up to the batch's largest (rounded up to a
/// `multiple` where given); outputs listed in `cut` are cut back per request
/// along their axes, in proportion.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PadConfig {
    /// The node input to pad.
    pub input: String,
    /// Its axes that may differ (dynamic dims, not the batch dim).
    pub axes: Vec<usize>,
    /// Padding value.
    #[serde(default)]
    pub value: f64,
    /// Per axis in `axes`: the padded extent is rounded up to a multiple of this, so that
    /// batches of differing extents run at fewer shapes (default: the batch's largest as it is).
    #[serde(default)]
    pub multiple: Vec<usize>,
    /// Node outputs to cut back per request: output name -> its axes matching `axes`, in order.
    #[serde(default)]
    pub cut: BTreeMap<String, Vec<usize>>,
}

/// One stage of a node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageConfig {
    /// Model file, relative to the pipeline file's folder (for a function stage:
    /// a file the function reads, if it takes one).
    pub model: Option<String>,
    /// Engine kind: `onnx` (default for model stages) or another registered kind such as `cost_model`.
    pub engine: Option<String>,
    /// A KServe v2 gRPC server (`grpc://HOST:PORT`) that runs this stage: `model`
    /// is then the model's name there, not a file (see docs/remote.md).
    pub remote: Option<String>,
    /// A remote stage only: the server need not answer at load; its signature
    /// is then given in `params` (`inputs`, `outputs`).
    #[serde(default)]
    pub lazy: bool,
    /// A remote stage only: the remote model keeps per-stream state, so each
    /// chunk goes with its stream's id, start and end, one chunk of a stream at a time.
    #[serde(default)]
    pub stateful: bool,
    /// A Rust processing stage registered by the embedding program under this name.
    pub function: Option<String>,
    /// Engine-specific settings, read by the engine into its own config.
    #[serde(default)]
    pub params: crate::engine::StageParams,
}

/// `[[edges]]`: one node output routed to one node input.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeConfig {
    /// `node.tensor` of the producing node's output.
    pub from: String,
    /// `node.tensor` of the consuming node's input.
    pub to: String,
}

mod defaults {
    pub fn max_batch() -> usize {
        32
    }
    pub fn one() -> f64 {
        1.0
    }
    pub fn one_usize() -> usize {
        1
    }
    pub fn idle_spin_us() -> u64 {
        50
    }
}

/// A pipeline file that cannot be used: which file, where in it, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The pipeline file, when it came from one.
    pub file: Option<PathBuf>,
    /// Where in the file, as a dotted path (`nodes.embed.max_batch`); empty for the whole file.
    pub location: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(location: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { file: None, location: location.into(), message: message.into() }
    }

    pub(crate) fn in_file(mut self, file: Option<&Path>) -> Self {
        self.file = file.map(Path::to_path_buf);
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if !self.location.is_empty() {
            write!(f, "{}: ", self.location)?;
        }
        f.write_str(&self.message)
    }
}

impl PipelineConfig {
    /// Parses TOML text. Unknown keys and wrong types are errors naming the key and line.
    pub fn parse(text: &str) -> Result<PipelineConfig, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::new("", e.to_string().trim_end().to_string()))
    }

    /// Reads and parses a pipeline file.
    pub fn read(path: &Path) -> Result<PipelineConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new("", format!("cannot read the pipeline file: {e}")).in_file(Some(path)))?;
        Self::parse(&text).map_err(|e| e.in_file(Some(path)))
    }
}

/// `[fairness] order`: how a node's buffer orders its tasks across tenants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FairnessKind {
    /// One first-come-first-served queue (tenants ignored).
    #[default]
    Fifo,
    /// The weighted-fair rule: a decaying history weight (docs/scheduling.md).
    Weighted,
    /// Stride scheduling (a reference order: pass += 1/weight, least pass first).
    Stride,
}

impl FairnessKind {
    /// The name `[fairness] order` gives it.
    pub fn name(self) -> &'static str {
        match self {
            FairnessKind::Fifo => "fifo",
            FairnessKind::Weighted => "weighted",
            FairnessKind::Stride => "stride",
        }
    }
}

/// `[fairness]`: request-level fairness inside each node, and decomposition of large requests.
///
/// ```toml
/// [fairness]
/// order = "weighted"                   # "fifo" (default), "weighted" (the weighted-fair rule) or "stride"
/// tenants = { alice = 1, bob = 2 }     # weights, whole numbers 1..=65536; others default to 1
/// granule = 8                          # split requests with more rows than max_batch (see `split`)
/// ```
///
/// Requests name their tenant with [`crate::Request::tenant`]; a request
/// without one belongs to tenant `default` (weight 1, or as given in
/// `tenants`). A request naming a tenant the table does not list is refused
/// as invalid input, with an error naming it: a typo should not silently
/// land in another tenant's share.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FairnessConfig {
    /// How a node's buffer orders tasks across tenants (`policy`, its older name, is read too).
    #[serde(alias = "policy")]
    pub order: FairnessKind,
    /// Tenant name → configured weight (a whole number, 1..=65536).
    pub tenants: std::collections::BTreeMap<String, u32>,
    /// Decomposition: a request with more rows than the pipeline's smallest
    /// `max_batch` is split into 2^n jobs whose rows are multiples of
    /// `granule` (rows). Unset: such requests are refused, as before.
    pub granule: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let err = PipelineConfig::parse("[nodes.a]\nstages = []\nmax_batc = 3\n").unwrap_err();
        assert!(err.message.contains("max_batc"), "{err}");
        let err = PipelineConfig::parse("[scheduler]\ntick = 3\n").unwrap_err();
        assert!(err.message.contains("tick"), "{err}");
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let cfg = PipelineConfig::parse("[nodes.a]\nstages = [{ model = \"m.onnx\" }]\n").unwrap();
        let node = &cfg.nodes["a"];
        assert_eq!((node.max_batch, node.workers, node.intra_threads), (32, None, 1));
        assert!(node.worker_groups.is_empty() && node.placement_timeout_us.is_none());
        assert_eq!(node.stages[0].engine, None);
        assert_eq!(cfg.scheduler.tick_us, 1000);
        assert_eq!(cfg.scheduler.selection, Selection::Budget);
    }

    #[test]
    fn errors_display_file_location_and_message() {
        let err = ConfigError::new("nodes.a.max_batch", "must be at least 1").in_file(Some(Path::new("p.toml")));
        assert_eq!(err.to_string(), "p.toml: nodes.a.max_batch: must be at least 1");
    }
}
