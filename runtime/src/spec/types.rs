//! The validated pipeline's types: nodes, stages, routes, inputs and outputs.

use std::path::PathBuf;
use std::sync::Arc;

use super::fairness::FairnessSpec;
use crate::config::{FaultConfig, SchedulerConfig, StreamsConfig};
use crate::engine::{EngineProvider, ModelSignature, StageRequest, TensorSpec};
pub use crate::execution::DeviceSpec;
use crate::execution::Execution;
use crate::tensor::Tensor;

/// Where a stage input comes from within its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageSource {
    /// The node's input slot.
    NodeInput(usize),
    /// Output `index` of an earlier stage.
    StageOutput { stage: usize, index: usize },
}

/// Where a node output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Input slot `slot` of node `node`.
    Node { node: usize, slot: usize },
    /// Pipeline output `index`.
    Output(usize),
    /// Write-back `index` of the producing node itself: the stream's next state.
    State(usize),
}

/// A validated write-back edge of a stateful node.
#[derive(Clone, Debug)]
pub struct StateSpec {
    /// The node input slot the state feeds.
    pub slot: usize,
    /// The node output written back.
    pub output: String,
    /// A new stream's state: batch dim 1.
    pub initial: Tensor,
}

/// One model stage of a node, ready to instantiate on a worker.
#[derive(Clone)]
pub struct StageSpec {
    pub request: StageRequest,
    pub engine: String,
    pub provider: Arc<dyn EngineProvider>,
    pub signature: ModelSignature,
    /// For each signature input, where its tensor comes from.
    pub sources: Vec<StageSource>,
}

impl StageSpec {
    /// A Rust processing stage (rather than a model).
    pub fn is_function(&self) -> bool {
        self.engine.starts_with("function:")
    }
}

/// Ragged batching of one node input: its `axes` may differ between tasks and are padded.
#[derive(Clone, Debug)]
pub struct PadSpec {
    pub slot: usize,
    pub axes: Vec<usize>,
    /// Per axis: the padded extent is a multiple of this (1: the largest as it is).
    pub multiples: Vec<usize>,
    pub value: f64,
    /// Outputs cut back per task: (route name, output axes matching `axes`).
    pub cuts: Vec<(String, Vec<usize>)>,
}

impl PadSpec {
    /// The extent a batch whose largest part is `largest` along `axes[i]` is padded to.
    pub fn extent(&self, i: usize, largest: usize) -> usize {
        crate::tensor::padded_extent(largest, self.multiples.get(i).copied().unwrap_or(1))
    }
}

/// One node output and the places it goes.
#[derive(Clone, Debug)]
pub struct Route {
    pub name: String,
    pub stage: usize,
    pub index: usize,
    pub targets: Vec<Target>,
}

/// A validated node.
#[derive(Clone)]
pub struct NodeSpec {
    pub name: String,
    pub stages: Vec<StageSpec>,
    /// The node's input slots, in slot order.
    pub inputs: Vec<TensorSpec>,
    pub routes: Vec<Route>,
    pub max_batch: usize,
    /// Most rows in a batch holding a priority task (the node's `priority_max_batch`, else `max_batch`).
    pub priority_max_batch: usize,
    /// Its workers cap their batches at their most efficient size (`efficient_batches`).
    pub efficient_batches: bool,
    pub weight: f64,
    /// What a running batch holds against `scheduler.compute_budget`: [`Resource::budget_cost`].
    pub cost: f64,
    /// What the node's batches hold while they run: cores, a window of batches in
    /// flight to a server, or a slot of a device's budget.
    pub resource: Resource,
    /// The node's stage keeps per-stream state on a remote server: its tasks
    /// need a stream, and a stream's chunks pass one at a time, in order.
    pub remote_streams: bool,
    pub workers: usize,
    pub cores: Vec<usize>,
    pub idle_spin_us: u64,
    /// Write-back edges; non-empty makes the node stateful (its tasks need a stream).
    pub state: Vec<StateSpec>,
    /// Ragged batching rules, at most one per input slot.
    pub pad: Vec<PadSpec>,
    /// Most tasks waiting before requests entering here are refused (see [`NodeConfig::max_queue`]).
    pub max_queue: Option<usize>,
    /// Injected faults, when configured (validated rates).
    pub faults: Option<FaultConfig>,
    /// Worker groups (`worker_groups`), in file order; empty: `workers` alike workers.
    pub groups: Vec<GroupSpec>,
    /// With groups: how long a task may wait for a fitting worker before its round fails, ns.
    pub placement_timeout_ns: Option<u64>,
    /// Where its stages run (`provider`, `device`, `cuda`).
    pub execution: Execution,
}

