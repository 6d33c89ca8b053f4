//! Requests, their answers, and the tickets that wait for them.
//!
//! A [`Request`] carries named input tensors, a priority flag and an optional
//! deadline. [`crate::Runtime::submit`] returns a [`Ticket`]; the ticket
//! resolves exactly once, with the pipeline's [`Outputs`] or a
//! [`RequestError`] saying why not. A ticket can be waited on (blocking, with
//! or without a timeout) or awaited as a future; or, with
//! [`crate::Runtime::submit_then`], the result goes to a callback instead.
//!
//! This module is the public request API; the machinery behind a ticket is in
//! its submodules: [`completion`] (the one-shot cell a ticket and the runtime
//! share, and its protocol), [`spin`] (how a blocking waiter spins before it
//! sleeps), [`state`] (the runtime's record of a request in flight) and
//! [`in_flight`] (the permit each admitted request holds until it is answered).

mod completion;
mod error;
pub(crate) mod in_flight;
mod outputs;
mod spin;
mod state;
mod ticket;

use std::time::{Duration, Instant};

pub use completion::Callback;
pub(crate) use completion::Completion;
pub use error::RequestError;
pub use outputs::{Outputs, RequestResult};
pub(crate) use state::RequestState;
pub use ticket::{Ticket, WaitTimeout};

use crate::tensor::Tensor;

/// One request to a pipeline: named inputs (batch dim first), a priority flag, a deadline.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub inputs: Vec<(String, Tensor)>,
    /// A priority task (see "Priority tasks" in docs/scheduling.md): the scheduler runs nodes holding priority tasks first,
    /// and within a node priority tasks are batched first.
    pub priority: bool,
    /// If still queued at this instant, the request is answered with a deadline error instead of run.
    pub deadline: Option<Instant>,
    /// The stream (session) this request is a chunk of, for nodes that keep per-stream state.
    pub stream: Option<StreamChunk>,
    /// The tenant (or class) whose share of the nodes this request uses
    /// (`[fairness] tenants`); `None`: the `default` tenant.
    pub tenant: Option<String>,
    /// The kind of worker the request needs (`[[nodes.NAME.worker_groups]] kind`)
    /// at the nodes that have workers of that kind; `None`: any worker that fits its rows.
    pub worker_kind: Option<String>,
}

/// Which stream a request belongs to, and where in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamChunk {
    /// The stream's id, chosen by the caller.
    pub id: u64,
    /// The stream's first chunk: it opens the stream with the nodes' initial state
    /// (restarting it if the id was open).
    pub start: bool,
    /// The stream's final chunk: a priority task (docs/scheduling.md) that closes the stream.
    pub end: bool,
}

impl Request {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input tensor.
    pub fn input(mut self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.inputs.push((name.into(), tensor));
        self
    }

    /// Marks the request as a priority task.
    pub fn priority(mut self, priority: bool) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the deadline.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Makes the request a chunk of stream `id`. The final chunk (`end`) is a priority task.
    pub fn stream(mut self, id: u64, start: bool, end: bool) -> Self {
        self.stream = Some(StreamChunk { id, start, end });
        self
    }

    /// Sets the deadline `timeout` from now.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.deadline(Instant::now() + timeout)
    }

    /// Names the tenant the request belongs to (see [`crate::fairness`]).
    pub fn tenant(mut self, name: impl Into<String>) -> Self {
        self.tenant = Some(name.into());
        self
    }

    /// Asks for workers of group kind `kind` at every node that has such a group
    /// (see [`crate::config::WorkerGroupConfig`]). A kind no node has is refused
    /// as invalid input, naming it.
    pub fn worker_kind(mut self, kind: impl Into<String>) -> Self {
        self.worker_kind = Some(kind.into());
        self
    }
}
