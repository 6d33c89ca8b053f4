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

/// Bisections tried on the coarsest graph (each cheap with FM: ten gave
/// the same mean cut as the k-way path's four in about half the time on the
/// Walshaw graphs, docs/partition.md).
pub const TRIES: usize = 10;

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
/// (load over the limits, cut, load difference).
pub fn refine(g: &Graph, caps: [i64; 2], part: Vec<u32>, patience: usize, rng: &mut StdRng) -> (Vec<u32>, fm::Rank) {
    let mut b = Bisection::new(g, part, caps);
    b.refine(patience, MAX_PASSES, rng);
    let rank = b.rank();
    (b.part, rank)
}
