//! Triton model repositories served unchanged: a model folder
//! (`config.pbtxt`, version folders holding `model.onnx`) or a plain `.onnx`
//! file becomes one Baton pipeline per served version, with the completed
//! Triton config shown at the config endpoints.
//!
//! - [`pbtxt`]: the text-format parser over Triton's `ModelConfig` schema.
//! - [`rules`]: what Baton does with each config field (read, warn, refuse).
//! - [`layout`]: version folders, the version policy, the model file.
//! - [`mapping`]: completion from the ONNX model, checks, the one-node pipeline.
//! - [`reshape`]: inputs and outputs whose `reshape` differs from their `dims`.
//! - [`optional`]: optional inputs, served with the ONNX model's defaults when left out.
//! - [`sequence`]: `sequence_batching` → streams, state and control inputs.
//! - [`ensemble`]: `ensemble_scheduling` → one pipeline over the repository's models.

pub mod ensemble;
pub mod layout;
pub mod mapping;
pub mod optional;
pub mod pbtxt;
pub mod reshape;
pub mod rules;
pub mod sequence;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton::{EngineRegistry, ModelSignature, Runtime, StageRequest};

pub use mapping::RequestPolicy;
pub use pbtxt::ConfigError;

/// The generated messages of proto/triton_model_config.proto.
#[allow(clippy::all, missing_docs)]
pub mod tpb {
    include!(concat!(env!("OUT_DIR"), "/triton.rs"));
}

/// A Triton model's completed config, as the config endpoints show it.
#[derive(Clone, Debug)]
pub struct ShownConfig {
    pub config: tpb::ModelConfig,
    pub json: serde_json::Value,
}

impl ShownConfig {
    fn new(config: tpb::ModelConfig) -> Self {
        let json = pbtxt::to_json_named(&pbtxt::dynamic(&config));
        ShownConfig { config, json }
    }
}

/// One served version of a Triton model: its running pipeline and what the server applies.
pub struct Version {
    pub version: u64,
    pub runtime: Runtime,
    pub policy: RequestPolicy,
}

/// A loaded Triton model: its versions (highest first), config and warnings.
pub struct Loaded {
    pub name: String,
    pub versions: Vec<Version>,
    pub shown: Arc<ShownConfig>,
    pub warnings: Vec<String>,
}

/// Reads the ONNX model's signature (inputs and outputs) with the `onnx` engine.
pub fn signature(engines: &EngineRegistry, model: &Path) -> Result<ModelSignature, String> {
    signature_with(engines, model, &[])
}

/// [`signature`], with the graph inputs `overridable` (inputs with a default) taken as inputs too.
pub fn signature_with(
    engines: &EngineRegistry,
    model: &Path,
    overridable: &[String],
) -> Result<ModelSignature, String> {
    let provider = engines.get("onnx").ok_or("the `onnx` engine is not registered")?;
    let params = format!("overridable_inputs = {overridable:?}").parse().map_err(|e| format!("{e}"))?;
    let stage = StageRequest {
        location: model.display().to_string(),
        model: Some(model.to_path_buf()),
        params,
        intra_threads: 1,
        inter_threads: 1,
        execution: Default::default(),
        batch_sizes: baton::BatchSizes::none(),
        device_outputs: Vec::new(),
    };
    provider.inspect(&stage).map_err(|e| format!("{}: {e}", model.display()))
}

/// Where a model's config comes from: `config.pbtxt` (when the folder has one)
/// and a JSON override sent with a load call.
pub struct ConfigSource<'a> {
    pub config_file: PathBuf,
    pub override_json: Option<&'a str>,
}

/// A Triton model folder read and checked, not started: its completed config
/// and the model file of each version its policy serves (highest first).
pub struct Prepared {
    pub config: tpb::ModelConfig,
    pub config_file: PathBuf,
    pub text: Option<String>,
    pub versions: Vec<(u64, PathBuf)>,
    pub warnings: Vec<String>,
}

/// Reads Triton model folder `dir` of model `name`: the config (read, or the
/// override, checked field by field), the versions its policy serves, and (not
/// for an ensemble) completion from the ONNX model and the checks against it.
pub fn prepare_dir(
    dir: &Path,
    name: &str,
    engines: &EngineRegistry,
    override_json: Option<&str>,
) -> Result<Prepared, String> {
    let config_file = dir.join(layout::CONFIG_FILE);
    let text = if config_file.is_file() {
        Some(std::fs::read_to_string(&config_file).map_err(|e| format!("cannot read {}: {e}", config_file.display()))?)
    } else {
        None
    };
    let message = match (override_json, &text) {
        (Some(json), _) => parse_override(&config_file, json).map_err(|e| e.to_string())?,
        (None, Some(text)) => pbtxt::parse(&config_file, text).map_err(|e| e.to_string())?.message,
        (None, None) => prost_reflect::DynamicMessage::new(pbtxt::model_config_descriptor()),
    };
    let source_text = if override_json.is_some() { None } else { text.as_deref() };
    let source = mapping::Source { file: &config_file, text: source_text };
    let warnings = rules::check(&config_file, source_text, &message).map_err(|e| e.to_string())?;
    let mut config = pbtxt::typed(&config_file, message).map_err(|e| e.to_string())?.config;
    let chosen =
        layout::select(dir, &config_file, source_text, config.version_policy.as_ref()).map_err(|e| e.to_string())?;
    if ensemble::is_ensemble(&config) {
        let versions = chosen.into_iter().map(|v| (v, dir.join(v.to_string()))).collect();
        let text = source_text.map(str::to_string);
        return Ok(Prepared { config, config_file, text, versions, warnings });
    }
    let files = chosen
        .iter()
        .map(|&v| layout::model_file(dir, &config_file, source_text, v, &config.default_model_filename))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let optional: Vec<String> = config.input.iter().filter(|t| t.optional).map(|t| t.name.clone()).collect();
    for file in &files {
        optional::defaults(&config, file, source).map_err(|e| e.to_string())?;
    }
    let signatures = files.iter().map(|f| signature_with(engines, f, &optional)).collect::<Result<Vec<_>, _>>()?;
    mapping::complete(&mut config, name, &signatures[0], source).map_err(|e| e.to_string())?;
    for signature in &signatures {
        mapping::check_tensors(&config, signature, source).map_err(|e| e.to_string())?;
    }
    let text = source_text.map(str::to_string);
    Ok(Prepared { config, config_file, text, versions: chosen.into_iter().zip(files).collect(), warnings })
}

