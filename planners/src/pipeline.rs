//! Pipelines as planning inputs and placements as planning outputs.
//!
//! A [`Profile`] (written by `baton profile`) holds each node's measured
//! latency per batch size and its memory, on each provider it was profiled on
//! (CPU, CUDA). [`dag_from_pipeline`] turns a
//! pipeline's node graph plus a profile into a DAG whose task times are the
//! nodes' median latencies (µs) at one batch size. [`write_placed`] writes a
//! complete copy of a pipeline file with every node's `workers` and `cores`
//! set from a plan (unit `u` -> core `u`), model paths kept valid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dag::{Dag, Edge, Task};

/// Latency of one node at one batch size, µs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchTiming {
    pub batch: usize,
    pub runs: usize,
    pub median_us: f64,
    pub p10_us: f64,
    pub p90_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Every timed run, µs, in the order run (what `baton simulate` draws batch
    /// durations from; absent in older profiles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_us: Vec<f64>,
}

/// Which ONNX Runtime execution provider a node was measured on (`"cpu"`, `"cuda"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// The CPU cores (a profile written before providers were recorded means this).
    #[default]
    Cpu,
    /// The GPU, through ONNX Runtime's CUDA provider (device 0).
    Cuda,
}

impl Provider {
    /// Every provider, in the order profiles list them.
    pub const ALL: [Provider; 2] = [Provider::Cpu, Provider::Cuda];

    /// The name pipeline files and profiles give it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Cpu => "cpu",
            Provider::Cuda => "cuda",
        }
    }

    /// The provider named `name` (`cpu`, `cuda`), or an error listing the names.
    pub fn parse(name: &str) -> Result<Provider, String> {
        Provider::ALL
            .into_iter()
            .find(|p| p.name() == name.trim())
            .ok_or_else(|| format!("unknown provider `{name}` (providers: cpu, cuda)"))
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// One node's measurements on one provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeProfile {
    /// The provider the node's model stages ran on (absent in older profiles: `cpu`).
    #[serde(default)]
    pub provider: Provider,
    pub batches: Vec<BatchTiming>,
    /// Resident memory the node's engines added when created, bytes.
    pub memory_bytes: u64,
    /// Size of the node's model files, bytes.
    pub model_bytes: u64,
    /// On CUDA: device memory the node's sessions held after its runs (free device
    /// memory before creating them minus after the last run), bytes; absent where
    /// it could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_memory_bytes: Option<u64>,
    /// On CUDA: an estimate of the same, 4 × the model files' size plus every
    /// tensor the node's stages took and gave at its largest profiled batch, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_memory_estimate_bytes: Option<u64>,
    /// The node's batch of one row after it sat idle, one entry per idle gap measured
    /// (`baton profile --idle-gaps`); empty where not measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_gaps: Vec<IdleGap>,
}

/// A batch's time after its node sat idle for `gap_us` (its worker asleep, the
/// core free to halt): caches and the core's clock go cold while it waits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleGap {
    /// How long the node sat idle before each timed run, µs.
    pub gap_us: f64,
    /// The runs' median, µs.
    pub median_us: f64,
    /// The median less that of the runs made back to back in the same turns, µs
    /// (at least 0): what the gap adds to a batch.
    pub extra_us: f64,
}

impl NodeProfile {
    /// The device memory the node needs on a GPU: the measured bytes, else the estimate, else 0.
    pub fn device_memory(&self) -> u64 {
        self.device_memory_bytes.or(self.device_memory_estimate_bytes).unwrap_or(0)
    }
}

/// A profile of a pipeline on one machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub pipeline: String,
    /// Cores the profiling machine had.
    pub cores: usize,
    /// Each node on the first provider it was profiled on (the CPU when the CPU
    /// was profiled): what readers of a single time per node use.
    pub nodes: BTreeMap<String, NodeProfile>,
    /// Each node's measurements on its further providers (CUDA when both were profiled).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_providers: BTreeMap<String, Vec<NodeProfile>>,
    /// Total memory of the GPU the CUDA measurements ran on, bytes (absent: unknown, or no CUDA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_memory_total_bytes: Option<u64>,
}

impl Profile {
    pub fn load(path: &Path) -> Result<Profile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: not a profile: {e}", path.display()))
    }

    /// Every measurement of `node`, one per provider (`nodes` entry first); empty when it has none.
    pub fn measurements(&self, node: &str) -> Vec<&NodeProfile> {
        self.nodes.get(node).into_iter().chain(self.other_providers.get(node).into_iter().flatten()).collect()
    }

    /// Records `measured` for `node`: the first measurement goes to `nodes`, later ones to `other_providers`.
    pub fn insert(&mut self, node: &str, measured: NodeProfile) {
        if self.nodes.contains_key(node) {
            self.other_providers.entry(node.to_string()).or_default().push(measured);
        } else {
            self.nodes.insert(node.to_string(), measured);
        }
    }

    /// Median latency of `node` at `batch`, µs.
    pub fn cost(&self, node: &str, batch: usize) -> Result<f64, String> {
        let np = self.nodes.get(node).ok_or_else(|| format!("the profile has no entry for node `{node}`"))?;
        np.batches.iter().find(|b| b.batch == batch).map(|b| b.median_us).ok_or_else(|| {
            let have: Vec<String> = np.batches.iter().map(|b| b.batch.to_string()).collect();
            format!("the profile of node `{node}` has no batch size {batch} (has {})", have.join(", "))
        })
    }
}

