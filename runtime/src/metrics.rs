//! Metric names and handles, recorded through the `metrics` facade.
//!
//! Baton records; the embedding program chooses the exporter (Prometheus,
//! statsd, none). Handles are registered once per node at start, so the hot
//! path only touches an atomic in the installed recorder (or nothing at all
//! when no recorder is installed). Every name starts with `baton_`; per-node
//! series carry a `node` label and all carry a `pipeline` label.

use metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};

use crate::request::{RequestError, RequestResult};

/// Tasks waiting in a node's batching buffer.
pub const QUEUE_DEPTH: &str = "baton_queue_depth";
/// Priority tasks waiting in a node's batching buffer.
pub const PRIORITY_DEPTH: &str = "baton_priority_depth";
/// Rows per executed batch.
pub const BATCH_SIZE: &str = "baton_batch_size";
/// Seconds a task waited in a node's buffer before its batch started.
pub const QUEUE_SECONDS: &str = "baton_queue_seconds";
/// Seconds a node spent stitching one batch and running its stages.
pub const COMPUTE_SECONDS: &str = "baton_compute_seconds";
/// Batches a node executed.
pub const EXECUTIONS: &str = "baton_executions_total";
/// Rows a node inferred (executions × mean batch size).
pub const INFERENCES: &str = "baton_inferences_total";
/// Batches that failed.
pub const BATCH_FAILURES: &str = "baton_batch_failures_total";
/// Batches stopped for waiting priority work before they ended (`preempt_before`).
pub const STOPPED_BATCHES: &str = "baton_stopped_batches_total";
/// Times the scheduler picked a node.
pub const PICKS: &str = "baton_scheduler_picks_total";
/// Seconds one scheduling decision took.
pub const DECISION_SECONDS: &str = "baton_scheduler_decision_seconds";
/// Scheduling decisions made.
pub const DECISIONS: &str = "baton_scheduler_decisions_total";
/// Submit-to-answer seconds of requests.
pub const REQUEST_SECONDS: &str = "baton_request_seconds";
/// Requests answered, by `outcome` (see [`Outcome`]); a split request counts once, and each of its jobs once.
pub const REQUESTS: &str = "baton_requests_total";
/// Requests submitted and not yet answered.
pub const IN_FLIGHT: &str = "baton_in_flight";
/// Stage runs made to fail, panic or slow down by `[nodes.NAME.faults]`, by node and `kind`.
pub const INJECTED_FAULTS: &str = "baton_injected_faults_total";
/// Requests refused at admission because a node they enter at had `max_queue` tasks waiting.
pub const NODE_REFUSALS: &str = "baton_node_refusals_total";

/// Bytes a node's engines copied between host and device memory (GPU nodes; 0 on the CPU).
pub const HOST_DEVICE_BYTES: &str = "baton_host_device_bytes_total";

/// Tasks at a node with worker groups not placed on a fitting worker within
/// `placement_timeout_us`, sent back to wait for another round.
pub const PLACEMENT_RETRIES: &str = "baton_placement_retries_total";

