//! The embedding API: start a pipeline, submit requests, shut down.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let engines = baton::EngineRegistry::new();
//! use baton::{Request, Runtime, Tensor};
//! let runtime = Runtime::from_file("configs/mlp.toml".as_ref(), &engines)?;
//! let x = Tensor::from_vec(vec![1, 256], vec![0.5f32; 256])?;
//! let outputs = runtime.submit(Request::new().input("input", x)).wait()?;
//! println!("{:?}", outputs.get("output"));
//! runtime.shutdown();
//! # Ok(()) }
//! ```
//!
//! Every submitted request resolves exactly once: requests that cannot be
//! admitted (bad input, queue full, shutting down) resolve at once; the rest
//! resolve when their last pipeline output is produced, or on the first error
//! any of their tasks meets (see [`crate::request`] for the completion
//! protocol). The in-flight count is the number of admitted, unresolved
//! requests; shutdown waits for it to reach zero.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::config::{ConfigError, PipelineConfig};
use crate::engine::EngineRegistry;
use crate::graph::{PipelineSpec, Target};
use crate::metrics::PipelineMetrics;
use crate::node::stream::Admission;
use crate::node::{worker, Instruction, NodeState, NodeStats, Task};
use crate::request::{Completion, Outputs, Request, RequestError, RequestResult, RequestState, Ticket};
use crate::scheduler::{Reason, Scheduler};
use crate::tensor::Tensor;

/// Why a runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("node `{node}` worker {worker} could not start: {message}")]
    Worker { node: String, worker: usize, message: String },
    #[error("could not spawn a thread: {0}")]
    Spawn(#[from] std::io::Error),
}

/// A per-request subset of outputs or nodes; `None` means all of them.
type Mask = Option<Box<[bool]>>;

/// State shared by the runtime handle, the workers and the scheduler.
pub(crate) struct Shared {
    pub spec: PipelineSpec,
    pub nodes: Vec<NodeState>,
    pub scheduler: Scheduler,
    output_names: Arc<[String]>,
    input_index: HashMap<String, usize>,
    /// Smallest `max_batch` over all nodes, and that node's name: a request may not have more rows.
    row_limit: (usize, String),
    /// Nodes with more than one input (they keep join tables).
    join_nodes: Vec<usize>,
    /// Nodes fed by a pipeline input.
    entry_nodes: Vec<bool>,
    /// (pipeline input, node it feeds, the node's `max_queue`) for every bounded entry.
    entry_limits: Vec<(usize, usize, usize)>,
    next_id: AtomicU64,
    in_flight: AtomicUsize,
    accepting: AtomicBool,
    /// Immediate shutdown: no task may enter a buffer any more.
    stopping: AtomicBool,
    drained: (Mutex<()>, Condvar),
    stop_ticker: AtomicBool,
    metrics: PipelineMetrics,
    /// Mean submit-to-answer time of recent requests (exponential, ns): how long a waiter spins.
    latency_ema_ns: AtomicU64,
}

/// Submits requests to a running pipeline; made by [`Runtime::submitter`], cheap to clone.
#[derive(Clone)]
pub struct Submitter {
    shared: Arc<Shared>,
}

impl Submitter {
    /// Like [`Runtime::submit`].
    pub fn submit(&self, request: Request) -> Ticket {
        self.shared.submit(request)
    }

    /// Like [`Runtime::submit_then`].
    pub fn submit_then(&self, request: Request, callback: impl FnOnce(RequestResult) + Send + 'static) {
        self.shared.admit(request, Arc::new(Completion::with_callback(Box::new(callback))));
    }
}

/// A running pipeline. Cheap to share by reference across threads (`submit` takes `&self`).
pub struct Runtime {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    ticker: Option<JoinHandle<()>>,
}

impl Runtime {
    /// Reads, validates and starts the pipeline in `path`.
    pub fn from_file(path: &Path, engines: &EngineRegistry) -> Result<Runtime, StartError> {
        Self::start(PipelineSpec::from_file(path, engines)?)
    }