/// Loads Triton model folder `dir` as model `name` ([`prepare_dir`]) and starts
/// one pipeline per served version; an ensemble becomes one pipeline over the
/// models its steps name (see [`ensemble`]).
pub fn load_dir(
    dir: &Path,
    name: &str,
    engines: &EngineRegistry,
    override_json: Option<&str>,
) -> Result<Loaded, String> {
    let Prepared { config, config_file, text, versions, mut warnings } =
        prepare_dir(dir, name, engines, override_json)?;
    let source = mapping::Source { file: &config_file, text: text.as_deref() };
    let mut started = Vec::new();
    for (version, file) in versions {
        let (pipeline, p) = if ensemble::is_ensemble(&config) {
            let repository = dir.parent().unwrap_or(dir);
            (ensemble::pipeline(&config, name, repository, engines, source, &mut warnings)?, RequestPolicy::default())
        } else {
            mapping::pipeline(&config, &file, source, &mut warnings).map_err(|e| e.to_string())?
        };
        let runtime = Runtime::from_config(&pipeline, Some(&config_file), engines)
            .map_err(|e| format!("{}: version {version}: {e}", config_file.display()))?;
        started.push(Version { version, runtime, policy: p });
    }
    warnings.dedup();
    Ok(Loaded { name: name.to_string(), versions: started, shown: Arc::new(ShownConfig::new(config)), warnings })
}

/// A load call's JSON config (Triton's repository API): JSON of `ModelConfig` with
/// protobuf field names, read into the same schema as `config.pbtxt`.
fn parse_override(file: &Path, json: &str) -> Result<prost_reflect::DynamicMessage, ConfigError> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| ConfigError::file(file, format!("the `config` parameter is not JSON: {e}")))?;
    let text = json_to_text(&value);
    let parsed = pbtxt::parse(file, &text).map_err(|mut e| {
        e.line = None;
        let why = e.message.split_once(": ").map_or(e.message.as_str(), |(_, m)| m).to_string();
        e.message = format!("the `config` parameter: {why}");
        e
    })?;
    Ok(parsed.message)
}

/// JSON of a message written as text format (objects as messages, arrays as repeated
/// fields, strings quoted unless they name an enum value).
fn json_to_text(value: &serde_json::Value) -> String {
    use serde_json::Value as J;
    let Some(object) = value.as_object() else {
        return String::new();
    };
    let scalar = |v: &J| match v {
        J::String(s) if s.starts_with("TYPE_") || s.starts_with("KIND_") || s.starts_with("FORMAT_") => s.clone(),
        J::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    let mut out = String::new();
    for (key, v) in object {
        let items: Vec<&J> = match v {
            J::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        for item in items {
            match item {
                J::Object(_) if key == "parameters" => {
                    for (k, p) in item.as_object().expect("an object") {
                        out.push_str(&format!("parameters {{ key: {k:?} value {{ {} }} }}\n", json_to_text(p)));
                    }
                }
                J::Object(_) => out.push_str(&format!("{key} {{ {} }}\n", json_to_text(item))),
                J::Null => {}
                other => out.push_str(&format!("{key}: {}\n", scalar(other))),
            }
        }
    }
    out
}

/// A plain `.onnx` file served as model `stem` with a completed config, as a model folder without `config.pbtxt`.
pub fn load_file(file: &Path, engines: &EngineRegistry) -> Result<Loaded, String> {
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| format!("{}: no file name to serve the model under", file.display()))?
        .to_string();
    let mut warnings = Vec::new();
    let signature = signature(engines, file)?;
    let mut config = tpb::ModelConfig::default();
    let source = mapping::Source { file, text: None };
    mapping::complete(&mut config, &name, &signature, source).map_err(|e| e.to_string())?;
    mapping::check_tensors(&config, &signature, source).map_err(|e| e.to_string())?;
    let (pipeline, policy) = mapping::pipeline(&config, file, source, &mut warnings).map_err(|e| e.to_string())?;
    let runtime =
        Runtime::from_config(&pipeline, Some(file), engines).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(Loaded {
        name,
        versions: vec![Version { version: 1, runtime, policy }],
        shown: Arc::new(ShownConfig::new(config)),
        warnings,
    })
}

/// The served models of a loaded Triton model: one per version, highest first.
pub fn into_models(loaded: Loaded) -> Vec<crate::Model> {
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    let mut names: Vec<String> = loaded.versions.iter().map(|v| v.version.to_string()).collect();
    names.reverse();
    loaded
        .versions
        .into_iter()
        .map(|v| crate::Model::triton(v.runtime, v.version, names.clone(), Arc::clone(&loaded.shown), v.policy))
        .collect()
}
