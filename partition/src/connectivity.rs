//! Per-vertex, per-part sums of relation values — for every vertex v and part
//! q, the (critical value, weight) of v's relations to vertices in q — kept up
//! to date move by move, so that weighing a vertex's moves costs O(k) instead
//! of a walk over its relations (which, redone for every neighbour after
//! every move, made the k-way refinement O(degree²) per move on coarse
//! graphs).

use crate::graph::{Graph, Vertex};

/// The sums table of one partition.
pub struct Connectivity {
    k: usize,
    /// `sums[v * k + q]`: (critical, weight) of v's relations into part q.
    sums: Vec<(i64, i64)>,
    /// Whether a zero sum means "no relation into that part": true when every
    /// relation has non-negative values, not both zero. Where it fails,
    /// callers fall back to walking the relations.
    exact: bool,
    /// The largest sum of critical values over one vertex's relations (a
    /// bound on any move's critical gain); `i64::MAX` unless `exact`.
    crit_bound: i64,
}

impl Connectivity {
    /// The table of `part` (parts below `k`) on `g`.
    pub fn new(g: &Graph, part: &[u32], k: usize) -> Self {
        // Row by row (each zeroed as it is summed, while in cache), not a
        // zeroed table first: on large graphs the table is many megabytes.
        let mut sums = Vec::with_capacity(g.n() * k);
        let mut crit_bound = 0i64;
        for v in 0..g.n() as Vertex {
            let start = sums.len();
            sums.resize(start + k, (0i64, 0i64));
            let row = &mut sums[start..];
            let mut crit = 0i64;
            let r = g.range(v);
            for ((&u, &c), &w) in g.adj[r.clone()].iter().zip(&g.ec[r.clone()]).zip(&g.ew[r]) {
                let s = &mut row[part[u as usize] as usize];
                s.0 += c;
                s.1 += w;
                crit += c;
            }
            crit_bound = crit_bound.max(crit);
        }
        let exact = g.ec.iter().zip(&g.ew).all(|(&c, &w)| c >= 0 && w >= 0 && (c, w) != (0, 0));
        // Without negative values, the sum is the bound; otherwise none is kept.
        let crit_bound = if exact { crit_bound } else { i64::MAX };
        Connectivity { k, sums, exact, crit_bound }
    }

    /// A bound on the critical gain of any move (`i64::MAX` where relations
    /// may carry negative values).
    #[inline]
    pub fn crit_bound(&self) -> i64 {
        self.crit_bound
    }

    /// Whether zero sums mark exactly the parts without a relation to a vertex.
    #[inline]
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// The sums of `v`'s relations into each part.
    #[inline]
    pub fn row(&self, v: Vertex) -> &[(i64, i64)] {
        &self.sums[v as usize * self.k..(v as usize + 1) * self.k]
    }

    /// Records that `v` moved from part `from` to part `to`: its neighbours'
    /// sums shift between the two parts.
    #[inline]
    pub fn moved(&mut self, g: &Graph, v: Vertex, from: u32, to: u32) {
        let k = self.k;
        let r = g.range(v);
        for ((&u, &c), &w) in g.adj[r.clone()].iter().zip(&g.ec[r.clone()]).zip(&g.ew[r]) {
            let base = u as usize * k;
            let s = &mut self.sums[base + from as usize];
            s.0 -= c;
            s.1 -= w;
            let s = &mut self.sums[base + to as usize];
            s.0 += c;
            s.1 += w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;

    #[test]
    fn sums_follow_moves_and_match_a_fresh_table() {
        let mut b = GraphBuilder::new();
        for i in 0..5 {
            b.add_vertex(format!("v{i}"), 1);
        }
        b.add_edge(0, 1, 3, 1);
        b.add_edge(1, 2, 5, 0);
        b.add_edge(2, 3, 7, 1);
        b.add_edge(3, 4, 2, 0);
        b.add_edge(0, 4, 4, 1);
        let g = b.build();
        let mut part = vec![0, 0, 1, 1, 2];
        let mut c = Connectivity::new(&g, &part, 3);
        assert!(c.exact());
        // Critical values per vertex: 0 (1 + 1), 1 (1), 2 (1), 3 (1), 4 (1).
        assert_eq!(c.crit_bound(), 2);
        assert_eq!(c.row(0), &[(1, 3), (0, 0), (1, 4)]);
        c.moved(&g, 1, 0, 1);
        part[1] = 1;
        let fresh = Connectivity::new(&g, &part, 3);
        assert_eq!(c.sums, fresh.sums);
        assert_eq!(c.row(2), &[(0, 0), (1, 12), (0, 0)]);
    }

    #[test]
    fn a_relation_without_value_makes_the_table_inexact() {
        let mut b = GraphBuilder::new();
        b.add_vertex("a", 1);
        b.add_vertex("b", 1);
        b.add_edge(0, 1, 1, 0);
        let mut g = b.build();
        // The builder keeps weights at 1 or more; a graph built otherwise may not.
        g.ew.fill(0);
        assert!(!Connectivity::new(&g, &[0, 1], 2).exact());
        assert_eq!(Connectivity::new(&g, &[0, 1], 2).crit_bound(), i64::MAX);
    }
}
