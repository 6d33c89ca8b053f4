//! From a parsed config to a [`PipelineSpec`]: inputs, edges, outputs, the scheduler's budget, worker kinds.

use std::collections::HashMap;
use std::path::Path;

use super::fairness::FairnessSpec;
use super::topology::topological_order;
use super::types::*;
use super::{err, port_position, split_ref, NodeSpec, PipelineSpec, Port, Result, Target};
use crate::config::{ConfigError, OnMisfit, PipelineConfig, Selection};
use crate::engine::{Dim, EngineRegistry, TensorSpec};
use crate::execution::Resource;
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
        self.prepare_engines()?;
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
            let slot = port_position(location, node, Port::Input, &nodes[n].inputs, |i| &i.name, tensor)?;
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
            let routes = &nodes[f].routes;
            let route =
                port_position(format!("{location}.from"), from_node, Port::Output, routes, |r| &r.name, from_tensor)?;
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
            let route = port_position(&location, node, Port::Output, &nodes[n].routes, |r| &r.name, tensor)?;
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
        let devices = self.devices(&mut nodes)?;
        let compute_budget = self.scheduler(&nodes)?;
        let fairness = FairnessSpec::build(&cfg.fairness, &nodes)?;
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
        // GPU nodes hold a slot of their device's budget, not cores: only CPU nodes count here.
        let on_cores = || nodes.iter().filter(|n| n.resource == Resource::Cores);
        let total: f64 = on_cores().map(|n| n.cost).sum();
        let budget = s.compute_budget.unwrap_or(if total > 0.0 { total } else { 1.0 });
        if !(budget.is_finite() && budget > 0.0) {
            return err("scheduler.compute_budget", format!("{budget} is not a positive number"));
        }
        for node in on_cores() {
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
    DType::ALL.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
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
