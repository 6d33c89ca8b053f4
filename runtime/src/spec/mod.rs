//! The validated pipeline: nodes, their stages and signatures, and where every tensor goes.
//!
//! [`PipelineSpec::build`] turns a parsed [`PipelineConfig`] into a graph the
//! runtime can execute, checking everything before any thread starts: names
//! that refer to nothing, model files that are missing, tensor dtypes and
//! ranks that disagree along an edge, inputs fed twice or never, cycles, and
//! settings that could never work (a node costing more than the whole compute
//! budget, a fixed batch of 1 with `max_batch` 32, a core this machine lacks).
//! Each problem is one [`ConfigError`] naming the file, the place and the fix.
//!
//! Vocabulary: a node's *inputs* are the tensors its stages read that no
//! earlier stage of the node produced; each is fed by exactly one edge or
//! pipeline input. A node's *routes* say where each of its outputs goes: to
//! other nodes' inputs (fan-out allowed) and/or to pipeline outputs.
//!
//! The module reads top-down: [`types`] (what a validated pipeline is),
//! [`builder`] (config to spec, pipeline-wide checks), `node` (one node's
//! stages, signatures, state, pads and worker groups), `devices` (where nodes
//! run: `provider`, `device`, `cuda`, `[devices]`), `residency` (which
//! outputs stay in a GPU's memory), [`topology`] (queries
//! over the built graph), and [`fairness`] (the validated `[fairness]`).

mod builder;
mod devices;
pub mod fairness;
mod node;
pub mod remote;
mod residency;
pub mod topology;
pub mod types;

pub use types::*;

use crate::config::ConfigError;

type Result<T> = std::result::Result<T, ConfigError>;

fn err<T>(location: impl Into<String>, message: impl Into<String>) -> Result<T> {
    Err(ConfigError::new(location, message))
}

/// Splits `node.tensor`.
fn split_ref<'a>(location: &str, text: &'a str) -> Result<(&'a str, &'a str)> {
    match text.split_once('.') {
        Some((node, tensor)) if !node.is_empty() && !tensor.is_empty() => Ok((node, tensor)),
        _ => err(location, format!("`{text}` should be `node.tensor`")),
    }
}

/// Input or output, in "no such input/output" errors.
#[derive(Clone, Copy)]
enum Port {
    Input,
    Output,
}

/// The position of the port named `wanted` among node `node`'s `ports`, or the
/// error at `location` "node `node` has no input `wanted` (its inputs: ...)".
fn port_position<T>(
    location: impl Into<String>,
    node: &str,
    port: Port,
    ports: &[T],
    name: impl Fn(&T) -> &str,
    wanted: &str,
) -> Result<usize> {
    ports.iter().position(|p| name(p) == wanted).ok_or_else(|| {
        let have: Vec<&str> = ports.iter().map(&name).collect();
        let kind = match port {
            Port::Input => "input",
            Port::Output => "output",
        };
        ConfigError::new(location, format!("node `{node}` has no {kind} `{wanted}` (its {kind}s: {})", have.join(", ")))
    })
}
