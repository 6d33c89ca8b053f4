//! The `onnx` engine: runs a model stage with ONNX Runtime (through `ort`).
//!
//! [`OnnxProvider`] reads model signatures (cached per model file) and creates
//! one [`OnnxEngine`] per worker thread, each owning its own ONNX Runtime
//! session (ORT's `Run` is not thread-safe). Runs go through ONNX Runtime's
//! I/O binding (see [`bound`]): inputs are bound where they lie, outputs are
//! written into buffers the engine owns and reuses, and a batch is padded to
//! the node's fixed batch sizes, each of which runs once when the engine is
//! created (its time is reported by [`Engine::warmed_sizes`]). With
//! [`baton::BatchSizes::session_per_size`] an engine holds one session per
//! size and runs each batch in its padded size's session, so no session sees
//! its input shape change (ONNX Runtime's CUDA convolutions rebuild their cuDNN
//! plans at every change); where the model's other dims are dynamic, the
//! sessions are warmed only at the dims the stage declares
//! ([`OnnxParams::warm_up_dims`]), and each keeps its shape only where the
//! node's inputs do (a `pad` rule's `multiple` can make them).
//!
//! The ONNX Runtime library is loaded lazily (see [`crate::ort_library`]):
//! creating the provider never fails, so pipelines that only use the cost
//! model run without ONNX Runtime installed; a missing library is reported by
//! `inspect` and `create`.
//!
//! A stage of a node with `provider = "cuda"` runs in a session with ONNX
//! Runtime's CUDA provider (registered with `error_on_failure`: no silent
//! fall-back to the CPU); [`OnnxProvider`]'s `prepare` loads the GPU build for
//! it at load time (see [`crate::cuda`]). Its inputs and outputs are host
//! tensors, so ORT copies each input to the device and each output back; the
//! engine counts those bytes ([`Engine::host_device_bytes`]); outputs read only
//! by nodes on the same device stay in its memory (see [`bound`]).

mod bound;
mod strings;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton::engine::WarmedSize;
use baton::execution::{ConvAlgoSearch, CudaOptions, Execution};
use baton::tensor::{DeviceMemory, HostMemory};
use baton::{
    DType, Dim, Engine, EngineError, EngineProvider, ModelSignature, RunStop, StageRequest, Tensor, TensorSpec,
};
use ort::ep::cuda::ConvAlgorithmSearch;
use ort::ep::{ArbitrarilyConfigurableExecutionProvider, ExecutionProviderDispatch, CUDA};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{RunOptions, Session, SessionInputValue};
use ort::value::{Outlet, TensorElementType, TensorRef, ValueType};
use parking_lot::Mutex;
use serde::Deserialize;

use crate::ort_library;

/// Provider of [`OnnxEngine`]s, registered as `onnx`.
///
/// Stage settings: `model` (required), `intra_threads`, `inter_threads`, and
/// `params` as [`OnnxParams`] says.
#[derive(Default)]
pub struct OnnxProvider {
    /// Signatures by canonical model path and overridable inputs taken, so inspecting a model twice loads it once.
    signatures: Mutex<HashMap<(PathBuf, Vec<String>), ModelSignature>>,
}

impl OnnxProvider {
    /// A provider. Never fails: ONNX Runtime is loaded at the first `inspect` or `create`.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The onnx engine's `params`; any other key is an error naming it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxParams {
    /// Graph inputs that have a default value (an initializer of the same name:
    /// ONNX Runtime's overridable initializers) the stage takes as inputs, after
    /// the model's required inputs, in this order. Without it they keep their defaults.
    #[serde(default)]
    pub overridable_inputs: Vec<String>,
    /// Per input whose dims after the batch dim are not all fixed, the dims every batch
    /// size is warmed at (`warm_up_dims = { x = [3, 160, 960] }`): the one shape the node's
    /// batches have, where a `pad` rule's `multiple` makes it so. Without them such a model's
    /// sizes are not warmed; with them, every such input must be named.
    #[serde(default)]
    pub warm_up_dims: BTreeMap<String, Vec<usize>>,
}

