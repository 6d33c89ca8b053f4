//! The validated pipeline: nodes, their stages and signatures, and where every tensor goes.
//!
//! [`PipelineSpec::build`] turns a parsed [`PipelineConfig`] into a graph the
//! runtime can execute, checking everything before any thread starts: names
//! that refer to nothing, model files that are missing, tensor dtypes and
//! ranks that disagree along an edge, inputs fed twice or never, cycles, and
//! settings that could never work (a node costing more than the whole compute
//! budget, a fixed batch of 1 with `max_batch` 32, a core this machine lacks).
//! Each problem is one [`ConfigError`] naming the file, the place and the fix.
//!
//! Vocabulary: a node's *inputs* are the tensors its stages read that no
//! earlier stage of the node produced; each is fed by exactly one edge or
//! pipeline input. A node's *routes* say where each of its outputs goes: to
//! other nodes' inputs (fan-out allowed) and/or to pipeline outputs.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{
    ConfigError, FaultConfig, NodeConfig, OnMisfit, PipelineConfig, SchedulerConfig, Selection, StreamsConfig,
};
use crate::engine::{Dim, EngineProvider, EngineRegistry, ModelSignature, StageRequest, TensorSpec};
use crate::tensor::{DType, Tensor};

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
    pub value: f64,
    /// Outputs cut back per task: (route name, output axes matching `axes`).
    pub cuts: Vec<(String, Vec<usize>)>,
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
    pub weight: f64,
    pub cost: f64,
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
    /// The compute budget after defaults (sum of costs when unset).
    pub compute_budget: f64,
    pub max_in_flight: usize,
    /// Nodes in an order where every node comes after all its parents.
    pub topo_order: Vec<usize>,
    pub streams: StreamsConfig,
    /// Request-level fairness and decomposition (`[fairness]`).
    pub fairness: crate::fairness::FairnessSpec,
    /// Every worker-group kind of every node, sorted: what [`crate::Request::worker_kind`] may name.
    pub worker_kinds: Vec<String>,
}

type Result<T> = std::result::Result<T, ConfigError>;

fn err<T>(location: impl Into<String>, message: impl Into<String>) -> Result<T> {
    Err(ConfigError::new(location, message))
}

/// Splits `node.tensor`.
fn split_ref<'a>(location: &str, text: &'a str) -> Result<(&'a str, &'a str)> {
    match text.split_once('.') {
        Some((node, tensor)) if !node.is_empty() && !tensor.is_empty() => Ok((node, tensor)),
        _ => err(location, format!("`{text}` should be `node.tensor`")),
    }
}

impl PipelineSpec {
    /// Reads, parses and validates a pipeline file.
    pub fn from_file(path: &Path, engines: &EngineRegistry) -> Result<PipelineSpec> {
        let config = PipelineConfig::read(path)?;
        Self::build(&config, Some(path), engines)
    }

