//! List scheduling on the critical path: the heuristic that gives the ILP its
//! starting solution and fallback.
//!
//! Tasks become ready when all their predecessors are placed; the ready task
//! of highest priority (bottom level: longest path to the end, its own time
//! included) goes to the unit where it finishes earliest, into the first idle
//! gap long enough (insertion), respecting transfer times between units and
//! memory capacities. [`best`] runs several priority rules (bottom level, with
//! ties broken by successor count, earliest-start-first, randomly perturbed
//! bottom levels) forward and on the reversed graph (mirrored back), and keeps
//! the shortest legal schedule.

use crate::dag::Dag;
use crate::platform::Platform;
use crate::simulate::{verify, Schedule, EPS};

/// How the next ready task is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// Highest bottom level first (HLFET / critical path).
    BottomLevel,
    /// Highest bottom level, ties to the task with most successors (CP/MISF).
    MostSuccessors,
    /// The (task, unit) pair that can start earliest, ties by bottom level (ETF).
    EarliestStart,
    /// Bottom level plus a random perturbation of up to `spread` times the
    /// mean task time, drawn from `seed`.
    Perturbed { seed: u64, spread: f64 },
}

/// Why no schedule exists.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ListError {
    #[error("task `{0}` fits on no unit's remaining memory")]
    NoRoom(String),
    #[error("{0}")]
    Platform(String),
}

/// One list schedule of `dag` on `p` under `rule`.
pub fn schedule(dag: &Dag, p: &Platform, rule: Rule) -> Result<Schedule, ListError> {
    p.check(dag).map_err(ListError::Platform)?;
    let n = dag.len();
    let bl = dag.bottom_levels(|i| p.mean_duration(dag, i), true);
    let prio: Vec<f64> = match rule {
        Rule::BottomLevel | Rule::EarliestStart => bl.clone(),
        Rule::MostSuccessors => (0..n).map(|i| bl[i] + dag.out_edges(i).len() as f64 * 1e-6).collect(),
        Rule::Perturbed { seed, spread } => {
            let mean = dag.total_cost() / n.max(1) as f64;
            let mut rng = SplitMix(seed);
            bl.iter().map(|&b| b + rng.unit() * spread * mean).collect()
        }
    };
    decode(dag, p, &prio, rule == Rule::EarliestStart)
}

/// One list schedule with the given priorities (highest first among the
/// ready tasks, ties to the lower index); the platform must have passed
/// [`Platform::check`].
pub fn schedule_by(dag: &Dag, p: &Platform, prio: &[f64]) -> Result<Schedule, ListError> {
    decode(dag, p, prio, false)
}

/// The list scheduler proper: ready tasks by `prio` (or, with
/// `earliest_start`, by earliest start, ties by `prio`), each into the
/// earliest-finishing gap.
fn decode(dag: &Dag, p: &Platform, prio: &[f64], earliest_start: bool) -> Result<Schedule, ListError> {
    let n = dag.len();
    let h = p.units();
    let mut busy: Vec<Vec<(f64, f64)>> = vec![Vec::new(); h];
    let mut free_mem: Vec<f64> = (0..h).map(|u| p.capacity(u)).collect();
    let mut unit = vec![usize::MAX; n];
    let mut start = vec![0.0; n];
    let mut waiting: Vec<usize> = (0..n).map(|i| dag.in_edges(i).len()).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    while !ready.is_empty() {
        // Best (task, unit, start) for every ready task, then pick by the rule.
        let mut pick: Option<(usize, usize, f64, f64)> = None; // (ready index, unit, start, finish)
        for (ri, &i) in ready.iter().enumerate() {
            let Some((u, st, fin)) = place(dag, p, i, &unit, &start, &busy, &free_mem) else {
                return Err(ListError::NoRoom(dag.tasks[i].name.clone()));
            };
            let better = match pick {
                None => true,
                Some((rj, _, pst, _)) => {
                    let j = ready[rj];
                    if earliest_start {
                        st < pst - EPS || (st < pst + EPS && (prio[i], j) > (prio[j], i))
                    } else {
                        prio[i] > prio[j] || (prio[i] == prio[j] && i < j)
                    }
                }
            };
            if better {
                pick = Some((ri, u, st, fin));
            }
        }
        let (ri, u, st, fin) = pick.expect("ready is not empty");
        let i = ready.swap_remove(ri);
        unit[i] = u;
        start[i] = st;
        free_mem[u] -= dag.tasks[i].memory;
        let pos = busy[u].partition_point(|&(s, _)| s < st);
        busy[u].insert(pos, (st, fin));
        for &k in dag.out_edges(i) {
            let j = dag.edges[k].to;
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(j);
            }
        }
    }
    Ok(Schedule { unit, start })
}

