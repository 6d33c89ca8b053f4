//! Generated test graphs: grids, and layered random DAGs with locality, like the operator
//! graphs of deep models (a flow from inputs to outputs, mostly local
//! connections, some skip connections).
//!
//! `n` vertices in layers of width about `sqrt(n)`; each vertex draws 1–3
//! predecessors from the previous layer near its own position, and with
//! probability 1/8 one skip relation from two layers back. Loads are uniform in
//! 1..=10, relation weights log-uniform in 1..=4096 (tensor sizes vary widely).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::graph::{Graph, GraphBuilder};

pub fn layered_dag(n: usize, seed: u64) -> Graph {
    let mut rng = StdRng::seed_from_u64(seed);
    let width = ((n as f64).sqrt().round() as usize).max(1);
    let mut b = GraphBuilder::new();
    for _ in 0..n {
        let w = rng.random_range(1..=10);
        b.add_vertex("", w);
    }
    let weight = |rng: &mut StdRng| 1i64 << rng.random_range(0..=12);
    for v in width..n {
        let (layer, pos) = (v / width, (v % width) as i64);
        let preds = rng.random_range(1..=3);
        for _ in 0..preds {
            let off = rng.random_range(-2i64..=2);
            let p = (pos + off).clamp(0, width as i64 - 1) as usize;
            let u = (layer - 1) * width + p;
            let w = weight(&mut rng);
            b.add_edge(u as u32, v as u32, w, 0);
        }
        if layer >= 2 && rng.random_range(0..8) == 0 {
            let p = (pos + rng.random_range(-4i64..=4)).clamp(0, width as i64 - 1) as usize;
            let w = weight(&mut rng);
            b.add_edge(((layer - 2) * width + p) as u32, v as u32, w, 0);
        }
    }
    b.build()
}

/// A `w` x `h` grid of unit vertices with unit relations to the right and
/// below (flow order row by row); a `w` x `h` grid with `w >= h` has no
/// bisection cheaper than the `h` relations of a straight cut.
pub fn grid(w: u32, h: u32) -> Graph {
    let mut b = GraphBuilder::new();
    b.index_order = true;
    for _ in 0..w * h {
        b.add_vertex("", 1);
    }
    for y in 0..h {
        for x in 0..w {
            let v = y * w + x;
            if x + 1 < w {
                b.add_edge(v, v + 1, 1, 0);
            }
            if y + 1 < h {
                b.add_edge(v, v + w, 1, 0);
            }
        }
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layered_dag_is_a_dag_in_flow_order() {
        let g = layered_dag(400, 3);
        assert_eq!(g.n(), 400);
        assert!(g.m() >= 380);
        for (u, v, _, _) in g.relations() {
            assert!(u < v, "relations run forward: {u}->{v}");
        }
    }
}
