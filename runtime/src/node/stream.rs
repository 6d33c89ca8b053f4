//! Per-stream state of a stateful node (the node model's write-back, docs/scheduling.md).
//!
//! A stateful node declares write-back edges: after a stream's chunk succeeds,
//! the node's output (say `new_state`) becomes its input (`state`) for that
//! stream's next chunk. This store keeps each open stream's state and makes
//! the stream's chunks run in order, one at a time per node, while chunks of
//! different streams batch together.
//!
//! Protocol (all under one lock per node):
//! - `enter` a chunk: if its stream has a chunk queued or running at this
//!   node, the new chunk waits in the stream's own queue; otherwise it is
//!   marked running and leaves with the stream's current state filled into
//!   its state slots (the initial state for a `start` chunk).
//! - `release` when the running chunk is done: its new state is committed
//!   only if it succeeded; a final chunk closes the stream (chunks queued
//!   after it are refused); otherwise the next waiting chunk is marked running and
//!   returned for the caller to enqueue.
//! - `expire` closes streams idle for longer than the timeout (never one
//!   with a chunk queued or running) and frees their state.
//! - `drain` (immediate shutdown) empties the store and closes it: a chunk
//!   entering afterwards (say, forwarded by an upstream batch that was
//!   still running) is refused with the shutdown error, never mistaken for
//!   a chunk of an unopened stream, and no stream opens again.
//!
//! State memory is bounded: opening a stream whose initial state would pass
//! `max_state_bytes` is refused for that stream alone.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::Task;
use crate::request::{RequestError, StreamChunk};
use crate::spec::StateSpec;
use crate::tensor::Tensor;

struct Stream {
    state: Vec<Tensor>,
    bytes: usize,
    /// A chunk of this stream is queued in the node's buffer or running.
    running: bool,
    waiting: VecDeque<Task>,
    last_used: Instant,
}

struct Inner {
    streams: HashMap<u64, Stream>,
    bytes: usize,
    /// Drained for shutdown: every chunk is refused from now on.
    closed: bool,
}

/// What became of a chunk offered to the store.
pub(crate) enum Turn {
    /// Run it now: its state slots are filled.
    Now(Task),
    /// It waits behind an earlier chunk of its stream.
    Later,
    /// It cannot run; answer it with this error.
    Refused(Task, RequestError),
}

pub(crate) struct StreamStates {
    node: String,
    specs: Vec<StateSpec>,
    initial_bytes: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
    /// Priority chunks waiting behind an earlier chunk of their stream (changed under
    /// `inner`'s lock, read without it: see [`StreamStates::priority_parked`]).
    priority_parked: AtomicUsize,
}

fn state_bytes(state: &[Tensor]) -> usize {
    state.iter().map(|t| t.as_bytes().len()).sum()
}

impl StreamStates {
    pub fn new(node: &str, specs: Vec<StateSpec>, max_bytes: usize) -> Self {
        let initial: Vec<Tensor> = specs.iter().map(|s| s.initial.clone()).collect();
        StreamStates {
            node: node.to_string(),
            initial_bytes: state_bytes(&initial),
            specs,
            max_bytes,
            inner: Mutex::new(Inner { streams: HashMap::new(), bytes: 0, closed: false }),
            priority_parked: AtomicUsize::new(0),
        }
    }

    fn fill(&self, task: &mut Task, stream: &Stream) {
        for (spec, state) in self.specs.iter().zip(&stream.state) {
            task.inputs[spec.slot] = state.clone();
        }
    }

