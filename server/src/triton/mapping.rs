//! A Triton ONNX model's `ModelConfig` → Baton: completing the config from the
//! ONNX model as Triton does (inputs, outputs, `max_batch_size` from a dynamic
//! first dim), checking it against the model, and the one-node pipeline that
//! serves it (batching, queue policy, instances, threads, provider).

use std::path::Path;
use std::time::Duration;

use baton::{DType, Dim, ModelSignature, PipelineConfig, TensorSpec};
use serde_json::{json, Map, Value as Json};

use super::pbtxt::ConfigError;
use super::tpb;
use tpb::model_config::SchedulingChoice;
use tpb::DataType;

/// Triton's `--backend-config=default-max-batch-size`: what completion gives a model that batches.
pub const DEFAULT_MAX_BATCH_SIZE: i32 = 4;
/// The platform and backend of an ONNX model.
pub const PLATFORM: &str = "onnxruntime_onnx";
pub const BACKEND: &str = "onnxruntime";
/// The node that runs the model in its pipeline.
pub const NODE: &str = "model";

/// Where errors point: the config file and its text (None: no file, or a JSON override).
#[derive(Clone, Copy)]
pub struct Source<'a> {
    pub file: &'a Path,
    pub text: Option<&'a str>,
}

impl Source<'_> {
    pub fn error(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::field(self.file, self.text, field, message)
    }
}

/// Triton's data type of a Baton dtype.
pub fn data_type(dtype: DType) -> DataType {
    match dtype {
        DType::F32 => DataType::TypeFp32,
        DType::F64 => DataType::TypeFp64,
        DType::F16 => DataType::TypeFp16,
        DType::BF16 => DataType::TypeBf16,
        DType::I64 => DataType::TypeInt64,
        DType::I32 => DataType::TypeInt32,
        DType::I16 => DataType::TypeInt16,
        DType::I8 => DataType::TypeInt8,
        DType::U8 => DataType::TypeUint8,
        DType::U16 => DataType::TypeUint16,
        DType::U32 => DataType::TypeUint32,
        DType::U64 => DataType::TypeUint64,
        DType::Bool => DataType::TypeBool,
        DType::Bytes => DataType::TypeString,
    }
}

/// The Baton dtype of a Triton data type, or why there is none.
pub fn dtype(data_type: i32) -> Result<DType, String> {
    let t = DataType::try_from(data_type).map_err(|_| format!("unknown data type {data_type}"))?;
    DType::ALL.into_iter().chain([DType::Bytes]).find(|&d| self::data_type(d) == t).ok_or_else(|| match t {
        DataType::TypeInvalid => "is missing (give the tensor's data_type)".to_string(),
        other => format!("{} tensors are not supported by Baton's runtime", other.as_str_name()),
    })
}

fn dims_of(spec: &TensorSpec, skip_batch: bool) -> Vec<i64> {
    spec.shape
        .iter()
        .skip(usize::from(skip_batch))
        .map(|d| match d {
            Dim::Fixed(n) => *n as i64,
            Dim::Dynamic(_) => -1,
        })
        .collect()
}

fn batches(signature: &ModelSignature) -> bool {
    let dynamic_first = |s: &TensorSpec| matches!(s.shape.first(), Some(Dim::Dynamic(_)));
    !signature.inputs.is_empty()
        && signature.inputs.iter().all(dynamic_first)
        && signature.outputs.iter().all(dynamic_first)
}

