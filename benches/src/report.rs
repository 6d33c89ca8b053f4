//! Reporting: the readable tables printed to stdout (raw engine first, then one
//! row per policy × load point, then per-node figures), the CSV file
//! (perf_analyzer-like columns, one row per point, written by hand) and the
//! JSON file (everything, raw figures included).

use std::fmt::Write as _;

use serde::Serialize;

use baton::NodeStats;

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
    /// Per policy, per node: each batch size run, with its mean and largest time and
    /// the ratio of the largest to raw ONNX Runtime's median at that size (with `--raw`).
    pub batch_sizes: Vec<PolicyBatches>,
}

/// One policy's batches by size, over its runtime's life (warm-ups included).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyBatches {
    pub policy: String,
    pub nodes: Vec<NodeBatches>,
}

/// One node's batches by size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeBatches {
    pub node: String,
    pub sizes: Vec<BatchSizeRow>,
}

/// The batches of one size at one node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchSizeRow {
    /// Rows per batch.
    pub batch: usize,
    /// Batches of this size run.
    pub executions: u64,
    /// Compute time per batch (stitching and running the stages), µs.
    pub mean_us: f64,
    /// The largest compute time of one batch, µs.
    pub max_us: f64,
    /// The raw batch size compared with: this size, or the next larger one measured
    /// (None without `--raw`, or when raw has no figure for the node at or above this size).
    pub raw_batch: Option<usize>,
    /// Raw ONNX Runtime's median time of one run at `raw_batch`, µs.
    pub raw_median_us: Option<f64>,
    /// `max_us ÷ raw_median_us` (the aim: no batch above 1.5).
    pub max_to_raw: Option<f64>,
}

/// A policy's batch-size table from its runtime's node statistics, compared with `raw`.
pub fn policy_batches(policy: &str, nodes: &[NodeStats], raw: Option<&RawReport>) -> PolicyBatches {
    let nodes = nodes
        .iter()
        .filter(|n| !n.batch_sizes.is_empty())
        .map(|n| {
            let raw_node = raw.and_then(|r| r.nodes.iter().find(|r| r.node == n.name));
            let sizes = n
                .batch_sizes
                .iter()
                .map(|b| {
                    let raw_point = raw_node
                        .and_then(|r| r.points.iter().filter(|p| p.batch >= b.batch_size).min_by_key(|p| p.batch));
                    let max_us = b.max_ns as f64 / 1000.0;
                    let raw_median_us = raw_point.map(|p| p.median_us);
                    BatchSizeRow {
                        batch: b.batch_size,
                        executions: b.executions,
                        mean_us: if b.executions == 0 {
                            0.0
                        } else {
                            b.compute_ns as f64 / b.executions as f64 / 1000.0
                        },
                        max_us,
                        raw_batch: raw_point.map(|p| p.batch),
                        raw_median_us,
                        max_to_raw: raw_median_us.filter(|&us| us > 0.0).map(|us| max_us / us),
                    }
                })
                .collect();
            NodeBatches { node: n.name.clone(), sizes }
        })
        .collect();
    PolicyBatches { policy: policy.to_string(), nodes }
}

