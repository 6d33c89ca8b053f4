//! An ONNX model's operator graph.
//!
//! Vertices are operators; a relation u→v exists when v consumes a tensor u
//! produces, weighted by the tensor's size in KiB (at least 1). An operator's
//! load is the size of its outputs in KiB (at least 1): a memory-traffic proxy
//! for its cost. Sizes come from the model's shape annotations (`value_info`,
//! graph inputs and outputs): run ONNX shape inference with fixed input shapes
//! first (`scripts/annotate_shapes.py` does it for the shipped models); a
//! tensor without a known shape counts 1 KiB, symbolic dimensions count 1.
//!
//! Weights (initializers, `Constant` operators) are not vertices: a weight lives
//! with the operator that reads it. Graph inputs and outputs are not vertices.
//!
//! Subgraphs: an `If` is inlined — the operators of its larger branch (by
//! operator count; the then-branch on a tie) become vertices of the graph,
//! reading outer tensors directly and standing in for the `If`'s outputs; the
//! other branch is dropped (one branch runs per call). `Loop` and `Scan` stay single vertices whose load adds
//! their body's outputs (a loop runs on one device).
//!
//! Only the needed subset of `onnx.proto` is decoded (hand-written prost types).

use std::collections::HashMap;
use std::path::Path;

use prost::Message;

use crate::graph::{Graph, GraphBuilder};

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub op_type: String,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    #[prost(string, tag = "8")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorTypeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorTypeProto {
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}

/// Bytes per element of an ONNX data type (unknown types count 4).
fn elem_bytes(t: i32) -> i64 {
    match t {
        2 | 3 | 9 => 1,        // uint8, int8, bool
        4 | 5 | 10 | 16 => 2,  // uint16, int16, float16, bfloat16
        7 | 11 | 13 | 14 => 8, // int64, double, uint64, complex64
        15 => 16,              // complex128
        _ => 4,
    }
}

/// Reads a model file and builds its operator graph.
pub fn read_file(path: &Path) -> Result<Graph, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let model =
        ModelProto::decode(bytes.as_slice()).map_err(|e| format!("{}: not an ONNX model: {e}", path.display()))?;
    let graph = model.graph.ok_or_else(|| format!("{}: the model has no graph", path.display()))?;
    Ok(operator_graph(&graph))
}

struct Builder {
    b: GraphBuilder,
    /// Tensor name → size in bytes (from shape annotations, all scopes).
    sizes: HashMap<String, i64>,
    /// Tensor name → producing vertex.
    producer: HashMap<String, u32>,
    /// (consumer, tensor) pairs, resolved once every producer is known.
    uses: Vec<(u32, String)>,
}

impl Builder {
    fn size_kib(&self, tensor: &str) -> i64 {
        self.sizes.get(tensor).map_or(1, |&b| (b + 1023) / 1024).max(1)
    }

    fn collect_sizes(&mut self, g: &GraphProto) {
        for vi in g.value_info.iter().chain(&g.input).chain(&g.output) {
            if let Some(tt) = vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()) {
                let elems: i64 =
                    tt.shape.as_ref().map_or(1, |s| s.dim.iter().map(|d| d.dim_value.unwrap_or(1).max(1)).product());
                self.sizes.insert(vi.name.clone(), elems * elem_bytes(tt.elem_type));
            }
        }
        for n in &g.node {
            for a in &n.attribute {
                for sub in a.g.iter().chain(&a.graphs) {
                    self.collect_sizes(sub);
                }
            }
        }
    }

    /// Adds the operators of `g`; `alias` maps tensor names to the names they stand for.
    fn add_graph(&mut self, g: &GraphProto, alias: &mut HashMap<String, String>) {
        for node in &g.node {
            if node.op_type == "Constant" {
                continue;
            }
            if node.op_type == "If" {
                let branch = |name: &str| node.attribute.iter().find(|a| a.name == name).and_then(|a| a.g.as_ref());
                // The larger branch; the then-branch on a tie.
                let big = match (branch("then_branch"), branch("else_branch")) {
                    (Some(t), Some(e)) => Some(if e.node.len() > t.node.len() { e } else { t }),
                    (t, e) => t.or(e),
                };
                if let Some(big) = big {
                    // The branch's operators read the If's inputs (the condition's
                    // producer too) through outer names; the If's outputs become the
                    // branch's outputs.
                    self.add_graph(big, alias);
                    for (out, bout) in node.output.iter().zip(&big.output) {
                        let target = alias.get(&bout.name).cloned().unwrap_or_else(|| bout.name.clone());
                        alias.insert(out.clone(), target);
                    }
                    continue;
                }
            }
            let body_kib: i64 = node
                .attribute
                .iter()
                .flat_map(|a| a.g.iter().chain(&a.graphs))
                .flat_map(|sg| sg.node.iter().flat_map(|n| n.output.iter()))
                .map(|t| self.size_kib(t))
                .sum();
            let load = node.output.iter().filter(|o| !o.is_empty()).map(|o| self.size_kib(o)).sum::<i64>() + body_kib;
            let name = if node.name.is_empty() {
                format!("{}_{}", node.op_type, self.b.names.len())
            } else {
                node.name.clone()
            };
            let v = self.b.add_vertex(name, load.max(1));
            for o in node.output.iter().filter(|o| !o.is_empty()) {
                self.producer.insert(o.clone(), v);
            }
            let mut reads: Vec<&String> = node.input.iter().filter(|i| !i.is_empty()).collect();
            // Outer tensors a Loop/Scan body reads count as inputs of the loop.
            let mut inner: Vec<String> = Vec::new();
            for a in &node.attribute {
                for sg in a.g.iter().chain(&a.graphs) {
                    outer_reads(sg, &mut inner);
                }
            }
            reads.extend(inner.iter());
            for t in reads {
                let t = alias.get(t).cloned().unwrap_or_else(|| t.clone());
                self.uses.push((v, t));
            }
        }
    }
}