/// Completes `config` from the ONNX model as Triton does for ONNX: name, platform
/// and backend; `max_batch_size` 4 with dynamic batching when the config gives no
/// tensors and every model tensor has a dynamic first dim; missing input and
/// output lists from the model.
pub fn complete(
    config: &mut tpb::ModelConfig,
    name: &str,
    signature: &ModelSignature,
    source: Source,
) -> Result<(), ConfigError> {
    if config.name.is_empty() {
        config.name = name.to_string();
    } else if config.name != name {
        return Err(source.error("name", format!("is `{}` but the model's folder is `{name}`", config.name)));
    }
    match (config.platform.as_str(), config.backend.as_str()) {
        ("" | PLATFORM, "" | BACKEND) => {}
        ("" | PLATFORM, other) => {
            return Err(source.error("backend", format!("`{other}`: Baton serves onnxruntime models only")))
        }
        (other, _) => return Err(source.error("platform", format!("`{other}`: Baton serves {PLATFORM} models only"))),
    }
    config.platform = PLATFORM.into();
    config.backend = BACKEND.into();
    if config.max_batch_size == 0 && config.input.is_empty() && config.output.is_empty() && batches(signature) {
        config.max_batch_size = DEFAULT_MAX_BATCH_SIZE;
        if config.scheduling_choice.is_none() {
            config.scheduling_choice = Some(SchedulingChoice::DynamicBatching(Default::default()));
        }
    }
    let skip = config.max_batch_size > 0;
    let (implicit_in, implicit_out) = super::sequence::implicit_tensors(config);
    let (implicit_in, implicit_out): (Vec<String>, Vec<String>) =
        (implicit_in.into_iter().map(String::from).collect(), implicit_out.into_iter().map(String::from).collect());
    if config.input.is_empty() {
        config.input = signature
            .inputs
            .iter()
            .filter(|s| !implicit_in.contains(&s.name))
            .map(|s| tpb::ModelInput {
                name: s.name.clone(),
                data_type: data_type(s.dtype) as i32,
                dims: dims_of(s, skip),
                ..Default::default()
            })
            .collect();
    }
    if config.output.is_empty() {
        config.output = signature
            .outputs
            .iter()
            .filter(|s| !implicit_out.contains(&s.name))
            .map(|s| tpb::ModelOutput {
                name: s.name.clone(),
                data_type: data_type(s.dtype) as i32,
                dims: dims_of(s, skip),
                ..Default::default()
            })
            .collect();
    }
    Ok(())
}

/// One config tensor as [`check_tensors`] sees it.
struct ConfigTensor<'a> {
    name: &'a str,
    data_type: i32,
    dims: &'a [i64],
    reshape: Option<&'a tpb::ModelTensorReshape>,
}

/// Checks the config's tensors against the model's: every one named, data types
/// equal, dims compatible, no reshape other than the dims themselves.
pub fn check_tensors(config: &tpb::ModelConfig, signature: &ModelSignature, source: Source) -> Result<(), ConfigError> {
    let inputs: Vec<ConfigTensor> = config
        .input
        .iter()
        .map(|t| ConfigTensor { name: &t.name, data_type: t.data_type, dims: &t.dims, reshape: t.reshape.as_ref() })
        .collect();
    let outputs: Vec<ConfigTensor> = config
        .output
        .iter()
        .map(|t| ConfigTensor { name: &t.name, data_type: t.data_type, dims: &t.dims, reshape: t.reshape.as_ref() })
        .collect();
    let batched = config.max_batch_size > 0;
    let (implicit_in, implicit_out) = super::sequence::implicit_tensors(config);
    if let Some(s) = super::sequence::batching(config) {
        super::sequence::check_against(s, signature, source)?;
    }
    check_list("input", &inputs, &signature.inputs, &implicit_in, batched, source)?;
    check_list("output", &outputs, &signature.outputs, &implicit_out, batched, source)?;
    Ok(())
}

fn check_list(
    kind: &str,
    tensors: &[ConfigTensor],
    model: &[TensorSpec],
    implicit: &[&str],
    batched: bool,
    source: Source,
) -> Result<(), ConfigError> {
    let names = || model.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ");
    for (i, t) in tensors.iter().enumerate() {
        let at = |f: &str| format!("{kind}[{i}].{f}");
        let Some(spec) = model.iter().find(|s| s.name == t.name) else {
            return Err(source.error(&at("name"), format!("`{}` is not a model {kind} (it has: {})", t.name, names())));
        };
        let dtype = dtype(t.data_type).map_err(|why| source.error(&at("data_type"), why))?;
        if dtype != spec.dtype {
            return Err(source.error(
                &at("data_type"),
                format!(
                    "is {} but the model's {kind} `{}` is {}",
                    data_type(dtype).as_str_name(),
                    t.name,
                    data_type(spec.dtype).as_str_name()
                ),
            ));
        }
        match t.reshape {
            Some(reshape) => {
                let fixed = |d: &[i64]| d.iter().all(|&x| x >= 0).then(|| d.iter().product::<i64>());
                if let (Some(a), Some(b)) = (fixed(t.dims), fixed(&reshape.shape)) {
                    if a != b {
                        return Err(source.error(
                            &at("reshape"),
                            format!("{:?} holds {b} elements but dims {:?} hold {a}", reshape.shape, t.dims),
                        ));
                    }
                }
                check_dims(&at("reshape"), &reshape.shape, spec, batched, source)?;
            }
            None => check_dims(&at("dims"), t.dims, spec, batched, source)?,
        }
    }
    let listed = |s: &&TensorSpec| tensors.iter().any(|t| t.name == s.name) || implicit.contains(&s.name.as_str());
    if let Some(missing) = model.iter().find(|s| !listed(s)) {
        return Err(source.error(kind, format!("the model's {kind} `{}` is not listed", missing.name)));
    }
    Ok(())
}

