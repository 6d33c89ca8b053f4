//! Opening ONNX Runtime sessions on the CPU or CUDA provider with a variant's settings, and
//! running them on f32 inputs, every f32 output copied out by name.

use std::path::{Path, PathBuf};

use ort::environment::Environment;
use ort::ep::{ArbitrarilyConfigurableExecutionProvider, CUDA};
use ort::session::{Session, SessionInputValue};
use ort::value::{TensorElementType, TensorRef, ValueType};

use crate::compare::Named;
use crate::inputs::InputSpec;
use crate::variants::Level;

/// Where a session runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Provider {
    /// ONNX Runtime's CPU provider.
    Cpu,
    /// The CUDA provider on `device` with these options (`error_on_failure`: no silent CPU fall-back).
    Cuda { device: usize, options: Vec<(&'static str, &'static str)> },
}

/// What a session is opened with.
#[derive(Clone, Debug)]
pub struct Settings {
    pub provider: Provider,
    pub level: Level,
    /// CPU intra-op threads (0: ONNX Runtime's default).
    pub threads: usize,
    /// Profile into this file prefix (ORT appends a date and `.json`).
    pub profile: Option<PathBuf>,
}

/// Opens `model` with `settings`; the error names the model, the provider and the level.
pub fn open(env: &Environment, model: &Path, settings: &Settings) -> Result<Session, String> {
    let build = || -> ort::Result<Session> {
        let mut builder = Session::builder(env)?.with_optimization_level(settings.level.ort())?;
        if settings.threads > 0 {
            builder = builder.with_intra_threads(settings.threads)?;
        }
        if let Some(prefix) = &settings.profile {
            builder = builder.with_profiling(prefix)?;
        }
        if let Provider::Cuda { device, options } = &settings.provider {
            let mut ep = CUDA::default().with_device_id(*device as i32);
            for (key, value) in options {
                ep = ep.with_arbitrary_config(*key, *value);
            }
            builder = builder.with_execution_providers([ep.build().error_on_failure()])?;
        }
        builder.commit_from_file(model)
    };
    build().map_err(|e| {
        format!(
            "cannot open {} on {:?} (graph optimization {}): {e}",
            model.display(),
            settings.provider,
            settings.level
        )
    })
}

/// The session's inputs as [`InputSpec`]s.
pub fn input_specs(session: &Session) -> Vec<InputSpec> {
    session
        .inputs()
        .iter()
        .map(|o| match o.dtype() {
            ValueType::Tensor { ty, shape, .. } => InputSpec {
                name: o.name().to_string(),
                dims: shape.iter().map(|&d| usize::try_from(d).ok()).collect(),
                is_f32: *ty == TensorElementType::Float32,
            },
            _ => InputSpec { name: o.name().to_string(), dims: Vec::new(), is_f32: false },
        })
        .collect()
}

/// Runs `session` on `inputs` (by name) and copies out every f32 output, in session order.
/// Outputs of other types are left out.
pub fn run(session: &mut Session, inputs: &[Named]) -> Result<Vec<Named>, String> {
    let mut values: Vec<(String, SessionInputValue<'_>)> = Vec::with_capacity(inputs.len());
    for t in inputs {
        let view = TensorRef::from_array_view((t.shape.clone(), t.data.as_slice()))
            .map_err(|e| format!("input `{}`: {e}", t.name))?;
        values.push((t.name.clone(), view.into()));
    }
    let outputs = session.run(values).map_err(|e| format!("ONNX Runtime failed: {e}"))?;
    let mut result = Vec::with_capacity(outputs.len());
    for (name, value) in outputs.iter() {
        let Ok((shape, data)) = value.try_extract_tensor::<f32>() else {
            continue;
        };
        let shape = shape.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect();
        result.push(Named { name: name.to_string(), shape, data: data.to_vec() });
    }
    Ok(result)
}

/// Ends the session's profiling and moves the trace to `dest`; returns `dest`'s text.
pub fn finish_profile(session: &mut Session, dest: &Path) -> Result<String, String> {
    let written = session.end_profiling().map_err(|e| format!("cannot end profiling: {e}"))?;
    std::fs::rename(&written, dest)
        .or_else(|_| std::fs::copy(&written, dest).map(|_| ()).and_then(|()| std::fs::remove_file(&written)))
        .map_err(|e| format!("cannot move the trace {written} to {}: {e}", dest.display()))?;
    std::fs::read_to_string(dest).map_err(|e| format!("cannot read {}: {e}", dest.display()))
}
