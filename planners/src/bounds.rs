//! Lower bounds on the makespan of one DAG run:
//! max(ceil(sum of times / units), critical path), with each task's fastest
//! unit when units differ. The ceiling applies when all times are integers.

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

/// The larger of the load and critical-path bounds.
pub fn lower_bound(dag: &Dag, p: &Platform) -> f64 {
    load_bound(dag, p).max(path_bound(dag, p))
}

/// Whether every duration is a whole number (schedules can then be integral).
pub fn integral(dag: &Dag, p: &Platform) -> bool {
    if p.durations.is_empty() {
        dag.tasks.iter().all(|t| t.cost.fract() == 0.0)
    } else {
        p.durations.iter().flatten().all(|d| d.fract() == 0.0)
    }
}

/// Bound on the period of a pipelined (repeated) DAG per sample:
/// max(sum of times / units, largest single time).
pub fn period_bound(dag: &Dag, p: &Platform) -> f64 {
    let work: f64 = (0..dag.len()).map(|i| p.min_duration(dag, i)).sum();
    let longest = (0..dag.len()).map(|i| p.min_duration(dag, i)).fold(0.0, f64::max);
    (work / p.units() as f64).max(longest)
}