/// The unit giving task `i` the earliest finish (first gap that fits), with
/// its start and finish; `None` when no unit has memory left for it.
fn place(
    dag: &Dag,
    p: &Platform,
    i: usize,
    unit: &[usize],
    start: &[f64],
    busy: &[Vec<(f64, f64)>],
    free_mem: &[f64],
) -> Option<(usize, f64, f64)> {
    let mut best: Option<(usize, f64, f64)> = None;
    for u in 0..p.units() {
        if dag.tasks[i].memory > free_mem[u] + EPS {
            continue;
        }
        let d = p.duration(dag, i, u);
        let mut ready = 0.0f64;
        for &k in dag.in_edges(i) {
            let e = &dag.edges[k];
            let from = e.from;
            ready = ready.max(start[from] + p.duration(dag, from, unit[from]) + p.delay(e, unit[from], u));
        }
        let mut st = ready;
        for &(s, f) in &busy[u] {
            if st + d <= s + EPS {
                break;
            }
            st = st.max(f);
        }
        let fin = st + d;
        if best.is_none_or(|(_, _, bf)| fin < bf - EPS) {
            best = Some((u, st, fin));
        }
    }
    best
}

/// The shortest legal schedule over the priority rules, forward and mirrored
/// from the reversed graph, plus `random` perturbed runs.
pub fn best(dag: &Dag, p: &Platform, random: usize) -> Result<Schedule, ListError> {
    let rev = dag.reversed();
    let mut rules = vec![Rule::BottomLevel, Rule::MostSuccessors, Rule::EarliestStart];
    rules.extend((0..random as u64).map(|seed| Rule::Perturbed { seed, spread: 0.5 }));
    let target = crate::bounds::lower_bound(dag, p);
    let mut best: Option<(f64, Schedule)> = None;
    let mut last_err = None;
    let symmetric = p.comm.iter().enumerate().all(|(a, row)| row.iter().enumerate().all(|(b, &f)| f == p.comm[b][a]));
    let directions: &[bool] = if symmetric { &[false, true] } else { &[false] };
    for rule in rules {
        for &reverse in directions {
            let s = if reverse { schedule(&rev, p, rule).map(|s| mirror(dag, p, s)) } else { schedule(dag, p, rule) };
            let s = match s {
                Ok(s) => s,
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            let m = verify(dag, p, &s).unwrap_or_else(|v| panic!("list scheduling produced an illegal schedule: {v}"));
            if best.as_ref().is_none_or(|(bm, _)| m < bm - EPS) {
                best = Some((m, s));
            }
            if best.as_ref().is_some_and(|(bm, _)| *bm <= target + EPS) {
                return Ok(best.unwrap().1);
            }
        }
    }
    best.map(|(_, s)| s).ok_or_else(|| last_err.expect("some rule ran"))
}

/// A schedule of the reversed graph read backwards in time is a schedule of
/// the graph when transfer delays are symmetric.
fn mirror(dag: &Dag, p: &Platform, s: Schedule) -> Schedule {
    let m = s.makespan(dag, p);
    let start = (0..dag.len()).map(|i| m - s.start[i] - p.duration(dag, i, s.unit[i])).collect();
    Schedule { unit: s.unit, start }
}

/// A small deterministic generator (SplitMix64) for perturbed priorities.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    /// A uniform number in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}
