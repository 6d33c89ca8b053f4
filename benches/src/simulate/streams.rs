//! Streams in virtual time: which inputs each request carries, and the per-stream
//! order of stateful nodes.
//!
//! A stateful node (one with write-back edges) runs a stream's chunks in order,
//! one at a time, as the runtime's stream store does (`runtime/src/node/stream.rs`,
//! called from `pipeline/routing.rs` `enqueue` and `worker/route.rs`):
//! - a chunk entering the node while a chunk of its stream is queued there or
//!   running waits in the stream's own queue (not in the buffer, so the
//!   scheduler does not see it); otherwise it enters the buffer and its stream
//!   is marked running;
//! - when the batch that ran it ends, before its outputs are handed on, its new
//!   state is written back (the release): the stream's next waiting chunk enters
//!   the buffer, and a final chunk closes the stream (chunks still waiting behind
//!   it are refused).
//!
//! So a chunk never starts at a stateful node before its predecessor's write-back.
//! With tracing on, every parking, start and write-back of a chunk at a stateful
//! node is kept (the tests check that order on it).
//!
//! Requests carry inputs as `baton bench` sends them ([`LoadShape`]): every
//! input, or in a mixed load the `--stream-inputs` for chunks and the others for
//! plain requests. A request leaving inputs out runs only the nodes they lead
//! to and gets only those nodes' outputs, as the runtime's admission decides
//! (`PipelineSpec::running_nodes`).

use std::collections::{HashMap, VecDeque};

use baton::PipelineSpec;

use super::nodes::SimTask;
use super::sessions::{Send, Sessions, KIND_INPUTS};
use crate::load::{Chunk, LoadShape};

/// The inputs a kind of request carries, the nodes that run for it and the outputs it gets.
#[derive(Clone, Debug)]
pub struct Reach {
    pub inputs: Vec<bool>,
    pub runs: Vec<bool>,
    pub outputs: usize,
}

impl Reach {
    fn of(spec: &PipelineSpec, inputs: Vec<bool>) -> Reach {
        let runs = spec.running_nodes(&inputs);
        let outputs = spec.outputs.iter().filter(|o| runs[o.node]).count();
        Reach { inputs, runs, outputs }
    }
}

/// What happened to a chunk at a stateful node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It arrived while a chunk of its stream was queued or running: it waits.
    Parked,
    /// Its batch started.
    Started,
    /// Its batch ended and its state was written back.
    Written,
}

/// One step of a chunk at a stateful node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamEvent {
    pub ns: u64,
    pub node: usize,
    pub chunk: Chunk,
    pub step: Step,
}

/// A stream's turn at one stateful node.
#[derive(Default)]
struct Turn {
    /// A chunk of the stream is in the buffer or running.
    running: bool,
    waiting: VecDeque<SimTask>,
}

/// Every stateful node's streams, and the load's request kinds.
pub struct Streams {
    shape: LoadShape,
    /// Per kind of request: `baton bench`'s chunks (or every request) and a mixed
    /// load's plain requests; or the kinds a session sends ([`KIND_INPUTS`]).
    reaches: Vec<Reach>,
    /// Sessions as the collab example sends them, instead of `baton bench`'s requests.
    sessions: Option<Sessions>,
    /// Per node: `Some` (its open streams) where the node keeps per-stream state.
    gates: Vec<Option<HashMap<u64, Turn>>>,
    trace: Option<Vec<StreamEvent>>,
    /// Per tenant of the load: its index in the pipeline's `[fairness]` tenants.
    tenants: Vec<usize>,
    /// Per node: priority chunks parked behind an earlier chunk of their stream (the
    /// runtime's `priority_parked`: the batch running that chunk goes to the foreground).
    priority_parked: Vec<usize>,
}

/// What became of a chunk offered to a stateful node.
pub enum Entry {
    /// It may enter the buffer.
    Now(SimTask),
    /// It waits behind an earlier chunk of its stream.
    Later,
    /// Its stream is not open (its first chunk was not sent with start).
    Refused,
}

