//! Placement of a pipeline's nodes from their profiles: an exact MILP (HiGHS
//! through good_lp, one thread, fixed seed) choosing each node's provider (the
//! CPU cores or the one GPU) and its worker count.
//!
//! **Inputs.** For each node `i` and each provider `p` it was profiled on
//! ([`Choice`]): `r_ip`, its time per row at its best profiled batch (the least
//! median ÷ batch, µs); `l_ip`, its batch time at its smallest profiled batch
//! (µs: a lone request's time through it); on CUDA `m_i`, the device memory its
//! sessions hold (bytes). `k_i`, the cores one CPU worker of node `i` takes (its
//! `intra_threads`). The machine ([`Machine`]): `C` cores, one GPU with `M`
//! bytes of memory (optional).
//!
//! **Variables.** Binary `y[i][w]`: node `i` on the CPU with `w` workers,
//! `1 <= w <= C / k_i`; binary `g[i]`: node `i` on the GPU with one worker (the
//! device runs one batch at a time in this model, so more workers buy nothing).
//!
//! **Constraints.**
//! - one choice per node: `sum_w y[i][w] + g[i] = 1`;
//! - CPU workers get disjoint cores: `sum_i sum_w k_i w y[i][w] <= C`;
//! - device memory: `sum_i m_i g[i] <= M`.
//!
//! **Objectives** (µs):
//! - *period*, the pipeline's time per row in steady state (its throughput is
//!   1 / period): the busiest resource's load. Each CPU node is a resource of
//!   its own (its workers on their own cores): `P >= sum_w (r_i,cpu / w) y[i][w]`;
//!   the GPU is one resource the GPU nodes share: `P >= sum_i r_i,cuda g[i]`.
//! - *latency*, the critical path of the nodes' batch times: `d_i = sum_p l_ip
//!   [i on p]`, `f_i >= d_i`, `f_i >= f_j + d_i` for each edge `j -> i`, `L >= f_i`.
//!
//! Solved lexicographically: the chosen objective; then, holding it, the other
//! one; then, holding both, the sum of the nodes' loads (spare cores go to the
//! nodes they shorten most). The reported period and latency are evaluated
//! from the chosen placement ([`evaluate`]), not read from the solver.
//!
//! Not modelled: copies between host and device (a GPU node's profiled time
//! holds its own), the host CPU a GPU node's worker uses (its function stages
//! are in its profiled time, charged to the GPU), more than one GPU, and
//! batches smaller than the best one under light load.

use std::collections::BTreeMap;
use std::time::Instant;

use good_lp::{variable, Expression, ProblemVariables, Variable};

use crate::deadline;
use crate::ilp::run_highs;
use crate::pipeline::{NodeGraph, NodeProfile, Profile, Provider};

/// One way to run a node: its provider and what the profile measured there.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub provider: Provider,
    /// Time per row at the best profiled batch, µs (`r_ip`).
    pub row_us: f64,
    /// The batch size `row_us` was measured at.
    pub best_batch: usize,
    /// Batch time at the smallest profiled batch, µs (`l_ip`).
    pub latency_us: f64,
    /// Device memory the node holds on this provider, bytes (0 on the CPU).
    pub device_memory: u64,
}

impl Choice {
    /// The choice a node's measurement on one provider gives; an error when it holds no usable timing.
    pub fn from_profile(node: &str, np: &NodeProfile) -> Result<Choice, String> {
        let bad = np.batches.iter().find(|b| b.batch == 0 || !(b.median_us.is_finite() && b.median_us > 0.0));
        if let Some(b) = bad {
            return Err(format!(
                "node `{node}` on {}: batch {} has median {} µs; batch sizes must be >= 1 and times > 0",
                np.provider, b.batch, b.median_us
            ));
        }
        let best = np
            .batches
            .iter()
            .min_by(|a, b| (a.median_us / a.batch as f64).total_cmp(&(b.median_us / b.batch as f64)))
            .ok_or_else(|| format!("node `{node}` on {} has no batch timings", np.provider))?;
        let smallest = np.batches.iter().min_by_key(|b| b.batch).expect("batches are not empty");
        Ok(Choice {
            provider: np.provider,
            row_us: best.median_us / best.batch as f64,
            best_batch: best.batch,
            latency_us: smallest.median_us,
            device_memory: if np.provider == Provider::Cpu { 0 } else { np.device_memory() },
        })
    }
}

