//! Localized multi-try FM (after KaFFPa's multi-try FM, Sanders and Schulz
//! 2011): many small FM searches instead of one over the whole boundary.
//!
//! A round visits the boundary vertices in random order; each one that no
//! earlier improving search of the round has moved starts a search of its own
//! ([`Bisection::search_from`]): the queues hold that vertex alone and grow
//! only by the neighbours of the vertices moved, so the search follows one
//! region of the cut as deep as its `patience` lets it, and is rolled back to
//! its best point. Global FM moves the best vertices of the whole boundary
//! first and gives up where a region needs a run of bad moves first; a local
//! search walks through them. Rounds repeat while one improves.

use rand::seq::SliceRandom;
use rand::Rng;

use crate::fm::Bisection;
use crate::graph::Vertex;

/// Moves without a new best before a localized search gives up.
pub const PATIENCE: usize = 24;

/// Rounds of localized searches at most (each must improve to go on).
pub const ROUNDS: usize = 4;

/// Localized searches over `b`'s boundary, `rounds` rounds at most; returns
/// whether the rank improved. Never raises the rank.
pub fn refine(b: &mut Bisection, patience: usize, rounds: usize, rng: &mut impl Rng) -> bool {
    let n = b.g.n();
    let mut improved = false;
    let mut moved = vec![false; n];
    for _ in 0..rounds {
        let mut seeds: Vec<Vertex> = (0..n as Vertex).filter(|&v| b.is_boundary(v)).collect();
        seeds.shuffle(rng);
        moved.fill(false);
        let mut round_improved = false;
        for v in seeds {
            if moved[v as usize] || !b.is_boundary(v) {
                continue;
            }
            // A search that found nothing leaves the vertices it tried to
            // other seeds; one that improved claims its region for the round.
            moved[v as usize] = true;
            if b.search_from(v, patience, rng) {
                round_improved = true;
                for &u in b.last_moves() {
                    moved[u as usize] = true;
                }
            }
        }
        improved |= round_improved;
        if !round_improved {
            break;
        }
    }
    improved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fm;
    use crate::generate::grid;
    use crate::metrics;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// From random splits and from FM-refined ones: never a higher rank, the
    /// loads, cut and gains as recounted, no load over the limits once none was.
    #[test]
    fn localized_searches_never_worsen_and_keep_balance() {
        let g = grid(16, 10);
        let cap = metrics::max_part_weight(&g, 2, 0.05);
        let mut rng = StdRng::seed_from_u64(7);
        for round in 0..20 {
            let part: Vec<u32> = (0..g.n()).map(|v| ((v % 16) + rng.random_range(0..4) >= 10) as u32).collect();
            let mut b = Bisection::new(&g, part, [cap, cap]);
            if round % 2 == 1 {
                b.refine(fm::patience(g.n()), 2, &mut rng);
            }
            let before = b.rank();
            refine(&mut b, PATIENCE, ROUNDS, &mut rng);
            assert!(b.rank() <= before, "round {round}: {:?} after {before:?}", b.rank());
            if before.0 == 0 {
                assert_eq!(b.excess(), 0, "round {round}");
            }
            let fresh = Bisection::new(&g, b.part.clone(), [cap, cap]);
            assert_eq!((fresh.rank(), fresh.cut), (b.rank(), b.cut), "round {round}");
        }
    }

    /// A ragged cut of a grid, balanced: localized searches alone straighten it.
    #[test]
    fn localized_searches_straighten_a_ragged_grid_cut() {
        let g = grid(20, 10);
        let cap = metrics::max_part_weight(&g, 2, 0.05);
        let part: Vec<u32> = (0..g.n()).map(|v| ((v % 20) + (v / 20) % 2 >= 10) as u32).collect();
        let mut b = Bisection::new(&g, part, [cap, cap]);
        assert_eq!(b.cut.1, 19);
        assert!(refine(&mut b, PATIENCE, 16, &mut StdRng::seed_from_u64(3)));
        assert_eq!((b.excess(), b.cut.1), (0, 10));
    }
}
