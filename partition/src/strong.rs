//! The strong mode (`--quality strong`): quality for time on two parts.
//!
//! One repetition is a multilevel cycle built around [`crate::fm`]:
//! - coarsen by size-constrained label propagation
//!   ([`crate::label_propagation`], hubs first) for the plain cut, by heavy-relation
//!   matching when critical relations come first ([`Strong::grouping`]), down
//!   to [`COARSEST`] vertices (for the plain cut: one of
//!   [`PLAIN_CUT_COARSEST`] at random), no coarse vertex heavier than a share of the
//!   load (so single moves can balance);
//! - bisect the coarsest graph [`Strong::initial_tries`] times by greedy
//!   graph growing (from a peripheral vertex, then random ones), each refined
//!   by FM, and keep the best;
//! - project level by level, refining each level by FM passes until none
//!   improves, then by flow cuts ([`crate::flow_refine`]; for the plain cut,
//!   [`Strong::flow`]), and optionally by localized FM searches
//!   ([`crate::local_fm`], [`Strong::local_rounds`]; for the plain cut
//!   [`PLAIN_CUT_LOCAL_ROUNDS`] by default);
//! - V-cycles ([`Strong::vcycles`]; none by default for the plain cut,
//!   which gains more from further repetitions): coarsen again inside the
//!   sides only (for the plain cut down to the smaller of
//!   [`PLAIN_CUT_COARSEST`]), so the partition survives to the coarsest
//!   level, and refine on the way back (the best partition kept).
//!
//! Repetitions ([`Strong::repetitions`]) with different seeds run until their count or the time budget
//! is used up, each offered to a population ([`crate::evolve`]); then
//! [`Strong::combines`] combine operations (none by default: at equal time
//! they did not beat more repetitions), and the best (least excess, then cut,
//! then load difference) starts an iterated local search ([`crate::kick`],
//! [`Strong::kicks`]; for the plain cut [`PLAIN_CUT_KICKS`] kicks by default,
//! the repetitions then stopping at [`KICKS_REPETITIONS_SHARE`] of the
//! budget), whose incumbent is kept. With counts and no budget the result
//! depends on the seed alone.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::bisection::{grow, induced, peripheral, side_limits, side_parts};
use crate::coarsen::{self, Grouping};
use crate::evolve::{self, Population};
use crate::flow_refine;
use crate::fm::{self, Bisection};
use crate::graph::{Graph, Vertex};
use crate::kick;
use crate::label_propagation::Visit;
use crate::local_fm;
use crate::metrics;
use crate::refine::{self, RefineParams, State};

/// Coarsening stops at this many vertices (task graphs; V-cycles, combines).
pub const COARSEST: usize = 150;

/// For the plain cut, each new cycle coarsens to one of these sizes, drawn at
/// random: very coarse graphs served the irregular add20 best (20 once
/// label propagation visits hubs first, 30 before), finer ones data
/// (docs/partition.md); V-cycles and combines stop at [`COARSEST`].
const PLAIN_CUT_COARSEST: [usize; 2] = [20, 300];

/// Localized FM rounds per level for the plain cut (add20, 64 repetitions:
/// 560.0 with 2 against 568.3 without, docs/planners.md).
pub const PLAIN_CUT_LOCAL_ROUNDS: usize = 2;

/// Repetitions for the plain cut: with no V-cycles, more independent
/// repetitions in the same time (Walshaw graphs, release build: add20 555.5
/// in 5.9 s against 560.2 in 3.9 s with 64 repetitions of 2 V-cycles, and
/// 555.3 in 14.8 s with 128 of them; docs/planners.md).
pub const PLAIN_CUT_REPETITIONS: usize = 200;

/// V-cycles per repetition for the plain cut.
pub const PLAIN_CUT_VCYCLES: usize = 0;

/// Repetitions on task graphs (critical relations).
pub const TASK_GRAPH_REPETITIONS: usize = 64;

