//! Periodic schedule of a repeated DAG on `h` identical units.
//!
//! One period holds `X` independent samples of the DAG. All `X * n` task
//! instances are sorted by execution time, longest first, and each goes to the
//! unit with the least finish time so far (ties to the lowest unit); then a
//! local improvement moves or swaps instances off the most loaded unit while
//! that lowers it. The period is the largest finish and the utilization
//! `U = X * sum(c) / (h * period)`.
//! `X` grows from 1 until `U` passes the threshold, else the `X <= x_max` of
//! highest `U` is kept. Dependencies are then restored across periods by
//! retiming ([`crate::retime`]). Steady state: `X` samples finish every period.
//! Every plan is replayed by [`verify`] before it is returned.

use crate::dag::{Dag, Edge, Task};
use crate::platform::Platform;
use crate::retime::{stages, Slot};
use crate::simulate::{self, Schedule, Violation, EPS};

/// Search settings.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Largest number of samples per period tried.
    pub x_max: usize,
    /// Stop growing `X` once the utilization exceeds this.
    pub threshold: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options { x_max: 8, threshold: 0.99 }
    }
}

/// One `X` tried.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Trial {
    pub x: usize,
    pub period: f64,
    pub utilization: f64,
}

/// One task instance of the period.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Instance {
    pub task: usize,
    /// Which of the period's `X` samples.
    pub sample: usize,
    pub unit: usize,
    /// Start offset within the period.
    pub offset: f64,
    /// Periods after its sample batch entered the pipeline.
    pub stage: u64,
    /// `depth - 1 - stage`: periods earlier than the last stage.
    pub retiming: u64,
}

/// A periodic plan: `x` samples every `period` on `units` units.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PeriodicPlan {
    pub units: usize,
    pub x: usize,
    pub period: f64,
    pub utilization: f64,
    /// Number of periods one sample spends in the pipeline (max stage + 1).
    pub depth: u64,
    /// Instances ordered by (sample, task).
    pub instances: Vec<Instance>,
    pub trials: Vec<Trial>,
}

impl PeriodicPlan {
    /// Samples completed per time unit in steady state.
    pub fn throughput(&self) -> f64 {
        self.x as f64 / self.period
    }

    /// Time one sample takes through the pipeline, first stage start to last
    /// finish (bounded by `depth * period`).
    pub fn latency(&self, dag: &Dag) -> f64 {
        let mut worst = 0.0f64;
        for k in 0..self.x {
            let of = |i: &Instance| i.stage as f64 * self.period + i.offset;
            let mine = self.instances.iter().filter(|i| i.sample == k);
            let first = mine.clone().map(of).fold(f64::INFINITY, f64::min);
            let last = mine.map(|i| of(i) + dag.tasks[i.task].cost).fold(0.0, f64::max);
            worst = worst.max(last - first);
        }
        worst
    }
}

/// Longest-processing-time-first packing of `x` copies onto `h` units,
/// then improved: `(slots[sample][task], period)`.
fn pack(dag: &Dag, h: usize, x: usize) -> (Vec<Vec<Slot>>, f64) {
    let n = dag.len();
    let cost = |&(_, t): &(usize, usize)| dag.tasks[t].cost;
    let mut order: Vec<(usize, usize)> = (0..x).flat_map(|k| (0..n).map(move |t| (k, t))).collect();
    order.sort_by(|a, b| cost(b).total_cmp(&cost(a)).then(a.cmp(b)));
    let mut load = vec![0.0f64; h];
    let mut on: Vec<Vec<(usize, usize)>> = vec![Vec::new(); h];
    for inst in order {
        let u = (0..h).min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b))).expect("h >= 1");
        load[u] += cost(&inst);
        on[u].push(inst);
    }
    improve(&mut on, &mut load, cost);
    let mut slots = vec![vec![Slot { unit: 0, offset: 0.0 }; n]; x];
    for (u, insts) in on.iter_mut().enumerate() {
        // Longest first within a unit, as the list order placed them.
        insts.sort_by(|a, b| cost(b).total_cmp(&cost(a)).then(a.cmp(b)));
        let mut t = 0.0;
        for &(k, task) in insts.iter() {
            slots[k][task] = Slot { unit: u, offset: t };
            t += dag.tasks[task].cost;
        }
    }
    (slots, load.into_iter().fold(0.0, f64::max))
}

