//! A pipeline config as a graph: its nodes are the vertices, its `[[edges]]`
//! the relations (several port edges between two nodes merge into one).
//!
//! Loads: a node's latency from a profile when one is given, else its `cost`
//! from the config (default 1), in thousandths. The profile reader is tolerant:
//! it takes a JSON object whose `nodes` member (or the object itself) maps node
//! names either to a number or to an object with one of the fields
//! `latency_us`, `mean_us`, `p50_us`, `service_us`, `latency_ms`, `mean_ms`,
//! `latency`, `mean`, `cost`; a list of objects with a `name` (or `node`)
//! field works too. Relation weights: the profile's `edges` bytes when present
//! (`"from->to": bytes`), else 1.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::graph::{Graph, GraphBuilder};

/// Reads a pipeline config and an optional profile.
pub fn read_file(config: &Path, profile: Option<&Path>) -> Result<Graph, String> {
    let text = std::fs::read_to_string(config).map_err(|e| format!("{}: {e}", config.display()))?;
    let prof = match profile {
        Some(p) => {
            let t = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            Some(serde_json::from_str::<Value>(&t).map_err(|e| format!("{}: not JSON: {e}", p.display()))?)
        }
        None => None,
    };
    parse(&text, prof.as_ref()).map_err(|e| format!("{}: {e}", config.display()))
}

/// Builds the graph from config text and a parsed profile.
pub fn parse(config: &str, profile: Option<&Value>) -> Result<Graph, String> {
    let doc: toml::Table = config.parse().map_err(|e| format!("bad TOML: {e}"))?;
    let nodes = doc.get("nodes").and_then(|n| n.as_table()).ok_or("no [nodes] table")?;
    let latencies = profile.map(node_latencies).unwrap_or_default();
    let edge_bytes = profile.map(edge_bytes).unwrap_or_default();
    let mut b = GraphBuilder::new();
    let mut id = HashMap::new();
    for (name, node) in nodes {
        let cost = node.get("cost").and_then(|c| c.as_float().or_else(|| c.as_integer().map(|i| i as f64)));
        let load = latencies.get(name).copied().or(cost).unwrap_or(1.0);
        let v = b.add_vertex(name.clone(), (load * 1000.0).round() as i64);
        id.insert(name.clone(), v);
    }
    let node_of = |port: &str| -> Result<u32, String> {
        let node = port.split('.').next().unwrap_or(port);
        id.get(node).copied().ok_or_else(|| format!("edge endpoint `{port}` names no node"))
    };
    for e in doc.get("edges").and_then(|e| e.as_array()).map(|a| a.as_slice()).unwrap_or(&[]) {
        let from = e.get("from").and_then(|f| f.as_str()).ok_or("an [[edges]] entry lacks `from`")?;
        let to = e.get("to").and_then(|f| f.as_str()).ok_or("an [[edges]] entry lacks `to`")?;
        let (u, v) = (node_of(from)?, node_of(to)?);
        let key = format!("{}->{}", b.names[u as usize], b.names[v as usize]);
        b.add_edge(u, v, edge_bytes.get(&key).copied().unwrap_or(1), 0);
    }
    Ok(b.build())
}

const LATENCY_FIELDS: [(&str, f64); 9] = [
    ("latency_us", 1e-3),
    ("mean_us", 1e-3),
    ("p50_us", 1e-3),
    ("service_us", 1e-3),
    ("latency_ms", 1.0),
    ("mean_ms", 1.0),
    ("latency", 1.0),
    ("mean", 1.0),
    ("cost", 1.0),
];

/// Node name → latency in milliseconds (or cost units).
fn node_latencies(p: &Value) -> HashMap<String, f64> {
    let nodes = p.get("nodes").unwrap_or(p);
    let pick = |v: &Value| -> Option<f64> {
        v.as_f64()
            .or_else(|| LATENCY_FIELDS.iter().find_map(|(f, s)| v.get(*f).and_then(|x| x.as_f64()).map(|x| x * s)))
    };
    let mut out = HashMap::new();
    match nodes {
        Value::Object(m) => {
            for (k, v) in m {
                if let Some(x) = pick(v) {
                    out.insert(k.clone(), x);
                }
            }
        }
        Value::Array(a) => {
            for v in a {
                let name = v.get("name").or_else(|| v.get("node")).and_then(|n| n.as_str());
                if let (Some(name), Some(x)) = (name, pick(v)) {
                    out.insert(name.to_string(), x);
                }
            }
        }
        _ => {}
    }
    out
}

fn edge_bytes(p: &Value) -> HashMap<String, i64> {
    p.get("edges")
        .and_then(|e| e.as_object())
        .map(|m| m.iter().filter_map(|(k, v)| v.as_i64().map(|b| (k.clone(), b))).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIAMOND: &str = r#"
[nodes.embed]
cost = 1.0
[nodes.a]
cost = 2.0
[nodes.b]
[nodes.join]
cost = 0.5
[[edges]]
from = "embed.h"
to = "a.h"
[[edges]]
from = "embed.h"
to = "b.h"
[[edges]]
from = "a.x"
to = "join.a"
[[edges]]
from = "b.y"
to = "join.b"
"#;

    #[test]
    fn config_costs_and_profile_latencies() {
        let g = parse(DIAMOND, None).unwrap();
        assert_eq!(g.n(), 4);
        assert_eq!(g.m(), 4);
        let load = |g: &Graph, n: &str| g.node_w[g.names.iter().position(|x| x == n).unwrap()];
        assert_eq!(load(&g, "a"), 2000);
        assert_eq!(load(&g, "b"), 1000);
        let prof: Value =
            serde_json::json!({"nodes": {"a": {"mean_us": 500.0}, "join": 3.0}, "edges": {"embed->a": 4096}});
        let g = parse(DIAMOND, Some(&prof)).unwrap();
        assert_eq!(load(&g, "a"), 500);
        assert_eq!(load(&g, "join"), 3000);
        assert!(g.relations().any(|(u, v, w, _)| g.name(u) == "embed" && g.name(v) == "a" && w == 4096));
        let bad = DIAMOND.replace("join.b", "nowhere.b");
        assert_eq!(parse(&bad, None).unwrap_err(), "edge endpoint `nowhere.b` names no node");
    }
}