/// A pipeline's node graph: node names and node-to-node edges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeGraph {
    pub nodes: Vec<String>,
    /// `(from node, to node, tensor)`.
    pub edges: Vec<(String, String, String)>,
}

/// Reads the node graph of a pipeline file (`[nodes.*]` and `[[edges]]`,
/// `node.tensor` endpoints); write-back state edges are not dependencies.
pub fn node_graph(path: &Path) -> Result<NodeGraph, String> {
    let table = read_table(path)?;
    let mut g = NodeGraph::default();
    if let Some(nodes) = table.get("nodes").and_then(|n| n.as_table()) {
        g.nodes = nodes.keys().cloned().collect();
    }
    for e in table.get("edges").and_then(|e| e.as_array()).into_iter().flatten() {
        let end = |k: &str| -> Result<(String, String), String> {
            let s =
                e.get(k).and_then(|v| v.as_str()).ok_or_else(|| format!("{}: an edge has no `{k}`", path.display()))?;
            let (node, tensor) =
                s.split_once('.').ok_or_else(|| format!("{}: edge end `{s}` is not `node.tensor`", path.display()))?;
            Ok((node.to_string(), tensor.to_string()))
        };
        let ((from, tensor), (to, _)) = (end("from")?, end("to")?);
        if !g.edges.iter().any(|(f, t, _)| *f == from && *t == to) {
            g.edges.push((from, to, tensor));
        }
    }
    Ok(g)
}

/// The DAG of a pipeline with each node's median latency at `batch` (µs) and
/// its memory from the profile; edges carry no transfer time (in-process).
pub fn dag_from_pipeline(g: &NodeGraph, profile: &Profile, batch: usize) -> Result<Dag, String> {
    let index: BTreeMap<&str, usize> = g.nodes.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let tasks = g
        .nodes
        .iter()
        .map(|n| {
            let memory = profile.nodes.get(n).map_or(0, |p| p.memory_bytes) as f64;
            Ok(Task { name: n.clone(), cost: profile.cost(n, batch)?, memory })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let node = |n: &str| index.get(n).copied().ok_or_else(|| format!("edge names unknown node `{n}`"));
    let edges = g
        .edges
        .iter()
        .map(|(f, t, d)| Ok(Edge { from: node(f)?, to: node(t)?, transfer: 0.0, data: d.clone() }))
        .collect::<Result<Vec<_>, String>>()?;
    Dag::new(tasks, edges).map_err(|e| e.to_string())
}

/// Writes a copy of the pipeline file `src` to `dst` with each node's
/// `cores` (and `workers`, one per core) from `placement` (node -> cores).
/// Model paths are rewritten to absolute ones when `dst` is in another folder.
pub fn write_placed(
    src: &Path,
    dst: &Path,
    placement: &BTreeMap<String, Vec<usize>>,
    note: &str,
) -> Result<(), String> {
    let mut table = read_table(src)?;
    let src_dir = src.parent().map(Path::to_path_buf).unwrap_or_default();
    let same_dir = dst.parent().map(Path::to_path_buf).unwrap_or_default() == src_dir;
    let nodes = table
        .get_mut("nodes")
        .and_then(|n| n.as_table_mut())
        .ok_or_else(|| format!("{}: no [nodes]", src.display()))?;
    for (name, node) in nodes.iter_mut() {
        let node = node.as_table_mut().ok_or_else(|| format!("{}: nodes.{name} is not a table", src.display()))?;
        let cores = placement.get(name).ok_or_else(|| format!("the plan places no node `{name}`"))?;
        node.insert(
            "cores".into(),
            toml::Value::Array(cores.iter().map(|&c| toml::Value::Integer(c as i64)).collect()),
        );
        node.insert("workers".into(), toml::Value::Integer(cores.len() as i64));
        if !same_dir {
            absolute_paths(node, &src_dir);
        }
    }
    write_table(dst, &table, note)
}

/// Reads a pipeline file as a TOML table.
pub(crate) fn read_table(path: &Path) -> Result<toml::Table, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    text.parse::<toml::Table>().map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `table` to `dst`, each line of `note` first as a `#` comment.
pub(crate) fn write_table(dst: &Path, table: &toml::Table, note: &str) -> Result<(), String> {
    let body = toml::to_string(table).map_err(|e| e.to_string())?;
    let header: String = note.lines().map(|l| format!("# {l}\n")).collect();
    std::fs::write(dst, format!("{header}\n{body}")).map_err(|e| format!("{}: cannot write: {e}", dst.display()))
}

/// Rewrites a node's file paths (stage `model`s, state `initial`s), relative to
/// `src_dir`, to absolute ones: for a copy of the pipeline written elsewhere.
/// Remote stages' `model` is a model name, not a file, and stays.
pub(crate) fn absolute_paths(node: &mut toml::Table, src_dir: &Path) {
    let absolute = |v: &mut toml::Value| {
        if let Some(m) = v.as_str() {
            let abs: PathBuf = src_dir.join(m);
            let abs = abs.canonicalize().unwrap_or(abs);
            *v = toml::Value::String(abs.to_string_lossy().into_owned());
        }
    };
    for stage in node.get_mut("stages").and_then(|s| s.as_array_mut()).into_iter().flatten() {
        if stage.get("remote").is_none() {
            stage.get_mut("model").map(absolute);
        }
    }
    for state in node.get_mut("state").and_then(|s| s.as_array_mut()).into_iter().flatten() {
        state.get_mut("initial").map(absolute);
    }
}