/// V-cycles per repetition on task graphs.
pub const TASK_GRAPH_VCYCLES: usize = 2;

/// Kicks of the iterated local search for the plain cut, within the budget.
pub const PLAIN_CUT_KICKS: usize = 200;

/// Vertices a kick moves at most (add20 at 5 s: at most 4 and at most 16
/// both beat 64; 8 lies between them).
pub const KICK_SIZE: usize = 8;

/// Share of the time budget after which no new repetition starts when kicks
/// follow (the rest goes to the kicks).
pub const KICKS_REPETITIONS_SHARE: f64 = 0.8;

/// A coarse vertex may carry at most this share of `total / coarsest size`.
const MAX_VERTEX_SHARE: f64 = 1.5;

/// FM passes per level at most (each must improve to go on).
const MAX_PASSES: usize = 16;

/// Share of the time budget after which no new repetition starts (the rest
/// goes to combining).
const REPETITIONS_SHARE: f64 = 0.25;

/// Strong-mode settings.
#[derive(Clone, Copy, Debug)]
pub struct Strong {
    /// Repetitions (independent multilevel runs), offered to the population;
    /// `None`: [`PLAIN_CUT_REPETITIONS`] for the plain cut,
    /// [`TASK_GRAPH_REPETITIONS`] on task graphs.
    pub repetitions: Option<usize>,
    /// Partitions kept for combining ([`crate::evolve::Population`]).
    pub population: usize,
    /// Combine operations after the repetitions.
    pub combines: usize,
    /// Stop starting repetitions after a quarter of this (all of it without
    /// combines), combines after all of it.
    pub budget: Option<Duration>,
    /// Greedy-growing bisections tried at the coarsest level.
    pub initial_tries: usize,
    /// V-cycles after each repetition's first cycle; `None`:
    /// [`PLAIN_CUT_VCYCLES`] for the plain cut, [`TASK_GRAPH_VCYCLES`] on
    /// task graphs.
    pub vcycles: Option<usize>,
    /// How coarsening groups vertices; `None`: [`coarsen::grouping_for`] the
    /// graph, label propagation visiting hubs first.
    pub grouping: Option<Grouping>,
    /// Flow refinement ([`crate::flow_refine`]) after FM on every level;
    /// `None`: for the plain cut only (on task graphs it cost 10x the time
    /// for mixed results, docs/partition.md).
    pub flow: Option<bool>,
    /// Rounds of localized FM searches ([`crate::local_fm`]) after FM and
    /// flows on every level (0: none); `None`: [`PLAIN_CUT_LOCAL_ROUNDS`]
    /// for the plain cut, none on task graphs.
    pub local_rounds: Option<usize>,
    /// Kicks of the iterated local search ([`crate::kick`]) on the best
    /// partition after the repetitions and combines (0: none); `None`:
    /// [`PLAIN_CUT_KICKS`] for the plain cut, none on task graphs.
    pub kicks: Option<usize>,
    /// Vertices a kick moves at most.
    pub kick_size: usize,
    pub seed: u64,
}

impl Default for Strong {
    fn default() -> Self {
        Strong {
            repetitions: None,
            population: 16,
            combines: 0,
            budget: None,
            initial_tries: 12,
            vcycles: None,
            grouping: None,
            flow: None,
            local_rounds: None,
            kicks: None,
            kick_size: KICK_SIZE,
            seed: 1,
        }
    }
}

