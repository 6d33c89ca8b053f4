//! Load sweeps (`baton bench --sweep 50,70,90,95`): every policy's capacity,
//! then open-loop points at fractions of it, policies alternating within
//! each round and each point repeated `--repeat` times.
//!
//! 1. Capacity: each policy's throughput under closed loop with
//!    `--capacity-concurrency` clients (as many requests in flight as that).
//!    With `--capacity-search open` (the default), the baseline's capacity is
//!    then searched in open loop: the highest Poisson rate it keeps up with
//!    ([`keeps_up`]), by bisection between 0 and 1.5× its closed-loop
//!    throughput. Closed loop lets the queue, and so the batches, grow as
//!    large as the clients allow, which open loop need not reach: on a
//!    pipeline whose batches grow with its queues, "50%" of the closed-loop
//!    figure may already overload it.
//!    With `--capacity-rate R` no capacity is measured: the percentages are of R.
//! 2. The offered rates: each percentage of the *baseline's* capacity
//!    (`greedy`'s when it runs, so every policy gets the same offered load and
//!    a slower policy shows its overload; otherwise each policy's own).
//! 3. Rounds: each round runs every (load, policy) point once, policies in
//!    turn (reversed every other round), so drift of the machine falls on all
//!    of them alike.
//!
//! The summary gives, per load and policy, the throughput and the p50/p99 of
//! priority requests and of the others, each also as a ratio to the
//! baseline's point of the same round (mean over rounds, with the spread).

use std::fmt::Write as _;

use baton::Runtime;
use serde::Serialize;

use crate::load::RequestPool;
use crate::measure::PointResult;
use baton::BatchingPolicy;

use crate::{run_point, BenchOptions, Load};

/// The policy whose capacity sets the offered rates, and the ratios' denominator.
pub const BASELINE: &str = "greedy";

/// One measured sweep point.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    pub round: usize,
    /// Offered load, % of the baseline's capacity.
    pub percent: f64,
    pub point: PointResult,
}

/// A whole sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    /// (policy, capacity in requests/s), closed loop (empty with `--capacity-rate`).
    pub capacity: Vec<(String, f64)>,
    /// The capacity given by `--capacity-rate`, requests/s.
    pub given_capacity: Option<f64>,
    /// The baseline's open-loop capacity, requests/s (with `--capacity-search open`).
    pub open_capacity: Option<f64>,
    pub points: Vec<SweepPoint>,
}

/// Bisection steps of the open-loop capacity search (resolution 1.5 / 2^7 ≈ 1.2% of the closed-loop figure).
const SEARCH_STEPS: usize = 7;

/// Whether an open-loop point kept up with its offered rate: every request
/// answered and at least 97% of the offered rate served.
pub fn keeps_up(point: &PointResult) -> bool {
    point.errors == 0 && point.throughput_rps >= 0.97 * point.load
}

/// The highest Poisson rate `runtime` keeps up with, by bisection in (0, 1.5 × `closed`].
fn open_loop_capacity(runtime: &Runtime, pool: &RequestPool, args: &BenchOptions, policy: &str, closed: f64) -> f64 {
    let (mut low, mut high) = (0.0, 1.5 * closed);
    for _ in 0..SEARCH_STEPS {
        let rate = (low + high) / 2.0;
        if keeps_up(&run_point(runtime, pool, args, policy, Load::Open(rate.max(1.0)))) {
            low = rate;
        } else {
            high = rate;
        }
    }
    low
}

/// Runs the sweep on one runtime per policy (all kept up, used in turn).
pub fn sweep(runtimes: &[(BatchingPolicy, Runtime)], pool: &RequestPool, args: &BenchOptions) -> SweepReport {
    if let Some(given) = args.capacity_rate {
        return SweepReport {
            capacity: Vec::new(),
            given_capacity: Some(given),
            open_capacity: None,
            points: open_loop_rounds(runtimes, pool, args, |_| given),
        };
    }
    let capacity: Vec<(String, f64)> = runtimes
        .iter()
        .map(|(policy, runtime)| {
            let point = run_point(runtime, pool, args, policy.name(), Load::Closed(args.capacity_concurrency));
            (policy.name().to_string(), point.throughput_rps)
        })
        .collect();
    let baseline = runtimes.iter().zip(&capacity).find(|((p, _), _)| p.name() == BASELINE);
    let open_capacity = baseline
        .filter(|_| args.open_capacity)
        .map(|((policy, runtime), (_, closed))| open_loop_capacity(runtime, pool, args, policy.name(), *closed));
    let base = open_capacity.or(baseline.map(|(_, (_, c))| *c));
    let points = open_loop_rounds(runtimes, pool, args, |i| base.unwrap_or(capacity[i].1));
    SweepReport { capacity, given_capacity: None, open_capacity, points }
}

