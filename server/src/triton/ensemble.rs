//! A Triton ensemble as one Baton pipeline: each step a node running the ONNX
//! model of the repository model it names (with that model's own batching,
//! instances and threads), its `input_map` and `output_map` the pipeline's
//! inputs, edges and outputs, run by the collaborative scheduler, so a
//! request's `priority` parameter marks a priority task across every step.
//!
//! A step naming an unknown model, a model input or output it does not have,
//! or a tensor nothing produces is an error naming the ensemble's config file
//! and the field; so is a step naming an ensemble (Baton does not nest them,
//! which also rules out cycles between ensembles).

use std::collections::BTreeMap;
use std::path::Path;

use baton::config::{EdgeConfig, InputConfig, OutputConfig};
use baton::{EngineRegistry, PipelineConfig};

use super::mapping::Source;
use super::{layout, mapping, prepare_dir, tpb};
use tpb::model_config::SchedulingChoice;

/// The platform of an ensemble.
pub const PLATFORM: &str = "ensemble";

/// Whether `config` is an ensemble's.
pub fn is_ensemble(config: &tpb::ModelConfig) -> bool {
    config.platform == PLATFORM || matches!(config.scheduling_choice, Some(SchedulingChoice::EnsembleScheduling(_)))
}

/// Where an ensemble tensor comes from: a pipeline input, or a node's output.
enum Producer {
    Input,
    Node(String, String),
}

