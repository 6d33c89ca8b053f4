//! Exact scheduling as a mixed-integer linear program, solved with HiGHS
//! through good_lp (one thread, fixed seed: deterministic up to the time
//! limit).
//!
//! Two makespan formulations, chosen by the instance:
//! - **time-indexed** (identical units, no transfer times, no memory limits,
//!   integral times): binary `S[i][t]` = task `i` has started by time `t`
//!   within its window `[top level, horizon - bottom level]` (the step form of
//!   start-time variables); at most `h` tasks run in any time slot;
//!   precedence `S[j][t] <= S[i][t - c_i]` (the strong, cumulative form);
//!   units are assigned after solving by interval colouring.
//! - **disjunctive** (the general model: per-unit durations, communication
//!   delays between units, memory capacities): binaries `x[i][r]` (task on
//!   unit), start times `s_i`, makespan `C`; precedence
//!   `s_j >= s_i + d_i + delay * (units differ)`; for each pair of tasks with no
//!   path between them, `same` and `before` binaries with big-M ordering
//!   constraints; `sum_i mem_i x[i][r] <= cap_r`. Identical units are
//!   symmetry-broken (the k-th task in topological order uses units `<= k`, and
//!   unit `r` only if unit `r - 1` holds an earlier task).
//!
//! And the **period** variant for pipelined serving: assign every task to one
//! unit (memory respected) minimizing the busiest unit's load, the steady-state
//! period of a pipeline that overlaps samples.
//!
//! The best of list scheduling, the periodic planner and a local search
//! ([`crate::incumbent`]) gives the initial upper bound (and the warm start);
//! when it meets the lower bound the solver is not called. The solver phase
//! runs on its own thread ([`crate::watchdog`]), so the time limit holds even
//! where HiGHS does not look at its own.
//! Every result is checked by the simulator.

// Constraints are written over task, unit and time indices, as in the formulations above.
#![allow(clippy::needless_range_loop)]

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use good_lp::{highs, variable, Expression, ProblemVariables, SolverModel, Variable};
use highs::HighsModelStatus;

use crate::bounds;
use crate::compact;
use crate::dag::Dag;
use crate::deadline;
use crate::incumbent::{self, Source};
use crate::platform::Platform;
use crate::simulate::{verify, Schedule, EPS};
use crate::watchdog;

/// Solver settings.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Wall-clock limit, seconds (>= 0; `inf` or any limit too large for a
    /// deadline: none; NaN is an error).
    pub time_limit: f64,
    /// Perturbed list-scheduling runs for the initial solution.
    pub random_starts: usize,
    /// Local-search steps for the initial solution ([`crate::incumbent`]),
    /// within [`SEARCH_SHARE`] of the time limit.
    pub search_steps: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options { time_limit: 10.0, random_starts: 32, search_steps: 4000 }
    }
}

/// Share of the time limit the local search for the initial solution may use.
pub const SEARCH_SHARE: f64 = 0.1;

/// How the result was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Status {
    /// Solution equals the proven lower bound.
    Optimal,
    /// The time limit stopped the solver; `gap` bounds the distance to optimal.
    TimeLimit,
}

/// Which model was solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Formulation {
    /// The heuristic met the lower bound; no solver call.
    None,
    TimeIndexed,
    Disjunctive,
    Period,
}

/// A solved makespan instance.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Solved {
    #[serde(skip)]
    pub schedule: Schedule,
    pub makespan: f64,
    #[serde(flatten)]
    pub proof: Proof,
}

/// How good a solution is known to be.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Proof {
    /// Proven lower bound on the optimal value.
    pub lower_bound: f64,
    /// `(value - lower_bound) / value`.
    pub gap: f64,
    pub status: Status,
    pub formulation: Formulation,
    /// Value of the heuristic start.
    pub heuristic: f64,
    /// Which heuristic gave the start.
    pub start: Source,
    pub seconds: f64,
}

impl std::fmt::Display for Proof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lower bound {}, gap {:.2}%, {:?} ({:?}, {:.2} s; heuristic {} from {})",
            self.lower_bound,
            100.0 * self.gap,
            self.status,
            self.formulation,
            self.seconds,
            self.heuristic,
            self.start
        )
    }
}

