//! A node's worker thread: owns the engines of the node's stages and runs batches.
//!
//! Life of a worker: pin to its core (if configured), create one engine per
//! stage (reporting success or the error to the starting runtime), then loop:
//! wait for an instruction (spinning `idle_spin_us` first, then parking in
//! the channel), take up to `max_batch` rows of tasks from the buffer, stitch
//! them along dim 0, run the stages in order, split each routed output per
//! task (views, no copy) and deliver it on. Then mark itself idle and poke
//! the scheduler (the *node finished* event), once per batch.
//!
//! A failed batch fails only its own requests; a panicking engine is caught,
//! its requests get an error naming node and stage, and the stage's engine
//! is recreated so the node keeps serving.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};

use super::fault::{Fault, FaultDraws};
use super::{Instruction, Task};
use crate::engine::{BatchInfo, Engine, StageOutput, StageRequest, WarmUp};
use crate::pipeline::Router;
use crate::request::RequestError;
use crate::scheduler::Reason;
use crate::spec::PadSpec;
use crate::spec::{NodeSpec, StageSource, Target};
use crate::tensor::{stitch_padded, stitch_pooled, Tensor, TensorPool};

/// Stitch buffers a worker keeps per input slot (batches whose inputs are still held, plus one).
const INPUT_BUFFERS_KEPT: usize = 4;