    /// Validates a parsed config. Model paths are resolved against `file`'s folder
    /// (or the current folder when there is no file).
    pub fn build(config: &PipelineConfig, file: Option<&Path>, engines: &EngineRegistry) -> Result<PipelineSpec> {
        Builder { config, base: file.and_then(Path::parent).unwrap_or(Path::new("")), engines }
            .build()
            .map(|mut spec| {
                spec.file = file.map(Path::to_path_buf);
                spec
            })
            .map_err(|e| e.in_file(file))
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Parents of each node (nodes that feed it), deduplicated.
    pub fn parents(&self) -> Vec<Vec<usize>> {
        let mut parents = vec![Vec::new(); self.nodes.len()];
        for (from, node) in self.nodes.iter().enumerate() {
            for route in &node.routes {
                for target in &route.targets {
                    if let Target::Node { node: to, .. } = *target {
                        if !parents[to].contains(&from) {
                            parents[to].push(from);
                        }
                    }
                }
            }
        }
        parents
    }

    /// Which nodes run for a request carrying the pipeline inputs marked in
    /// `present`: a node runs when every input slot is fed by a present pipeline
    /// input, a running node, or its own state. In topological order.
    pub fn running_nodes(&self, present: &[bool]) -> Vec<bool> {
        // fed[n][slot]: the slot has a value for this request.
        let mut fed: Vec<Vec<bool>> = self.nodes.iter().map(|n| vec![false; n.inputs.len()]).collect();
        for (n, node) in self.nodes.iter().enumerate() {
            for state in &node.state {
                fed[n][state.slot] = true;
            }
        }
        for (input, &here) in self.inputs.iter().zip(present) {
            for target in &input.targets {
                if let (Target::Node { node, slot }, true) = (*target, here) {
                    fed[node][slot] = true;
                }
            }
        }
        let mut runs = vec![false; self.nodes.len()];
        for &n in &self.topo_order {
            runs[n] = fed[n].iter().all(|&f| f);
            if runs[n] {
                for route in &self.nodes[n].routes {
                    for target in &route.targets {
                        if let Target::Node { node, slot } = *target {
                            fed[node][slot] = true;
                        }
                    }
                }
            }
        }
        runs
    }

    /// A readable picture of the graph, one line per node and route.
    pub fn describe(&self) -> String {
        let mut out = format!("pipeline `{}`: {} nodes\n", self.name, self.nodes.len());
        for input in &self.inputs {
            out += &format!(
                "  input  {} {} {} -> {}\n",
                input.spec.name,
                input.spec.dtype,
                input.spec.shape_string(),
                self.targets(&input.targets)
            );
        }
        for &n in &self.topo_order {
            let node = &self.nodes[n];
            let stages: Vec<String> = node
                .stages
                .iter()
                .map(|s| match &s.request.model {
                    Some(m) => format!("{}:{}", s.engine, m.file_name().unwrap_or_default().to_string_lossy()),
                    None => s.engine.clone(),
                })
                .collect();
            out += &format!(
                "  node   {} [{}] max_batch={} weight={} cost={} workers={}\n",
                node.name,
                stages.join(" -> "),
                node.max_batch,
                node.weight,
                node.cost,
                node.workers
            );
            for route in &node.routes {
                out += &format!("           .{} -> {}\n", route.name, self.targets(&route.targets));
            }
        }
        for output in &self.outputs {
            out += &format!(
                "  output {} {} {} <- {}\n",
                output.spec.name,
                output.spec.dtype,
                output.spec.shape_string(),
                self.nodes[output.node].name
            );
        }
        out
    }

    fn targets(&self, targets: &[Target]) -> String {
        let names: Vec<String> = targets
            .iter()
            .map(|t| match *t {
                Target::Node { node, slot } => {
                    format!("{}.{}", self.nodes[node].name, self.nodes[node].inputs[slot].name)
                }
                Target::Output(i) => format!("output {}", self.outputs[i].spec.name),
                Target::State(_) => "state (write-back)".to_string(),
            })
            .collect();
        names.join(", ")
    }
}

struct Builder<'a> {
    config: &'a PipelineConfig,
    base: &'a Path,
    engines: &'a EngineRegistry,
}

/// Checks that a tensor produced as `from` can be consumed as `to`.
fn check_compatible(location: &str, from: &TensorSpec, from_name: &str, to: &TensorSpec, to_name: &str) -> Result<()> {
    if from.dtype != to.dtype {
        return err(
            location,
            format!("dtype mismatch: `{from_name}` is {} but `{to_name}` takes {}", from.dtype, to.dtype),
        );
    }
    if from.shape.len() != to.shape.len() {
        return err(
            location,
            format!(
                "rank mismatch: `{from_name}` is {} (rank {}) but `{to_name}` takes {} (rank {})",
                from.shape_string(),
                from.shape.len(),
                to.shape_string(),
                to.shape.len()
            ),
        );
    }
    for (i, (a, b)) in from.shape.iter().zip(&to.shape).enumerate().skip(1) {
        if let (Dim::Fixed(x), Dim::Fixed(y)) = (a, b) {
            if x != y {
                return err(
                    location,
                    format!(
                        "shape mismatch at dim {i}: `{from_name}` is {} but `{to_name}` takes {}",
                        from.shape_string(),
                        to.shape_string()
                    ),
                );
            }
        }
    }
    Ok(())
}

