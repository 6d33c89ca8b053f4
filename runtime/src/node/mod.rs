//! Inference nodes: a batching buffer, join table and worker threads per node.
//!
//! A node is the *batch* stage of the node model in docs/scheduling.md (the [`buffer::BatchBuffer`]) followed
//! by its *exe* stages (the engines its workers own). The scheduler sees a
//! node only through [`NodeState`]: its pending counts and how many of its
//! workers are busy; it tells a node to run by sending one instruction on the
//! node's channel, which one idle worker receives (see [`crate::worker`]).
//!
//! ## Worker groups: who gets told to run
//! A node with `worker_groups` has workers of several kinds, and a task may
//! run only on a group that fits it (its rows within the group's `max_rows`;
//! the group's kind, when its request asks for a kind this node has). The
//! protocol that keeps such a node from stranding a task:
//! - When a task enters the buffer, the set of groups that fit it is computed
//!   once (a bit mask on the task, [`Task::groups`]); a task that fits no group
//!   is answered at once with an error naming the node and why, and never waits.
//! - The buffer keeps, per group, how many waiting tasks fit it
//!   (`fit_pending`), changed under the buffer lock with the queues.
//! - Each group has its own instruction channel and busy count
//!   ([`GroupState`]); the node's `busy` is their sum. The scheduler counts the
//!   node as able to start when some group has an idle worker and a waiting
//!   task that fits it; when it picks the node it marks busy (node and group)
//!   and sends `RunBatch` on the channel of the group, among those, with the
//!   most fitting tasks. A worker takes only tasks its group fits.
//! - A task that fits group G, all of whose workers are idle, therefore makes
//!   the node a candidate at every decision until a G worker takes it: it
//!   cannot be stranded behind tasks for other groups, nor behind a
//!   `RunBatch` sent to a worker that cannot take it. (A worker that finds
//!   nothing for it, because another group took the tasks first, finishes an
//!   empty batch and pokes the scheduler, as any worker does.)
//! - Placement timeout: every scheduler tick, a node with
//!   `placement_timeout_us` moves tasks whose current round began longer ago
//!   to the back of their queue, starting a new round, and counts a retry
//!   (`baton_placement_retries_total`, [`NodeStats::placement_retries`]).
//!   A retried task stays in the buffer: it resolves as any task does (run,
//!   deadline, cancel, shutdown), exactly once.

pub(crate) mod buffer;
pub(crate) mod fault;
pub(crate) mod join;
pub(crate) mod niceness;
pub(crate) use niceness::ThreadClasses;
pub use niceness::{request_thread_realtime, request_thread_slice, set_thread_nice};
pub(crate) mod stop;
pub(crate) mod stream;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use crate::metrics::NodeMetrics;
use crate::request::RequestState;
use crate::tensor::Tensor;

/// One request's work at one node: its input tensors, in the node's input-slot order.
pub(crate) struct Task {
    pub request: Arc<RequestState>,
    pub inputs: Vec<Tensor>,
    /// Rows (dim 0) of every input.
    pub rows: usize,
    /// When the task last entered the buffer (again, after a stopped batch): its queue time counts from here.
    pub enqueued: Instant,
    /// A priority task at this node (see "Priority tasks" in docs/scheduling.md).
    pub priority: bool,
    /// When the task first entered the buffer, on the process clock ([`crate::clock::now_ns`]), for lock-free age checks.
    pub enqueued_ns: u64,
    /// At a node with worker groups: bit `g` set when group `g` fits the task (0 elsewhere).
    pub groups: u64,
    /// When the task's current placement round began (process clock): `enqueued_ns`, or its last retry.
    pub round_ns: u64,
}

/// An empty tensor standing in for an input slot not filled yet (a state slot before admission).
pub(crate) fn placeholder() -> Tensor {
    static EMPTY: std::sync::OnceLock<Tensor> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Tensor::zeros(crate::tensor::DType::F32, vec![0]).expect("empty tensor")).clone()
}

impl Task {
    pub fn new(request: Arc<RequestState>, inputs: Vec<Tensor>, rows: usize) -> Self {
        let now_ns = crate::clock::now_ns();
        Task {
            priority: request.priority,
            request,
            inputs,
            rows,
            enqueued: Instant::now(),
            enqueued_ns: now_ns,
            groups: 0,
            round_ns: now_ns,
        }
    }