impl EngineProvider for OnnxProvider {
    /// A CUDA node: the GPU, ONNX Runtime's GPU build and the CUDA libraries must be
    /// there; the build is loaded now, before any stage is inspected (see [`crate::cuda`]).
    /// What is missing is an [`EngineError::Unavailable`] at the device (`cuda0`).
    fn prepare(&self, execution: &Execution) -> Result<(), EngineError> {
        match execution {
            Execution::Cpu => Ok(()),
            Execution::Cuda { device, .. } => ort_library::gpu_environment(*device)
                .map(|_| ())
                .map_err(|message| EngineError::Unavailable { location: execution.to_string(), message }),
        }
    }

    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        let params: OnnxParams = stage.params()?;
        let key = (model_path(stage)?, params.overridable_inputs.clone());
        let cached = self.signatures.lock().get(&key).cloned();
        let sig = match cached {
            Some(sig) => sig,
            None => {
                // Load outside the lock; only the signature is needed, so skip graph optimizations.
                // On the CPU even for a CUDA node: the signature does not depend on the provider.
                let session = load_session(stage, &key.0, &Execution::Cpu, GraphOptimizationLevel::Disable, 1, 1)?;
                let sig = signature(&session, stage, &key.0)?;
                self.signatures.lock().insert(key, sig.clone());
                sig
            }
        };
        warm_up_shapes(&sig, &params.warm_up_dims).map_err(|(key, message)| stage.params_error(&key, message))?;
        Ok(sig)
    }

    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(OnnxEngine::new(stage)?))
    }
}

/// One worker thread's ONNX Runtime sessions of a stage: one, or with
/// [`BatchSizes::session_per_size`] one per batch size.
pub struct OnnxEngine {
    /// Ascending by size; a batch runs in the first session whose size holds its padded rows,
    /// else in the last.
    sessions: Vec<SizedSession>,
    signature: ModelSignature,
    location: String,
    /// On a GPU: bytes of the tensors handed to and taken from the session since
    /// they were last read (inputs live in host memory and ORT copies them to the
    /// device; outputs come back to host memory). `None` on the CPU.
    copied: Option<u64>,
    /// The options every run is given: their terminate flag is how another thread stops a run.
    run_options: Arc<OrtRunStop>,
    /// The batch sizes run when the engine was created, with their times.
    warmed: Vec<WarmedSize>,
    /// On a GPU: pinned host memory, for the buffers inputs are stitched into and outputs written to.
    host_memory: Option<Arc<dyn HostMemory>>,
    /// On a GPU: its memory, where inputs from other nodes on it are stitched and outputs kept.
    device_memory: Option<Arc<dyn DeviceMemory>>,
}

/// A session and its bound runs, for batches padded to `rows` (`usize::MAX`: any).
struct SizedSession {
    rows: usize,
    session: Session,
    /// Runs through I/O binding into pooled buffers, padded to the batch sizes.
    bound: bound::BoundRuns,
    /// Batches run, for [`OnnxEngine::runs_per_session`].
    runs: u64,
}

/// ONNX Runtime's terminate flag as a [`RunStop`]: ORT looks at it before each
/// kernel of a run, so a stopped run ends within one kernel's time.
struct OrtRunStop(RunOptions);

impl RunStop for OrtRunStop {
    fn stop(&self) {
        if let Err(e) = self.0.terminate() {
            tracing::warn!("cannot stop an ONNX Runtime run: {e}");
        }
    }

    fn clear(&self) {
        if let Err(e) = self.0.unterminate() {
            tracing::warn!("cannot clear an ONNX Runtime run's stop: {e}");
        }
    }
}