impl Proof {
    /// The proof for `value` given the solver's bound and the bound known
    /// before solving; `Optimal` whenever the value meets the bound.
    #[allow(clippy::too_many_arguments)]
    fn new(
        value: f64,
        bound: f64,
        first: f64,
        status: Status,
        formulation: Formulation,
        heuristic: f64,
        start: Source,
        t0: Instant,
    ) -> Proof {
        let lower_bound = bound.max(first).min(value);
        let status = if value <= lower_bound + EPS { Status::Optimal } else { status };
        let seconds = t0.elapsed().as_secs_f64();
        Proof { lower_bound, gap: gap(value, lower_bound), status, formulation, heuristic, start, seconds }
    }
}

/// Minimizes the makespan of one run of `dag` on `p`.
pub fn solve_makespan(dag: &Dag, p: &Platform, opts: Options) -> Result<Solved, String> {
    let t0 = Instant::now();
    let deadline = deadline::after(t0, opts.time_limit)?;
    let simple = bounds::lower_bound(dag, p);
    let search = incumbent::Search {
        steps: opts.search_steps,
        time: deadline::duration(opts.time_limit * SEARCH_SHARE)?,
        seed: 1,
    };
    let found = incumbent::best(dag, p, opts.random_starts, simple, search)?;
    let (start, heuristic, source) = (found.schedule, found.makespan, found.source);
    let integral = bounds::integral(dag, p) && dag.is_integral();
    let (schedule, bound, formulation, status) = if heuristic <= simple + EPS {
        (start, simple, Formulation::None, Status::Optimal)
    } else {
        makespan_watched(dag, p, heuristic, simple, deadline, start, integral)?
    };
    let makespan = verify(dag, p, &schedule).map_err(|v| format!("the MILP schedule is illegal: {v}"))?;
    let proof = Proof::new(makespan, bound, simple, status, formulation, heuristic, source, t0);
    Ok(Solved { schedule, makespan, proof })
}

/// The solver phase of [`solve_makespan`] on its own thread
/// ([`watchdog::run_until`]): when the deadline passes while HiGHS is still
/// inside a phase that does not look at its time limit, the start schedule
/// is returned with the bound proven so far and `TimeLimit`.
fn makespan_watched(
    dag: &Dag,
    p: &Platform,
    heuristic: f64,
    simple: f64,
    deadline: Option<Instant>,
    start: Schedule,
    integral: bool,
) -> Result<Outcome, String> {
    let indexed = p.is_identical() && !dag.has_transfers() && integral;
    let formulation = if indexed { Formulation::TimeIndexed } else { Formulation::Disjunctive };
    // The horizon search's proven bound, raised as it goes.
    let proven = Arc::new(AtomicI64::new(i64::MIN));
    let (dag_w, p_w, start_w, proven_w) = (dag.clone(), p.clone(), start.clone(), proven.clone());
    let solved = watchdog::run_until(deadline, move || {
        if indexed {
            time_indexed(&dag_w, p_w.units(), heuristic, simple, deadline, &start_w, &proven_w)
        } else {
            disjunctive(&dag_w, &p_w, heuristic, simple, deadline, &start_w, integral)
        }
    });
    match solved {
        Some(outcome) => outcome,
        None => {
            let bound = simple.max(proven.load(Ordering::SeqCst) as f64);
            Ok((start, bound, formulation, Status::TimeLimit))
        }
    }
}

fn gap(value: f64, bound: f64) -> f64 {
    if value <= EPS {
        0.0
    } else {
        ((value - bound) / value).max(0.0)
    }
}

/// Result of one HiGHS run: column values, proven bound, status.
pub(crate) struct Run {
    pub(crate) cols: Vec<f64>,
    bound: f64,
    status: Status,
}

impl Run {
    /// HiGHS proved the solution optimal.
    pub(crate) fn optimal(&self) -> bool {
        self.status == Status::Optimal
    }
}

