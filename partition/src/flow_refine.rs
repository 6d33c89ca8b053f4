//! Flow-based refinement of a bisection (after KaFFPa, Sanders and Schulz):
//! a corridor around the cut — vertices of each side within breadth-first
//! reach of the boundary, up to a load budget — becomes a flow network whose
//! source stands for the rest of side 0 and whose sink for the rest of side 1.
//! A minimum cut of that network is the least cut any reassignment of the
//! corridor can reach. With budgets up to what the other side has room for
//! (`alpha` = 1) every such cut keeps the balance; larger `alpha` gives wider
//! corridors whose cuts may not, so each candidate — the minimum cut next to
//! the source and the one next to the sink — is followed by FM, which puts
//! balance first, and kept only when the rank improves. Besides the minimum
//! cuts next to the source and next to the sink, the most balanced of the
//! minimum cuts a random sweep passes between them
//! ([`Network::min_cut_sweep`], after KaFFPa's most balanced minimum cut) is
//! tried. Larger `alpha` first; after a failure the next smaller one.

use std::collections::VecDeque;

use rand::seq::SliceRandom;
use rand::Rng;

use crate::fm::{self, Bisection};
use crate::graph::{Graph, Vertex};
use crate::maxflow::Network;

/// Corridor widths tried, as multiples of the room on the other side.
pub const ALPHAS: [f64; 4] = [8.0, 4.0, 2.0, 1.0];

/// FM passes after a flow cut at most.
const FM_PASSES: usize = 4;

/// Improves `b` by flow cuts while they help; returns whether it did.
pub fn refine(b: &mut Bisection, alphas: &[f64], rng: &mut impl Rng) -> bool {
    let mut improved = false;
    let mut i = 0;
    while i < alphas.len() {
        match flow_step(b, alphas[i], rng) {
            Some(better) => {
                *b = better;
                improved = true;
            }
            None => i += 1,
        }
    }
    improved
}

/// The best of three minimum cuts of the corridor of width `alpha` (next to
/// the source, next to the sink, the most balanced of a sweep), each refined
/// by FM, when it ranks below `b`.
fn flow_step<'g>(b: &Bisection<'g>, alpha: f64, rng: &mut impl Rng) -> Option<Bisection<'g>> {
    let g = b.g;
    let region = corridor(b, alpha, rng);
    let nodes: Vec<Vertex> = (0..g.n() as Vertex).filter(|&v| region[v as usize]).collect();
    if nodes.is_empty() {
        return None;
    }
    let mut index = vec![u32::MAX; g.n()];
    for (i, &v) in nodes.iter().enumerate() {
        index[v as usize] = i as u32;
    }
    let (source, sink) = (nodes.len(), nodes.len() + 1);
    let mut net = Network::new(nodes.len() + 2);
    let scale = critical_scale(g);
    for (i, &v) in nodes.iter().enumerate() {
        for e in g.range(v) {
            let u = g.adj[e] as usize;
            let cap = g.ec[e] * scale + g.ew[e];
            match index[u] {
                j if j != u32::MAX => {
                    if (j as usize) > i {
                        net.add_edge(i, j as usize, cap);
                    }
                }
                _ if b.part[u] == 0 => net.add_edge(i, source, cap),
                _ => net.add_edge(i, sink, cap),
            }
        }
    }
    net.max_flow(source, sink);
    let groups = net.min_cut_sweep(source, sink, rng);
    // Side 0's load for each prefix of groups: side 0 outside the corridor plus the corridor nodes taken.
    let outside0: i64 =
        b.loads[0] - nodes.iter().filter(|&&v| b.part[v as usize] == 0).map(|&v| g.node_w[v as usize]).sum::<i64>();
    let total = b.loads[0] + b.loads[1];
    let mut load0 = outside0;
    let mut balance = Vec::with_capacity(groups.len());
    for group in &groups {
        load0 += group.iter().filter(|&&x| x < nodes.len()).map(|&x| g.node_w[nodes[x] as usize]).sum::<i64>();
        let excess = (load0 - b.caps[0]).max(0) + (total - load0 - b.caps[1]).max(0);
        balance.push((excess, (2 * load0 - total).abs()));
    }
    let most_balanced = (0..groups.len()).min_by_key(|&i| balance[i]).unwrap_or(0);
    let mut prefixes = vec![1, groups.len(), most_balanced + 1];
    prefixes.dedup();
    let mut best: Option<Bisection<'g>> = None;
    for prefix in prefixes {
        let mut part = b.part.clone();
        for &v in &nodes {
            part[v as usize] = 1;
        }
        for &x in groups[..prefix].iter().flatten() {
            if x < nodes.len() {
                part[nodes[x] as usize] = 0;
            }
        }
        let mut c = Bisection::new(g, part, b.caps);
        c.refine(fm::patience(g.n()), FM_PASSES, rng);
        if c.rank() < b.rank() && best.as_ref().is_none_or(|x| c.rank() < x.rank()) {
            best = Some(c);
        }
    }
    best
}

