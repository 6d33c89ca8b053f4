//! The flow-clustering initial partition: cluster subtasks by flow relations into sets,
//! assign the sets to k parts at random, then move random sets to random parts,
//! keeping each move that does not raise the cut (critical cut, then total cut).
//!
//! Clustering by flow relations: subtasks are visited in flow order; each joins
//! the set of the predecessor it shares the most critical value with (then the
//! most weight), unless that set would grow past the size bound, in which case
//! it opens a new set. Sets are therefore chains along the flow, critical
//! relations inside them first.
//!
//! Balance: random assignment puts each set in a random part that still has
//! room (the lightest part when none has), and random moves must keep the
//! destination within the load limit.

use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;

use crate::coarsen;
use crate::graph::{Graph, Vertex};
use crate::refine::State;

/// Groups vertices into flow chains of weight at most `max_weight`.
pub fn flow_clusters(g: &Graph, max_weight: i64) -> (Vec<u32>, usize) {
    let n = g.n();
    let mut map = vec![u32::MAX; n];
    let mut weight: Vec<i64> = Vec::new();
    for v in g.flow_order() {
        let wv = g.node_w[v as usize];
        let mut best: Option<(u32, (i64, i64))> = None;
        for i in g.range(v) {
            let u = g.adj[i] as usize;
            if g.rank[u] >= g.rank[v as usize] || map[u] == u32::MAX {
                continue;
            }
            let c = map[u];
            let key = (g.ec[i], g.ew[i]);
            if weight[c as usize] + wv <= max_weight && best.is_none_or(|b| key > b.1) {
                best = Some((c, key));
            }
        }
        let c = match best {
            Some((c, _)) => c,
            None => {
                weight.push(0);
                (weight.len() - 1) as u32
            }
        };
        map[v as usize] = c;
        weight[c as usize] += wv;
    }
    let groups = weight.len();
    (map, groups)
}

/// Random assignment of the vertices of `g` (sets, after contraction) to `k`
/// parts under the load limit `cap`.
pub fn random_assignment(g: &Graph, k: usize, cap: i64, rng: &mut impl Rng) -> Vec<u32> {
    let mut order: Vec<Vertex> = (0..g.n() as Vertex).collect();
    order.shuffle(rng);
    // Heavy sets first so the light ones can fill the gaps.
    order.sort_by_key(|&v| std::cmp::Reverse(g.node_w[v as usize]));
    let mut loads = vec![0i64; k];
    let mut part = vec![0u32; g.n()];
    for v in order {
        let w = g.node_w[v as usize];
        let room: Vec<usize> = (0..k).filter(|&p| loads[p] + w <= cap).collect();
        let p = match room.choose(rng) {
            Some(&p) => p,
            None => (0..k).min_by_key(|&p| loads[p]).unwrap_or(0),
        };
        part[v as usize] = p as u32;
        loads[p] += w;
    }
    part
}

/// Contiguous slices of the flow order, each about `total / k` heavy: for a
/// DAG, cutting across the flow. An alternative first assignment of the sets.
pub fn flow_slices(g: &Graph, k: usize) -> Vec<u32> {
    let total = g.total_weight().max(1);
    let mut part = vec![0u32; g.n()];
    let mut before = 0i64;
    for v in g.flow_order() {
        let w = g.node_w[v as usize];
        let mid = 2 * before + w;
        part[v as usize] = ((mid as i128 * k as i128) / (2 * total as i128)).min(k as i128 - 1) as u32;
        before += w;
    }
    part
}

/// Random moves of single vertices (sets) to random parts, kept when the cut
/// does not grow and the destination has room. `tries` moves are attempted.
pub fn random_moves(s: &mut State, tries: usize, rng: &mut impl Rng) -> usize {
    let n = s.g.n();
    if n == 0 || s.k < 2 {
        return 0;
    }
    let mut kept = 0;
    let mut gain_to = vec![(0i64, 0i64); s.k];
    for _ in 0..tries {
        let v = rng.random_range(0..n) as Vertex;
        let p = s.part[v as usize];
        let q = (p + rng.random_range(1..s.k as u32)) % s.k as u32;
        let w = s.g.node_w[v as usize];
        if s.loads[q as usize] + w > s.caps[q as usize] {
            continue;
        }
        gain_to.iter_mut().for_each(|x| *x = (0, 0));
        for i in s.g.range(v) {
            let t = &mut gain_to[s.part[s.g.adj[i] as usize] as usize];
            t.0 += s.g.ec[i];
            t.1 += s.g.ew[i];
        }
        let gain = (gain_to[q as usize].0 - gain_to[p as usize].0, gain_to[q as usize].1 - gain_to[p as usize].1);
        if gain >= (0, 0) {
            s.move_to(v, crate::refine::Move { to: q, gain });
            kept += 1;
        }
    }
    kept
}

/// The whole seed initial partition of `g`: flow clusters of at most
/// `total / (k * sets_per_part)` weight, random assignment, random moves.
pub fn seed_initial(g: &Graph, k: usize, cap: i64, sets_per_part: usize, rng: &mut impl Rng) -> Vec<u32> {
    let bound = (g.total_weight() / (k * sets_per_part).max(1) as i64).max(1);
    let (map, groups) = flow_clusters(g, bound);
    let sets = coarsen::contract(g, &map, groups);
    let part = random_assignment(&sets, k, cap, rng);
    let mut s = State::new(&sets, k, cap, part);
    random_moves(&mut s, 8 * groups, rng);
    coarsen::project(&map, &s.part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metrics;
    use rand::SeedableRng;

    #[test]
    fn flow_clusters_follow_critical_chains_within_the_bound() {
        // Two chains 0→1→2 (critical) and 3→4→5, plus a light cross relation 1→4.
        let mut b = GraphBuilder::new();
        for _ in 0..6 {
            b.add_vertex("", 1);
        }
        b.add_edge(0, 1, 1, 1);
        b.add_edge(1, 2, 1, 1);
        b.add_edge(3, 4, 1, 1);
        b.add_edge(4, 5, 1, 1);
        b.add_edge(1, 4, 9, 0);
        let g = b.build();
        let (map, groups) = flow_clusters(&g, 3);
        assert_eq!(groups, 2);
        assert!(map[0] == map[1] && map[1] == map[2]);
        assert!(map[3] == map[4] && map[4] == map[5]);
        let (_, groups) = flow_clusters(&g, 2);
        assert_eq!(groups, 4, "a bound of 2 splits each chain");
    }

    #[test]
    fn seed_initial_is_balanced() {
        let mut b = GraphBuilder::new();
        for _ in 0..40 {
            b.add_vertex("", 1);
        }
        for i in 0..39 {
            b.add_edge(i, i + 1, 1, (i % 3 == 0) as i64);
        }
        let g = b.build();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let cap = metrics::max_part_weight(&g, 4, 0.03);
        let part = seed_initial(&g, 4, cap, 4, &mut rng);
        assert!(metrics::is_balanced(&g, &part, 4, 0.03), "{:?}", metrics::part_weights(&g, &part, 4));
    }
}
