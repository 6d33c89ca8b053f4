//! From a parsed config to a [`PipelineSpec`]: inputs, edges, outputs, the scheduler's budget, worker kinds.

use std::path::Path;

use super::fairness::FairnessSpec;
use super::topology::topological_order;
use super::types::*;
use super::{err, port_position, split_ref, NodeSpec, PipelineSpec, Port, Result, Target};
use crate::config::{ConfigError, EdgeConfig, InputConfig, OnMisfit, PipelineConfig, Selection};
use crate::engine::{Dim, EngineRegistry, TensorSpec};
use crate::tensor::DType;

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
}

pub(super) struct Builder<'a> {
    pub config: &'a PipelineConfig,
    pub base: &'a Path,
    pub engines: &'a EngineRegistry,
}

/// Checks that a tensor produced as `from` can be consumed as `to`.
pub(super) fn check_compatible(
    location: &str,
    from: &TensorSpec,
    from_name: &str,
    to: &TensorSpec,
    to_name: &str,
) -> Result<()> {
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
    /// Builds every node, wires edges, pipeline inputs and outputs between them,
    /// then checks the pipeline-wide rules.
    fn build(&self) -> Result<PipelineSpec> {
        let cfg = self.config;
        check_sections(cfg)?;
        self.prepare_engines()?;
        let mut nodes = Vec::with_capacity(cfg.nodes.len());
        for (name, node) in &cfg.nodes {
            nodes.push(self.node(name, node)?);
        }
        let mut wiring = Wiring::new(nodes);
        for (i, edge) in cfg.edges.iter().enumerate() {
            wiring.edge(i, edge)?;
        }
        let inputs =
            cfg.inputs.iter().map(|(name, input)| wiring.pipeline_input(name, input)).collect::<Result<_>>()?;
        wiring.check_all_fed()?;
        let outputs = (cfg.outputs.iter().enumerate())
            .map(|(i, (name, output))| wiring.pipeline_output(i, name, &output.from))
            .collect::<Result<_>>()?;
        let mut nodes = wiring.nodes;
        keep_routed_outputs(&mut nodes)?;
        let topo_order = topological_order(&nodes)?;
        let devices = self.devices(&mut nodes)?;
        super::residency::place_outputs(&mut nodes);
        let compute_budget = self.scheduler(&nodes)?;
        let fairness = FairnessSpec::build(&cfg.fairness, &nodes)?;
        let worker_kinds = index_worker_kinds(&mut nodes);
        Ok(PipelineSpec {
            name: cfg.pipeline.name.clone(),
            file: None,
            nodes,
            inputs,
            outputs,
            scheduler: cfg.scheduler.clone(),
            compute_budget,
            devices,
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
        let slices = crate::node::niceness::SLICE_US;
        if s.foreground_slice_us != 0 && !slices.contains(&s.foreground_slice_us) {
            return err(
                "scheduler.foreground_slice_us",
                format!(
                    "{} is out of range; use {} to {} µs (the kernel's limits), or 0 for its default",
                    s.foreground_slice_us,
                    slices.start(),
                    slices.end()
                ),
            );
        }
        if let Some(fraction) = s.preempt_before.filter(|f| !(f.is_finite() && *f > 0.0)) {
            return err(
                "scheduler.preempt_before",
                format!("{fraction} is not a positive number (a fraction of the node's mean batch time, such as 0.25)"),
            );
        }
        if s.foreground_realtime && s.foreground_slice_us != 0 {
            return err(
                "scheduler.foreground_slice_us",
                "has no effect with foreground_realtime = true (real-time workers are not time-sliced against normal ones); remove one",
            );
        }
        // The default lets every worker of every node run at once, as the baselines do: a node
        // given N workers runs N batches in parallel. Remote and GPU nodes hold no local compute
        // (cost 0, `Resource::budget_cost`): a pipeline of only those needs no budget of its own,
        // and any positive one lets every node run.
        let total: f64 = nodes.iter().map(|n| n.cost * n.workers as f64).sum();
        let budget = s.compute_budget.unwrap_or(if total > 0.0 { total } else { 1.0 });
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
}

/// The sections every pipeline needs, and `max_in_flight` of at least 1.
fn check_sections(cfg: &PipelineConfig) -> Result<()> {
    if cfg.nodes.is_empty() {
        return err("nodes", "the pipeline has no nodes; add a `[nodes.NAME]` table");
    }
    if cfg.inputs.is_empty() {
        return err("inputs", "the pipeline has no inputs; add an `[inputs.NAME]` table with `to = [\"node.tensor\"]`");
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
    Ok(())
}

/// The built nodes being wired together: which source feeds each node input
/// (for the "fed twice / never" checks) and where each output goes.
struct Wiring {
    nodes: Vec<NodeSpec>,
    /// Per node, per input slot: what feeds it (for messages), once something does.
    fed_by: Vec<Vec<Option<String>>>,
}

impl Wiring {
    /// Nodes as built; inputs written back from a node's own state count as fed.
    fn new(nodes: Vec<NodeSpec>) -> Wiring {
        let mut fed_by: Vec<Vec<Option<String>>> = nodes.iter().map(|n| vec![None; n.inputs.len()]).collect();
        for (n, node) in nodes.iter().enumerate() {
            for state in &node.state {
                fed_by[n][state.slot] = Some(format!("the node's own state (output `{}`)", state.output));
            }
        }
        Wiring { nodes, fed_by }
    }

    /// The index of the node called `name`, or an error at `location` listing the nodes.
    fn node_named(&self, location: &str, name: &str) -> Result<usize> {
        self.nodes.iter().position(|n| n.name == name).ok_or_else(|| {
            let names: Vec<&String> = self.nodes.iter().map(|n| &n.name).collect();
            ConfigError::new(location, format!("no node named `{name}` (nodes: {})", join(&names)))
        })
    }

    /// `node.tensor` naming a node input, as (node, slot).
    fn node_input(&self, location: &str, text: &str) -> Result<(usize, usize)> {
        let (node, tensor) = split_ref(location, text)?;
        let n = self.node_named(location, node)?;
        let slot = port_position(location, node, Port::Input, &self.nodes[n].inputs, |i| &i.name, tensor)?;
        Ok((n, slot))
    }

    /// `node.tensor` naming a node output, as (node, route).
    fn node_output(&self, location: &str, text: &str) -> Result<(usize, usize)> {
        let (node, tensor) = split_ref(location, text)?;
        let n = self.node_named(location, node)?;
        let route = port_position(location, node, Port::Output, &self.nodes[n].routes, |r| &r.name, tensor)?;
        Ok((n, route))
    }

    /// Records that `location` feeds input `slot` of node `n` (written `target`); an input takes one source.
    fn feed(&mut self, location: &str, target: &str, n: usize, slot: usize) -> Result<()> {
        if let Some(other) = &self.fed_by[n][slot] {
            return err(location, format!("`{target}` is already fed by {other}; an input takes exactly one source"));
        }
        self.fed_by[n][slot] = Some(location.to_string());
        Ok(())
    }

    /// `[[edges]]` entry `i`: routes a node output to another node's input.
    fn edge(&mut self, i: usize, edge: &EdgeConfig) -> Result<()> {
        let location = format!("edges[{i}]");
        let (f, route) = self.node_output(&format!("{location}.from"), &edge.from)?;
        let (t, slot) = self.node_input(&format!("{location}.to"), &edge.to)?;
        if t == f {
            return err(&location, format!("edge from `{}` to itself: a node cannot feed its own input", edge.from));
        }
        let from_spec = output_spec(&self.nodes[f], route);
        check_compatible(&location, from_spec, &edge.from, &self.nodes[t].inputs[slot], &edge.to)?;
        self.feed(&location, &edge.to, t, slot)?;
        self.nodes[f].routes[route].targets.push(Target::Node { node: t, slot });
        Ok(())
    }

    /// `[inputs.NAME]`: the node inputs it feeds (all alike), checked against its declared dtype and shape.
    fn pipeline_input(&mut self, name: &str, input: &InputConfig) -> Result<InputSpec> {
        let location = format!("inputs.{name}");
        if input.to.is_empty() {
            return err(format!("{location}.to"), "feeds nothing; list node inputs as `to = [\"node.tensor\"]`");
        }
        let mut spec: Option<TensorSpec> = None;
        let mut targets = Vec::new();
        for (j, to) in input.to.iter().enumerate() {
            let (n, slot) = self.node_input(&format!("{location}.to[{j}]"), to)?;
            let slot_spec = &self.nodes[n].inputs[slot];
            match &spec {
                Some(first) => check_compatible(&format!("{location}.to[{j}]"), first, &input.to[0], slot_spec, to)?,
                None => spec = Some(slot_spec.clone()),
            }
            self.feed(&location, to, n, slot)?;
            targets.push(Target::Node { node: n, slot });
        }
        let mut spec = spec.expect("at least one target");
        spec.name = name.to_string();
        check_declared_input(&location, name, input, &mut spec)?;
        Ok(InputSpec { spec, targets, optional: input.optional })
    }

    /// Every node input is fed by an edge, a pipeline input or the node's state.
    fn check_all_fed(&self) -> Result<()> {
        for (node, fed_by) in self.nodes.iter().zip(&self.fed_by) {
            if let Some(slot) = fed_by.iter().position(Option::is_none) {
                let tensor = &node.inputs[slot].name;
                return err(
                    format!("nodes.{}", node.name),
                    format!("input `{tensor}` is fed by nothing; add an edge with `to = \"{}.{tensor}\"` or list it in a pipeline input's `to`", node.name),
                );
            }
        }
        Ok(())
    }

    /// `[outputs.NAME]`, pipeline output `i`, taken `from` a node output.
    fn pipeline_output(&mut self, i: usize, name: &str, from: &str) -> Result<OutputSpec> {
        let (n, route) = self.node_output(&format!("outputs.{name}.from"), from)?;
        let mut spec = output_spec(&self.nodes[n], route).clone();
        spec.name = name.to_string();
        self.nodes[n].routes[route].targets.push(Target::Output(i));
        Ok(OutputSpec { spec, node: n })
    }
}

/// Checks a pipeline input's own `dtype` and `shape` (if given) against what it
/// feeds; a declared shape replaces the inferred one.
fn check_declared_input(location: &str, name: &str, input: &InputConfig, spec: &mut TensorSpec) -> Result<()> {
    if let Some(dtype) = &input.dtype {
        let d = DType::parse(dtype).ok_or_else(|| {
            ConfigError::new(
                format!("{location}.dtype"),
                format!("unknown dtype `{dtype}` (use one of {})", dtype_names()),
            )
        })?;
        if d != spec.dtype {
            return err(format!("{location}.dtype"), format!("says {d} but `{}` takes {}", input.to[0], spec.dtype));
        }
    }
    if let Some(shape) = &input.shape {
        let declared = TensorSpec {
            name: name.to_string(),
            dtype: spec.dtype,
            shape: dims_from_config(&format!("{location}.shape"), shape)?,
        };
        check_compatible(&format!("{location}.shape"), &declared, name, spec, &input.to[0])?;
        spec.shape = declared.shape;
    }
    Ok(())
}

/// A node whose outputs all go nowhere is a mistake; unrouted outputs of the
/// others are dropped (never split or copied).
fn keep_routed_outputs(nodes: &mut [NodeSpec]) -> Result<()> {
    if let Some(node) = nodes.iter().find(|n| n.routes.iter().all(|r| r.targets.is_empty())) {
        return err(
            format!("nodes.{}", node.name),
            "none of its outputs goes anywhere; route one with an edge or a pipeline output",
        );
    }
    for node in nodes {
        node.routes.retain(|r| !r.targets.is_empty());
    }
    Ok(())
}

/// The worker kinds of all groups, sorted and deduplicated; each group learns its kind's index.
fn index_worker_kinds(nodes: &mut [NodeSpec]) -> Vec<String> {
    let mut kinds: Vec<String> = nodes.iter().flat_map(|n| n.groups.iter().map(|g| g.kind.clone())).collect();
    kinds.sort();
    kinds.dedup();
    for group in nodes.iter_mut().flat_map(|n| &mut n.groups) {
        group.kind_index = kinds.binary_search(&group.kind).expect("collected above");
    }
    kinds
}

pub(super) fn output_spec(node: &NodeSpec, route: usize) -> &TensorSpec {
    let r = &node.routes[route];
    &node.stages[r.stage].signature.outputs[r.index]
}

pub(super) fn join(names: &[&String]) -> String {
    names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

pub(super) fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

pub(super) fn dtype_names() -> String {
    DType::ALL.iter().chain(&[DType::Bytes]).map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

pub(super) fn dims_from_config(location: &str, shape: &[i64]) -> Result<Vec<Dim>> {
    shape
        .iter()
        .map(|&d| match d {
            -1 => Ok(Dim::Dynamic(None)),
            d if d >= 0 => Ok(Dim::Fixed(d as usize)),
            d => err(location, format!("dim {d} is invalid; use a size >= 0 or -1 for dynamic")),
        })
        .collect()
}
