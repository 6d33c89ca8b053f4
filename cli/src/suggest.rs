//! Collaboration weights and costs suggested from a profile (`baton profile`),
//! by the formula of docs/scheduling.md ("Weights and costs from measurements").
//!
//! Per node i, from its median batch times t_i(b):
//!
//! - *effect on end-to-end response time* e_i: the longest batch-1 path from
//!   a pipeline input through i to an output, over the pipeline's longest
//!   such path (1 on the critical path, less off it);
//! - *batching gain* g_i = B·t_i(1) / t_i(B), B the largest batch measured:
//!   how many times more rows per second a full batch gives;
//! - *device share* s_i = (t_i(B)/B) / Σ_j (t_j(B)/B): the node's part of
//!   the device time one request's rows take at full batches.
//!
//! Suggested weight: w_i ∝ e_i / s_i (the cμ rule: the cost of a task's delay
//! times the rate the node clears tasks at, B/t_i(B) = g_i/t_i(1)), scaled so
//! that the weights average 1. Suggested cost: the cores a running batch
//! keeps busy, measured as CPU time over wall time of its runs (about the
//! intra-op threads for a CPU node, less for a node that waits on a device).
//!
//! Suggested `brief_batch_us` ("Brief nodes" in docs/scheduling.md): where the
//! nodes' full-batch times, sorted, have a gap of at least [`BRIEF_GAP`]×
//! between neighbours, the geometric middle of the widest such gap, so the
//! nodes below it stay outside the budget; none without such a gap.

use baton::spec::{PipelineSpec, Target};

/// What the suggestion needs of one node: median µs at batch 1 and at batch
/// `full` (the largest measured), and the cores its runs kept busy.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub batch1_us: f64,
    pub full: usize,
    pub full_us: f64,
    pub busy_cores: f64,
}

/// One node's suggestion and the three measures it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    pub effect: f64,
    pub gain: f64,
    pub share: f64,
    pub weight: f64,
    pub cost: f64,
}

/// The nodes each node's outputs feed (edges only).
pub fn children(spec: &PipelineSpec) -> Vec<Vec<usize>> {
    spec.nodes
        .iter()
        .map(|n| {
            let mut c: Vec<usize> = n
                .routes
                .iter()
                .flat_map(|r| r.targets.iter())
                .filter_map(|t| match *t {
                    Target::Node { node, .. } => Some(node),
                    _ => None,
                })
                .collect();
            c.sort_unstable();
            c.dedup();
            c
        })
        .collect()
}

/// Longest path through each node, summing `time` of the nodes on it (the graph is a DAG).
fn longest_through(children: &[Vec<usize>], time: &[f64]) -> Vec<f64> {
    let n = time.len();
    // down[i]: longest path from i to a sink; up[i]: from a source to i.
    fn down(i: usize, children: &[Vec<usize>], time: &[f64], memo: &mut [Option<f64>]) -> f64 {
        if let Some(v) = memo[i] {
            return v;
        }
        let rest = children[i].iter().map(|&c| down(c, children, time, memo)).fold(0.0, f64::max);
        memo[i] = Some(time[i] + rest);
        time[i] + rest
    }
    let mut parents = vec![Vec::new(); n];
    for (i, cs) in children.iter().enumerate() {
        for &c in cs {
            parents[c].push(i);
        }
    }
    let mut down_memo = vec![None; n];
    let mut up_memo = vec![None; n];
    (0..n).map(|i| down(i, children, time, &mut down_memo) + down(i, &parents, time, &mut up_memo) - time[i]).collect()
}