/// Handles for one node.
#[derive(Clone)]
pub(crate) struct NodeMetrics {
    pub queue_depth: Gauge,
    pub priority_depth: Gauge,
    pub batch_size: Histogram,
    pub queue_seconds: Histogram,
    pub compute_seconds: Histogram,
    pub executions: Counter,
    pub inferences: Counter,
    pub batch_failures: Counter,
    pub stopped_batches: Counter,
    pub picks: Counter,
    pub refusals: Counter,
    pub placement_retries: Counter,
    pub host_device_bytes: Counter,
    /// Labels, for the rarely used per-kind counters.
    labels: [(&'static str, String); 2],
}

impl NodeMetrics {
    pub fn new(pipeline: &str, node: &str) -> Self {
        let labels = [("pipeline", pipeline.to_string()), ("node", node.to_string())];
        NodeMetrics {
            queue_depth: gauge!(QUEUE_DEPTH, &labels),
            priority_depth: gauge!(PRIORITY_DEPTH, &labels),
            batch_size: histogram!(BATCH_SIZE, &labels),
            queue_seconds: histogram!(QUEUE_SECONDS, &labels),
            compute_seconds: histogram!(COMPUTE_SECONDS, &labels),
            executions: counter!(EXECUTIONS, &labels),
            inferences: counter!(INFERENCES, &labels),
            batch_failures: counter!(BATCH_FAILURES, &labels),
            stopped_batches: counter!(STOPPED_BATCHES, &labels),
            picks: counter!(PICKS, &labels),
            refusals: counter!(NODE_REFUSALS, &labels),
            placement_retries: counter!(PLACEMENT_RETRIES, &labels),
            host_device_bytes: counter!(HOST_DEVICE_BYTES, &labels),
            labels,
        }
    }

    /// Counts one injected fault of `kind`.
    pub fn injected_fault(&self, kind: &'static str) {
        let [(_, pipeline), (_, node)] = &self.labels;
        counter!(INJECTED_FAULTS, "pipeline" => pipeline.clone(), "node" => node.clone(), "kind" => kind).increment(1);
    }
}

/// How a request was answered: the `outcome` label of [`REQUESTS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    InvalidInput,
    NodeError,
    Deadline,
    Shutdown,
    QueueFull,
    Cancelled,
    Stream,
    /// A job of a split request failed (the request fails naming the job).
    Job,
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::Ok,
        Outcome::InvalidInput,
        Outcome::NodeError,
        Outcome::Deadline,
        Outcome::Shutdown,
        Outcome::QueueFull,
        Outcome::Cancelled,
        Outcome::Stream,
        Outcome::Job,
    ];

    /// The outcome of an answer.
    pub fn of(result: &RequestResult) -> Outcome {
        match result {
            Ok(_) => Outcome::Ok,
            Err(RequestError::InvalidInput(_)) => Outcome::InvalidInput,
            Err(RequestError::Node { .. }) => Outcome::NodeError,
            Err(RequestError::DeadlineExceeded { .. }) => Outcome::Deadline,
            Err(RequestError::ShuttingDown) => Outcome::Shutdown,
            Err(RequestError::QueueFull { .. } | RequestError::NodeQueueFull { .. }) => Outcome::QueueFull,
            Err(RequestError::Cancelled) => Outcome::Cancelled,
            Err(RequestError::Stream { .. } | RequestError::StateMemoryFull { .. }) => Outcome::Stream,
            Err(RequestError::Job { .. }) => Outcome::Job,
        }
    }

    /// Its `outcome` label.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::InvalidInput => "invalid_input",
            Outcome::NodeError => "node_error",
            Outcome::Deadline => "deadline",
            Outcome::Shutdown => "shutdown",
            Outcome::QueueFull => "queue_full",
            Outcome::Cancelled => "cancelled",
            Outcome::Stream => "stream",
            Outcome::Job => "job",
        }
    }
}

/// Handles for the pipeline as a whole.
#[derive(Clone)]
pub(crate) struct PipelineMetrics {
    pub request_seconds: Histogram,
    pub in_flight: Gauge,
    pub decision_seconds: Histogram,
    pub decisions: Counter,
    /// Requests answered, by [`Outcome`] (in [`Outcome::ALL`]'s order).
    requests: Vec<Counter>,
}

impl PipelineMetrics {
    pub fn new(pipeline: &str) -> Self {
        let labels = [("pipeline", pipeline.to_string())];
        PipelineMetrics {
            request_seconds: histogram!(REQUEST_SECONDS, &labels),
            in_flight: gauge!(IN_FLIGHT, &labels),
            decision_seconds: histogram!(DECISION_SECONDS, &labels),
            decisions: counter!(DECISIONS, &labels),
            requests: Outcome::ALL
                .iter()
                .map(|o| counter!(REQUESTS, "pipeline" => pipeline.to_string(), "outcome" => o.label()))
                .collect(),
        }
    }

    /// Counts one answered request under its outcome.
    pub fn request_done(&self, outcome: Outcome) {
        self.requests[outcome as usize].increment(1);
    }
}