    /// Whether `other` can share a batch with this task: every dim but the first
    /// agrees, except the padded axes of each slot (`pad_axes[slot]`).
    pub fn same_shapes(&self, other: &Task, pad_axes: &[Vec<usize>]) -> bool {
        self.inputs.iter().zip(&other.inputs).enumerate().all(|(slot, (a, b))| {
            let (a, b) = (a.shape(), b.shape());
            a.len() == b.len()
                && (1..a.len()).all(|d| a[d] == b[d] || pad_axes.get(slot).is_some_and(|p| p.contains(&d)))
        })
    }
}

/// What a node's workers receive on its channel.
pub(crate) enum Instruction {
    /// The collaborative rule's process instruction: stitch a batch from the buffer and run it.
    RunBatch {
        /// When the scheduler sent it ([`crate::clock::now_ns`]): the worker's wake-up counts from here.
        told_ns: u64,
        /// Whether as many of the pipeline's workers were busy as it may use cores (see
        /// [`crate::wake_delays`]).
        contended: bool,
    },
    /// Leave the worker loop (shutdown, once the node is idle).
    Exit,
}

/// Running totals of one node, readable at any time (relaxed atomics).
#[derive(Default)]
pub(crate) struct NodeCounters {
    pub executions: AtomicU64,
    pub rows: AtomicU64,
    pub tasks: AtomicU64,
    pub failed_batches: AtomicU64,
    pub queue_ns: AtomicU64,
    pub compute_ns: AtomicU64,
    /// Sum over tasks of their batch's compute time (each task charged its whole batch).
    pub task_compute_ns: AtomicU64,
    /// Sum over batches of the worker's time handing the outputs on after the batch, ns.
    pub hand_on_ns: AtomicU64,
    /// The same by batch, as a histogram (see [`crate::log_buckets`]).
    pub hand_on_times: crate::log_buckets::AtomicCounts,
    pub placement_retries: AtomicU64,
    pub host_device_bytes: AtomicU64,
    /// Batches stopped for priority work, and the time they had run, ns (not in `executions`).
    pub stopped_batches: AtomicU64,
    pub stopped_ns: AtomicU64,
    /// Executed batches by size.
    pub batch_sizes: crate::stats::BatchSizes,
    /// Of them, those that started at the real-time policy (`foreground_realtime`).
    pub realtime_sizes: crate::stats::BatchSizes,
    /// Workers' wake-ups, from `RunBatch` sent to received.
    pub wakes: crate::wake_delays::WakeRecorder,
    /// Tasks' waits in the buffer, and their part before the word to run.
    pub queue_times: crate::queue_times::QueueRecorder,
    /// Sampled batches' wall and thread CPU times (see [`crate::batch_cpu`]).
    pub cpu_samples: crate::batch_cpu::CpuSamples,
    /// Idle workers' spins and their sampled CPU times (see [`crate::spin_cpu`]).
    pub spin_samples: crate::spin_cpu::SpinSamples,
}

