//! The processing units a DAG is planned onto: how many, how long each task
//! takes on each unit (identical units, or a per-unit duration table), the
//! communication delay between two units, and each unit's memory capacity.

use crate::dag::{Dag, Edge};

/// Processing units (workers, core groups, devices).
#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    pub names: Vec<String>,
    /// `durations[task][unit]`; empty: every unit takes the task's own cost.
    pub durations: Vec<Vec<f64>>,
    /// `comm[a][b]` multiplies an edge's transfer time when it crosses from
    /// unit `a` to unit `b != a`; empty: factor 1 between any two units.
    pub comm: Vec<Vec<f64>>,
    /// Memory capacity of each unit; empty: unlimited.
    pub memory: Vec<f64>,
}

impl Platform {
    /// `h` identical units named `0..h`, unlimited memory, factor-1 transfers.
    pub fn identical(h: usize) -> Platform {
        Platform { names: (0..h).map(|u| u.to_string()).collect(), durations: vec![], comm: vec![], memory: vec![] }
    }

    pub fn units(&self) -> usize {
        self.names.len()
    }

    /// Whether all units are interchangeable (same durations, symmetric
    /// uniform communication, no memory limit).
    pub fn is_identical(&self) -> bool {
        self.durations.is_empty()
            && self.memory.is_empty()
            && self.comm.iter().enumerate().all(|(a, row)| row.iter().enumerate().all(|(b, &f)| a == b || f == 1.0))
    }

    /// Time task `i` takes on unit `u`.
    pub fn duration(&self, dag: &Dag, i: usize, u: usize) -> f64 {
        if self.durations.is_empty() {
            dag.tasks[i].cost
        } else {
            self.durations[i][u]
        }
    }

    /// Smallest duration of task `i` over all units.
    pub fn min_duration(&self, dag: &Dag, i: usize) -> f64 {
        (0..self.units()).map(|u| self.duration(dag, i, u)).fold(f64::INFINITY, f64::min)
    }

    /// Mean duration of task `i` over all units.
    pub fn mean_duration(&self, dag: &Dag, i: usize) -> f64 {
        (0..self.units()).map(|u| self.duration(dag, i, u)).sum::<f64>() / self.units() as f64
    }

    /// Delay for the data of edge `e` from unit `a` to unit `b`.
    pub fn delay(&self, e: &Edge, a: usize, b: usize) -> f64 {
        if a == b {
            0.0
        } else if self.comm.is_empty() {
            e.transfer
        } else {
            e.transfer * self.comm[a][b]
        }
    }

    /// Memory capacity of unit `u` (infinite when unlimited).
    pub fn capacity(&self, u: usize) -> f64 {
        self.memory.get(u).copied().unwrap_or(f64::INFINITY)
    }

    /// Checks the table shapes against the DAG.
    pub fn check(&self, dag: &Dag) -> Result<(), String> {
        let h = self.units();
        if h == 0 {
            return Err("there must be at least one processing unit".into());
        }
        if !self.durations.is_empty()
            && (self.durations.len() != dag.len() || self.durations.iter().any(|r| r.len() != h))
        {
            return Err(format!("the duration table must be {} tasks x {h} units", dag.len()));
        }
        if !self.comm.is_empty() && (self.comm.len() != h || self.comm.iter().any(|r| r.len() != h)) {
            return Err(format!("the communication table must be {h} x {h}"));
        }
        if !self.memory.is_empty() && self.memory.len() != h {
            return Err(format!("the memory capacities must list {h} units"));
        }
        Ok(())
    }
}
