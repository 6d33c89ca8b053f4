//! Lower bounds on the makespan of one DAG run:
//! max(ceil(sum of times / units), critical path), with each task's fastest
//! unit when units differ (the ceiling applies when all times are integers),
//! raised by the forced idle time at the start and the end of the schedule
//! ([`idle_bound`]).

use crate::dag::Dag;
use crate::platform::Platform;

/// The load bound: total work over the number of units.
pub fn load_bound(dag: &Dag, p: &Platform) -> f64 {
    let work: f64 = (0..dag.len()).map(|i| p.min_duration(dag, i)).sum();
    let b = work / p.units() as f64;
    if integral(dag, p) {
        (b - 1e-9).ceil()
    } else {
        b
    }
}

/// The critical-path bound (fastest unit per task, transfers free).
pub fn path_bound(dag: &Dag, p: &Platform) -> f64 {
    dag.bottom_levels(|i| p.min_duration(dag, i), false).into_iter().fold(0.0, f64::max)
}

/// The best of the load, critical-path and idle-time bounds.
pub fn lower_bound(dag: &Dag, p: &Platform) -> f64 {
    let simple = simple_bound(dag, p);
    if integral(dag, p) {
        idle_bound(dag, p, simple)
    } else {
        simple
    }
}

/// The larger of the load and critical-path bounds.
pub fn simple_bound(dag: &Dag, p: &Platform) -> f64 {
    load_bound(dag, p).max(path_bound(dag, p))
}

/// Energetic reasoning on the first and last time windows (integral times).
///
/// In `[0, a)` task `i` can run at most `min(c_i, a - head_i)` (it cannot
/// start before its top level `head_i`), so the `h` units idle at least
/// `I_s(a) = h * a - min(h * a, sum_i min(c_i, max(0, a - head_i)))`;
/// likewise `I_e(b)` in the last `b` time units from the tails. When
/// `a + b <= C` the two windows are disjoint and `h * C >= work + I_s(a) +
/// I_e(b)`. Starting from a valid bound `lb`, every `a + b <= lb` is allowed;
/// the bound is raised until it stops growing.
pub fn idle_bound(dag: &Dag, p: &Platform, lb: f64) -> f64 {
    let h = p.units() as i64;
    let n = dag.len();
    let d: Vec<i64> = (0..n).map(|i| p.min_duration(dag, i).round() as i64).collect();
    let head: Vec<i64> = dag.top_levels(|i| d[i] as f64).iter().map(|v| v.round() as i64).collect();
    let tail: Vec<i64> = dag.bottom_levels(|i| d[i] as f64, false).iter().map(|v| v.round() as i64).collect();
    let work: i64 = d.iter().sum();
    // Earliest time the work still after task i (excluding i) lets it finish, from the end.
    let lag: Vec<i64> = (0..n).map(|i| tail[i] - d[i]).collect();
    let idle = |tau: i64, release: &[i64]| -> i64 {
        let can: i64 = (0..n).map(|i| d[i].min((tau - release[i]).max(0))).sum();
        h * tau - can.min(h * tau)
    };
    let mut lb = lb.round() as i64;
    for _ in 0..8 {
        let start: Vec<i64> = (0..=lb).map(|a| idle(a, &head)).collect();
        let end: Vec<i64> = (0..=lb).map(|b| idle(b, &lag)).collect();
        // best_end[k] = max of end[0..=k].
        let best_end: Vec<i64> = end
            .iter()
            .scan(0, |m, &e| {
                *m = (*m).max(e);
                Some(*m)
            })
            .collect();
        let most = (0..=lb).map(|a| start[a as usize] + best_end[(lb - a) as usize]).max().unwrap_or(0);
        let raised = (work + most + h - 1) / h;
        if raised <= lb {
            break;
        }
        lb = raised;
    }
    lb as f64
}

/// Whether every duration is a whole number (schedules can then be integral).
pub fn integral(dag: &Dag, p: &Platform) -> bool {
    if p.durations.is_empty() {
        dag.tasks.iter().all(|t| t.cost.fract() == 0.0)
    } else {
        p.durations.iter().flatten().all(|d| d.fract() == 0.0)
    }
}

/// Bound on the period of a pipelined (repeated) DAG with one sample per
/// period: max(sum of times / units, largest single time).
pub fn period_bound(dag: &Dag, p: &Platform) -> f64 {
    periodic_bound(dag, p, 1)
}

/// Bound on the period per sample of a periodic schedule holding up to
/// `x_max` samples per period, each instance inside one period: `X` samples
/// bring `X * sum` work to the units and the longest instance must fit, so
/// `period >= max(X * sum / units, max time)`; per sample, with `X <= x_max`:
/// max(sum / units, largest time / x_max). With `X > 1` a plan may beat
/// [`period_bound`] (two instances of the longest task share one period on
/// two units).
pub fn periodic_bound(dag: &Dag, p: &Platform, x_max: usize) -> f64 {
    let work: f64 = (0..dag.len()).map(|i| p.min_duration(dag, i)).sum();
    let longest = (0..dag.len()).map(|i| p.min_duration(dag, i)).fold(0.0, f64::max);
    (work / p.units() as f64).max(longest / x_max.max(1) as f64)
}