    /// Validates and starts a parsed config; model paths resolve against `base_file`'s folder.
    pub fn from_config(
        config: &PipelineConfig,
        base_file: Option<&Path>,
        engines: &EngineRegistry,
    ) -> Result<Runtime, StartError> {
        Self::start(PipelineSpec::build(config, base_file, engines)?)
    }

    /// Starts worker threads (each creating its engines) and the scheduler's tick thread.
    pub fn start(spec: PipelineSpec) -> Result<Runtime, StartError> {
        let metrics = PipelineMetrics::new(&spec.name);
        let mut nodes: Vec<NodeState> =
            spec.nodes.iter().map(|n| NodeState::new(&spec.name, n, spec.streams.max_state_bytes)).collect();
        for (node, node_spec) in nodes.iter_mut().zip(&spec.nodes) {
            node.buffer.set_fairness(&spec.fairness);
            node.buffer.set_groups(node_spec.groups.len());
        }
        let row_limit = spec.nodes.iter().map(|n| (n.max_batch, n.name.clone())).min().expect("a pipeline has nodes");
        let shared = Arc::new(Shared {
            scheduler: Scheduler::new(&spec, metrics.clone()),
            output_names: spec.outputs.iter().map(|o| o.spec.name.clone()).collect(),
            input_index: spec.inputs.iter().enumerate().map(|(i, input)| (input.spec.name.clone(), i)).collect(),
            row_limit,
            join_nodes: (0..spec.nodes.len()).filter(|&n| spec.nodes[n].inputs.len() > 1).collect(),
            entry_nodes: (0..spec.nodes.len())
                .map(|n| {
                    let feeds_n = |t: &Target| matches!(*t, Target::Node { node, .. } if node == n);
                    spec.inputs.iter().any(|i| i.targets.iter().any(feeds_n))
                })
                .collect(),
            entry_limits: spec
                .inputs
                .iter()
                .enumerate()
                .flat_map(|(i, input)| {
                    let nodes = &spec.nodes;
                    input.targets.iter().filter_map(move |t| match *t {
                        Target::Node { node, .. } => nodes[node].max_queue.map(|limit| (i, node, limit)),
                        _ => None,
                    })
                })
                .collect(),
            nodes,
            spec,
            next_id: AtomicU64::new(1),
            in_flight: AtomicUsize::new(0),
            accepting: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            drained: (Mutex::new(()), Condvar::new()),
            stop_ticker: AtomicBool::new(false),
            metrics,
            latency_ema_ns: AtomicU64::new(0),
        });
        let mut runtime = Runtime { shared: Arc::clone(&shared), workers: Vec::new(), ticker: None };
        let (ready_tx, ready_rx) = crossbeam_channel::unbounded();
        let mut expected = Vec::new();
        for (n, node) in shared.spec.nodes.iter().enumerate() {
            for w in 0..node.workers {
                runtime.workers.push(worker::spawn(Arc::clone(&shared), n, w, ready_tx.clone())?);
                expected.push((node.name.clone(), w));
            }
        }
        drop(ready_tx);
        let mut failure = None;
        for (node, worker) in expected {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(message)) => failure = failure.or(Some(StartError::Worker { node, worker, message })),
                Err(_) => {
                    failure = failure.or(Some(StartError::Worker {
                        node,
                        worker,
                        message: "the worker thread died while starting".into(),
                    }))
                }
            }
        }
        if let Some(error) = failure {
            runtime.stop(true);
            return Err(error);
        }
        let ticker_shared = Arc::clone(&shared);
        runtime.ticker = Some(std::thread::Builder::new().name("baton-scheduler".into()).spawn(move || {
            let shared = ticker_shared;
            shared.scheduler.set_ticker(std::thread::current());
            let sweep_every = Duration::from_millis((shared.spec.streams.idle_timeout_ms / 4).clamp(1, 100));
            let mut last_sweep = std::time::Instant::now();
            while !shared.stop_ticker.load(Ordering::Acquire) {
                std::thread::park_timeout(shared.scheduler.sleep_before_next_tick());
                shared.scheduler.poke(Reason::Tick, &shared.nodes);
                shared.retry_unplaced();
                if last_sweep.elapsed() >= sweep_every {
                    last_sweep = std::time::Instant::now();
                    let closed = shared.expire_streams();
                    if closed > 0 {
                        tracing::debug!(closed, "idle streams expired");
                    }
                }
            }
        })?);
        Ok(runtime)
    }

    /// The validated pipeline this runtime runs.
    pub fn spec(&self) -> &PipelineSpec {
        &self.shared.spec
    }

    /// Requests admitted and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Acquire)
    }

    /// Tasks waiting in node `node`'s buffer (pending, priority pending).
    pub fn pending(&self, node: usize) -> (usize, usize) {
        let buffer = &self.shared.nodes[node].buffer;
        (buffer.pending(), buffer.priority_pending())
    }

    /// Running totals per node (executions, rows, queue and compute time), in node order.
    pub fn node_stats(&self) -> Vec<NodeStats> {
        self.shared
            .nodes
            .iter()
            .zip(&self.shared.spec.nodes)
            .map(|(state, spec)| state.counters.snapshot(&spec.name))
            .collect()
    }

    /// Per stateful node: (node name, open streams, bytes of state held).
    pub fn stream_usage(&self) -> Vec<(String, usize, usize)> {
        let nodes = self.shared.nodes.iter().zip(&self.shared.spec.nodes);
        nodes
            .filter_map(|(n, s)| {
                let (open, bytes) = n.streams.as_ref()?.usage();
                Some((s.name.clone(), open, bytes))
            })
            .collect()
    }

    /// Requests waiting at join nodes for more of their inputs (a diagnostic; 0 when idle).
    pub fn partial_joins(&self) -> usize {
        self.shared.nodes.iter().map(|n| n.joins.len()).sum()
    }

    /// Submits a request. The ticket resolves exactly once, with outputs or the reason there are none.
    pub fn submit(&self, request: Request) -> Ticket {
        self.shared.submit(request)
    }

    /// Submits a request whose result goes to `callback`, called exactly once on
    /// the thread that resolves the request (a worker, or this thread when the
    /// request is refused at once). Keep the callback short: it runs on the
    /// worker's time. For open-loop load and servers, where a thread per
    /// waiting request would cost too much.
    pub fn submit_then(&self, request: Request, callback: impl FnOnce(RequestResult) + Send + 'static) {
        self.shared.admit(request, Arc::new(Completion::with_callback(Box::new(callback))));
    }

    /// A handle that submits to this pipeline from any thread, for programs whose
    /// submitting threads must not own the runtime (so another can shut it down
    /// while they work). Once the runtime stops accepting, a handle's requests are
    /// refused at once with [`RequestError::ShuttingDown`]; a handle keeps no thread alive.
    pub fn submitter(&self) -> Submitter {
        Submitter { shared: Arc::clone(&self.shared) }
    }

    /// Stops accepting, answers everything accepted, then stops all threads.
    pub fn shutdown(mut self) {
        self.stop(false);
    }

    /// Stops accepting, answers everything not yet running with a shutdown error,
    /// lets running batches finish, then stops all threads.
    pub fn shutdown_now(mut self) {
        self.stop(true);
    }

    fn stop(&mut self, immediate: bool) {
        let shared = &self.shared;
        shared.accepting.store(false, Ordering::SeqCst);
        if immediate {
            shared.stopping.store(true, Ordering::SeqCst);
            for state in &shared.nodes {
                let waiting = state.streams.as_ref().map(|s| s.drain()).unwrap_or_default();
                for task in state.buffer.drain().into_iter().chain(waiting) {
                    shared.resolve(&task.request, Err(RequestError::ShuttingDown));
                }
            }
        }
        // Wait for every admitted request to resolve; re-poke now and then so
        // progress never depends on a single wake-up.
        let (lock, drained) = &shared.drained;
        let mut guard = lock.lock();
        while shared.in_flight.load(Ordering::SeqCst) > 0 && !self.workers.is_empty() {
            drained.wait_for(&mut guard, Duration::from_millis(10));
            shared.scheduler.poke(Reason::Tick, &shared.nodes);
        }
        drop(guard);
        shared.stop_ticker.store(true, Ordering::Release);
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
        for (state, node) in shared.nodes.iter().zip(&shared.spec.nodes) {
            if state.groups.is_empty() {
                for _ in 0..node.workers {
                    let _ = state.instructions.send(Instruction::Exit);
                }
            }
            for group in &state.groups {
                for _ in 0..group.workers {
                    let _ = group.instructions.send(Instruction::Exit);
                }
            }
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }

        for state in &shared.nodes {
            state.joins.clear();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.workers.is_empty() || self.ticker.is_some() {
            self.stop(false);
        }
    }
}

