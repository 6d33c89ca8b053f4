//! Engines for Baton: ONNX Runtime through `ort` (`onnx`), a stage on a
//! KServe v2 server over gRPC (`remote`, docs/remote.md) and a simulation
//! engine for scheduler tests (`cost_model`).
//!
//! ```
//! let registry = baton_engines::standard_registry();
//! assert_eq!(registry.kinds(), ["cost_model", "onnx", "remote"]);
//! ```

pub mod cost_model;
pub mod cuda;
pub mod cuda_runtime;
pub mod onnx;
pub mod ort_library;
pub mod remote;

pub use cost_model::{CostModelConfig, CostModelEngine, CostModelProvider, LatencyCurve, WaitMode};
pub use onnx::{OnnxEngine, OnnxProvider};
pub use remote::{RemoteEngine, RemoteProvider};

/// A registry with every engine of this crate: `onnx` ([`OnnxProvider`]),
/// `remote` ([`RemoteProvider`]) and `cost_model` ([`CostModelProvider`]). Never fails, even without ONNX Runtime
/// installed (the `onnx` engine reports that when a stage uses it).
pub fn standard_registry() -> baton::EngineRegistry {
    baton::EngineRegistry::new()
        .with("onnx", OnnxProvider::new())
        .with("cost_model", CostModelProvider::new())
        .with(baton::spec::remote::REMOTE_ENGINE, RemoteProvider::new())
}
