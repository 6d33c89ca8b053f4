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
//!
//! This file is the facade only: admission, routing, resolution and the
//! scheduler thread's loop live in the router (`pipeline/`); docs/threads.md
//! follows a request through them.

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::awake::{self, Keepers};
use crate::config::{ConfigError, PipelineConfig};
use crate::engine::{EngineRegistry, WarmUp};
use crate::node::NodeStats;
use crate::pipeline::{ticker, Router};
use crate::request::{Completion, Request, RequestResult, Ticket};
use crate::spec::PipelineSpec;
use crate::worker::{self, WorkerSettings};

/// Why a runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("node `{node}` worker {worker} could not start: {message}")]
    Worker { node: String, worker: usize, message: String },
    #[error("could not spawn a thread: {0}")]
    Spawn(#[from] std::io::Error),
    /// `[scheduler] keep_cores_awake`: a core's keeper could not start.
    #[error("{0}")]
    Keepers(String),
}

/// Submits requests to a running pipeline; made by [`Runtime::submitter`], cheap to clone.
#[derive(Clone)]
pub struct Submitter {
    router: Arc<Router>,
}

impl Submitter {
    /// Like [`Runtime::submit`].
    pub fn submit(&self, request: Request) -> Ticket {
        self.router.submit(request)
    }

    /// Like [`Runtime::submit_then`].
    pub fn submit_then(&self, request: Request, callback: impl FnOnce(RequestResult) + Send + 'static) {
        self.router.admit(request, Arc::new(Completion::with_callback(Box::new(callback))));
    }
}

/// A running pipeline. Cheap to share by reference across threads (`submit` takes `&self`).
pub struct Runtime {
    router: Arc<Router>,
    workers: Vec<JoinHandle<()>>,
    ticker: Option<JoinHandle<()>>,
    /// With `keep_cores_awake`: a keeper thread per core (see [`crate::awake`]).
    keepers: Option<Keepers>,
    warm_ups: Vec<WarmUp>,
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
        let router = Arc::new(Router::new(spec));
        let mut runtime = Runtime {
            router: Arc::clone(&router),
            workers: Vec::new(),
            ticker: None,
            keepers: None,
            warm_ups: Vec::new(),
        };
        let (ready_tx, ready_rx) = crossbeam_channel::unbounded();
        let mut expected = Vec::new();
        for (n, node) in router.spec.nodes.iter().enumerate() {
            let spec = Arc::new(node.clone());
            for w in 0..node.workers {
                let settings = WorkerSettings {
                    node: n,
                    index: w,
                    spec: Arc::clone(&spec),
                    batch_rows: router.scheduler.batch_rows[n],
                    stops_young_batches: router.scheduler.stops_young_batches,
                    thread_classes: router.scheduler.thread_classes,
                };
                let handoff: Arc<dyn worker::Handoff> = Arc::clone(&router) as _;
                let state = Arc::clone(&router.nodes[n]);
                runtime.workers.push(worker::spawn(handoff, state, settings, ready_tx.clone())?);
                expected.push((node.name.clone(), w));
            }
        }
        drop(ready_tx);
        let mut failure = None;
        for (node, worker) in expected {
            match ready_rx.recv() {
                Ok(Ok(warm_ups)) => {
                    for w in &warm_ups {
                        let times: Vec<String> = w
                            .sizes
                            .iter()
                            .map(|s| format!("{} rows {:.1} ms", s.rows, s.took.as_secs_f64() * 1e3))
                            .collect();
                        tracing::info!(node = %w.node, worker = w.worker, stage = %w.stage, "warmed up: {}", times.join(", "));
                    }
                    runtime.warm_ups.extend(warm_ups);
                }
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
        if router.spec.scheduler.keep_cores_awake {
            match Keepers::start(&awake::process_cores()) {
                Ok(keepers) => runtime.keepers = Some(keepers),
                Err(message) => {
                    runtime.stop(true);
                    return Err(StartError::Keepers(message));
                }
            }
        }
        runtime.ticker = Some(ticker::spawn(Arc::clone(&router))?);
        Ok(runtime)
    }

    /// What each worker's engines ran when they started (fixed batch sizes, see
    /// [`crate::batch_sizes`]): per stage, each size and how long it took.
    pub fn warm_ups(&self) -> &[WarmUp] {
        &self.warm_ups
    }

    /// The validated pipeline this runtime runs.
    pub fn spec(&self) -> &PipelineSpec {
        &self.router.spec
    }

    /// Requests admitted and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.router.in_flight()
    }