/// Solves a good_lp model with HiGHS (one thread, quiet, fixed seed), warm
/// started from `initial` (one value per variable, in creation order; empty:
/// cold start). `None`: proven infeasible. `cols` is empty when the time
/// limit came before any solution.
pub(crate) fn run_highs(
    vars: ProblemVariables,
    objective: Expression,
    constraints: Vec<good_lp::Constraint>,
    initial: &[f64],
    deadline: Option<Instant>,
    abs_gap: f64,
) -> Result<Option<Run>, String> {
    // The limit covers building the model too: HiGHS gets what is left.
    let time_limit = deadline::seconds_left(deadline, 0.01);
    let mut problem = vars.minimise(objective).using(highs);
    for c in constraints {
        problem.add_constraint(c);
    }
    let mut model = problem.into_inner();
    model.make_quiet();
    model.set_option("threads", 1);
    model.set_option("random_seed", 0);
    model.set_option("time_limit", time_limit);
    model.set_option("mip_rel_gap", 0.0);
    model.set_option("mip_abs_gap", abs_gap);
    if !initial.is_empty() {
        model.try_set_solution(Some(initial), None, None, None).map_err(|e| format!("HiGHS warm start: {e:?}"))?;
    }
    let solved = model.try_solve().map_err(|e| format!("HiGHS: {e:?}"))?;
    let status = match solved.status() {
        HighsModelStatus::Optimal => Status::Optimal,
        HighsModelStatus::Infeasible => return Ok(None),
        HighsModelStatus::ReachedTimeLimit
        | HighsModelStatus::ReachedIterationLimit
        | HighsModelStatus::ReachedSolutionLimit
        | HighsModelStatus::ReachedInterrupt
        | HighsModelStatus::ReachedMemoryLimit => Status::TimeLimit,
        other => return Err(format!("HiGHS ended with status {other:?}")),
    };
    let bound = solved.double_info_value(c"mip_dual_bound").unwrap_or(f64::NEG_INFINITY);
    let feasible = solved.primal_solution_status() == highs::HighsSolutionStatus::Feasible;
    let cols = if feasible { solved.get_solution().columns().to_vec() } else { Vec::new() };
    Ok(Some(Run { cols, bound, status }))
}

/// Rounds a proven bound up to the next integer when the objective is integral.
fn integral_bound(bound: f64, integral: bool) -> f64 {
    if integral {
        (bound - 1e-6).ceil()
    } else {
        bound
    }
}

type Outcome = (Schedule, f64, Formulation, Status);

/// The time-indexed model for identical units, in its step form: binary
/// `S[i][t]` = task `i` has started by time `t` (non-decreasing in `t`, 0
/// before the task's window, 1 after it). A task runs in slot `t` when
/// `S[i][t] - S[i][t - c_i] = 1`, so capacity and precedence
/// (`S[j][t] <= S[i][t - c_i]`) take two non-zeros per task and slot; this is
/// as tight as the cumulative start-variable form and much sparser.
///
/// The horizon is tightened from the bottom: for `T = lb, lb + 1, ...` below
/// the list schedule's makespan, the model with every task finishing by `T`
/// (narrow windows, a small model) is solved; the first feasible `T` is the
/// optimum, each infeasible one raises the proven bound to `T + 1`.
fn time_indexed(
    dag: &Dag,
    h: usize,
    ub: f64,
    lb: f64,
    deadline: Option<Instant>,
    start: &Schedule,
    proven: &AtomicI64,
) -> Result<Outcome, String> {
    let mut bound = lb.round() as i64;
    let ub = ub.round() as i64;
    // A step is started only while the time left exceeds the last step's
    // (building the model is not covered by HiGHS's own limit).
    let mut last_step = Duration::from_millis(20);
    while bound < ub && deadline::fits(deadline, last_step) {
        let step = Instant::now();
        // `bound` is proven: the first schedule within it is optimal.
        match time_indexed_at(dag, h, bound, deadline)? {
            None => {
                bound += 1;
                proven.store(bound, Ordering::SeqCst);
                last_step = step.elapsed();
            }
            Some((Some(schedule), status)) => {
                let b = if status == Status::Optimal { bound } else { lb.round() as i64 };
                return Ok((schedule, b.max(bound) as f64, Formulation::TimeIndexed, status));
            }
            Some((None, _)) => break,
        }
    }
    let status = if bound >= ub { Status::Optimal } else { Status::TimeLimit };
    Ok((start.clone(), bound.min(ub) as f64, Formulation::TimeIndexed, status))
}

/// Solves the time-indexed model at `horizon` (a proven lower bound): `None`
/// when proven infeasible, else the schedule found (if any) and the solver
/// status.
fn time_indexed_at(
    dag: &Dag,
    h: usize,
    horizon: i64,
    deadline: Option<Instant>,
) -> Result<Option<(Option<Schedule>, Status)>, String> {
    let Some(TimeIndexed { vars, c, cons, steps, window }) = time_indexed_model(dag, h, horizon, true) else {
        return Ok(None);
    };
    let Some(run) = run_highs(vars, c.into(), cons, &[], deadline, 0.999)? else {
        return Ok(None);
    };
    if run.cols.is_empty() {
        return Ok(Some((None, run.status)));
    }
    // Columns were created task by task: count the steps still 0.
    let mut col = 0;
    let n = dag.len();
    let mut starts = vec![0.0; n];
    for i in 0..n {
        let zeros = steps[i].iter().filter(|_| {
            col += 1;
            run.cols[col - 1] < 0.5
        });
        starts[i] = (window[i].0 + zeros.count() as i64) as f64;
    }
    Ok(Some((Some(colour(dag, h, starts)), run.status)))
}

