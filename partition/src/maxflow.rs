//! Maximum flow by Dinic's algorithm on an undirected network (each edge
//! carries its capacity in both directions), and the two minimum cuts next to
//! the source and next to the sink.

use std::collections::VecDeque;

use rand::seq::SliceRandom;
use rand::Rng;

/// A flow network under construction or solved.
pub struct Network {
    /// Per arc: head, residual capacity; arc `i ^ 1` is its reverse.
    head: Vec<u32>,
    residual: Vec<i64>,
    /// Arcs leaving each node.
    out: Vec<Vec<u32>>,
}

impl Network {
    pub fn new(nodes: usize) -> Self {
        Network { head: Vec::new(), residual: Vec::new(), out: vec![Vec::new(); nodes] }
    }

    /// An undirected edge of capacity `cap` between `u` and `v`.
    pub fn add_edge(&mut self, u: usize, v: usize, cap: i64) {
        self.out[u].push(self.head.len() as u32);
        self.head.push(v as u32);
        self.residual.push(cap);
        self.out[v].push(self.head.len() as u32);
        self.head.push(u as u32);
        self.residual.push(cap);
    }

    /// Pushes a maximum flow from `s` to `t`; returns its value.
    pub fn max_flow(&mut self, s: usize, t: usize) -> i64 {
        let n = self.out.len();
        let mut total = 0;
        let mut level = vec![u32::MAX; n];
        let mut next = vec![0usize; n];
        let mut path = Vec::new();
        loop {
            level.fill(u32::MAX);
            level[s] = 0;
            let mut queue = VecDeque::from([s]);
            while let Some(v) = queue.pop_front() {
                // Levels come out in order: past the sink's, no node can be
                // on a shortest path to it.
                if level[v] >= level[t] {
                    break;
                }
                for &a in &self.out[v] {
                    let u = self.head[a as usize] as usize;
                    if self.residual[a as usize] > 0 && level[u] == u32::MAX {
                        level[u] = level[v] + 1;
                        queue.push_back(u);
                    }
                }
            }
            if level[t] == u32::MAX {
                return total;
            }
            next.fill(0);
            loop {
                let pushed = self.augment(s, t, &level, &mut next, &mut path);
                if pushed == 0 {
                    break;
                }
                total += pushed;
            }
        }
    }

    /// One augmenting path in the level graph (iterative depth-first search
    /// with per-node arc pointers); returns the flow pushed along it.
    fn augment(&mut self, s: usize, t: usize, level: &[u32], next: &mut [usize], path: &mut Vec<u32>) -> i64 {
        path.clear();
        let mut v = s;
        loop {
            if v == t {
                let pushed = path.iter().map(|&a| self.residual[a as usize]).min().unwrap_or(0);
                for &a in path.iter() {
                    self.residual[a as usize] -= pushed;
                    self.residual[(a ^ 1) as usize] += pushed;
                }
                return pushed;
            }
            let mut advanced = false;
            while next[v] < self.out[v].len() {
                let a = self.out[v][next[v]];
                let u = self.head[a as usize] as usize;
                if self.residual[a as usize] > 0 && level[u] == level[v] + 1 {
                    path.push(a);
                    v = u;
                    advanced = true;
                    break;
                }
                next[v] += 1;
            }
            if !advanced {
                // Dead end: retreat and skip the arc that led here.
                let Some(a) = path.pop() else { return 0 };
                v = self.head[(a ^ 1) as usize] as usize;
                next[v] += 1;
            }
        }
    }

    /// After [`Network::max_flow`]: the nodes reachable from `s` in the
    /// residual network (the minimum cut nearest the source).
    pub fn source_side(&self, s: usize) -> Vec<bool> {
        self.reach(s, |a| a)
    }

    /// After [`Network::max_flow`]: the nodes that cannot reach `t` in the
    /// residual network (the minimum cut nearest the sink).
    pub fn beyond_sink_side(&self, t: usize) -> Vec<bool> {
        let mut to_sink = self.reach(t, |a| a ^ 1);
        to_sink.iter_mut().for_each(|x| *x = !*x);
        to_sink
    }

