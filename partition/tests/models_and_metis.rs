//! The shipped models' operator graphs (shape-annotated copies made by
//! `scripts/setup.sh`), and METIS on the same graphs.

use std::path::PathBuf;

use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::graph::Graph;
use baton_partition::multilevel::{self, Params, Quality, Scheme};
use baton_partition::{generate, metis_format, metis_ref, metrics, onnx_graph};

fn model(file: &str) -> Graph {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.cache/shapes").join(file);
    let mut g = onnx_graph::read_file(&path)
        .unwrap_or_else(|e| panic!("{e} (scripts/setup.sh makes the shape-annotated models)"));
    critical::mark(&mut g, CriticalRule::default(), CriticalValue::Unit);
    g
}

#[test]
fn operator_graphs_of_the_shipped_models() {
    let det = model("ch_PP-OCRv4_det_infer.onnx");
    let rec = model("ch_PP-OCRv4_rec_infer.onnx");
    let vad = model("silero_vad.onnx");
    // Operators without Constant nodes; silero's If is inlined (its 16 kHz branch).
    assert!(det.n() > 300 && rec.n() > 400, "det {} rec {}", det.n(), rec.n());
    assert!(vad.n() > 50, "the If branch is inlined: {} operators", vad.n());
    for g in [&det, &rec, &vad] {
        assert!(g.critical_edges() > 0);
        // Shapes are known: some relations carry more than the 1 KiB floor.
        assert!(g.ew.iter().any(|&w| w > 1));
        for (u, v, _, _) in g.relations() {
            assert!(g.rank[u as usize] < g.rank[v as usize]);
        }
    }
}

#[test]
fn metis_seeded_refinement_is_never_worse_than_metis() {
    let mut dag = generate::layered_dag(2000, 5);
    critical::mark(&mut dag, CriticalRule::default(), CriticalValue::Unit);
    for (name, g) in [("det", model("ch_PP-OCRv4_det_infer.onnx")), ("dag", dag)] {
        for k in [2, 4, 8] {
            let m = metis_ref::partition(&g, k, 0.03, true, 1).unwrap();
            let p = Params { scheme: Scheme::MetisRefine, ..Params::new(k) };
            let o = multilevel::partition(&g, &p);
            if m.balanced {
                assert!(o.balanced, "{name} k={k}");
                assert!(
                    o.cut.critical <= m.cut.critical,
                    "{name} k={k}: {} > METIS {}",
                    o.cut.critical,
                    m.cut.critical
                );
            }
            let ml = multilevel::partition(&g, &Params::new(k));
            assert!(ml.balanced, "{name} k={k}: multilevel imbalance {}", ml.imbalance);
        }
    }
}

#[test]
fn metis_format_graph_partitions_with_both() {
    // A 20x20 grid: the undirected case, flow order by vertex id.
    let side = 20u32;
    let mut text = format!("{} {}\n", side * side, 2 * side * (side - 1));
    for r in 0..side {
        for c in 0..side {
            let mut nb = Vec::new();
            if r > 0 {
                nb.push((r - 1) * side + c + 1);
            }
            if c > 0 {
                nb.push(r * side + c);
            }
            if c + 1 < side {
                nb.push(r * side + c + 2);
            }
            if r + 1 < side {
                nb.push((r + 1) * side + c + 1);
            }
            text += &nb.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ");
            text.push('\n');
        }
    }
    let mut g = metis_format::parse(&text, "grid.graph").unwrap();
    critical::mark(&mut g, CriticalRule::Top { percent: 100.0 }, CriticalValue::Unit);
    let o = multilevel::partition(&g, &Params { restarts: 4, ..Params::new(2) });
    let m = metis_ref::partition(&g, 2, 0.03, true, 1).unwrap();
    assert!(o.balanced && metrics::is_balanced(&g, &o.part, 2, 0.03));
    // The best bisection of a 20x20 grid cuts 20 edges; both land near it.
    assert!(o.cut.edges >= 20 && o.cut.edges <= 30, "ours {}", o.cut.edges);
    assert!(m.cut.edges >= 20 && m.cut.edges <= 30, "METIS {}", m.cut.edges);
}

