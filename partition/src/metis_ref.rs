//! METIS (the vendored C library, through the `metis` crate) as the reference.
//!
//! METIS sees the same vertex loads and the same balance limit (`ufactor` =
//! 1000·ε). Its edge weights tell it about criticality (`informed`): a critical
//! relation weighs [`CRITICAL_FACTOR`] to twice that (by critical value), a
//! non-critical one 1 to 100 (by traffic), so both partitioners chase nearly the
//! same objective. With
//! `informed = false` METIS gets the plain relation weights instead (how it would
//! be used without critical marks). Weights are scaled into METIS's integer
//! range when needed.

use std::sync::Mutex;
use std::time::Instant;

use metis::option;

use crate::graph::Graph;
use crate::metrics;
use crate::multilevel::Outcome;

/// Serializes METIS calls (see [`partition`]).
static METIS_LOCK: Mutex<()> = Mutex::new(());

/// How much more a critical relation weighs than a non-critical one for METIS.
pub const CRITICAL_FACTOR: i64 = 1000;

/// The edge weights METIS is given (one per adjacency entry).
pub fn metis_weights(g: &Graph, informed: bool) -> Vec<metis::Idx> {
    let base: Vec<i64> = if informed {
        // Critical relations weigh 1000..=2000 (by critical value), non-critical
        // ones 1..=100 (by traffic): criticality first, like the partitioner's objective.
        let max_c = g.ec.iter().copied().max().unwrap_or(0).max(1);
        let max_w = g.ew.iter().copied().max().unwrap_or(0).max(1);
        g.ec.iter()
            .zip(&g.ew)
            .map(|(&c, &w)| if c > 0 { CRITICAL_FACTOR + CRITICAL_FACTOR * c / max_c } else { 1 + 99 * w / max_w })
            .collect()
    } else {
        g.ew.clone()
    };
    // Keep the total within the index type.
    let total: i64 = base.iter().sum::<i64>().max(1);
    let limit = (metis::Idx::MAX / 4) as i64;
    let scale = if total > limit { total / limit + 1 } else { 1 };
    base.iter().map(|&w| ((w / scale).max(1)) as metis::Idx).collect()
}

/// Runs METIS k-way on `g`, for k = 2 too: METIS's recursive bisection
/// keeps its 2-way refinement near perfect balance whatever `ufactor` allows
/// (moves may not widen the initial difference by more than about one average
/// vertex), while its k-way refinement uses the same allowance ours has.
pub fn partition(g: &Graph, k: usize, epsilon: f64, informed: bool, seed: u64) -> Result<Outcome, String> {
    let n = g.n();
    if k < 2 || n < k {
        let part = vec![0u32; n];
        return Ok(Outcome {
            cut: metrics::cut(g, &part),
            imbalance: metrics::imbalance(g, &part, k.max(1)),
            balanced: k <= 1,
            part,
            seconds: 0.0,
            levels: 0,
            moves: 0,
        });
    }
    let xadj: Vec<metis::Idx> = g.xadj.iter().map(|&x| x as metis::Idx).collect();
    let adjncy: Vec<metis::Idx> = g.adj.iter().map(|&x| x as metis::Idx).collect();
    let vwgt: Vec<metis::Idx> = g.node_w.iter().map(|&w| w.min(metis::Idx::MAX as i64 / 4) as metis::Idx).collect();
    let adjwgt = metis_weights(g, informed);
    let mut part = vec![0 as metis::Idx; n];
    let ufactor = ((epsilon * 1000.0).round() as metis::Idx).max(1);
    // METIS's random generator is process-wide: concurrent calls would draw
    // from each other's sequence, so a seed would not fix the partition.
    let _one_at_a_time = METIS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let start = Instant::now();
    let graph = metis::Graph::new(1, k as metis::Idx, &xadj, &adjncy)
        .map_err(|e| format!("METIS rejected the graph: {e}"))?
        .set_vwgt(&vwgt)
        .set_adjwgt(&adjwgt)
        .set_option(option::UFactor(ufactor))
        .set_option(option::Seed((seed % 1_000_000) as metis::Idx));
    let res = graph.part_kway(&mut part);
    let seconds = start.elapsed().as_secs_f64();
    res.map_err(|e| format!("METIS failed: {e}"))?;
    let part: Vec<u32> = part.into_iter().map(|p| p as u32).collect();
    Ok(Outcome {
        cut: metrics::cut(g, &part),
        imbalance: metrics::imbalance(g, &part, k),
        balanced: metrics::is_balanced(g, &part, k, epsilon),
        part,
        seconds,
        levels: 0,
        moves: 0,
    })
}
