//! A node's worker thread: owns the engines of the node's stages and runs batches.
//!
//! Life of a worker: pin to its core (if configured), create one engine per
//! stage (reporting success or the error to the starting runtime), then loop:
//! wait for an instruction (spinning `idle_spin_us` first, then parking in
//! the channel), take up to `max_batch` rows of tasks from the buffer (with
//! `efficient_batches`, up to the size the worker measured cheapest per row:
//! [`efficient`]), stitch
//! them along dim 0, run the stages in order, split each routed output per
//! task (views, no copy) and hand it on. Then mark itself idle and poke
//! the scheduler (the *node finished* event), once per batch.
//!
//! A worker sees its own node's state ([`NodeState`]: buffer, stream gate,
//! busy counts, metrics) and the settings it was started with
//! ([`WorkerSettings`]). Everything beyond its node goes through the narrow
//! [`Handoff`] the pipeline gives it: hand an output on, answer a request
//! with an error, put tasks into a buffer, poke the scheduler. It never
//! reaches the pipeline's other nodes, its spec or its scheduler.
//!
//! A failed batch fails only its own requests; a panicking engine is caught,
//! its requests get an error naming node and stage, and the stage's engine
//! is recreated so the node keeps serving.

mod efficient;
mod execute;
mod handoff;
mod route;
mod start;

pub(crate) use handoff::Handoff;
pub(crate) use start::spawn;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};

use crate::batch_cpu::Sampler;
use crate::engine::{Engine, StageRequest};
use crate::node::fault::FaultDraws;
use crate::node::niceness::BatchNice;
use crate::node::{Instruction, NodeState, Task, ThreadClasses};
use crate::request::{RequestError, StreamChunk};
use crate::scheduler::Reason;
use crate::spec::{NodeSpec, PadSpec};
use crate::tensor::{Tensor, TensorPool};
use crate::wake_delays::WakeClass;
use efficient::EfficientRows;

/// Stitch buffers a worker keeps per input slot (batches whose inputs are still held, plus one).
const INPUT_BUFFERS_KEPT: usize = 4;

/// What a worker is started with: its node's validated settings and the
/// pipeline-wide ones that shape its batches.
pub(crate) struct WorkerSettings {
    /// The node's index in the pipeline (how [`Handoff`] calls name it).
    pub node: usize,
    /// The worker's index in its node (its [`crate::node::stop::BatchSlot`]).
    pub index: usize,
    pub spec: Arc<NodeSpec>,
    /// Most rows per batch the scheduler gives this node (1 without batching).
    pub batch_rows: usize,
    /// Whether the pipeline stops young batches for priority work (`preempt_before`).
    pub stops_young_batches: bool,
    pub thread_classes: ThreadClasses,
}

struct Worker {
    handoff: Arc<dyn Handoff>,
    state: Arc<NodeState>,
    settings: WorkerSettings,
    /// Injected faults, when the node has `[faults]` configured.
    faults: Option<FaultDraws>,
    engines: Vec<Box<dyn Engine>>,
    tasks: Vec<Task>,
    /// Per input slot: the buffers batches are stitched into, reused once their requests let go.
    input_pools: Vec<TensorPool>,
    /// On a GPU: per input slot, buffers in its memory for inputs that arrive there
    /// (from nodes on the same device) and are stitched there.
    device_pools: Option<Vec<TensorPool>>,
    /// (stage, output index) of each write-back output, in state order.
    state_outputs: Vec<(usize, usize)>,
    /// Per route: the pad rule and output axes to cut it back along, if any.
    cuts: Vec<Option<(PadSpec, Vec<usize>)>>,
    /// Per input slot: the axes that may differ between tasks of one batch.
    pad_axes: Vec<Vec<usize>>,
    /// The worker group it belongs to (nodes with `worker_groups`).
    group: Option<usize>,
    /// Most rows per batch: the node's (1 without batching), within the group's capacity.
    batch_rows: usize,
    /// With `efficient_batches`: the cap under `batch_rows` its own batches' times choose.
    efficient: Option<EfficientRows>,
    /// Per stage: what its engine was created from (threads as the worker's group says).
    requests: Vec<StageRequest>,
    /// The thread's nice value per batch (background batches, see [`crate::node::niceness`]).
    nice: BatchNice,
    /// Whether the scheduler may stop this worker's batches (see [`crate::node::stop`]).
    stoppable: bool,
    /// Its batches and its spins: every `batch_cpu::SAMPLE_EVERY`-th of each reads its CPU clock.
    batch_samples: Sampler,
    spin_samples: Sampler,
}