/// Cliques of 11 and 9 vertices joined by one relation: at 10% imbalance
/// (each part <= 11) the best bisection cuts that relation only, 11 | 9.
/// METIS gets the same allowance as ours (its ufactor) and uses it at k = 2.
#[test]
fn metis_uses_the_same_imbalance_allowance_at_two_parts() {
    let mut b = baton_partition::graph::GraphBuilder::new();
    for i in 0..20 {
        b.add_vertex(format!("v{i}"), 1);
    }
    for (lo, hi) in [(0u32, 11u32), (11, 20)] {
        for a in lo..hi {
            for c in a + 1..hi {
                b.add_edge(a, c, 1, 0);
            }
        }
    }
    b.add_edge(10, 11, 1, 0);
    let g = b.build();
    assert_eq!(metrics::max_part_weight(&g, 2, 0.1), 11);
    for seed in 1..=3 {
        let m = metis_ref::partition(&g, 2, 0.1, false, seed).unwrap();
        let mut loads = metrics::part_weights(&g, &m.part, 2);
        loads.sort_unstable();
        assert_eq!((m.cut.total, loads, m.balanced), (1, vec![9, 11], true), "seed {seed}");
        let ours = multilevel::partition(&g, &Params { epsilon: 0.1, seed, ..Params::new(2) });
        assert_eq!(ours.cut.total, 1, "seed {seed}");
    }
    // On a layered DAG, METIS's recursive bisection stayed within 0.02% of
    // perfect balance at a 3% allowance; run as k-way it uses the allowance.
    let mut dag = generate::layered_dag(1000, 42);
    critical::mark(&mut dag, CriticalRule::None, CriticalValue::Unit);
    let m = metis_ref::partition(&dag, 2, 0.03, false, 1).unwrap();
    assert!(m.balanced && m.imbalance > 0.005, "METIS imbalance {:.4}", m.imbalance);
}

/// The strong mode on silero-vad's operator graph, whose heaviest operators
/// defeat recursive bisection's side limits at k = 4 and 8 (150% over the
/// limit at k = 8): the result stays within the k-way limit.
#[test]
fn strong_quality_stays_within_the_limit_with_heavy_operators() {
    let mut g = model("silero_vad.onnx");
    critical::mark(&mut g, CriticalRule::default(), CriticalValue::Unit);
    for k in [2, 4, 8] {
        let mut p = Params { quality: Quality::Strong, ..Params::new(k) };
        p.strong.repetitions = Some(4);
        let o = multilevel::partition(&g, &p);
        assert!(o.balanced && metrics::is_balanced(&g, &o.part, k, p.epsilon), "k={k}: imbalance {}", o.imbalance);
    }
}

/// silero-vad at k = 4 (four operators of 256 against a slack of 12 over the
/// average load): the default driver runs one cycle with the final limit
/// throughout instead of a relaxed cycle that ends over the limit and a
/// strict one after it. Seeds 1–6: balanced, no critical cut above 8, and a
/// lower sum than the two-cycle driver's (9, 9, 8, 7, 7, 8).
#[test]
fn heavy_operators_get_the_final_limit_up_front() {
    let g = model("silero_vad.onnx");
    let cuts: Vec<i64> = (1..=6)
        .map(|seed| {
            let o = multilevel::partition(&g, &Params { seed, ..Params::new(4) });
            assert!(o.balanced && metrics::is_balanced(&g, &o.part, 4, 0.03), "seed {seed}: {}", o.imbalance);
            o.cut.critical
        })
        .collect();
    assert!(cuts.iter().all(|&c| c <= 8), "critical cuts {cuts:?}");
    assert!(cuts.iter().sum::<i64>() < 9 + 9 + 8 + 7 + 7 + 8, "critical cuts {cuts:?}");
}