impl Builder<'_> {
    fn build(&self) -> Result<PipelineSpec> {
        let cfg = self.config;
        if cfg.nodes.is_empty() {
            return err("nodes", "the pipeline has no nodes; add a `[nodes.NAME]` table");
        }
        if cfg.inputs.is_empty() {
            return err(
                "inputs",
                "the pipeline has no inputs; add an `[inputs.NAME]` table with `to = [\"node.tensor\"]`",
            );
        }
        if cfg.outputs.is_empty() {
            return err(
                "outputs",
                "the pipeline has no outputs; add an `[outputs.NAME]` table with `from = \"node.tensor\"`",
            );
        }
        if cfg.pipeline.max_in_flight == 0 {
            return err("pipeline.max_in_flight", "must be at least 1");
        }
        let names: Vec<&String> = cfg.nodes.keys().collect();
        let mut nodes = Vec::with_capacity(names.len());
        for (name, node) in &cfg.nodes {
            nodes.push(self.node(name, node)?);
        }
        let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();

        // Which source feeds each node input slot, for "fed twice / never" checks.
        let mut fed_by: Vec<Vec<Option<String>>> = nodes.iter().map(|n| vec![None; n.inputs.len()]).collect();
        for (n, node) in nodes.iter().enumerate() {
            for state in &node.state {
                fed_by[n][state.slot] = Some(format!("the node's own state (output `{}`)", state.output));
            }
        }
        let resolve_input = |location: &str, text: &str, nodes: &[NodeSpec]| -> Result<(usize, usize)> {
            let (node, tensor) = split_ref(location, text)?;
            let &n = index.get(node).ok_or_else(|| {
                ConfigError::new(location, format!("no node named `{node}` (nodes: {})", join(&names)))
            })?;
            let slot = nodes[n].inputs.iter().position(|i| i.name == tensor).ok_or_else(|| {
                let have: Vec<&str> = nodes[n].inputs.iter().map(|i| i.name.as_str()).collect();
                ConfigError::new(
                    location,
                    format!("node `{node}` has no input `{tensor}` (its inputs: {})", have.join(", ")),
                )
            })?;
            Ok((n, slot))
        };
        let feed = |location: &str,
                    target: &str,
                    n: usize,
                    slot: usize,
                    fed_by: &mut Vec<Vec<Option<String>>>|
         -> Result<()> {
            if let Some(other) = &fed_by[n][slot] {
                return err(
                    location,
                    format!("`{target}` is already fed by {other}; an input takes exactly one source"),
                );
            }
            fed_by[n][slot] = Some(location.to_string());
            Ok(())
        };

        // Edges.
        for (i, edge) in cfg.edges.iter().enumerate() {
            let location = format!("edges[{i}]");
            let (from_node, from_tensor) = split_ref(&format!("{location}.from"), &edge.from)?;
            let &f = index.get(from_node).ok_or_else(|| {
                ConfigError::new(
                    format!("{location}.from"),
                    format!("no node named `{from_node}` (nodes: {})", join(&names)),
                )
            })?;
            let route = nodes[f].routes.iter().position(|r| r.name == from_tensor).ok_or_else(|| {
                let have: Vec<&str> = nodes[f].routes.iter().map(|r| r.name.as_str()).collect();
                ConfigError::new(
                    format!("{location}.from"),
                    format!("node `{from_node}` has no output `{from_tensor}` (its outputs: {})", have.join(", ")),
                )
            })?;
            let (t, slot) = resolve_input(&format!("{location}.to"), &edge.to, &nodes)?;
            if t == f {
                return err(
                    &location,
                    format!("edge from `{}` to itself: a node cannot feed its own input", edge.from),
                );
            }
            let from_spec = output_spec(&nodes[f], route).clone();
            check_compatible(&location, &from_spec, &edge.from, &nodes[t].inputs[slot], &edge.to)?;
            feed(&location, &edge.to, t, slot, &mut fed_by)?;
            nodes[f].routes[route].targets.push(Target::Node { node: t, slot });
        }

        // Pipeline inputs.
        let mut inputs = Vec::new();
        for (name, input) in &cfg.inputs {
            let location = format!("inputs.{name}");
            if input.to.is_empty() {
                return err(format!("{location}.to"), "feeds nothing; list node inputs as `to = [\"node.tensor\"]`");
            }
            let mut spec: Option<TensorSpec> = None;
            let mut targets = Vec::new();
            for (j, to) in input.to.iter().enumerate() {
                let (n, slot) = resolve_input(&format!("{location}.to[{j}]"), to, &nodes)?;
                let slot_spec = nodes[n].inputs[slot].clone();
                if let Some(first) = &spec {
                    check_compatible(&format!("{location}.to[{j}]"), first, &input.to[0], &slot_spec, to)?;
                } else {
                    spec = Some(slot_spec);
                }
                feed(&location, to, n, slot, &mut fed_by)?;
                targets.push(Target::Node { node: n, slot });
            }
            let mut spec = spec.expect("at least one target");
            spec.name = name.clone();
            if let Some(dtype) = &input.dtype {
                let d = DType::parse(dtype).ok_or_else(|| {
                    ConfigError::new(
                        format!("{location}.dtype"),
                        format!("unknown dtype `{dtype}` (use one of {})", dtype_names()),
                    )
                })?;
                if d != spec.dtype {
                    return err(
                        format!("{location}.dtype"),
                        format!("says {d} but `{}` takes {}", input.to[0], spec.dtype),
                    );
                }
            }
            if let Some(shape) = &input.shape {
                let declared = TensorSpec {
                    name: name.clone(),
                    dtype: spec.dtype,
                    shape: dims_from_config(&format!("{location}.shape"), shape)?,
                };
                check_compatible(&format!("{location}.shape"), &declared, name, &spec, &input.to[0])?;
                spec.shape = declared.shape;
            }
            inputs.push(InputSpec { spec, targets, optional: input.optional });
        }

        // Every node input is fed.
        for (n, node) in nodes.iter().enumerate() {
            for (slot, fed) in fed_by[n].iter().enumerate() {
                if fed.is_none() {
                    let tensor = &node.inputs[slot].name;
                    return err(
                        format!("nodes.{}", node.name),
                        format!("input `{tensor}` is fed by nothing; add an edge with `to = \"{}.{tensor}\"` or list it in a pipeline input's `to`", node.name),
                    );
                }
            }
        }

        // Pipeline outputs.
        let mut outputs = Vec::new();
        for (i, (name, output)) in cfg.outputs.iter().enumerate() {
            let location = format!("outputs.{name}.from");
            let (node, tensor) = split_ref(&location, &output.from)?;
            let &n = index.get(node).ok_or_else(|| {
                ConfigError::new(&location, format!("no node named `{node}` (nodes: {})", join(&names)))
            })?;
            let route = nodes[n].routes.iter().position(|r| r.name == tensor).ok_or_else(|| {
                let have: Vec<&str> = nodes[n].routes.iter().map(|r| r.name.as_str()).collect();
                ConfigError::new(
                    &location,
                    format!("node `{node}` has no output `{tensor}` (its outputs: {})", have.join(", ")),
                )
            })?;
            let mut spec = output_spec(&nodes[n], route).clone();
            spec.name = name.clone();
            nodes[n].routes[route].targets.push(Target::Output(i));
            outputs.push(OutputSpec { spec, node: n });
        }

        // Nodes whose work goes nowhere are mistakes.
        for node in &nodes {
            if node.routes.iter().all(|r| r.targets.is_empty()) {
                return err(
                    format!("nodes.{}", node.name),
                    "none of its outputs goes anywhere; route one with an edge or a pipeline output",
                );
            }
        }
        // Keep only routed outputs: unrouted ones are never split or copied.
        for node in &mut nodes {
            node.routes.retain(|r| !r.targets.is_empty());
        }

        let topo_order = topological_order(&nodes)?;
        let compute_budget = self.scheduler(&nodes)?;
        let fairness = crate::fairness::FairnessSpec::build(&cfg.fairness, &nodes)?;
        let mut worker_kinds: Vec<String> =
            nodes.iter().flat_map(|n| n.groups.iter().map(|g| g.kind.clone())).collect();
        worker_kinds.sort();
        worker_kinds.dedup();
        for node in &mut nodes {
            for group in &mut node.groups {
                group.kind_index = worker_kinds.binary_search(&group.kind).expect("collected above");
            }
        }
        Ok(PipelineSpec {
            name: cfg.pipeline.name.clone(),
            file: None,
            nodes,
            inputs,
            outputs,
            scheduler: cfg.scheduler.clone(),
            compute_budget,
            max_in_flight: cfg.pipeline.max_in_flight,
            topo_order,
            streams: cfg.streams.clone(),
            fairness,
            worker_kinds,
        })
    }

    fn scheduler(&self, nodes: &[NodeSpec]) -> Result<f64> {
        let s = &self.config.scheduler;
        if s.tick_us == 0 || s.tick_us > 10_000_000 {
            return err("scheduler.tick_us", format!("{} is out of range; use 1 to 10000000 µs", s.tick_us));
        }
        let total: f64 = nodes.iter().map(|n| n.cost).sum();
        let budget = s.compute_budget.unwrap_or(total);
        if !(budget.is_finite() && budget > 0.0) {
            return err("scheduler.compute_budget", format!("{budget} is not a positive number"));
        }
        for node in nodes {
            if node.cost > budget {
                return err(
                    format!("nodes.{}.cost", node.name),
                    format!("impossible budget: the node costs {} but scheduler.compute_budget is {budget}, so it could never run", node.cost),
                );
            }
        }
        if s.selection == Selection::Count && s.max_nodes == Some(0) {
            return err("scheduler.max_nodes", "the count variant needs max_nodes of at least 1");
        }
        if s.selection == Selection::Count && s.on_misfit == OnMisfit::Skip {
            return err("scheduler.on_misfit", "applies to the budget variant only (selection = \"budget\")");
        }
        Ok(budget)
    }

    fn node(&self, name: &str, cfg: &NodeConfig) -> Result<NodeSpec> {
        let at = |field: &str| format!("nodes.{name}.{field}");
        if name.contains('.') {
            return err(format!("nodes.{name}"), "node names cannot contain `.`");
        }
        if cfg.stages.is_empty() {
            return err(at("stages"), "a node needs at least one stage, e.g. `stages = [{ model = \"model.onnx\" }]`");
        }
        for (field, value) in [
            ("max_batch", cfg.max_batch),
            ("workers", cfg.workers.unwrap_or(1)),
            ("intra_threads", cfg.intra_threads),
            ("inter_threads", cfg.inter_threads),
        ] {
            if value == 0 {
                return err(at(field), "must be at least 1");
            }
        }
        if !(cfg.weight.is_finite() && cfg.weight >= 0.0) {
            return err(at("weight"), format!("{} is not a number >= 0", cfg.weight));
        }
        if cfg.max_queue == Some(0) {
            return err(at("max_queue"), "must be at least 1 (leave it out for no bound of the node's own)");
        }
        if let Some(faults) = &cfg.faults {
            check_faults(&at("faults"), faults)?;
        }
        if !(cfg.cost.is_finite() && cfg.cost > 0.0) {
            return err(at("cost"), format!("{} is not a positive number", cfg.cost));
        }
        check_cores(&at("cores"), &cfg.cores)?;
        let groups = worker_groups(name, cfg)?;

        let mut stages: Vec<StageSpec> = Vec::new();
        let mut inputs: Vec<TensorSpec> = Vec::new();
        // Latest producer of each tensor name inside the node.
        let mut produced: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (s, stage) in cfg.stages.iter().enumerate() {
            let location = format!("nodes.{name}.stages[{s}]");
            let (engine, provider) = match (&stage.function, &stage.engine) {
                (Some(function), None) => {
                    // A function stage may name a `model` file too: data it reads (a dictionary, say).
                    let provider = self.engines.function(function).ok_or_else(|| {
                        ConfigError::new(
                            format!("{location}.function"),
                            format!(
                                "unknown function `{function}` (registered: {})",
                                list_or_none(&self.engines.function_names())
                            ),
                        )
                    })?;
                    (format!("function:{function}"), provider)
                }
                (Some(_), Some(_)) => {
                    return err(&location, "give either `function` (a Rust stage) or `engine`, not both");
                }
                (None, engine) => {
                    let engine = engine.as_deref().unwrap_or("onnx");
                    let provider = self.engines.get(engine).ok_or_else(|| {
                        ConfigError::new(
                            format!("{location}.engine"),
                            format!("unknown engine `{engine}` (registered: {})", self.engines.kinds().join(", ")),
                        )
                    })?;
                    (engine.to_string(), provider)
                }
            };
            let model = match &stage.model {
                Some(m) => {
                    let path = self.base.join(m);
                    if !path.is_file() {
                        let shown = std::path::absolute(&path).unwrap_or(path.clone());
                        return err(
                            format!("{location}.model"),
                            format!("model file `{m}` not found (looked at {})", shown.display()),
                        );
                    }
                    Some(path)
                }
                None => None,
            };
            let request = StageRequest {
                location: location.clone(),
                model,
                params: stage.params.clone(),
                intra_threads: cfg.intra_threads,
                inter_threads: cfg.inter_threads,
            };
            let signature = provider.inspect(&request).map_err(|e| ConfigError::new(&location, e))?;
            let mut sources = Vec::new();
            for input in &signature.inputs {
                if input.shape.is_empty() {
                    return err(
                        &location,
                        format!(
                            "model input `{}` is a scalar; Baton batches along dim 0, so every input needs a batch dim",
                            input.name
                        ),
                    );
                }
                if let Some(&(ps, pi)) = produced.get(&input.name) {
                    let from = &stages[ps].signature.outputs[pi];
                    check_compatible(
                        &location,
                        from,
                        &format!("stages[{ps}].{}", from.name),
                        input,
                        &format!("stages[{s}].{}", input.name),
                    )?;
                    sources.push(StageSource::StageOutput { stage: ps, index: pi });
                } else if let Some(slot) = inputs.iter().position(|i| i.name == input.name) {
                    check_compatible(&location, &inputs[slot], &inputs[slot].name, input, &input.name)?;
                    sources.push(StageSource::NodeInput(slot));
                } else {
                    inputs.push(input.clone());
                    sources.push(StageSource::NodeInput(inputs.len() - 1));
                }
                if let Some(Dim::Fixed(b)) = input.shape.first() {
                    if *b < cfg.max_batch {
                        return err(
                            at("max_batch"),
                            format!(
                                "is {} but model input `{}` has a fixed batch dim of {b}; set max_batch = {b}",
                                cfg.max_batch, input.name
                            ),
                        );
                    }
                }
            }
            for (i, output) in signature.outputs.iter().enumerate() {
                if output.shape.is_empty() {
                    return err(
                        &location,
                        format!("model output `{}` is a scalar; Baton splits outputs along dim 0", output.name),
                    );
                }
                produced.insert(output.name.clone(), (s, i));
            }
            stages.push(StageSpec { request, engine, provider: Arc::clone(provider), signature, sources });
        }
        let mut routes: Vec<Route> = produced
            .into_iter()
            .map(|(name, (stage, index))| Route { name, stage, index, targets: Vec::new() })
            .collect();
        let mut state = Vec::new();
        for (k, write_back) in cfg.state.iter().enumerate() {
            let location = format!("nodes.{name}.state[{k}]");
            let slot = inputs.iter().position(|i| i.name == write_back.input).ok_or_else(|| {
                let have: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
                ConfigError::new(
                    format!("{location}.input"),
                    format!("node `{name}` has no input `{}` (its inputs: {})", write_back.input, have.join(", ")),
                )
            })?;
            let route = routes.iter().position(|r| r.name == write_back.output).ok_or_else(|| {
                let have: Vec<&str> = routes.iter().map(|r| r.name.as_str()).collect();
                ConfigError::new(
                    format!("{location}.output"),
                    format!("node `{name}` has no output `{}` (its outputs: {})", write_back.output, have.join(", ")),
                )
            })?;
            let out_spec = &stages[routes[route].stage].signature.outputs[routes[route].index];
            check_compatible(&location, out_spec, &write_back.output, &inputs[slot], &write_back.input)?;
            let initial = self.initial_state(&location, &inputs[slot], write_back)?;
            routes[route].targets.push(Target::State(k));
            state.push(StateSpec { slot, output: write_back.output.clone(), initial });
        }
        let state_bytes: usize = state.iter().map(|s| s.initial.as_bytes().len()).sum();
        if state_bytes > self.config.streams.max_state_bytes {
            return err(
                at("state"),
                format!(
                    "one stream's state takes {state_bytes} bytes, over streams.max_state_bytes ({}): no stream could open",
                    self.config.streams.max_state_bytes
                ),
            );
        }
        let pad = self.pads(name, cfg, &inputs, &routes, &stages, &state)?;
        Ok(NodeSpec {
            name: name.to_string(),
            stages,
            inputs,
            routes,
            max_batch: cfg.max_batch,
            weight: cfg.weight,
            cost: cfg.cost,
            workers: if groups.is_empty() { cfg.workers.unwrap_or(1) } else { groups.iter().map(|g| g.workers).sum() },
            cores: cfg.cores.clone(),
            idle_spin_us: cfg.idle_spin_us,
            pad,
            state,
            max_queue: cfg.max_queue,
            faults: cfg.faults.clone(),
            placement_timeout_ns: cfg.placement_timeout_us.map(|us| us.saturating_mul(1000)),
            groups,
        })
    }

    fn pads(
        &self,
        name: &str,
        cfg: &NodeConfig,
        inputs: &[TensorSpec],
        routes: &[Route],
        stages: &[StageSpec],
        state: &[StateSpec],
    ) -> Result<Vec<PadSpec>> {
        let mut pads: Vec<PadSpec> = Vec::new();
        for (k, pad) in cfg.pad.iter().enumerate() {
            let location = format!("nodes.{name}.pad[{k}]");
            let slot = inputs.iter().position(|i| i.name == pad.input).ok_or_else(|| {
                let have: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
                ConfigError::new(
                    format!("{location}.input"),
                    format!("node `{name}` has no input `{}` (its inputs: {})", pad.input, have.join(", ")),
                )
            })?;
            if state.iter().any(|s| s.slot == slot) || pads.iter().any(|p| p.slot == slot) {
                return err(
                    format!("{location}.input"),
                    format!("input `{}` is a state input or padded twice", pad.input),
                );
            }
            let spec = &inputs[slot];
            if pad.axes.is_empty() {
                return err(format!("{location}.axes"), "list at least one axis to pad");
            }
            for &axis in &pad.axes {
                match spec.shape.get(axis) {
                    _ if axis == 0 => {
                        return err(format!("{location}.axes"), "axis 0 is the batch dim; it is never padded")
                    }
                    Some(Dim::Dynamic(_)) => {}
                    Some(Dim::Fixed(n)) => {
                        return err(
                            format!("{location}.axes"),
                            format!("axis {axis} of `{}` is fixed ({n}); only dynamic dims can differ", pad.input),
                        )
                    }
                    None => {
                        return err(
                            format!("{location}.axes"),
                            format!("axis {axis} is out of range: `{}` is {}", pad.input, spec.shape_string()),
                        )
                    }
                }
            }
            let mut cuts = Vec::new();
            for (output, axes) in &pad.cut {
                let route = routes.iter().find(|r| &r.name == output).ok_or_else(|| {
                    ConfigError::new(format!("{location}.cut"), format!("node `{name}` has no output `{output}`"))
                })?;
                let rank = stages[route.stage].signature.outputs[route.index].shape.len();
                if axes.len() != pad.axes.len() || axes.iter().any(|&a| a == 0 || a >= rank) {
                    return err(
                        format!("{location}.cut.{output}"),
                        format!(
                            "give {} axes of `{output}` (rank {rank}), not the batch dim, one per padded axis",
                            pad.axes.len()
                        ),
                    );
                }
                cuts.push((output.clone(), axes.clone()));
            }
            pads.push(PadSpec { slot, axes: pad.axes.clone(), value: pad.value, cuts });
        }
        Ok(pads)
    }

    /// One stream's first state: zeros, or a `.npy` file; batch dim 1.
    fn initial_state(&self, location: &str, input: &TensorSpec, cfg: &crate::config::StateConfig) -> Result<Tensor> {
        let declared: Vec<Option<usize>> =
            input.shape.iter().skip(1).map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect();
        let shape: Vec<usize> = match &cfg.shape {
            Some(shape) => {
                let fits = shape.len() == declared.len()
                    && shape.iter().zip(&declared).all(|(s, d)| d.is_none_or(|d| d == *s));
                if !fits {
                    return err(
                        format!("{location}.shape"),
                        format!("{shape:?} does not fit input `{}` {}", input.name, input.shape_string()),
                    );
                }
                shape.clone()
            }
            None => declared.iter().copied().collect::<Option<Vec<usize>>>().ok_or_else(|| {
                ConfigError::new(
                    format!("{location}.shape"),
                    format!(
                        "input `{}` is {}: give the state's shape without the batch dim",
                        input.name,
                        input.shape_string()
                    ),
                )
            })?,
        };
        let mut full = vec![1];
        full.extend(&shape);
        // Checked before anything is allocated: a state no stream could hold is a config error.
        let bytes = crate::tensor::checked_len(&full, input.dtype)
            .map_err(|e| ConfigError::new(format!("{location}.shape"), e.to_string()))?
            * input.dtype.size();
        let limit = self.config.streams.max_state_bytes;
        if bytes > limit {
            return err(
                location,
                format!("one stream's state takes {bytes} bytes, over streams.max_state_bytes ({limit}): no stream could open"),
            );
        }
        match &cfg.initial {
            None => Tensor::zeros(input.dtype, full).map_err(|e| ConfigError::new(location, e.to_string())),
            Some(file) => {
                let tensor = crate::npy::read_npy_file(&self.base.join(file))
                    .map_err(|e| ConfigError::new(format!("{location}.initial"), e))?;
                if tensor.dtype() != input.dtype {
                    return err(
                        format!("{location}.initial"),
                        format!("`{file}` holds {} but input `{}` takes {}", tensor.dtype(), input.name, input.dtype),
                    );
                }
                let reshaped = tensor.reshape(full.clone()).map_err(|_| {
                    ConfigError::new(
                        format!("{location}.initial"),
                        format!("`{file}` has shape {:?}; the state is {shape:?} (plus batch dim 1)", tensor.shape()),
                    )
                })?;
                Ok(reshaped)
            }
        }
    }
}

