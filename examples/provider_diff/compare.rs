//! Differences between a reference tensor and a candidate, at the tensor's own scale, and the
//! per-node analysis of an all-outputs model: which node's result diverges first, and where the
//! divergence grows.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

/// The smallest scale a difference is divided by (as the GPU tests do), so an all-zero tensor
/// reports its absolute difference ×1e6 rather than a division by zero.
pub const SCALE_FLOOR: f64 = 1e-6;

/// A named f32 tensor copied out of ONNX Runtime.
#[derive(Clone, Debug)]
pub struct Named {
    /// The graph tensor's name.
    pub name: String,
    /// Its dimensions.
    pub shape: Vec<usize>,
    /// Its elements, row-major.
    pub data: Vec<f32>,
}

/// How a candidate tensor differs from the reference.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDiff {
    /// Largest |candidate − reference|.
    pub max_abs: f64,
    /// Largest |reference| (the tensor's scale).
    pub scale: f64,
    /// `max_abs / max(scale, SCALE_FLOOR)`; infinite when the two disagree on a NaN or infinity.
    pub rel: f64,
    /// Fraction of the elements whose difference exceeds `threshold × scale`.
    pub frac_over: f64,
    /// Index (per dimension) of the largest difference.
    pub argmax: Vec<usize>,
    /// The reference's and candidate's values there.
    pub at: (f32, f32),
    /// Elements where exactly one side is NaN, or the infinities differ.
    pub nonfinite_mismatches: usize,
    /// Per row of the first dimension (the batch): largest difference at the whole tensor's scale.
    pub per_row: Vec<f64>,
}

/// Compares `got` with `want` (same shape; a shape mismatch is an error naming both).
pub fn diff(want: &Named, got: &Named, threshold: f64) -> Result<TensorDiff, String> {
    if want.shape != got.shape || want.data.len() != got.data.len() {
        return Err(format!("`{}`: shapes differ: reference {:?}, candidate {:?}", want.name, want.shape, got.shape));
    }
    let scale = want.data.iter().filter(|x| x.is_finite()).fold(0.0f64, |m, &x| m.max(f64::from(x).abs()));
    let floor = scale.max(SCALE_FLOOR);
    let rows = want.shape.first().copied().unwrap_or(1).max(1);
    let row_len = want.data.len() / rows.max(1);
    let mut per_row_abs = vec![0.0f64; rows];
    let (mut max_abs, mut arg, mut over, mut nonfinite) = (0.0f64, 0usize, 0usize, 0usize);
    for (i, (&w, &g)) in want.data.iter().zip(&got.data).enumerate() {
        if !w.is_finite() || !g.is_finite() {
            let same = (w.is_nan() && g.is_nan()) || w == g;
            if !same {
                nonfinite += 1;
            }
            continue;
        }
        let d = (f64::from(g) - f64::from(w)).abs();
        if d > max_abs {
            max_abs = d;
            arg = i;
        }
        if d > threshold * floor {
            over += 1;
        }
        if let Some(r) = i.checked_div(row_len) {
            per_row_abs[r] = per_row_abs[r].max(d);
        }
    }
    let rel = if nonfinite > 0 { f64::INFINITY } else { max_abs / floor };
    let at = want.data.get(arg).copied().zip(got.data.get(arg).copied()).unwrap_or((0.0, 0.0));
    Ok(TensorDiff {
        max_abs,
        scale,
        rel,
        frac_over: if want.data.is_empty() { 0.0 } else { over as f64 / want.data.len() as f64 },
        argmax: unravel(arg, &want.shape),
        at,
        nonfinite_mismatches: nonfinite,
        per_row: per_row_abs.iter().map(|d| d / floor).collect(),
    })
}

/// The per-dimension index of flat element `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            index[k] = i % d;
            i /= d;
        }
    }
    index
}

impl TensorDiff {
    /// The diff as JSON (`rel` as a string when infinite, JSON having no infinity).
    pub fn to_json(&self) -> Value {
        json!({
            "rel": number(self.rel),
            "max_abs": number(self.max_abs),
            "scale": number(self.scale),
            "frac_over_threshold": self.frac_over,
            "argmax": self.argmax,
            "reference_at_argmax": self.at.0,
            "candidate_at_argmax": self.at.1,
            "nonfinite_mismatches": self.nonfinite_mismatches,
            "per_row_rel": self.per_row.iter().map(|&d| number(d)).collect::<Vec<_>>(),
        })
    }

    /// One line: `rel 1.2e-3 (max |d| 4.0e-3 at [0, 0, 5, 7]: ref 0.91 vs 0.90; 0.1% over)`.
    pub fn text(&self) -> String {
        let nonfinite = if self.nonfinite_mismatches > 0 {
            format!("; {} NaN/inf mismatches", self.nonfinite_mismatches)
        } else {
            String::new()
        };
        format!(
            "rel {:.2e} (max |d| {:.2e}, scale {:.3e}, at {:?}: ref {} vs {}; {:.3}% of elements over the threshold{nonfinite})",
            self.rel,
            self.max_abs,
            self.scale,
            self.argmax,
            self.at.0,
            self.at.1,
            self.frac_over * 100.0
        )
    }
}