impl OnnxEngine {
    /// Loads the stage's model into a new session with the stage's thread settings
    /// (`intra_threads`, `inter_threads`), all graph optimizations, and on a CUDA
    /// node ONNX Runtime's CUDA provider with the node's options (an error, never a
    /// silent fall-back to the CPU, when it cannot be registered).
    pub fn new(stage: &StageRequest) -> Result<OnnxEngine, EngineError> {
        let params: OnnxParams = stage.params()?;
        let path = model_path(stage)?;
        let first = open_session(stage)?;
        let signature = signature(&first, stage, &path)?;
        let copied = (stage.execution != Execution::Cpu).then_some(0);
        let setup_error = |what: &str, e: String| EngineError::Run(format!("stage {}: {what}: {e}", stage.location));
        let run_options = RunOptions::new().map_err(|e| setup_error("cannot create run options", e.to_string()))?;
        let run_options = Arc::new(OrtRunStop(run_options));
        let (host_memory, device_memory) = match stage.execution {
            Execution::Cpu => (None, None),
            Execution::Cuda { device, .. } => {
                (crate::cuda_runtime::pinned_memory(), crate::cuda_runtime::device_memory(device as u32))
            }
        };
        if stage.batch_sizes.fixed_buffers() && stage.execution != Execution::Cpu && device_memory.is_none() {
            return Err(setup_error("cuda_graph", "its buffers need the CUDA runtime, which is not loaded".into()));
        }
        // One session per size where asked (warmed where the model's shapes are known per
        // size; else each meets its shapes with the first batches); else one for every batch.
        let own_sizes = stage.batch_sizes.session_per_size();
        let rows: Vec<usize> = if own_sizes { stage.batch_sizes.sizes().to_vec() } else { vec![usize::MAX] };
        let mut sessions = Vec::with_capacity(rows.len());
        let mut first = Some(first);
        for rows in rows {
            let session = match first.take() {
                Some(session) => session,
                None => open_session(stage)?,
            };
            let bound = bound::BoundRuns::new(
                &session,
                &signature,
                &stage.batch_sizes,
                host_memory.clone(),
                device_memory.clone(),
                &stage.device_outputs,
            )
            .map_err(|e| setup_error("cannot bind the session's inputs and outputs", e))?;
            sessions.push(SizedSession { rows, session, bound, runs: 0 });
        }
        let mut engine = OnnxEngine {
            sessions,
            signature,
            location: stage.location.clone(),
            copied,
            run_options,
            warmed: Vec::new(),
            host_memory,
            device_memory,
        };
        let runs_per_size = if stage.batch_sizes.fixed_buffers() { 2 } else { 1 };
        let shapes = warm_up_shapes(&engine.signature, &params.warm_up_dims)
            .map_err(|(key, message)| stage.params_error(&key, message))?;
        if let Some(shapes) = shapes {
            engine.warm_up(&shapes, stage.batch_sizes.sizes(), runs_per_size)?;
        }
        for session in &mut engine.sessions {
            session.runs = 0;
            session.bound.take_ort_runs();
        }
        Ok(engine)
    }

    /// Per session, the padded rows it runs (`usize::MAX`: any) and the batches it ran since
    /// the engine was made (warm-up not counted).
    pub fn runs_per_session(&self) -> Vec<(usize, u64)> {
        self.sessions.iter().map(|s| (s.rows, s.runs)).collect()
    }

    /// ONNX Runtime runs since the last call (warm-up not counted): one per batch, or one
    /// per piece of a batch run in pieces ([`baton::BatchSizes::piece_rows`]).
    pub fn take_ort_runs(&mut self) -> u64 {
        self.sessions.iter_mut().map(|s| s.bound.take_ort_runs()).sum()
    }

    /// The model's inputs and outputs, in the order `run` takes and returns them.
    pub fn signature(&self) -> &ModelSignature {
        &self.signature
    }

    /// Runs every batch size once on zeros, timing each, so that ONNX Runtime's set-up for
    /// a shape (on a GPU: algorithm search, memory growth, kernel selection) is done before
    /// the first request, each input at its `shapes` entry (dtype, dims after the batch dim).
    /// With fixed buffers each size runs twice: the first run fixes the buffers, the second
    /// is the one ONNX Runtime records a CUDA graph in.
    fn warm_up(&mut self, shapes: &[WarmShape], sizes: &[usize], runs_per_size: usize) -> Result<(), EngineError> {
        let mut outputs = Vec::with_capacity(self.signature.outputs.len());
        for &rows in sizes.iter().flat_map(|s| std::iter::repeat_n(s, runs_per_size)) {
            let inputs = shapes
                .iter()
                .map(|(dtype, dims)| Tensor::zeros(*dtype, std::iter::once(rows).chain(dims.iter().copied()).collect()))
                .collect::<Result<Vec<Tensor>, _>>()
                .map_err(|e| EngineError::Run(format!("stage {}: warm-up batch of {rows}: {e}", self.location)))?;
            let refs: Vec<&Tensor> = inputs.iter().collect();
            let started = std::time::Instant::now();
            outputs.clear();
            self.run_into(&refs, &mut outputs)
                .map_err(|e| EngineError::Run(format!("warm-up batch of {rows} rows: {e}")))?;
            match self.warmed.last_mut() {
                Some(last) if last.rows == rows => last.took += started.elapsed(),
                _ => self.warmed.push(WarmedSize { rows, took: started.elapsed() }),
            }
        }
        // Warm-up copies are not the pipeline's.
        self.host_device_bytes();
        Ok(())
    }