/// The time-indexed model at one horizon, with its variables.
struct TimeIndexed {
    vars: ProblemVariables,
    c: Variable,
    cons: Vec<good_lp::Constraint>,
    /// `steps[i][t - lo]` for `t` in the task's window `lo..hi`.
    steps: Vec<Vec<Variable>>,
    window: Vec<(i64, i64)>,
}

/// The model at `horizon`, a proven lower bound on the makespan: every
/// feasible schedule then finishes exactly at `horizon`, so the makespan
/// variable `c` is bounded below by it and the solver stops at its first
/// schedule (with `c >= 0` it would go on proving that none ends earlier, up
/// to the time limit). `None` when some task's window is empty.
/// `binary = false` gives the LP relaxation.
fn time_indexed_model(dag: &Dag, h: usize, horizon: i64, binary: bool) -> Option<TimeIndexed> {
    let n = dag.len();
    let (ub, lb) = (horizon as f64, horizon as f64);
    let cost: Vec<i64> = dag.tasks.iter().map(|t| t.cost.round() as i64).collect();
    let head = dag.top_levels(|i| dag.tasks[i].cost);
    let tail = dag.bottom_levels(|i| dag.tasks[i].cost, false);
    let window: Vec<(i64, i64)> = (0..n).map(|i| (head[i].round() as i64, horizon - tail[i].round() as i64)).collect();
    let mut vars = ProblemVariables::new();
    // steps[i][t - lo] for t in lo..hi; S = 1 from hi on.
    let mut steps: Vec<Vec<Variable>> = Vec::with_capacity(n);
    for i in 0..n {
        let (lo, hi) = window[i];
        if hi < lo {
            return None;
        }
        let def = || if binary { variable().binary() } else { variable().min(0).max(1) };
        steps.push((lo..hi).map(|_| vars.add(def())).collect());
    }
    let c = vars.add(variable().min(lb).max(ub));
    let started = |i: usize, t: i64| -> Expression {
        let (lo, hi) = window[i];
        if t < lo {
            Expression::from(0.0)
        } else if t >= hi {
            Expression::from(1.0)
        } else {
            Expression::from(steps[i][(t - lo) as usize])
        }
    };
    let mut cons = Vec::new();
    for i in 0..n {
        for w in steps[i].windows(2) {
            cons.push(Expression::from(w[0]).leq(w[1]));
        }
        if dag.out_edges(i).is_empty() {
            // Finish = start + c = hi + c - sum of S over the window.
            let (_, hi) = window[i];
            let sum: Expression = steps[i].iter().copied().sum();
            cons.push(((hi + cost[i]) as f64 - sum).leq(c));
        }
    }
    for slot in 0..horizon {
        let running: Vec<usize> =
            (0..n).filter(|&i| cost[i] > 0 && window[i].0 <= slot && slot < window[i].1 + cost[i]).collect();
        if running.len() > h {
            let busy: Expression = running.iter().map(|&i| started(i, slot) - started(i, slot - cost[i])).sum();
            cons.push(busy.leq(h as f64));
        }
    }
    let reach = dag.reachability();
    for e in &dag.edges {
        let (i, j) = (e.from, e.to);
        // An edge implied by a longer path adds nothing.
        if dag.out_edges(i).iter().any(|&k| dag.edges[k].to != j && reach[dag.edges[k].to][j]) {
            continue;
        }
        let (lo, hi) = window[j];
        for t in lo..hi {
            if t - cost[i] < window[i].1 {
                cons.push(started(j, t).leq(started(i, t - cost[i])));
            }
        }
    }
    Some(TimeIndexed { vars, c, cons, steps, window })
}