/// Capacities `critical · scale + weight` rank cuts by (critical, total)
/// value, as the gains do, with `scale` above the total weight; when that
/// could overflow, `scale` is 1 (the rank check still decides).
fn critical_scale(g: &Graph) -> i64 {
    let halve = |x: &[i64]| x.iter().sum::<i64>() / 2;
    let (critical, weight) = (halve(&g.ec), halve(&g.ew));
    let scale = weight + 1;
    match critical.checked_mul(scale).and_then(|c| c.checked_add(weight)) {
        Some(_) if critical > 0 => scale,
        _ => 1,
    }
}

/// The corridor: from each side, the vertices reached breadth-first from its
/// boundary (in random order) while their load stays within the budget, the
/// other side's room times `alpha` past its share of the load.
fn corridor(b: &Bisection, alpha: f64, rng: &mut impl Rng) -> Vec<bool> {
    let g = b.g;
    let total = b.loads[0] + b.loads[1];
    let mut region = vec![false; g.n()];
    for side in 0..2u32 {
        let other = 1 - side as usize;
        let share = total as f64 * b.caps[other] as f64 / (b.caps[0] + b.caps[1]).max(1) as f64;
        let budget = share + alpha * (b.caps[other] as f64 - share) - b.loads[other] as f64;
        let mut starts: Vec<Vertex> = (0..g.n() as Vertex)
            .filter(|&v| b.part[v as usize] == side && g.range(v).any(|e| b.part[g.adj[e] as usize] != side))
            .collect();
        starts.shuffle(rng);
        let mut queue: VecDeque<Vertex> = VecDeque::new();
        let mut load = 0.0;
        let mut take = |v: Vertex, queue: &mut VecDeque<Vertex>, region: &mut [bool]| {
            let w = g.node_w[v as usize] as f64;
            if region[v as usize] || load + w > budget {
                return false;
            }
            load += w;
            region[v as usize] = true;
            queue.push_back(v);
            true
        };
        for &v in &starts {
            take(v, &mut queue, &mut region);
        }
        while let Some(v) = queue.pop_front() {
            for e in g.range(v) {
                let u = g.adj[e];
                if b.part[u as usize] == side {
                    take(u, &mut queue, &mut region);
                }
            }
        }
    }
    region
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::grid;
    use crate::metrics;
    use crate::strong;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// A bisection of a grid with a staircase cut: the flow straightens it,
    /// never raises the rank and keeps the balance.
    #[test]
    fn flow_refinement_straightens_a_ragged_grid_cut() {
        let g = grid(20, 10);
        let caps = strong::caps(&g, 0.05);
        let mut rng = StdRng::seed_from_u64(2);
        // Columns 0..10 on side 0, with a ragged border of alternate rows shifted by one.
        let part: Vec<u32> = (0..g.n()).map(|v| ((v % 20) + (v / 20) % 2 >= 10) as u32).collect();
        let mut b = Bisection::new(&g, part, caps);
        let before = b.rank();
        assert!(metrics::cut(&g, &b.part).total > 10);
        assert!(refine(&mut b, &ALPHAS, &mut rng));
        assert!(b.rank() < before);
        assert_eq!(b.excess(), 0);
        assert_eq!(metrics::cut(&g, &b.part).total, 10, "the straight cut across the 10 rows");
        assert_eq!(Bisection::new(&g, b.part.clone(), caps).rank(), b.rank());
    }
}