    /// Runs one batch (inputs in signature order), appending the outputs in signature order
    /// to `outputs`. With `outputs` reused from batch to batch and the outputs of earlier
    /// batches dropped, a batch of shapes seen before makes no heap allocation.
    pub fn run_into(&mut self, inputs: &[&Tensor], outputs: &mut Vec<Tensor>) -> Result<(), EngineError> {
        let specs = &self.signature.inputs;
        let input_error = |message: String| EngineError::Input { location: self.location.clone(), message };
        if inputs.len() != specs.len() {
            return Err(input_error(format!("the model takes {} inputs but {} were given", specs.len(), inputs.len())));
        }
        for (tensor, spec) in inputs.iter().zip(specs) {
            if tensor.dtype() != spec.dtype {
                return Err(input_error(format!(
                    "input `{}` must be {} but a {} tensor was given",
                    spec.name,
                    spec.dtype,
                    tensor.dtype()
                )));
            }
        }
        let first = outputs.len();
        let padded = bound::batch_rows(inputs).map(|rows| self.sessions[0].bound.padded(rows));
        let last = self.sessions.len() - 1;
        let at = padded.and_then(|p| self.sessions.iter().position(|s| s.rows >= p)).unwrap_or(last);
        let SizedSession { session, bound, runs, .. } = &mut self.sessions[at];
        *runs += 1;
        bound
            .run(session, &self.run_options.0, inputs, outputs)
            .map_err(|message| EngineError::Run(format!("stage {}: {message}", self.location)))?;
        if let Some(copied) = &mut self.copied {
            // Host tensors cross to or from the device; device tensors stay there.
            let host_bytes = |ts: &mut dyn Iterator<Item = &Tensor>| {
                ts.filter(|t| t.device().is_none()).map(|t| (t.len() * t.dtype().size()) as u64).sum::<u64>()
            };
            *copied += host_bytes(&mut inputs.iter().copied())
                + host_bytes(&mut outputs[first..].iter())
                + bound.take_crossed();
        }
        Ok(())
    }
}

/// An input's dtype and its dims after the batch dim, for warming the batch sizes.
type WarmShape = (DType, Vec<usize>);

/// Per input, its dtype and the dims after the batch dim that the batch sizes are warmed
/// at: its fixed dims, or those `declared` for it (`warm_up_dims`). `None` where some input
/// has no batch dim to vary or dynamic dims nobody declared (so a batch's shape is not
/// known). An error, as the params key and a message: a declared input the model lacks, a
/// declared rank or dim the model contradicts, or undeclared dynamic dims beside declared ones.
fn warm_up_shapes(
    signature: &ModelSignature,
    declared: &BTreeMap<String, Vec<usize>>,
) -> Result<Option<Vec<WarmShape>>, (String, String)> {
    let key = |name: &str| format!("warm_up_dims.{name}");
    if let Some(name) = declared.keys().find(|name| !signature.inputs.iter().any(|s| &s.name == *name)) {
        let inputs: Vec<&str> = signature.inputs.iter().map(|s| s.name.as_str()).collect();
        return Err((key(name), format!("the model has no input `{name}` (its inputs: {})", inputs.join(", "))));
    }
    let mut shapes = Vec::with_capacity(signature.inputs.len());
    let mut undeclared = None;
    for spec in &signature.inputs {
        let Some((Dim::Dynamic(_), rest)) = spec.shape.split_first() else { return Ok(None) };
        let fixed: Option<Vec<usize>> =
            rest.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect();
        let dims = match (declared.get(&spec.name), fixed) {
            (Some(dims), _) => {
                if dims.len() != rest.len() || dims.contains(&0) {
                    return Err((
                        key(&spec.name),
                        format!(
                            "{dims:?}: input `{}` has {} dims after the batch dim, each at least 1",
                            spec.name,
                            rest.len()
                        ),
                    ));
                }
                let contradicted = rest.iter().zip(dims).enumerate().find_map(|(at, (dim, want))| match dim {
                    Dim::Fixed(n) if n != want => Some((at + 1, *n)),
                    _ => None,
                });
                if let Some((at, n)) = contradicted {
                    return Err((
                        key(&spec.name),
                        format!("{dims:?}: dim {at} of input `{}` is fixed at {n}", spec.name),
                    ));
                }
                dims.clone()
            }
            (None, Some(dims)) => dims,
            (None, None) => {
                undeclared.get_or_insert(spec.name.as_str());
                continue;
            }
        };
        shapes.push((spec.dtype, dims));
    }
    match undeclared {
        None => Ok(Some(shapes)),
        Some(name) if !declared.is_empty() => Err((
            "warm_up_dims".into(),
            format!("input `{name}` has dynamic dims after the batch dim too: give its dims as well"),
        )),
        Some(_) => Ok(None),
    }
}

