//! Reporting: the readable tables printed to stdout (raw engine first, then one
//! row per policy × load point, then per-node figures), the CSV file
//! (perf_analyzer-like columns, one row per point, written by hand) and the
//! JSON file (everything, raw figures included).

use std::fmt::Write as _;

use serde::Serialize;

use crate::measure::PointResult;
use crate::raw::RawReport;

/// Everything a run measured, as written to `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub pipeline: String,
    pub file: String,
    /// Cores this machine has (figures from different machines do not compare).
    pub cores: usize,
    pub settings: serde_json::Value,
    pub raw: Option<RawReport>,
    pub points: Vec<PointResult>,
}

/// Lays out rows under headers, columns right-aligned except the first `left` ones.
pub fn table(headers: &[&str], rows: &[Vec<String>], left: usize) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            let pad = w - cell.chars().count();
            if i > 0 {
                out.push_str("  ");
            }
            if i < left {
                out.push_str(cell);
                out.extend(std::iter::repeat_n(' ', pad));
            } else {
                out.extend(std::iter::repeat_n(' ', pad));
                out.push_str(cell);
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(&mut headers.iter().copied());
    out += &line(&mut widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>().iter().map(String::as_str));
    for row in rows {
        out += &line(&mut row.iter().map(String::as_str));
    }
    out
}

/// How a point's load reads: `c=16` or `500/s`.
pub fn load_label(point: &PointResult) -> String {
    if point.mode == "closed" {
        format!("c={}", point.load)
    } else {
        format!("{}/s", trim_float(point.load))
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn opt(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.decimals$}"))
}

/// The raw engine's table, and a line naming the bottleneck.
pub fn raw_table(raw: &RawReport, seconds: f64) -> String {
    let mut out = format!("Raw ONNX Runtime (no Baton), {} s per batch size\n", trim_float(seconds));
    let rows: Vec<Vec<String>> = raw
        .nodes
        .iter()
        .flat_map(|n| {
            n.points.iter().map(move |p| {
                vec![
                    n.node.clone(),
                    p.batch.to_string(),
                    n.intra_threads.to_string(),
                    format!("{:.0}", p.runs_per_s),
                    format!("{:.0}", p.rows_per_s),
                    format!("{:.1}", p.median_us),
                    format!("{:.1}", p.mean_us),
                    format!("{:.1}", p.p99_us),
                ]
            })
        })
        .collect();
    out += &table(&["node", "batch", "intra", "runs/s", "rows/s", "median µs", "mean µs", "p99 µs"], &rows, 1);
    for s in &raw.skipped {
        let _ = writeln!(out, "skipped {s}");
    }
    if let Some(b) = &raw.bottleneck {
        let _ = writeln!(out, "bottleneck node: {} (best {:.0} rows/s at batch {})", b.node, b.rows_per_s, b.batch);
    }
    if let Some(us) = raw.batch1_path_us {
        let _ = writeln!(out, "raw batch-1 latency along the critical path: {us:.1} µs");
    }
    out
}

/// One row per point: throughput, latency percentiles, errors, priority latency, ratios.
pub fn points_table(points: &[PointResult]) -> String {
    let has_priority = points.iter().any(|p| p.priority_latency.count > 0);
    let has_raw = points.iter().any(|p| p.ratio_to_raw.is_some());
    let has_stability = points.iter().any(|p| p.stable.is_some());
    let mut headers = vec![
        "policy",
        "mode",
        "load",
        "req/s",
        "rows/s",
        "p50 µs",
        "p90 µs",
        "p95 µs",
        "p99 µs",
        "p99.9 µs",
        "mean µs",
        "errors",
        "H↔D B/req",
    ];
    if has_priority {
        headers.extend(["prio p50", "prio p99"]);
    }
    if has_raw {
        headers.extend(["×raw", "p50−raw µs"]);
    }
    if has_stability {
        headers.push("stable");
    }
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let l = &p.latency;
            let mut row = vec![
                p.policy.clone(),
                p.mode.clone(),
                load_label(p),
                format!("{:.0}", p.throughput_rps),
                format!("{:.0}", p.rows_per_s),
                l.p50_us.to_string(),
                l.p90_us.to_string(),
                l.p95_us.to_string(),
                l.p99_us.to_string(),
                l.p999_us.to_string(),
                format!("{:.1}", l.mean_us),
                p.errors.to_string(),
                format!("{:.0}", p.host_device_bytes_per_request),
            ];
            if has_priority {
                let q = &p.priority_latency;
                let some = q.count > 0;
                row.push(if some { q.p50_us.to_string() } else { "-".into() });
                row.push(if some { q.p99_us.to_string() } else { "-".into() });
            }
            if has_raw {
                row.push(opt(p.ratio_to_raw, 3));
                row.push(opt(p.p50_minus_raw_us, 1));
            }
            if has_stability {
                row.push(match p.stable {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "-".into(),
                });
            }
            row
        })
        .collect();
    table(&headers, &rows, 3)
}

/// One row per point and node: mean batch size, queue time per task, compute time per batch.
pub fn nodes_table(points: &[PointResult]) -> String {
    let rows: Vec<Vec<String>> = points
        .iter()
        .flat_map(|p| {
            p.nodes.iter().map(move |n| {
                vec![
                    p.policy.clone(),
                    p.mode.clone(),
                    load_label(p),
                    n.name.clone(),
                    format!("{:.2}", n.mean_batch),
                    format!("{:.1}", n.mean_queue_us),
                    format!("{:.1}", n.mean_compute_us),
                    n.executions.to_string(),
                    n.failed_batches.to_string(),
                    n.stopped_batches.to_string(),
                    format!("{:.0}", n.stopped_us),
                ]
            })
        })
        .collect();
    table(
        &[
            "policy",
            "mode",
            "load",
            "node",
            "mean batch",
            "queue µs/task",
            "compute µs/batch",
            "batches",
            "failed",
            "stopped",
            "stopped µs",
        ],
        &rows,
        4,
    )
}

