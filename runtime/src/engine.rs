//! The engine plug point: what runs one model stage on a stitched batch.
//!
//! An [`EngineProvider`] is registered under a kind name (`onnx`,
//! `cost_model`, ...) in an [`EngineRegistry`]. At load time the runtime asks
//! the provider for each model stage's [`ModelSignature`] (to check the
//! pipeline's tensor names, dtypes and ranks before any thread starts); each
//! worker thread then asks it for its own [`Engine`], which it owns for its
//! whole life. Engines are synchronous and need not be thread-safe (`Send`
//! only): ONNX Runtime's `Run` is not, so nothing but the owning worker ever
//! touches one.
//!
//! Errors cross this boundary as an [`EngineError`]. A stage's `params` reach
//! the engine as opaque [`StageParams`]; the engine reads them into its own
//! typed config with [`StageRequest::params`] (serde, unknown keys refused).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::batch_sizes::BatchSizes;
use crate::execution::Execution;
use crate::request::StreamChunk;
use crate::tensor::{DType, DeviceMemory, HostMemory, Tensor};

/// Why an engine could not be inspected, created or run. Every variant but
/// [`EngineError::Run`] names the stage (`node.stages[i]`) it is about.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The stage's `params` do not fit the engine's config; `key` is the
    /// offending key's path (`inputs[0].dtype`) when there is one.
    #[error("stage {location}: params{}: {message}", key_suffix(key))]
    Params { location: String, key: Option<String>, message: String },
    /// The stage lacks a setting the engine needs, or names a model file that is not there.
    #[error("stage {location}: {message}")]
    Setting { location: String, message: String },
    /// The engine's own runtime (a shared library, a server) is not available.
    #[error("stage {location}: {message}")]
    Unavailable { location: String, message: String },
    /// The model file exists but the engine cannot load it.
    #[error("stage {location}: cannot load model {}: {reason}", model.display())]
    Load { location: String, model: PathBuf, reason: String },
    /// The inputs given do not match the stage's signature.
    #[error("stage {location}: {message}")]
    Input { location: String, message: String },
    /// Running the batch failed, for the engine's own reason (the worker adds
    /// the node and stage). Function stages' `?` on a `String` or `&str` lands here.
    #[error("{0}")]
    Run(String),
}

fn key_suffix(key: &Option<String>) -> String {
    key.as_ref().map(|k| format!(" `{k}`")).unwrap_or_default()
}

impl From<String> for EngineError {
    fn from(message: String) -> Self {
        EngineError::Run(message)
    }
}

impl From<&str> for EngineError {
    fn from(message: &str) -> Self {
        EngineError::Run(message.to_string())
    }
}

/// A stage's `params` table as the pipeline file gives it. Opaque: an engine
/// reads it into its own config with [`StageRequest::params`].
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct StageParams(toml::Table);

impl StageParams {
    /// The table, with `(key, value)` pairs set over what it has: how the
    /// builder hands an engine settings the stage itself gives (a remote
    /// stage's endpoint and model).
    pub(crate) fn with_entries(&self, entries: impl IntoIterator<Item = (&'static str, toml::Value)>) -> StageParams {
        let mut table = self.0.clone();
        table.extend(entries.into_iter().map(|(k, v)| (k.to_string(), v)));
        StageParams(table)
    }

    /// The keys the pipeline file gives.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }
}

/// `params` written as TOML (`key = value` lines), for tools and tests that make a [`StageRequest`].
impl FromStr for StageParams {
    type Err = ParamsSyntaxError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(StageParams).map_err(|e: toml::de::Error| ParamsSyntaxError(e.to_string()))
    }
}

/// Text given to [`StageParams::from_str`] that is not a TOML table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("params are not a TOML table: {0}")]
pub struct ParamsSyntaxError(String);

/// The config of an engine or function that takes no `params`: any key is an error naming it.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// One dimension of a model tensor, as the model declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    Fixed(usize),
    /// A dynamic dimension, with its symbolic name when the model gives one.
    Dynamic(Option<String>),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Dynamic(Some(name)) => f.write_str(name),
            Dim::Dynamic(None) => f.write_str("?"),
        }
    }
}

/// Name, dtype and shape of one model input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<Dim>,
}