/// A finite f64 as a JSON number, anything else as its string (`"inf"`, `"NaN"`).
pub fn number(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        json!(x.to_string())
    }
}

/// One node of the all-outputs model's node list (`scripts/make_all_outputs.py`'s sidecar).
#[derive(Clone, Debug)]
pub struct Node {
    pub index: usize,
    pub name: String,
    pub op_type: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// The node's non-tensor attributes, as the sidecar has them.
    pub attributes: Value,
}

/// The all-outputs model's graph, as far as the analysis needs it.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// In topological order (the file's order).
    pub nodes: Vec<Node>,
    /// The model's inputs: identical on both sides.
    pub graph_inputs: HashSet<String>,
    /// Initializers and `Constant` outputs: identical on both sides.
    pub constants: HashSet<String>,
}

impl Graph {
    /// Reads the sidecar JSON `scripts/make_all_outputs.py` wrote.
    pub fn from_json(text: &str) -> Result<Graph, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let strings = |key: &str| -> HashSet<String> {
            v[key].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
        };
        let list = |n: &Value, key: &str| -> Vec<String> {
            n[key].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
        };
        let nodes = v["nodes"]
            .as_array()
            .ok_or("no `nodes` list (was it written by scripts/make_all_outputs.py?)")?
            .iter()
            .enumerate()
            .map(|(i, n)| Node {
                index: n["index"].as_u64().map_or(i, |x| x as usize),
                name: n["name"].as_str().unwrap_or("?").to_string(),
                op_type: n["op_type"].as_str().unwrap_or("?").to_string(),
                inputs: list(n, "inputs"),
                outputs: list(n, "outputs"),
                attributes: n["attributes"].clone(),
            })
            .collect();
        let mut constants = strings("initializers");
        constants.extend(strings("constants"));
        Ok(Graph { nodes, graph_inputs: strings("graph_inputs"), constants })
    }
}

/// What one input of a node was on the two sides.
#[derive(Clone, Debug, PartialEq)]
pub enum InputState {
    /// A model input: the same tensor was fed to both.
    ModelInput,
    /// An initializer or `Constant`: the same on both.
    Constant,
    /// Compared: its relative difference.
    Diff(f64),
    /// Not among the compared outputs (not f32, or not exported).
    NotCompared,
}

/// One node's result compared.
#[derive(Clone, Debug)]
pub struct NodeDiff {
    pub index: usize,
    pub name: String,
    pub op_type: String,
    /// The largest `rel` over its compared outputs.
    pub rel: f64,
    /// The output reaching it, and its diff.
    pub output: String,
    pub output_diff: TensorDiff,
    /// Each input by name, with its state.
    pub inputs: Vec<(String, InputState)>,
    /// `rel / max(largest compared input rel, 1e-7)`: how much this node grew the difference.
    pub growth: f64,
    pub attributes: Value,
}

/// Every node with at least one compared output, in topological order.
pub fn node_diffs(graph: &Graph, diffs: &HashMap<String, TensorDiff>) -> Vec<NodeDiff> {
    let mut result = Vec::new();
    for node in &graph.nodes {
        let Some((output, worst)) =
            node.outputs.iter().filter_map(|o| diffs.get(o).map(|d| (o, d))).max_by(|a, b| a.1.rel.total_cmp(&b.1.rel))
        else {
            continue;
        };
        let inputs: Vec<(String, InputState)> = node
            .inputs
            .iter()
            .filter(|i| !i.is_empty())
            .map(|i| {
                let state = if graph.graph_inputs.contains(i) {
                    InputState::ModelInput
                } else if graph.constants.contains(i) {
                    InputState::Constant
                } else if let Some(d) = diffs.get(i) {
                    InputState::Diff(d.rel)
                } else {
                    InputState::NotCompared
                };
                (i.clone(), state)
            })
            .collect();
        let worst_input = inputs
            .iter()
            .filter_map(|(_, s)| if let InputState::Diff(d) = s { Some(*d) } else { None })
            .fold(0.0f64, f64::max);
        result.push(NodeDiff {
            index: node.index,
            name: node.name.clone(),
            op_type: node.op_type.clone(),
            rel: worst.rel,
            output: output.clone(),
            output_diff: worst.clone(),
            inputs,
            growth: worst.rel / worst_input.max(1e-7),
            attributes: node.attributes.clone(),
        });
    }
    result
}

/// The first node (topological order) whose result differs by more than `threshold` of its scale.
pub fn first_divergent(nodes: &[NodeDiff], threshold: f64) -> Option<&NodeDiff> {
    nodes.iter().find(|n| n.rel > threshold)
}

