//! The router as the pipeline a worker hands its batch's results to.

use std::sync::Arc;

use super::Router;
use crate::node::Task;
use crate::request::{RequestError, RequestState};
use crate::scheduler::Reason;
use crate::tensor::Tensor;
use crate::worker::Handoff;

impl Handoff for Router {
    fn deliver(&self, node: usize, slot: usize, request: &Arc<RequestState>, part: Tensor) -> Option<Reason> {
        Router::deliver(self, node, slot, request, part)
    }

    fn output(&self, request: &Arc<RequestState>, index: usize, part: Tensor) {
        Router::output(self, request, index, part)
    }

    fn fail(&self, request: &RequestState, error: RequestError) {
        self.resolve(request, Err(error))
    }

    fn push(&self, node: usize, task: Task) -> Option<Reason> {
        Router::push(self, node, task)
    }

    fn put_back(&self, node: usize, tasks: &mut Vec<Task>) {
        Router::put_back(self, node, tasks)
    }

    fn poke(&self, reason: Reason) {
        self.scheduler.poke(reason, &self.nodes)
    }
}
