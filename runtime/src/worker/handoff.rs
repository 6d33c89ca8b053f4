//! The calls a worker makes into the pipeline around its node, and nothing else.

use std::sync::Arc;

use crate::node::Task;
use crate::request::{RequestError, RequestState};
use crate::scheduler::Reason;
use crate::tensor::Tensor;

/// What a worker asks of the pipeline its node belongs to. Everything else a
/// worker touches is its own node's state ([`crate::node::NodeState`]) and the
/// settings it was started with ([`super::WorkerSettings`]).
///
/// The methods that return a [`Reason`] leave the poke to the caller, so a
/// worker pokes the scheduler once for all the deliveries of a batch.
pub(crate) trait Handoff: Send + Sync {
    /// Hands `part`, one output of this node for `request`, to input `slot` of
    /// node `node`. Returns the reason to poke the scheduler, if the part made a task ready.
    fn deliver(&self, node: usize, slot: usize, request: &Arc<RequestState>, part: Tensor) -> Option<Reason>;
    /// Stores `part` as pipeline output `index` of `request`, answering it when it was the last.
    fn output(&self, request: &Arc<RequestState>, index: usize, part: Tensor);
    /// Answers `request` with `error`, unless something answered it already.
    fn fail(&self, request: &RequestState, error: RequestError);
    /// Puts `task` (a stream's next chunk, its turn come) into node `node`'s buffer.
    fn push(&self, node: usize, task: Task) -> Option<Reason>;
    /// Puts a stopped batch's tasks back into node `node`'s buffer, first in their queues.
    fn put_back(&self, node: usize, tasks: &mut Vec<Task>);
    /// Asks the scheduler for a decision: a batch finished, or a task arrived.
    fn poke(&self, reason: Reason);
}
