//! The router: everything between a submitted [`Request`] and its answer.
//!
//! [`Router`] holds what the facade ([`crate::Runtime`]), the workers and the
//! scheduler thread share, and names the operations on it:
//!
//! - **admit** ([`admission`]): check a request against the pipeline and its
//!   limits, take an in-flight slot, and hand its inputs to the entry nodes;
//!   or resolve it at once with the reason it was refused;
//! - **deliver** ([`routing`]): hand one input of a request to a node (through
//!   its join table and stream gate) and push the resulting task into the
//!   node's buffer, telling the caller whether to poke the scheduler;
//! - **output** and **resolve** ([`resolution`]): store a pipeline output, and
//!   answer a request exactly once, doing its bookkeeping once;
//! - **tick** ([`ticker`]): the scheduler thread's loop (ticks, retries of
//!   unplaced tasks, stream expiry).
//!
//! Workers reach the router only through [`crate::worker::Handoff`] (its
//! implementation is in [`handoff`]); the router never calls up into the
//! facade. Every admitted request resolves exactly once: [`Router::resolve`]
//! claims the request first, taking its in-flight permit (see
//! [`crate::request::in_flight`]), and only the claiming call does the
//! bookkeeping (metrics, giving the slot back, forgetting the request at join nodes).
//!
//! ## Shutdown protocol
//! [`Router::stop_accepting`] clears `accepting` (SeqCst) so that no new
//! request is admitted; an immediate stop also sets `stopping` and drains
//! every buffer and stream gate. A task pushed concurrently is caught by the
//! check after the push (see [`Router::push`]); a chunk reaching a drained
//! stream gate is refused there with the shutdown error (the gate closes as
//! it drains, under its lock: see [`crate::node::stream`]).
//! [`Router::wait_until_drained`] then waits until no request holds an
//! in-flight permit (see [`crate::request::in_flight`]).

mod admission;
mod handoff;
mod resolution;
mod routing;
pub(crate) mod ticker;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::metrics::PipelineMetrics;
use crate::node::{Instruction, NodeState};
use crate::request::in_flight::InFlight;
use crate::request::RequestError;
use crate::scheduler::{Reason, Scheduler};
use crate::spec::{PipelineSpec, Target};

#[allow(unused_imports)] // for the module docs
use crate::request::Request;

/// What the runtime handle, the workers and the scheduler thread share: the
/// spec, the nodes' state, the scheduler, and the request bookkeeping.
pub(crate) struct Router {
    pub spec: PipelineSpec,
    pub nodes: Vec<Arc<NodeState>>,
    pub scheduler: Scheduler,
    output_names: Arc<[String]>,
    input_index: HashMap<String, usize>,
    /// Smallest `max_batch` over all nodes, and that node's name: a request may not have more rows.
    row_limit: (usize, String),
    /// Nodes with more than one input (they keep join tables).
    join_nodes: Vec<usize>,
    /// Nodes fed by a pipeline input.
    entry_nodes: Vec<bool>,
    /// (pipeline input, node it feeds, the node's `max_queue`) for every bounded entry.
    entry_limits: Vec<(usize, usize, usize)>,
    next_id: AtomicU64,
    /// The `max_in_flight` slots; each admitted request holds a permit.
    in_flight: Arc<InFlight>,
    accepting: AtomicBool,
    /// Immediate shutdown: no task may enter a buffer any more.
    stopping: AtomicBool,
    stop_ticker: AtomicBool,
    metrics: PipelineMetrics,
    /// Mean submit-to-answer time of recent requests (exponential, ns): how long a waiter spins.
    latency_ema_ns: AtomicU64,
}

impl Router {
    /// The router of `spec`, with fresh node state and scheduler.
    pub fn new(spec: PipelineSpec) -> Router {
        let metrics = PipelineMetrics::new(&spec.name);
        let mut nodes: Vec<NodeState> =
            spec.nodes.iter().map(|n| NodeState::new(&spec.name, n, spec.streams.max_state_bytes)).collect();
        for (node, node_spec) in nodes.iter_mut().zip(&spec.nodes) {
            node.buffer.set_fairness(&spec.fairness);
            node.buffer.set_groups(node_spec.groups.len());
            let collaborative = spec.scheduler.policy == crate::config::BatchingPolicy::Collaborative;
            node.buffer.set_priority_alone(collaborative && spec.scheduler.separate_priority_batches);
            node.buffer.set_priority_rows(if collaborative { node_spec.priority_max_batch } else { usize::MAX });
        }
        let row_limit = spec.nodes.iter().map(|n| (n.max_batch, n.name.clone())).min().expect("a pipeline has nodes");
        Router {
            scheduler: Scheduler::new(&spec, metrics.clone()),
            in_flight: InFlight::new(spec.max_in_flight, metrics.in_flight.clone()),
            output_names: spec.outputs.iter().map(|o| o.spec.name.clone()).collect(),
            input_index: spec.inputs.iter().enumerate().map(|(i, input)| (input.spec.name.clone(), i)).collect(),
            row_limit,
            join_nodes: (0..spec.nodes.len()).filter(|&n| spec.nodes[n].inputs.len() > 1).collect(),
            entry_nodes: (0..spec.nodes.len())
                .map(|n| {
                    let feeds_n = |t: &Target| matches!(*t, Target::Node { node, .. } if node == n);
                    spec.inputs.iter().any(|i| i.targets.iter().any(feeds_n))
                })
                .collect(),
            entry_limits: spec.entry_limits(),
            nodes: nodes.into_iter().map(Arc::new).collect(),
            spec,
            next_id: AtomicU64::new(1),
            accepting: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            stop_ticker: AtomicBool::new(false),
            metrics,
            latency_ema_ns: AtomicU64::new(0),
        }
    }

    /// Requests admitted and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.count()
    }

    /// Stops admitting requests; with `immediate`, also answers every task not
    /// yet running with a shutdown error (see the shutdown protocol above).
    pub fn stop_accepting(&self, immediate: bool) {
        self.accepting.store(false, Ordering::SeqCst);
        self.in_flight.start_draining();
        if immediate {
            self.stopping.store(true, Ordering::SeqCst);
            for state in &self.nodes {
                let waiting = state.streams.as_ref().map(|s| s.drain()).unwrap_or_default();
                for task in state.buffer.drain().into_iter().chain(waiting) {
                    self.resolve(&task.request, Err(RequestError::ShuttingDown));
                }
            }
        }
    }

    /// Waits until every admitted request resolved; re-pokes the scheduler now
    /// and then so progress never depends on a single wake-up.
    pub fn wait_until_drained(&self) {
        self.in_flight.wait_until_empty(|| self.scheduler.poke(Reason::Tick, &self.nodes));
    }

    /// Sends every worker of every node (or worker group) its exit instruction.
    pub fn tell_workers_to_exit(&self) {
        for (state, node) in self.nodes.iter().zip(&self.spec.nodes) {
            if state.groups.is_empty() {
                for _ in 0..node.workers {
                    let _ = state.instructions.send(Instruction::Exit);
                }
            }
            for group in &state.groups {
                for _ in 0..group.workers {
                    let _ = group.instructions.send(Instruction::Exit);
                }
            }
        }
    }

    /// Forgets every partial join (after the workers exited).
    pub fn clear_joins(&self) {
        for state in &self.nodes {
            state.joins.clear();
        }
    }
}
