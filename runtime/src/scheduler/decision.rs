//! One scheduling decision as a plain function of what the nodes hold and the clock.
//!
//! [`Decider::decide`] takes a [`NodeView`] per node (busy workers, pending
//! counts, the oldest task's wait, batch history) and the join tables' waiting
//! counts, fills the selector's [`NodeLoad`]s, asks the pipeline's
//! [`NodeSelector`] for picks, and keeps the picks whose device has a slot left.
//! It touches no thread, lock or channel: the scheduler thread
//! ([`super::Scheduler`]) reads its views from the nodes' atomics and sends the
//! picks to workers; the simulator (`baton simulate`) builds its views from
//! nodes in virtual time and starts virtual batches. Both run this code.

use super::devices::DeviceSlots;
use super::select::{self, NodeLoad, NodeSelector, Running};
use super::young_limit_ns;
use crate::spec::PipelineSpec;

/// What a decision reads of one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeView {
    /// Workers running a batch (told to run and not finished).
    pub busy: usize,
    /// Tasks waiting in the node's buffer.
    pub pending: usize,
    /// Of those, priority tasks.
    pub priority_pending: usize,
    /// How long the oldest waiting task has waited, ns (0 when none waits).
    pub waited_ns: u64,
    /// At a node with worker groups: whether some group has an idle worker and a
    /// waiting task it fits (`None` without groups: an idle worker is enough).
    pub group_can_start: Option<bool>,
    /// Batches the node has run so far.
    pub executions: u64,
    /// Their compute time, ns in all.
    pub compute_ns: u64,
}

/// What one decision gave.
#[derive(Clone, Copy, Debug)]
pub struct Decision<'a> {
    /// The nodes to run one batch each, in pick order.
    pub picked: &'a [usize],
    /// When (clock ns) a node not picked falls due by itself, or `u64::MAX`.
    pub due_ns: u64,
    /// What ran when the decision was made.
    pub running: Running,
    /// The loads the selector saw.
    pub loads: &'a [NodeLoad],
}

/// The decision state of one pipeline: its selector, the loads and picks it
/// reuses round after round, and its devices' budgets.
pub struct Decider {
    selector: Box<dyn NodeSelector>,
    loads: Vec<NodeLoad>,
    picked: Vec<usize>,
    devices: DeviceSlots,
    workers: Vec<usize>,
    /// Join boost terms: (join node, its input slot, the parent feeding it, the join's weight).
    boosts: Vec<(usize, usize, usize, f64)>,
    /// Stopping young batches: the fraction of a node's mean batch time (`preempt_before`).
    preempt_before: Option<f64>,
}

impl Decider {
    pub fn new(spec: &PipelineSpec) -> Self {
        let s = &spec.scheduler;
        // A GPU node holds a slot of its device, none of the compute budget: its spec's cost is 0.
        let loads = spec
            .nodes
            .iter()
            .map(|n| NodeLoad { weight: n.weight, cost: n.cost, max_batch: n.max_batch, ..NodeLoad::default() })
            .collect();
        Decider {
            selector: select::selector(spec),
            loads,
            picked: Vec::new(),
            devices: DeviceSlots::new(spec),
            workers: spec.nodes.iter().map(|n| n.workers).collect(),
            boosts: if s.join_boost { super::join_boosts(spec) } else { Vec::new() },
            preempt_before: s.preempt_before.filter(|_| s.policy == crate::config::BatchingPolicy::Collaborative),
        }
    }

    /// The pipeline's selector (its batch rows and arrival rule).
    pub fn selector(&self) -> &dyn NodeSelector {
        &*self.selector
    }

    /// Whether decisions stop young batches for priority work (`preempt_before`).
    pub fn stops_young_batches(&self) -> bool {
        self.preempt_before.is_some()
    }

    /// Decides at clock `now_ns`: `view(n)` is node `n` now, `waiting_for(join, slot)`
    /// the requests join node `join` holds that wait for input `slot`.
    pub fn decide(
        &mut self,
        now_ns: u64,
        mut view: impl FnMut(usize) -> NodeView,
        mut waiting_for: impl FnMut(usize, usize) -> usize,
    ) -> Decision<'_> {
        let mut running = Running { compute: 0.0, nodes: 0 };
        self.devices.begin();
        for (n, load) in self.loads.iter_mut().enumerate() {
            let v = view(n);
            self.devices.hold(n, v.busy);
            load.pending = v.pending;
            load.priority_pending = v.priority_pending;
            load.waited_ns = v.waited_ns;
            load.can_start = v.group_can_start.unwrap_or(v.busy < self.workers[n]);
            load.mean_batch_ns = v.compute_ns.checked_div(v.executions).unwrap_or(0);
            load.running = v.busy;
            running.compute += v.busy as f64 * load.cost;
            running.nodes += v.busy;
            load.boost = 0.0;
        }
        for &(join, slot, parent, weight) in &self.boosts {
            self.loads[parent].boost += waiting_for(join, slot) as f64 * weight;
        }
        // A node whose device has no slot left cannot start this round; the picks take
        // their devices' slots in pick order (the device-budget protocol, `devices`).
        for (n, load) in self.loads.iter_mut().enumerate() {
            load.can_start &= self.devices.has_room(n);
        }
        let due = self.selector.select(&self.loads, running, &mut self.picked).map_or(u64::MAX, |left| now_ns + left);
        let devices = &mut self.devices;
        self.picked.retain(|&n| devices.take(n));
        Decision { picked: &self.picked, due_ns: due, running, loads: &self.loads }
    }

    /// After a decision, with `preempt_before`: each node where a young batch may be
    /// stopped for waiting priority work, with how long (ns) a batch may have run
    /// and still be stopped (see [`young_limit_ns`]).
    pub fn young_limits(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let fraction = self.preempt_before;
        self.loads
            .iter()
            .enumerate()
            .filter_map(move |(n, load)| fraction.and_then(|f| young_limit_ns(load, f)).map(|limit| (n, limit)))
    }
}