/// What a node holds while one of its batches runs (the budget rule, docs/remote.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Resource {
    /// Local compute: `cost` held against `scheduler.compute_budget` per running batch.
    Cores { cost: f64 },
    /// Batches in flight to a remote server: nothing held locally; at most
    /// `window` at once, one per worker thread.
    Remote { window: usize },
    /// One batch slot of device `index` in [`PipelineSpec::devices`] (a CUDA node,
    /// set by the builder once the pipeline's devices are known): no cores held.
    Device(usize),
}

impl Resource {
    /// What one running batch holds against the compute budget.
    pub fn budget_cost(&self) -> f64 {
        match *self {
            Resource::Cores { cost } => cost,
            Resource::Remote { .. } | Resource::Device(_) => 0.0,
        }
    }
}

/// A validated worker group of a node (see [`crate::config::WorkerGroupConfig`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    pub kind: String,
    /// Index of `kind` in [`PipelineSpec::worker_kinds`].
    pub kind_index: usize,
    pub workers: usize,
    /// Index in the node of the group's first worker (groups' workers are numbered in file order).
    pub first_worker: usize,
    pub intra_threads: usize,
    pub inter_threads: usize,
    pub cores: Vec<usize>,
    /// Most rows per batch (capacity): the node's `max_batch` when not given.
    pub max_rows: usize,
}

/// Most worker groups a node may have (a task's fitting groups are a 64-bit mask).
pub const MAX_GROUPS: usize = 64;

impl NodeSpec {
    /// The batch sizes an `efficient_batches` worker that takes at most `max_rows` rows
    /// chooses among: the powers of two below `max_rows`, and `max_rows` itself.
    pub fn efficient_batch_classes(max_rows: usize) -> Vec<usize> {
        let max_rows = max_rows.max(1);
        let mut rows: Vec<usize> =
            std::iter::successors(Some(1usize), |r| r.checked_mul(2)).take_while(|&r| r < max_rows).collect();
        rows.push(max_rows);
        rows
    }

    /// Chunks of one stream pass this node one at a time, in order: it keeps
    /// per-stream state here (write-back) or on its remote server.
    pub fn keeps_streams(&self) -> bool {
        !self.state.is_empty() || self.remote_streams
    }

    /// The group worker `index` of this node belongs to (`None` without groups).
    pub fn group_of(&self, index: usize) -> Option<usize> {
        self.groups.iter().position(|g| (g.first_worker..g.first_worker + g.workers).contains(&index))
    }

    /// Padded axes of each input slot (empty for slots that are not padded).
    pub fn pad_axes(&self) -> Vec<Vec<usize>> {
        let mut axes = vec![Vec::new(); self.inputs.len()];
        for pad in &self.pad {
            axes[pad.slot] = pad.axes.clone();
        }
        axes
    }
}

/// A validated pipeline input.
#[derive(Clone, Debug)]
pub struct InputSpec {
    pub spec: TensorSpec,
    pub targets: Vec<Target>,
    /// Requests may leave it out (see [`crate::config::InputConfig::optional`]).
    pub optional: bool,
}

/// A validated pipeline output.
#[derive(Clone, Debug)]
pub struct OutputSpec {
    pub spec: TensorSpec,
    /// The producing node.
    pub node: usize,
}

/// A pipeline checked end to end, ready to start.
#[derive(Clone)]
pub struct PipelineSpec {
    pub name: String,
    /// The file it was read from, if any.
    pub file: Option<PathBuf>,
    pub nodes: Vec<NodeSpec>,
    pub inputs: Vec<InputSpec>,
    pub outputs: Vec<OutputSpec>,
    pub scheduler: SchedulerConfig,
    /// The compute budget after defaults (sum of the CPU nodes' costs when unset).
    pub compute_budget: f64,
    /// The GPUs nodes run on, indexed by [`Resource::Device`], each with its budget.
    pub devices: Vec<DeviceSpec>,
    pub max_in_flight: usize,
    /// Nodes in an order where every node comes after all its parents.
    pub topo_order: Vec<usize>,
    pub streams: StreamsConfig,
    /// Request-level fairness and decomposition (`[fairness]`).
    pub fairness: FairnessSpec,
    /// Every worker-group kind of every node, sorted: what [`crate::Request::worker_kind`] may name.
    pub worker_kinds: Vec<String>,
}
