//! Initial k-way partitions by recursive bisection (for k a power of two): the
//! graph is split in two, each half split again, and so on. Each bisection
//! tries a flow-order slice, regions grown greedily from random vertices
//! (graph growing: the frontier vertex that keeps the most critical value, then
//! weight, inside joins next, until half the load), and the seed's initial
//! partition; each is refined with the critical-gain refinement and the best
//! kept. The balance limit of each bisection is chosen
//! so that the product over the levels stays within the k-way limit.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

use crate::clustering;
use crate::graph::{Graph, Vertex};
use crate::metrics;
use crate::refine::{self, RefineParams};

/// The subgraph induced by the vertices with `keep[v]`, and the original id of
/// each of its vertices.
pub fn induced(g: &Graph, keep: &[bool]) -> (Graph, Vec<Vertex>) {
    let order: Vec<Vertex> = g.flow_order().into_iter().filter(|&v| keep[v as usize]).collect();
    let mut new_id = vec![u32::MAX; g.n()];
    let mut old: Vec<Vertex> = (0..g.n() as Vertex).filter(|&v| keep[v as usize]).collect();
    for (i, &v) in old.iter().enumerate() {
        new_id[v as usize] = i as u32;
    }
    let mut rank = vec![0u32; old.len()];
    for (r, &v) in order.iter().enumerate() {
        rank[new_id[v as usize] as usize] = r as u32;
    }
    let mut xadj = vec![0usize];
    let (mut adj, mut ew, mut ec) = (Vec::new(), Vec::new(), Vec::new());
    for &v in &old {
        for i in g.range(v) {
            let u = new_id[g.adj[i] as usize];
            if u != u32::MAX {
                adj.push(u);
                ew.push(g.ew[i]);
                ec.push(g.ec[i]);
            }
        }
        xadj.push(adj.len());
    }
    let names = old.iter().map(|&v| g.names.get(v as usize).cloned().unwrap_or_default()).collect();
    let node_w = old.iter().map(|&v| g.node_w[v as usize]).collect();
    old.shrink_to_fit();
    (Graph { names, node_w, rank, xadj, adj, ew, ec }, old)
}

/// Grows part 0 from `start` until it holds half the load; the rest is part 1.
pub fn grow_region(g: &Graph, start: Vertex, rng: &mut StdRng) -> Vec<u32> {
    let n = g.n();
    let half = g.total_weight() / 2;
    let mut part = vec![1u32; n];
    // Gain of moving v into part 0: its relations to part 0 minus those to part 1.
    let gain = |part: &[u32], v: Vertex| -> (i64, i64) {
        let mut d = (0, 0);
        for i in g.range(v) {
            let s = if part[g.adj[i] as usize] == 0 { 1 } else { -1 };
            d = (d.0 + s * g.ec[i], d.1 + s * g.ew[i]);
        }
        d
    };
    let mut heap = BinaryHeap::new();
    let mut load = 0i64;
    heap.push((gain(&part, start), Reverse(start)));
    while load < half {
        let v = match heap.pop() {
            Some((d, Reverse(v))) => {
                if part[v as usize] == 0 || d != gain(&part, v) {
                    if part[v as usize] != 0 {
                        heap.push((gain(&part, v), Reverse(v)));
                    }
                    continue;
                }
                v
            }
            // A disconnected rest: start again from a random vertex outside.
            None => {
                let rest: Vec<Vertex> = (0..n as Vertex).filter(|&v| part[v as usize] == 1).collect();
                match rest.choose(rng) {
                    Some(&v) => v,
                    None => break,
                }
            }
        };
        if load + g.node_w[v as usize] > half && load > 0 {
            break;
        }
        part[v as usize] = 0;
        load += g.node_w[v as usize];
        for i in g.range(v) {
            let u = g.adj[i];
            if part[u as usize] == 1 {
                heap.push((gain(&part, u), Reverse(u)));
            }
        }
    }
    part
}

/// One balanced bisection of `g`, best of `tries`.
fn bisect(g: &Graph, epsilon: f64, tries: usize, refine_p: &RefineParams, rng: &mut StdRng) -> Vec<u32> {
    // Room for at least one vertex past the average, so that heavy vertices can move.
    let heaviest = g.node_w.iter().copied().max().unwrap_or(1);
    let cap = metrics::max_part_weight(g, 2, epsilon).max(g.total_weight() / 2 + heaviest);
    let init =
        |t: usize| if t == 0 { clustering::flow_slices(g, 2) } else { clustering::seed_initial(g, 2, cap, 8, rng) };
    refine::best_of(g, 2, cap, tries, refine_p, init).0
}

/// A k-way partition of `g` by recursive bisection; `k` must be a power of two.
pub fn recursive(
    g: &Graph,
    k: usize,
    epsilon: f64,
    tries: usize,
    refine_p: &RefineParams,
    rng: &mut StdRng,
) -> Vec<u32> {
    assert!(k.is_power_of_two(), "recursive bisection needs a power of two, got {k}");
    let levels = k.trailing_zeros() as i32;
    let eps = if levels > 0 { (1.0 + epsilon).powf(1.0 / levels as f64) - 1.0 } else { epsilon };
    let mut part = vec![0u32; g.n()];
    split(g, &(0..g.n() as Vertex).collect::<Vec<_>>(), k, 0, eps, tries, refine_p, rng, &mut part);
    part
}

#[allow(clippy::too_many_arguments)]
fn split(
    g: &Graph,
    ids: &[Vertex],
    k: usize,
    first: u32,
    eps: f64,
    tries: usize,
    refine_p: &RefineParams,
    rng: &mut StdRng,
    part: &mut [u32],
) {
    if k == 1 || g.n() < 2 {
        for &v in ids {
            part[v as usize] = first;
        }
        return;
    }
    let halves = bisect(g, eps, tries, refine_p, rng);
    for side in 0..2u32 {
        let keep: Vec<bool> = halves.iter().map(|&p| p == side).collect();
        let (sub, old) = induced(g, &keep);
        let sub_ids: Vec<Vertex> = old.iter().map(|&v| ids[v as usize]).collect();
        split(&sub, &sub_ids, k / 2, first + side * (k / 2) as u32, eps, tries, refine_p, rng, part);
    }
}