fn output_spec(node: &NodeSpec, route: usize) -> &TensorSpec {
    let r = &node.routes[route];
    &node.stages[r.stage].signature.outputs[r.index]
}

fn join(names: &[&String]) -> String {
    names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

/// Checks that every core in `cores` exists on this machine.
fn check_cores(location: &str, cores: &[usize]) -> Result<()> {
    if cores.is_empty() {
        return Ok(());
    }
    let available: Vec<usize> = core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect();
    match cores.iter().find(|c| !available.contains(c)) {
        Some(core) => err(location, format!("core {core} does not exist on this machine (cores: {available:?})")),
        None => Ok(()),
    }
}

/// Validates a node's `worker_groups` and `placement_timeout_us` (kind indices are set later, pipeline-wide).
fn worker_groups(name: &str, cfg: &NodeConfig) -> Result<Vec<GroupSpec>> {
    let at = |field: &str| format!("nodes.{name}.{field}");
    if cfg.worker_groups.is_empty() {
        if cfg.placement_timeout_us.is_some() {
            return err(
                at("placement_timeout_us"),
                "applies to nodes with `worker_groups` only (every worker of this node fits every task)",
            );
        }
        return Ok(Vec::new());
    }
    if let Some(workers) = cfg.workers {
        return err(
            at("workers"),
            format!("leave it out: the node's worker_groups give its workers ({workers} given here)"),
        );
    }
    if cfg.worker_groups.len() > MAX_GROUPS {
        return err(
            at("worker_groups"),
            format!("{} groups; a node may have at most {MAX_GROUPS}", cfg.worker_groups.len()),
        );
    }
    if cfg.placement_timeout_us == Some(0) {
        return err(at("placement_timeout_us"), "must be at least 1 µs (leave it out for no retries)");
    }
    let mut groups: Vec<GroupSpec> = Vec::new();
    for (k, g) in cfg.worker_groups.iter().enumerate() {
        let at = |field: &str| format!("nodes.{name}.worker_groups[{k}].{field}");
        if g.kind.is_empty() {
            return err(at("kind"), "give the group a name, e.g. `kind = \"wide\"`");
        }
        if groups.iter().any(|other| other.kind == g.kind) {
            return err(at("kind"), format!("node `{name}` already has a worker group `{}`", g.kind));
        }
        let intra_threads = g.intra_threads.unwrap_or(cfg.intra_threads);
        let inter_threads = g.inter_threads.unwrap_or(cfg.inter_threads);
        let max_rows = g.max_rows.unwrap_or(cfg.max_batch);
        for (field, value) in [
            ("workers", g.workers),
            ("intra_threads", intra_threads),
            ("inter_threads", inter_threads),
            ("max_rows", max_rows),
        ] {
            if value == 0 {
                return err(at(field), "must be at least 1");
            }
        }
        if max_rows > cfg.max_batch {
            return err(
                at("max_rows"),
                format!(
                    "{max_rows} is more than the node's max_batch ({}); a group's capacity is within it",
                    cfg.max_batch
                ),
            );
        }
        check_cores(&at("cores"), &g.cores)?;
        let first_worker = groups.last().map_or(0, |p| p.first_worker + p.workers);
        groups.push(GroupSpec {
            kind: g.kind.clone(),
            kind_index: 0,
            workers: g.workers,
            first_worker,
            intra_threads,
            inter_threads,
            cores: g.cores.clone(),
            max_rows,
        });
    }
    Ok(groups)
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn dtype_names() -> String {
    DType::ALL.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

fn dims_from_config(location: &str, shape: &[i64]) -> Result<Vec<Dim>> {
    shape
        .iter()
        .map(|&d| match d {
            -1 => Ok(Dim::Dynamic(None)),
            d if d >= 0 => Ok(Dim::Fixed(d as usize)),
            d => err(location, format!("dim {d} is invalid; use a size >= 0 or -1 for dynamic")),
        })
        .collect()
}

/// Kahn's algorithm; a cycle is an error naming the nodes on it.
fn topological_order(nodes: &[NodeSpec]) -> Result<Vec<usize>> {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut indegree = vec![0usize; nodes.len()];
    for (from, node) in nodes.iter().enumerate() {
        for route in &node.routes {
            for target in &route.targets {
                if let Target::Node { node: to, .. } = *target {
                    if !children[from].contains(&to) {
                        children[from].push(to);
                        indegree[to] += 1;
                    }
                }
            }
        }
    }
    let mut ready: Vec<usize> = (0..nodes.len()).filter(|&n| indegree[n] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(n) = ready.pop() {
        order.push(n);
        for &c in &children[n] {
            indegree[c] -= 1;
            if indegree[c] == 0 {
                ready.push(c);
            }
        }
    }
    if order.len() < nodes.len() {
        // Walk from any node left over back along parents that are also left over, until a node
        // repeats. A left-over node always has a left-over parent (that is why it was left over);
        // it need not have a left-over child: it may sit downstream of the cycle.
        let left: Vec<bool> = indegree.iter().map(|&d| d > 0).collect();
        let mut path = vec![(0..nodes.len()).find(|&n| left[n]).expect("a node is left")];
        loop {
            let last = *path.last().expect("non-empty");
            let next = (0..nodes.len())
                .find(|&p| left[p] && children[p].contains(&last))
                .expect("a left-over node has a left-over parent");
            if let Some(start) = path.iter().position(|&n| n == next) {
                let cycle: Vec<&str> =
                    path[start..].iter().chain([&next]).rev().map(|&n| nodes[n].name.as_str()).collect();
                return err("edges", format!("the edges form a cycle: {}", cycle.join(" -> ")));
            }
            path.push(next);
        }
    }
    Ok(order)
}

/// Checks fault-injection rates: each a share in 0..=1, together at most 1, and a slow factor of at least 1.
fn check_faults(location: &str, faults: &FaultConfig) -> Result<()> {
    for (field, rate) in [("error", faults.error), ("panic", faults.panic), ("slow", faults.slow)] {
        if !(0.0..=1.0).contains(&rate) {
            return err(format!("{location}.{field}"), format!("{rate} is not a share between 0 and 1"));
        }
    }
    if faults.error + faults.panic + faults.slow > 1.0 {
        return err(location, "error + panic + slow add up to more than 1");
    }
    if !(faults.slow_factor.is_finite() && faults.slow_factor >= 1.0) {
        return err(format!("{location}.slow_factor"), format!("{} is not a number >= 1", faults.slow_factor));
    }
    Ok(())
}