/// The best 2-way partition found within the load limits `caps`, its rank,
/// and the cycles run (repetitions and combines).
pub fn bisect(g: &Graph, caps: [i64; 2], s: &Strong) -> (Vec<u32>, fm::Rank, usize) {
    let start = Instant::now();
    let past = |share: f64| s.budget.is_some_and(|b| start.elapsed() >= b.mul_f64(share));
    let stream = |i: u64| StdRng::seed_from_u64(s.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(i));
    let mut population = Population::new(s.population);
    let mut runs = 0;
    let kicks = s.kicks.unwrap_or(if g.critical_edges() == 0 { PLAIN_CUT_KICKS } else { 0 });
    let repetitions_share = match (s.combines, kicks) {
        (0, 0) => 1.0,
        (0, _) => KICKS_REPETITIONS_SHARE,
        _ => REPETITIONS_SHARE,
    };
    let plain = g.critical_edges() == 0;
    let repetitions = s.repetitions.unwrap_or(if plain { PLAIN_CUT_REPETITIONS } else { TASK_GRAPH_REPETITIONS });
    for r in 0..repetitions.max(1) {
        if r > 0 && past(repetitions_share) {
            break;
        }
        let (part, rank) = repetition(g, caps, s, &mut stream(r as u64));
        population.offer(part, rank);
        runs += 1;
    }
    let mut rng = stream(u64::MAX);
    for _ in 0..s.combines {
        if population.len() < 2 || past(1.0) {
            break;
        }
        let (a, b) = population.parents(&mut rng);
        let (child, rank) = evolve::combine(g, caps, s, &population.member(a).0, &population.member(b).0, &mut rng);
        population.offer(child, rank);
        runs += 1;
    }
    let (part, rank) = population.best().expect("at least one repetition").clone();
    if kicks == 0 {
        return (part, rank, runs);
    }
    let search = kick::Search { caps, kicks, max_size: s.kick_size, flow: s.flow.unwrap_or(g.critical_edges() == 0) };
    let (part, rank) = search.run(g, part, &mut rng, || past(1.0));
    (part, rank, runs)
}

/// One repetition: a first cycle, then V-cycles, the best kept.
fn repetition(g: &Graph, caps: [i64; 2], s: &Strong, rng: &mut StdRng) -> (Vec<u32>, fm::Rank) {
    let (part, rank) = cycle(g, caps, s, None, rng);
    vcycles(g, caps, s, part, rank, rng)
}

/// `s.vcycles` V-cycles from `part` (of rank `rank`), the best kept.
pub fn vcycles(
    g: &Graph,
    caps: [i64; 2],
    s: &Strong,
    mut part: Vec<u32>,
    mut rank: fm::Rank,
    rng: &mut StdRng,
) -> (Vec<u32>, fm::Rank) {
    let plain = g.critical_edges() == 0;
    for _ in 0..s.vcycles.unwrap_or(if plain { PLAIN_CUT_VCYCLES } else { TASK_GRAPH_VCYCLES }) {
        let (next, r) = cycle(g, caps, s, Some(Guide { labels: &part, side: |l| l }), rng);
        if r <= rank {
            (part, rank) = (next, r);
        }
    }
    (part, rank)
}

/// Steers a multilevel cycle: coarsening pairs only vertices with equal
/// labels, and the coarsest graph starts from the side `side` gives its
/// label, instead of new initial bisections.
#[derive(Clone, Copy)]
pub struct Guide<'a> {
    pub labels: &'a [u32],
    pub side: fn(u32) -> u32,
}

