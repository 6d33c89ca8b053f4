//! Size-constrained label propagation (as KaHIP and Mt-KaHyPar coarsen
//! irregular graphs): every vertex starts as its own cluster; in rounds over
//! the vertices in random order, each joins the neighbouring cluster it is
//! most strongly tied to (critical value, then weight, of its relations into
//! it; ties at random), when that cluster stays within `max_weight`. Unlike
//! matching, a hub and many of its neighbours can merge in one level.
//!
//! The order of a round is random ([`Visit::Random`]) or by decreasing
//! degree ([`Visit::HubsFirst`], random among equal degrees): on graphs with
//! hubs the latter lets every hub choose its cluster before its low-degree
//! neighbours have filled the hub's own one (the strong mode's add20 cut
//! fell from 590 to 565 at 30 s, docs/partition.md).

use rand::seq::SliceRandom;
use rand::Rng;

use crate::graph::{Graph, Vertex};

/// Rounds over all vertices.
pub const ROUNDS: usize = 3;

/// The order in which a round visits the vertices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    /// A new random order every round.
    Random,
    /// By decreasing degree, a new random order among equal degrees every round.
    HubsFirst,
}

/// Puts `order` (every vertex once) in a new random order, then (visiting
/// hubs first, `by_degree` given) sorts it by decreasing degree.
fn reorder(g: &Graph, order: &mut [Vertex], by_degree: Option<&mut ByDegree>, rng: &mut impl Rng) {
    order.shuffle(rng);
    if let Some(b) = by_degree {
        b.sort(g, order);
    }
}

/// Sorts vertex orders by decreasing degree, stably (equal degrees keep their
/// order): a counting sort, as degrees are small integers. Where each degree
/// begins does not depend on the order, so it is counted once per graph.
struct ByDegree {
    max_deg: usize,
    /// `first[max_deg - d]`: where degree d begins (highest degree first).
    first: Vec<usize>,
    slot: Vec<usize>,
    sorted: Vec<Vertex>,
}

impl ByDegree {
    fn new(g: &Graph) -> Self {
        let degrees = || g.xadj.windows(2).map(|w| w[1] - w[0]);
        let max_deg = degrees().max().unwrap_or(0);
        let mut first = vec![0usize; max_deg + 2];
        for d in degrees() {
            first[max_deg - d + 1] += 1;
        }
        for i in 0..=max_deg {
            first[i + 1] += first[i];
        }
        ByDegree { max_deg, slot: Vec::with_capacity(first.len()), first, sorted: vec![0; g.n()] }
    }

    /// Sorts `order` (every vertex of the graph once).
    fn sort(&mut self, g: &Graph, order: &mut [Vertex]) {
        debug_assert_eq!(order.len(), self.sorted.len(), "every vertex once");
        self.slot.clear();
        self.slot.extend_from_slice(&self.first);
        for &v in order.iter() {
            let slot = &mut self.slot[self.max_deg - g.range(v).len()];
            self.sorted[*slot] = v;
            *slot += 1;
        }
        order.copy_from_slice(&self.sorted);
    }
}

/// Clusters of weight at most `max_weight` (a vertex heavier than that stays
/// alone); with `within`, only vertices with equal labels join; rounds in
/// the order `visit`. Returns the map (vertex → cluster in `0..groups`) and
/// `groups`.
pub fn clusters(
    g: &Graph,
    max_weight: i64,
    within: Option<&[u32]>,
    rounds: usize,
    visit: Visit,
    rng: &mut impl Rng,
) -> (Vec<u32>, usize) {
    let lp = Rounds { max_weight, rounds, visit };
    let plain = g.ec.iter().all(|&c| c == 0);
    // Each combination compiled on its own, so that the label test vanishes
    // without labels. The plain cut: a tie is its weight alone (the same
    // order, less work).
    let by_weight = |t: i64, _: i64, w: i64| t + w;
    let by_value_then_weight = |t: (i64, i64), c: i64, w: i64| (t.0 + c, t.1 + w);
    let anyone = |_: usize, _: usize| true;
    match (within, plain) {
        (None, true) => clusters_by(g, &lp, rng, by_weight, anyone),
        (None, false) => clusters_by(g, &lp, rng, by_value_then_weight, anyone),
        (Some(l), true) => clusters_by(g, &lp, rng, by_weight, |u, v| l[u] == l[v]),
        (Some(l), false) => clusters_by(g, &lp, rng, by_value_then_weight, |u, v| l[u] == l[v]),
    }
}