impl Engine for OnnxEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let mut outputs = Vec::with_capacity(self.signature.outputs.len());
        self.run_into(inputs, &mut outputs)?;
        Ok(outputs)
    }

    fn host_device_bytes(&mut self) -> u64 {
        self.copied.as_mut().map_or(0, std::mem::take)
    }

    fn stop_handle(&self) -> Option<Arc<dyn RunStop>> {
        Some(self.run_options.clone())
    }

    fn warmed_sizes(&self) -> &[WarmedSize] {
        &self.warmed
    }

    fn host_memory(&self) -> Option<Arc<dyn HostMemory>> {
        self.host_memory.clone()
    }

    fn device_memory(&self) -> Option<Arc<dyn DeviceMemory>> {
        self.device_memory.clone()
    }
}

/// A zero-copy ORT view of a Baton tensor's elements (a copy for a BYTES tensor:
/// ONNX Runtime keeps strings its own way, see [`strings`]).
fn input_view(tensor: &Tensor) -> Result<SessionInputValue<'_>, String> {
    if tensor.dtype() == DType::Bytes {
        return strings::input(tensor).map(SessionInputValue::from);
    }
    let shape = tensor.shape();
    baton::with_element_type!(tensor.dtype(), T => {
        let data = tensor.as_slice::<T>().map_err(|e| e.to_string())?;
        TensorRef::from_array_view((shape, data)).map(SessionInputValue::from).map_err(|e| e.to_string())
    })
}

/// A session on `path` with the given optimization level and thread counts (all set
/// explicitly), on `execution`: on a CUDA device, its nodes run there (those the CUDA
/// provider lacks run on the CPU, as ONNX Runtime places them), the provider registered
/// with `error_on_failure`.
fn load_session(
    stage: &StageRequest,
    path: &Path,
    execution: &Execution,
    level: GraphOptimizationLevel,
    intra_threads: usize,
    inter_threads: usize,
) -> Result<Session, EngineError> {
    let env = match execution {
        Execution::Cpu => ort_library::environment(),
        Execution::Cuda { device, .. } => ort_library::gpu_environment(*device),
    }
    .map_err(|message| EngineError::Unavailable { location: stage.location.clone(), message })?;
    let build = || {
        let builder = Session::builder(env)?
            .with_optimization_level(level)?
            .with_intra_threads(intra_threads)?
            .with_inter_threads(inter_threads)?;
        match execution {
            Execution::Cpu => builder,
            Execution::Cuda { device, options } => {
                builder.with_execution_providers([cuda_provider(*device, options)])?
            }
        }
        .commit_from_file(path)
    };
    build().map_err(|e: ort::Error| EngineError::Load {
        location: stage.location.clone(),
        model: path.to_path_buf(),
        reason: match execution {
            Execution::Cpu => e.to_string(),
            gpu => format!("{e} (on {gpu})"),
        },
    })
}

/// The session the `onnx` engine runs `stage` in: the stage's model and thread settings, all
/// graph optimizations, and on a CUDA node the CUDA provider with the node's options (the raw
/// baseline of `baton bench` opens the same).
pub fn open_session(stage: &StageRequest) -> Result<Session, EngineError> {
    let path = model_path(stage)?;
    let level = GraphOptimizationLevel::All;
    load_session(stage, &path, &stage.execution, level, stage.intra_threads, stage.inter_threads)
}

