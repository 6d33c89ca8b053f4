//! Requests, their answers, and the tickets that wait for them.
//!
//! A [`Request`] carries named input tensors, a priority flag and an optional
//! deadline. [`crate::Runtime::submit`] returns a [`Ticket`]; the ticket
//! resolves exactly once, with the pipeline's [`Outputs`] or a
//! [`RequestError`] saying why not. A ticket can be waited on (blocking, with
//! or without a timeout) or awaited as a future; or, with
//! [`crate::Runtime::submit_then`], the result goes to a callback instead.
//!
//! ## The completion protocol
//! A [`Completion`] is shared by the ticket and the runtime. `resolve` stores
//! the result under the slot's lock and flips `done` with a compare-exchange,
//! so only the first resolution counts and every later one is refused (this
//! is what makes "exactly once" hold when a failing branch and a succeeding
//! branch of the same request race). Waiters first spin on `done` for
//! about the answer time the runtime expects (twice its recent mean latency,
//! 20-500 µs; only one waiter in the process spins at a time, so spinning
//! never crowds the workers under load), then sleep on the condvar; an
//! async waiter leaves its waker in the slot instead. Dropping a ticket that
//! has not resolved marks the request cancelled, so tasks not yet run are
//! skipped by the node that would run them. A job of a split request
//! ([`crate::split`]) counts as cancelled once the request it belongs to is
//! answered or cancelled: its tasks not yet run are skipped, and it resolves
//! (with [`RequestError::Cancelled`], dropped by the assembly) as any cancelled request.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::tensor::Tensor;
use crate::wakeup::Sleepers;

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

/// Why a request was not answered with outputs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The request's inputs do not fit the pipeline (name, dtype, shape, rows).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A batch holding this request failed in a node.
    #[error("node `{node}` failed: {message}")]
    Node { node: String, message: String },
    /// The deadline passed while the request waited in a node's queue.
    #[error("deadline exceeded while queued at node `{node}`")]
    DeadlineExceeded { node: String },
    /// The runtime is shutting down (or was shut down) and did not run the request.
    #[error("the runtime is shutting down")]
    ShuttingDown,
    /// Admission is full: too many requests in flight.
    #[error("queue full: {limit} requests already in flight (pipeline.max_in_flight)")]
    QueueFull { limit: usize },
    /// Admission is full at a node the request enters at: `limit` tasks wait there (its `max_queue`).
    #[error("queue full: node `{node}` has {limit} tasks waiting (nodes.{node}.max_queue)")]
    NodeQueueFull { node: String, limit: usize },
    /// The request's stream cannot take this chunk (not open, or closed before it ran).
    #[error("stream {id}: {message}")]
    Stream { id: u64, message: String },
    /// Opening the request's stream would pass `streams.max_state_bytes` (a capacity
    /// limit, like a full queue: the stream's own fault only in that it came last).
    #[error("stream {id}: {message}")]
    StateMemoryFull { id: u64, message: String },
    /// The ticket was dropped before the request ran.
    #[error("cancelled: the ticket was dropped")]
    Cancelled,
    /// A request split into jobs (`[fairness] granule`) failed because job
    /// `index` (its rows `start..end`) failed; `error` says why.
    #[error("job {index} (rows {start}..{end}) failed: {error}")]
    Job { index: usize, start: usize, end: usize, error: Box<RequestError> },
}

/// The answer to a request: one tensor per pipeline output.
#[derive(Clone, Debug)]
pub struct Outputs {
    names: Arc<[String]>,
    tensors: Vec<Tensor>,
}

impl Outputs {
    pub(crate) fn new(names: Arc<[String]>, tensors: Vec<Tensor>) -> Self {
        debug_assert_eq!(names.len(), tensors.len());
        Outputs { names, tensors }
    }

    /// The output named `name`.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.names.iter().position(|n| n == name).map(|i| &self.tensors[i])
    }

    /// `(name, tensor)` pairs in the pipeline's output order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.names.iter().map(String::as_str).zip(&self.tensors)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Takes the tensors out, in the pipeline's output order.
    pub fn into_tensors(self) -> Vec<Tensor> {
        self.tensors
    }
}

pub type RequestResult = Result<Outputs, RequestError>;

#[derive(Default)]
struct Slot {
    result: Option<RequestResult>,
    waker: Option<Waker>,
    /// Set by [`crate::Runtime::submit_then`]: receives the result instead of a ticket.
    callback: Option<Callback>,
}

