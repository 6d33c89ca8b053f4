//! Where a node's model stages run: on the CPU cores, or on a GPU through ONNX Runtime's CUDA provider.
//!
//! The pipeline file says it per node (the CPU is the default):
//!
//! ```toml
//! [nodes.ocr]
//! stages = [{ model = "det.onnx" }]
//! provider = "cuda"                  # "cpu" (default) or "cuda"
//! device = 0                         # CUDA device index (default 0)
//! cuda = { gpu_mem_limit = 4294967296, cudnn_conv_algo_search = "heuristic" }
//!
//! [devices.cuda0]
//! budget = 2                         # batches that may run on the device at once (default 1)
//! ```
//!
//! [`Execution`] is what a node's stages get ([`crate::StageRequest::execution`]);
//! [`crate::spec::Resource`] is what the scheduler sees: a CPU node holds its `cost` of the
//! compute budget while it runs, a GPU node ([`crate::spec::Resource::Device`]) one batch
//! slot of its device's budget.

use std::fmt;

use serde::Deserialize;

/// `provider`: which ONNX Runtime execution provider runs a node's stages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// ONNX Runtime's CPU provider (the default).
    #[default]
    Cpu,
    /// ONNX Runtime's CUDA provider, on the node's `device`.
    Cuda,
}

/// `cudnn_conv_algo_search`: how cuDNN picks a convolution algorithm (ONNX Runtime's option of that name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConvAlgoSearch {
    /// Benchmark every algorithm once per shape (ONNX Runtime's default): the fastest, a slow first run.
    #[default]
    Exhaustive,
    /// cuDNN's heuristics: no benchmarking.
    Heuristic,
    /// cuDNN's default algorithm.
    Default,
}

impl ConvAlgoSearch {
    /// The value ONNX Runtime's `cudnn_conv_algo_search` option takes.
    pub fn ort_name(self) -> &'static str {
        match self {
            ConvAlgoSearch::Exhaustive => "EXHAUSTIVE",
            ConvAlgoSearch::Heuristic => "HEURISTIC",
            ConvAlgoSearch::Default => "DEFAULT",
        }
    }
}

/// `[nodes.NAME.cuda]`: CUDA provider options (only with `provider = "cuda"`).
/// Left out, each is ONNX Runtime's default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaOptions {
    /// Most bytes the provider's device memory arena may hold (`gpu_mem_limit`). Default: no limit.
    pub gpu_mem_limit: Option<u64>,
    /// cuDNN convolution algorithm search.
    #[serde(default)]
    pub cudnn_conv_algo_search: ConvAlgoSearch,
    /// Copies between host and device on the default stream (`do_copy_in_default_stream`,
    /// ONNX Runtime's default `true`); `false` puts them on the compute stream's own copy streams.
    pub copy_in_default_stream: Option<bool>,
    /// TensorFloat-32 matrix products (`use_tf32`): faster, about 1e-3 relative precision. Default: ONNX Runtime's.
    pub tf32: Option<bool>,
    /// CUDA graphs (`enable_cuda_graph`): each batch size's session records its kernel
    /// launches once and replays them, with its inputs and outputs at fixed device
    /// addresses (see [`crate::BatchSizes::fixed_buffers`]). Needs a session per size.
    #[serde(default)]
    pub cuda_graph: bool,
}

/// Where a node's stages run, validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Execution {
    /// On the CPU cores (ONNX Runtime's CPU provider).
    #[default]
    Cpu,
    /// On CUDA device `device`, with the node's options.
    Cuda { device: usize, options: CudaOptions },
}

impl Execution {
    /// The device this runs on, named as `[devices.NAME]` names it (`cuda0`), or `None` on the CPU.
    pub fn device_name(&self) -> Option<String> {
        match self {
            Execution::Cpu => None,
            Execution::Cuda { device, .. } => Some(format!("cuda{device}")),
        }
    }
}

impl fmt::Display for Execution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Execution::Cpu => f.write_str("cpu"),
            Execution::Cuda { device, .. } => write!(f, "cuda{device}"),
        }
    }
}

/// `[devices.NAME]`: one GPU the pipeline's nodes share (`NAME` is `cuda0`, `cuda1`, ...).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// Batches that may run on the device at once, all its nodes together (default 1).
    #[serde(default = "one")]
    pub budget: usize,
}

fn one() -> usize {
    1
}

/// A validated `[devices.NAME]` (every device some node runs on has one, with its defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    /// `cuda0`, ...
    pub name: String,
    /// Batches that may run on it at once.
    pub budget: usize,
}
