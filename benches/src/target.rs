//! What the load drivers send requests to: one trait, for a Baton runtime in
//! this process and for a KServe v2 server over the network ([`crate::remote`]).

use baton::{NodeStats, Request, Runtime};

/// A receiver of benchmark requests.
///
/// Every request resolves exactly once: [`Target::call`] returns its outcome,
/// and [`Target::call_then`] runs `done` once with it (on some other thread).
pub trait Target: Sync {
    /// Sends `request` and waits for its answer: `true` when it succeeded.
    fn call(&self, request: Request) -> bool;

    /// Sends `request` without waiting; `done` runs once with the outcome.
    fn call_then(&self, request: Request, done: Box<dyn FnOnce(bool) + Send>);

    /// Requests sent and not yet answered.
    fn in_flight(&self) -> usize;

    /// Per-node running totals, matched by position between two calls
    /// (empty when the target cannot tell, as a remote server).
    fn node_stats(&self) -> Vec<NodeStats>;

    /// The scheduler thread's record so far (`None` when the target cannot tell, as a remote server).
    fn ticks(&self) -> Option<baton::scheduler::TickRecord> {
        None
    }

    /// CPU time the target's core keepers have spun so far, ns (`keep_cores_awake`; 0 without,
    /// and where the target cannot tell).
    fn keepers_cpu_ns(&self) -> u64 {
        0
    }
}

impl Target for Runtime {
    fn call(&self, request: Request) -> bool {
        self.submit(request).wait().is_ok()
    }

    fn call_then(&self, request: Request, done: Box<dyn FnOnce(bool) + Send>) {
        self.submit_then(request, move |result| done(result.is_ok()));
    }

    fn in_flight(&self) -> usize {
        Runtime::in_flight(self)
    }

    fn node_stats(&self) -> Vec<NodeStats> {
        Runtime::node_stats(self)
    }

    fn ticks(&self) -> Option<baton::scheduler::TickRecord> {
        Some(Runtime::ticks(self))
    }

    fn keepers_cpu_ns(&self) -> u64 {
        Runtime::keepers_cpu_ns(self)
    }
}