/// The pipeline of ensemble `name` (in `repository`) over its steps' models.
pub fn pipeline(
    config: &tpb::ModelConfig,
    name: &str,
    repository: &Path,
    engines: &EngineRegistry,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<PipelineConfig, String> {
    let fail = |field: &str, message: String| source.error(field, message).to_string();
    let Some(SchedulingChoice::EnsembleScheduling(ensemble)) = &config.scheduling_choice else {
        return Err(fail(
            "ensemble_scheduling",
            "an ensemble needs its steps (ensemble_scheduling { step [...] })".into(),
        ));
    };
    if config.platform != PLATFORM {
        return Err(fail(
            "platform",
            format!("is `{}` but the config has ensemble_scheduling: use `ensemble`", config.platform),
        ));
    }
    if let Some(r) = mapping::reshapes(config).first() {
        let field = if r.input { "input" } else { "output" };
        return Err(fail(
            field,
            format!("`{}` has a reshape: reshaping an ensemble's tensors is not supported", r.name),
        ));
    }
    let mut pipeline: PipelineConfig =
        serde_json::from_value(serde_json::json!({ "pipeline": { "name": name } })).map_err(|e| e.to_string())?;
    let mut producers: BTreeMap<&str, Producer> =
        config.input.iter().map(|t| (t.name.as_str(), Producer::Input)).collect();
    let mut consumers: Vec<(String, String, String)> = Vec::new(); // (tensor, node, model input)
    for (i, step) in ensemble.step.iter().enumerate() {
        let at = |f: &str| format!("ensemble_scheduling.step[{i}].{f}");
        let model = step.model_name.as_str();
        let (prepared, file) = step_model(step, i, name, repository, engines, &fail)?;
        let step_source = Source { file: &prepared.config_file, text: prepared.text.as_deref() };
        let (mut step_pipeline, _) =
            mapping::pipeline(&prepared.config, &file, step_source, warnings).map_err(|e| e.to_string())?;
        let node_name = if pipeline.nodes.contains_key(model) { format!("{model}_{i}") } else { model.to_string() };
        let node = step_pipeline.nodes.remove(mapping::NODE).expect("a model's pipeline has its node");
        pipeline.nodes.insert(node_name.clone(), node);
        let inputs: Vec<&str> = prepared.config.input.iter().map(|t| t.name.as_str()).collect();
        let outputs: Vec<&str> = prepared.config.output.iter().map(|t| t.name.as_str()).collect();
        for (model_input, tensor) in &step.input_map {
            if !inputs.contains(&model_input.as_str()) {
                let known = inputs.join(", ");
                return Err(fail(
                    &at("input_map"),
                    format!("`{model_input}` is not an input of `{model}` (it has: {known})"),
                ));
            }
            consumers.push((tensor.clone(), node_name.clone(), model_input.clone()));
        }
        if let Some(missing) = inputs.iter().find(|n| !step.input_map.contains_key(**n)) {
            return Err(fail(&at("input_map"), format!("maps nothing to input `{missing}` of `{model}`")));
        }
        for (model_output, tensor) in &step.output_map {
            if !outputs.contains(&model_output.as_str()) {
                let known = outputs.join(", ");
                return Err(fail(
                    &at("output_map"),
                    format!("`{model_output}` is not an output of `{model}` (it has: {known})"),
                ));
            }
            let producer = Producer::Node(node_name.clone(), model_output.clone());
            if producers.insert(tensor.as_str(), producer).is_some() {
                return Err(fail(&at("output_map"), format!("tensor `{tensor}` is produced twice")));
            }
        }
    }
    connect(&mut pipeline, config, &producers, consumers, source)?;
    scheduler_parameters(&mut pipeline, config, source, warnings)?;
    Ok(pipeline)
}

/// The key of an ensemble's `parameters` that picks the batching policy running its steps.
pub const POLICY_PARAMETER: &str = "baton_scheduler_policy";

/// The ensemble's `parameters`: [`POLICY_PARAMETER`] (`collaborative`, the default,
/// or a baseline: `greedy`, `dynamic`, `priority_fifo`, `none`) sets the pipeline's
/// batching policy; other keys are warned (an ensemble has no backend to read them).
fn scheduler_parameters(
    pipeline: &mut PipelineConfig,
    config: &tpb::ModelConfig,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    for (key, value) in &config.parameters {
        let field = format!("parameters[{key}]");
        if key != POLICY_PARAMETER {
            warnings.push(format!(
                "{}: field `{field}` ignored: an ensemble has no backend to read it",
                source.file.display()
            ));
            continue;
        }
        let name = value.string_value.trim();
        pipeline.scheduler.policy = baton::BatchingPolicy::from_name(name).ok_or_else(|| {
            source
                .error(
                    &field,
                    format!("`{name}` is not a batching policy (collaborative, greedy, dynamic, priority_fifo, none)"),
                )
                .to_string()
        })?;
    }
    Ok(())
}

/// Wires the ensemble's tensors: each step input to its producer (an
/// ensemble input or another step's output), and each ensemble output to the
/// step output that produces it.
fn connect(
    pipeline: &mut PipelineConfig,
    config: &tpb::ModelConfig,
    producers: &BTreeMap<&str, Producer>,
    consumers: Vec<(String, String, String)>,
    source: Source,
) -> Result<(), String> {
    let fail = |field: &str, message: String| source.error(field, message).to_string();
    for (tensor, node, model_input) in consumers {
        let to = format!("{node}.{model_input}");
        match producers.get(tensor.as_str()) {
            Some(Producer::Input) => pipeline
                .inputs
                .entry(tensor.clone())
                .or_insert_with(|| InputConfig { to: Vec::new(), dtype: None, shape: None, optional: false })
                .to
                .push(to),
            Some(Producer::Node(from, output)) => {
                pipeline.edges.push(EdgeConfig { from: format!("{from}.{output}"), to })
            }
            None => {
                return Err(fail(
                    "ensemble_scheduling",
                    format!("tensor `{tensor}` (into `{to}`) is neither an ensemble input nor a step's output"),
                ))
            }
        }
    }
    for (k, output) in config.output.iter().enumerate() {
        match producers.get(output.name.as_str()) {
            Some(Producer::Node(from, model_output)) => {
                pipeline.outputs.insert(output.name.clone(), OutputConfig { from: format!("{from}.{model_output}") });
            }
            _ => {
                return Err(fail(
                    &format!("output[{k}].name"),
                    format!("`{}`: no step's output_map produces it", output.name),
                ))
            }
        }
    }
    if let Some(k) = config.input.iter().position(|t| !pipeline.inputs.contains_key(&t.name)) {
        return Err(fail(&format!("input[{k}].name"), format!("`{}`: no step takes it", config.input[k].name)));
    }
    Ok(())
}

/// The model step `i` names, read and checked (a model folder of the repository,
/// not an ensemble, not a sequence model), and the ONNX file of the version it asks for.
fn step_model(
    step: &tpb::model_ensembling::Step,
    i: usize,
    name: &str,
    repository: &Path,
    engines: &EngineRegistry,
    fail: &dyn Fn(&str, String) -> String,
) -> Result<(super::Prepared, std::path::PathBuf), String> {
    let at = |f: &str| format!("ensemble_scheduling.step[{i}].{f}");
    let model = step.model_name.as_str();
    let folder = repository.join(model);
    if model == name || model.contains(['/', '\\', '.']) || !layout::is_model_dir(&folder) {
        let why = if model == name { "is the ensemble itself" } else { "is not a model of the repository" };
        return Err(fail(&at("model_name"), format!("`{model}` {why}")));
    }
    let folder = crate::fence::inside(repository, &folder).map_err(|e| fail(&at("model_name"), e))?;
    let prepared = prepare_dir(&folder, model, engines, None)
        .map_err(|e| fail(&at("model_name"), format!("model `{model}` does not load: {e}")))?;
    if is_ensemble(&prepared.config) {
        return Err(fail(&at("model_name"), format!("`{model}` is an ensemble: Baton does not nest ensembles")));
    }
    if let Some(r) = mapping::reshapes(&prepared.config).first() {
        return Err(fail(
            &at("model_name"),
            format!("`{model}` reshapes `{}`: reshaping step models in an ensemble is not supported", r.name),
        ));
    }
    if let Some(t) = prepared.config.input.iter().find(|t| t.optional) {
        return Err(fail(
            &at("model_name"),
            format!("`{model}` has optional input `{}`: step models with optional inputs are not supported", t.name),
        ));
    }
    if super::sequence::batching(&prepared.config).is_some() {
        return Err(fail(
            &at("model_name"),
            format!("`{model}` is a sequence model: sequence models in ensembles are not supported"),
        ));
    }
    let file = match step.model_version {
        v if v <= 0 => prepared.versions[0].1.clone(),
        v => prepared
            .versions
            .iter()
            .find(|(served, _)| *served == v as u64)
            .ok_or_else(|| fail(&at("model_version"), format!("model `{model}` serves no version {v}")))?
            .1
            .clone(),
    };
    Ok((prepared, file))
}