/// ONNX Runtime's CUDA provider on `device` with the node's options; registering it fails
/// loudly (`error_on_failure`) rather than falling back to the CPU.
fn cuda_provider(device: usize, options: &CudaOptions) -> ExecutionProviderDispatch {
    let search = match options.cudnn_conv_algo_search {
        ConvAlgoSearch::Exhaustive => ConvAlgorithmSearch::Exhaustive,
        ConvAlgoSearch::Heuristic => ConvAlgorithmSearch::Heuristic,
        ConvAlgoSearch::Default => ConvAlgorithmSearch::Default,
    };
    let mut ep = CUDA::default().with_device_id(device as i32).with_conv_algorithm_search(search);
    if let Some(limit) = options.gpu_mem_limit {
        ep = ep.with_memory_limit(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    if let Some(tf32) = options.tf32 {
        ep = ep.with_tf32(tf32);
    }
    if let Some(default_stream) = options.copy_in_default_stream {
        ep = ep.with_arbitrary_config("do_copy_in_default_stream", u8::from(default_stream));
    }
    if options.cuda_graph {
        ep = ep.with_cuda_graph(true);
    }
    ep.build().error_on_failure()
}

/// The stage's model path, canonicalized (the signature cache key).
fn model_path(stage: &StageRequest) -> Result<PathBuf, EngineError> {
    let setting = |message: String| EngineError::Setting { location: stage.location.clone(), message };
    let model = stage.model.as_ref().ok_or_else(|| setting("the onnx engine needs `model = \"path.onnx\"`".into()))?;
    if !model.is_file() {
        return Err(setting(format!("model file {} not found", model.display())));
    }
    model.canonicalize().map_err(|e| setting(format!("model file {}: {e}", model.display())))
}

/// The session's inputs and outputs as Baton specs, in session order; the
/// overridable initializers the stage's `overridable_inputs` names follow the inputs.
fn signature(session: &Session, stage: &StageRequest, path: &Path) -> Result<ModelSignature, EngineError> {
    let params: OnnxParams = stage.params()?;
    let mut sig = required_signature(session, stage, path)?;
    let overridable = session.overridable_initializers();
    for name in &params.overridable_inputs {
        let Some(o) = overridable.iter().find(|o| o.name() == name) else {
            let has: Vec<&str> = overridable.iter().map(|o| o.name()).collect();
            return Err(stage.params_error(
                "overridable_inputs",
                format!(
                    "`{name}` is not a graph input with a default (an initializer) in {} (it has: {})",
                    path.display(),
                    if has.is_empty() { "none".to_string() } else { has.join(", ") }
                ),
            ));
        };
        let spec = tensor_spec(o.name(), o.dtype()).map_err(|reason| EngineError::Load {
            location: stage.location.clone(),
            model: path.to_path_buf(),
            reason,
        })?;
        sig.inputs.push(spec);
    }
    Ok(sig)
}

/// The session's required inputs and its outputs as Baton specs, in session order.
fn required_signature(session: &Session, stage: &StageRequest, path: &Path) -> Result<ModelSignature, EngineError> {
    let specs = |outlets: &[Outlet]| {
        outlets
            .iter()
            .map(|o| {
                tensor_spec(o.name(), o.dtype()).map_err(|reason| EngineError::Load {
                    location: stage.location.clone(),
                    model: path.to_path_buf(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, EngineError>>()
    };
    Ok(ModelSignature { inputs: specs(session.inputs())?, outputs: specs(session.outputs())? })
}

/// One model input or output (its name and ORT type) as a [`TensorSpec`]; non-tensor
/// values and unsupported element types are errors naming the tensor and its type.
pub fn tensor_spec(name: &str, value_type: &ValueType) -> Result<TensorSpec, String> {
    let ValueType::Tensor { ty, shape, dimension_symbols } = value_type else {
        return Err(format!("`{name}` is a {value_type}, but Baton only passes tensors"));
    };
    let dtype =
        map_dtype(*ty).ok_or_else(|| format!("`{name}` has element type {ty}, which Baton does not support"))?;
    let shape = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if d >= 0 {
                Dim::Fixed(d as usize)
            } else {
                let name = dimension_symbols.get(i).filter(|s| !s.is_empty()).cloned();
                Dim::Dynamic(name)
            }
        })
        .collect();
    Ok(TensorSpec { name: name.to_string(), dtype, shape })
}

/// ONNX element type → Baton dtype, for the types Baton supports.
pub fn map_dtype(ty: TensorElementType) -> Option<DType> {
    Some(match ty {
        TensorElementType::Float32 => DType::F32,
        TensorElementType::Float16 => DType::F16,
        TensorElementType::Bfloat16 => DType::BF16,
        TensorElementType::Float64 => DType::F64,
        TensorElementType::Int64 => DType::I64,
        TensorElementType::Int32 => DType::I32,
        TensorElementType::Int16 => DType::I16,
        TensorElementType::Int8 => DType::I8,
        TensorElementType::Uint8 => DType::U8,
        TensorElementType::Uint16 => DType::U16,
        TensorElementType::Uint32 => DType::U32,
        TensorElementType::Uint64 => DType::U64,
        TensorElementType::Bool => DType::Bool,
        TensorElementType::String => DType::Bytes,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ort::value::{Shape, SymbolicDimensions};

    // Not an `Outlet`: `Outlet::new` calls into ONNX Runtime (it builds an OrtValueInfo).
    fn tensor_type(ty: TensorElementType, dims: &[i64], symbols: &[&str]) -> ValueType {
        ValueType::Tensor {
            ty,
            shape: Shape::new(dims.iter().copied()),
            dimension_symbols: SymbolicDimensions::new(symbols.iter().map(|s| s.to_string())),
        }
    }

    #[test]
    fn supported_element_types_map_to_baton_dtypes() {
        let pairs = [
            (TensorElementType::Float32, DType::F32),
            (TensorElementType::Float16, DType::F16),
            (TensorElementType::Bfloat16, DType::BF16),
            (TensorElementType::Float64, DType::F64),
            (TensorElementType::Int64, DType::I64),
            (TensorElementType::Int32, DType::I32),
            (TensorElementType::Int16, DType::I16),
            (TensorElementType::Int8, DType::I8),
            (TensorElementType::Uint8, DType::U8),
            (TensorElementType::Uint16, DType::U16),
            (TensorElementType::Uint32, DType::U32),
            (TensorElementType::Uint64, DType::U64),
            (TensorElementType::Bool, DType::Bool),
            (TensorElementType::String, DType::Bytes),
        ];
        for (ty, dtype) in pairs {
            assert_eq!(map_dtype(ty), Some(dtype), "{ty}");
        }
        for ty in [TensorElementType::Complex64, TensorElementType::Float8E4M3FN] {
            assert_eq!(map_dtype(ty), None, "{ty}");
        }
    }

    #[test]
    fn dynamic_dims_keep_their_symbol_names() {
        let spec = tensor_spec("t", &tensor_type(TensorElementType::Float32, &[-1, 3, -1], &["N", "", ""])).unwrap();
        assert_eq!(spec.shape, vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(3), Dim::Dynamic(None)]);
        assert_eq!(spec.dtype, DType::F32);
        assert_eq!(spec.name, "t");
    }

    #[test]
    fn unsupported_element_types_are_rejected_naming_the_tensor_and_type() {
        let err = tensor_spec("t", &tensor_type(TensorElementType::Complex64, &[-1], &["N"])).unwrap_err();
        assert!(err.contains("`t`") && err.contains("c64"), "{err}");
    }

    #[test]
    fn non_tensor_values_are_rejected_naming_the_type() {
        let seq = ValueType::Sequence(Box::new(tensor_type(TensorElementType::Float32, &[2], &[""])));
        let err = tensor_spec("s", &seq).unwrap_err();
        assert!(err.contains("`s`") && err.contains("Sequence<"), "{err}");
    }

    #[test]
    fn params_are_rejected_before_anything_is_loaded() {
        let stage = StageRequest {
            location: "n.stages[0]".into(),
            model: Some("/nonexistent.onnx".into()),
            params: "threads = 2".parse().unwrap(),
            intra_threads: 1,
            inter_threads: 1,
            execution: baton::Execution::Cpu,
            batch_sizes: baton::BatchSizes::none(),
            device_outputs: Vec::new(),
        };
        let err = OnnxProvider::new().inspect(&stage).unwrap_err().to_string();
        assert!(err.contains("n.stages[0]") && err.contains("`threads`"), "{err}");
    }
}
