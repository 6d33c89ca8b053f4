//! Baton: an in-process, real-time inference runtime for pipelines of
//! collaborating neural networks.

pub mod engine;
pub mod tensor;

pub use engine::{Dim, Engine, EngineProvider, EngineRegistry, ModelSignature, StageRequest, TensorSpec};
pub use tensor::{DType, Element, Tensor, TensorError};