fn check_dims(field: &str, dims: &[i64], spec: &TensorSpec, batched: bool, source: Source) -> Result<(), ConfigError> {
    let model = &spec.shape[..];
    let model = if batched {
        match model.first() {
            Some(Dim::Dynamic(_)) => &model[1..],
            _ => {
                return Err(source.error(
                    "max_batch_size",
                    format!(
                        "is set but `{}` has no dynamic first dim {} to batch along: use max_batch_size 0",
                        spec.name,
                        spec.shape_string()
                    ),
                ))
            }
        }
    } else {
        model
    };
    let fits = dims.len() == model.len()
        && dims
            .iter()
            .zip(model)
            .all(|(&d, m)| d == -1 || matches!(m, Dim::Dynamic(_)) || *m == Dim::Fixed(d.max(0) as usize));
    if !fits {
        let batch = if batched { " after the batch dim" } else { "" };
        return Err(source.error(
            field,
            format!("{dims:?} does not fit the model's `{}`{batch}: {}", spec.name, spec.shape_string()),
        ));
    }
    Ok(())
}

/// What the server applies to a Triton model's requests beyond its pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestPolicy {
    /// `default_queue_policy.default_timeout_microseconds`: a request's deadline when it gives none.
    pub default_timeout: Option<Duration>,
    /// `allow_timeout_override`: whether a request's own `timeout` replaces it.
    pub timeout_override: bool,
    /// `sequence_batching`: the control inputs the server fills for each request.
    pub sequence: Option<super::sequence::Sequencing>,
    /// Inputs and outputs whose `reshape` differs from their `dims`.
    pub reshape: Vec<super::reshape::Reshape>,
    /// `dynamic_batching.priority_levels` > 1: how a request's `priority` level maps.
    pub levels: Option<PriorityLevels>,
    /// Optional inputs and the value a request that leaves one out gets.
    pub defaults: Vec<super::optional::Defaulted>,
}

/// Triton's priority levels (1 the most urgent) on Baton's two: a request whose
/// level is more urgent than the default level is a priority task (its batch runs
/// first); the default level and every level after it run as ordinary tasks. A
/// `priority` of 0 or above `levels` is the default level, as in Triton.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriorityLevels {
    pub levels: u64,
    pub default: u64,
}

impl PriorityLevels {
    /// Whether a request asking for level `priority` runs as a priority task.
    pub fn is_priority(&self, priority: u64) -> bool {
        let level = if priority == 0 || priority > self.levels { self.default } else { priority };
        level < self.default
    }

    /// Whether the mapping keeps Triton's order exactly: two levels, the default the second.
    pub fn exact(&self) -> bool {
        self.levels == 2 && self.default == 2
    }
}

impl Default for RequestPolicy {
    /// A pipeline's: the request's own timeout, if any.
    fn default() -> Self {
        RequestPolicy {
            default_timeout: None,
            timeout_override: true,
            sequence: None,
            reshape: Vec::new(),
            levels: None,
            defaults: Vec::new(),
        }
    }
}

impl RequestPolicy {
    /// The deadline (from arrival) of a request that asks for `requested`.
    pub fn timeout(&self, requested: Option<Duration>) -> Option<Duration> {
        match requested {
            Some(t) if self.timeout_override || self.default_timeout.is_none() => Some(t),
            _ => self.default_timeout,
        }
    }
}

