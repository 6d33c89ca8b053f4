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

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::execution::Execution;
use crate::tensor::{DType, Tensor};

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
    /// Engine-specific settings from the stage's `params` table.
    pub params: toml::Table,
    /// ONNX Runtime intra-op threads (or the engine's equivalent).
    pub intra_threads: usize,
    /// Inter-op threads.
    pub inter_threads: usize,
    /// Where the stage's node runs: the CPU, or a GPU with its options (the node's `provider`).
    pub execution: Execution,
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

/// Runs one stage. Owned by one worker thread for its whole life.
pub trait Engine: Send {
    /// Runs the stage on `inputs`, given in the order of the signature's inputs.
    /// Returns the outputs in the order of the signature's outputs.
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String>;

    /// Runs the stage on a batch whose tasks hold `rows[i]` rows each, in order.
    /// Stages that change how many items a task has override this and report the
    /// new counts; the default runs [`Engine::run`] and keeps them.
    fn run_tasks(&mut self, inputs: &[&Tensor], rows: &[usize]) -> Result<StageOutput, String> {
        let _ = rows;
        Ok(StageOutput { tensors: self.run(inputs)?, rows: None })
    }

    /// Bytes this engine copied between host and device memory since the last call
    /// (read by its worker after each run). Default: 0, an engine on the CPU.
    fn host_device_bytes(&mut self) -> u64 {
        0
    }
}

/// The body of a Rust processing stage: inputs (stitched, signature order) and rows per task in.
pub type StageFn = dyn Fn(&[&Tensor], &[usize]) -> Result<StageOutput, String> + Send + Sync;

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
        body: impl Fn(&[&Tensor], &[usize]) -> Result<StageOutput, String> + Send + Sync + 'static,
    ) -> Self {
        FunctionStage { signature, body: Arc::new(body) }
    }
}

struct FunctionEngine(Arc<StageFn>);

impl Engine for FunctionEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        let rows = vec![inputs.first().map_or(0, |t| t.batch_rows())];
        (self.0)(inputs, &rows).map(|out| out.tensors)
    }

    fn run_tasks(&mut self, inputs: &[&Tensor], rows: &[usize]) -> Result<StageOutput, String> {
        (self.0)(inputs, rows)
    }
}

impl EngineProvider for FunctionStage {
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, String> {
        if let Some(key) = stage.params.keys().next() {
            return Err(format!("unknown param `{key}`: this function takes no params"));
        }
        Ok(self.signature.clone())
    }

    fn create(&self, _stage: &StageRequest) -> Result<Box<dyn Engine>, String> {
        Ok(Box::new(FunctionEngine(Arc::clone(&self.body))))
    }
}

/// Creates engines of one kind.
pub trait EngineProvider: Send + Sync {
    /// Readies the provider for stages that run on `execution` (a GPU, say: its
    /// libraries found and loaded, the device present). Called at load, once per
    /// node and provider, for every node before any stage is inspected, so a
    /// provider that loads a process-wide library picks the right one. The
    /// error says what is missing and how to get it. Default: nothing to do.
    fn prepare(&self, execution: &Execution) -> Result<(), String> {
        let _ = execution;
        Ok(())
    }
    /// Reads the stage's signature without keeping an engine (load-time checks).
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, String>;
    /// Creates an engine for one worker thread.
    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, String>;
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