fn outcome(result: &RequestResult) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(RequestError::InvalidInput(_)) => "invalid_input",
        Err(RequestError::Node { .. }) => "node_error",
        Err(RequestError::DeadlineExceeded { .. }) => "deadline",
        Err(RequestError::ShuttingDown) => "shutdown",
        Err(RequestError::QueueFull { .. } | RequestError::NodeQueueFull { .. }) => "queue_full",
        Err(RequestError::Cancelled) => "cancelled",
        Err(RequestError::Stream { .. } | RequestError::StateMemoryFull { .. }) => "stream",
        Err(RequestError::Job { .. }) => "job",
    }
}

impl Shared {
    fn submit(&self, request: Request) -> Ticket {
        let expected = Duration::from_nanos(2 * self.latency_ema_ns.load(Ordering::Relaxed));
        let completion = Arc::new(Completion::expecting(expected));
        let ticket = Ticket::new(Arc::clone(&completion));
        self.admit(request, completion);
        ticket
    }

    /// Validates and admits a request, or resolves its completion at once with the reason it was refused.
    fn admit(&self, request: Request, completion: Arc<Completion>) {
        let refuse = |error: RequestError| {
            self.metrics.request_done(outcome(&Err(error.clone())));
            completion.resolve(Err(error));
        };
        if !self.accepting.load(Ordering::Acquire) {
            refuse(RequestError::ShuttingDown);
            return;
        }
        if let Some(granule) = self.spec.fairness.granule {
            if crate::split::is_oversized(&request, self.row_limit.0) {
                // Each job is admitted (and counted) on its own; the request is refused whole
                // when its jobs would not all fit under max_in_flight (see `split`).
                let jobs = crate::split::job_count(&request, self.row_limit.0, granule);
                let limit = self.spec.max_in_flight;
                if self.in_flight.load(Ordering::Acquire) + jobs > limit {
                    refuse(RequestError::QueueFull { limit });
                    return;
                }
                let submit = |job, completion| self.admit(job, completion);
                crate::split::submit_jobs(request, completion, self.row_limit.0, granule, submit);
                return;
            }
        }
        let tenant = match self.spec.fairness.tenants.index(request.tenant.as_deref()) {
            Ok(tenant) => tenant,
            Err(message) => {
                refuse(RequestError::InvalidInput(message));
                return;
            }
        };
        let worker_kind = match request.worker_kind.as_deref().map(|kind| self.worker_kind(kind)).transpose() {
            Ok(kind) => kind,
            Err(message) => {
                refuse(RequestError::InvalidInput(message));
                return;
            }
        };
        let inputs = match self.validate(&request) {
            Ok(inputs) => inputs,
            Err(message) => {
                refuse(RequestError::InvalidInput(message));
                return;
            }
        };
        let (expected, runs) = self.reach(&inputs);
        if expected.as_ref().is_some_and(|e| !e.contains(&true)) {
            let given: Vec<&str> = request.inputs.iter().map(|(n, _)| n.as_str()).collect();
            let message = format!("the inputs given ({}) lead to no pipeline output", given.join(", "));
            refuse(RequestError::InvalidInput(message));
            return;
        }
        if request.stream.is_none() {
            let stateful = self
                .spec
                .nodes
                .iter()
                .enumerate()
                .find(|(n, node)| !node.state.is_empty() && runs.as_ref().is_none_or(|runs| runs[*n]));
            if let Some((_, node)) = stateful {
                refuse(RequestError::InvalidInput(format!(
                    "node `{}` keeps per-stream state: the request must be a chunk of a stream (id, start, end)",
                    node.name
                )));
                return;
            }
        }
        // Bounded entries: refused at once while the node has `max_queue` tasks waiting.
        // Check-then-enqueue is not atomic: concurrent submitters may each pass the
        // check, so a node holds at most `max_queue` + (submitters - 1) entering tasks.
        for &(input, node, limit) in &self.entry_limits {
            if inputs[input].is_some() && self.nodes[node].buffer.pending() >= limit {
                self.nodes[node].metrics.refusals.increment(1);
                refuse(RequestError::NodeQueueFull { node: self.spec.nodes[node].name.clone(), limit });
                return;
            }
        }
        let limit = self.spec.max_in_flight;
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= limit {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            refuse(RequestError::QueueFull { limit });
            return;
        }
        self.metrics.in_flight.increment(1.0);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut state = RequestState::new(id, &request, self.spec.outputs.len(), expected, runs, completion);
        state.tenant = tenant;
        state.worker_kind = worker_kind;
        let state = Arc::new(state);
        let mut poke = None;
        for (input, tensor) in self.spec.inputs.iter().zip(inputs) {
            let Some(tensor) = tensor else { continue };
            for target in &input.targets {
                if let Target::Node { node, slot } = *target {
                    if let Some(reason) = self.deliver(node, slot, &state, tensor.clone()) {
                        poke = Some(reason);
                    }
                }
            }
        }
        if let Some(reason) = poke {
            self.scheduler.poke(reason, &self.nodes);
        }
    }

