//! Contracting a graph: vertex groups become single vertices, relations between
//! groups are merged (weights and critical values summed), and the flow order of
//! a group is that of its earliest member. Two ways to form groups:
//! heavy-relation matching (pairs, critical relations first) for the multilevel
//! driver, and clustering by flow relations (chains, the flow-clustering initial
//! clustering) in [`crate::clustering`].

use rand::seq::SliceRandom;
use rand::Rng;

use crate::graph::{Graph, Vertex};
use crate::label_propagation::{self, Visit};

/// Contracts `g` by `map` (fine vertex → group id in `0..groups`).
pub fn contract(g: &Graph, map: &[u32], groups: usize) -> Graph {
    let n = g.n();
    let mut node_w = vec![0i64; groups];
    let mut count = vec![0usize; groups + 1];
    for (v, &c) in map.iter().enumerate() {
        let c = c as usize;
        node_w[c] += g.node_w[v];
        count[c + 1] += 1;
    }
    for c in 0..groups {
        count[c + 1] += count[c];
    }
    let mut members = vec![0 as Vertex; n];
    let mut fill = count.clone();
    for (v, &c) in map.iter().enumerate() {
        members[fill[c as usize]] = v as Vertex;
        fill[c as usize] += 1;
    }
    // Flow order of groups: by their earliest member (one walk of the fine order).
    let mut rank = vec![u32::MAX; groups];
    let mut next = 0u32;
    for v in g.flow_order() {
        let c = map[v as usize] as usize;
        if rank[c] == u32::MAX {
            rank[c] = next;
            next += 1;
        }
    }
    let mut xadj = Vec::with_capacity(groups + 1);
    xadj.push(0);
    // At most as many entries as the fine graph's (relations inside groups vanish).
    let cap = g.adj.len();
    let (mut adj, mut ew, mut ec) = (Vec::with_capacity(cap), Vec::with_capacity(cap), Vec::with_capacity(cap));
    let mut slot = vec![usize::MAX; groups];
    for c in 0..groups {
        let start = adj.len();
        for &v in &members[count[c]..count[c + 1]] {
            for i in g.range(v) {
                let d = map[g.adj[i] as usize];
                if d as usize == c {
                    continue;
                }
                let s = slot[d as usize];
                if s == usize::MAX {
                    slot[d as usize] = adj.len();
                    adj.push(d);
                    ew.push(g.ew[i]);
                    ec.push(g.ec[i]);
                } else {
                    ew[s] += g.ew[i];
                    ec[s] += g.ec[i];
                }
            }
        }
        for &d in &adj[start..] {
            slot[d as usize] = usize::MAX;
        }
        xadj.push(adj.len());
    }
    Graph { names: vec![String::new(); groups], node_w, rank, xadj, adj, ew, ec }
}

/// Heavy-relation matching: each vertex, by increasing degree (random among
/// equals), is paired with the
/// unmatched neighbour it shares the most critical value with (then the most
/// weight), when the pair stays under `max_weight`. Returns the map and the
/// number of groups.
/// With `within`, only vertices of the same part are paired (the V-cycles of
/// the multilevel driver coarsen an existing partition this way).
pub fn heavy_matching(g: &Graph, max_weight: i64, within: Option<&[u32]>, rng: &mut impl Rng) -> (Vec<u32>, usize) {
    matching(g, max_weight, within, Rating::Heavy, rng)
}

/// How a matching weighs a relation to a neighbour (critical value first in both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rating {
    /// The relation's weight.
    Heavy,
    /// weight² / (load of one end × load of the other): light pairs joined
    /// by heavy relations first, so coarse vertices stay even (KaHIP's
    /// expansion*² rating).
    Expansion,
}

/// [`heavy_matching`] with the rating of a relation chosen by `rating`.
pub fn matching(
    g: &Graph,
    max_weight: i64,
    within: Option<&[u32]>,
    rating: Rating,
    rng: &mut impl Rng,
) -> (Vec<u32>, usize) {
    let n = g.n();
    // Random order, then low degree first (as METIS's sorted heavy-edge matching):
    // vertices with few neighbours find a partner before those are taken.
    let mut shuffled: Vec<Vertex> = (0..n as Vertex).collect();
    shuffled.shuffle(rng);
    // Stable counting sort by degree (keeps the random order among equals).
    let degree = |v: Vertex| g.xadj[v as usize + 1] - g.xadj[v as usize];
    let max_deg = (0..n as Vertex).map(degree).max().unwrap_or(0);
    let mut start = vec![0usize; max_deg + 2];
    for v in 0..n as Vertex {
        start[degree(v) + 1] += 1;
    }
    for d in 0..=max_deg {
        start[d + 1] += start[d];
    }
    let mut order = vec![0 as Vertex; n];
    for &v in &shuffled {
        let d = degree(v);
        order[start[d]] = v;
        start[d] += 1;
    }
    let mut mate = vec![u32::MAX; n];
    for &v in &order {
        if mate[v as usize] != u32::MAX {
            continue;
        }
        let wv = g.node_w[v as usize];
        let mut best: Option<(Vertex, (i64, f64))> = None;
        for i in g.range(v) {
            let u = g.adj[i];
            if mate[u as usize] != u32::MAX || wv + g.node_w[u as usize] > max_weight {
                continue;
            }
            if within.is_some_and(|part| part[u as usize] != part[v as usize]) {
                continue;
            }
            let key = match rating {
                Rating::Heavy => (g.ec[i], g.ew[i] as f64),
                Rating::Expansion => {
                    let w = g.ew[i] as f64;
                    (g.ec[i], w * w / (wv as f64 * g.node_w[u as usize] as f64))
                }
            };
            if best.is_none_or(|b| key > b.1) {
                best = Some((u, key));
            }
        }
        match best {
            Some((u, _)) => {
                mate[v as usize] = u;
                mate[u as usize] = v;
            }
            None => mate[v as usize] = v,
        }
    }
    let mut map = vec![u32::MAX; n];
    let mut groups = 0u32;
    for v in 0..n {
        if map[v] == u32::MAX {
            map[v] = groups;
            map[mate[v] as usize] = groups;
            groups += 1;
        }
    }
    (map, groups as usize)
}