/// Assigns units to tasks with fixed start times (at most `h` at once):
/// earliest start first, onto the free unit that became free last.
fn colour(dag: &Dag, h: usize, start: Vec<f64>) -> Schedule {
    let n = dag.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| start[a].total_cmp(&start[b]).then(a.cmp(&b)));
    let mut free_at = vec![0.0f64; h];
    let mut unit = vec![0; n];
    for i in order {
        let u = (0..h)
            .filter(|&u| free_at[u] <= start[i] + EPS)
            .max_by(|&a, &b| free_at[a].total_cmp(&free_at[b]).then(b.cmp(&a)))
            .unwrap_or(0);
        unit[i] = u;
        free_at[u] = free_at[u].max(start[i] + dag.tasks[i].cost);
    }
    Schedule { unit, start }
}

/// Whether units can be relabelled freely (symmetry breaking is valid).
fn symmetric(p: &Platform) -> bool {
    p.durations.is_empty()
        && p.memory.windows(2).all(|w| w[0] == w[1])
        && p.comm.iter().enumerate().all(|(a, row)| row.iter().enumerate().all(|(b, &f)| a == b || f == p.comm[0][1]))
}

/// The disjunctive model (see the module docs).
fn disjunctive(
    dag: &Dag,
    p: &Platform,
    ub: f64,
    lb: f64,
    deadline: Option<Instant>,
    start: &Schedule,
    integral: bool,
) -> Result<Outcome, String> {
    let n = dag.len();
    let h = p.units();
    let topo_pos = topo_positions(dag);
    let sym = symmetric(p);
    let mut m = DisjunctiveModel::new(dag, p, start, ub, &topo_pos, sym);
    let c = m.add(variable().min(lb).max(ub), ub);
    for i in 0..n {
        let one_unit = m.x[i].iter().copied().sum::<Expression>().eq(1);
        m.cons.push(one_unit);
        let within = (m.s[i] + m.dur(i)).leq(c);
        m.cons.push(within);
    }
    m.memory_constraints();
    if sym {
        m.symmetry_constraints(&topo_pos);
    }
    m.precedence_constraints();
    m.overlap_constraints(ub);
    let DisjunctiveModel { vars, initial, x, s, cons, .. } = m;
    let abs_gap = if integral { 0.999 } else { 1e-6 };
    let run = run_highs(vars, c.into(), cons, &initial, deadline, abs_gap)?
        .ok_or("HiGHS found the model infeasible, but the list schedule is a solution")?;
    if run.cols.is_empty() {
        return Ok((start.clone(), integral_bound(run.bound, integral), Formulation::Disjunctive, run.status));
    }
    let col = |v: Variable| run.cols[index_of(&x, &s, v, n, h)];
    let unit = (0..n).map(|i| (0..h).max_by(|&a, &b| col(x[i][a]).total_cmp(&col(x[i][b]))).expect("h >= 1")).collect();
    let starts: Vec<f64> = (0..n).map(|i| col(s[i])).collect();
    let schedule = compact::tighten(dag, p, Schedule { unit, start: starts });
    Ok((schedule, integral_bound(run.bound, integral), Formulation::Disjunctive, run.status))
}

/// Each task's position in the graph's topological order.
fn topo_positions(dag: &Dag) -> Vec<usize> {
    let mut pos = vec![0; dag.len()];
    for (k, &i) in dag.topo_order().iter().enumerate() {
        pos[i] = k;
    }
    pos
}

/// The disjunctive model as it is built: its variables with their values in
/// the starting schedule, the assignment (`x[i][r]`: task i on unit r) and
/// start (`s[i]`) variables, and the constraints.
struct DisjunctiveModel<'a> {
    dag: &'a Dag,
    p: &'a Platform,
    start: &'a Schedule,
    vars: ProblemVariables,
    initial: Vec<f64>,
    x: Vec<Vec<Variable>>,
    s: Vec<Variable>,
    cons: Vec<good_lp::Constraint>,
}

impl<'a> DisjunctiveModel<'a> {
    /// The model with its `x` and then its `s` variables (columns in that
    /// order, see [`index_of`]); with `sym`, task i may use units up to its
    /// topological position only. Starts lie between the head and `ub` less the tail.
    fn new(dag: &'a Dag, p: &'a Platform, start: &'a Schedule, ub: f64, topo_pos: &[usize], sym: bool) -> Self {
        let n = dag.len();
        let h = p.units();
        let head = dag.top_levels(|i| p.min_duration(dag, i));
        let tail = dag.bottom_levels(|i| p.min_duration(dag, i), false);
        let mut m = DisjunctiveModel {
            dag,
            p,
            start,
            vars: ProblemVariables::new(),
            initial: Vec::new(),
            x: vec![Vec::with_capacity(h); n],
            s: Vec::with_capacity(n),
            cons: Vec::new(),
        };
        for i in 0..n {
            for r in 0..h {
                let allowed = !sym || r <= topo_pos[i];
                let def = if allowed { variable().binary() } else { variable().binary().max(0) };
                let v = m.add(def, if start.unit[i] == r { 1.0 } else { 0.0 });
                m.x[i].push(v);
            }
        }
        for i in 0..n {
            let v = m.add(variable().min(head[i]).max(ub - tail[i]), start.start[i]);
            m.s.push(v);
        }
        m
    }