/// One line per policy, node and batch size: batches run, mean and largest µs, and with
/// raw figures the raw median (at that size or the next larger, in brackets when larger)
/// and the largest ÷ raw.
pub fn batches_table(policies: &[PolicyBatches]) -> String {
    let has_raw = policies.iter().flat_map(|p| &p.nodes).flat_map(|n| &n.sizes).any(|s| s.raw_batch.is_some());
    let rows: Vec<Vec<String>> = policies
        .iter()
        .flat_map(|p| {
            p.nodes.iter().flat_map(move |n| {
                n.sizes.iter().map(move |s| {
                    let mut row = vec![
                        p.policy.clone(),
                        n.node.clone(),
                        s.batch.to_string(),
                        s.executions.to_string(),
                        format!("{:.1}", s.mean_us),
                        format!("{:.1}", s.max_us),
                    ];
                    if has_raw {
                        row.push(match (s.raw_median_us, s.raw_batch) {
                            (Some(us), Some(b)) if b != s.batch => format!("{us:.1} (b{b})"),
                            (Some(us), _) => format!("{us:.1}"),
                            _ => "-".into(),
                        });
                        row.push(opt(s.max_to_raw, 2));
                    }
                    row
                })
            })
        })
        .collect();
    let mut headers = vec!["policy", "node", "batch", "batches", "mean µs", "max µs"];
    if has_raw {
        headers.extend(["raw µs", "max/raw"]);
    }
    let mut out = table(&headers, &rows, 2);
    if has_raw {
        out += "max/raw = largest batch time ÷ raw median at that size (aim: ≤ 1.5); over each runtime's life\n";
    }
    out
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
    let loops = if raw.loops > 1 { format!(", {} loops at once (rows/s summed)", raw.loops) } else { String::new() };
    let mut out = format!(
        "Raw ONNX Runtime (no Baton, {} I/O){loops}, {} s per batch size\n",
        raw.io.name(),
        trim_float(seconds)
    );
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

/// Per point, the raw figures measured just before and after it (which its ratios use),
/// their drift, and the ratio the start's sweep would have given: empty when no point has them.
pub fn raw_beside_table(points: &[PointResult]) -> String {
    let rows: Vec<Vec<String>> = points
        .iter()
        .filter_map(|p| {
            let b = p.raw_beside.as_ref()?;
            let us = |s: &crate::raw_beside::RawSample| s.batch1_path_us.map_or("-".into(), |u| format!("{u:.1}"));
            Some(vec![
                p.policy.clone(),
                p.mode.clone(),
                load_label(p),
                format!("{:.0}", b.before.rows_per_s),
                format!("{:.0}", b.after.rows_per_s),
                format!("{:+.1}%", b.drift() * 100.0),
                us(&b.before),
                us(&b.after),
                format!("{:.3}", b.ratio_to_start),
            ])
        })
        .collect();
    let Some(b) = points.iter().find_map(|p| p.raw_beside.as_ref()) else { return String::new() };
    let mut out = format!(
        "raw beside each point: node `{}` at batch {} just before and just after it (×raw divides by their mean)\n",
        b.node, b.batch
    );
    out += &table(
        &[
            "policy",
            "mode",
            "load",
            "raw before rows/s",
            "raw after rows/s",
            "drift",
            "batch-1 path before µs",
            "after µs",
            "×raw at start",
        ],
        &rows,
        3,
    );
    out
}

/// Per point, each tenant's answered requests and latencies (µs), below the points'
/// rows: empty when no point has tenants.
pub fn tenants_table(points: &[PointResult]) -> String {
    if points.iter().all(|p| p.tenants.is_empty()) {
        return String::new();
    }
    let mut out = String::from("per tenant (µs): policy, load, tenant: count, mean, p50, p99\n");
    for p in points {
        for t in &p.tenants {
            let l = &t.latency;
            let _ = writeln!(
                out,
                "  {} {} {}: {} {} {:.1} {} {}",
                p.policy, p.mode, p.load, t.tenant, l.count, l.mean_us, l.p50_us, l.p99_us
            );
        }
    }
    out
}

/// Per point, the scheduler thread: its rounds a second, CPU a round, and how late its
/// ticks came (p50, p99, the share after a decision that left every core busy); then the
/// decisions workers made as their batches ended, and those made on arrivals: each a second
/// and mean µs. Empty when no point recorded it (a remote target, a simulation).
pub fn ticks_table(points: &[PointResult]) -> String {
    if points.iter().all(|p| p.scheduler_ticks.is_none()) {
        return String::new();
    }
    let mut out = String::from(
        "scheduler thread: policy, load: rounds/s, CPU µs a round, tick lateness p50 µs, p99 µs, contended share; \
         decisions after batches/s, mean µs; on arrivals/s, mean µs\n",
    );
    for p in points {
        if let Some(t) = &p.scheduler_ticks {
            let l = &t.lateness;
            let contended = if l.count > 0 { l.contended as f64 / l.count as f64 } else { 0.0 };
            let (finishes, arrivals) = (&t.decisions.on_finishes, &t.decisions.on_arrivals);
            let _ = writeln!(
                out,
                "  {} {} {}: {:.0} {:.1} {:.1} {:.1} {:.2}; {:.0} {:.1}; {:.0} {:.1}",
                p.policy,
                p.mode,
                p.load,
                t.rounds_per_s,
                t.cpu_us_per_round,
                l.p50_us,
                l.p99_us,
                contended,
                finishes.per_s,
                finishes.mean_us,
                arrivals.per_s,
                arrivals.mean_us
            );
        }
    }
    out
}

/// Per open-loop point, how far behind its schedule the generator sent: the mean lag and the
/// sends more than 1 ms late (a load the generator's cores could not keep up with; with
/// `--latency-from-schedule` every latency holds its send's lag), and where the generator ran at
/// the real-time policy (`--generator-policy`), a mark. Empty without open-loop points.
pub fn sends_table(points: &[PointResult]) -> String {
    if points.iter().all(|p| p.mode != "open") {
        return String::new();
    }
    let mut out = String::from("open-loop sends: policy, load: mean lag behind schedule µs, sends over 1 ms late\n");
    for p in points.iter().filter(|p| p.mode == "open") {
        let mark = if p.generator_realtime { " (generator real-time)" } else { "" };
        let _ = writeln!(out, "  {} {}: {:.1} {}{mark}", p.policy, p.load, p.mean_send_lag_us, p.late_sends);
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

/// One row per point and node: mean batch size, queue time per task (mean, p99, and the
/// p99 of its part before the word to run the batch), compute time per batch
/// (mean and p99), the share of it its threads ran on a core (sampled; `-` without
/// samples), the worker's time handing the outputs on per batch (mean and p99), its workers' wake-up p50
/// and p99.
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
                    format!("{:.1}", n.queue.p99_us),
                    format!("{:.1}", n.queue.picked_p99_us),
                    format!("{:.1}", n.mean_compute_us),
                    format!("{:.1}", n.compute_p99_us),
                    n.cpu_per_wall.map_or("-".into(), |share| format!("{share:.2}")),
                    format!("{:.1}", n.mean_hand_on_us),
                    format!("{:.1}", n.hand_on_p99_us),
                    format!("{:.1}", n.wakes.p50_us),
                    format!("{:.1}", n.wakes.p99_us),
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
            "queue p99 µs",
            "picked p99 µs",
            "compute µs/batch",
            "compute p99 µs",
            "on core",
            "hand-on µs/batch",
            "hand-on p99 µs",
            "wake p50 µs",
            "wake p99 µs",
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
            mean_send_lag_us: 0.0,
            send_lags: Vec::new(),
            send_cpu_us: 0.0,
            generator_realtime: false,
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
                mean_hand_on_us: 0.0,
                hand_on_p99_us: 0.0,
                hand_on_p999_us: 0.0,
                hand_on_buckets: Vec::new(),
                host_device_bytes: 0,
                wakes: Default::default(),
                queue: Default::default(),
                compute_p99_us: 0.0,
                batch_times: Vec::new(),
                realtime_batch_times: Vec::new(),
                cpu_per_wall: None,
                spin_cpu_us: 0.0,
            }],
            windows: vec![],
            reported_windows: 1,
            stable: None,
            ratio_to_raw: Some(0.91234),
            p50_minus_raw_us: None,
            raw_beside: None,
            host_device_bytes_per_request: 0.0,
            cpu: None,
            scheduler_ticks: None,
            tenants: Vec::new(),
        }
    }

    #[test]
    fn the_tenants_block_lists_each_tenant_of_each_point() {
        assert_eq!(tenants_table(&[point()]), "", "no tenants: no block");
        let mut p = point();
        let latency = Latency { count: 30, mean_us: 120.25, p50_us: 110, p99_us: 300, ..Latency::default() };
        p.tenants = vec![crate::measure::TenantLatency { tenant: "bob".into(), latency }];
        assert_eq!(
            tenants_table(&[p]),
            "per tenant (µs): policy, load, tenant: count, mean, p50, p99\n  collaborative closed 4: bob 30 120.2 110 300\n"
        );
    }

    #[test]
    fn the_scheduler_block_lists_each_point_that_recorded_its_ticks() {
        assert_eq!(ticks_table(&[point()]), "", "no record: no block");
        let open = PointResult { mode: "open".into(), mean_send_lag_us: 42.5, late_sends: 3, ..point() };
        assert_eq!(sends_table(&[point()]), "", "no open-loop point: no block");
        assert_eq!(
            sends_table(&[point(), open.clone()]),
            "open-loop sends: policy, load: mean lag behind schedule µs, sends over 1 ms late\n  collaborative 4: 42.5 3\n"
        );
        let realtime = PointResult { generator_realtime: true, ..open.clone() };
        assert!(sends_table(&[realtime]).ends_with("  collaborative 4: 42.5 3 (generator real-time)\n"));
        let mut p = point();
        let lateness =
            crate::measure::WakeSummary { count: 40, contended: 10, p50_us: 73.7, p99_us: 524.3, ..Default::default() };
        let on_finishes = crate::measure::DecisionTimesSummary { per_s: 5210.2, mean_us: 3.46, ..Default::default() };
        let on_arrivals = crate::measure::DecisionTimesSummary { per_s: 301.0, mean_us: 1.04, ..Default::default() };
        let decisions = crate::measure::DecisionSummary { on_finishes, on_arrivals, ..Default::default() };
        p.scheduler_ticks =
            Some(crate::measure::TickSummary { rounds_per_s: 1640.4, cpu_us_per_round: 15.25, lateness, decisions });
        assert_eq!(
            ticks_table(&[p]),
            "scheduler thread: policy, load: rounds/s, CPU µs a round, tick lateness p50 µs, p99 µs, contended share; \
             decisions after batches/s, mean µs; on arrivals/s, mean µs\n  \
             collaborative closed 4: 1640 15.2 73.7 524.3 0.25; 5210 3.5; 301 1.0\n"
        );
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

    fn raw_mlp() -> RawReport {
        let point = |batch: usize, median_us: f64| crate::raw::RawPoint {
            batch,
            runs: 100,
            seconds: 1.0,
            runs_per_s: 100.0,
            rows_per_s: 100.0 * batch as f64,
            median_us,
            mean_us: median_us,
            p99_us: median_us,
        };
        RawReport {
            io: crate::raw::RawIo::Binding,
            loops: 1,
            nodes: vec![crate::raw::RawNode {
                node: "mlp".into(),
                model: "mlp.onnx".into(),
                intra_threads: 1,
                max_batch: 32,
                core: None,
                loops: 1,
                cores: vec![],
                points: vec![point(1, 10.0), point(8, 50.0)],
            }],
            skipped: vec![],
            bottleneck: None,
            batch1_path_us: None,
        }
    }

    fn node_stats(name: &str, sizes: &[(usize, u64, u64, u64)]) -> NodeStats {
        NodeStats {
            name: name.into(),
            executions: 0,
            rows: 0,
            tasks: 0,
            failed_batches: 0,
            queue_ns: 0,
            compute_ns: 0,
            task_compute_ns: 0,
            hand_on_ns: 0,
            hand_on_times: Vec::new(),
            placement_retries: 0,
            host_device_bytes: 0,
            stopped_batches: 0,
            stopped_ns: 0,
            batch_sizes: sizes
                .iter()
                .map(|&(batch_size, executions, compute_ns, max_ns)| baton::stats::BatchSizeStats {
                    batch_size,
                    executions,
                    compute_ns,
                    max_ns,
                })
                .collect(),
            wake_delays: Default::default(),
            queue_times: Default::default(),
            batch_times: Vec::new(),
            realtime_batch_times: Vec::new(),
            batch_cpu: Default::default(),
            spin_cpu: Default::default(),
        }
    }

    #[test]
    fn batch_sizes_compare_the_largest_batch_with_raw_at_that_size_or_the_next_larger() {
        let stats = [
            // Batch 1: 10 of 12 µs on average, the largest 14 µs against raw's 10 µs at batch 1.
            // Batch 5: raw has no 5, its next larger is 8 (50 µs); the largest 60 µs.
            // Batch 64: raw has nothing at or above it.
            node_stats("mlp", &[(1, 10, 120_000, 14_000), (5, 2, 80_000, 60_000), (64, 1, 900_000, 900_000)]),
            node_stats("other", &[(2, 1, 3_000, 3_000)]),
            node_stats("idle", &[]),
        ];
        let p = policy_batches("greedy", &stats, Some(&raw_mlp()));
        assert_eq!(p.policy, "greedy");
        assert_eq!(p.nodes.iter().map(|n| n.node.as_str()).collect::<Vec<_>>(), ["mlp", "other"], "idle left out");
        let mlp = &p.nodes[0].sizes;
        assert_eq!((mlp[0].batch, mlp[0].executions, mlp[0].mean_us, mlp[0].max_us), (1, 10, 12.0, 14.0));
        assert_eq!((mlp[0].raw_batch, mlp[0].raw_median_us), (Some(1), Some(10.0)));
        assert!((mlp[0].max_to_raw.unwrap() - 1.4).abs() < 1e-12);
        assert_eq!((mlp[1].raw_batch, mlp[1].raw_median_us), (Some(8), Some(50.0)));
        assert!((mlp[1].max_to_raw.unwrap() - 1.2).abs() < 1e-12);
        assert_eq!((mlp[2].raw_batch, mlp[2].max_to_raw), (None, None));
        assert_eq!(p.nodes[1].sizes[0].raw_batch, None, "raw has no figures for `other`");

        let t = batches_table(std::slice::from_ref(&p));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("max µs") && lines[0].contains("raw µs") && lines[0].contains("max/raw"), "{t}");
        assert_eq!(lines.len(), 2 + 4 + 1, "one line per size: {t}");
        let cells = |i: usize| lines[i].split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(cells(2), "greedy mlp 1 10 12.0 14.0 10.0 1.40", "{t}");
        assert_eq!(cells(3), "greedy mlp 5 2 40.0 60.0 50.0 (b8) 1.20", "{t}");
        assert_eq!(cells(4), "greedy mlp 64 1 900.0 900.0 - -", "{t}");

        let json = serde_json::to_value(&p).unwrap();
        let size = &json["nodes"][0]["sizes"][1];
        assert_eq!(size["batch"], 5);
        assert_eq!(size["max_us"], 60.0);
        assert_eq!(size["raw_batch"], 8);
        assert_eq!(size["raw_median_us"], 50.0);
        assert_eq!(size["max_to_raw"], 1.2);
        assert!(json["nodes"][0]["sizes"][2]["max_to_raw"].is_null());

        // Without raw figures: no raw columns.
        let t = batches_table(&[policy_batches("greedy", &stats, None)]);
        assert!(!t.contains("raw"), "{t}");
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