    /// Offers a chunk; see the module docs.
    pub fn enter(&self, mut task: Task) -> Turn {
        let Some(chunk) = task.request.stream else {
            let message =
                format!("node `{}` keeps per-stream state: the request must be a chunk of a stream", self.node);
            return Turn::Refused(task, RequestError::InvalidInput(message));
        };
        if task.rows != 1 {
            let message = format!(
                "node `{}` keeps one row of state per stream: a chunk must have 1 row (has {})",
                self.node, task.rows
            );
            return Turn::Refused(task, RequestError::InvalidInput(message));
        }
        let mut inner = self.inner.lock();
        let Inner { streams, bytes, closed } = &mut *inner;
        if *closed {
            return Turn::Refused(task, RequestError::ShuttingDown);
        }
        if !streams.contains_key(&chunk.id) {
            if !chunk.start {
                let message = format!(
                    "not open at node `{}`: send its first chunk with start, or it expired after the idle timeout",
                    self.node
                );
                return Turn::Refused(task, RequestError::Stream { id: chunk.id, message });
            }
            if *bytes + self.initial_bytes > self.max_bytes {
                let message = format!(
                    "out of state memory at node `{}`: {} bytes held by {} streams, a new one needs {} (streams.max_state_bytes = {})",
                    self.node,
                    bytes,
                    streams.len(),
                    self.initial_bytes,
                    self.max_bytes
                );
                return Turn::Refused(task, RequestError::StateMemoryFull { id: chunk.id, message });
            }
            *bytes += self.initial_bytes;
            let state = self.specs.iter().map(|s| s.initial.clone()).collect();
            streams.insert(
                chunk.id,
                Stream {
                    state,
                    bytes: self.initial_bytes,
                    running: false,
                    waiting: VecDeque::new(),
                    last_used: Instant::now(),
                },
            );
        }
        let stream = streams.get_mut(&chunk.id).expect("present");
        if stream.running {
            if task.priority {
                self.priority_parked.fetch_add(1, Ordering::SeqCst);
            }
            stream.waiting.push_back(task);
            return Turn::Later;
        }
        stream.running = true;
        if chunk.start {
            Self::reset(stream, &self.specs, bytes);
        }
        self.fill(&mut task, stream);
        Turn::Now(task)
    }

    fn reset(stream: &mut Stream, specs: &[StateSpec], total: &mut usize) {
        stream.state = specs.iter().map(|s| s.initial.clone()).collect();
        let new_bytes = state_bytes(&stream.state);
        *total = *total - stream.bytes + new_bytes;
        stream.bytes = new_bytes;
    }

    /// The running chunk `chunk` is done: commits `new_state` (if it succeeded) and
    /// returns the next chunk to run, plus chunks refused because the stream closed.
    pub fn release(
        &self,
        chunk: StreamChunk,
        new_state: Option<Vec<Tensor>>,
    ) -> (Option<Task>, Vec<(Task, RequestError)>) {
        let mut inner = self.inner.lock();
        let Inner { streams, bytes, .. } = &mut *inner;
        let Some(stream) = streams.get_mut(&chunk.id) else { return (None, Vec::new()) };
        if let Some(state) = new_state {
            let new_bytes = state_bytes(&state);
            *bytes = *bytes - stream.bytes + new_bytes;
            stream.bytes = new_bytes;
            stream.state = state;
        }
        stream.running = false;
        stream.last_used = Instant::now();
        if chunk.end {
            let closed = streams.remove(&chunk.id).expect("present");
            *bytes -= closed.bytes;
            self.unpark_priority(&closed.waiting);
            let refused = closed
                .waiting
                .into_iter()
                .map(|task| {
                    let message = format!("closed at node `{}` by its final chunk before this chunk ran", self.node);
                    (task, RequestError::Stream { id: chunk.id, message })
                })
                .collect();
            return (None, refused);
        }
        let Some(mut next) = stream.waiting.pop_front() else { return (None, Vec::new()) };
        self.unpark_priority(std::slice::from_ref(&next));
        stream.running = true;
        if next.request.stream.is_some_and(|c| c.start) {
            Self::reset(stream, &self.specs, bytes);
        }
        self.fill(&mut next, stream);
        (Some(next), Vec::new())
    }

    /// Closes streams idle for longer than `timeout`; returns how many.
    pub fn expire(&self, timeout: Duration) -> usize {
        let now = Instant::now();
        let mut inner = self.inner.lock();
        let Inner { streams, bytes, .. } = &mut *inner;
        let before = streams.len();
        streams.retain(|_, s| {
            let keep = s.running || !s.waiting.is_empty() || now.duration_since(s.last_used) < timeout;
            if !keep {
                *bytes -= s.bytes;
            }
            keep
        });
        before - streams.len()
    }

    /// Open streams and the bytes of state they hold.
    pub fn usage(&self) -> (usize, usize) {
        let inner = self.inner.lock();
        (inner.streams.len(), inner.bytes)
    }

