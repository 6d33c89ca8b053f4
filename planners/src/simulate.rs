//! The legality check every schedule goes through: replays a schedule and
//! rejects it when a unit runs two tasks at once, a task starts before all its
//! inputs have arrived (transfer time included when the producer ran on
//! another unit), a unit's memory capacity is exceeded, or a time is invalid.
//! Planners assert this before returning anything: an illegal schedule is a
//! bug, never an output.

use crate::dag::Dag;
use crate::platform::Platform;

/// Tolerance for comparing floating-point times.
pub const EPS: f64 = 1e-9;

/// A schedule of one DAG run: the unit and start time of every task.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub unit: Vec<usize>,
    pub start: Vec<f64>,
}

impl Schedule {
    /// Finish time of task `i`.
    pub fn finish(&self, dag: &Dag, p: &Platform, i: usize) -> f64 {
        self.start[i] + p.duration(dag, i, self.unit[i])
    }

    /// Largest finish time (0 for an empty DAG).
    pub fn makespan(&self, dag: &Dag, p: &Platform) -> f64 {
        (0..dag.len()).map(|i| self.finish(dag, p, i)).fold(0.0, f64::max)
    }
}

/// What makes a schedule illegal.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Violation {
    #[error("the schedule covers {got} tasks, the DAG has {want}")]
    Size { got: usize, want: usize },
    #[error("task `{task}` is on unit {unit}, which does not exist")]
    NoSuchUnit { task: String, unit: usize },
    #[error("task `{task}` has an invalid start time {start}")]
    BadTime { task: String, start: f64 },
    #[error("unit {unit} runs `{a}` and `{b}` at once")]
    Overlap { unit: usize, a: String, b: String },
    #[error("`{to}` starts at {start} before its input from `{from}` arrives at {ready}")]
    EarlyStart { from: String, to: String, start: f64, ready: f64 },
    #[error("unit {unit} needs {used} memory, its capacity is {capacity}")]
    Memory { unit: usize, used: f64, capacity: f64 },
}

/// Checks a schedule; returns its makespan when legal.
pub fn verify(dag: &Dag, p: &Platform, s: &Schedule) -> Result<f64, Violation> {
    let n = dag.len();
    if s.unit.len() != n || s.start.len() != n {
        return Err(Violation::Size { got: s.unit.len().min(s.start.len()), want: n });
    }
    let name = |i: usize| dag.tasks[i].name.clone();
    let mut used = vec![0.0; p.units()];
    for i in 0..n {
        if s.unit[i] >= p.units() {
            return Err(Violation::NoSuchUnit { task: name(i), unit: s.unit[i] });
        }
        if !(s.start[i].is_finite() && s.start[i] >= -EPS) {
            return Err(Violation::BadTime { task: name(i), start: s.start[i] });
        }
        used[s.unit[i]] += dag.tasks[i].memory;
    }
    for (u, &m) in used.iter().enumerate() {
        if m > p.capacity(u) + EPS {
            return Err(Violation::Memory { unit: u, used: m, capacity: p.capacity(u) });
        }
    }
    for e in &dag.edges {
        let ready = s.finish(dag, p, e.from) + p.delay(e, s.unit[e.from], s.unit[e.to]);
        if s.start[e.to] + EPS < ready {
            return Err(Violation::EarlyStart { from: name(e.from), to: name(e.to), start: s.start[e.to], ready });
        }
    }
    let mut by_unit: Vec<Vec<usize>> = vec![Vec::new(); p.units()];
    for i in 0..n {
        by_unit[s.unit[i]].push(i);
    }
    for (u, tasks) in by_unit.iter_mut().enumerate() {
        // Zero-length tasks occupy no time and cannot overlap anything.
        tasks.retain(|&i| p.duration(dag, i, u) > 0.0);
        tasks.sort_by(|&a, &b| s.start[a].total_cmp(&s.start[b]));
        for w in tasks.windows(2) {
            if s.start[w[1]] + EPS < s.finish(dag, p, w[0]) {
                return Err(Violation::Overlap { unit: u, a: name(w[0]), b: name(w[1]) });
            }
        }
    }
    Ok(s.makespan(dag, p))
}