/// A snapshot of one node's running totals (see [`crate::Runtime::node_stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    pub name: String,
    /// Batches run.
    pub executions: u64,
    /// Rows inferred (`rows / executions` is the mean batch size).
    pub rows: u64,
    /// Tasks run (requests' work items; a task may hold several rows).
    pub tasks: u64,
    /// Batches that failed.
    pub failed_batches: u64,
    /// Sum over tasks of the time they waited in the buffer, ns.
    pub queue_ns: u64,
    /// Sum over batches of the time spent stitching and running the stages, ns.
    pub compute_ns: u64,
    /// Sum over tasks of their batch's compute time, ns: each task is charged its
    /// whole batch, as Triton's statistics charge each request (`compute_ns` counts a batch once).
    pub task_compute_ns: u64,
    /// Sum over batches of the time their worker spent handing the outputs on after the
    /// batch (splitting them, routing them to the next nodes, answering requests), ns.
    /// Counted when the hand-on ends, after the answers: a requester its batch answered
    /// may read the batch in `executions` before its hand-on is here; the worker counts
    /// it before it takes its next batch.
    pub hand_on_ns: u64,
    /// Each batch's hand-on time, dense counts by bucket (see [`crate::log_buckets`]).
    pub hand_on_times: Vec<u64>,
    /// Placement rounds failed: tasks not taken by a fitting worker within
    /// `placement_timeout_us`, sent back to wait (nodes with worker groups).
    pub placement_retries: u64,
    /// Bytes its engines copied between host and device memory (GPU nodes; 0 on the CPU).
    pub host_device_bytes: u64,
    /// Batches stopped for waiting priority work before they ended (`preempt_before`);
    /// their tasks went back to the buffer and ran in a later batch.
    pub stopped_batches: u64,
    /// The time those batches had run when they stopped, ns: the work lost.
    pub stopped_ns: u64,
    /// Executed batches by batch size (rows), by increasing size.
    pub batch_sizes: Vec<crate::stats::BatchSizeStats>,
    /// How long its told workers took to wake (see [`crate::wake_delays`]).
    pub wake_delays: crate::wake_delays::WakeDelays,
    /// How long its tasks waited in the buffer, and to be picked (see [`crate::queue_times`]).
    pub queue_times: crate::queue_times::QueueTimes,
    /// Each batch size's compute times, by increasing size (see [`crate::stats`]).
    pub batch_times: Vec<crate::stats::BatchTimes>,
    /// The same of the batches that started at the real-time policy (`foreground_realtime`
    /// under the collaborative rule): what a batch costs that no normal thread interrupts.
    pub realtime_batch_times: Vec<crate::stats::BatchTimes>,
    /// How much of its sampled batches' wall time its threads ran (see [`crate::batch_cpu`]).
    pub batch_cpu: crate::batch_cpu::BatchCpu,
    /// How much CPU its idle workers spent spinning (see [`crate::spin_cpu`]).
    pub spin_cpu: crate::spin_cpu::SpinCpu,
}

impl NodeCounters {
    /// Counts a batch run: its rows, its tasks and how long it took.
    pub fn record_batch(&self, rows: usize, tasks: usize, compute: std::time::Duration) {
        let ns = compute.as_nanos() as u64;
        self.executions.fetch_add(1, Ordering::Relaxed);
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
        self.tasks.fetch_add(tasks as u64, Ordering::Relaxed);
        self.compute_ns.fetch_add(ns, Ordering::Relaxed);
        self.task_compute_ns.fetch_add(ns * tasks as u64, Ordering::Relaxed);
        self.batch_sizes.record(rows, compute);
    }

    pub fn snapshot(&self, name: &str) -> NodeStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        NodeStats {
            name: name.to_string(),
            executions: get(&self.executions),
            rows: get(&self.rows),
            tasks: get(&self.tasks),
            failed_batches: get(&self.failed_batches),
            queue_ns: get(&self.queue_ns),
            compute_ns: get(&self.compute_ns),
            task_compute_ns: get(&self.task_compute_ns),
            hand_on_ns: get(&self.hand_on_ns),
            hand_on_times: self.hand_on_times.snapshot(),
            placement_retries: get(&self.placement_retries),
            host_device_bytes: get(&self.host_device_bytes),
            stopped_batches: get(&self.stopped_batches),
            stopped_ns: get(&self.stopped_ns),
            batch_sizes: self.batch_sizes.snapshot(),
            wake_delays: self.wakes.snapshot(),
            queue_times: self.queue_times.snapshot(),
            batch_times: self.batch_sizes.times(),
            realtime_batch_times: self.realtime_sizes.times(),
            batch_cpu: self.cpu_samples.snapshot(),
            spin_cpu: self.spin_samples.snapshot(),
        }
    }
}

/// What the scheduler and the router share about one node.
pub(crate) struct NodeState {
    pub buffer: buffer::BatchBuffer,
    pub joins: join::JoinTable,
    /// Workers running a batch (or told to), changed by the scheduler (+1 on
    /// dispatch, under its lock) and by the worker (-1 when done).
    pub busy: AtomicUsize,
    pub instructions: Sender<Instruction>,
    pub receiver: Receiver<Instruction>,
    pub metrics: NodeMetrics,
    pub counters: NodeCounters,
    /// Per-stream state, for nodes with write-back edges.
    pub streams: Option<stream::StreamStates>,
    /// Worker groups' channels and busy counts (empty without groups; see the module docs).
    pub groups: Vec<GroupState>,
    /// The workers' nice values (background batches; see [`niceness::NodeNice`]).
    pub nice: niceness::NodeNice,
    /// Per worker: its running batch and stop handles (see [`stop`]).
    pub slots: Vec<stop::BatchSlot>,
}

