//! The MILP's starting schedule: the best of list scheduling, the periodic
//! planner's one-sample layout, and an iterated-greedy local search over
//! list-scheduling priorities, with where it came from.
//!
//! - **List scheduling**: [`crate::list::best`].
//! - **Periodic planner** (identical units, no transfers, no memory limits):
//!   its plan at one sample per period, each task at `stage * period +
//!   offset` on its unit, compacted ([`crate::compact::tighten`]).
//! - **Local search** (iterated greedy, random keys): the best schedule's
//!   start times are the keys (earliest first); each step perturbs the keys
//!   of a random block of tasks in start order, decodes the keys by list
//!   scheduling ([`crate::list::schedule_by`]) and keeps the result when it
//!   is not longer (sideways moves let it cross plateaus). It stops at the
//!   lower bound, after [`Search::steps`] steps or when its time share runs
//!   out, whichever comes first; a fixed seed makes it deterministic up to
//!   the time share.

use std::time::{Duration, Instant};

use crate::compact;
use crate::dag::Dag;
use crate::list::{self, SplitMix};
use crate::periodic;
use crate::platform::Platform;
use crate::simulate::{verify, Schedule, EPS};

/// Which heuristic gave the starting schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Source {
    ListScheduling,
    Periodic,
    LocalSearch,
    /// The period objective's start: longest task first onto the least loaded unit.
    GreedyAssignment,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::ListScheduling => "list scheduling",
            Source::Periodic => "the periodic planner",
            Source::LocalSearch => "local search",
            Source::GreedyAssignment => "greedy assignment",
        })
    }
}

/// A legal schedule, its makespan and its source.
#[derive(Clone, Debug)]
pub struct Incumbent {
    pub schedule: Schedule,
    pub makespan: f64,
    pub source: Source,
}

/// Local-search settings.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    /// Decodes at most.
    pub steps: usize,
    /// Wall-clock time at most (`None`: steps only).
    pub time: Option<Duration>,
    pub seed: u64,
}

/// The best start for the MILP; `random` perturbed list-scheduling runs,
/// the search stopping at `target` (a lower bound).
pub fn best(dag: &Dag, p: &Platform, random: usize, target: f64, search: Search) -> Result<Incumbent, String> {
    let schedule = list::best(dag, p, random).map_err(|e| e.to_string())?;
    let makespan = verify(dag, p, &schedule).map_err(|v| format!("the list schedule is illegal: {v}"))?;
    let mut best = Incumbent { schedule, makespan, source: Source::ListScheduling };
    if best.makespan <= target + EPS {
        return Ok(best);
    }
    if let Some(s) = from_periodic(dag, p) {
        offer(dag, p, &mut best, s, Source::Periodic);
    }
    if best.makespan > target + EPS {
        iterated_greedy(dag, p, &mut best, target, search);
    }
    Ok(best)
}

/// Keeps `s` when it is legal and shorter than the incumbent.
fn offer(dag: &Dag, p: &Platform, best: &mut Incumbent, s: Schedule, source: Source) -> bool {
    match verify(dag, p, &s) {
        Ok(m) if m < best.makespan - EPS => {
            *best = Incumbent { schedule: s, makespan: m, source };
            true
        }
        _ => false,
    }
}

/// The periodic plan at one sample per period as a one-run schedule,
/// compacted; `None` where the periodic planner does not apply.
fn from_periodic(dag: &Dag, p: &Platform) -> Option<Schedule> {
    if !p.is_identical() || dag.has_transfers() || !p.memory.is_empty() {
        return None;
    }
    let plan = periodic::plan(dag, p.units(), periodic::Options { x_max: 1, threshold: 1.0 }).ok()?;
    let mut s = Schedule { unit: vec![0; dag.len()], start: vec![0.0; dag.len()] };
    for inst in &plan.instances {
        s.unit[inst.task] = inst.unit;
        s.start[inst.task] = inst.stage as f64 * plan.period + inst.offset;
    }
    Some(compact::tighten(dag, p, s))
}

/// Iterated greedy over random keys (see the module comment).
fn iterated_greedy(dag: &Dag, p: &Platform, best: &mut Incumbent, target: f64, search: Search) {
    let n = dag.len();
    if n < 2 {
        return;
    }
    let t0 = Instant::now();
    let mut rng = SplitMix(search.seed);
    let mut keys = best.schedule.start.clone();
    let mut current = best.makespan;
    let scale = dag.total_cost() / n as f64;
    for step in 0..search.steps {
        if best.makespan <= target + EPS || search.time.is_some_and(|t| step % 16 == 0 && t0.elapsed() >= t) {
            break;
        }
        // A block of 2..=8 tasks adjacent in key order gets new keys within
        // the block's span widened by a mean task time on each side.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]).then(a.cmp(&b)));
        let len = 2 + (rng.unit() * 7.0) as usize;
        let at = (rng.unit() * n.saturating_sub(len).max(1) as f64) as usize;
        let block = &order[at..(at + len).min(n)];
        let lo = keys[block[0]] - scale;
        let hi = keys[*block.last().expect("non-empty block")] + scale;
        let mut trial = keys.clone();
        for &i in block {
            trial[i] = lo + rng.unit() * (hi - lo);
        }
        let prio: Vec<f64> = trial.iter().map(|&k| -k).collect();
        let Ok(s) = list::schedule_by(dag, p, &prio) else { continue };
        let Ok(m) = verify(dag, p, &s) else { continue };
        if m <= current + EPS {
            current = m;
            keys = s.start.clone();
            if m < best.makespan - EPS {
                *best = Incumbent { schedule: s, makespan: m, source: Source::LocalSearch };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::dag_from;

    /// The periodic layout is legal once compacted, and the search never
    /// returns a schedule longer than list scheduling's.
    #[test]
    fn candidates_are_legal_and_the_best_is_kept() {
        let dag = crate::stg::parse(&crate::generate::stg_text(60, 7), std::path::Path::new("g")).unwrap();
        for h in [2, 3, 4] {
            let p = Platform::identical(h);
            let s = from_periodic(&dag, &p).expect("identical units");
            assert!(verify(&dag, &p, &s).is_ok(), "h = {h}");
            let list_m = verify(&dag, &p, &list::best(&dag, &p, 8).unwrap()).unwrap();
            let search = Search { steps: 300, time: None, seed: 1 };
            let inc = best(&dag, &p, 8, 0.0, search).unwrap();
            assert_eq!(verify(&dag, &p, &inc.schedule), Ok(inc.makespan));
            assert!(inc.makespan <= list_m, "h = {h}: {} > {list_m}", inc.makespan);
            let again = best(&dag, &p, 8, 0.0, search).unwrap();
            assert_eq!((again.makespan, again.source), (inc.makespan, inc.source), "deterministic by steps");
        }
    }

    /// Two chains a(3)→b(1) and c(1)→d(3) on two units: list scheduling by
    /// bottom level is optimal (4); the search starts there and stops at
    /// the bound without a step.
    #[test]
    fn a_start_at_the_bound_is_list_scheduling() {
        let dag = dag_from(&[("a", 3.0), ("b", 1.0), ("c", 1.0), ("d", 3.0)], &[(0, 1, 0.0), (2, 3, 0.0)]).unwrap();
        let p = Platform::identical(2);
        let inc = best(&dag, &p, 0, 4.0, Search { steps: 100, time: None, seed: 1 }).unwrap();
        assert_eq!((inc.makespan, inc.source), (4.0, Source::ListScheduling));
    }
}