/// The rounds of open-loop points, each at its percentage of `capacity_of(policy index)`.
fn open_loop_rounds(
    runtimes: &[(BatchingPolicy, Runtime)],
    pool: &RequestPool,
    args: &BenchOptions,
    capacity_of: impl Fn(usize) -> f64,
) -> Vec<SweepPoint> {
    let mut points = Vec::new();
    for round in 0..args.repeat.max(1) {
        for &percent in &args.sweep {
            let mut order: Vec<usize> = (0..runtimes.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let (policy, runtime) = &runtimes[i];
                let rate = capacity_of(i) * percent / 100.0;
                let point = run_point(runtime, pool, args, policy.name(), Load::Open(rate.max(1.0)));
                points.push(SweepPoint { round, percent, point });
            }
        }
    }
    points
}

/// The four latencies of a point the sweep compares: priority p50/p99, others' p50/p99, µs.
fn latencies(p: &PointResult) -> [f64; 4] {
    [
        p.priority_latency.p50_us as f64,
        p.priority_latency.p99_us as f64,
        p.others_latency.p50_us as f64,
        p.others_latency.p99_us as f64,
    ]
}

/// Mean, min and max of `values` (NaN when empty).
fn spread(values: &[f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (mean, values.iter().copied().fold(f64::MAX, f64::min), values.iter().copied().fold(f64::MIN, f64::max))
}

/// Per (percent, policy): mean throughput and latencies over rounds, and the
/// ratios to the baseline's point of the same round (mean, min, max) of
/// throughput and the four latencies.
pub struct Summary {
    pub percent: f64,
    pub policy: String,
    pub rate: f64,
    pub throughput: f64,
    pub latencies: [f64; 4],
    /// Failed requests, summed over rounds.
    pub errors: u64,
    /// Ratios to the baseline: throughput, then the four latencies; (mean, min, max).
    pub ratios: Option<[(f64, f64, f64); 5]>,
}

pub fn summarize(report: &SweepReport) -> Vec<Summary> {
    let mut keys: Vec<(f64, String)> = Vec::new();
    for p in &report.points {
        let key = (p.percent, p.point.policy.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let baseline_of = |round: usize, percent: f64| {
        report.points.iter().find(|p| p.round == round && p.percent == percent && p.point.policy == BASELINE)
    };
    keys.into_iter()
        .map(|(percent, policy)| {
            let of: Vec<&SweepPoint> =
                report.points.iter().filter(|p| p.percent == percent && p.point.policy == policy).collect();
            let mean = |f: &dyn Fn(&PointResult) -> f64| spread(&of.iter().map(|p| f(&p.point)).collect::<Vec<_>>()).0;
            let ratio = |k: usize| {
                let values: Vec<f64> = of
                    .iter()
                    .filter_map(|p| {
                        let base = &baseline_of(p.round, percent)?.point;
                        let (mine, theirs) = if k == 0 {
                            (p.point.throughput_rps, base.throughput_rps)
                        } else {
                            (latencies(&p.point)[k - 1], latencies(base)[k - 1])
                        };
                        (theirs > 0.0 && mine > 0.0).then(|| mine / theirs)
                    })
                    .collect();
                spread(&values)
            };
            let has_baseline = of.iter().any(|p| baseline_of(p.round, percent).is_some());
            Summary {
                percent,
                rate: mean(&|p| p.load),
                throughput: mean(&|p| p.throughput_rps),
                latencies: [0, 1, 2, 3].map(|k| mean(&|p| latencies(p)[k])),
                errors: of.iter().map(|p| p.point.errors).sum(),
                ratios: has_baseline.then(|| [0, 1, 2, 3, 4].map(ratio)),
                policy,
            }
        })
        .collect()
}

/// The sweep's table (markdown).
pub fn table(report: &SweepReport, summary: &[Summary]) -> String {
    let mut out = String::new();
    if let Some(given) = report.given_capacity {
        let _ = writeln!(out, "capacity given (the percentages' base): {given:.0}/s");
    } else {
        let capacities: Vec<String> = report.capacity.iter().map(|(p, c)| format!("{p} {c:.0}/s")).collect();
        let _ = writeln!(out, "capacity (closed loop): {}", capacities.join(", "));
    }
    if let Some(open) = report.open_capacity {
        let _ = writeln!(out, "{BASELINE}'s capacity in open loop (the percentages' base): {open:.0}/s");
    }
    let _ = writeln!(
        out,
        "| load | policy | offered/s | req/s | priority p50 | priority p99 | others p50 | others p99 | ×{BASELINE}: req/s | prio p50 | prio p99 | others p50 | others p99 | errors |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let ms = |us: f64| if us > 0.0 { format!("{:.2} ms", us / 1000.0) } else { "-".into() };
    let ratio = |r: (f64, f64, f64)| {
        if r.0.is_nan() {
            "-".into()
        } else if (r.2 - r.1) < 0.005 {
            format!("{:.2}", r.0)
        } else {
            format!("{:.2} ({:.2}-{:.2})", r.0, r.1, r.2)
        }
    };
    for s in summary {
        let ratios: Vec<String> = match &s.ratios {
            Some(r) => r.iter().map(|&r| ratio(r)).collect(),
            None => vec!["-".into(); 5],
        };
        let _ = writeln!(
            out,
            "| {:.0}% | {} | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} |",
            s.percent,
            s.policy,
            s.rate,
            s.throughput,
            ms(s.latencies[0]),
            ms(s.latencies[1]),
            ms(s.latencies[2]),
            ms(s.latencies[3]),
            ratios.join(" | "),
            s.errors
        );
    }
    out
}

/// The plot's series: (policy, percent, the four mean latencies).
pub fn plot_series(summary: &[Summary]) -> Vec<(String, f64, [f64; 4])> {
    summary.iter().map(|s| (s.policy.clone(), s.percent, s.latencies)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{point_result, Tally, Window};
    use std::time::Duration;

    fn point(policy: &str, rate: f64, priority_us: u64, others_us: u64) -> PointResult {
        let mut tally = Tally::default();
        for _ in 0..100 {
            tally.all.record(priority_us).unwrap();
            tally.priority.record(priority_us).unwrap();
            tally.all.record(others_us).unwrap();
            tally.others.record(others_us).unwrap();
        }
        let window = Window { elapsed: Duration::from_secs(1), tally, nodes_start: vec![], nodes_end: vec![] };
        point_result(policy, "open", rate, 1, &[window], 1, None)
    }

    #[test]
    fn ratios_are_taken_against_the_baseline_of_the_same_round() {
        let points = vec![
            SweepPoint { round: 0, percent: 90.0, point: point("greedy", 100.0, 1000, 200) },
            SweepPoint { round: 0, percent: 90.0, point: point("collaborative", 100.0, 400, 220) },
            SweepPoint { round: 1, percent: 90.0, point: point("greedy", 100.0, 2000, 200) },
            SweepPoint { round: 1, percent: 90.0, point: point("collaborative", 100.0, 600, 200) },
        ];
        let report =
            SweepReport { capacity: vec![("greedy".into(), 111.0)], given_capacity: None, open_capacity: None, points };
        let summary = summarize(&report);
        assert_eq!(summary.len(), 2);
        let collab = &summary[1];
        assert_eq!(collab.policy, "collaborative");
        let r = collab.ratios.unwrap();
        // Priority p99: 400/1000 in round 0, 600/2000 in round 1 (histogram precision aside).
        assert!((r[2].1 - 0.3).abs() < 0.01 && (r[2].2 - 0.4).abs() < 0.01, "{:?}", r[2]);
        assert!((r[2].0 - 0.35).abs() < 0.01);
        // Others' p99: 1.1 and 1.0.
        assert!((r[4].0 - 1.05).abs() < 0.01, "{:?}", r[4]);
        assert!((r[0].0 - 1.0).abs() < 1e-9, "same throughput");
        let greedy = &summary[0];
        assert!((greedy.ratios.unwrap()[2].0 - 1.0).abs() < 1e-9);
        assert!(table(&report, &summary).contains("| 90% | collaborative |"));
    }

    #[test]
    fn the_table_sums_each_points_errors_over_the_rounds() {
        let failing = |round, errors| {
            let mut p = point("collaborative", 100.0, 400, 220);
            p.errors = errors;
            SweepPoint { round, percent: 70.0, point: p }
        };
        let points = vec![
            SweepPoint { round: 0, percent: 70.0, point: point("greedy", 100.0, 1000, 200) },
            failing(0, 2),
            SweepPoint { round: 1, percent: 70.0, point: point("greedy", 100.0, 1000, 200) },
            failing(1, 3),
        ];
        let report = SweepReport { capacity: vec![], given_capacity: Some(100.0), open_capacity: None, points };
        let summary = summarize(&report);
        assert_eq!((summary[0].errors, summary[1].errors), (0, 5));
        let table = table(&report, &summary);
        let row = table.lines().find(|l| l.starts_with("| 70% | collaborative |")).unwrap();
        assert!(row.ends_with("| 5 |"), "{row}");
        assert!(table.lines().next().unwrap().contains("given") && table.contains("| errors |"), "{table}");
    }

    #[test]
    fn a_point_keeps_up_only_serving_97_percent_of_its_rate_without_errors() {
        // 200 requests in the 1 s window.
        assert!(keeps_up(&point("greedy", 200.0, 100, 100)));
        assert!(keeps_up(&point("greedy", 206.0, 100, 100)), "200 of 206/s is 97.1%");
        assert!(!keeps_up(&point("greedy", 207.0, 100, 100)), "200 of 207/s is 96.6%");
        let mut failed = point("greedy", 200.0, 100, 100);
        failed.errors = 1;
        assert!(!keeps_up(&failed), "a refused or failed request means it did not keep up");
    }
}