/// Quotes a CSV field when it holds a comma, a quote or a line break.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The CSV header for a pipeline with these node names.
pub fn csv_header(nodes: &[String]) -> String {
    let mut cols: Vec<String> = [
        "policy",
        "mode",
        "load",
        "throughput_rps",
        "rows_per_s",
        "p50_us",
        "p90_us",
        "p95_us",
        "p99_us",
        "p999_us",
        "mean_us",
        "errors",
        "priority_p50_us",
        "priority_p99_us",
        "ratio_to_raw",
        "p50_minus_raw_us",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for n in nodes {
        for what in ["batch", "queue_us", "compute_us"] {
            cols.push(csv_field(&format!("node:{n}:{what}")));
        }
    }
    cols.join(",")
}

/// One CSV row; node columns follow `nodes`' order (empty where the point lacks the node).
pub fn csv_row(point: &PointResult, nodes: &[String]) -> String {
    let l = &point.latency;
    let q = &point.priority_latency;
    let prio = |v: u64| if q.count > 0 { v.to_string() } else { String::new() };
    let opt = |x: Option<f64>, d: usize| x.map_or_else(String::new, |x| format!("{x:.d$}"));
    let mut cols = vec![
        csv_field(&point.policy),
        csv_field(&point.mode),
        trim_float(point.load),
        format!("{:.2}", point.throughput_rps),
        format!("{:.2}", point.rows_per_s),
        l.p50_us.to_string(),
        l.p90_us.to_string(),
        l.p95_us.to_string(),
        l.p99_us.to_string(),
        l.p999_us.to_string(),
        format!("{:.2}", l.mean_us),
        point.errors.to_string(),
        prio(q.p50_us),
        prio(q.p99_us),
        opt(point.ratio_to_raw, 4),
        opt(point.p50_minus_raw_us, 2),
    ];
    for name in nodes {
        match point.nodes.iter().find(|n| &n.name == name) {
            Some(n) => {
                cols.push(format!("{:.3}", n.mean_batch));
                cols.push(format!("{:.2}", n.mean_queue_us));
                cols.push(format!("{:.2}", n.mean_compute_us));
            }
            None => cols.extend([String::new(), String::new(), String::new()]),
        }
    }
    cols.join(",")
}

/// The whole CSV file: header and one row per point.
pub fn csv(points: &[PointResult], nodes: &[String]) -> String {
    let mut out = csv_header(nodes) + "\n";
    for p in points {
        out += &csv_row(p, nodes);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Latency, NodeDelta};

    fn point() -> PointResult {
        PointResult {
            policy: "collaborative".into(),
            mode: "closed".into(),
            load: 4.0,
            seconds: 1.0,
            requests: 1000,
            errors: 2,
            late_sends: 0,
            throughput_rps: 1000.0,
            rows_per_s: 2000.0,
            latency: Latency {
                count: 1000,
                p50_us: 100,
                p90_us: 150,
                p95_us: 170,
                p99_us: 200,
                p999_us: 400,
                mean_us: 110.5,
                min_us: 80,
                max_us: 500,
            },
            priority_latency: Latency::default(),
            others_latency: Latency::default(),
            nodes: vec![NodeDelta {
                name: "mlp".into(),
                executions: 250,
                rows: 2000,
                tasks: 1000,
                failed_batches: 0,
                stopped_batches: 0,
                stopped_us: 0.0,
                mean_batch: 8.0,
                mean_queue_us: 12.25,
                mean_compute_us: 300.0,
                host_device_bytes: 0,
            }],
            windows: vec![],
            reported_windows: 1,
            stable: None,
            ratio_to_raw: Some(0.91234),
            p50_minus_raw_us: None,
            host_device_bytes_per_request: 0.0,
        }
    }

    #[test]
    fn csv_header_names_the_fixed_columns_then_three_per_node() {
        let h = csv_header(&["mlp".into(), "a,b".into()]);
        assert!(h.starts_with(
            "policy,mode,load,throughput_rps,rows_per_s,p50_us,p90_us,p95_us,p99_us,p999_us,mean_us,errors,\
             priority_p50_us,priority_p99_us,ratio_to_raw,p50_minus_raw_us,"
        ));
        assert!(h.ends_with(
            ",node:mlp:batch,node:mlp:queue_us,node:mlp:compute_us,\"node:a,b:batch\",\"node:a,b:queue_us\",\
             \"node:a,b:compute_us\""
        ));
        assert_eq!(h.split(',').count(), 16 + 3 + 6, "{h}");
    }

    #[test]
    fn csv_row_matches_the_header() {
        let nodes = vec!["mlp".to_string(), "missing".to_string()];
        let row = csv_row(&point(), &nodes);
        assert_eq!(
            row,
            "collaborative,closed,4,1000.00,2000.00,100,150,170,200,400,110.50,2,,,0.9123,,8.000,12.25,300.00,,,"
        );
        assert_eq!(row.split(',').count(), csv_header(&nodes).split(',').count());
        let file = csv(&[point(), point()], &nodes);
        assert_eq!(file.lines().count(), 3);
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn tables_align_columns() {
        let t = table(&["a", "bb"], &[vec!["xyz".into(), "1".into()], vec!["q".into(), "22".into()]], 1);
        assert_eq!(t, "a    bb\n---  --\nxyz   1\nq    22\n");
        let t = points_table(&[point()]);
        assert!(t.contains("collaborative") && t.contains("c=4") && t.contains("0.912"), "{t}");
        assert!(!t.contains("prio"), "no priority columns without priority requests: {t}");
    }
}
