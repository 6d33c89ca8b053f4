//! Where each stage output's tensor lives: tensors made by a GPU node and read
//! only by ONNX stages of nodes on the same device stay in the device's memory
//! (routed without being read, stitched and padded there, see
//! [`crate::tensor::DeviceMemory`]); every other output comes to host memory.
//!
//! An output stays on the device when all of these hold:
//! - its node runs on a CUDA device and the stage making it is an ONNX stage;
//! - no later stage of its node reads it (the node's own stages may be Rust functions);
//! - it is not cut back after ragged padding (a cut reads its elements);
//! - every place it goes is an input slot of a node on the same device, with
//!   no ragged padding on that slot, read only by ONNX stages there (no
//!   pipeline output, no write-back state, no CPU node, no Rust stage).

use super::{NodeSpec, Resource, StageSource, Target};
use crate::execution::Execution;

/// Sets each stage's `request.device_outputs` by the rules above.
pub(super) fn place_outputs(nodes: &mut [NodeSpec]) {
    let marks: Vec<Vec<Vec<bool>>> = nodes
        .iter()
        .map(|node| {
            node.stages
                .iter()
                .enumerate()
                .map(|(s, stage)| {
                    (0..stage.signature.outputs.len()).map(|index| stays_on_device(nodes, node, s, index)).collect()
                })
                .collect()
        })
        .collect();
    for (node, marks) in nodes.iter_mut().zip(marks) {
        for (stage, marks) in node.stages.iter_mut().zip(marks) {
            stage.request.device_outputs = if marks.iter().any(|&m| m) { marks } else { Vec::new() };
        }
    }
}

fn device_of(node: &NodeSpec) -> Option<usize> {
    match (&node.execution, node.resource) {
        (Execution::Cuda { device, .. }, Resource::Device(_)) => Some(*device),
        _ => None,
    }
}

fn stays_on_device(nodes: &[NodeSpec], node: &NodeSpec, stage: usize, index: usize) -> bool {
    let Some(device) = device_of(node) else { return false };
    if node.stages[stage].engine != "onnx" {
        return false;
    }
    let read_inside =
        node.stages[stage + 1..].iter().any(|later| later.sources.contains(&StageSource::StageOutput { stage, index }));
    if read_inside {
        return false;
    }
    let Some(route) = node.routes.iter().find(|r| r.stage == stage && r.index == index) else { return false };
    if node.pad.iter().any(|pad| pad.cuts.iter().any(|(name, _)| *name == route.name)) {
        return false;
    }
    !route.targets.is_empty()
        && route.targets.iter().all(|target| match *target {
            Target::Node { node: m, slot } => {
                let reader = &nodes[m];
                device_of(reader) == Some(device)
                    && !reader.pad.iter().any(|pad| pad.slot == slot)
                    && reader
                        .stages
                        .iter()
                        .filter(|s| s.sources.contains(&StageSource::NodeInput(slot)))
                        .all(|s| s.engine == "onnx")
            }
            Target::Output(_) | Target::State(_) => false,
        })
}
