//! One node's part of the build: stages and their signatures, inputs and routes, state, pads, worker groups, faults.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::builder::{check_compatible, list_or_none, Builder};
use super::devices::node_execution;
use super::types::*;
use super::{err, port_position, NodeSpec, Port, Result};
use crate::batch_sizes::BatchSizes;
use crate::config::{ConfigError, FaultConfig, NodeConfig, StageConfig};
use crate::engine::{Dim, EngineProvider, StageRequest, TensorSpec};
use crate::tensor::Tensor;

impl Builder<'_> {
    /// Builds node `name`: checks its settings, inspects its stages (chaining
    /// them by tensor name), and sets up its routes, state, pads and worker groups.
    pub(super) fn node(&self, name: &str, cfg: &NodeConfig) -> Result<NodeSpec> {
        check_node_settings(name, cfg)?;
        let groups = worker_groups(name, cfg)?;
        let remote = super::remote::check(name, cfg)?;
        let execution = node_execution(name, cfg)?;
        let batch_sizes = BatchSizes::for_node(name, cfg, &execution)?;
        if cfg.efficient_batches && !batch_sizes.is_empty() {
            return err(
                format!("nodes.{name}.efficient_batches"),
                format!(
                    "the node's batches run at its batch sizes {:?}: leave out one of `efficient_batches` and `batch_sizes`",
                    batch_sizes.sizes()
                ),
            );
        }
        let mut chain = StageChain::default();
        for (s, stage) in cfg.stages.iter().enumerate() {
            let location = format!("nodes.{name}.stages[{s}]");
            let (engine, provider) = self.stage_provider(&location, stage)?;
            let params = match &stage.remote {
                Some(url) => super::remote::params(&location, stage, url)?,
                None => stage.params.clone(),
            };
            let request = StageRequest {
                location: location.clone(),
                model: self.model_path(&location, stage)?,
                params,
                intra_threads: cfg.intra_threads,
                inter_threads: cfg.inter_threads,
                execution: execution.clone(),
                batch_sizes: batch_sizes.clone(),
                device_outputs: Vec::new(),
            };
            let signature = provider.inspect(&request).map_err(|e| ConfigError::new(&location, e.to_string()))?;
            chain.push(
                &location,
                name,
                cfg.max_batch,
                StageSpec { request, engine, provider: Arc::clone(provider), signature, sources: Vec::new() },
            )?;
        }
        let StageChain { stages, inputs, produced } = chain;
        let mut routes: Vec<Route> = produced
            .into_iter()
            .map(|(name, (stage, index))| Route { name, stage, index, targets: Vec::new() })
            .collect();
        let state = self.state(name, cfg, &stages, &inputs, &mut routes)?;
        let pad = self.pads(name, cfg, &inputs, &routes, &stages, &state)?;
        // A CUDA node's `Resource::Device` is set pipeline-wide, with the devices (`Builder::devices`).
        let resource = match &remote {
            Some(r) => r.resource(),
            None => Resource::Cores { cost: cfg.cost },
        };
        Ok(NodeSpec {
            name: name.to_string(),
            stages,
            inputs,
            routes,
            max_batch: cfg.max_batch,
            priority_max_batch: cfg.priority_max_batch.unwrap_or(cfg.max_batch),
            efficient_batches: cfg.efficient_batches,
            weight: cfg.weight,
            cost: resource.budget_cost(),
            resource,
            remote_streams: remote.as_ref().is_some_and(|r| r.stateful),
            workers: match (&remote, groups.is_empty()) {
                (Some(r), _) => r.window,
                (None, true) => cfg.workers.unwrap_or(1),
                (None, false) => groups.iter().map(|g| g.workers).sum(),
            },
            cores: cfg.cores.clone(),
            idle_spin_us: cfg.idle_spin_us,
            pad,
            state,
            max_queue: cfg.max_queue,
            faults: cfg.faults.clone(),
            placement_timeout_ns: cfg.placement_timeout_us.map(|us| us.saturating_mul(1000)),
            groups,
            execution,
        })
    }

    /// The engine kind (`function:NAME` for a function stage) and provider a stage names.
    pub(super) fn stage_provider(
        &self,
        location: &str,
        stage: &StageConfig,
    ) -> Result<(String, &Arc<dyn EngineProvider>)> {
        match (&stage.function, &stage.engine) {
            _ if stage.remote.is_some() => {
                if stage.function.is_some() || stage.engine.is_some() {
                    return err(location, "a remote stage runs on its server: leave out `function` and `engine`");
                }
                let kind = super::remote::REMOTE_ENGINE;
                let provider = self.engines.get(kind).ok_or_else(|| {
                    ConfigError::new(
                        format!("{location}.remote"),
                        format!(
                            "no `{kind}` engine is registered (registered: {}); register baton_engines' RemoteProvider",
                            self.engines.kinds().join(", ")
                        ),
                    )
                })?;
                Ok((kind.to_string(), provider))
            }
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
                Ok((format!("function:{function}"), provider))
            }
            (Some(_), Some(_)) => err(location, "give either `function` (a Rust stage) or `engine`, not both"),
            (None, engine) => {
                let engine = engine.as_deref().unwrap_or("onnx");
                let provider = self.engines.get(engine).ok_or_else(|| {
                    ConfigError::new(
                        format!("{location}.engine"),
                        format!("unknown engine `{engine}` (registered: {})", self.engines.kinds().join(", ")),
                    )
                })?;
                Ok((engine.to_string(), provider))
            }
        }
    }

    /// The stage's model file resolved against the pipeline file's folder; it
    /// must exist. A remote stage's `model` is a name on its server, not a file.
    fn model_path(&self, location: &str, stage: &StageConfig) -> Result<Option<PathBuf>> {
        let Some(m) = stage.model.as_ref().filter(|_| stage.remote.is_none()) else { return Ok(None) };
        let path = self.base.join(m);
        if !path.is_file() {
            let shown = std::path::absolute(&path).unwrap_or(path.clone());
            return err(
                format!("{location}.model"),
                format!("model file `{m}` not found (looked at {})", shown.display()),
            );
        }
        Ok(Some(path))
    }

    /// The node's `state` write-backs: each from a routed output to a node input of
    /// the same spec; one stream's state must fit `streams.max_state_bytes`.
    fn state(
        &self,
        name: &str,
        cfg: &NodeConfig,
        stages: &[StageSpec],
        inputs: &[TensorSpec],
        routes: &mut [Route],
    ) -> Result<Vec<StateSpec>> {
        let mut state = Vec::new();
        for (k, write_back) in cfg.state.iter().enumerate() {
            let location = format!("nodes.{name}.state[{k}]");
            let slot =
                port_position(format!("{location}.input"), name, Port::Input, inputs, |i| &i.name, &write_back.input)?;
            let output = &write_back.output;
            let route = port_position(format!("{location}.output"), name, Port::Output, routes, |r| &r.name, output)?;
            let out_spec = &stages[routes[route].stage].signature.outputs[routes[route].index];
            check_compatible(&location, out_spec, &write_back.output, &inputs[slot], &write_back.input)?;
            let initial = self.initial_state(&location, &inputs[slot], write_back)?;
            routes[route].targets.push(Target::State(k));
            state.push(StateSpec { slot, output: write_back.output.clone(), initial });
        }
        let state_bytes: usize = state.iter().map(|s| s.initial.as_bytes().len()).sum();
        if state_bytes > self.config.streams.max_state_bytes {
            return err(
                format!("nodes.{name}.state"),
                format!(
                    "one stream's state takes {state_bytes} bytes, over streams.max_state_bytes ({}): no stream could open",
                    self.config.streams.max_state_bytes
                ),
            );
        }
        Ok(state)
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
            let slot = port_position(format!("{location}.input"), name, Port::Input, inputs, |i| &i.name, &pad.input)?;
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
                let route =
                    &routes[port_position(format!("{location}.cut"), name, Port::Output, routes, |r| &r.name, output)?];
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
            let multiples = match pad.multiple.len() {
                0 => vec![1; pad.axes.len()],
                n if n == pad.axes.len() && pad.multiple.iter().all(|&m| m >= 1) => pad.multiple.clone(),
                _ => {
                    return err(
                        format!("{location}.multiple"),
                        format!("give one multiple of at least 1 per padded axis ({} axes)", pad.axes.len()),
                    )
                }
            };
            pads.push(PadSpec { slot, axes: pad.axes.clone(), multiples, value: pad.value, cuts });
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

/// Checks that every core in `cores` exists on this machine.
/// A node's own settings, before any stage is inspected.
fn check_node_settings(name: &str, cfg: &NodeConfig) -> Result<()> {
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
    if let Some(rows) = cfg.priority_max_batch.filter(|&rows| rows == 0 || rows > cfg.max_batch) {
        return err(
            at("priority_max_batch"),
            format!("{rows} is not between 1 and the node's max_batch ({})", cfg.max_batch),
        );
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
    check_cores(&at("cores"), &cfg.cores)
}

/// A node's stages in order, chained by tensor name: a stage input named like
/// an earlier stage's output reads it; any other becomes a node input.
#[derive(Default)]
struct StageChain {
    stages: Vec<StageSpec>,
    inputs: Vec<TensorSpec>,
    /// Latest producer (stage, output index) of each tensor name inside the node.
    produced: BTreeMap<String, (usize, usize)>,
}

impl StageChain {
    /// Appends `stage` (its `sources` filled here) of node `node` with `max_batch`.
    fn push(&mut self, location: &str, node: &str, max_batch: usize, mut stage: StageSpec) -> Result<()> {
        let s = self.stages.len();
        for input in &stage.signature.inputs {
            stage.sources.push(self.source(location, s, input)?);
            if let Some(Dim::Fixed(b)) = input.shape.first() {
                if *b < max_batch {
                    return err(
                        format!("nodes.{node}.max_batch"),
                        format!(
                            "is {max_batch} but model input `{}` has a fixed batch dim of {b}; set max_batch = {b}",
                            input.name
                        ),
                    );
                }
            }
        }
        for (i, output) in stage.signature.outputs.iter().enumerate() {
            if output.shape.is_empty() {
                return err(
                    location,
                    format!("model output `{}` is a scalar; Baton splits outputs along dim 0", output.name),
                );
            }
            self.produced.insert(output.name.clone(), (s, i));
        }
        self.stages.push(stage);
        Ok(())
    }

    /// Where input `input` of stage `s` reads from: an earlier stage's output or a node input (new or shared).
    fn source(&mut self, location: &str, s: usize, input: &TensorSpec) -> Result<StageSource> {
        if input.shape.is_empty() {
            return err(
                location,
                format!(
                    "model input `{}` is a scalar; Baton batches along dim 0, so every input needs a batch dim",
                    input.name
                ),
            );
        }
        if let Some(&(ps, pi)) = self.produced.get(&input.name) {
            let from = &self.stages[ps].signature.outputs[pi];
            let from_name = format!("stages[{ps}].{}", from.name);
            check_compatible(location, from, &from_name, input, &format!("stages[{s}].{}", input.name))?;
            Ok(StageSource::StageOutput { stage: ps, index: pi })
        } else if let Some(slot) = self.inputs.iter().position(|i| i.name == input.name) {
            check_compatible(location, &self.inputs[slot], &self.inputs[slot].name, input, &input.name)?;
            Ok(StageSource::NodeInput(slot))
        } else {
            self.inputs.push(input.clone());
            Ok(StageSource::NodeInput(self.inputs.len() - 1))
        }
    }
}

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
