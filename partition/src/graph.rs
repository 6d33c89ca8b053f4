//! The graph model every reader produces and every partitioner consumes.
//!
//! Vertices are subtasks (pipeline nodes, ONNX operators, METIS vertices) with an
//! integer weight (their load). Edges are flow relations: each undirected edge is
//! stored twice in a CSR adjacency, with its total weight (`ew`, e.g. tensor
//! bytes) and its critical value (`ec`, 0 for a non-critical relation). The flow
//! direction is kept as a topological rank: a relation runs from the lower rank
//! to the higher one. Parallel edges are merged (weights summed), self loops
//! dropped.

use std::collections::HashMap;

/// A vertex id.
pub type Vertex = u32;

/// A weighted graph with flow order and critical marks.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Vertex names (may be empty strings for anonymous vertices).
    pub names: Vec<String>,
    /// Vertex weights (load), all >= 1.
    pub node_w: Vec<i64>,
    /// Flow order: a topological position for each vertex (a permutation of 0..n).
    pub rank: Vec<u32>,
    /// CSR row starts (len n + 1).
    pub xadj: Vec<usize>,
    /// CSR neighbours.
    pub adj: Vec<Vertex>,
    /// Total weight of each adjacency entry (bytes or unit), >= 1.
    pub ew: Vec<i64>,
    /// Critical value of each adjacency entry; 0 when the relation is not critical.
    pub ec: Vec<i64>,
}

/// A directed relation handed to [`GraphBuilder`].
#[derive(Clone, Copy, Debug)]
pub struct EdgeSpec {
    pub from: Vertex,
    pub to: Vertex,
    pub weight: i64,
    pub critical: i64,
}

/// Collects vertices and directed relations, then builds a [`Graph`].
#[derive(Clone, Debug, Default)]
pub struct GraphBuilder {
    pub names: Vec<String>,
    pub node_w: Vec<i64>,
    pub edges: Vec<EdgeSpec>,
    /// When set, the flow order is taken as is (vertex index order for undirected
    /// inputs); otherwise a topological order of the relations is computed.
    pub index_order: bool,
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add_vertex(&mut self, name: impl Into<String>, weight: i64) -> Vertex {
        self.names.push(name.into());
        self.node_w.push(weight.max(1));
        (self.names.len() - 1) as Vertex
    }

    pub fn add_edge(&mut self, from: Vertex, to: Vertex, weight: i64, critical: i64) {
        self.edges.push(EdgeSpec { from, to, weight: weight.max(1), critical: critical.max(0) });
    }

    pub fn build(self) -> Graph {
        let n = self.node_w.len();
        let rank = if self.index_order { (0..n as u32).collect() } else { topo_rank(n, &self.edges) };
        // Merge parallel relations in either direction.
        let mut merged: HashMap<(Vertex, Vertex), (i64, i64)> = HashMap::with_capacity(self.edges.len());
        for e in &self.edges {
            if e.from == e.to {
                continue;
            }
            let key = (e.from.min(e.to), e.from.max(e.to));
            let slot = merged.entry(key).or_insert((0, 0));
            slot.0 += e.weight;
            slot.1 += e.critical;
        }
        let mut list: Vec<((Vertex, Vertex), (i64, i64))> = merged.into_iter().collect();
        list.sort_unstable_by_key(|&(k, _)| k);
        let mut deg = vec![0usize; n + 1];
        for &((a, b), _) in &list {
            deg[a as usize + 1] += 1;
            deg[b as usize + 1] += 1;
        }
        for i in 0..n {
            deg[i + 1] += deg[i];
        }
        let xadj = deg;
        let m2 = xadj[n];
        let (mut adj, mut ew, mut ec) = (vec![0; m2], vec![0; m2], vec![0; m2]);
        let mut fill = xadj.clone();
        for &((a, b), (w, c)) in &list {
            for (x, y) in [(a, b), (b, a)] {
                let at = fill[x as usize];
                adj[at] = y;
                ew[at] = w;
                ec[at] = c;
                fill[x as usize] += 1;
            }
        }
        Graph { names: self.names, node_w: self.node_w, rank, xadj, adj, ew, ec }
    }
}

/// Kahn's algorithm; vertices left on a cycle are appended in index order.
fn topo_rank(n: usize, edges: &[EdgeSpec]) -> Vec<u32> {
    let mut indeg = vec![0u32; n];
    let mut out: Vec<Vec<Vertex>> = vec![Vec::new(); n];
    for e in edges {
        if e.from != e.to {
            out[e.from as usize].push(e.to);
            indeg[e.to as usize] += 1;
        }
    }
    let mut queue: std::collections::VecDeque<Vertex> = (0..n as Vertex).filter(|&v| indeg[v as usize] == 0).collect();
    let mut rank = vec![u32::MAX; n];
    let mut next = 0u32;
    while let Some(v) = queue.pop_front() {
        rank[v as usize] = next;
        next += 1;
        for &s in &out[v as usize] {
            indeg[s as usize] -= 1;
            if indeg[s as usize] == 0 {
                queue.push_back(s);
            }
        }
    }
    for r in rank.iter_mut().filter(|r| **r == u32::MAX) {
        *r = next;
        next += 1;
    }
    rank
}

impl Graph {
    pub fn n(&self) -> usize {
        self.node_w.len()
    }

    /// Number of undirected edges.
    pub fn m(&self) -> usize {
        self.adj.len() / 2
    }

    pub fn total_weight(&self) -> i64 {
        self.node_w.iter().sum()
    }

    /// The adjacency range of `v`.
    #[inline]
    pub fn range(&self, v: Vertex) -> std::ops::Range<usize> {
        self.xadj[v as usize]..self.xadj[v as usize + 1]
    }

    /// Vertices sorted by flow order.
    pub fn flow_order(&self) -> Vec<Vertex> {
        let mut order = vec![0; self.n()];
        for (v, &r) in self.rank.iter().enumerate() {
            order[r as usize] = v as Vertex;
        }
        order
    }

    /// Number of critical relations (undirected edges with a critical value).
    pub fn critical_edges(&self) -> usize {
        self.ec.iter().filter(|&&c| c > 0).count() / 2
    }

    /// Vertex name or its index when anonymous.
    pub fn name(&self, v: Vertex) -> String {
        match self.names.get(v as usize) {
            Some(s) if !s.is_empty() => s.clone(),
            _ => v.to_string(),
        }
    }

    /// The relations as `(from, to, weight, critical)`, each once, in flow direction.
    pub fn relations(&self) -> impl Iterator<Item = (Vertex, Vertex, i64, i64)> + '_ {
        (0..self.n() as Vertex).flat_map(move |v| {
            self.range(v).filter_map(move |i| {
                let u = self.adj[i];
                (self.rank[v as usize] < self.rank[u as usize]).then_some((v, u, self.ew[i], self.ec[i]))
            })
        })
    }
}
