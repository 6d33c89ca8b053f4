//! Results as rows: one per partitioner run, printable as text or a markdown
//! table, and serialisable to JSON (with the part of each vertex).

use serde::Serialize;

use crate::graph::Graph;
use crate::metrics::{self, Cut};
use crate::multilevel::Outcome;

/// One partitioner's result on one graph.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub method: String,
    pub k: usize,
    pub cut: Cut,
    pub loads: Vec<i64>,
    pub imbalance: f64,
    pub balanced: bool,
    pub seconds: f64,
    #[serde(skip)]
    pub part: Vec<u32>,
}

impl Row {
    pub fn from_outcome(method: &str, g: &Graph, k: usize, o: &Outcome) -> Row {
        Row {
            method: method.into(),
            k,
            cut: o.cut.clone(),
            loads: metrics::part_weights(g, &o.part, k),
            imbalance: o.imbalance,
            balanced: o.balanced,
            seconds: o.seconds,
            part: o.part.clone(),
        }
    }

    /// A one-line summary.
    pub fn line(&self) -> String {
        format!(
            "{:<10} k={} critical cut {} ({} relations)  total cut {} ({} relations)  imbalance {:.2}%{}  loads {:?}  {:.3} ms",
            self.method,
            self.k,
            self.cut.critical,
            self.cut.critical_edges,
            self.cut.total,
            self.cut.edges,
            100.0 * self.imbalance,
            if self.balanced { "" } else { " (over the limit)" },
            self.loads,
            1000.0 * self.seconds
        )
    }
}

/// The vertices of each part, by name (for small graphs).
pub fn parts_listing(g: &Graph, part: &[u32], k: usize) -> Vec<Vec<String>> {
    let mut parts = vec![Vec::new(); k];
    for (v, &p) in part.iter().enumerate() {
        parts[p as usize].push(g.name(v as u32));
    }
    parts
}

/// Markdown table header for benchmark rows (one column group per partitioner,
/// named in `methods`).
pub fn table_header(methods: &[&str]) -> String {
    let m = methods.join(" / ");
    format!(
        "| graph | n | m | crit. rel. | k | crit. cut {m} | total cut {m} | imbalance {m} | time (ms) {m} |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
}

/// One markdown row comparing several partitioners on one graph and k.
pub fn table_row(name: &str, g: &Graph, rows: &[Row]) -> String {
    let join = |f: &dyn Fn(&Row) -> String| rows.iter().map(f).collect::<Vec<_>>().join(" / ");
    let flag = |r: &Row| if r.balanced { "" } else { "!" };
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
        g.n(),
        g.m(),
        g.critical_edges(),
        rows.first().map_or(0, |r| r.k),
        join(&|r| r.cut.critical.to_string()),
        join(&|r| r.cut.total.to_string()),
        join(&|r| format!("{:.1}%{}", 100.0 * r.imbalance, flag(r))),
        join(&|r| format!("{:.1}", 1000.0 * r.seconds)),
    )
}