/// A function that receives a request's result on the thread that resolves it.
pub type Callback = Box<dyn FnOnce(RequestResult) + Send>;

/// The one-shot cell a ticket and the runtime share. See the module docs for the protocol.
#[derive(Default)]
pub(crate) struct Completion {
    done: AtomicBool,
    cancelled: AtomicBool,
    slot: Mutex<Slot>,
    ready: Condvar,
    /// How long a blocking waiter spins before sleeping (about the expected answer time).
    spin: Duration,
    /// A job's completion: the split request's, whose end (answered, or its ticket
    /// dropped) cancels the job too (see [`crate::split`]).
    parent: Option<Arc<Completion>>,
}

/// Spin bounds of a blocking waiter.
const MIN_WAIT_SPIN: Duration = Duration::from_micros(20);
const MAX_WAIT_SPIN: Duration = Duration::from_micros(500);

/// Waiters spinning now, process-wide (at most one), on purpose: the spinner
/// competes for cores with every runtime's workers in this process, so one
/// spinner per process (not per runtime) is what keeps the workers' cores free.
static SPINNERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Completion {
    /// Stores the result if none was stored yet. Returns whether this call resolved it.
    pub(crate) fn resolve(self: &Arc<Self>, result: RequestResult) -> bool {
        let mut slot = self.slot.lock();
        if self.done.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return false;
        }
        if let Some(callback) = slot.callback.take() {
            drop(slot);
            callback(result);
            return true;
        }
        slot.result = Some(result);
        let waker = slot.waker.take();
        drop(slot);
        crate::wakeup::notify(Arc::clone(self) as Arc<dyn Sleepers>);
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// A completion whose waiter spins up to `expected` (bounded) before sleeping.
    pub(crate) fn expecting(expected: Duration) -> Self {
        Completion { spin: expected.clamp(MIN_WAIT_SPIN, MAX_WAIT_SPIN), ..Completion::default() }
    }

    /// A completion that hands its result to `callback` (no ticket waits on it).
    pub(crate) fn with_callback(callback: Callback) -> Self {
        let completion = Completion::default();
        completion.slot.lock().callback = Some(callback);
        completion
    }

    /// A job's completion, handing its result to `callback`: cancelled once `parent` is
    /// resolved or cancelled (a dropped ticket, or another job failed).
    pub(crate) fn job(callback: Callback, parent: Arc<Completion>) -> Self {
        let completion = Completion { parent: Some(parent), ..Completion::default() };
        completion.slot.lock().callback = Some(callback);
        completion
    }

    /// Resolved, or its ticket was dropped: nothing more should run for it.
    pub(crate) fn is_finished(&self) -> bool {
        self.done.load(Ordering::Acquire) || self.is_cancelled()
    }

    /// Its ticket was dropped, or (a job) its split request ended before it did.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire) || self.parent.as_ref().is_some_and(|p| p.is_finished())
    }

    fn take(&self) -> Option<RequestResult> {
        if !self.done.load(Ordering::Acquire) {
            return None;
        }
        self.slot.lock().result.take()
    }

    fn wait(&self, deadline: Option<Instant>) -> Option<RequestResult> {
        // Spin only while no other waiter spins: one spinner keeps light-load latency
        // low; many would steal the cores the workers need under load.
        if SPINNERS.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            let spin_until = Instant::now() + self.spin.max(MIN_WAIT_SPIN);
            while !self.done.load(Ordering::Acquire) && Instant::now() < spin_until {
                // Yield rather than hold the core: on a machine with few cores the
                // worker about to answer may be waiting for this very core.
                std::thread::yield_now();
            }
            SPINNERS.store(0, Ordering::Release);
        }
        let mut slot = self.slot.lock();
        let result = loop {
            if let Some(result) = slot.result.take() {
                break Some(result);
            }
            match deadline {
                Some(d) => {
                    if self.ready.wait_until(&mut slot, d).timed_out() {
                        break slot.result.take();
                    }
                }
                None => self.ready.wait(&mut slot),
            }
        };
        drop(slot);
        // Pass the wake-ups on (see `wakeup`): other requesters of the same batch may still sleep.
        crate::wakeup::help(crate::wakeup::FANOUT);
        result
    }
}

impl Sleepers for Completion {
    /// Wakes threads blocked on this completion; returns how many were asleep.
    fn notify(&self) -> usize {
        self.ready.notify_all()
    }
}