/// One node to place.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaceNode {
    pub name: String,
    /// At most one per provider.
    pub choices: Vec<Choice>,
    /// Cores one CPU worker takes (`k_i`, at least 1).
    pub cores_per_worker: usize,
}

/// What the nodes are placed on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Cores for CPU workers (`C`).
    pub cores: usize,
    /// Memory of the GPU, bytes (`M`; `None`: no limit).
    pub device_memory: Option<u64>,
}

/// What the placement minimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objective {
    /// Steady-state time per row (the inverse of throughput).
    Period,
    /// Critical path of the nodes' batch times.
    Latency,
}

/// A placement problem: nodes, their edges (`(from, to)` indices), the machine, the objective.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub nodes: Vec<PlaceNode>,
    pub edges: Vec<(usize, usize)>,
    pub machine: Machine,
    pub objective: Objective,
}

/// Where one node runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub name: String,
    pub provider: Provider,
    pub workers: usize,
    /// CPU nodes: the cores of their workers (disjoint across nodes); GPU nodes: empty.
    pub cores: Vec<usize>,
    /// The node's load, µs per row (`r / workers` on the CPU, `r` on the GPU).
    pub load_us: f64,
    /// Its batch time on the critical path, µs (`l`).
    pub latency_us: f64,
}

/// A solved placement, its period and latency evaluated from the choice.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// In the problem's node order.
    pub nodes: Vec<Placed>,
    /// µs per row.
    pub period_us: f64,
    /// µs.
    pub latency_us: f64,
    /// Device memory the GPU nodes hold, bytes.
    pub device_memory: u64,
    pub cores_used: usize,
    /// Every phase reached proven optimality (not stopped by the time limit).
    pub optimal: bool,
}

/// The placement problem's nodes from a profile: for each node of `graph`, a
/// choice per provider in `allowed` the profile measured it on. `cores_per_worker`
/// gives nodes' `intra_threads` (absent: 1). Errors name the node and what is
/// missing: a node the profile lacks, a profiled node the pipeline lacks, a
/// provider in `allowed` no node was measured on, a node measured on none of them.
pub fn nodes_from_profile(
    graph: &NodeGraph,
    profile: &Profile,
    allowed: &[Provider],
    cores_per_worker: &BTreeMap<String, usize>,
) -> Result<Vec<PlaceNode>, String> {
    if let Some(extra) = profile.nodes.keys().find(|n| !graph.nodes.contains(n)) {
        return Err(format!(
            "the profile has node `{extra}`, which the pipeline has not (pipeline nodes: {}): is it this pipeline's profile?",
            graph.nodes.join(", ")
        ));
    }
    let measured: Vec<Provider> =
        Provider::ALL.into_iter().filter(|p| graph.nodes.iter().any(|n| has(profile, n, *p))).collect();
    for p in allowed {
        if !measured.contains(p) {
            return Err(format!(
                "the profile measured no node on `{p}` (it has: {}); profile the pipeline with `baton profile --providers {}`",
                names(&measured),
                names(&[&measured[..], &[*p]].concat()).replace(", ", ",")
            ));
        }
    }
    graph
        .nodes
        .iter()
        .map(|n| {
            let all = profile.measurements(n);
            if all.is_empty() {
                return Err(format!(
                    "the profile has no entry for node `{n}` (profile the pipeline with `baton profile`)"
                ));
            }
            let mut choices = Vec::new();
            for np in all.into_iter().filter(|np| allowed.contains(&np.provider)) {
                if choices.iter().any(|c: &Choice| c.provider == np.provider) {
                    return Err(format!("the profile measures node `{n}` on {} twice", np.provider));
                }
                choices.push(Choice::from_profile(n, np)?);
            }
            if choices.is_empty() {
                let on: Vec<Provider> = profile.measurements(n).iter().map(|np| np.provider).collect();
                return Err(format!(
                    "node `{n}` was measured on {} only, none of the allowed providers ({})",
                    names(&on),
                    names(allowed)
                ));
            }
            let k = cores_per_worker.get(n).copied().unwrap_or(1).max(1);
            Ok(PlaceNode { name: n.clone(), choices, cores_per_worker: k })
        })
        .collect()
}