/// Tensors a subgraph reads that it does not define itself.
fn outer_reads(g: &GraphProto, out: &mut Vec<String>) {
    let mut defined: std::collections::HashSet<&str> = g.input.iter().map(|i| i.name.as_str()).collect();
    defined.extend(g.initializer.iter().map(|t| t.name.as_str()));
    for n in &g.node {
        defined.extend(n.output.iter().map(|s| s.as_str()));
    }
    for n in &g.node {
        for i in &n.input {
            if !i.is_empty() && !defined.contains(i.as_str()) {
                out.push(i.clone());
            }
        }
    }
}

/// Builds the operator graph of an ONNX graph.
pub fn operator_graph(g: &GraphProto) -> Graph {
    let mut bld = Builder { b: GraphBuilder::new(), sizes: HashMap::new(), producer: HashMap::new(), uses: Vec::new() };
    bld.collect_sizes(g);
    let mut alias = HashMap::new();
    bld.add_graph(g, &mut alias);
    let uses = std::mem::take(&mut bld.uses);
    for (v, t) in uses {
        if let Some(&u) = bld.producer.get(&t) {
            if u != v {
                let w = bld.size_kib(&t);
                bld.b.add_edge(u, v, w, 0);
            }
        }
    }
    bld.b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vi(name: &str, dims: &[i64]) -> ValueInfoProto {
        ValueInfoProto {
            name: name.into(),
            r#type: Some(TypeProto {
                tensor_type: Some(TensorTypeProto {
                    elem_type: 1,
                    shape: Some(TensorShapeProto {
                        dim: dims.iter().map(|&d| Dimension { dim_value: Some(d), dim_param: None }).collect(),
                    }),
                }),
            }),
        }
    }

    fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
        NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            name: name.into(),
            op_type: op.into(),
            attribute: vec![],
        }
    }

    /// x → Conv → a → Relu → b; a Constant weight feeds Conv; an If whose larger
    /// branch holds two operators reading `b`.
    #[test]
    fn operators_become_vertices_with_tensor_sizes_and_inlined_if() {
        let then_branch = GraphProto {
            node: vec![node("Neg", "t1", &["b"], &["t"]), node("Abs", "t2", &["t"], &["t_out"])],
            output: vec![vi("t_out", &[1, 256])],
            value_info: vec![vi("t", &[1, 256])],
            ..Default::default()
        };
        let else_branch = GraphProto {
            node: vec![node("Identity", "e1", &["b"], &["e_out"])],
            output: vec![vi("e_out", &[1, 256])],
            ..Default::default()
        };
        let mut iff = node("If", "if", &["cond"], &["y"]);
        iff.attribute = vec![
            AttributeProto { name: "then_branch".into(), g: Some(then_branch), graphs: vec![] },
            AttributeProto { name: "else_branch".into(), g: Some(else_branch), graphs: vec![] },
        ];
        let g = GraphProto {
            node: vec![
                node("Constant", "w", &[], &["w"]),
                node("Conv", "conv", &["x", "w"], &["a"]),
                node("Relu", "relu", &["a"], &["b"]),
                node("Greater", "cmp", &["b"], &["cond"]),
                iff,
                node("Sigmoid", "out", &["y"], &["z"]),
            ],
            input: vec![vi("x", &[1, 3, 32, 32])],
            value_info: vec![vi("a", &[1, 8, 32, 32]), vi("b", &[1, 8, 32, 32]), vi("cond", &[1])],
            ..Default::default()
        };
        let og = operator_graph(&g);
        let names: Vec<&str> = og.names.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, vec!["conv", "relu", "cmp", "t1", "t2", "out"]);
        // a is 1*8*32*32 f32 = 32 KiB.
        assert_eq!(og.node_w[0], 32);
        let rel: Vec<(String, String, i64)> = og.relations().map(|(u, v, w, _)| (og.name(u), og.name(v), w)).collect();
        assert!(rel.contains(&("conv".into(), "relu".into(), 32)));
        assert!(rel.contains(&("relu".into(), "t1".into(), 32)));
        assert!(rel.contains(&("t2".into(), "out".into(), 1)), "{rel:?}");
        assert_eq!(rel.len(), 5, "{rel:?}");
    }
}