    /// After [`Network::max_flow`]: minimum cuts from the one next to the
    /// source to the one next to the sink. The first group is the source
    /// side; each further group is a node that cannot reach `t` with all it
    /// reaches in the residual network and is not taken yet, nodes drawn in
    /// random order. Every prefix of groups is closed under residual arcs, so
    /// it is the source side of a minimum cut; all groups together are
    /// [`Network::beyond_sink_side`].
    pub fn min_cut_sweep(&self, s: usize, t: usize, rng: &mut impl Rng) -> Vec<Vec<usize>> {
        let taken = self.source_side(s);
        let mut groups = vec![(0..self.out.len()).filter(|&v| taken[v]).collect::<Vec<_>>()];
        let beyond = self.beyond_sink_side(t);
        let mut taken = taken;
        let mut candidates: Vec<usize> = (0..self.out.len()).filter(|&v| beyond[v] && !taken[v]).collect();
        candidates.shuffle(rng);
        for v in candidates {
            if taken[v] {
                continue;
            }
            taken[v] = true;
            let mut group = vec![v];
            let mut i = 0;
            while i < group.len() {
                let x = group[i];
                i += 1;
                for &a in &self.out[x] {
                    let u = self.head[a as usize] as usize;
                    if !taken[u] && self.residual[a as usize] > 0 {
                        taken[u] = true;
                        group.push(u);
                    }
                }
            }
            groups.push(group);
        }
        groups
    }

    /// Breadth-first search from `from` over arcs `a` of `v` whose arc
    /// `direction(a)` has residual capacity.
    fn reach(&self, from: usize, direction: impl Fn(u32) -> u32) -> Vec<bool> {
        let mut seen = vec![false; self.out.len()];
        seen[from] = true;
        let mut queue = VecDeque::from([from]);
        while let Some(v) = queue.pop_front() {
            for &a in &self.out[v] {
                let u = self.head[a as usize] as usize;
                if !seen[u] && self.residual[direction(a) as usize] > 0 {
                    seen[u] = true;
                    queue.push_back(u);
                }
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// On random networks every prefix of the sweep is a minimum cut, from
    /// the one next to the source to the one next to the sink.
    #[test]
    fn every_prefix_of_the_sweep_is_a_minimum_cut() {
        let mut rng = StdRng::seed_from_u64(9);
        for round in 0..40 {
            let n = 4 + round % 9;
            let edges: Vec<(usize, usize, i64)> = (0..3 * n)
                .map(|_| (rng.random_range(0..n), rng.random_range(0..n), rng.random_range(1..4)))
                .filter(|(u, v, _)| u != v)
                .collect();
            let mut net = Network::new(n);
            for &(u, v, c) in &edges {
                net.add_edge(u, v, c);
            }
            let flow = net.max_flow(0, n - 1);
            let groups = net.min_cut_sweep(0, n - 1, &mut rng);
            let mut side = vec![false; n];
            for (i, group) in groups.iter().enumerate() {
                group.iter().for_each(|&v| side[v] = true);
                let cut: i64 = edges.iter().filter(|&&(u, v, _)| side[u] != side[v]).map(|e| e.2).sum();
                assert_eq!(cut, flow, "round {round}, prefix {i}");
                assert!(side[0] && !side[n - 1]);
                if i == 0 {
                    assert_eq!(side, net.source_side(0));
                }
            }
            assert_eq!(side, net.beyond_sink_side(n - 1), "round {round}");
        }
    }

    #[test]
    fn max_flow_equals_the_minimum_cut_and_both_cuts_separate() {
        // s=0, t=5; two routes with bottlenecks 2 (1-2) and 3 (3-4).
        let mut net = Network::new(6);
        for (u, v, c) in [(0, 1, 9), (1, 2, 2), (2, 5, 9), (0, 3, 9), (3, 4, 3), (4, 5, 9), (1, 3, 1)] {
            net.add_edge(u, v, c);
        }
        assert_eq!(net.max_flow(0, 5), 5);
        let near_s = net.source_side(0);
        let near_t = net.beyond_sink_side(5);
        assert_eq!(near_s, vec![true, true, false, true, false, false]);
        assert_eq!(near_t, near_s, "a unique minimum cut");
        // A path s - a - b - t of unit edges: cuts next to s and next to t differ.
        let mut path = Network::new(4);
        for (u, v) in [(0, 1), (1, 2), (2, 3)] {
            path.add_edge(u, v, 1);
        }
        assert_eq!(path.max_flow(0, 3), 1);
        assert_eq!(path.source_side(0), vec![true, false, false, false]);
        assert_eq!(path.beyond_sink_side(3), vec![true, true, true, false]);
    }
}
