//! The default driver's path for the plain cut in two parts (no critical
//! relation, k = 2): the coarsest graph's bisection and the refinement at each
//! level use two-way FM ([`crate::fm`]: gains kept exact by O(1) updates per
//! neighbour, boundary-only queues, early exit after `patience` moves past the
//! best point) instead of the k-way critical-gain refinement, which weighs
//! every move target of every neighbour again after each move and made up most
//! of the default driver's time on the Walshaw graphs (docs/partition.md).

use rand::rngs::StdRng;
use rand::Rng;

use crate::bisection;
use crate::fm::{self, Bisection};
use crate::graph::{Graph, Vertex};

/// Bisections tried on the coarsest graph: with blocked vertices requeued
/// (see [`refine`]) four gave lower mean cuts than ten without, in less time,
/// on the Walshaw graphs (docs/partition.md).
pub const TRIES: usize = 4;

/// FM patience at the finer levels, in percent of the coarsest graph's:
/// longer tails there found lower cuts on the Walshaw graphs (150% as low as
/// 200%, in less time).
pub const LEVEL_PATIENCE_PERCENT: usize = 150;

/// FM passes per refinement (passes stop earlier when one does not improve).
const MAX_PASSES: usize = 8;

/// Whether the driver takes this path: two parts, no critical relation.
pub fn applies(g: &Graph, k: usize) -> bool {
    k == 2 && g.critical_edges() == 0
}

/// The best of `tries` FM-refined bisections of `g` within `caps`: a cut of the
/// flow order, then greedy graph growing from a peripheral vertex and from
/// random ones (targets: half the load each).
pub fn initial(g: &Graph, caps: [i64; 2], tries: usize, patience: usize, rng: &mut StdRng) -> Vec<u32> {
    let target0 = g.total_weight() / 2;
    let mut best: Option<(Vec<u32>, fm::Rank)> = None;
    for t in 0..tries.max(1) {
        let init = match t {
            0 => bisection::flow_cut(g, target0),
            1 => bisection::grow(g, bisection::peripheral(g, rng), target0, caps[0]),
            _ => bisection::grow(g, rng.random_range(0..g.n() as Vertex), target0, caps[0]),
        };
        let (part, rank) = refine(g, caps, init, patience, rng);
        if best.as_ref().is_none_or(|b| rank < b.1) {
            best = Some((part, rank));
        }
    }
    best.expect("at least one try").0
}

/// `part` refined by FM passes within `caps`; returns it and its rank
/// (load over the limits, cut, load difference). A vertex whose move is
/// blocked by a full side waits in the pass until that side sheds load
/// ([`Bisection::requeue`]): on coarse graphs of uneven vertex weights this
/// lets FM swap vertices between full sides.
pub fn refine(g: &Graph, caps: [i64; 2], part: Vec<u32>, patience: usize, rng: &mut StdRng) -> (Vec<u32>, fm::Rank) {
    let mut b = Bisection::new(g, part, caps);
    b.requeue = true;
    b.refine(patience, MAX_PASSES, rng);
    let rank = b.rank();
    (b.part, rank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critical::{self, CriticalRule, CriticalValue};
    use crate::generate::{grid, layered_dag};
    use crate::metrics;
    use crate::multilevel::{self, Params};
    use rand::SeedableRng;

    #[test]
    fn applies_to_two_parts_without_critical_relations_only() {
        let plain = grid(8, 4);
        assert!(applies(&plain, 2));
        assert!(!applies(&plain, 4), "k > 2 keeps the k-way refinement");
        let mut dag = layered_dag(300, 1);
        critical::mark(&mut dag, CriticalRule::default(), CriticalValue::Unit);
        assert!(dag.critical_edges() > 0);
        assert!(!applies(&dag, 2), "critical relations keep the critical-gain path");
    }

    #[test]
    fn the_initial_bisection_of_a_grid_is_a_straight_cut_within_the_limits() {
        // 24 x 8: no bisection cuts fewer than the 8 relations of a straight cut.
        let g = grid(24, 8);
        let caps = [100, 100];
        for seed in 0..5 {
            let mut rng = StdRng::seed_from_u64(seed);
            let part = initial(&g, caps, TRIES, 64, &mut rng);
            let loads = metrics::part_weights(&g, &part, 2);
            assert!(loads.iter().all(|&l| l <= 100), "seed {seed}: loads {loads:?}");
            assert_eq!(metrics::cut(&g, &part).total, 8, "seed {seed}");
        }
    }

    #[test]
    fn refinement_repairs_balance_and_never_raises_the_rank() {
        // A 16 x 8 grid split 96 / 32 against limits of 68: FM must move 28+
        // vertices over, then keep the cut low.
        let g = grid(16, 8);
        let part: Vec<u32> = (0..g.n()).map(|v| u32::from(v % 16 >= 12)).collect();
        let start = Bisection::new(&g, part.clone(), [68, 68]).rank();
        assert!(start.0 > 0, "the start is over the limit");
        let (refined, rank) = refine(&g, [68, 68], part, 64, &mut StdRng::seed_from_u64(2));
        assert!(rank <= start);
        assert_eq!(rank.0, 0, "balanced after refinement");
        assert_eq!(rank.1 .1, metrics::cut(&g, &refined).total);
        assert!(rank.1 .1 <= 12, "cut {}", rank.1 .1);
    }

    /// Uneven vertex weights (1–9, as on coarse levels): refinement with
    /// requeued blocked moves stays within the limits, its rank is that of
    /// a recount, and it never ends above its start.
    #[test]
    fn refinement_with_uneven_weights_stays_exact_and_within_the_limits() {
        let mut g = grid(20, 10);
        for (v, w) in g.node_w.iter_mut().enumerate() {
            *w = 1 + (v * 7 % 9) as i64;
        }
        let cap = metrics::max_part_weight(&g, 2, 0.05);
        for seed in 0..6 {
            let mut rng = StdRng::seed_from_u64(seed);
            let part = bisection::grow(&g, rng.random_range(0..g.n() as Vertex), g.total_weight() / 2, cap);
            let start = Bisection::new(&g, part.clone(), [cap, cap]).rank();
            let (refined, rank) = refine(&g, [cap, cap], part, 64, &mut rng);
            assert!(rank <= start, "seed {seed}");
            assert_eq!(rank.0, 0, "seed {seed}: over the limit");
            assert_eq!(Bisection::new(&g, refined, [cap, cap]).rank(), rank, "seed {seed}");
        }
    }

    #[test]
    fn the_default_driver_takes_this_path_deterministically() {
        // A 60 x 30 grid at 5%: balanced, near the straight cut of 30, and the
        // same partition for the same seed.
        let g = grid(60, 30);
        let p = Params { epsilon: 0.05, seed: 3, ..Params::new(2) };
        let a = multilevel::partition(&g, &p);
        let b = multilevel::partition(&g, &p);
        assert_eq!(a.part, b.part);
        assert!(a.balanced);
        assert!(a.cut.total <= 40, "cut {}", a.cut.total);
    }
}
