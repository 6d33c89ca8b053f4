//! Inference nodes: a batching buffer, join table and worker threads per node.
//!
//! A node is seed 003's *batch* stage (the [`buffer::BatchBuffer`]) followed
//! by its *exe* stages (the engines its workers own). The scheduler sees a
//! node only through [`NodeState`]: its pending counts and how many of its
//! workers are busy; it tells a node to run by sending one instruction on the
//! node's channel, which one idle worker receives (see [`worker`]).

pub(crate) mod buffer;
pub(crate) mod join;
pub(crate) mod worker;

use std::sync::atomic::{AtomicUsize, Ordering};
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
    pub enqueued: Instant,
}

impl Task {
    pub fn new(request: Arc<RequestState>, inputs: Vec<Tensor>) -> Self {
        let rows = inputs.first().map_or(1, Tensor::batch_rows);
        Task { request, inputs, rows, enqueued: Instant::now() }
    }

    /// Whether `other` can share a batch with this task (all dims but the first agree).
    pub fn same_shapes(&self, other: &Task) -> bool {
        self.inputs.iter().zip(&other.inputs).all(|(a, b)| a.shape()[1..] == b.shape()[1..])
    }
}

/// What a node's workers receive on its channel.
pub(crate) enum Instruction {
    /// Seed 003's process instruction: stitch a batch from the buffer and run it.
    RunBatch,
    /// Leave the worker loop (shutdown, once the node is idle).
    Exit,
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
}

impl NodeState {
    pub fn new(pipeline: &str, name: &str, workers: usize) -> Self {
        let (instructions, receiver) = crossbeam_channel::bounded(workers);
        NodeState {
            buffer: buffer::BatchBuffer::default(),
            joins: join::JoinTable::default(),
            busy: AtomicUsize::new(0),
            instructions,
            receiver,
            metrics: NodeMetrics::new(pipeline, name),
        }
    }

    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Acquire)
    }
}
