//! Retiming (software pipelining) of a periodic schedule.
//!
//! The periodic list schedule places every task instance of a period at an
//! offset on a unit, ignoring dependencies. Retiming gives each instance a
//! stage `d` (how many periods after its sample entered the pipeline it runs),
//! so that sample batch `b`'s instance runs at `(b + d) * period + offset`.
//! Every dependency `u -> v` of the same sample must then hold across periods:
//! `(d_v - d_u) * period + o_v >= o_u + c_u + transfer` (transfer only when the
//! units differ). Processing tasks from the graph's sources on (longest path in
//! topological order), each task takes the smallest stage meeting all its
//! predecessors, which gives every task the latest stage a legal pipeline
//! allows for it to be pulled forward to and the smallest pipeline depth for
//! these offsets. The retiming value reported is `r = depth - 1 - d`: how many
//! periods earlier than the last stage the instance runs.

use crate::dag::Dag;
use crate::simulate::EPS;

/// Where one task instance of a period runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    pub unit: usize,
    pub offset: f64,
}

/// Stages for the instances of one sample copy (`slots[task]`), given the
/// period; returns `stage[task]`.
pub fn stages(dag: &Dag, slots: &[Slot], period: f64) -> Vec<u64> {
    let mut stage = vec![0u64; dag.len()];
    for &v in dag.topo_order() {
        for &k in dag.in_edges(v) {
            let e = &dag.edges[k];
            let u = e.from;
            let transfer = if slots[u].unit == slots[v].unit { 0.0 } else { e.transfer };
            let need = slots[u].offset + dag.tasks[u].cost + transfer - slots[v].offset;
            // Smallest k >= 0 with k * period >= need.
            let k = if need <= EPS { 0 } else { ((need - EPS) / period).ceil().max(0.0) as u64 };
            stage[v] = stage[v].max(stage[u] + k);
        }
    }
    stage
}
