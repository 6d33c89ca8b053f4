//! Reading ONNX Runtime's profiling traces (Chrome trace JSON: a list of events; each kernel a
//! `"cat": "Node"` event named `<node>_kernel_time` with `args.op_name` and `args.provider`,
//! each run a `"cat": "Session"` event named `model_run`, times in µs).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

/// One kernel event.
#[derive(Clone, Debug)]
struct Kernel {
    node: String,
    op: String,
    provider: String,
    ts: u64,
    dur: u64,
}

/// What a trace says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Each `model_run`'s duration (µs), in order.
    pub runs_us: Vec<u64>,
    /// Over the last run: (op, provider) → (total µs, kernel count), largest total first.
    pub last_run_ops: Vec<(String, String, u64, usize)>,
    /// Over the whole trace: provider → op → the distinct nodes (after graph optimization) run
    /// there, so fusions (`FusedConv`, ...) and CPU fall-backs show.
    pub placement: BTreeMap<String, BTreeMap<String, usize>>,
}

/// Parses a trace; an unreadable one is an error saying why.
pub fn summarize(text: &str) -> Result<Summary, String> {
    let events: Vec<Value> = serde_json::from_str(text).map_err(|e| format!("profile is not a JSON list: {e}"))?;
    let num = |e: &Value, k: &str| e[k].as_u64().or_else(|| e[k].as_f64().map(|x| x as u64)).unwrap_or(0);
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut kernels = Vec::new();
    for e in &events {
        match (e["cat"].as_str(), e["name"].as_str()) {
            (Some("Session"), Some("model_run")) => runs.push((num(e, "ts"), num(e, "dur"))),
            (Some("Node"), Some(name)) if name.ends_with("_kernel_time") => kernels.push(Kernel {
                node: name.trim_end_matches("_kernel_time").to_string(),
                op: e["args"]["op_name"].as_str().unwrap_or("?").to_string(),
                provider: e["args"]["provider"].as_str().unwrap_or("?").to_string(),
                ts: num(e, "ts"),
                dur: num(e, "dur"),
            }),
            _ => {}
        }
    }
    runs.sort_by_key(|r| r.0);
    let mut nodes: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for k in &kernels {
        nodes.entry(k.provider.clone()).or_default().entry(k.op.clone()).or_default().insert(k.node.clone());
    }
    let placement =
        nodes.into_iter().map(|(p, ops)| (p, ops.into_iter().map(|(op, set)| (op, set.len())).collect())).collect();
    let mut last: BTreeMap<(String, String), (u64, usize)> = BTreeMap::new();
    if let Some(&(start, dur)) = runs.last() {
        for k in kernels.iter().filter(|k| k.ts >= start && k.ts <= start + dur) {
            let slot = last.entry((k.op.clone(), k.provider.clone())).or_default();
            slot.0 += k.dur;
            slot.1 += 1;
        }
    }
    let mut last_run_ops: Vec<(String, String, u64, usize)> =
        last.into_iter().map(|((op, p), (us, n))| (op, p, us, n)).collect();
    last_run_ops.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    Ok(Summary { runs_us: runs.iter().map(|r| r.1).collect(), last_run_ops, placement })
}

impl Summary {
    /// The summary as JSON (top `k` ops of the last run).
    pub fn to_json(&self, k: usize) -> Value {
        json!({
            "model_run_us": self.runs_us,
            "last_run_top_ops": self.last_run_ops.iter().take(k)
                .map(|(op, p, us, n)| json!({"op": op, "provider": p, "us": us, "kernels": n}))
                .collect::<Vec<_>>(),
            "placement": self.placement,
        })
    }

    /// `CUDAExecutionProvider: Conv 40, FusedConv 22; CPUExecutionProvider: Shape 2`.
    pub fn placement_text(&self) -> String {
        self.placement
            .iter()
            .map(|(p, ops)| {
                let ops: Vec<String> = ops.iter().map(|(op, n)| format!("{op} {n}")).collect();
                format!("{p}: {}", ops.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_run_and_the_placement() {
        let trace = r#"[
          {"cat": "Session", "name": "model_run", "ts": 0, "dur": 100},
          {"cat": "Node", "name": "a_kernel_time", "ts": 10, "dur": 50, "args": {"op_name": "Conv", "provider": "CUDAExecutionProvider"}},
          {"cat": "Session", "name": "model_run", "ts": 200, "dur": 40},
          {"cat": "Node", "name": "a_kernel_time", "ts": 205, "dur": 20, "args": {"op_name": "Conv", "provider": "CUDAExecutionProvider"}},
          {"cat": "Node", "name": "b_kernel_time", "ts": 226, "dur": 5, "args": {"op_name": "Shape", "provider": "CPUExecutionProvider"}},
          {"cat": "Node", "name": "b_fence_before", "ts": 226, "dur": 0, "args": {}}
        ]"#;
        let s = summarize(trace).unwrap();
        assert_eq!(s.runs_us, vec![100, 40]);
        assert_eq!(s.last_run_ops[0], ("Conv".to_string(), "CUDAExecutionProvider".to_string(), 20, 1));
        assert_eq!(s.placement["CUDAExecutionProvider"]["Conv"], 1);
        assert_eq!(s.placement_text(), "CPUExecutionProvider: Shape 1; CUDAExecutionProvider: Conv 1");
    }

    #[test]
    fn a_broken_trace_is_an_error() {
        assert!(summarize("{").is_err());
    }
}