/// The settings of [`clusters`] (the labels are `clusters_by`'s `same_label`).
struct Rounds {
    max_weight: i64,
    rounds: usize,
    visit: Visit,
}

/// [`clusters`] with the tie to a cluster summed by `add` (a relation's
/// critical value and weight into it); an untouched cluster's tie is
/// `T::default()`, and every relation adds to it (weights are at least 1);
/// a neighbour `u` of `v` counts where `same_label(u, v)`.
fn clusters_by<T: Copy + Default + Ord>(
    g: &Graph,
    lp: &Rounds,
    rng: &mut impl Rng,
    add: impl Fn(T, i64, i64) -> T,
    same_label: impl Fn(usize, usize) -> bool,
) -> (Vec<u32>, usize) {
    let Rounds { max_weight, rounds, visit } = *lp;
    let n = g.n();
    let mut cluster: Vec<u32> = (0..n as u32).collect();
    let mut weight = g.node_w.clone();
    let mut tie = vec![T::default(); n];
    let mut touched: Vec<u32> = Vec::new();
    let mut order: Vec<Vertex> = (0..n as Vertex).collect();
    let mut by_degree = (visit == Visit::HubsFirst).then(|| ByDegree::new(g));
    for _ in 0..rounds {
        reorder(g, &mut order, by_degree.as_mut(), rng);
        let mut moved = 0;
        for &v in &order {
            let (vi, own) = (v as usize, cluster[v as usize]);
            let range = g.range(v);
            let relations = g.adj[range.clone()].iter().zip(&g.ec[range.clone()]).zip(&g.ew[range]);
            for ((&u, &c), &w) in relations {
                let u = u as usize;
                if !same_label(u, vi) {
                    continue;
                }
                let t = &mut tie[cluster[u] as usize];
                if *t == T::default() {
                    touched.push(cluster[u]);
                }
                *t = add(*t, c, w);
            }
            let wv = g.node_w[vi];
            let mut best = (own, tie[own as usize]);
            let mut equal = 1u32;
            for &c in &touched {
                if c == own || weight[c as usize] + wv > max_weight {
                    continue;
                }
                let t = tie[c as usize];
                if t > best.1 {
                    (best, equal) = ((c, t), 1);
                } else if t == best.1 {
                    // Reservoir choice among equally strong clusters.
                    equal += 1;
                    if rng.random_range(0..equal) == 0 {
                        best = (c, t);
                    }
                }
            }
            for &c in &touched {
                tie[c as usize] = T::default();
            }
            touched.clear();
            if best.0 != own {
                weight[own as usize] -= wv;
                weight[best.0 as usize] += wv;
                cluster[vi] = best.0;
                moved += 1;
            }
        }
        if moved == 0 {
            break;
        }
    }
    let mut id = vec![u32::MAX; n];
    let mut groups = 0u32;
    for c in cluster.iter_mut() {
        if id[*c as usize] == u32::MAX {
            id[*c as usize] = groups;
            groups += 1;
        }
        *c = id[*c as usize];
    }
    (cluster, groups as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::grid;
    use crate::graph::GraphBuilder;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn hubs_first_order_is_a_stable_sort_by_decreasing_degree() {
        let g = crate::generate::layered_dag(500, 9);
        let mut rng = StdRng::seed_from_u64(2);
        let mut order: Vec<Vertex> = (0..g.n() as Vertex).collect();
        for _ in 0..3 {
            order.shuffle(&mut rng);
            let mut expected = order.clone();
            expected.sort_by_key(|&v| std::cmp::Reverse(g.range(v).len()));
            ByDegree::new(&g).sort(&g, &mut order);
            assert_eq!(order, expected);
        }
    }

    #[test]
    fn clusters_respect_the_weight_limit_and_the_labels() {
        let g = grid(30, 20);
        let mut rng = StdRng::seed_from_u64(4);
        let labels: Vec<u32> = (0..g.n()).map(|v| (v % 30 >= 15) as u32).collect();
        for max_weight in [1, 2, 5, 17] {
            let (map, groups) = clusters(&g, max_weight, Some(&labels), ROUNDS, Visit::Random, &mut rng);
            let mut weight = vec![0i64; groups];
            let mut label = vec![u32::MAX; groups];
            for v in 0..g.n() {
                let c = map[v] as usize;
                weight[c] += g.node_w[v];
                assert!(label[c] == u32::MAX || label[c] == labels[v], "a cluster across labels");
                label[c] = labels[v];
            }
            assert!(weight.iter().all(|&w| w <= max_weight), "limit {max_weight}: {:?}", weight.iter().max());
            if max_weight == 1 {
                assert_eq!(groups, g.n());
            } else {
                assert!(groups < g.n() * 2 / 3, "limit {max_weight}: {groups} clusters of {}", g.n());
            }
        }
    }

    /// A hub with leaves: matching merges one pair per level, label
    /// propagation the hub with as many leaves as fit.
    #[test]
    fn a_hub_gathers_its_leaves() {
        let mut b = GraphBuilder::new();
        for _ in 0..9 {
            b.add_vertex("", 1);
        }
        for leaf in 1..9 {
            b.add_edge(0, leaf, 1, 0);
        }
        let g = b.build();
        let (map, groups) = clusters(&g, 5, None, ROUNDS, Visit::Random, &mut StdRng::seed_from_u64(1));
        assert_eq!(map.iter().filter(|&&c| c == map[0]).count(), 5, "the hub's cluster is full");
        assert_eq!(groups, 5);
    }

    #[test]
    fn hubs_first_visits_by_decreasing_degree_and_every_vertex_once() {
        let g = grid(7, 5);
        let mut rng = StdRng::seed_from_u64(2);
        let mut order: Vec<Vertex> = (0..g.n() as Vertex).collect();
        let mut firsts = std::collections::HashSet::new();
        let mut by_degree = ByDegree::new(&g);
        for _ in 0..8 {
            reorder(&g, &mut order, Some(&mut by_degree), &mut rng);
            let degrees: Vec<usize> = order.iter().map(|&v| g.range(v).len()).collect();
            assert!(degrees.windows(2).all(|d| d[0] >= d[1]), "{degrees:?}");
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..g.n() as Vertex).collect::<Vec<_>>());
            firsts.insert(order[0]);
        }
        assert!(firsts.len() > 1, "equal degrees in a new random order every round");
    }

    /// Visiting hubs first, clusters still keep the weight limit and coarsen.
    #[test]
    fn hubs_first_keeps_the_weight_limit() {
        let g = grid(12, 9);
        for max_weight in [2, 5, 9] {
            let (map, groups) = clusters(&g, max_weight, None, ROUNDS, Visit::HubsFirst, &mut StdRng::seed_from_u64(6));
            let mut weight = vec![0i64; groups];
            for v in 0..g.n() {
                weight[map[v] as usize] += g.node_w[v];
            }
            assert!(weight.iter().all(|&w| w <= max_weight), "limit {max_weight}");
            assert!(groups < g.n() * 2 / 3, "limit {max_weight}: {groups} clusters");
        }
    }
}