    /// The index of worker kind `kind` in the pipeline's kinds, or an error naming it.
    fn worker_kind(&self, kind: &str) -> Result<usize, String> {
        let kinds = &self.spec.worker_kinds;
        kinds.binary_search_by(|k| k.as_str().cmp(kind)).map_err(|_| {
            if kinds.is_empty() {
                format!("unknown worker kind `{kind}`: no node of this pipeline has worker_groups")
            } else {
                format!("unknown worker kind `{kind}` (the pipeline's worker groups are: {})", kinds.join(", "))
            }
        })
    }

    /// At a node with worker groups: the mask of the groups that fit `task`, or why none does.
    fn fitting_groups(&self, node: usize, task: &Task) -> Result<u64, String> {
        let spec = &self.spec.nodes[node];
        // A kind this node has narrows the groups to it; a kind it lacks does not apply here.
        let kind = task.request.worker_kind.filter(|&k| spec.groups.iter().any(|g| g.kind_index == k));
        let mask = spec.groups.iter().enumerate().fold(0u64, |mask, (g, group)| {
            let fits = task.rows <= group.max_rows && kind.is_none_or(|k| k == group.kind_index);
            mask | (u64::from(fits) << g)
        });
        if mask != 0 {
            return Ok(mask);
        }
        let groups: Vec<String> = spec.groups.iter().map(|g| format!("{} (max_rows {})", g.kind, g.max_rows)).collect();
        let asked = kind.map_or(String::new(), |k| format!(" of kind `{}`", self.spec.worker_kinds[k]));
        Err(format!(
            "no worker group of node `{}` fits a task of {} rows{asked} (its groups: {})",
            spec.name,
            task.rows,
            groups.join(", ")
        ))
    }