impl TensorSpec {
    /// Whether `shape` (a concrete shape, batch dim included) fits this spec.
    pub fn accepts(&self, shape: &[usize]) -> bool {
        shape.len() == self.shape.len()
            && self.shape.iter().zip(shape).all(|(d, &n)| match d {
                Dim::Fixed(f) => *f == n,
                Dim::Dynamic(_) => true,
            })
    }

    /// The shape written like `[N, 3, ?, 224]`.
    pub fn shape_string(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        format!("[{}]", dims.join(", "))
    }
}

/// The inputs and outputs a model stage declares, in the order its engine takes and returns them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelSignature {
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
}

/// What a provider needs to know about one model stage.
#[derive(Clone, Debug)]
pub struct StageRequest {
    /// `node.stages[i]`, for messages.
    pub location: String,
    /// Model file, resolved against the config file's folder (if the stage names one).
    pub model: Option<PathBuf>,
    /// Engine-specific settings from the stage's `params` table; read them with [`StageRequest::params`].
    pub params: StageParams,
    /// ONNX Runtime intra-op threads (or the engine's equivalent).
    pub intra_threads: usize,
    /// Inter-op threads.
    pub inter_threads: usize,
    /// Where the stage's node runs: the CPU, or a GPU with its options (the node's `provider`).
    pub execution: Execution,
    /// The batch sizes the stage runs at, padding a batch up to the next (the
    /// node's `batch_sizes`, see [`crate::batch_sizes`]); engines that cannot pad ignore them.
    pub batch_sizes: BatchSizes,
    /// Per output of the stage's signature: whether it stays in the device's memory
    /// because only nodes on the same device read it (set by the pipeline's build,
    /// see [`crate::spec::PipelineSpec`]); empty: every output goes to host memory.
    pub device_outputs: Vec<bool>,
}

impl StageRequest {
    /// The stage's `params` read into the engine's config `T` (give `T`
    /// `#[serde(deny_unknown_fields)]`). Errors name the stage and the key's path.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, EngineError> {
        serde_path_to_error::deserialize(self.params.0.clone()).map_err(|e| {
            let path = e.path().to_string();
            EngineError::Params {
                location: self.location.clone(),
                key: (path != ".").then_some(path),
                message: in_toml_words(e.into_inner().message()),
            }
        })
    }

    /// An [`EngineError::Params`] about `key` of this stage, for checks serde cannot make.
    pub fn params_error(&self, key: &str, message: impl Into<String>) -> EngineError {
        EngineError::Params { location: self.location.clone(), key: Some(key.to_string()), message: message.into() }
    }
}

/// Serde's message in the words of a TOML file: its tables have keys, not fields.
fn in_toml_words(message: &str) -> String {
    message.replacen("unknown field", "unknown key", 1).replacen("missing field", "missing key", 1)
}

/// What a stage returns for a batch.
#[derive(Clone, Debug, Default)]
pub struct StageOutput {
    /// The outputs, in the order of the signature's outputs.
    pub tensors: Vec<Tensor>,
    /// Rows each task has in the outputs, when the stage changed them (one image
    /// in, several text crops out); `None` keeps the input's rows per task.
    pub rows: Option<Vec<usize>>,
}

/// What a batch's requests ask of it beyond their tensors, for engines that
/// pass it on (a remote stage sends the deadline and each chunk's stream).
#[derive(Clone, Debug, Default)]
pub struct BatchInfo {
    /// The earliest deadline among the batch's requests (`None`: none has one).
    pub deadline: Option<Instant>,
    /// Each task's place in its stream, in batch order (`None`: not a stream chunk).
    pub streams: Vec<Option<StreamChunk>>,
}

/// Runs one stage. Owned by one worker thread for its whole life.
pub trait Engine: Send {
    /// Runs the stage on `inputs`, given in the order of the signature's inputs.
    /// Returns the outputs in the order of the signature's outputs.
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError>;

    /// Runs the stage on a batch whose tasks hold `rows[i]` rows each, in order.
    /// Stages that change how many items a task has override this and report the
    /// new counts; the default runs [`Engine::run`] and keeps them.
    fn run_tasks(&mut self, inputs: &[&Tensor], rows: &[usize]) -> Result<StageOutput, EngineError> {
        let _ = rows;
        Ok(StageOutput { tensors: self.run(inputs)?, rows: None })
    }