/// One multilevel cycle, new or steered by `guide` (a V-cycle, a combine).
/// Refinement never raises the rank, so a steered cycle ends no worse than
/// the partition it starts from.
pub fn cycle(g: &Graph, caps: [i64; 2], s: &Strong, guide: Option<Guide>, rng: &mut StdRng) -> (Vec<u32>, fm::Rank) {
    let plain = g.critical_edges() == 0;
    // Hubs first for the plain cut: on add20, a circuit graph with hubs, it lowered
    // the cut by 4%; the other Walshaw graphs kept theirs (docs/partition.md).
    let grouping = s.grouping.unwrap_or_else(|| coarsen::grouping_for(g, Visit::HubsFirst));
    let flow = s.flow.unwrap_or(plain);
    let local_rounds = s.local_rounds.unwrap_or(if plain { PLAIN_CUT_LOCAL_ROUNDS } else { 0 });
    let coarsest_n = match guide {
        None if plain => PLAIN_CUT_COARSEST[rng.random_range(0..PLAIN_CUT_COARSEST.len())],
        Some(_) if plain => PLAIN_CUT_COARSEST[0],
        _ => COARSEST,
    };
    let heaviest = g.node_w.iter().copied().max().unwrap_or(1);
    let max_vw = ((MAX_VERTEX_SHARE * g.total_weight() as f64 / coarsest_n as f64) as i64).max(heaviest);
    let coarsen::Hierarchy { maps, graphs, within: labels } =
        coarsen::hierarchy(g, coarsest_n, max_vw, 0.9, guide.map(|x| x.labels), grouping, rng);
    let coarsest = graphs.last().unwrap_or(g);
    let improve = |h: &Graph, part: Vec<u32>, rng: &mut StdRng| {
        let mut b = Bisection::new(h, part, caps);
        b.refine(fm::patience(h.n()), MAX_PASSES, rng);
        if flow {
            flow_refine::refine(&mut b, &flow_refine::ALPHAS, rng);
        }
        if local_rounds > 0 {
            local_fm::refine(&mut b, local_fm::PATIENCE, local_rounds, rng);
        }
        b.part
    };
    let mut part = match (labels, guide) {
        (Some(labels), Some(guide)) => improve(coarsest, labels.into_iter().map(guide.side).collect(), rng),
        _ => initial(coarsest, caps, s.initial_tries, rng),
    };
    for lvl in (0..maps.len()).rev() {
        let fine = if lvl == 0 { g } else { &graphs[lvl - 1] };
        part = improve(fine, coarsen::project(&maps[lvl], &part), rng);
    }
    let b = Bisection::new(g, part, caps);
    let rank = b.rank();
    (b.part, rank)
}

/// The best of `tries` greedy-growing bisections, each refined by FM.
fn initial(g: &Graph, caps: [i64; 2], tries: usize, rng: &mut StdRng) -> Vec<u32> {
    let total = g.total_weight();
    // Part 0 grows to its share of the load (the sides' limits in ratio).
    let target = (total as i128 * caps[0] as i128 / (caps[0] + caps[1]).max(1) as i128) as i64;
    let mut best: Option<(Vec<u32>, fm::Rank)> = None;
    for t in 0..tries.max(1) {
        let seed: Vertex = if t == 0 { peripheral(g, rng) } else { rng.random_range(0..g.n() as Vertex) };
        let mut b = Bisection::new(g, grow(g, seed, target, caps[0]), caps);
        b.refine(fm::patience(g.n()), MAX_PASSES, rng);
        let rank = b.rank();
        if best.as_ref().is_none_or(|x| rank < x.1) {
            best = Some((b.part, rank));
        }
    }
    best.expect("at least one try").0
}

/// A k-way partition for any `k >= 1` by recursive strong bisection (sides
/// of `k / 2` and `k - k / 2` parts with load targets in that ratio, the
/// imbalance spread over the levels as in [`crate::bisection::recursive`]),
/// then the k-way refinement under the final limit when `k > 2`.
pub fn partition(g: &Graph, k: usize, epsilon: f64, s: &Strong, refine_p: &RefineParams) -> Vec<u32> {
    if k == 2 {
        return bisect(g, caps(g, epsilon), s).0;
    }
    let levels = (k.max(1) as f64).log2().ceil() as i32;
    let eps = if levels > 0 { (1.0 + epsilon).powf(1.0 / levels as f64) - 1.0 } else { epsilon };
    let mut part = vec![0u32; g.n()];
    split(g, &(0..g.n() as Vertex).collect::<Vec<_>>(), k, 0, eps, s, &mut part);
    if k > 2 {
        let cap = metrics::max_part_weight(g, k, epsilon);
        let mut st = State::new(g, k, cap, part);
        refine::refine(&mut st, refine_p);
        part = st.part;
    }
    part
}