    /// Placement timeout, every tick: at each node with `placement_timeout_us`, tasks
    /// whose round ran out go to the back of their queues, each counted as a retry.
    fn retry_unplaced(&self) {
        let now_ns = crate::clock::now_ns();
        for (state, spec) in self.nodes.iter().zip(&self.spec.nodes) {
            let Some(timeout) = spec.placement_timeout_ns else { continue };
            // A round begins at or after its task arrived: none is overdue while the oldest task is younger.
            if state.buffer.oldest_wait_ns(now_ns) < timeout {
                continue;
            }
            let retried = state.buffer.requeue_overdue(now_ns - timeout, now_ns) as u64;
            if retried > 0 {
                state.counters.placement_retries.fetch_add(retried, Ordering::Relaxed);
                state.metrics.placement_retries.increment(retried);
                tracing::debug!(node = %spec.name, retried, "tasks not placed within the placement timeout: retried");
            }
        }
    }

    /// For a request leaving optional inputs out: which outputs it gets and which
    /// nodes run for it (`None`s when it carries every input).
    fn reach(&self, inputs: &[Option<Tensor>]) -> (Mask, Mask) {
        if inputs.iter().all(Option::is_some) {
            return (None, None);
        }
        let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
        let runs = self.spec.running_nodes(&present);
        let expected: Vec<bool> = self.spec.outputs.iter().map(|o| runs[o.node]).collect();
        (Some(expected.into()), Some(runs.into()))
    }