    /// Runs the stage on a batch, knowing its requests' deadline and streams.
    /// Engines that pass those on override this; the default runs [`Engine::run_tasks`].
    fn run_batch(&mut self, inputs: &[&Tensor], rows: &[usize], batch: &BatchInfo) -> Result<StageOutput, EngineError> {
        let _ = batch;
        self.run_tasks(inputs, rows)
    }

    /// Bytes this engine copied between host and device memory since the last call
    /// (read by its worker after each run). Default: 0, an engine on the CPU.
    fn host_device_bytes(&mut self) -> u64 {
        0
    }

    /// Host memory the worker should stitch this engine's batches into, when the
    /// engine copies from some memory faster (pinned memory for a GPU). Default: `None`.
    fn host_memory(&self) -> Option<Arc<dyn HostMemory>> {
        None
    }

    /// The device memory this engine reads inputs from without a copy, for the
    /// worker to stitch device tensors into (a GPU node's). Default: `None`.
    fn device_memory(&self) -> Option<Arc<dyn DeviceMemory>> {
        None
    }

    /// The batch sizes this engine ran when it was created (fixed batch sizes,
    /// see [`crate::batch_sizes`]), with the time each took. Default: none.
    fn warmed_sizes(&self) -> &[WarmedSize] {
        &[]
    }

    /// A handle another thread may use to stop this engine's run in progress
    /// (the scheduler stopping a young batch for priority work, "Stopping
    /// young batches" in docs/scheduling.md). Default: `None`, runs cannot be stopped.
    fn stop_handle(&self) -> Option<Arc<dyn RunStop>> {
        None
    }
}

/// One batch size an engine ran when it was created, and how long it took (see [`Engine::warmed_sizes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarmedSize {
    pub rows: usize,
    pub took: std::time::Duration,
}

/// The batch sizes one worker's engine for one stage ran when it started (see [`Engine::warmed_sizes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarmUp {
    pub node: String,
    pub worker: usize,
    /// The stage, as `nodes.NAME.stages[i]`.
    pub stage: String,
    pub sizes: Vec<WarmedSize>,
}

/// The message a caught panic carried (an engine's, say), or "unknown panic".
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Stops an engine's runs from another thread (see [`Engine::stop_handle`]).
///
/// After [`stop`](RunStop::stop), the engine's run in progress, and any run it
/// starts, fails soon with an error of the engine's own; [`clear`](RunStop::clear)
/// lets runs go to their end again. The worker clears before every batch and
/// tells a stopped run from a failed one by whether it asked for the stop.
pub trait RunStop: Send + Sync {
    fn stop(&self);
    fn clear(&self);
}

/// The body of a Rust processing stage: inputs (stitched, signature order) and rows per task in.
pub type StageFn = dyn Fn(&[&Tensor], &[usize]) -> Result<StageOutput, EngineError> + Send + Sync;

/// A Rust processing stage (pre/post-processing, cropping, decoding) made of a
/// signature and a function; registered by name with [`EngineRegistry::with_function`]
/// and named in a pipeline as `{ function = "name" }`. The function is shared by
/// all workers, so it keeps no state between batches.
#[derive(Clone)]
pub struct FunctionStage {
    signature: ModelSignature,
    body: Arc<StageFn>,
}

impl FunctionStage {
    pub fn new(
        signature: ModelSignature,
        body: impl Fn(&[&Tensor], &[usize]) -> Result<StageOutput, EngineError> + Send + Sync + 'static,
    ) -> Self {
        FunctionStage { signature, body: Arc::new(body) }
    }
}

struct FunctionEngine(Arc<StageFn>);

impl Engine for FunctionEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let rows = vec![inputs.first().map_or(0, |t| t.batch_rows())];
        (self.0)(inputs, &rows).map(|out| out.tensors)
    }

    fn run_tasks(&mut self, inputs: &[&Tensor], rows: &[usize]) -> Result<StageOutput, EngineError> {
        (self.0)(inputs, rows)
    }
}

impl EngineProvider for FunctionStage {
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        stage.params::<NoParams>()?;
        Ok(self.signature.clone())
    }

    fn create(&self, _stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(FunctionEngine(Arc::clone(&self.body))))
    }
}

