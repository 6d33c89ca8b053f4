//! Triton's statistics extension for a pipeline served as a model.
//!
//! Per request (counted by the server, each front end the same way):
//! `success` and `fail` (count and time from the body read to the answer),
//! `compute_input` (decoding the request into tensors), `compute_output`
//! (encoding the answer), `inference_count` (rows: the first dimension of the
//! first input when the model batches, else 1 per request) and
//! `last_inference`. From the runtime's nodes: `queue` (time tasks waited in
//! node buffers), `compute_infer` (each request charged the whole compute
//! time of every batch it ran in, summed over nodes: Triton's count, so a
//! request's `compute_infer` average is what its batches took, not a share),
//! `execution_count` (batches run, summed over nodes, as
//! `baton_executions_total`) and `batch_stats` (batches by size, summed over
//! nodes; there each batch's time counts once). As in Triton, the `queue` and
//! `compute_*` counts are requests (the successful ones), so averages are per request.
//!
//! Concurrency: relaxed atomic counters; a snapshot reads each on its own
//! (figures may be a request apart, never torn).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::model::{Model, VERSION};
use crate::pb;

#[derive(Default)]
struct Counter {
    count: AtomicU64,
    ns: AtomicU64,
}

impl Counter {
    fn add(&self, took: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.ns.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    fn get(&self) -> StatDuration {
        StatDuration { count: self.count.load(Ordering::Relaxed), ns: self.ns.load(Ordering::Relaxed) }
    }
}

/// A count and a summed time, ns (Triton's StatisticDuration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatDuration {
    pub count: u64,
    pub ns: u64,
}

impl StatDuration {
    fn json(self) -> Value {
        json!({ "count": self.count, "ns": self.ns })
    }

    fn pb(self) -> Option<pb::StatisticDuration> {
        Some(pb::StatisticDuration { count: self.count, ns: self.ns })
    }
}

/// What the server counts of one model's requests.
#[derive(Default)]
pub struct ModelStats {
    success: Counter,
    fail: Counter,
    compute_input_ns: AtomicU64,
    compute_output_ns: AtomicU64,
    inferences: AtomicU64,
    last_inference_ms: AtomicU64,
}

/// One request's timings in the server.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestTimes {
    /// Decoding the body into tensors.
    pub input: Duration,
    /// Encoding the answer.
    pub output: Duration,
    /// Rows the request carried.
    pub rows: u64,
}

impl ModelStats {
    /// Counts an answered request that took `total` from its body read to its answer.
    pub fn success(&self, total: Duration, times: RequestTimes) {
        self.compute_input_ns.fetch_add(times.input.as_nanos() as u64, Ordering::Relaxed);
        self.compute_output_ns.fetch_add(times.output.as_nanos() as u64, Ordering::Relaxed);
        self.inferences.fetch_add(times.rows, Ordering::Relaxed);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        self.last_inference_ms.fetch_max(now, Ordering::Relaxed);
        // Last, so a reader that sees the count sees the rest.
        self.success.add(total);
    }

    /// Counts a failed request.
    pub fn fail(&self, total: Duration) {
        self.fail.add(total);
    }
}

/// A snapshot of one model's statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub name: String,
    pub last_inference: u64,
    pub inference_count: u64,
    pub execution_count: u64,
    pub success: StatDuration,
    pub fail: StatDuration,
    pub queue: StatDuration,
    pub compute_input: StatDuration,
    pub compute_infer: StatDuration,
    pub compute_output: StatDuration,
    /// (batch size, batches, compute ns), by increasing size.
    pub batches: Vec<(u64, u64, u64)>,
}

impl Report {
    pub fn of(model: &Model) -> Report {
        let s = &model.stats;
        let success = s.success.get();
        let nodes = model.runtime().node_stats();
        let mut batches = std::collections::BTreeMap::<u64, (u64, u64)>::new();
        for b in nodes.iter().flat_map(|n| &n.batch_sizes) {
            let e = batches.entry(b.batch_size as u64).or_default();
            e.0 += b.executions;
            e.1 += b.compute_ns;
        }
        let per_request = |ns: u64| StatDuration { count: success.count, ns };
        Report {
            name: model.name.clone(),
            last_inference: s.last_inference_ms.load(Ordering::Relaxed),
            inference_count: s.inferences.load(Ordering::Relaxed),
            execution_count: nodes.iter().map(|n| n.executions).sum(),
            success,
            fail: s.fail.get(),
            queue: per_request(nodes.iter().map(|n| n.queue_ns).sum()),
            compute_input: per_request(s.compute_input_ns.load(Ordering::Relaxed)),
            compute_infer: per_request(nodes.iter().map(|n| n.task_compute_ns).sum()),
            compute_output: per_request(s.compute_output_ns.load(Ordering::Relaxed)),
            batches: batches.into_iter().map(|(size, (n, ns))| (size, n, ns)).collect(),
        }
    }

    /// One entry of the HTTP statistics answer's `model_stats`.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "version": VERSION,
            "last_inference": self.last_inference,
            "inference_count": self.inference_count,
            "execution_count": self.execution_count,
            "inference_stats": {
                "success": self.success.json(),
                "fail": self.fail.json(),
                "queue": self.queue.json(),
                "compute_input": self.compute_input.json(),
                "compute_infer": self.compute_infer.json(),
                "compute_output": self.compute_output.json(),
                "cache_hit": StatDuration::default().json(),
                "cache_miss": StatDuration::default().json(),
            },
            "batch_stats": self.batches.iter().map(|&(size, n, ns)| json!({
                "batch_size": size,
                "compute_input": { "count": n, "ns": 0 },
                "compute_infer": { "count": n, "ns": ns },
                "compute_output": { "count": n, "ns": 0 },
            })).collect::<Vec<_>>(),
        })
    }

    /// One entry of gRPC's ModelStatisticsResponse.
    pub fn to_pb(&self) -> pb::ModelStatistics {
        pb::ModelStatistics {
            name: self.name.clone(),
            version: VERSION.into(),
            last_inference: self.last_inference,
            inference_count: self.inference_count,
            execution_count: self.execution_count,
            inference_stats: Some(pb::InferStatistics {
                success: self.success.pb(),
                fail: self.fail.pb(),
                queue: self.queue.pb(),
                compute_input: self.compute_input.pb(),
                compute_infer: self.compute_infer.pb(),
                compute_output: self.compute_output.pb(),
                cache_hit: StatDuration::default().pb(),
                cache_miss: StatDuration::default().pb(),
            }),
            batch_stats: self
                .batches
                .iter()
                .map(|&(size, n, ns)| pb::InferBatchStatistics {
                    batch_size: size,
                    compute_input: StatDuration { count: n, ns: 0 }.pb(),
                    compute_infer: StatDuration { count: n, ns }.pb(),
                    compute_output: StatDuration { count: n, ns: 0 }.pb(),
                })
                .collect(),
        }
    }
}