    /// Checks a request's inputs against the pipeline; returns them in pipeline-input order.
    fn validate(&self, request: &Request) -> Result<Vec<Option<Tensor>>, String> {
        let inputs = &self.spec.inputs;
        let mut ordered: Vec<Option<&Tensor>> = vec![None; inputs.len()];
        for (name, tensor) in &request.inputs {
            let Some(&i) = self.input_index.get(name) else {
                let known: Vec<&str> = inputs.iter().map(|i| i.spec.name.as_str()).collect();
                return Err(format!("unknown input `{name}` (the pipeline takes: {})", known.join(", ")));
            };
            if ordered[i].replace(tensor).is_some() {
                return Err(format!("input `{name}` is given twice"));
            }
            let spec = &inputs[i].spec;
            if tensor.dtype() != spec.dtype {
                return Err(format!("input `{name}` is {} but the pipeline takes {}", tensor.dtype(), spec.dtype));
            }
            if !spec.accepts(tensor.shape()) {
                return Err(format!(
                    "input `{name}` has shape {:?} but the pipeline takes {}",
                    tensor.shape(),
                    spec.shape_string()
                ));
            }
        }
        let mut rows = None;
        let mut result = Vec::with_capacity(inputs.len());
        for (slot, input) in ordered.into_iter().zip(inputs) {
            let name = &input.spec.name;
            let Some(tensor) = slot else {
                if input.optional {
                    result.push(None);
                    continue;
                }
                return Err(format!("missing input `{name}`"));
            };
            let r = tensor.batch_rows();
            match rows {
                None => rows = Some((r, name)),
                Some((first, first_name)) if first != r => {
                    return Err(format!(
                        "inputs disagree on rows (dim 0): `{first_name}` has {first}, `{name}` has {r}"
                    ));
                }
                _ => {}
            }
            result.push(Some(tensor.clone()));
        }
        let rows = rows.map_or(0, |(r, _)| r);
        if rows == 0 {
            return Err("the request has 0 rows (dim 0)".into());
        }
        let (limit, node) = &self.row_limit;
        if rows > *limit {
            return Err(format!(
                "the request has {rows} rows but node `{node}` runs at most {limit} per batch (max_batch)"
            ));
        }
        Ok(result)
    }

    /// Hands input `slot` of `request` to node `node`. Returns the reason to poke the scheduler, if any.
    pub(crate) fn deliver(
        &self,
        node: usize,
        slot: usize,
        request: &Arc<RequestState>,
        tensor: Tensor,
    ) -> Option<Reason> {
        if request.completion.is_finished() {
            self.answer_if_cancelled(request);
            return None;
        }
        if !request.runs(node) {
            return None;
        }
        let spec = &self.spec.nodes[node];
        let total = spec.inputs.len();
        let needed = total - spec.state.len();
        let rows = tensor.batch_rows();
        let inputs = if needed == 1 {
            let mut inputs = vec![crate::node::placeholder(); total];
            inputs[slot] = tensor;
            inputs
        } else {
            match self.nodes[node].joins.arrive(request.id, &request.completion, slot, tensor) {
                Some(inputs) => inputs,
                None => {
                    // Waiting for other inputs, or finished meanwhile.
                    self.answer_if_cancelled(request);
                    return None;
                }
            }
        };
        let mut task = Task::new(Arc::clone(request), inputs, rows);
        // Work descending from a priority task is priority at every node, unless
        // the pipeline keeps priority to the nodes a request enters at.
        task.priority &= self.spec.scheduler.priority_follows_dag || self.entry_nodes[node];
        self.enqueue(node, task)
    }

    /// A request whose ticket was dropped is still owed its answer (so it leaves
    /// the in-flight count); one already answered is left alone.
    fn answer_if_cancelled(&self, request: &RequestState) {
        if request.completion.is_cancelled() {
            self.resolve(request, Err(RequestError::Cancelled));
        }
    }