    /// Adds a variable whose value in the starting schedule is `init`.
    fn add(&mut self, def: good_lp::VariableDefinition, init: f64) -> Variable {
        self.initial.push(init);
        self.vars.add(def)
    }

    /// Task i's duration on the unit it is assigned to.
    fn dur(&self, i: usize) -> Expression {
        (0..self.p.units()).map(|r| self.p.duration(self.dag, i, r) * self.x[i][r]).sum()
    }

    /// Each unit's tasks fit its memory (where the platform has memory limits).
    fn memory_constraints(&mut self) {
        if self.p.memory.is_empty() {
            return;
        }
        for r in 0..self.p.units() {
            let used: Expression = (0..self.dag.len()).map(|i| self.dag.tasks[i].memory * self.x[i][r]).sum();
            self.cons.push(used.leq(self.p.capacity(r)));
        }
    }

    /// Symmetry breaking: unit r holds a task only if unit r - 1 holds an
    /// earlier one (topological order).
    fn symmetry_constraints(&mut self, topo_pos: &[usize]) {
        let mut by_pos: Vec<usize> = (0..self.dag.len()).collect();
        by_pos.sort_by_key(|&i| topo_pos[i]);
        for (k, &i) in by_pos.iter().enumerate() {
            for r in 1..self.p.units() {
                let earlier: Expression = by_pos[..k].iter().map(|&j| self.x[j][r - 1]).sum();
                self.cons.push(Expression::from(self.x[i][r]).leq(earlier));
            }
        }
    }

    /// Each relation's consumer starts after its producer finishes plus the
    /// transfer delay, paid when the two are on different units (or, with a
    /// communication matrix, by the pair of units).
    fn precedence_constraints(&mut self) {
        let (dag, p, start, h) = (self.dag, self.p, self.start, self.p.units());
        for e in &dag.edges {
            let (i, j) = (e.from, e.to);
            let mut delay = Expression::default();
            if e.transfer > 0.0 {
                if p.comm.is_empty() {
                    let z = self.add(variable().binary(), (start.unit[i] != start.unit[j]) as u8 as f64);
                    for r in 0..h {
                        self.cons.push((self.x[i][r] - self.x[j][r]).leq(z));
                    }
                    delay += e.transfer * z;
                } else {
                    for a in 0..h {
                        for b in 0..h {
                            let f = p.delay(e, a, b);
                            if f > 0.0 {
                                let on = start.unit[i] == a && start.unit[j] == b;
                                let w = self.add(variable().binary(), on as u8 as f64);
                                self.cons.push((self.x[i][a] + self.x[j][b] - 1).leq(w));
                                delay += f * w;
                            }
                        }
                    }
                }
            }
            let after = (self.s[i] + self.dur(i) + delay).leq(self.s[j]);
            self.cons.push(after);
        }
    }

    /// Tasks with no path between them on the same unit run one after the
    /// other (big-M disjunctions with `big`).
    fn overlap_constraints(&mut self, big: f64) {
        let (n, h, start) = (self.dag.len(), self.p.units(), self.start);
        let reach = self.dag.reachability();
        for i in 0..n {
            for j in i + 1..n {
                if reach[i][j] || reach[j][i] {
                    continue;
                }
                let same_init = (start.unit[i] == start.unit[j]) as u8 as f64;
                let same = self.add(variable().binary(), same_init);
                let before = self.add(variable().binary(), (start.start[i] <= start.start[j]) as u8 as f64);
                for r in 0..h {
                    self.cons.push((self.x[i][r] + self.x[j][r] - 1).leq(same));
                }
                // same = 1: i before j or j before i.
                let (s, dur_i, dur_j) = (&self.s, self.dur(i), self.dur(j));
                let i_first = (s[i] + dur_i).leq(s[j] + big * (1 - before) + big * (1 - same));
                let j_first = (s[j] + dur_j).leq(s[i] + big * before + big * (1 - same));
                self.cons.push(i_first);
                self.cons.push(j_first);
            }
        }
    }
}