fn split(g: &Graph, ids: &[Vertex], k: usize, first: u32, eps: f64, s: &Strong, part: &mut [u32]) {
    if k == 1 || g.n() < 2 {
        for &v in ids {
            part[v as usize] = first;
        }
        return;
    }
    let (k0, k1) = side_parts(k);
    let heaviest = g.node_w.iter().copied().max().unwrap_or(1);
    let (_, caps) = side_limits(g.total_weight(), k0, k1, eps, heaviest);
    let (halves, _, _) = bisect(g, caps, s);
    for (side, ks, offset) in [(0u32, k0, 0), (1, k1, k0)] {
        let keep: Vec<bool> = halves.iter().map(|&p| p == side).collect();
        let (sub, old) = induced(g, &keep);
        let sub_ids: Vec<Vertex> = old.iter().map(|&v| ids[v as usize]).collect();
        split(&sub, &sub_ids, ks, first + offset as u32, eps, s, part);
    }
}

/// Equal limits for k = 2 at imbalance `epsilon`.
pub fn caps(g: &Graph, epsilon: f64) -> [i64; 2] {
    let cap = metrics::max_part_weight(g, 2, epsilon);
    [cap, cap]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::grid;

    #[test]
    fn strong_bisection_cuts_a_grid_straight_and_repeats_by_seed() {
        let g = grid(60, 24);
        let s = Strong { repetitions: Some(4), combines: 0, ..Strong::default() };
        let caps = caps(&g, 0.05);
        let (part, rank, runs) = bisect(&g, caps, &s);
        assert_eq!(runs, 4);
        assert_eq!(rank.0, 0, "balanced");
        assert_eq!(rank.1, (0, 24), "the straight cut across the short side");
        assert_eq!(metrics::cut(&g, &part).total, 24);
        assert_eq!(bisect(&g, caps, &s).0, part, "same seed, same partition");
    }

    /// A graph below every coarsening size (plain cut: flows on the graph itself).
    #[test]
    fn strong_bisection_cuts_the_bridge_of_two_triangles() {
        let mut b = crate::graph::GraphBuilder::new();
        for _ in 0..6 {
            b.add_vertex("", 1);
        }
        for (u, v) in [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (3, 5), (4, 5)] {
            b.add_edge(u, v, 1, 0);
        }
        let g = b.build();
        let (part, rank, _) = bisect(&g, caps(&g, 0.03), &Strong { repetitions: Some(4), ..Strong::default() });
        assert_eq!(rank, (0, (0, 1), 0), "{part:?}");
    }

    /// The kicks start from the best repetition of the same seed, so with
    /// them the result is never worse than without, and stays balanced. A
    /// layered DAG with its critical marks cleared: a plain cut with no
    /// straight optimum for the repetitions to find every time.
    #[test]
    fn kicks_never_leave_the_strong_bisection_worse() {
        let mut g = crate::generate::layered_dag(600, 3);
        g.ec.iter_mut().for_each(|c| *c = 0);
        let caps = caps(&g, 0.03);
        for seed in 1..=4 {
            let base = Strong { repetitions: Some(2), vcycles: Some(0), initial_tries: 2, seed, ..Strong::default() };
            let (_, without, _) = bisect(&g, caps, &Strong { kicks: Some(0), ..base });
            let (part, with, _) = bisect(&g, caps, &Strong { kicks: Some(40), ..base });
            assert!(with <= without, "seed {seed}: {with:?} worse than {without:?}");
            assert_eq!(with.0, 0, "seed {seed}: over the limit");
            assert_eq!(Bisection::new(&g, part, caps).rank(), with, "seed {seed}: recount");
        }
    }

    #[test]
    fn recursive_strong_partition_is_balanced_for_odd_k() {
        let g = grid(30, 20);
        let s = Strong { repetitions: Some(2), ..Strong::default() };
        for k in [3, 4, 5] {
            let part = partition(&g, k, 0.05, &s, &RefineParams::default());
            assert!(metrics::is_balanced(&g, &part, k, 0.05), "k={k}: {:?}", metrics::part_weights(&g, &part, k));
        }
    }
}