/// The suggestion for every node, `measured` in node order, `children` the
/// nodes each node's outputs feed ([`children`]).
pub fn suggest(children: &[Vec<usize>], measured: &[Measured]) -> Vec<Suggestion> {
    let batch1: Vec<f64> = measured.iter().map(|m| m.batch1_us).collect();
    let through = longest_through(children, &batch1);
    let longest = through.iter().copied().fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let per_row: Vec<f64> = measured.iter().map(|m| m.full_us / m.full.max(1) as f64).collect();
    let total: f64 = per_row.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let raw: Vec<(f64, f64, f64)> = measured
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let effect = through[i] / longest;
            let gain = m.full as f64 * m.batch1_us / m.full_us.max(f64::MIN_POSITIVE);
            (effect, gain, per_row[i] / total)
        })
        .collect();
    let unscaled: Vec<f64> = raw.iter().map(|&(e, _, s)| e / s.max(1e-9)).collect();
    let mean = unscaled.iter().sum::<f64>() / unscaled.len().max(1) as f64;
    raw.iter()
        .zip(&unscaled)
        .zip(measured)
        .map(|((&(effect, gain, share), &w), m)| Suggestion {
            effect,
            gain,
            share,
            weight: round2(w / mean.max(f64::MIN_POSITIVE)),
            cost: (m.busy_cores * 20.0).round().max(1.0) / 20.0,
        })
        .collect()
}

/// How many times longer the next node's full batch must be for the nodes below to be brief.
pub const BRIEF_GAP: f64 = 10.0;

/// The suggested `brief_batch_us` for nodes whose full batches take `full_us` (see the module
/// docs), rounded to whole µs, or `None` where no two neighbouring times are [`BRIEF_GAP`]× apart.
pub fn brief_bound_us(full_us: &[f64]) -> Option<u64> {
    let mut times: Vec<f64> = full_us.iter().copied().filter(|t| *t > 0.0).collect();
    times.sort_by(f64::total_cmp);
    // Per neighbouring pair: (how many times longer the next is, this time, the next).
    let (_, below, above) = times
        .windows(2)
        .map(|w| (w[1] / w[0], w[0], w[1]))
        .filter(|&(gap, _, _)| gap >= BRIEF_GAP)
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some((below * above).sqrt().round() as u64)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brief_bound_sits_in_the_widest_gap_between_batch_times() {
        // Tiny nodes at 7-12 µs, an MLP at 350 µs and slow nodes at 520 µs: the gap 12 -> 350.
        assert_eq!(brief_bound_us(&[520.0, 7.0, 12.0, 350.0, 9.0, 523.0]), Some(65));
        // Of two gaps of 10× or more, the wider: 2 -> 30 (15×), not 30 -> 400 (13.3×).
        assert_eq!(brief_bound_us(&[2.0, 30.0, 400.0]), Some(8));
        assert_eq!(brief_bound_us(&[100.0, 300.0, 900.0]), None, "no gap of 10×: nothing is brief");
        assert_eq!(brief_bound_us(&[50.0]), None, "one node: nothing to tell apart");
    }

    #[test]
    fn longest_paths_go_through_the_slowest_branch() {
        // 0 -> 1 -> 3, 0 -> 2 -> 3 (a diamond); node 1 slow.
        let children = vec![vec![1, 2], vec![3], vec![3], vec![]];
        let through = longest_through(&children, &[1.0, 10.0, 2.0, 1.0]);
        assert_eq!(through, vec![12.0, 12.0, 4.0, 12.0]);
    }

    #[test]
    fn weights_follow_effect_over_device_share_and_average_one() {
        // A -> B (a chain), C alone; batch 8 is the full batch.
        let m = |batch1_us, full_us, busy_cores| Measured { batch1_us, full: 8, full_us, busy_cores };
        let measured = [m(10.0, 20.0, 0.97), m(100.0, 400.0, 1.0), m(5.0, 40.0, 0.01)];
        let s = suggest(&[vec![1], vec![], vec![]], &measured);
        let gains: Vec<f64> = s.iter().map(|s| s.gain).collect();
        assert_eq!(gains, vec![4.0, 2.0, 1.0]);
        let effects: Vec<f64> = s.iter().map(|s| round2(s.effect)).collect();
        assert_eq!(effects, vec![1.0, 1.0, 0.05], "C's path is 5 of the longest 110 µs");
        // e/s: 57.5/2.5 = 23, 57.5/50 = 1.15, (5/110)·57.5/5 = 0.52; their mean 8.22.
        let weights: Vec<f64> = s.iter().map(|s| s.weight).collect();
        assert_eq!(weights, vec![2.8, 0.14, 0.06]);
        let costs: Vec<f64> = s.iter().map(|s| s.cost).collect();
        assert_eq!(costs, vec![0.95, 1.0, 0.05], "busy cores in steps of 0.05, at least 0.05");
    }
}
