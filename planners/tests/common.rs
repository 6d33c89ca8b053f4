//! Helpers shared by the planner tests: the STG subset shipped with the
//! tests, a tiny deterministic generator, and brute-force optima.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_planners::dag::{Dag, Edge, Task};
use baton_planners::platform::Platform;
use baton_planners::stg;

pub fn stg_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stg")
}

/// The shipped STG subset for `m` processors: (file key, graph, optimum).
pub fn stg_subset(m: usize) -> Vec<(String, Dag, stg::Optimum)> {
    let optima: BTreeMap<String, stg::Optimum> =
        stg::load_optima(&stg_dir().join(format!("Case50_{m}_OPT.csv"))).unwrap();
    optima.into_iter().map(|(k, o)| (k.clone(), stg::load(&stg_dir().join(&k)).unwrap(), o)).collect()
}

pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A random DAG of `n` tasks (edges only from lower to higher index) with
/// integer times 1..=9 and transfer times 0..=3.
pub fn random_dag(rng: &mut Rng, n: usize, transfers: bool) -> Dag {
    let tasks = (0..n)
        .map(|i| Task { name: format!("t{i}"), cost: 1.0 + rng.below(9) as f64, memory: 1.0 + rng.below(3) as f64 })
        .collect();
    let mut edges = Vec::new();
    for j in 1..n {
        for i in 0..j {
            if rng.below(3) == 0 {
                let transfer = if transfers { rng.below(4) as f64 } else { 0.0 };
                edges.push(Edge { from: i, to: j, transfer, data: String::new() });
            }
        }
    }
    Dag::new(tasks, edges).unwrap()
}

/// The exact optimal makespan by enumeration: every assignment of tasks to
/// units and every topological order, each replayed as early as possible.
/// (Replaying an optimal schedule's start order this way never starts a task
/// later, so the minimum is the optimum.) Assignments breaking `memory` are
/// skipped; `None` when none fits.
pub fn brute_makespan(dag: &Dag, p: &Platform) -> Option<f64> {
    let n = dag.len();
    let h = p.units();
    let orders = topo_orders(dag);
    let mut best: Option<f64> = None;
    for code in 0..h.pow(n as u32) {
        let unit: Vec<usize> = (0..n).map(|i| (code / h.pow(i as u32)) % h).collect();
        let mut used = vec![0.0; h];
        for i in 0..n {
            used[unit[i]] += dag.tasks[i].memory;
        }
        if (0..h).any(|u| used[u] > p.capacity(u)) {
            continue;
        }
        for order in &orders {
            let mut free = vec![0.0f64; h];
            let mut fin = vec![0.0f64; n];
            for &i in order {
                let u = unit[i];
                let mut t = free[u];
                for &k in dag.in_edges(i) {
                    let e = &dag.edges[k];
                    t = t.max(fin[e.from] + p.delay(e, unit[e.from], u));
                }
                fin[i] = t + p.duration(dag, i, u);
                free[u] = fin[i];
            }
            let m = fin.iter().copied().fold(0.0, f64::max);
            if best.is_none_or(|b| m < b) {
                best = Some(m);
            }
        }
    }
    best
}

/// The smallest possible largest load over all assignments (memory respected).
pub fn brute_period(dag: &Dag, p: &Platform) -> Option<f64> {
    let n = dag.len();
    let h = p.units();
    let mut best: Option<f64> = None;
    for code in 0..h.pow(n as u32) {
        let unit: Vec<usize> = (0..n).map(|i| (code / h.pow(i as u32)) % h).collect();
        let (mut load, mut used) = (vec![0.0; h], vec![0.0; h]);
        for i in 0..n {
            load[unit[i]] += p.duration(dag, i, unit[i]);
            used[unit[i]] += dag.tasks[i].memory;
        }
        if (0..h).any(|u| used[u] > p.capacity(u)) {
            continue;
        }
        let m = load.into_iter().fold(0.0, f64::max);
        if best.is_none_or(|b| m < b) {
            best = Some(m);
        }
    }
    best
}

fn topo_orders(dag: &Dag) -> Vec<Vec<usize>> {
    fn rec(dag: &Dag, waiting: &mut Vec<usize>, done: &mut Vec<bool>, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == dag.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..dag.len() {
            if !done[i] && waiting[i] == 0 {
                done[i] = true;
                cur.push(i);
                for &k in dag.out_edges(i) {
                    waiting[dag.edges[k].to] -= 1;
                }
                rec(dag, waiting, done, cur, out);
                for &k in dag.out_edges(i) {
                    waiting[dag.edges[k].to] += 1;
                }
                cur.pop();
                done[i] = false;
            }
        }
    }
    let mut waiting: Vec<usize> = (0..dag.len()).map(|i| dag.in_edges(i).len()).collect();
    let mut out = Vec::new();
    rec(dag, &mut waiting, &mut vec![false; dag.len()], &mut Vec::new(), &mut out);
    out
}