/// A submitted request's claim on its answer.
///
/// Resolves exactly once. Dropping it before the answer cancels the request
/// (tasks not yet run are skipped; work already running finishes and its
/// result is discarded).
#[must_use = "a ticket resolves to the request's outputs; dropping it cancels the request"]
pub struct Ticket {
    completion: Arc<Completion>,
    /// Taken by a successful wait, so drop knows not to cancel.
    taken: bool,
}

/// A wait that ran out of time; the ticket is still live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("timed out waiting for the answer")]
pub struct WaitTimeout;

impl Ticket {
    pub(crate) fn new(completion: Arc<Completion>) -> Self {
        Ticket { completion, taken: false }
    }

    /// Blocks until the answer arrives.
    pub fn wait(mut self) -> RequestResult {
        let result = self.completion.wait(None).expect("a wait without deadline returns a result");
        self.taken = true;
        result
    }

    /// Blocks up to `timeout`; on time-out the ticket is handed back, still live.
    pub fn wait_timeout(mut self, timeout: Duration) -> Result<RequestResult, (Ticket, WaitTimeout)> {
        match self.completion.wait(Some(Instant::now() + timeout)) {
            Some(result) => {
                self.taken = true;
                Ok(result)
            }
            None => Err((self, WaitTimeout)),
        }
    }

    /// The answer if it has arrived, without blocking.
    pub fn try_take(&mut self) -> Option<RequestResult> {
        let result = self.completion.take();
        self.taken |= result.is_some();
        result
    }

    /// Whether the answer has arrived.
    pub fn is_ready(&self) -> bool {
        self.completion.done.load(Ordering::Acquire)
    }
}

impl Future for Ticket {
    type Output = RequestResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RequestResult> {
        if let Some(result) = self.completion.take() {
            self.taken = true;
            return Poll::Ready(result);
        }
        let mut slot = self.completion.slot.lock();
        if let Some(result) = slot.result.take() {
            drop(slot);
            self.taken = true;
            return Poll::Ready(result);
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.taken && !self.completion.done.load(Ordering::Acquire) {
            self.completion.cancelled.store(true, Ordering::Release);
        }
    }
}

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
    remaining: std::sync::atomic::AtomicUsize,
    /// Claimed by the one resolution that counts, before its bookkeeping and
    /// before the ticket wakes (so a woken waiter sees the bookkeeping done).
    claimed: AtomicBool,
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
            remaining: std::sync::atomic::AtomicUsize::new(remaining),
            claimed: AtomicBool::new(false),
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

    /// True for the first caller only: that caller resolves the request.
    pub fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs() -> Outputs {
        Outputs::new(Arc::from(vec!["y".to_string()]), vec![Tensor::from_vec(vec![1], vec![1.0f32]).unwrap()])
    }

    #[test]
    fn resolves_exactly_once() {
        let c = Arc::new(Completion::default());
        assert!(c.resolve(Err(RequestError::ShuttingDown)));
        assert!(!c.resolve(Ok(outputs())));
        assert_eq!(Ticket::new(c).wait().unwrap_err(), RequestError::ShuttingDown);
    }

    #[test]
    fn wait_timeout_hands_the_ticket_back() {
        let c = Arc::new(Completion::default());
        let (ticket, _) = Ticket::new(c.clone()).wait_timeout(Duration::from_millis(5)).err().unwrap();
        c.resolve(Ok(outputs()));
        assert!(ticket.wait().unwrap().get("y").is_some());
    }

    #[test]
    fn resolution_from_another_thread_wakes_the_waiter() {
        let c = Arc::new(Completion::default());
        let c2 = c.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            c2.resolve(Ok(outputs()))
        });
        assert!(Ticket::new(c).wait().is_ok());
        assert!(t.join().unwrap());
    }

    #[test]
    fn dropping_an_unresolved_ticket_cancels() {
        let c = Arc::new(Completion::default());
        drop(Ticket::new(c.clone()));
        assert!(c.is_cancelled() && c.is_finished());
        let c = Arc::new(Completion::default());
        c.resolve(Ok(outputs()));
        drop(Ticket::new(c.clone()));
        assert!(!c.is_cancelled());
    }

    #[test]
    fn ticket_is_a_future() {
        let c = Arc::new(Completion::default());
        let c2 = c.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            c2.resolve(Ok(outputs()));
        });
        let result = block_on(Ticket::new(c));
        assert!(result.is_ok());
    }

    /// A minimal executor: polls, parking the thread between wake-ups.
    fn block_on<F: Future>(future: F) -> F::Output {
        struct ThreadWaker(std::thread::Thread);
        impl std::task::Wake for ThreadWaker {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park();
        }
    }
}