/// The one-node pipeline serving `config` with ONNX file `model`; warnings for what it ignores.
pub fn pipeline(
    config: &tpb::ModelConfig,
    model: &Path,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<(PipelineConfig, RequestPolicy), ConfigError> {
    let mut node = Map::new();
    let defaults = super::optional::defaults(config, model, source)?;
    let mut stage = json!({ "model": model.display().to_string() });
    if !defaults.is_empty() {
        let names: Vec<&str> = defaults.iter().map(|d| d.name.as_str()).collect();
        stage["params"] = json!({ "overridable_inputs": names });
    }
    node.insert("stages".into(), json!([stage]));
    let mut inputs = Map::new();
    let (scheduler, streams, policy) = match super::sequence::batching(config) {
        Some(s) => {
            if config.max_batch_size == 0 && !s.state.is_empty() {
                return Err(source.error(
                    "sequence_batching.state",
                    "needs max_batch_size > 0: Baton keeps one row of state per sequence, along the batch dim",
                ));
            }
            scheduling(config, &mut node, source, warnings)?;
            let (scheduler, streams, sequencing) =
                super::sequence::map(config, s, &mut node, &mut inputs, source, warnings)?;
            (scheduler, Some(streams), RequestPolicy { sequence: Some(sequencing), ..Default::default() })
        }
        None => {
            let (scheduler, policy) = scheduling(config, &mut node, source, warnings)?;
            (scheduler, None, policy)
        }
    };
    instances(config, &mut node, source)?;
    parameters(config, &mut node, source, warnings)?;
    accelerators(config, &mut node, source)?;
    if config.model_transaction_policy.as_ref().is_some_and(|p| p.decoupled) {
        return Err(source.error("model_transaction_policy.decoupled", "decoupled models are not supported"));
    }
    let batched = config.max_batch_size > 0;
    for t in &config.input {
        let model_dims = t.reshape.as_ref().map_or(&t.dims, |r| &r.shape);
        let shape: Vec<i64> = batched.then_some(-1).into_iter().chain(model_dims.iter().copied()).collect();
        inputs.insert(t.name.clone(), json!({ "to": [format!("{NODE}.{}", t.name)], "shape": shape }));
    }
    let outputs: Map<String, Json> =
        config.output.iter().map(|t| (t.name.clone(), json!({ "from": format!("{NODE}.{}", t.name) }))).collect();
    let mut pipeline = json!({
        "pipeline": { "name": config.name },
        "scheduler": scheduler,
        "inputs": inputs,
        "outputs": outputs,
        "nodes": { NODE: node },
    });
    if let Some(streams) = streams {
        pipeline["streams"] = streams;
    }
    let pipeline: PipelineConfig = serde_json::from_value(pipeline)
        .map_err(|e| ConfigError::file(source.file, format!("the pipeline made from the config is invalid: {e}")))?;
    let mut policy = policy;
    policy.reshape = reshapes(config);
    policy.defaults = defaults;
    Ok((pipeline, policy))
}

/// The config's reshaped inputs and outputs (a `reshape` equal to `dims` is none).
pub fn reshapes(config: &tpb::ModelConfig) -> Vec<super::reshape::Reshape> {
    let batched = config.max_batch_size > 0;
    let one = |name: &str, input: bool, dims: &[i64], reshape: Option<&tpb::ModelTensorReshape>| {
        reshape.filter(|r| r.shape != dims).map(|r| super::reshape::Reshape {
            name: name.to_string(),
            input,
            dims: dims.to_vec(),
            shape: r.shape.clone(),
            batched,
        })
    };
    let inputs = config.input.iter().filter_map(|t| one(&t.name, true, &t.dims, t.reshape.as_ref()));
    let outputs = config.output.iter().filter_map(|t| one(&t.name, false, &t.dims, t.reshape.as_ref()));
    inputs.chain(outputs).collect()
}

/// Rows a request of a model that does not batch may have: its whole first dim runs as one.
const UNBATCHED_ROWS: usize = 1 << 16;

/// The scheduler section and the node's batching: no `dynamic_batching`, one
/// request per run (Triton's default scheduler); with it, Baton's dynamic
/// batcher, or priority first when the config has priority levels.
fn scheduling(
    config: &tpb::ModelConfig,
    node: &mut Map<String, Json>,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<(Json, RequestPolicy), ConfigError> {
    if config.max_batch_size < 0 {
        return Err(source.error("max_batch_size", "must not be negative"));
    }
    // Without a batch dim a request runs alone: its first dim is all one batch,
    // as large as a fixed first dim of the model's allows.
    let fixed_first = config.input.iter().filter_map(|t| t.dims.first().and_then(|&d| usize::try_from(d).ok())).min();
    let max_batch =
        if config.max_batch_size > 0 { config.max_batch_size as usize } else { fixed_first.unwrap_or(UNBATCHED_ROWS) };
    node.insert("max_batch".into(), json!(max_batch));
    let Some(SchedulingChoice::DynamicBatching(d)) = &config.scheduling_choice else {
        return Ok((json!({ "policy": "none" }), RequestPolicy::default()));
    };
    if config.max_batch_size == 0 {
        return Err(source.error("dynamic_batching", "needs max_batch_size > 0 (a model that batches)"));
    }
    let mut policy = RequestPolicy { levels: priority_levels(d, source, warnings)?, ..Default::default() };
    let name = if policy.levels.is_some() { "priority_fifo" } else { "dynamic" };
    let scheduler = json!({ "policy": name, "max_queue_delay_us": d.max_queue_delay_microseconds });
    if let Some(q) = &d.default_queue_policy {
        if q.timeout_action == tpb::model_queue_policy::TimeoutAction::Delay as i32 {
            return Err(source.error(
                "dynamic_batching.default_queue_policy.timeout_action",
                "DELAY is not supported: a request past its deadline is rejected (REJECT)",
            ));
        }
        policy.default_timeout =
            (q.default_timeout_microseconds > 0).then(|| Duration::from_micros(q.default_timeout_microseconds));
        policy.timeout_override = q.allow_timeout_override;
        if q.max_queue_size > 0 {
            node.insert("max_queue".into(), json!(q.max_queue_size));
        }
    }
    Ok((scheduler, policy))
}

/// `priority_levels` and `default_priority_level` (see [`PriorityLevels`]): none
/// below 2 levels; a default outside the levels is refused; a mapping that
/// serves some levels out of Triton's order is warned about, naming them.
fn priority_levels(
    d: &tpb::ModelDynamicBatching,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<Option<PriorityLevels>, ConfigError> {
    if d.priority_levels < 2 {
        if d.default_priority_level > d.priority_levels {
            return Err(source.error("dynamic_batching.default_priority_level", "is above priority_levels"));
        }
        return Ok(None);
    }
    let levels = PriorityLevels { levels: d.priority_levels, default: d.default_priority_level };
    if levels.default == 0 || levels.default > levels.levels {
        return Err(source.error(
            "dynamic_batching.default_priority_level",
            format!("{} is not a level of 1..={}", levels.default, levels.levels),
        ));
    }
    if !levels.exact() {
        let first = if levels.default > 1 {
            format!("levels 1..={} first, in arrival order", levels.default - 1)
        } else {
            "no level first".to_string()
        };
        warnings.push(format!(
            "{}: field `dynamic_batching.priority_levels` ({}): Baton orders two levels: it serves {first}, then \
             levels {}..={} together in arrival order (Triton serves each level before the next)",
            source.file.display(),
            levels.levels,
            levels.default,
            levels.levels
        ));
    }
    Ok(Some(levels))
}

/// `instance_group`: the counts add up to the node's workers; all groups CPU
/// (or AUTO), or all GPU on one device.
fn instances(config: &tpb::ModelConfig, node: &mut Map<String, Json>, source: Source) -> Result<(), ConfigError> {
    use tpb::model_instance_group::Kind;
    let mut workers = 0usize;
    let mut gpu: Option<(usize, i32)> = None;
    for (i, group) in config.instance_group.iter().enumerate() {
        workers += usize::try_from(group.count).ok().filter(|&c| c > 0).unwrap_or(1);
        let kind = Kind::try_from(group.kind).unwrap_or(Kind::Auto);
        match kind {
            Kind::Cpu | Kind::Auto if !group.gpus.is_empty() => {
                return Err(source.error(&format!("instance_group[{i}].gpus"), "GPUs given for a CPU group"))
            }
            Kind::Cpu | Kind::Auto => {}
            Kind::Gpu => {
                let device = match group.gpus.as_slice() {
                    [] => 0,
                    [d] => *d,
                    more => {
                        return Err(source.error(
                            &format!("instance_group[{i}].gpus"),
                            format!("{more:?}: Baton runs a model's instances on one GPU"),
                        ))
                    }
                };
                if gpu.is_some_and(|(_, d)| d != device) {
                    return Err(source.error(&format!("instance_group[{i}].gpus"), "instance groups on different GPUs"));
                }
                gpu = Some((i, device));
            }
            Kind::Model => {
                return Err(source.error(&format!("instance_group[{i}].kind"), "KIND_MODEL is not supported"))
            }
        }
    }
    if let Some((i, device)) = gpu {
        if config.instance_group.iter().any(|g| g.kind != Kind::Gpu as i32) {
            return Err(source.error(&format!("instance_group[{i}].kind"), "CPU and GPU groups mixed in one model"));
        }
        node.insert("provider".into(), json!("cuda"));
        node.insert("device".into(), json!(device));
    }
    if workers > 0 {
        node.insert("workers".into(), json!(workers));
    }
    Ok(())
}

/// ONNX Runtime backend `parameters`: `intra_op_thread_count` and `inter_op_thread_count`
/// set the node's threads; others are tuning that changes no answer (warned).
fn parameters(
    config: &tpb::ModelConfig,
    node: &mut Map<String, Json>,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for (key, value) in &config.parameters {
        let field = format!("parameters[{key}]");
        let target = match key.as_str() {
            "intra_op_thread_count" => "intra_threads",
            "inter_op_thread_count" => "inter_threads",
            _ => {
                warnings.push(format!(
                    "{}: field `{field}` ignored: an ONNX Runtime tuning parameter Baton does not read",
                    source.file.display()
                ));
                continue;
            }
        };
        let threads: usize = value
            .string_value
            .trim()
            .parse()
            .map_err(|_| source.error(&field, format!("{:?} is not a whole number", value.string_value)))?;
        node.insert(target.into(), json!(threads.max(1)));
    }
    Ok(())
}

/// `optimization.execution_accelerators`: `cuda` on the GPU list runs the node on
/// CUDA; TensorRT and OpenVINO are refused.
fn accelerators(config: &tpb::ModelConfig, node: &mut Map<String, Json>, source: Source) -> Result<(), ConfigError> {
    let Some(acc) = config.optimization.as_ref().and_then(|o| o.execution_accelerators.as_ref()) else {
        return Ok(());
    };
    for (i, a) in acc.gpu_execution_accelerator.iter().enumerate() {
        let field = format!("optimization.execution_accelerators.gpu_execution_accelerator[{i}].name");
        match a.name.as_str() {
            "cuda" => {
                node.entry("provider").or_insert(json!("cuda"));
            }
            other => {
                return Err(source
                    .error(&field, format!("`{other}` is not supported (Baton runs ONNX Runtime's CUDA provider)")))
            }
        }
    }
    if let Some(a) = acc.cpu_execution_accelerator.first() {
        let field = "optimization.execution_accelerators.cpu_execution_accelerator[0].name";
        return Err(
            source.error(field, format!("`{}` is not supported (Baton runs ONNX Runtime's CPU provider)", a.name))
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(text: &str) -> (Result<Option<PriorityLevels>, ConfigError>, Vec<String>) {
        let file = Path::new("m/config.pbtxt");
        let config =
            super::super::pbtxt::typed(file, super::super::pbtxt::parse(file, text).unwrap().message).unwrap().config;
        let Some(SchedulingChoice::DynamicBatching(d)) = &config.scheduling_choice else {
            panic!("no dynamic_batching")
        };
        let mut warnings = Vec::new();
        (priority_levels(d, Source { file, text: Some(text) }, &mut warnings), warnings)
    }

    #[test]
    fn priority_levels_above_the_default_run_first_and_inexact_mappings_are_warned() {
        let (two, warnings) = levels("dynamic_batching { priority_levels: 2 default_priority_level: 2 }");
        let two = two.unwrap().unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(two.is_priority(1));
        assert!(!two.is_priority(2) && !two.is_priority(0) && !two.is_priority(3), "default, 0 and beyond: ordinary");
        let (five, warnings) = levels("dynamic_batching { priority_levels: 5 default_priority_level: 3 }");
        let five = five.unwrap().unwrap();
        assert_eq!((1..=6).map(|l| five.is_priority(l)).collect::<Vec<_>>(), [true, true, false, false, false, false]);
        assert!(five.is_priority(2) && !five.is_priority(0), "0 is the default level");
        assert!(
            warnings[0].contains("serves levels 1..=2 first, in arrival order, then levels 3..=5 together"),
            "{warnings:?}"
        );
        let (none, _) = levels("dynamic_batching { }");
        assert_eq!(none.unwrap(), None);
        let (bad, _) = levels("dynamic_batching { priority_levels: 3 default_priority_level: 4 }");
        let e = bad.unwrap_err().to_string();
        assert!(e.contains("field `dynamic_batching.default_priority_level`: 4 is not a level of 1..=3"), "{e}");
        let (bad, _) = levels("dynamic_batching { priority_levels: 3 }");
        assert!(bad.unwrap_err().to_string().contains("0 is not a level"));
    }
}