impl Streams {
    /// `stream_inputs`: the inputs chunks carry in a mixed load (empty: every input).
    /// The load's tenants are the pipeline's (checked by `load_streams`, as `baton
    /// bench` checks them; a name it lacks would count as `default`).
    pub fn new(spec: &PipelineSpec, shape: LoadShape, stream_inputs: &[String], trace: bool) -> Streams {
        let pipeline = &spec.fairness.tenants;
        let tenants = shape.tenants.iter().map(|t| pipeline.index(Some(&t.name)).unwrap_or(0)).collect();
        let all = vec![true; spec.inputs.len()];
        let (chunk_inputs, plain_inputs) = if stream_inputs.is_empty() {
            (all.clone(), all)
        } else {
            let carried: Vec<bool> = spec.inputs.iter().map(|i| stream_inputs.contains(&i.spec.name)).collect();
            let plain = carried.iter().map(|c| !c).collect();
            (carried, plain)
        };
        Streams {
            shape,
            reaches: vec![Reach::of(spec, chunk_inputs), Reach::of(spec, plain_inputs)],
            sessions: None,
            gates: Self::gates(spec),
            trace: trace.then(Vec::new),
            tenants,
            priority_parked: vec![0; spec.nodes.len()],
        }
    }

    /// Sessions as the collab example sends them (see [`super::sessions`]); the
    /// pipeline must take the inputs they carry.
    pub fn with_sessions(spec: &PipelineSpec, sessions: Sessions, trace: bool) -> Result<Streams, String> {
        let mut reaches = Vec::new();
        for names in KIND_INPUTS {
            if let Some(name) = names.iter().find(|n| !spec.inputs.iter().any(|i| i.spec.name == **n)) {
                return Err(format!(
                    "--sessions: the pipeline has no input `{name}` (sessions send image, chunk, text_features)"
                ));
            }
            reaches.push(Reach::of(spec, spec.inputs.iter().map(|i| names.contains(&i.spec.name.as_str())).collect()));
        }
        Ok(Streams {
            shape: LoadShape::plain(0.0),
            reaches,
            sessions: Some(sessions),
            gates: Self::gates(spec),
            trace: trace.then(Vec::new),
            tenants: Vec::new(),
            priority_parked: vec![0; spec.nodes.len()],
        })
    }

    fn gates(spec: &PipelineSpec) -> Vec<Option<HashMap<u64, Turn>>> {
        spec.nodes.iter().map(|n| (!n.state.is_empty()).then(HashMap::new)).collect()
    }

    /// `baton bench`'s request: a sender's `n`-th (`i`: its number for the priority pattern), sent at `now`.
    pub fn bench_send(&self, sender: u64, n: u64, i: u64, now: u64) -> Send {
        let plan = self.shape.plan(sender, n, i);
        Send {
            reach: usize::from(plan.plain),
            stream: plan.stream,
            priority: plan.priority,
            sent_ns: now,
            recorded: true,
            tenant: plan.tenant,
        }
    }

    /// The load's tenants' names (`--tenants`, in its order; empty when it names none).
    pub fn tenant_names(&self) -> Vec<String> {
        self.shape.tenants.iter().map(|t| t.name.clone()).collect()
    }

    /// The pipeline's tenant (its `[fairness]` index) of a request of the load's tenant `tenant`.
    pub fn pipeline_tenant(&self, tenant: Option<usize>) -> usize {
        tenant.map_or(0, |t| self.tenants[t])
    }

    /// What a kind of request reaches.
    pub fn reach(&self, kind: usize) -> &Reach {
        &self.reaches[kind]
    }

    /// The sessions, when the load sends sessions.
    pub fn sessions(&mut self) -> Option<&mut Sessions> {
        self.sessions.as_mut()
    }

    /// Whether `node` keeps per-stream state.
    pub fn gated(&self, node: usize) -> bool {
        self.gates[node].is_some()
    }

    /// `task`, a chunk, reaches stateful node `node` (the store's `enter`).
    pub fn enter(&mut self, node: usize, chunk: Chunk, task: SimTask) -> Entry {
        let now = task.enqueued_ns;
        let streams = self.gates[node].as_mut().expect("a stateful node");
        if !streams.contains_key(&chunk.id) && !chunk.start {
            return Entry::Refused;
        }
        let turn = streams.entry(chunk.id).or_default();
        if turn.running {
            self.priority_parked[node] += usize::from(task.priority);
            turn.waiting.push_back(task);
            self.log(now, node, chunk, Step::Parked);
            return Entry::Later;
        }
        turn.running = true;
        Entry::Now(task)
    }

    /// The batch that ran `chunk` at `node` ended: its state is written back (the
    /// store's `release`). Returns the stream's next chunk to enter the buffer, and
    /// the requests of chunks refused because a final chunk closed the stream.
    pub fn release(&mut self, node: usize, chunk: Chunk, now: u64) -> (Option<SimTask>, Vec<usize>) {
        self.log(now, node, chunk, Step::Written);
        let streams = self.gates[node].as_mut().expect("a stateful node");
        let Some(turn) = streams.get_mut(&chunk.id) else { return (None, Vec::new()) };
        turn.running = false;
        if chunk.end {
            let closed = streams.remove(&chunk.id).expect("present");
            self.priority_parked[node] -= closed.waiting.iter().filter(|t| t.priority).count();
            return (None, closed.waiting.iter().map(|t| t.request).collect());
        }
        let next = turn.waiting.pop_front();
        self.priority_parked[node] -= next.map_or(0, |t| usize::from(t.priority));
        turn.running = next.is_some();
        (next, Vec::new())
    }