/// Starts worker `index` of node `node`. It reports on `ready` once its engines exist (or failed).
pub(crate) fn spawn(
    router: Arc<Router>,
    node: usize,
    index: usize,
    ready: Sender<Result<Vec<WarmUp>, String>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let name = format!("baton-{}-{index}", router.spec.nodes[node].name);
    std::thread::Builder::new().name(name).spawn(move || {
        let spec = &router.spec.nodes[node];
        let group = spec.group_of(index);
        // A group's own cores, by the worker's index in the group; else the node's, by its index in the node.
        let cores = match group.map(|g| &spec.groups[g]) {
            Some(g) if !g.cores.is_empty() => Some((&g.cores, index - g.first_worker)),
            _ => (!spec.cores.is_empty()).then_some((&spec.cores, index)),
        };
        if let Some((cores, i)) = cores {
            let core = cores[i % cores.len()];
            if !core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
                tracing::warn!(node = %spec.name, worker = index, core, "could not pin worker to core");
            }
        }
        let requests: Vec<StageRequest> = spec
            .stages
            .iter()
            .map(|stage| match group.map(|g| &spec.groups[g]) {
                Some(g) => StageRequest {
                    intra_threads: g.intra_threads,
                    inter_threads: g.inter_threads,
                    ..stage.request.clone()
                },
                None => stage.request.clone(),
            })
            .collect();
        let engines: Result<Vec<Box<dyn Engine>>, String> = spec
            .stages
            .iter()
            .zip(&requests)
            .map(|(stage, request)| stage.provider.create(request).map_err(|e| format!("{}: {e}", request.location)))
            .collect();
        let engines = match engines {
            Ok(engines) => {
                let warm_ups = engines
                    .iter()
                    .zip(&requests)
                    .filter(|(engine, _)| !engine.warmed_sizes().is_empty())
                    .map(|(engine, request)| WarmUp {
                        node: spec.name.clone(),
                        worker: index,
                        stage: request.location.clone(),
                        sizes: engine.warmed_sizes().to_vec(),
                    })
                    .collect();
                let _ = ready.send(Ok(warm_ups));
                engines
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        drop(ready);
        let host_memory = engines.first().and_then(|engine| engine.host_memory());
        let device_memory = engines.first().and_then(|engine| engine.device_memory());
        let state_outputs = spec
            .state
            .iter()
            .map(|st| {
                let route = spec.routes.iter().find(|r| r.name == st.output).expect("validated write-back output");
                (route.stage, route.index)
            })
            .collect();
        let cuts = spec
            .routes
            .iter()
            .map(|route| {
                spec.pad.iter().find_map(|pad| {
                    let (_, axes) = pad.cuts.iter().find(|(name, _)| *name == route.name)?;
                    Some((pad.clone(), axes.clone()))
                })
            })
            .collect();
        let mut worker = Worker {
            router: Arc::clone(&router),
            node,
            faults: spec.faults.as_ref().map(|f| FaultDraws::new(f, node, index)),
            engines,
            tasks: Vec::new(),
            input_pools: (0..spec.inputs.len())
                .map(|_| TensorPool::in_memory(INPUT_BUFFERS_KEPT, host_memory.clone()))
                .collect(),
            device_pools: device_memory.map(|memory| {
                (0..spec.inputs.len()).map(|_| TensorPool::on_device(INPUT_BUFFERS_KEPT, memory.clone())).collect()
            }),
            state_outputs,
            cuts,
            pad_axes: spec.pad_axes(),
            batch_rows: group.map_or(router.scheduler.batch_rows[node], |g| {
                router.scheduler.batch_rows[node].min(spec.groups[g].max_rows)
            }),
            group,
            requests,
            nice: super::niceness::BatchNice::new(&router.nodes[node].nice, index, router.scheduler.thread_classes),
            index,
            stoppable: false,
        };
        worker.register_stop_handles();
        worker.serve(&router.nodes[node].receiver(group).clone());
    })
}

struct Worker {
    router: Arc<Router>,
    node: usize,
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
    /// Per stage: what its engine was created from (threads as the worker's group says).
    requests: Vec<StageRequest>,
    /// The thread's nice value per batch (background batches, see [`super::niceness`]).
    nice: super::niceness::BatchNice,
    /// The worker's index in its node (its [`super::stop::BatchSlot`]).
    index: usize,
    /// Whether the scheduler may stop this worker's batches (see [`super::stop`]).
    stoppable: bool,
}

fn next_instruction(receiver: &Receiver<Instruction>, spin: Duration) -> Instruction {
    if !spin.is_zero() {
        let until = Instant::now() + spin;
        loop {
            match receiver.try_recv() {
                Ok(instruction) => return instruction,
                Err(TryRecvError::Disconnected) => return Instruction::Exit,
                Err(TryRecvError::Empty) if Instant::now() >= until => break,
                Err(TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
    }
    receiver.recv().unwrap_or(Instruction::Exit)
}

impl Worker {
    fn spec(&self) -> &NodeSpec {
        &self.router.spec.nodes[self.node]
    }

    fn serve(mut self, receiver: &Receiver<Instruction>) {
        // A real-time worker does not spin: spinning, it would hold its core from every
        // normal thread, among them the one its answer is for.
        let spin = if self.nice.realtime() { Duration::ZERO } else { Duration::from_micros(self.spec().idle_spin_us) };
        while let Instruction::RunBatch = next_instruction(receiver, spin) {
            self.run_batch();
            let state = &self.router.nodes[self.node];
            if let Some(g) = self.group {
                state.groups[g].busy.fetch_sub(1, Ordering::AcqRel);
            }
            state.busy.fetch_sub(1, Ordering::AcqRel);
            self.router.scheduler.poke(Reason::NodeFinished, &self.router.nodes);
        }
    }

    /// Gives the node's stop slot this worker's engines' stop handles, when the
    /// pipeline stops young batches (`preempt_before`) and the node allows it:
    /// no per-stream state (a chunk's turn cannot be undone) and no worker groups.
    fn register_stop_handles(&mut self) {
        let spec = self.spec();
        if self.router.scheduler.preempt_before.is_none() || spec.keeps_streams() || !spec.groups.is_empty() {
            return;
        }
        let slot = &self.router.nodes[self.node].slots[self.index];
        slot.register(self.engines.iter().map(|e| e.stop_handle()).collect());
        self.stoppable = slot.stoppable();
    }

    /// Takes tasks, drops those that no longer need running, and runs the rest as one batch.
    fn run_batch(&mut self) {
        let router = Arc::clone(&self.router);
        let state = &router.nodes[self.node];
        let spec = &router.spec.nodes[self.node];
        let mut tasks = std::mem::take(&mut self.tasks);
        match self.group {
            None => state.buffer.take(self.batch_rows, &self.pad_axes, &mut tasks),
            Some(g) => state.buffer.take_for(g, self.batch_rows, &self.pad_axes, &mut tasks),
        }
        state.publish_depths();
        let now = Instant::now();
        let mut dropped_chunks = Vec::new();
        tasks.retain(|task| {
            let request = &task.request;
            let keep = if request.completion.is_cancelled() {
                router.resolve(request, Err(RequestError::Cancelled));
                false
            } else if request.completion.is_finished() {
                false
            } else if request.deadline.is_some_and(|d| d <= now) {
                router.resolve(request, Err(RequestError::DeadlineExceeded { node: spec.name.clone() }));
                false
            } else {
                let waited = now.duration_since(task.enqueued);
                state.metrics.queue_seconds.record(waited.as_secs_f64());
                state.counters.queue_ns.fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
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
            router.scheduler.poke(reason, &router.nodes);
        }
        if !tasks.is_empty() {
            let rows: usize = tasks.iter().map(|t| t.rows).sum();
            let priority_waits = || {
                state.buffer.priority_pending() > 0 || state.streams.as_ref().is_some_and(|s| s.priority_parked() > 0)
            };
            let holds_priority = tasks.iter().any(|t| t.priority);
            self.nice.set_for_batch(&state.nice, holds_priority, priority_waits);
            let slot = &state.slots[self.index];
            if self.stoppable {
                slot.begin(crate::clock::now_ns(), holds_priority);
            }
            let result = self.execute(&tasks);
            let compute = now.elapsed();
            if self.stoppable && slot.end() && result.is_err() {
                // Stopped for priority work: the tasks wait again, first in their queues.
                state.metrics.stopped_batches.increment(1);
                state.counters.stopped_batches.fetch_add(1, Ordering::Relaxed);
                state.counters.stopped_ns.fetch_add(compute.as_nanos() as u64, Ordering::Relaxed);
                let again = Instant::now();
                tasks.iter_mut().for_each(|t| t.enqueued = again);
                router.put_back(self.node, &mut tasks);
                self.tasks = tasks;
                return;
            }
            // Account before answering, so a woken requester sees its batch counted.
            state.metrics.executions.increment(1);
            state.metrics.inferences.increment(rows as u64);
            state.metrics.batch_size.record(rows as f64);
            state.metrics.compute_seconds.record(compute.as_secs_f64());
            let counters = &state.counters;
            counters.executions.fetch_add(1, Ordering::Relaxed);
            counters.rows.fetch_add(rows as u64, Ordering::Relaxed);
            counters.tasks.fetch_add(tasks.len() as u64, Ordering::Relaxed);
            counters.compute_ns.fetch_add(compute.as_nanos() as u64, Ordering::Relaxed);
            counters.batch_sizes.record(rows, compute);
            match result {
                Ok(executed) => self.route(&tasks, &executed),
                Err(message) => {
                    state.metrics.batch_failures.increment(1);
                    counters.failed_batches.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(node = %spec.name, rows, %message, "batch failed");
                    for task in &tasks {
                        let mut message = message.clone();
                        if let (Some(chunk), Some(_)) = (task.request.stream, &state.streams) {
                            message += &format!("; stream {}'s state is unchanged", chunk.id);
                        }
                        router.resolve(&task.request, Err(RequestError::Node { node: spec.name.clone(), message }));
                        if let (Some(chunk), Some(_)) = (task.request.stream, &state.streams) {
                            if let Some(reason) = self.release_stream(chunk, None) {
                                router.scheduler.poke(reason, &router.nodes);
                            }
                        }
                    }
                }
            }
        }
        tasks.clear();
        self.tasks = tasks;
    }

    /// Stitches the node inputs (padding ragged ones) and runs every stage.
    fn execute(&mut self, tasks: &[Task]) -> Result<Executed, String> {
        let router = Arc::clone(&self.router);
        let spec = &router.spec.nodes[self.node];
        let mut inputs = Vec::with_capacity(spec.inputs.len());
        let mut parts: Vec<&Tensor> = Vec::with_capacity(tasks.len());
        let rows: usize = tasks.iter().map(|t| t.rows).sum();
        // Room for the rows the first stage pads the batch to (fixed batch sizes), so it need not copy.
        let capacity = spec.stages.first().map_or(rows, |stage| stage.request.batch_sizes.padded(rows));
        for slot in 0..spec.inputs.len() {
            parts.clear();
            parts.extend(tasks.iter().map(|t| &t.inputs[slot]));
            let stitched = match spec.pad.iter().find(|p| p.slot == slot) {
                Some(pad) => stitch_padded(&parts, &pad.axes, pad.value),
                None => {
                    let pool = match (parts[0].device(), &mut self.device_pools) {
                        (None, _) => &mut self.input_pools[slot],
                        (Some(_), Some(pools)) => &mut pools[slot],
                        (Some(device), None) => {
                            return Err(format!(
                                "input `{}` arrived in device {device}'s memory, where this node does not run",
                                spec.inputs[slot].name
                            ))
                        }
                    };
                    stitch_pooled(pool, &parts, capacity)
                }
            };
            inputs.push(stitched.map_err(|e| format!("cannot stitch input `{}`: {e}", spec.inputs[slot].name))?);
        }
        let task_rows: Vec<usize> = tasks.iter().map(|t| t.rows).collect();
        let batch = BatchInfo {
            deadline: tasks.iter().filter_map(|t| t.request.deadline).min(),
            streams: tasks.iter().map(|t| t.request.stream).collect(),
        };
        let mut outputs: Vec<Vec<Tensor>> = Vec::with_capacity(spec.stages.len());
        let mut rows_out: Vec<Vec<usize>> = Vec::with_capacity(spec.stages.len());
        for (s, stage) in spec.stages.iter().enumerate() {
            let mut rows_in: Option<&Vec<usize>> = None;
            let mut stage_inputs: Vec<&Tensor> = Vec::with_capacity(stage.sources.len());
            for source in &stage.sources {
                let (tensor, rows) = match *source {
                    StageSource::NodeInput(slot) => (&inputs[slot], &task_rows),
                    StageSource::StageOutput { stage, index } => (&outputs[stage][index], &rows_out[stage]),
                };
                if rows_in.is_some_and(|r| r != rows) {
                    return Err(format!(
                        "stage {s} takes inputs with different rows per request; their item counts must agree"
                    ));
                }
                rows_in = Some(rows);
                stage_inputs.push(tensor);
            }
            let rows_in = rows_in.unwrap_or(&task_rows).clone();
            let total: usize = rows_in.iter().sum();
            let output = if total == 0 && !stage.is_function() {
                // Nothing to infer (every request has zero items here): empty outputs, no engine call.
                StageOutput { tensors: empty_outputs(&stage.signature)?, rows: None }
            } else {
                self.run_stage(s, &stage_inputs, &rows_in, &batch)?
            };
            let rows = output.rows.unwrap_or(rows_in);
            if rows.len() != tasks.len() {
                return Err(format!(
                    "stage {s} reported rows for {} requests; the batch has {}",
                    rows.len(),
                    tasks.len()
                ));
            }
            check_outputs(spec, s, &output.tensors, rows.iter().sum())?;
            outputs.push(output.tensors);
            rows_out.push(rows);
        }
        Ok(Executed { outputs, rows: rows_out })
    }

    /// Runs stage `s`, catching a panic (the engine is then recreated).
    fn run_stage(
        &mut self,
        s: usize,
        inputs: &[&Tensor],
        rows: &[usize],
        batch: &BatchInfo,
    ) -> Result<StageOutput, String> {
        let router = Arc::clone(&self.router);
        let spec = &router.spec.nodes[self.node];
        let stage = &spec.stages[s];
        let engine = &mut self.engines[s];
        let fault = self.faults.as_mut().and_then(FaultDraws::draw);
        if let Some(fault) = fault {
            router.nodes[self.node].metrics.injected_fault(fault.kind());
        }
        let run = || match fault {
            None => engine.run_batch(inputs, rows, batch),
            Some(Fault::Error) => Err("injected fault: error".into()),
            // A real unwind, like a panicking engine's, minus the panic hook's report.
            Some(Fault::Panic) => std::panic::resume_unwind(Box::new("injected fault: panic")),
            Some(Fault::Slow(factor)) => {
                let started = Instant::now();
                let out = engine.run_batch(inputs, rows, batch);
                std::thread::sleep(started.elapsed().mul_f64(factor - 1.0));
                out
            }
        };
        let result = catch_unwind(AssertUnwindSafe(run));
        let copied = self.engines[s].host_device_bytes();
        if copied > 0 {
            let state = &router.nodes[self.node];
            state.metrics.host_device_bytes.increment(copied);
            state.counters.host_device_bytes.fetch_add(copied, Ordering::Relaxed);
        }
        match result {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(format!("stage {s} ({}): {e}", stage_label(spec, s))),
            Err(panic) => {
                let what = crate::engine::panic_message(panic.as_ref());
                match stage.provider.create(&self.requests[s]) {
                    Ok(fresh) => {
                        self.engines[s] = fresh;
                        self.register_stop_handles();
                    }
                    Err(e) => {
                        tracing::error!(node = %spec.name, stage = s, error = %e, "could not recreate engine after a panic")
                    }
                }
                Err(format!("stage {s} ({}) panicked: {what}", stage_label(spec, s)))
            }
        }
    }

    /// Ends a stream chunk's turn at this node (committing `new_state` if given),
    /// enqueues the stream's next chunk and refuses chunks behind a final one.
    fn release_stream(&self, chunk: crate::request::StreamChunk, new_state: Option<Vec<Tensor>>) -> Option<Reason> {
        let streams = self.router.nodes[self.node].streams.as_ref()?;
        let (next, refused) = streams.release(chunk, new_state);
        for (task, error) in refused {
            self.router.resolve(&task.request, Err(error));
        }
        self.router.push(self.node, next?)
    }

    /// Splits routed outputs per task (cutting padded ones back) and delivers them.
    /// Pokes the scheduler at most once.
    fn route(&self, tasks: &[Task], executed: &Executed) {
        let router = &self.router;
        let spec = &router.spec.nodes[self.node];
        let outputs = &executed.outputs;
        let mut poke: Option<Reason> = None;
        // Requesters answered by this batch are woken after it, by fan-out (see `wakeup`).
        let _deferred = crate::wakeup::Deferred::begin();
        // Row offset of each task in each stage's outputs.
        let mut offsets: Vec<usize> = vec![0; executed.rows.len()];
        for (t, task) in tasks.iter().enumerate() {
            let range = |stage: usize, offsets: &[usize]| offsets[stage]..offsets[stage] + executed.rows[stage][t];
            if let (Some(chunk), Some(_)) = (task.request.stream, &router.nodes[self.node].streams) {
                // Commit before answering, so the stream's next chunk finds its state.
                let new_state = self
                    .state_outputs
                    .iter()
                    .map(|&(stage, index)| outputs[stage][index].rows(range(stage, &offsets)).compact())
                    .collect();
                if let Some(reason) = self.release_stream(chunk, Some(new_state)) {
                    poke = Some(merge(poke, reason));
                }
            }
            for (r, route) in spec.routes.iter().enumerate() {
                if route.targets.iter().all(|t| matches!(t, Target::State(_))) {
                    continue; // written back above
                }
                let mut part = outputs[route.stage][route.index].rows(range(route.stage, &offsets));
                if let Some(shape) = self.cut_shape(r, task, &part, tasks) {
                    match part.crop_to(&shape) {
                        Ok(cut) => part = cut,
                        Err(e) => {
                            tracing::error!(node = %spec.name, output = %route.name, error = %e, "cannot cut back a padded output")
                        }
                    }
                }
                for target in &route.targets {
                    match *target {
                        Target::Node { node, slot } => {
                            if let Some(reason) = router.deliver(node, slot, &task.request, part.clone()) {
                                poke = Some(merge(poke, reason));
                            }
                        }
                        Target::Output(index) => router.output(&task.request, index, part.clone()),
                        Target::State(_) => {}
                    }
                }
            }
            for (stage, offset) in offsets.iter_mut().enumerate() {
                *offset += executed.rows[stage][t];
            }
        }
        // The node-finished poke that follows covers arrivals too; poke here only for
        // priority arrivals, which should not wait for this worker's bookkeeping.
        if let Some(Reason::PriorityArrival) = poke {
            router.scheduler.poke(Reason::PriorityArrival, &router.nodes);
        }
    }

    /// The shape route `r`'s part for `task` is cut back to, if the route is a
    /// padded input's cut output: each cut axis scaled by the task's share of the padded size.
    fn cut_shape(&self, r: usize, task: &Task, part: &Tensor, tasks: &[Task]) -> Option<Vec<usize>> {
        let (pad, axes) = self.cuts[r].as_ref()?;
        let slot = pad.slot;
        let mut shape = part.shape().to_vec();
        for (&in_axis, &out_axis) in pad.axes.iter().zip(axes) {
            let padded = tasks.iter().map(|t| t.inputs[slot].shape()[in_axis]).max()?;
            let own = task.inputs[slot].shape()[in_axis];
            let out = shape[out_axis];
            shape[out_axis] = if padded == 0 { out } else { (out * own).div_ceil(padded) };
        }
        Some(shape)
    }
}

/// A batch's stage outputs, and each stage's rows per task.
struct Executed {
    outputs: Vec<Vec<Tensor>>,
    rows: Vec<Vec<usize>>,
}

/// Outputs with zero rows for a stage that had nothing to run (dynamic dims become 0).
fn empty_outputs(signature: &crate::engine::ModelSignature) -> Result<Vec<Tensor>, String> {
    signature
        .outputs
        .iter()
        .map(|o| {
            let shape = o.shape.iter().enumerate().map(|(i, d)| match d {
                crate::engine::Dim::Fixed(n) if i > 0 => *n,
                _ => 0,
            });
            Tensor::zeros(o.dtype, shape.collect()).map_err(|e| e.to_string())
        })
        .collect()
}

/// Keeps the more urgent of two poke reasons.
fn merge(current: Option<Reason>, new: Reason) -> Reason {
    match current {
        Some(Reason::PriorityArrival) => Reason::PriorityArrival,
        _ => new,
    }
}

fn stage_label(spec: &NodeSpec, stage: usize) -> String {
    let s = &spec.stages[stage];
    match &s.request.model {
        Some(path) => path.file_name().unwrap_or_default().to_string_lossy().into_owned(),
        None => s.engine.clone(),
    }
}

/// Checks a stage's outputs against its signature and the batch's rows.
fn check_outputs(spec: &NodeSpec, stage: usize, outputs: &[Tensor], rows: usize) -> Result<(), String> {
    let signature = &spec.stages[stage].signature;
    if outputs.len() != signature.outputs.len() {
        return Err(format!(
            "stage {stage} returned {} outputs, its signature has {}",
            outputs.len(),
            signature.outputs.len()
        ));
    }
    for (tensor, declared) in outputs.iter().zip(&signature.outputs) {
        if tensor.dtype() != declared.dtype {
            return Err(format!(
                "stage {stage} output `{}` is {}, declared {}",
                declared.name,
                tensor.dtype(),
                declared.dtype
            ));
        }
        if tensor.shape().first() != Some(&rows) {
            return Err(format!(
                "stage {stage} output `{}` has shape {:?}; expected {rows} rows (the batch) in dim 0",
                declared.name,
                tensor.shape()
            ));
        }
    }
    Ok(())
}