fn has(profile: &Profile, node: &str, p: Provider) -> bool {
    profile.measurements(node).iter().any(|np| np.provider == p)
}

fn names(ps: &[Provider]) -> String {
    let v: Vec<&str> = ps.iter().map(|p| p.name()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// One node's decision: `Some(w)` CPU with `w` workers, `None` the GPU.
pub type Decision = Option<usize>;

/// The placement a set of decisions gives: cores handed out in node order from
/// core 0, loads, period, latency and device memory computed from the profile.
pub fn evaluate(p: &Problem, decisions: &[Decision]) -> Placement {
    let mut next_core = 0;
    let mut gpu_load = 0.0;
    let mut device_memory = 0;
    let mut nodes = Vec::with_capacity(p.nodes.len());
    for (node, d) in p.nodes.iter().zip(decisions) {
        let provider = if d.is_some() { Provider::Cpu } else { Provider::Cuda };
        let c = node.choices.iter().find(|c| c.provider == provider).expect("decisions use the node's choices");
        let (workers, cores, load) = match *d {
            Some(w) => {
                let n = w * node.cores_per_worker;
                next_core += n;
                (w, (next_core - n..next_core).collect(), c.row_us / w as f64)
            }
            None => {
                gpu_load += c.row_us;
                device_memory += c.device_memory;
                (1, Vec::new(), c.row_us)
            }
        };
        nodes.push(Placed {
            name: node.name.clone(),
            provider,
            workers,
            cores,
            load_us: load,
            latency_us: c.latency_us,
        });
    }
    let cpu_peak = nodes.iter().filter(|n| n.provider == Provider::Cpu).map(|n| n.load_us).fold(0.0, f64::max);
    let mut finish = vec![0.0f64; nodes.len()];
    for i in topological(nodes.len(), &p.edges) {
        let ready = p.edges.iter().filter(|&&(_, t)| t == i).map(|&(f, _)| finish[f]).fold(0.0, f64::max);
        finish[i] = ready + nodes[i].latency_us;
    }
    Placement {
        period_us: cpu_peak.max(gpu_load),
        latency_us: finish.iter().copied().fold(0.0, f64::max),
        device_memory,
        cores_used: next_core,
        nodes,
        optimal: true,
    }
}

/// Node indices in an order where every edge goes forward (the pipeline's graph is acyclic).
fn topological(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut indegree = vec![0; n];
    for &(_, t) in edges {
        indegree[t] += 1;
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        order.push(i);
        for &(f, t) in edges {
            if f == i {
                indegree[t] -= 1;
                if indegree[t] == 0 {
                    ready.push(t);
                }
            }
        }
    }
    order
}

/// The model's variables, with their column indices (creation order).
struct Model {
    vars: ProblemVariables,
    columns: usize,
    /// Per node: `(w, y[i][w], column)` for its CPU choice.
    cpu: Vec<Vec<(usize, Variable, usize)>>,
    /// Per node: `(g[i], column)` for its GPU choice.
    gpu: Vec<Option<(Variable, usize)>>,
    period: Expression,
    latency: Expression,
    loads: Expression,
    constraints: Vec<good_lp::Constraint>,
}

impl Model {
    fn add(&mut self, def: good_lp::variable::VariableDefinition) -> (Variable, usize) {
        self.columns += 1;
        (self.vars.add(def), self.columns - 1)
    }

    /// Variables and constraints of the module docs, for `p`.
    fn new(p: &Problem) -> Model {
        let mut m = Model {
            vars: ProblemVariables::new(),
            columns: 0,
            cpu: Vec::new(),
            gpu: Vec::new(),
            period: Expression::from(0.0),
            latency: Expression::from(0.0),
            loads: Expression::from(0.0),
            constraints: Vec::new(),
        };
        let (period, _) = m.add(variable().min(0.0));
        let (latency, _) = m.add(variable().min(0.0));
        let mut cores = Expression::from(0.0);
        let mut gpu_load = Expression::from(0.0);
        let mut device_memory = Expression::from(0.0);
        let mut durations = Vec::new();
        for node in &p.nodes {
            let mut one = Expression::from(0.0);
            let mut load = Expression::from(0.0);
            let mut duration = Expression::from(0.0);
            let mut cpu = Vec::new();
            let mut gpu = None;
            for c in &node.choices {
                match c.provider {
                    Provider::Cpu => {
                        for w in 1..=p.machine.cores / node.cores_per_worker {
                            let (y, col) = m.add(variable().binary());
                            one += y;
                            load += (c.row_us / w as f64) * y;
                            duration += c.latency_us * y;
                            cores += (w * node.cores_per_worker) as f64 * y;
                            cpu.push((w, y, col));
                        }
                    }
                    Provider::Cuda => {
                        let (g, col) = m.add(variable().binary());
                        one += g;
                        duration += c.latency_us * g;
                        gpu_load += c.row_us * g;
                        device_memory += c.device_memory as f64 * g;
                        m.loads += c.row_us * g;
                        gpu = Some((g, col));
                    }
                }
            }
            m.constraints.push(one.eq(1.0));
            m.loads += load.clone();
            m.constraints.push(load.leq(period));
            m.cpu.push(cpu);
            m.gpu.push(gpu);
            durations.push(duration);
        }
        m.constraints.push(cores.leq(p.machine.cores as f64));
        m.constraints.push(gpu_load.leq(period));
        if let Some(limit) = p.machine.device_memory {
            m.constraints.push(device_memory.leq(limit as f64));
        }
        let finish: Vec<Variable> = durations.iter().map(|_| m.add(variable().min(0.0)).0).collect();
        for (i, d) in durations.into_iter().enumerate() {
            m.constraints.push((d.clone() - finish[i]).leq(0.0));
            for &(f, t) in p.edges.iter().filter(|&&(_, t)| t == i) {
                m.constraints.push((d.clone() + finish[f] - finish[t]).leq(0.0));
            }
            m.constraints.push(Expression::from(finish[i]).leq(latency));
        }
        m.period = period.into();
        m.latency = latency.into();
        m
    }
}

/// Solves `p` exactly (see the module docs); `time_limit` in seconds covers all
/// three phases. An error when no placement fits, saying which limit.
pub fn solve(p: &Problem, time_limit: f64) -> Result<Placement, String> {
    check(p)?;
    let deadline = deadline::after(Instant::now(), time_limit)?;
    let order = match p.objective {
        Objective::Period => [Target::Period, Target::Latency, Target::Loads],
        Objective::Latency => [Target::Latency, Target::Period, Target::Loads],
    };
    let mut held: Vec<(Target, f64)> = Vec::new();
    let mut decisions = Vec::new();
    let mut optimal = true;
    for target in order {
        let m = Model::new(p);
        let mut constraints = m.constraints;
        for &(t, value) in &held {
            // Holding an earlier phase's optimum, with room for the solver's rounding.
            constraints.push(t.of(&m.period, &m.latency, &m.loads).leq(value * (1.0 + 1e-9) + 1e-6));
        }
        let objective = target.of(&m.period, &m.latency, &m.loads);
        let run = run_highs(m.vars, objective, constraints, &[], deadline, 1e-9)?.ok_or_else(|| infeasible(p))?;
        if run.cols.is_empty() {
            if decisions.is_empty() {
                return Err(format!("the time limit ({time_limit} s) came before HiGHS found any placement"));
            }
            optimal = false;
            break;
        }
        optimal &= run.optimal();
        decisions = (0..p.nodes.len())
            .map(|i| m.cpu[i].iter().find(|&&(_, _, col)| run.cols[col] > 0.5).map(|&(w, _, _)| w))
            .collect::<Vec<Decision>>();
        debug_assert!((0..p.nodes.len()).all(|i| decisions[i].is_some() || m.gpu[i].is_some()));
        let placed = evaluate(p, &decisions);
        let loads: f64 = placed.nodes.iter().map(|n| n.load_us).sum();
        held.push((target, target.of_value(placed.period_us, placed.latency_us, loads)));
    }
    let mut placement = evaluate(p, &decisions);
    placement.optimal = optimal;
    Ok(placement)
}

/// What one phase minimises.
#[derive(Clone, Copy, Debug)]
enum Target {
    Period,
    Latency,
    Loads,
}

impl Target {
    fn of(self, period: &Expression, latency: &Expression, loads: &Expression) -> Expression {
        match self {
            Target::Period => period.clone(),
            Target::Latency => latency.clone(),
            Target::Loads => loads.clone(),
        }
    }

    fn of_value(self, period: f64, latency: f64, loads: f64) -> f64 {
        match self {
            Target::Period => period,
            Target::Latency => latency,
            Target::Loads => loads,
        }
    }
}

/// Inputs the model cannot take: no cores, a node without choices or with a choice twice, a bad edge.
fn check(p: &Problem) -> Result<(), String> {
    for node in &p.nodes {
        if node.choices.is_empty() {
            return Err(format!("node `{}` has no provider to run on", node.name));
        }
        for (k, c) in node.choices.iter().enumerate() {
            if node.choices[..k].iter().any(|d| d.provider == c.provider) {
                return Err(format!("node `{}` has two choices on {}", node.name, c.provider));
            }
            if !(c.row_us.is_finite() && c.row_us > 0.0 && c.latency_us.is_finite() && c.latency_us > 0.0) {
                return Err(format!("node `{}` on {}: times must be finite and > 0", node.name, c.provider));
            }
        }
    }
    if let Some(&(f, t)) = p.edges.iter().find(|&&(f, t)| f >= p.nodes.len() || t >= p.nodes.len() || f == t) {
        return Err(format!("edge {f} -> {t} does not join two distinct nodes of {}", p.nodes.len()));
    }
    if topological(p.nodes.len(), &p.edges).len() < p.nodes.len() {
        return Err("the nodes' edges form a cycle".into());
    }
    Ok(())
}

/// Why no placement fits: the CPU-only nodes' cores, the GPU-only nodes' memory, or both together.
fn infeasible(p: &Problem) -> String {
    let only = |prov: Provider| p.nodes.iter().filter(move |n| n.choices.iter().all(|c| c.provider == prov));
    let cpu_cores: usize = only(Provider::Cpu).map(|n| n.cores_per_worker).sum();
    let gpu_memory: u64 = only(Provider::Cuda).map(|n| n.choices[0].device_memory).sum();
    let limit = p.machine.device_memory.map_or("no limit".to_string(), |m| format!("{m} bytes"));
    if cpu_cores > p.machine.cores {
        format!(
            "no placement fits: the nodes that run only on the CPU need at least {cpu_cores} cores (one worker each, \
             `intra_threads` cores a worker), and there are {} (--cores)",
            p.machine.cores
        )
    } else if p.machine.device_memory.is_some_and(|m| gpu_memory > m) {
        format!(
            "no placement fits: the nodes that run only on CUDA need {gpu_memory} bytes of device memory, \
             and the device has {limit} (--device-memory)"
        )
    } else {
        format!(
            "no placement fits in {} cores (--cores) and {limit} of device memory (--device-memory): \
             every node needs a worker's cores on the CPU or its memory on the GPU",
            p.machine.cores
        )
    }
}