/// Column of an `x` or `s` variable (created first, in this order).
fn index_of(x: &[Vec<Variable>], s: &[Variable], v: Variable, n: usize, h: usize) -> usize {
    if let Some(k) = s.iter().position(|&w| w == v) {
        return n * h + k;
    }
    for (i, row) in x.iter().enumerate() {
        if let Some(r) = row.iter().position(|&w| w == v) {
            return i * h + r;
        }
    }
    unreachable!("only x and s columns are read")
}

/// A solved period (bottleneck) instance: each task on one unit.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PeriodSolved {
    pub unit: Vec<usize>,
    /// Busiest unit's load: the steady-state period when samples overlap.
    pub period: f64,
    /// The heuristic is the greedy start (longest task first onto the least loaded unit).
    #[serde(flatten)]
    pub proof: Proof,
}

/// Load of each unit under an assignment.
pub fn loads(dag: &Dag, p: &Platform, unit: &[usize]) -> Vec<f64> {
    let mut load = vec![0.0; p.units()];
    for (i, &u) in unit.iter().enumerate() {
        load[u] += p.duration(dag, i, u);
    }
    load
}

/// Checks an assignment (every task on an existing unit, memory respected);
/// returns its period (the largest load).
pub fn verify_assignment(dag: &Dag, p: &Platform, unit: &[usize]) -> Result<f64, String> {
    if unit.len() != dag.len() || unit.iter().any(|&u| u >= p.units()) {
        return Err("the assignment must put every task on an existing unit".into());
    }
    let mut used = vec![0.0; p.units()];
    for (i, &u) in unit.iter().enumerate() {
        used[u] += dag.tasks[i].memory;
    }
    if let Some(u) = (0..p.units()).find(|&u| used[u] > p.capacity(u) + EPS) {
        return Err(format!("unit {u} needs {} memory, its capacity is {}", used[u], p.capacity(u)));
    }
    Ok(loads(dag, p, unit).into_iter().fold(0.0, f64::max))
}

/// Greedy assignment: tasks by mean duration, longest first, each to the unit
/// where the resulting load is smallest among those with memory left.
fn greedy_period(dag: &Dag, p: &Platform) -> Result<Vec<usize>, String> {
    let mut order: Vec<usize> = (0..dag.len()).collect();
    order.sort_by(|&a, &b| p.mean_duration(dag, b).total_cmp(&p.mean_duration(dag, a)).then(a.cmp(&b)));
    let mut load = vec![0.0f64; p.units()];
    let mut free: Vec<f64> = (0..p.units()).map(|u| p.capacity(u)).collect();
    let mut unit = vec![0; dag.len()];
    for i in order {
        let u = (0..p.units())
            .filter(|&u| dag.tasks[i].memory <= free[u] + EPS)
            .min_by(|&a, &b| (load[a] + p.duration(dag, i, a)).total_cmp(&(load[b] + p.duration(dag, i, b))))
            .ok_or_else(|| format!("task `{}` fits on no unit's remaining memory", dag.tasks[i].name))?;
        unit[i] = u;
        load[u] += p.duration(dag, i, u);
        free[u] -= dag.tasks[i].memory;
    }
    Ok(unit)
}

/// Minimizes the period: the busiest unit's total time, every task on one
/// unit, memory capacities respected. The greedy assignment is the start and
/// fallback; the bound is max(sum / units, longest task) (fastest units).
pub fn solve_period(dag: &Dag, p: &Platform, opts: Options) -> Result<PeriodSolved, String> {
    let t0 = Instant::now();
    let deadline = deadline::after(t0, opts.time_limit)?;
    p.check(dag)?;
    let integral = bounds::integral(dag, p);
    let simple = integral_bound(bounds::period_bound(dag, p), integral);
    // The greedy may fail on memory where an exact packing exists: then the solver starts cold.
    let start = greedy_period(dag, p).ok();
    let heuristic = match &start {
        Some(u) => verify_assignment(dag, p, u)?,
        None => f64::INFINITY,
    };
    let (unit, bound, formulation, status) = if heuristic <= simple + EPS {
        (start.expect("finite heuristic"), simple, Formulation::None, Status::Optimal)
    } else {
        let (dag_w, p_w, start_w) = (dag.clone(), p.clone(), start.clone());
        let watched = move || period_model(&dag_w, &p_w, start_w.as_deref(), heuristic, simple, integral, deadline);
        match watchdog::run_until(deadline, watched) {
            Some(solved) => solved?,
            // The deadline passed inside HiGHS: the greedy start, the bound known before.
            None => (start.ok_or(NO_ASSIGNMENT)?, simple, Formulation::Period, Status::TimeLimit),
        }
    };
    let period = verify_assignment(dag, p, &unit).map_err(|e| format!("the MILP assignment is illegal: {e}"))?;
    let proof = Proof::new(period, bound, simple, status, formulation, heuristic, Source::GreedyAssignment, t0);
    Ok(PeriodSolved { unit, period, proof })
}

