//! The task graph every planner works on: tasks with execution times, edges
//! with transfer times (paid only when the two endpoints run on different
//! processing units), and graph helpers (topological order, levels).

use std::fmt;

/// One task (operation, pipeline node) of a DAG.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub name: String,
    /// Execution time on one processing unit.
    pub cost: f64,
    /// Memory the task needs on the unit it runs on (bytes or any unit the
    /// capacities use); 0 when unknown.
    pub memory: f64,
}

/// A dependency: `to` consumes data produced by `from`.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    /// Time to move the data between two different units (0 on the same unit).
    pub transfer: f64,
    /// Name of the data item, when the input format gives one.
    pub data: String,
}

/// A directed acyclic task graph (acyclicity is checked by [`Dag::new`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dag {
    pub tasks: Vec<Task>,
    pub edges: Vec<Edge>,
    preds: Vec<Vec<usize>>,
    succs: Vec<Vec<usize>>,
    topo: Vec<usize>,
}

/// Why a graph is not a DAG the planners accept.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DagError {
    #[error("edge {from} -> {to} names a task that does not exist ({n} tasks)")]
    UnknownTask { from: usize, to: usize, n: usize },
    #[error("edge {0} -> {0} is a self-loop")]
    SelfLoop(usize),
    #[error("the graph has a cycle through task `{0}`")]
    Cycle(String),
    #[error("task `{0}` has a negative or non-finite time")]
    BadCost(String),
}

impl Dag {
    /// Builds a DAG, checking indices, costs and acyclicity.
    pub fn new(tasks: Vec<Task>, edges: Vec<Edge>) -> Result<Dag, DagError> {
        let n = tasks.len();
        for t in &tasks {
            if !(t.cost.is_finite() && t.cost >= 0.0 && t.memory.is_finite() && t.memory >= 0.0) {
                return Err(DagError::BadCost(t.name.clone()));
            }
        }
        let mut preds = vec![Vec::new(); n];
        let mut succs = vec![Vec::new(); n];
        for (k, e) in edges.iter().enumerate() {
            if e.from >= n || e.to >= n {
                return Err(DagError::UnknownTask { from: e.from, to: e.to, n });
            }
            if e.from == e.to {
                return Err(DagError::SelfLoop(e.from));
            }
            if !(e.transfer.is_finite() && e.transfer >= 0.0) {
                return Err(DagError::BadCost(format!("{} -> {}", e.from, e.to)));
            }
            preds[e.to].push(k);
            succs[e.from].push(k);
        }
        // Kahn's algorithm, smallest index first so the order is deterministic.
        let mut indeg: Vec<usize> = preds.iter().map(Vec::len).collect();
        let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut topo = Vec::with_capacity(n);
        while let Some(i) = ready.pop_first() {
            topo.push(i);
            for &k in &succs[i] {
                let j = edges[k].to;
                indeg[j] -= 1;
                if indeg[j] == 0 {
                    ready.insert(j);
                }
            }
        }
        if topo.len() < n {
            let stuck = (0..n).find(|&i| indeg[i] > 0).unwrap_or(0);
            return Err(DagError::Cycle(tasks[stuck].name.clone()));
        }
        Ok(Dag { tasks, edges, preds, succs, topo })
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Indices (into `edges`) of the edges entering task `i`.
    pub fn in_edges(&self, i: usize) -> &[usize] {
        &self.preds[i]
    }

    /// Indices (into `edges`) of the edges leaving task `i`.
    pub fn out_edges(&self, i: usize) -> &[usize] {
        &self.succs[i]
    }

    /// Tasks in a topological order (deterministic).
    pub fn topo_order(&self) -> &[usize] {
        &self.topo
    }

    /// Sum of all execution times.
    pub fn total_cost(&self) -> f64 {
        self.tasks.iter().map(|t| t.cost).sum()
    }

    /// Largest single execution time.
    pub fn max_cost(&self) -> f64 {
        self.tasks.iter().map(|t| t.cost).fold(0.0, f64::max)
    }

    /// Whether every execution and transfer time is a whole number.
    pub fn is_integral(&self) -> bool {
        self.tasks.iter().all(|t| t.cost.fract() == 0.0) && self.edges.iter().all(|e| e.transfer.fract() == 0.0)
    }

    /// Whether some edge has a non-zero transfer time.
    pub fn has_transfers(&self) -> bool {
        self.edges.iter().any(|e| e.transfer > 0.0)
    }

    /// Bottom level of each task under `cost`: the longest path from the task's
    /// start to the end of the graph, the task's own time included; transfer
    /// times are counted when `with_transfers`.
    pub fn bottom_levels(&self, cost: impl Fn(usize) -> f64, with_transfers: bool) -> Vec<f64> {
        let mut bl = vec![0.0; self.len()];
        for &i in self.topo.iter().rev() {
            let tail = self.succs[i]
                .iter()
                .map(|&k| {
                    let e = &self.edges[k];
                    bl[e.to] + if with_transfers { e.transfer } else { 0.0 }
                })
                .fold(0.0, f64::max);
            bl[i] = cost(i) + tail;
        }
        bl
    }

    /// Top level of each task under `cost`: the earliest start when every task
    /// had its own unit and transfers were free.
    pub fn top_levels(&self, cost: impl Fn(usize) -> f64) -> Vec<f64> {
        let mut tl = vec![0.0; self.len()];
        for &i in &self.topo {
            for &k in &self.succs[i] {
                let j = self.edges[k].to;
                tl[j] = f64::max(tl[j], tl[i] + cost(i));
            }
        }
        tl
    }

    /// Length of the critical path (execution times only).
    pub fn critical_path(&self) -> f64 {
        self.bottom_levels(|i| self.tasks[i].cost, false).into_iter().fold(0.0, f64::max)
    }

    /// The graph with every edge reversed (same task indices).
    pub fn reversed(&self) -> Dag {
        let edges = self
            .edges
            .iter()
            .map(|e| Edge { from: e.to, to: e.from, transfer: e.transfer, data: e.data.clone() })
            .collect();
        Dag::new(self.tasks.clone(), edges).expect("the reverse of a DAG is a DAG")
    }

    /// `reach[i][j]`: whether there is a path from `i` to `j` (i != j).
    pub fn reachability(&self) -> Vec<Vec<bool>> {
        let n = self.len();
        let mut reach = vec![vec![false; n]; n];
        for &i in self.topo.iter().rev() {
            for &k in &self.succs[i] {
                let j = self.edges[k].to;
                reach[i][j] = true;
                let below = reach[j].clone();
                for (r, b) in reach[i].iter_mut().zip(below) {
                    *r |= b;
                }
            }
        }
        reach
    }
}

impl fmt::Display for Dag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tasks, {} edges, total time {}, critical path {}",
            self.len(),
            self.edges.len(),
            self.total_cost(),
            self.critical_path()
        )
    }
}

/// Shorthand for building test and example graphs: `(name, cost)` tasks and
/// `(from, to, transfer)` edges.
pub fn dag_from(tasks: &[(&str, f64)], edges: &[(usize, usize, f64)]) -> Result<Dag, DagError> {
    Dag::new(
        tasks.iter().map(|&(name, cost)| Task { name: name.to_string(), cost, memory: 0.0 }).collect(),
        edges.iter().map(|&(from, to, transfer)| Edge { from, to, transfer, data: String::new() }).collect(),
    )
}
