//! Results as rows: one per partitioner run, printable as text or a markdown
//! table, and serialisable to JSON (with the part of each vertex).

use serde::Serialize;

use crate::graph::Graph;
use crate::metis_ref::MetisOutcome;
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

    pub fn from_metis(g: &Graph, k: usize, o: &MetisOutcome) -> Row {
        Row {
            method: "metis".into(),
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

/// Markdown table header for benchmark rows.
pub const TABLE_HEADER: &str = "| graph | n | m | crit. rel. | k | crit. cut (ours) | crit. cut (METIS) | total cut (ours) | total cut (METIS) | imbalance ours / METIS | time ours / METIS (ms) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";

/// One markdown row comparing ours with METIS on one graph and k.
pub fn table_row(name: &str, g: &Graph, ours: &Row, metis: &Row) -> String {
    let flag = |b: bool| if b { "" } else { "!" };
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1}%{} / {:.1}%{} | {:.1} / {:.1} |",
        g.n(),
        g.m(),
        g.critical_edges(),
        ours.k,
        ours.cut.critical,
        metis.cut.critical,
        ours.cut.total,
        metis.cut.total,
        100.0 * ours.imbalance,
        flag(ours.balanced),
        100.0 * metis.imbalance,
        flag(metis.balanced),
        1000.0 * ours.seconds,
        1000.0 * metis.seconds
    )
}
