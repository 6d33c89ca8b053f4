//! Iterated local search on a finished bisection: kick, refine, keep the
//! better.
//!
//! A kick takes a random boundary vertex and the vertices reached from it
//! breadth-first on its own side (at most `size` of them, and no more load
//! than the other side has room for) and moves them all across. FM passes
//! ([`crate::fm`]) and flow cuts ([`crate::flow_refine`]) then repair the
//! cut around the dent; the result replaces the incumbent when it ranks no
//! worse (equal ranks are taken, so the search walks across plateaus). A
//! region that FM alone cannot leave — a run of bad moves around a hub —
//! is crossed by the kick in one step. The incumbent never gets worse.

use std::collections::VecDeque;

use rand::Rng;

use crate::flow_refine;
use crate::fm::{self, Bisection, Rank};
use crate::graph::{Graph, Vertex};

/// FM passes after a kick at most.
const MAX_PASSES: usize = 8;

/// `part` with a ball of at most `size` vertices around a random boundary
/// vertex moved to the other side (within that side's limit); `part` itself
/// when it has no boundary.
pub fn kicked(b: &Bisection, size: usize, rng: &mut impl Rng) -> Vec<u32> {
    let g = b.g;
    let boundary: Vec<Vertex> = (0..g.n() as Vertex).filter(|&v| b.is_boundary(v)).collect();
    let mut part = b.part.clone();
    if boundary.is_empty() {
        return part;
    }
    let start = boundary[rng.random_range(0..boundary.len())];
    let side = part[start as usize];
    let to = 1 - side as usize;
    let mut room = b.caps[to] - b.loads[to];
    let mut queue = VecDeque::from([start]);
    let mut seen = vec![false; g.n()];
    seen[start as usize] = true;
    let mut moved = 0;
    while let Some(v) = queue.pop_front() {
        if moved == size || g.node_w[v as usize] > room {
            break;
        }
        part[v as usize] = to as u32;
        room -= g.node_w[v as usize];
        moved += 1;
        for e in g.range(v) {
            let u = g.adj[e];
            if !seen[u as usize] && part[u as usize] == side {
                seen[u as usize] = true;
                queue.push_back(u);
            }
        }
    }
    part
}

/// An iterated local search: `kicks` kicks from a partition under the
/// limits `caps`, each of 1..=`max_size` vertices (drawn at random), each
/// refined by FM (and flow cuts with `flow`) and kept when it ranks no worse.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    pub caps: [i64; 2],
    pub kicks: usize,
    pub max_size: usize,
    pub flow: bool,
}

impl Search {
    /// Runs the kicks from `part`, stopping early once `stop()` says so.
    /// Returns the incumbent and its rank, never worse than `part`'s.
    pub fn run(&self, g: &Graph, part: Vec<u32>, rng: &mut impl Rng, stop: impl Fn() -> bool) -> (Vec<u32>, Rank) {
        let mut best = Bisection::new(g, part, self.caps);
        for _ in 0..self.kicks {
            if stop() {
                break;
            }
            let size = rng.random_range(1..=self.max_size.max(1));
            let mut b = Bisection::new(g, kicked(&best, size, rng), self.caps);
            b.refine(fm::patience(g.n()), MAX_PASSES, rng);
            if self.flow {
                flow_refine::refine(&mut b, &flow_refine::ALPHAS, rng);
            }
            if b.rank() <= best.rank() {
                best = b;
            }
        }
        let rank = best.rank();
        (best.part, rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::grid;
    use crate::metrics;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// A kick moves a connected ball of at most `size` vertices from one
    /// side to the other and never fills the other side past its limit.
    #[test]
    fn a_kick_moves_a_bounded_ball_within_the_limit() {
        let g = grid(20, 10);
        let part: Vec<u32> = (0..g.n()).map(|v| u32::from(v % 20 >= 10)).collect();
        let cap = metrics::max_part_weight(&g, 2, 0.05);
        let b = Bisection::new(&g, part.clone(), [cap, cap]);
        let mut rng = StdRng::seed_from_u64(2);
        for size in [1, 3, 7, 40] {
            let k = kicked(&b, size, &mut rng);
            let moved: Vec<usize> = (0..g.n()).filter(|&v| k[v] != part[v]).collect();
            assert!(!moved.is_empty() && moved.len() <= size, "size {size}: moved {}", moved.len());
            let to = k[moved[0]];
            assert!(moved.iter().all(|&v| k[v] == to), "size {size}: one direction");
            assert!(metrics::part_weights(&g, &k, 2).iter().all(|&w| w <= cap), "size {size}: over the limit");
        }
    }

    /// From ragged, refined bisections of a grid the search never ends worse
    /// than its start, stays within the limits, reports the rank a recount
    /// gives, and repeats by seed.
    #[test]
    fn the_search_never_ends_worse_than_its_start() {
        let g = grid(30, 12);
        let cap = metrics::max_part_weight(&g, 2, 0.05);
        for seed in 0..6 {
            let mut rng = StdRng::seed_from_u64(seed);
            let random: Vec<u32> = (0..g.n()).map(|_| rng.random_range(0..2)).collect();
            let mut start = Bisection::new(&g, random, [cap, cap]);
            start.refine(fm::patience(g.n()), 1, &mut rng);
            let before = start.rank();
            let search = Search { caps: [cap, cap], kicks: 30, max_size: 12, flow: seed % 2 == 0 };
            let run = |r: &mut StdRng| search.run(&g, start.part.clone(), r, || false);
            let (part, rank) = run(&mut StdRng::seed_from_u64(seed));
            assert!(rank <= before, "seed {seed}: {rank:?} worse than {before:?}");
            assert_eq!(rank.0, 0, "seed {seed}: over the limit");
            assert_eq!(Bisection::new(&g, part.clone(), [cap, cap]).rank(), rank, "seed {seed}: recount");
            assert_eq!(run(&mut StdRng::seed_from_u64(seed)).0, part, "seed {seed}: same seed, same result");
        }
    }
}