    /// Puts a task whose inputs all arrived into node `node`'s buffer (through the
    /// node's stream gate if it keeps per-stream state). Returns the reason to poke, if any.
    pub(crate) fn enqueue(&self, node: usize, task: Task) -> Option<Reason> {
        let task = match &self.nodes[node].streams {
            None => task,
            Some(streams) => match streams.admit(task) {
                Admission::Run(task) => task,
                Admission::Parked => return None,
                Admission::Refused(task, error) => {
                    self.resolve(&task.request, Err(error));
                    return None;
                }
            },
        };
        self.push(node, task)
    }

    /// Puts a task that may run now (admitted by its stream, if any) into node `node`'s buffer.
    pub(crate) fn push(&self, node: usize, mut task: Task) -> Option<Reason> {
        let state = &self.nodes[node];
        let priority = task.priority;
        if !state.groups.is_empty() {
            match self.fitting_groups(node, &task) {
                Ok(mask) => task.groups = mask,
                Err(message) => {
                    self.resolve(&task.request, Err(RequestError::InvalidInput(message)));
                    return None;
                }
            }
        }
        if self.stopping.load(Ordering::SeqCst) {
            self.resolve(&task.request, Err(RequestError::ShuttingDown));
            return None;
        }
        let pending = state.buffer.push(task);
        // An immediate shutdown may have drained this buffer between the check and the push.
        if self.stopping.load(Ordering::SeqCst) {
            for task in state.buffer.drain() {
                self.resolve(&task.request, Err(RequestError::ShuttingDown));
            }
            return None;
        }
        state.metrics.queue_depth.set(pending as f64);
        if priority {
            state.metrics.priority_depth.set(state.buffer.priority_pending() as f64);
        }
        let reason = if priority { Reason::PriorityArrival } else { Reason::Arrival };
        self.scheduler.arrival_wants_decision(node, state, priority).then_some(reason)
    }

    /// Closes streams idle past the timeout at every stateful node; returns how many.
    pub(crate) fn expire_streams(&self) -> usize {
        let timeout = Duration::from_millis(self.spec.streams.idle_timeout_ms);
        self.nodes.iter().filter_map(|n| n.streams.as_ref()).map(|s| s.expire(timeout)).sum()
    }

    /// Stores pipeline output `index` of `request`; resolves it when it was the last.
    pub(crate) fn output(&self, request: &Arc<RequestState>, index: usize, tensor: Tensor) {
        let Some(all) = request.set_output(index, tensor) else { return };
        let outputs = if request.expected().is_none() {
            Outputs::new(
                Arc::clone(&self.output_names),
                all.into_iter().map(|t| t.expect("every output set")).collect(),
            )
        } else {
            // Only the outputs this request's inputs lead to.
            let (names, tensors): (Vec<String>, Vec<Tensor>) =
                self.output_names.iter().zip(all).filter_map(|(name, t)| Some((name.clone(), t?))).unzip();
            Outputs::new(Arc::from(names), tensors)
        };
        self.resolve(request, Ok(outputs));
    }

    /// Resolves `request` if nothing resolved it yet, and does the bookkeeping once.
    pub(crate) fn resolve(&self, request: &RequestState, result: RequestResult) {
        if !request.claim() {
            return;
        }
        let latency = request.submitted.elapsed();
        self.metrics.request_seconds.record(latency.as_secs_f64());
        if result.is_ok() {
            let ema = self.latency_ema_ns.load(Ordering::Relaxed);
            let sample = latency.as_nanos().min(u64::MAX as u128) as u64;
            self.latency_ema_ns.store(if ema == 0 { sample } else { ema - ema / 8 + sample / 8 }, Ordering::Relaxed);
        }
        self.metrics.request_done(outcome(&result));
        self.metrics.in_flight.decrement(1.0);
        let failed = result.is_err();
        let drained = self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1;
        request.completion.resolve(result);
        if failed {
            // After `resolve` marked it finished: see the join table's protocol.
            for &n in &self.join_nodes {
                self.nodes[n].joins.forget(request.id);
            }
        }
        if drained && !self.accepting.load(Ordering::Acquire) {
            let _guard = self.drained.0.lock();
            self.drained.1.notify_all();
        }
    }
}