    /// Tasks waiting in node `node`'s buffer (pending, priority pending).
    pub fn pending(&self, node: usize) -> (usize, usize) {
        let buffer = &self.router.nodes[node].buffer;
        (buffer.pending(), buffer.priority_pending())
    }

    /// Running totals per node (executions, rows, queue and compute time), in node order.
    pub fn node_stats(&self) -> Vec<NodeStats> {
        self.router
            .nodes
            .iter()
            .zip(&self.router.spec.nodes)
            .map(|(state, spec)| state.counters.snapshot(&spec.name))
            .collect()
    }

    /// The scheduler thread's record so far: how late its timed sleeps between ticks ended,
    /// its rounds and their CPU time (see [`crate::scheduler::TickRecord`]).
    pub fn ticks(&self) -> crate::scheduler::TickRecord {
        self.router.scheduler.ticks()
    }

    /// CPU time the cores' keepers have spun so far (`keep_cores_awake`; zero without), ns:
    /// process CPU that is neither the runtime's work nor its requests'.
    pub fn keepers_cpu_ns(&self) -> u64 {
        self.keepers.as_ref().map_or(0, Keepers::cpu_ns)
    }

    /// Per stateful node: (node name, open streams, bytes of state held).
    pub fn stream_usage(&self) -> Vec<(String, usize, usize)> {
        let nodes = self.router.nodes.iter().zip(&self.router.spec.nodes);
        nodes
            .filter_map(|(n, s)| {
                let (open, bytes) = n.streams.as_ref()?.usage();
                Some((s.name.clone(), open, bytes))
            })
            .collect()
    }

    /// Requests waiting at join nodes for more of their inputs (a diagnostic; 0 when idle).
    pub fn partial_joins(&self) -> usize {
        self.router.nodes.iter().map(|n| n.joins.len()).sum()
    }

    /// Submits a request. The ticket resolves exactly once, with outputs or the reason there are none.
    pub fn submit(&self, request: Request) -> Ticket {
        self.router.submit(request)
    }

    /// Submits a request whose result goes to `callback`, called exactly once on
    /// the thread that resolves the request (a worker, or this thread when the
    /// request is refused at once). Keep the callback short: it runs on the
    /// worker's time. For open-loop load and servers, where a thread per
    /// waiting request would cost too much.
    pub fn submit_then(&self, request: Request, callback: impl FnOnce(RequestResult) + Send + 'static) {
        self.router.admit(request, Arc::new(Completion::with_callback(Box::new(callback))));
    }

    /// A handle that submits to this pipeline from any thread, for programs whose
    /// submitting threads must not own the runtime (so another can shut it down
    /// while they work). Once the runtime stops accepting, a handle's requests are
    /// refused at once with [`RequestError::ShuttingDown`](crate::RequestError::ShuttingDown); a handle keeps no thread alive.
    pub fn submitter(&self) -> Submitter {
        Submitter { router: Arc::clone(&self.router) }
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

    /// The shutdown sequence: stop admitting, wait for the in-flight count to
    /// drain, stop the scheduler thread, then the workers (see [`crate::pipeline`]'s shutdown protocol).
    fn stop(&mut self, immediate: bool) {
        let router = &self.router;
        router.stop_accepting(immediate);
        if !self.workers.is_empty() {
            router.wait_until_drained();
        }
        if let Some(ticker) = self.ticker.take() {
            ticker::stop(router, ticker);
        }
        router.tell_workers_to_exit();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        if let Some(mut keepers) = self.keepers.take() {
            keepers.stop();
        }
        router.clear_joins();
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.workers.is_empty() || self.ticker.is_some() {
            self.stop(false);
        }
    }
}