    /// Drops every stream and its waiting chunks and closes the store (shutdown);
    /// returns the chunks.
    pub fn drain(&self) -> Vec<Task> {
        let mut inner = self.inner.lock();
        inner.closed = true;
        inner.bytes = 0;
        let waiting: Vec<Task> = inner.streams.drain().flat_map(|(_, s)| s.waiting).collect();
        self.unpark_priority(&waiting);
        waiting
    }

    /// Priority chunks parked behind an earlier chunk of their stream. The chunk they wait
    /// for runs in a batch that holds no priority task, which should not go to the
    /// background for that (see [`super::niceness::NodeNice`]).
    pub fn priority_parked(&self) -> usize {
        self.priority_parked.load(Ordering::SeqCst)
    }

    /// `tasks` leave the streams' waiting queues (under the lock).
    fn unpark_priority<'a>(&self, tasks: impl IntoIterator<Item = &'a Task>) {
        let priority = tasks.into_iter().filter(|t| t.priority).count();
        if priority > 0 {
            self.priority_parked.fetch_sub(priority, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::request::{Completion, Request, RequestState};
    use crate::tensor::DType;

    fn store() -> StreamStates {
        let state =
            StateSpec { slot: 1, output: "new_state".into(), initial: Tensor::zeros(DType::F32, vec![1, 2]).unwrap() };
        StreamStates::new("speech", vec![state], 1 << 20)
    }

    fn chunk(id: u64, start: bool, end: bool) -> Task {
        let request = Request::new().stream(id, start, end);
        let slots = crate::request::in_flight::InFlight::new(1, metrics::Gauge::noop());
        let permit = slots.acquire().expect("a slot");
        let state = RequestState::new(0, &request, 1, None, None, Arc::new(Completion::default()), permit);
        let input = Tensor::zeros(DType::F32, vec![1, 4]).unwrap();
        Task::new(Arc::new(state), vec![input, super::super::placeholder()], 1)
    }

    #[test]
    fn a_final_chunk_parked_behind_its_stream_counts_as_parked_priority_until_it_leaves() {
        let streams = store();
        assert!(matches!(streams.enter(chunk(7, true, false)), Turn::Now(_)));
        assert!(matches!(streams.enter(chunk(7, false, true)), Turn::Later));
        assert!(matches!(streams.enter(chunk(8, true, false)), Turn::Now(_)));
        assert_eq!(streams.priority_parked(), 1, "the final chunk is a priority task waiting behind chunk 1");
        let (next, refused) = streams.release(StreamChunk { id: 7, start: true, end: false }, None);
        assert!(next.is_some_and(|t| t.priority) && refused.is_empty());
        assert_eq!(streams.priority_parked(), 0, "its turn came: it is in the buffer now, counted there");
    }

    #[test]
    fn parked_priority_chunks_refused_or_drained_leave_the_count() {
        let streams = store();
        assert!(matches!(streams.enter(chunk(1, true, false)), Turn::Now(_)));
        assert!(matches!(streams.enter(chunk(1, false, true)), Turn::Later));
        assert!(matches!(streams.enter(chunk(2, true, false)), Turn::Now(_)));
        assert!(matches!(streams.enter(chunk(2, false, true)), Turn::Later));
        assert_eq!(streams.priority_parked(), 2);
        // Stream 1's running chunk closes it (it was final after all): its parked chunk is refused.
        let (next, refused) = streams.release(StreamChunk { id: 1, start: true, end: true }, None);
        assert!(next.is_none() && refused.len() == 1);
        assert_eq!(streams.priority_parked(), 1);
        assert_eq!(streams.drain().len(), 1);
        assert_eq!(streams.priority_parked(), 0);
    }

    #[test]
    fn after_a_drain_every_chunk_is_refused_as_shutting_down_and_no_stream_opens() {
        let streams = store();
        assert!(matches!(streams.enter(chunk(3, true, false)), Turn::Now(_)));
        assert!(streams.drain().is_empty());
        for (id, start) in [(3, false), (4, true)] {
            match streams.enter(chunk(id, start, false)) {
                Turn::Refused(_, RequestError::ShuttingDown) => {}
                Turn::Refused(_, other) => panic!("stream {id}: refused with {other:?}, not the shutdown error"),
                _ => panic!("stream {id}: a chunk ran after the drain"),
            }
        }
        assert_eq!(streams.usage(), (0, 0), "no stream opened after the drain");
    }
}