/// Creates engines of one kind.
pub trait EngineProvider: Send + Sync {
    /// Readies the provider for stages that run on `execution` (a GPU, say: its
    /// libraries found and loaded, the device present). Called at load, once per
    /// node and provider, for every node before any stage is inspected, so a
    /// provider that loads a process-wide library picks the right one. The
    /// error ([`EngineError::Unavailable`], say) tells what is missing and how to
    /// get it. Default: nothing to do.
    fn prepare(&self, execution: &Execution) -> Result<(), EngineError> {
        let _ = execution;
        Ok(())
    }
    /// Reads the stage's signature without keeping an engine (load-time checks).
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError>;
    /// Creates an engine for one worker thread.
    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError>;
}

/// Engine providers by kind name, as stages name them (`engine = "onnx"`).
#[derive(Clone, Default)]
pub struct EngineRegistry {
    providers: BTreeMap<String, Arc<dyn EngineProvider>>,
    functions: BTreeMap<String, Arc<dyn EngineProvider>>,
}

impl EngineRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the provider for `kind`.
    pub fn with(mut self, kind: &str, provider: impl EngineProvider + 'static) -> Self {
        self.providers.insert(kind.to_string(), Arc::new(provider));
        self
    }

    pub fn get(&self, kind: &str) -> Option<&Arc<dyn EngineProvider>> {
        self.providers.get(kind)
    }

    /// Registers a Rust processing stage under `name` (a pipeline names it as
    /// `{ function = "name" }`). Any provider works; [`FunctionStage`] is the simple case.
    pub fn with_function(mut self, name: &str, function: impl EngineProvider + 'static) -> Self {
        self.functions.insert(name.to_string(), Arc::new(function));
        self
    }

    pub fn function(&self, name: &str) -> Option<&Arc<dyn EngineProvider>> {
        self.functions.get(name)
    }

    /// Registered function names, for error messages.
    pub fn function_names(&self) -> Vec<&str> {
        self.functions.keys().map(String::as_str).collect()
    }

    /// Registered kind names, for error messages.
    pub fn kinds(&self) -> Vec<&str> {
        self.providers.keys().map(String::as_str).collect()
    }
}

impl fmt::Debug for EngineRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineRegistry")
            .field("engines", &self.providers.keys().collect::<Vec<_>>())
            .field("functions", &self.functions.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Config {
        threads: usize,
        #[serde(default)]
        inputs: Vec<Input>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Input {
        name: String,
    }

    fn stage(params: &str) -> StageRequest {
        StageRequest {
            location: "n.stages[1]".into(),
            model: None,
            params: params.parse().unwrap(),
            intra_threads: 1,
            inter_threads: 1,
            execution: Execution::Cpu,
            batch_sizes: BatchSizes::none(),
            device_outputs: Vec::new(),
        }
    }

    #[test]
    fn params_read_into_the_engines_config() {
        let config: Config = stage("threads = 4\ninputs = [{ name = \"x\" }]").params().unwrap();
        assert_eq!((config.threads, config.inputs[0].name.as_str()), (4, "x"));
        let _: NoParams = stage("").params().unwrap();
    }

    #[test]
    fn params_errors_name_the_stage_and_the_keys_path() {
        let err = stage("threads = 4\ninputs = [{ name = \"x\", size = 2 }]").params::<Config>().unwrap_err();
        assert!(matches!(&err, EngineError::Params { key: Some(k), .. } if k == "inputs[0].size"), "{err:?}");
        assert!(err.to_string().starts_with("stage n.stages[1]: params `inputs[0].size`: unknown key `size`"), "{err}");
        let err = stage("threads = \"four\"").params::<Config>().unwrap_err();
        assert!(err.to_string().starts_with("stage n.stages[1]: params `threads`: invalid type"), "{err}");
        let err = stage("").params::<Config>().unwrap_err();
        assert_eq!(err.to_string(), "stage n.stages[1]: params: missing key `threads`");
        let err = stage("batch = 8").params::<NoParams>().unwrap_err();
        assert!(err.to_string().contains("params `batch`: unknown key `batch`"), "{err}");
    }
}
