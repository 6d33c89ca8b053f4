//! Evolutionary search over bisections, after KaFFPaE (Sanders and Schulz):
//! a small population of partitions, improved by combining pairs.
//!
//! - [`combine`]: coarsen pairing only vertices that both parents put on the
//!   same side (so no relation cut by either parent is contracted), start the
//!   coarsest graph from the better parent, and refine on the way back. Every
//!   level holds the better parent exactly and refinement never raises the
//!   rank, so the child is never worse than its better parent; the cut
//!   relations of the other parent stay visible to the refinement.
//! - [`Population`]: a new member replaces the member most like it among
//!   those it is at least as good as (distance: vertices on different sides,
//!   up to swapping the sides), so the population keeps different partitions;
//!   parents are picked by two binary tournaments.

use rand::rngs::StdRng;
use rand::Rng;

use crate::fm::{self, Bisection};
use crate::graph::Graph;
use crate::strong::{self, Guide, Strong};

/// A child of `a` and `b`, never worse than the better of them.
pub fn combine(g: &Graph, caps: [i64; 2], s: &Strong, a: &[u32], b: &[u32], rng: &mut StdRng) -> (Vec<u32>, fm::Rank) {
    let rank_a = Bisection::new(g, a.to_vec(), caps).rank();
    let rank_b = Bisection::new(g, b.to_vec(), caps).rank();
    // Label 2·side(a) + side(b): a group of equal labels lies on one side in both.
    let labels: Vec<u32> = a.iter().zip(b).map(|(&x, &y)| 2 * x + y).collect();
    let side: fn(u32) -> u32 = if rank_a <= rank_b { |l| l >> 1 } else { |l| l & 1 };
    strong::cycle(g, caps, s, Some(Guide { labels: &labels, side }), rng)
}

/// Partitions and their ranks, at most `capacity` of them.
pub struct Population {
    members: Vec<(Vec<u32>, fm::Rank)>,
    capacity: usize,
}

impl Population {
    pub fn new(capacity: usize) -> Self {
        Population { members: Vec::new(), capacity: capacity.max(2) }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn member(&self, i: usize) -> &(Vec<u32>, fm::Rank) {
        &self.members[i]
    }

    /// The member of least rank.
    pub fn best(&self) -> Option<&(Vec<u32>, fm::Rank)> {
        self.members.iter().min_by_key(|m| m.1)
    }

    /// Takes `part` in while there is room (unless it is there already);
    /// then in place of the most similar member that ranks no better. Returns
    /// whether it was taken.
    pub fn offer(&mut self, part: Vec<u32>, rank: fm::Rank) -> bool {
        let distances: Vec<usize> = self.members.iter().map(|m| distance(&m.0, &part)).collect();
        if distances.contains(&0) {
            return false;
        }
        if self.members.len() < self.capacity {
            self.members.push((part, rank));
            return true;
        }
        let most_similar = (0..self.members.len()).filter(|&i| self.members[i].1 >= rank).min_by_key(|&i| distances[i]);
        match most_similar {
            Some(i) => {
                self.members[i] = (part, rank);
                true
            }
            None => false,
        }
    }

    /// Two different members, each the better of two drawn at random.
    pub fn parents(&self, rng: &mut impl Rng) -> (usize, usize) {
        let n = self.members.len();
        let tournament = |draw: &mut dyn FnMut() -> usize| {
            let (x, y) = (draw(), draw());
            if self.members[x].1 <= self.members[y].1 {
                x
            } else {
                y
            }
        };
        let mut draw = || rng.random_range(0..n);
        let a = tournament(&mut draw);
        let mut b = tournament(&mut draw);
        if b == a && n > 1 {
            b = (a + 1 + draw() % (n - 1)) % n;
        }
        (a, b)
    }
}

/// Vertices on different sides, up to swapping the sides of one.
fn distance(a: &[u32], b: &[u32]) -> usize {
    let differ = a.iter().zip(b).filter(|(x, y)| x != y).count();
    differ.min(a.len() - differ)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::grid;
    use rand::SeedableRng;

    #[test]
    fn population_keeps_distinct_members_and_replaces_the_most_similar_worse_one() {
        let mut p = Population::new(2);
        assert!(p.offer(vec![0, 0, 1, 1], (0, (0, 4), 0)));
        assert!(!p.offer(vec![1, 1, 0, 0], (0, (0, 4), 0)), "the same bisection with sides swapped");
        assert!(p.offer(vec![0, 1, 0, 1], (0, (0, 9), 0)));
        // Full: a better one replaces the member closest to it that it beats.
        assert!(p.offer(vec![0, 1, 1, 1], (0, (0, 3), 0)));
        assert_eq!(p.len(), 2);
        assert_eq!(p.best().unwrap().1, (0, (0, 3), 0));
        // A worse one than every member is refused.
        assert!(!p.offer(vec![0, 1, 1, 0], (0, (0, 20), 0)));
    }

    /// On a grid, children of random refined bisections are never worse than
    /// the better parent and stay within the limits.
    #[test]
    fn combine_never_returns_worse_than_the_better_parent() {
        let g = grid(40, 16);
        let caps = strong::caps(&g, 0.05);
        let s = Strong { vcycles: Some(0), initial_tries: 1, ..Strong::default() };
        let mut rng = StdRng::seed_from_u64(11);
        for round in 0..12 {
            let a = strong::cycle(&g, caps, &s, None, &mut rng);
            // A deliberately weaker parent: a random split, refined once.
            let random: Vec<u32> = (0..g.n()).map(|_| rng.random_range(0..2)).collect();
            let mut weak = Bisection::new(&g, random, caps);
            weak.refine(fm::patience(g.n()), 1, &mut rng);
            let b = (weak.part.clone(), weak.rank());
            for (x, y) in [(&a, &b), (&b, &a)] {
                let (child, rank) = combine(&g, caps, &s, &x.0, &y.0, &mut rng);
                let better = x.1.min(y.1);
                assert!(rank <= better, "round {round}: {rank:?} worse than {better:?}");
                assert_eq!(rank.0, 0, "round {round}: over the limit");
                assert_eq!(Bisection::new(&g, child, caps).rank(), rank, "round {round}: rank as recounted");
            }
        }
    }
}