/// Local improvement of a packing: while some move of one instance off the
/// most loaded unit, or swap of one of its instances with a shorter one
/// elsewhere, lowers that unit's load without raising the other unit to it,
/// apply the best such move. Each step lowers the sorted load vector, so this
/// ends; it is bounded anyway.
fn improve<I: Copy>(on: &mut [Vec<I>], load: &mut [f64], cost: impl Fn(&I) -> f64) {
    let h = load.len();
    for _ in 0..10_000 {
        let top = (0..h).max_by(|&a, &b| load[a].total_cmp(&load[b]).then(b.cmp(&a))).expect("h >= 1");
        // (new max of the two units, unit v, index on top, index on v or None for a move)
        let mut best: Option<(f64, usize, usize, Option<usize>)> = None;
        for v in (0..h).filter(|&v| v != top) {
            for (a, ia) in on[top].iter().enumerate() {
                let ca = cost(ia);
                let mut consider = |delta: f64, b: Option<usize>| {
                    let (nt, nv) = (load[top] - delta, load[v] + delta);
                    let worst = nt.max(nv);
                    if delta > EPS && worst < load[top] - EPS && best.is_none_or(|bb| worst < bb.0 - EPS) {
                        best = Some((worst, v, a, b));
                    }
                };
                consider(ca, None);
                for (b, ib) in on[v].iter().enumerate() {
                    consider(ca - cost(ib), Some(b));
                }
            }
        }
        let Some((_, v, a, b)) = best else { return };
        let ia = on[top].swap_remove(a);
        let ca = cost(&ia);
        load[top] -= ca;
        load[v] += ca;
        if let Some(b) = b {
            let ib = on[v].swap_remove(b);
            load[v] -= cost(&ib);
            load[top] += cost(&ib);
            on[top].push(ib);
        }
        on[v].push(ia);
    }
}

/// Plans `dag` repeated on `h` identical units.
pub fn plan(dag: &Dag, h: usize, opts: Options) -> Result<PeriodicPlan, String> {
    if h == 0 || opts.x_max == 0 {
        return Err("need at least one unit and x_max >= 1".into());
    }
    let work = dag.total_cost();
    if work <= 0.0 {
        return Err("the DAG has no work (all times are 0)".into());
    }
    let mut trials = Vec::new();
    let mut best: Option<(f64, usize, Vec<Vec<Slot>>, f64)> = None;
    for x in 1..=opts.x_max {
        let (slots, period) = pack(dag, h, x);
        let u = x as f64 * work / (h as f64 * period);
        trials.push(Trial { x, period, utilization: u });
        if best.as_ref().is_none_or(|b| u > b.0 + EPS) {
            best = Some((u, x, slots, period));
        }
        if u > opts.threshold {
            break;
        }
    }
    let (utilization, x, slots, period) = best.expect("x_max >= 1");
    let mut instances = Vec::with_capacity(x * dag.len());
    let mut depth = 1;
    for (k, row) in slots.iter().enumerate() {
        let st = stages(dag, row, period);
        for (t, slot) in row.iter().enumerate() {
            depth = depth.max(st[t] + 1);
            instances.push(Instance {
                task: t,
                sample: k,
                unit: slot.unit,
                offset: slot.offset,
                stage: st[t],
                retiming: 0,
            });
        }
    }
    for i in &mut instances {
        i.retiming = depth - 1 - i.stage;
    }
    let plan = PeriodicPlan { units: h, x, period, utilization, depth, instances, trials };
    if let Err(v) = verify(dag, &plan) {
        panic!("the periodic planner produced an illegal schedule: {v}");
    }
    Ok(plan)
}

/// Replays a periodic plan over `depth + 1` consecutive sample batches as one
/// flat schedule (instance of batch `b` at `(b + stage) * period + offset`)
/// and checks it with [`simulate::verify`]: unit conflicts within and across
/// periods, every dependency with its transfer time. Also checks that every
/// instance fits inside its period.
pub fn verify(dag: &Dag, plan: &PeriodicPlan) -> Result<(), Violation> {
    let n = dag.len();
    if plan.instances.len() != plan.x * n {
        return Err(Violation::Size { got: plan.instances.len(), want: plan.x * n });
    }
    for i in &plan.instances {
        if i.offset < -EPS || i.offset + dag.tasks[i.task].cost > plan.period + EPS {
            return Err(Violation::BadTime { task: dag.tasks[i.task].name.clone(), start: i.offset });
        }
    }
    let batches = plan.depth as usize + 1;
    let copies = batches * plan.x;
    let mut tasks = Vec::with_capacity(copies * n);
    let mut edges = Vec::new();
    let mut unit = vec![0; copies * n];
    let mut start = vec![0.0; copies * n];
    for c in 0..copies {
        for t in &dag.tasks {
            tasks.push(Task { name: format!("{}#{c}", t.name), cost: t.cost, memory: 0.0 });
        }
        edges.extend(dag.edges.iter().map(|e| Edge { from: c * n + e.from, to: c * n + e.to, ..e.clone() }));
    }
    let mut seen = vec![false; plan.x * n];
    for i in &plan.instances {
        if i.task >= n || i.sample >= plan.x || std::mem::replace(&mut seen[i.sample * n + i.task], true) {
            return Err(Violation::Size { got: i.task, want: n });
        }
        for b in 0..batches {
            let idx = (b * plan.x + i.sample) * n + i.task;
            unit[idx] = i.unit;
            start[idx] = (b as u64 + i.stage) as f64 * plan.period + i.offset;
        }
    }
    let flat = Dag::new(tasks, edges).expect("copies of a DAG form a DAG");
    simulate::verify(&flat, &Platform::identical(plan.units), &Schedule { unit, start }).map(|_| ())
}