/// Spins up to `spin` for an instruction (trying the channel, yielding the core
/// between tries): the instruction, or None when the spin ran out (or the channel closed).
fn spin_for_instruction(receiver: &Receiver<Instruction>, spin: Duration) -> Option<Instruction> {
    let until = Instant::now() + spin;
    loop {
        match receiver.try_recv() {
            Ok(instruction) => return Some(instruction),
            Err(TryRecvError::Disconnected) => return Some(Instruction::Exit),
            Err(TryRecvError::Empty) if Instant::now() >= until => return None,
            Err(TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
}

impl Worker {
    fn spec(&self) -> &NodeSpec {
        &self.settings.spec
    }

    fn serve(mut self, receiver: &Receiver<Instruction>) {
        // A real-time worker does not spin: spinning, it would hold its core from every
        // normal thread, among them the one its answer is for.
        let spin = if self.nice.realtime() { Duration::ZERO } else { Duration::from_micros(self.spec().idle_spin_us) };
        while let Instruction::RunBatch { told_ns, contended } = self.next_instruction(receiver, spin) {
            let class = WakeClass::of(self.nice.is_realtime_now(&self.state.nice), contended);
            self.state.counters.wakes.record(crate::clock::now_ns().saturating_sub(told_ns), class);
            self.run_batch(told_ns);
            if let Some(g) = self.group {
                self.state.groups[g].busy.fetch_sub(1, Ordering::AcqRel);
            }
            self.state.busy.fetch_sub(1, Ordering::AcqRel);
            self.handoff.poke(Reason::NodeFinished);
        }
    }

    /// The next instruction: one already waiting, else after spinning up to `spin`
    /// (counted, every `SAMPLE_EVERY`-th spin with its CPU time: [`crate::spin_cpu`]),
    /// else parked in the channel.
    fn next_instruction(&mut self, receiver: &Receiver<Instruction>, spin: Duration) -> Instruction {
        if !spin.is_zero() {
            match receiver.try_recv() {
                Ok(instruction) => return instruction,
                Err(TryRecvError::Disconnected) => return Instruction::Exit,
                Err(TryRecvError::Empty) => {}
            }
            let cpu_before = self.spin_samples.start();
            let got = spin_for_instruction(receiver, spin);
            self.state.counters.spin_samples.record(Sampler::end(cpu_before));
            if let Some(instruction) = got {
                return instruction;
            }
        }
        receiver.recv().unwrap_or(Instruction::Exit)
    }

    /// Gives the node's stop slot this worker's engines' stop handles, when the
    /// pipeline stops young batches (`preempt_before`) and the node allows it:
    /// no per-stream state (a chunk's turn cannot be undone) and no worker groups.
    fn register_stop_handles(&mut self) {
        let spec = self.spec();
        if !self.settings.stops_young_batches || spec.keeps_streams() || !spec.groups.is_empty() {
            return;
        }
        let slot = &self.state.slots[self.settings.index];
        slot.register(self.engines.iter().map(|e| e.stop_handle()).collect());
        self.stoppable = slot.stoppable();
    }

    /// Takes tasks, drops those that no longer need running, and runs the rest as one batch.
    /// `told_ns`: when the scheduler told this worker to run it (process clock).
    fn run_batch(&mut self, told_ns: u64) {
        let mut tasks = std::mem::take(&mut self.tasks);
        let rows = self.efficient.as_mut().map_or(self.batch_rows, EfficientRows::cap);
        match self.group {
            None => self.state.buffer.take(rows, &self.pad_axes, &mut tasks),
            Some(g) => self.state.buffer.take_for(g, rows, &self.pad_axes, &mut tasks),
        }
        self.state.publish_depths();
        let started = Instant::now();
        let told_for_ns = crate::clock::now_ns().saturating_sub(told_ns);
        self.drop_finished(&mut tasks, started, told_for_ns);
        if !tasks.is_empty() {
            self.run_tasks(&mut tasks, started);
        }
        tasks.clear();
        self.tasks = tasks;
    }

    /// Answers and drops the tasks that need no run any more (cancelled,
    /// answered, past their deadline) and records the others' queue time (`told_for_ns`:
    /// how long ago the word to run this batch came).
    fn drop_finished(&self, tasks: &mut Vec<Task>, now: Instant, told_for_ns: u64) {
        let state = &*self.state;
        let mut dropped_chunks = Vec::new();
        tasks.retain(|task| {
            let request = &task.request;
            let keep = if request.completion.is_cancelled() {
                self.handoff.fail(request, RequestError::Cancelled);
                false
            } else if request.completion.is_finished() {
                false
            } else if request.deadline.is_some_and(|d| d <= now) {
                self.handoff.fail(request, RequestError::DeadlineExceeded { node: self.spec().name.clone() });
                false
            } else {
                let waited = now.duration_since(task.enqueued);
                state.metrics.queue_seconds.record(waited.as_secs_f64());
                state.counters.queue_ns.fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
                state.counters.queue_times.record(waited.as_nanos() as u64, told_for_ns);
                true
            };
            if !keep && state.streams.is_some() {
                dropped_chunks.extend(request.stream);
            }
            keep
        });
        // A stream chunk that will not run still frees its stream for the next chunk.
        let mut poke = None;
        for chunk in dropped_chunks {
            poke = poke.or(self.release_stream(chunk, None));
        }
        if let Some(reason) = poke {
            self.handoff.poke(reason);
        }
    }

    /// Runs `tasks` (not empty) as one batch and hands its outputs on; a batch
    /// stopped for priority work puts its tasks back instead.
    fn run_tasks(&mut self, tasks: &mut Vec<Task>, started: Instant) {
        let state = Arc::clone(&self.state);
        let rows: usize = tasks.iter().map(|t| t.rows).sum();
        let priority_waits =
            || state.buffer.priority_pending() > 0 || state.streams.as_ref().is_some_and(|s| s.priority_parked() > 0);
        let holds_priority = tasks.iter().any(|t| t.priority);
        let realtime = self.nice.set_for_batch(&state.nice, holds_priority, priority_waits);
        let slot = &state.slots[self.settings.index];
        if self.stoppable {
            slot.begin(crate::clock::now_ns(), holds_priority);
        }
        let cpu_before = self.batch_samples.start();
        let result = self.execute(tasks);
        let compute = started.elapsed();
        let cpu = Sampler::end(cpu_before);
        if self.stoppable && slot.end() && result.is_err() {
            // Stopped for priority work: the tasks wait again, first in their queues.
            state.metrics.stopped_batches.increment(1);
            state.counters.stopped_batches.fetch_add(1, Ordering::Relaxed);
            state.counters.stopped_ns.fetch_add(compute.as_nanos() as u64, Ordering::Relaxed);
            let again = Instant::now();
            tasks.iter_mut().for_each(|t| t.enqueued = again);
            self.handoff.put_back(self.settings.node, tasks);
            return;
        }
        // Account before answering, so a woken requester sees its batch counted.
        state.record_batch(rows, tasks.len(), compute);
        if realtime {
            state.counters.realtime_sizes.record(rows, compute);
        }
        if let Some(cpu_ns) = cpu {
            state.counters.cpu_samples.record(compute, cpu_ns);
        }
        match result {
            Ok(executed) => {
                if let Some(efficient) = &mut self.efficient {
                    efficient.record(rows, compute);
                }
                let handing = Instant::now();
                self.route(tasks, &executed);
                let hand_on_ns = handing.elapsed().as_nanos() as u64;
                state.counters.hand_on_ns.fetch_add(hand_on_ns, Ordering::Relaxed);
                state.counters.hand_on_times.record(hand_on_ns);
            }
            Err(message) => self.fail_batch(tasks, rows, &message),
        }
    }

    /// Answers every task of a failed batch with `message`, and frees their streams.
    fn fail_batch(&self, tasks: &[Task], rows: usize, message: &str) {
        let state = &*self.state;
        let node = &self.spec().name;
        state.metrics.batch_failures.increment(1);
        state.counters.failed_batches.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(node = %node, rows, %message, "batch failed");
        for task in tasks {
            let chunk = task.request.stream.filter(|_| state.streams.is_some());
            let message = match chunk {
                Some(chunk) => format!("{message}; stream {}'s state is unchanged", chunk.id),
                None => message.to_string(),
            };
            self.handoff.fail(&task.request, RequestError::Node { node: node.clone(), message });
            if let Some(reason) = chunk.and_then(|chunk| self.release_stream(chunk, None)) {
                self.handoff.poke(reason);
            }
        }
    }

    /// Ends a stream chunk's turn at this node (committing `new_state` if given),
    /// enqueues the stream's next chunk and refuses chunks behind a final one.
    fn release_stream(&self, chunk: StreamChunk, new_state: Option<Vec<Tensor>>) -> Option<Reason> {
        let streams = self.state.streams.as_ref()?;
        let (next, refused) = streams.release(chunk, new_state);
        for (task, error) in refused {
            self.handoff.fail(&task.request, error);
        }
        self.handoff.push(self.settings.node, next?)
    }
}