    /// Priority chunks parked at `node` behind an earlier chunk of their stream.
    pub fn priority_parked(&self, node: usize) -> usize {
        self.priority_parked.get(node).copied().unwrap_or(0)
    }

    /// A batch holding `chunk` started at stateful node `node` (kept when tracing).
    pub fn started(&mut self, node: usize, chunk: Chunk, now: u64) {
        self.log(now, node, chunk, Step::Started);
    }

    fn log(&mut self, ns: u64, node: usize, chunk: Chunk, step: Step) {
        if let Some(trace) = &mut self.trace {
            trace.push(StreamEvent { ns, node, chunk, step });
        }
    }

    /// The trace kept (empty when not tracing).
    pub fn take_trace(&mut self) -> Vec<StreamEvent> {
        self.trace.take().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: u64, k: u64, end: bool) -> Chunk {
        Chunk { id, k, start: k == 0, end }
    }

    fn gate() -> Streams {
        let shape = LoadShape { stream_chunks: 3, ..LoadShape::plain(0.0) };
        let gates = vec![Some(HashMap::new())];
        let priority_parked = vec![0; gates.len()];
        Streams { shape, reaches: Vec::new(), sessions: None, gates, trace: None, tenants: Vec::new(), priority_parked }
    }

    fn task(request: usize) -> SimTask {
        SimTask { request, rows: 1, priority: false, enqueued_ns: 0, tenant: 0 }
    }

    #[test]
    fn a_streams_next_chunk_waits_for_the_write_back_of_the_one_before() {
        let mut s = gate();
        assert!(matches!(s.enter(0, chunk(9, 0, false), task(0)), Entry::Now(_)));
        assert!(matches!(s.enter(0, chunk(9, 1, false), task(1)), Entry::Later));
        assert!(matches!(s.enter(0, chunk(5, 0, false), task(2)), Entry::Now(_)), "other streams go on");
        assert!(matches!(s.enter(0, chunk(9, 2, true), task(3)), Entry::Later));
        let (next, refused) = s.release(0, chunk(9, 0, false), 10);
        assert_eq!(next.map(|t| t.request), Some(1));
        assert!(refused.is_empty());
        let (next, _) = s.release(0, chunk(9, 1, false), 20);
        assert_eq!(next.map(|t| t.request), Some(3));
        let (next, _) = s.release(0, chunk(9, 2, true), 30);
        assert!(next.is_none());
        assert!(!s.gates[0].as_ref().unwrap().contains_key(&9), "the final chunk closed the stream");
    }

    #[test]
    fn a_final_chunk_parked_behind_its_stream_counts_as_parked_priority_until_it_enters() {
        let mut s = gate();
        let final_chunk = SimTask { priority: true, ..task(2) };
        assert!(matches!(s.enter(0, chunk(9, 0, false), task(0)), Entry::Now(_)));
        assert!(matches!(s.enter(0, chunk(9, 1, false), task(1)), Entry::Later));
        assert!(matches!(s.enter(0, chunk(9, 2, true), final_chunk), Entry::Later));
        assert_eq!(s.priority_parked(0), 1);
        s.release(0, chunk(9, 0, false), 10);
        assert_eq!(s.priority_parked(0), 1, "chunk 1 entered; the final chunk still waits");
        let (next, _) = s.release(0, chunk(9, 1, false), 20);
        assert!(next.is_some_and(|t| t.priority));
        assert_eq!(s.priority_parked(0), 0, "in the buffer now, counted there");
    }

    #[test]
    fn a_chunk_of_a_stream_never_opened_is_refused_and_chunks_behind_a_final_one_too() {
        let mut s = gate();
        assert!(matches!(s.enter(0, chunk(4, 1, false), task(0)), Entry::Refused));
        assert!(matches!(s.enter(0, Chunk { id: 7, k: 0, start: true, end: true }, task(1)), Entry::Now(_)));
        assert!(matches!(s.enter(0, chunk(7, 1, false), task(2)), Entry::Later));
        let (next, refused) = s.release(0, Chunk { id: 7, k: 0, start: true, end: true }, 5);
        assert!(next.is_none());
        assert_eq!(refused, [2]);
    }
}
