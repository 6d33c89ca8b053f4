//! The runtime's record of one request in flight: its outputs as they come, and its claim.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::in_flight::InFlightPermit;
use super::{Completion, Request, StreamChunk};
use crate::tensor::Tensor;

/// The runtime's record of one request in flight.
pub(crate) struct RequestState {
    pub id: u64,
    pub priority: bool,
    pub stream: Option<StreamChunk>,
    pub deadline: Option<Instant>,
    pub submitted: Instant,
    pub completion: Arc<Completion>,
    /// Index of its tenant in the pipeline's [`crate::spec::fairness::Tenants`].
    pub tenant: usize,
    /// Index of the worker kind it asks for in [`crate::spec::PipelineSpec::worker_kinds`].
    pub worker_kind: Option<usize>,
    outputs: Mutex<Vec<Option<Tensor>>>,
    remaining: AtomicUsize,
    /// Its in-flight slot: taken out by the one resolution that counts (the
    /// claim), before its bookkeeping and before the ticket wakes (so a woken
    /// waiter sees the bookkeeping done), and given back when that call drops it.
    permit: Mutex<Option<InFlightPermit>>,
    expected: Option<Box<[bool]>>,
    runs: Option<Box<[bool]>>,
}

impl RequestState {
    /// `expected[i]`: output `i` will be produced for this request (`None`: all will).
    /// `runs[n]`: node `n` runs for it (`None`: all do).
    pub fn new(
        id: u64,
        request: &Request,
        outputs: usize,
        expected: Option<Box<[bool]>>,
        runs: Option<Box<[bool]>>,
        completion: Arc<Completion>,
        permit: InFlightPermit,
    ) -> Self {
        let remaining = expected.as_ref().map_or(outputs, |e| e.iter().filter(|&&x| x).count());
        RequestState {
            id,
            // The final chunk of a stream is a priority task.
            priority: request.priority || request.stream.is_some_and(|s| s.end),
            stream: request.stream,
            deadline: request.deadline,
            submitted: Instant::now(),
            completion,
            tenant: 0,
            worker_kind: None,
            outputs: Mutex::new(vec![None; outputs]),
            remaining: AtomicUsize::new(remaining),
            permit: Mutex::new(Some(permit)),
            expected,
            runs,
        }
    }

    /// Whether node `node` runs for this request.
    pub fn runs(&self, node: usize) -> bool {
        self.runs.as_ref().is_none_or(|r| r[node])
    }

    /// Which outputs this request gets (`None`: all).
    pub fn expected(&self) -> Option<&[bool]> {
        self.expected.as_deref()
    }

    /// The request's in-flight permit, for the first caller only: that caller
    /// resolves the request, and gives its slot back by dropping the permit.
    pub fn claim(&self) -> Option<InFlightPermit> {
        self.permit.lock().take()
    }

    /// Stores pipeline output `index`; returns the outputs (`None` where not
    /// expected for this request) once the last expected one is in.
    pub fn set_output(&self, index: usize, tensor: Tensor) -> Option<Vec<Option<Tensor>>> {
        let mut outputs = self.outputs.lock();
        if outputs[index].replace(tensor).is_some() {
            return None;
        }
        if self.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            return None;
        }
        Some(outputs.iter_mut().map(Option::take).collect())
    }
}
