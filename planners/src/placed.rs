//! A [`Placement`] written back as a pipeline file: a copy of the input
//! pipeline with each node's `provider`, `device`, `workers` and `cores`
//! rewritten, and what depends on them kept valid.
//!
//! Per node:
//! - on the CPU: `provider = "cpu"`, `workers`, `cores` (its disjoint cores);
//!   `device` and `cuda` removed;
//! - on CUDA: `provider = "cuda"`, `device = 0`, `workers = 1`, `cores`
//!   removed; its own `cuda` options kept, and a node that has none but pads
//!   its inputs (`[[nodes.NAME.pad]]`: shapes vary batch to batch) gets
//!   [`PADDED_CUDA_OPTIONS`], as `baton profile` measured it.
//!
//! And for the pipeline: a `[scheduler] compute_budget` it set becomes the
//! placed CPU nodes' Σ `cost` × `workers` (every placed worker may run at
//! once; removed when no node is on the CPU); `[devices]` entries no placed
//! node runs on are removed. File paths become absolute when the copy is
//! written to another folder.

use std::path::Path;

use crate::pipeline::{absolute_paths, read_table, write_table, Provider};
use crate::placement::Placement;

/// The cuDNN convolution search a node with padded inputs runs with on CUDA
/// when its file gives no `cuda` options: each padded shape is new, and the
/// default (exhaustive) search benchmarks every new shape inside a batch.
pub const PADDED_CUDA_OPTIONS: (&str, &str) = ("cudnn_conv_algo_search", "heuristic");

/// Writes the pipeline `src` with `placement` applied to `dst`, `note` as its header comment.
pub fn write_placement(src: &Path, dst: &Path, placement: &Placement, note: &str) -> Result<(), String> {
    let mut table = read_table(src)?;
    let src_dir = folder(src);
    let same_dir = folder(dst).canonicalize().ok().is_some_and(|d| src_dir.canonicalize().ok() == Some(d));
    let nodes = table
        .get_mut("nodes")
        .and_then(|n| n.as_table_mut())
        .ok_or_else(|| format!("{}: no [nodes]", src.display()))?;
    let mut budget = 0.0;
    for (name, node) in nodes.iter_mut() {
        let node = node.as_table_mut().ok_or_else(|| format!("{}: nodes.{name} is not a table", src.display()))?;
        let placed = placement
            .nodes
            .iter()
            .find(|p| p.name == *name)
            .ok_or_else(|| format!("{}: the placement places no node `{name}`", src.display()))?;
        node.insert("provider".into(), placed.provider.name().into());
        node.insert("workers".into(), toml::Value::Integer(placed.workers as i64));
        match placed.provider {
            Provider::Cpu => {
                node.remove("device");
                node.remove("cuda");
                let cores = placed.cores.iter().map(|&c| toml::Value::Integer(c as i64)).collect();
                node.insert("cores".into(), toml::Value::Array(cores));
                budget += node.get("cost").and_then(number).unwrap_or(1.0) * placed.workers as f64;
            }
            Provider::Cuda => {
                node.insert("device".into(), toml::Value::Integer(0));
                node.remove("cores");
                if !node.contains_key("cuda")
                    && node.get("pad").and_then(|p| p.as_array()).is_some_and(|p| !p.is_empty())
                {
                    let (key, value) = PADDED_CUDA_OPTIONS;
                    let options: toml::Table = [(key.to_string(), toml::Value::from(value))].into_iter().collect();
                    node.insert("cuda".into(), toml::Value::Table(options));
                }
            }
        }
        if !same_dir {
            absolute_paths(node, &src_dir);
        }
    }
    if let Some(scheduler) = table.get_mut("scheduler").and_then(|s| s.as_table_mut()) {
        if scheduler.contains_key("compute_budget") {
            if budget > 0.0 {
                scheduler.insert("compute_budget".into(), toml::Value::Float(budget));
            } else {
                scheduler.remove("compute_budget");
            }
        }
    }
    let on_gpu = placement.nodes.iter().any(|n| n.provider == Provider::Cuda);
    if let Some(devices) = table.get_mut("devices").and_then(|d| d.as_table_mut()) {
        devices.retain(|name, _| on_gpu && name == "cuda0");
    }
    if table.get("devices").and_then(|d| d.as_table()).is_some_and(|d| d.is_empty()) {
        table.remove("devices");
    }
    write_table(dst, &table, note)
}

fn number(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

/// The folder holding `file` (`.` for a bare file name).
fn folder(file: &Path) -> std::path::PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => ".".into(),
    }
}
