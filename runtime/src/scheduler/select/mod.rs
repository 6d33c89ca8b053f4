//! Node selection: which nodes run next, as a pure function of what each node has pending.
//!
//! Every policy implements [`NodeSelector`]: the same inputs (one
//! [`NodeLoad`] per node, and what is [`Running`]) and the same output (the
//! nodes to run now, in pick order, and how long until a node not picked
//! falls due by itself). A new policy is one file here plus its arm in
//! [`selector`].
//!
//! - [`Collaborative`]: the collaborative rule (docs/scheduling.md);
//! - [`Dynamic`]: each node on its own, like Triton's dynamic batcher (run
//!   when the batch is full or the oldest task waited the queue delay);
//! - [`Greedy`]: Triton's default dynamic batcher with no queue delay: a node
//!   runs as soon as it has work and a free worker, batching what waits;
//! - [`PriorityFifo`]: Triton's priority levels: priority nodes first, then
//!   the oldest work; no weights, no budget;
//! - [`Unbatched`]: one request per run, whenever a worker is idle.

mod collaborative;
mod dynamic;
mod greedy;
mod priority_fifo;
mod unbatched;

pub use collaborative::Collaborative;
pub use dynamic::Dynamic;
pub use greedy::Greedy;
pub use priority_fifo::PriorityFifo;
pub use unbatched::Unbatched;

use crate::config::{BatchingPolicy, Selection};
use crate::spec::PipelineSpec;

/// What the selector knows of one node this round.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodeLoad {
    /// Tasks waiting in the node's batching buffer.
    pub pending: usize,
    /// Of those, priority tasks.
    pub priority_pending: usize,
    /// Collaboration weight.
    pub weight: f64,
    /// Compute the node holds against the budget while it runs.
    pub cost: f64,
    /// Whether the node has an idle worker to run a batch now.
    pub can_start: bool,
    /// How long the node's oldest pending task has waited, ns.
    pub waited_ns: u64,
    /// The node's `max_batch`.
    pub max_batch: usize,
    /// Added to the inference priority: requests joins downstream wait for
    /// from this node, times the joins' weights (0 without join boost).
    pub boost: f64,
    /// The node's batches running now.
    pub running: usize,
    /// How long the node's batches have taken on average so far, ns (0: none has run).
    pub mean_batch_ns: u64,
}

impl NodeLoad {
    /// Inference priority: pending count × collaboration weight (plus the join boost,
    /// the rule's "weighted sum" variant).
    pub fn inference_priority(&self) -> f64 {
        self.pending as f64 * self.weight + self.boost
    }

    pub fn is_priority_node(&self) -> bool {
        self.priority_pending > 0
    }
}

/// What runs while a round decides.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Running {
    /// Compute held by running node executions (each holds its node's cost).
    pub compute: f64,
    /// Node executions running.
    pub nodes: usize,
}

/// The nodes that could run now: pending work and an idle worker.
fn ready(loads: &[NodeLoad]) -> impl Iterator<Item = (usize, &NodeLoad)> {
    loads.iter().enumerate().filter(|(_, l)| l.pending > 0 && l.can_start)
}

/// Picks every node that could run now, in node order (into `picked`, cleared first).
fn pick_every_ready_node(loads: &[NodeLoad], picked: &mut Vec<usize>) {
    picked.clear();
    picked.extend(ready(loads).map(|(i, _)| i));
}

/// A node-selection policy.
pub trait NodeSelector: Send {
    /// Picks the nodes to run now into `picked` (cleared first), in pick order.
    /// Returns how long (ns) until a node not picked falls due by itself, for
    /// a policy that waits on time (the scheduler thread wakes then); `None` otherwise.
    fn select(&mut self, loads: &[NodeLoad], running: Running, picked: &mut Vec<usize>) -> Option<u64>;

    /// Most rows a worker stitches into one batch at a node whose `max_batch` is `max_batch`.
    fn batch_rows(&self, max_batch: usize) -> usize {
        max_batch
    }

    /// Whether any arrival at a node with an idle worker wants a decision at
    /// once, whatever `decide_on_arrival` says (the baselines, which have no tick to wait for).
    fn decides_on_every_arrival(&self) -> bool {
        true
    }
}

/// The selector `spec`'s `[scheduler] policy` names, with its limits.
pub fn selector(spec: &PipelineSpec) -> Box<dyn NodeSelector> {
    let s = &spec.scheduler;
    match s.policy {
        BatchingPolicy::Collaborative => {
            let max_cost = spec.nodes.iter().map(|n| n.cost).fold(0.0, f64::max);
            let max_nodes = s.max_nodes.unwrap_or_else(|| match s.selection {
                // K from the budget and per-node compute: as many of the costliest node as fit.
                Selection::Count => ((spec.compute_budget / max_cost).floor() as usize).max(1),
                Selection::Budget => usize::MAX,
            });
            Box::new(
                Collaborative::new(s.selection, spec.compute_budget, max_nodes, s.on_misfit)
                    .with_work_conserving(s.work_conserving)
                    .with_max_hold(s.max_hold_us.map(|us| us.saturating_mul(1000)))
                    .with_brief_batches(s.brief_batch_us.map(|us| us.saturating_mul(1000))),
            )
        }
        BatchingPolicy::Dynamic => Box::new(Dynamic { delay_ns: s.max_queue_delay_us.saturating_mul(1000) }),
        BatchingPolicy::Greedy => Box::new(Greedy),
        BatchingPolicy::PriorityFifo => Box::<PriorityFifo>::default(),
        BatchingPolicy::None => Box::new(Unbatched),
    }
}
