//! Routing: a request's input reaches a node, becomes a task, enters the node's buffer.
//!
//! `deliver` takes one input of a request to a node (waiting in the node's
//! join table until all its inputs arrived), `enqueue` passes the task
//! through the node's stream gate (per-stream order), and `push` fits it to a
//! worker group and puts it into the batching buffer. Each returns the reason
//! to poke the scheduler, if the arrival wants a decision; the caller pokes
//! once for all its deliveries.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Router;
use crate::node::stream::Turn;
use crate::node::{NodeState, Task};
use crate::request::{RequestError, RequestState};
use crate::scheduler::Reason;
use crate::tensor::Tensor;

impl Router {
    /// Hands input `slot` of `request` to node `node`. Returns the reason to poke the scheduler, if any.
    pub(crate) fn deliver(
        &self,
        node: usize,
        slot: usize,
        request: &Arc<RequestState>,
        tensor: Tensor,
    ) -> Option<Reason> {
        if request.completion.is_finished() {
            self.answer_if_cancelled(request);
            return None;
        }
        if !request.runs(node) {
            return None;
        }
        let spec = &self.spec.nodes[node];
        let total = spec.inputs.len();
        let needed = total - spec.state.len();
        let rows = tensor.batch_rows();
        let inputs = if needed == 1 {
            let mut inputs = vec![crate::node::placeholder(); total];
            inputs[slot] = tensor;
            inputs
        } else {
            match self.nodes[node].joins.arrive(request.id, &request.completion, slot, tensor) {
                Some(inputs) => inputs,
                None => {
                    // Waiting for other inputs, or finished meanwhile.
                    self.answer_if_cancelled(request);
                    return None;
                }
            }
        };
        let mut task = Task::new(Arc::clone(request), inputs, rows);
        // Work descending from a priority task is priority at every node, unless
        // the pipeline keeps priority to the nodes a request enters at.
        task.priority &= self.spec.scheduler.priority_follows_dag || self.entry_nodes[node];
        self.enqueue(node, task)
    }

    /// A request whose ticket was dropped is still owed its answer (so it leaves
    /// the in-flight count); one already answered is left alone.
    fn answer_if_cancelled(&self, request: &RequestState) {
        if request.completion.is_cancelled() {
            self.resolve(request, Err(RequestError::Cancelled));
        }
    }

    /// Puts a task whose inputs all arrived into node `node`'s buffer (through the
    /// node's stream gate if it keeps per-stream state). Returns the reason to poke, if any.
    pub(crate) fn enqueue(&self, node: usize, task: Task) -> Option<Reason> {
        let task_priority = task.priority;
        let task = match &self.nodes[node].streams {
            None => task,
            Some(streams) => match streams.enter(task) {
                Turn::Now(task) => task,
                Turn::Later => {
                    if task_priority {
                        self.nodes[node].nice.lift();
                    }
                    return None;
                }
                Turn::Refused(task, error) => {
                    self.resolve(&task.request, Err(error));
                    return None;
                }
            },
        };
        self.push(node, task)
    }

    /// Puts a task that may run now (its stream's turn, if any) into node `node`'s buffer.
    pub(crate) fn push(&self, node: usize, mut task: Task) -> Option<Reason> {
        let state = &self.nodes[node];
        let priority = task.priority;
        if !state.groups.is_empty() {
            match self.fitting_groups(node, &task) {
                Ok(mask) => task.groups = mask,
                Err(message) => {
                    self.resolve(&task.request, Err(RequestError::InvalidInput(message)));
                    return None;
                }
            }
        }
        if self.stopping.load(Ordering::SeqCst) {
            self.resolve(&task.request, Err(RequestError::ShuttingDown));
            return None;
        }
        let pending = state.buffer.push(task);
        // An immediate shutdown may have drained this buffer between the check and the push.
        if self.refuse_if_stopping(state) {
            return None;
        }
        state.metrics.queue_depth.set(pending as f64);
        if priority {
            state.nice.lift();
            state.metrics.priority_depth.set(state.buffer.priority_pending() as f64);
        }
        let reason = if priority { Reason::PriorityArrival } else { Reason::Arrival };
        self.scheduler.arrival_wants_decision(node, state, priority).then_some(reason)
    }

    /// Puts a stopped batch's tasks back into node `node`'s buffer (see
    /// `node::stop`), at the front of their queues; `tasks` is left empty.
    /// The worker pokes the scheduler when it finishes, as after any batch.
    pub(crate) fn put_back(&self, node: usize, tasks: &mut Vec<Task>) {
        let state = &self.nodes[node];
        state.buffer.put_back(tasks);
        // An immediate shutdown may have drained this buffer while the batch ran.
        self.refuse_if_stopping(state);
        state.publish_depths();
    }

    /// After tasks went into `state`'s buffer: if an immediate shutdown is under
    /// way (it may have drained the buffer before they came), answers every task
    /// there with the shutdown error. Returns whether it did.
    fn refuse_if_stopping(&self, state: &NodeState) -> bool {
        let stopping = self.stopping.load(Ordering::SeqCst);
        if stopping {
            for task in state.buffer.drain() {
                self.resolve(&task.request, Err(RequestError::ShuttingDown));
            }
        }
        stopping
    }

    /// At a node with worker groups: the mask of the groups that fit `task`, or why none does.
    fn fitting_groups(&self, node: usize, task: &Task) -> Result<u64, String> {
        let spec = &self.spec.nodes[node];
        // A kind this node has narrows the groups to it; a kind it lacks does not apply here.
        let kind = task.request.worker_kind.filter(|&k| spec.groups.iter().any(|g| g.kind_index == k));
        let mask = spec.groups.iter().enumerate().fold(0u64, |mask, (g, group)| {
            let fits = task.rows <= group.max_rows && kind.is_none_or(|k| k == group.kind_index);
            mask | (u64::from(fits) << g)
        });
        if mask != 0 {
            return Ok(mask);
        }
        let groups: Vec<String> = spec.groups.iter().map(|g| format!("{} (max_rows {})", g.kind, g.max_rows)).collect();
        let asked = kind.map_or(String::new(), |k| format!(" of kind `{}`", self.spec.worker_kinds[k]));
        Err(format!(
            "no worker group of node `{}` fits a task of {} rows{asked} (its groups: {})",
            spec.name,
            task.rows,
            groups.join(", ")
        ))
    }
}
