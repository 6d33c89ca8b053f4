//! Baton: an in-process, real-time inference runtime for pipelines of
//! collaborating neural networks.
//!
//! A pipeline (a TOML file, see [`config`]) is a DAG of inference nodes. Each
//! node has a batching buffer and worker threads that own its engine sessions
//! (ONNX Runtime through the `baton-engines` crate). A scheduler picks which
//! nodes run next by the collaborative rule of docs/scheduling.md (priority nodes first, then pending tasks
//! × collaboration weight, under a compute budget); workers stitch a batch,
//! run the node's stages, split the outputs and route them along the edges,
//! joins waiting for all their inputs.
//!
//! Start with [`Runtime`]: build it from a file and an [`EngineRegistry`],
//! [`Runtime::submit`] [`Request`]s, and wait on the [`Ticket`]s.

mod awake;
pub mod batch_cpu;
pub mod batch_sizes;
mod clock;
pub mod config;
pub mod engine;
pub mod execution;
pub mod fairness;
pub mod log_buckets;
pub mod metrics;
mod node;
pub mod npy;
mod pipeline;
pub mod queue_times;
pub mod request;
pub mod runtime;
pub mod scheduler;
pub mod spec;
pub mod spin_cpu;
pub mod split;
pub mod stats;
pub mod tensor;
pub mod wake_delays;
mod wakeup;
mod worker;

pub use batch_sizes::BatchSizes;
pub use config::{BatchingPolicy, ConfigError, PipelineConfig};
pub use engine::{
    BatchInfo, Dim, Engine, EngineError, EngineProvider, EngineRegistry, FunctionStage, ModelSignature, NoParams,
    RunStop, StageOutput, StageParams, StageRequest, TensorSpec, WarmUp, WarmedSize,
};
pub use execution::{CudaOptions, Execution};
/// The `half` crate, for `f16` tensors (and [`with_element_type!`]).
pub use half;
pub use node::{request_thread_realtime, request_thread_slice, set_thread_nice, NodeStats};
pub use request::{Outputs, Request, RequestError, RequestResult, Ticket, WaitTimeout};
pub use runtime::{Runtime, StartError, Submitter};
pub use spec::PipelineSpec;
pub use tensor::{DType, Element, Tensor, TensorError};