const NO_ASSIGNMENT: &str = "no assignment found within the time limit";

/// The period MILP, warm started from the greedy assignment `start` (when
/// it has one): the assignment found, the solver's bound and status.
fn period_model(
    dag: &Dag,
    p: &Platform,
    start: Option<&[usize]>,
    heuristic: f64,
    simple: f64,
    integral: bool,
    deadline: Option<Instant>,
) -> Result<(Vec<usize>, f64, Formulation, Status), String> {
    let n = dag.len();
    let h = p.units();
    let mut vars = ProblemVariables::new();
    let mut initial = Vec::new();
    let x: Vec<Vec<Variable>> = (0..n)
        .map(|i| {
            (0..h)
                .map(|r| {
                    initial.push(start.as_ref().map_or(0.0, |s| (s[i] == r) as u8 as f64));
                    vars.add(variable().binary())
                })
                .collect()
        })
        .collect();
    let upper: f64 = (0..n).map(|i| (0..h).map(|r| p.duration(dag, i, r)).fold(0.0, f64::max)).sum();
    let period = vars.add(variable().min(simple).max(heuristic.min(upper)));
    initial.push(heuristic.min(upper));
    let mut cons = Vec::new();
    for row in &x {
        cons.push(row.iter().copied().sum::<Expression>().eq(1));
    }
    for r in 0..h {
        let load: Expression = (0..n).map(|i| p.duration(dag, i, r) * x[i][r]).sum();
        cons.push(load.leq(period));
        if !p.memory.is_empty() {
            let used: Expression = (0..n).map(|i| dag.tasks[i].memory * x[i][r]).sum();
            cons.push(used.leq(p.capacity(r)));
        }
    }
    if symmetric(p) {
        for i in 0..n {
            for r in (i + 1)..h {
                cons.push(Expression::from(x[i][r]).leq(0));
            }
            for r in 1..h {
                let earlier: Expression = (0..i).map(|j| x[j][r - 1]).sum();
                cons.push(Expression::from(x[i][r]).leq(earlier));
            }
        }
    }
    let abs_gap = if integral { 0.999 } else { 1e-6 };
    let run = run_highs(vars, period.into(), cons, &initial, deadline, abs_gap)?
        .ok_or("HiGHS found the assignment model infeasible (memory capacities too small?)")?;
    if run.cols.is_empty() {
        return Err(NO_ASSIGNMENT.into());
    }
    let unit: Vec<usize> = (0..n)
        .map(|i| (0..h).max_by(|&a, &b| run.cols[i * h + a].total_cmp(&run.cols[i * h + b])).expect("h >= 1"))
        .collect();
    Ok((unit, integral_bound(run.bound, integral), Formulation::Period, run.status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::dag_from;

    /// Independent tasks 1..=6 on 3 units: the load bound 7 is the optimum.
    /// The LP relaxation at a proven horizon has the horizon as its value:
    /// the solver starts from the bound, so its first schedule closes the gap.
    #[test]
    fn time_indexed_relaxation_starts_at_the_proven_bound() {
        let names = ["a", "b", "c", "d", "e", "f"];
        let tasks: Vec<(&str, f64)> = names.iter().zip(1..).map(|(&n, c)| (n, c as f64)).collect();
        let dag = dag_from(&tasks, &[]).unwrap();
        let horizon = bounds::lower_bound(&dag, &Platform::identical(3)) as i64;
        assert_eq!(horizon, 7);
        let m = time_indexed_model(&dag, 3, horizon, false).expect("every window is non-empty");
        let c_col: usize = m.steps.iter().map(Vec::len).sum();
        let run = run_highs(m.vars, m.c.into(), m.cons, &[], None, 1e-9).unwrap().expect("the relaxation is feasible");
        assert_eq!(run.status, Status::Optimal);
        assert!((run.cols[c_col] - horizon as f64).abs() < 1e-6, "relaxation value {}", run.cols[c_col]);
    }
}