/// One worker group of a node: its own instruction channel and busy count.
pub(crate) struct GroupState {
    /// Workers of the group running a batch (or told to): +1 by the scheduler, -1 by the worker.
    pub busy: AtomicUsize,
    pub workers: usize,
    pub instructions: Sender<Instruction>,
    pub receiver: Receiver<Instruction>,
}

impl NodeState {
    pub fn new(pipeline: &str, spec: &crate::spec::NodeSpec, max_state_bytes: usize) -> Self {
        let (name, workers) = (spec.name.as_str(), spec.workers);
        let (instructions, receiver) = crossbeam_channel::bounded(workers);
        let groups = spec
            .groups
            .iter()
            .map(|g| {
                let (instructions, receiver) = crossbeam_channel::bounded(g.workers);
                GroupState { busy: AtomicUsize::new(0), workers: g.workers, instructions, receiver }
            })
            .collect();
        NodeState {
            groups,
            nice: niceness::NodeNice::new(workers),
            slots: (0..workers).map(|_| stop::BatchSlot::default()).collect(),
            buffer: buffer::BatchBuffer::default(),
            joins: join::JoinTable::new(
                (0..spec.inputs.len()).map(|i| spec.state.iter().all(|s| s.slot != i)).collect(),
            ),
            busy: AtomicUsize::new(0),
            instructions,
            receiver,
            metrics: NodeMetrics::new(pipeline, name),
            counters: NodeCounters::default(),
            streams: spec.keeps_streams().then(|| stream::StreamStates::new(name, spec.state.clone(), max_state_bytes)),
        }
    }

    /// Sets the node's queue-depth gauges from its buffer.
    pub fn publish_depths(&self) {
        self.metrics.queue_depth.set(self.buffer.pending() as f64);
        self.metrics.priority_depth.set(self.buffer.priority_pending() as f64);
    }

    /// Counts a batch run: its rows, its tasks and how long it took (metrics and counters).
    pub fn record_batch(&self, rows: usize, tasks: usize, compute: std::time::Duration) {
        self.metrics.executions.increment(1);
        self.metrics.inferences.increment(rows as u64);
        self.metrics.batch_size.record(rows as f64);
        self.metrics.compute_seconds.record(compute.as_secs_f64());
        self.counters.record_batch(rows, tasks, compute);
    }

    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Acquire)
    }

    /// With groups: the group to tell to run, the one with an idle worker and
    /// the most waiting tasks that fit it (`None`: no group can start now).
    pub fn group_to_run(&self) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (g, group) in self.groups.iter().enumerate() {
            let fitting = self.buffer.fit_pending(g);
            if fitting > 0
                && group.busy.load(Ordering::Acquire) < group.workers
                && best.is_none_or(|(_, f)| fitting > f)
            {
                best = Some((g, fitting));
            }
        }
        best.map(|(g, _)| g)
    }

    /// The channel worker `g`'s group (or the node's, without groups) listens on.
    pub fn receiver(&self, group: Option<usize>) -> &Receiver<Instruction> {
        group.map_or(&self.receiver, |g| &self.groups[g].receiver)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::NodeCounters;

    #[test]
    fn a_batch_counts_its_compute_once_and_once_per_task_charged() {
        let counters = NodeCounters::default();
        counters.record_batch(5, 3, Duration::from_micros(100));
        counters.record_batch(1, 1, Duration::from_micros(40));
        let stats = counters.snapshot("n");
        assert_eq!((stats.executions, stats.rows, stats.tasks), (2, 6, 4));
        assert_eq!(stats.compute_ns, 140_000, "each batch once");
        assert_eq!(stats.task_compute_ns, 3 * 100_000 + 40_000, "each task charged its whole batch");
    }
}