/// The `k` nodes with the largest `key`, largest first (ties in topological order).
pub fn top_by(nodes: &[NodeDiff], k: usize, key: impl Fn(&NodeDiff) -> f64) -> Vec<&NodeDiff> {
    let mut sorted: Vec<&NodeDiff> = nodes.iter().collect();
    sorted.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.index.cmp(&b.index)));
    sorted.truncate(k);
    sorted
}

impl NodeDiff {
    /// The node, its diff and each input's state, as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "index": self.index,
            "name": self.name,
            "op_type": self.op_type,
            "rel": number(self.rel),
            "growth": number(self.growth),
            "output": self.output,
            "output_diff": self.output_diff.to_json(),
            "inputs": self.inputs.iter().map(|(n, s)| json!({"name": n, "state": state_text(s)})).collect::<Vec<_>>(),
            "attributes": self.attributes,
        })
    }

    /// `#57 Conv p2o.Conv.12: rel 3.1e-4 (growth 12x); inputs: a=2.5e-5, w=const`.
    pub fn line(&self) -> String {
        let inputs: Vec<String> = self.inputs.iter().map(|(n, s)| format!("{n}={}", state_text(s))).collect();
        format!(
            "#{} {} {}: rel {:.2e} (growth {:.1}x); inputs: {}",
            self.index,
            self.op_type,
            self.name,
            self.rel,
            self.growth,
            inputs.join(", ")
        )
    }
}

/// An input's state in a few characters.
fn state_text(s: &InputState) -> String {
    match s {
        InputState::ModelInput => "model input (same)".into(),
        InputState::Constant => "const".into(),
        InputState::Diff(d) => format!("{d:.2e}"),
        InputState::NotCompared => "not compared".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, shape: Vec<usize>, data: Vec<f32>) -> Named {
        Named { name: name.into(), shape, data }
    }

    #[test]
    fn diff_is_at_the_reference_scale_and_locates_the_largest() {
        let want = named("t", vec![2, 2], vec![1.0, -4.0, 2.0, 0.0]);
        let got = named("t", vec![2, 2], vec![1.0, -4.0, 2.0, 0.02]);
        let d = diff(&want, &got, 1e-4).unwrap();
        assert!((d.rel - 0.005).abs() < 1e-9, "{d:?}");
        assert_eq!(d.argmax, vec![1, 1]);
        assert_eq!(d.per_row.len(), 2);
        assert_eq!(d.per_row[0], 0.0);
        assert!((d.frac_over - 0.25).abs() < 1e-12);
    }

    #[test]
    fn nan_on_one_side_is_infinite() {
        let want = named("t", vec![2], vec![1.0, 2.0]);
        let got = named("t", vec![2], vec![1.0, f32::NAN]);
        let d = diff(&want, &got, 1e-4).unwrap();
        assert!(d.rel.is_infinite() && d.nonfinite_mismatches == 1);
        assert_eq!(d.to_json()["rel"], "inf");
    }

    #[test]
    fn shape_mismatch_is_an_error_naming_the_tensor() {
        let err = diff(&named("t", vec![2], vec![0.0; 2]), &named("t", vec![1, 2], vec![0.0; 2]), 1e-4).unwrap_err();
        assert!(err.contains("`t`"), "{err}");
    }

    #[test]
    fn the_first_divergent_node_and_its_inputs() {
        let graph = Graph::from_json(
            r#"{"graph_inputs": ["x"], "initializers": ["w"], "constants": [],
                "nodes": [{"index": 0, "name": "a", "op_type": "Conv", "inputs": ["x", "w"], "outputs": ["h"]},
                          {"index": 1, "name": "b", "op_type": "Resize", "inputs": ["h", ""], "outputs": ["y"]},
                          {"index": 2, "name": "c", "op_type": "Sigmoid", "inputs": ["y"], "outputs": ["z"]}]}"#,
        )
        .unwrap();
        let d = |rel: f64| TensorDiff {
            max_abs: rel,
            scale: 1.0,
            rel,
            frac_over: 0.0,
            argmax: vec![],
            at: (0.0, 0.0),
            nonfinite_mismatches: 0,
            per_row: vec![],
        };
        let diffs: HashMap<String, TensorDiff> =
            [("h".to_string(), d(1e-6)), ("y".to_string(), d(1e-2)), ("z".to_string(), d(5e-3))].into();
        let nodes = node_diffs(&graph, &diffs);
        let first = first_divergent(&nodes, 1e-4).unwrap();
        assert_eq!((first.name.as_str(), first.op_type.as_str()), ("b", "Resize"));
        assert_eq!(first.inputs, vec![("h".to_string(), InputState::Diff(1e-6))]);
        assert_eq!(nodes[0].inputs[0].1, InputState::ModelInput);
        assert_eq!(nodes[0].inputs[1].1, InputState::Constant);
        let top = top_by(&nodes, 2, |n| n.rel);
        assert_eq!(top.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["b", "c"]);
        assert_eq!(top_by(&nodes, 1, |n| n.growth)[0].name, "b");
    }
}