/// Levels of a multilevel cycle: `maps[l]` takes the vertices of level `l`
/// (level 0 the input graph) to those of `graphs[l]`, level `l + 1`.
pub struct Hierarchy {
    pub maps: Vec<Vec<u32>>,
    pub graphs: Vec<Graph>,
    /// With `within`: its partition carried down to the coarsest level.
    pub within: Option<Vec<u32>>,
}

impl Hierarchy {
    pub fn coarsest<'a>(&'a self, g: &'a Graph) -> &'a Graph {
        self.graphs.last().unwrap_or(g)
    }
}

/// How a level's groups are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// Pairs by [`matching`].
    Matching(Rating),
    /// Clusters by [`label_propagation::clusters`] with this many rounds,
    /// visiting the vertices in this order.
    LabelPropagation(usize, Visit),
}

/// The grouping that served each objective best in the benchmarks
/// (docs/partition.md): label propagation for the plain cut (no critical
/// relation), visiting in order `plain_visit`; heavy-relation matching when
/// critical relations come first.
pub fn grouping_for(g: &Graph, plain_visit: Visit) -> Grouping {
    if g.critical_edges() == 0 {
        Grouping::LabelPropagation(label_propagation::ROUNDS, plain_visit)
    } else {
        Grouping::Matching(Rating::Heavy)
    }
}

/// Coarsens `g` by `grouping` (groups up to `max_weight`, within the
/// parts of `within` when given) until at most `stop_at` vertices remain or a
/// level keeps more than `min_shrink` of its vertices.
pub fn hierarchy(
    g: &Graph,
    stop_at: usize,
    max_weight: i64,
    min_shrink: f64,
    within: Option<&[u32]>,
    grouping: Grouping,
    rng: &mut impl Rng,
) -> Hierarchy {
    let mut h = Hierarchy { maps: Vec::new(), graphs: Vec::new(), within: within.map(<[u32]>::to_vec) };
    loop {
        let cur = h.graphs.last().unwrap_or(g);
        if cur.n() <= stop_at {
            break;
        }
        let (map, groups) = match grouping {
            Grouping::Matching(rating) => matching(cur, max_weight, h.within.as_deref(), rating, rng),
            Grouping::LabelPropagation(rounds, visit) => {
                label_propagation::clusters(cur, max_weight, h.within.as_deref(), rounds, visit, rng)
            }
        };
        if groups as f64 > min_shrink * cur.n() as f64 {
            break;
        }
        if let Some(sp) = h.within.as_mut() {
            *sp = project_down(&map, sp, groups);
        }
        let next = contract(cur, &map, groups);
        h.maps.push(map);
        h.graphs.push(next);
    }
    h
}

/// The partition of the groups when every group lies inside one part of
/// `fine_part` (matching within parts): each group takes its members' part.
pub fn project_down(map: &[u32], fine_part: &[u32], groups: usize) -> Vec<u32> {
    let mut coarse = vec![0u32; groups];
    for (v, &c) in map.iter().enumerate() {
        coarse[c as usize] = fine_part[v];
    }
    coarse
}

/// Maps a coarse partition back to the fine vertices.
pub fn project(map: &[u32], coarse_part: &[u32]) -> Vec<u32> {
    map.iter().map(|&c| coarse_part[c as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use rand::SeedableRng;

    #[test]
    fn contraction_merges_weights_and_keeps_flow_order() {
        // 0→1→2→3, critical 1→2; group {0,1} and {2,3}.
        let mut b = GraphBuilder::new();
        for i in 0..4 {
            b.add_vertex(format!("v{i}"), i + 1);
        }
        b.add_edge(0, 1, 5, 0);
        b.add_edge(1, 2, 7, 1);
        b.add_edge(0, 3, 2, 0);
        b.add_edge(2, 3, 1, 0);
        let g = b.build();
        let c = contract(&g, &[0, 0, 1, 1], 2);
        assert_eq!(c.node_w, vec![3, 7]);
        assert_eq!(c.relations().collect::<Vec<_>>(), vec![(0, 1, 9, 1)]);
        assert!(c.rank[0] < c.rank[1]);
    }

    #[test]
    fn matching_prefers_critical_relations_and_respects_weight() {
        let mut b = GraphBuilder::new();
        for _ in 0..3 {
            b.add_vertex("", 1);
        }
        b.add_edge(0, 1, 100, 0);
        b.add_edge(1, 2, 1, 1);
        let g = b.build();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..10 {
            let (map, groups) = heavy_matching(&g, 2, None, &mut rng);
            assert_eq!(groups, 2);
            // Vertex 1 pairs with 2 (critical) unless 0 came first and took it.
            assert!(map[1] == map[2] || map[0] == map[1]);
        }
        let (_, groups) = heavy_matching(&g, 1, None, &mut rng);
        assert_eq!(groups, 3, "no pair fits a weight limit of 1");
        let (map, groups) = heavy_matching(&g, 2, Some(&[0, 0, 1]), &mut rng);
        assert_eq!((groups, map[0] == map[1]), (2, true), "only 0-1 share a part");
    }
}
