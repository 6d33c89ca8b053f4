//! Measuring one load point: latency histograms recorded by the load drivers,
//! measurement windows, the stability rule, per-node deltas of the runtime's
//! running totals, and the [`PointResult`] a point reports.
//!
//! Latencies are recorded in µs into hdrhistograms bounded 1 µs .. 60 s with 3
//! significant figures. Recording goes to a [`Recorder`]'s shards (one per
//! client thread in closed loop, a few picked by request number in open loop)
//! so that recording threads rarely meet on a lock; the controller drains the
//! shards at each window boundary.

use std::time::Duration;

use baton::log_buckets::{self, Buckets};
use baton::queue_times::QueueTimes;
use baton::stats::BatchTimes;
use baton::wake_delays::WakeDelays;
use baton::NodeStats;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::Serialize;

/// Highest latency a histogram holds, µs (60 s); longer ones saturate.
pub const MAX_LATENCY_US: u64 = 60_000_000;

/// An empty latency histogram: 1 µs .. 60 s, 3 significant figures.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// What one shard (or a merge of shards) recorded.
#[derive(Clone, Debug)]
pub struct Tally {
    /// Latencies of every successful request, µs.
    pub all: Histogram<u64>,
    /// Latencies of successful priority requests, µs (also in `all`).
    pub priority: Histogram<u64>,
    /// Latencies of the other successful requests, µs (also in `all`).
    pub others: Histogram<u64>,
    /// Requests answered with an error.
    pub errors: u64,
    /// Open loop: sends that left more than [`LATE_SEND_US`] after their scheduled time.
    pub late_sends: u64,
    /// Open loop: sends, and how long after their scheduled times they left in all, µs.
    pub sends: u64,
    pub send_lag_us: u64,
    /// Open loop: the sends by how long the generator slept before each.
    pub send_lags: crate::send_lags::SendLags,
    /// Per tenant of the load (`--tenants`, in its order): its name and the latencies
    /// of its successful requests, µs (also in `all`). Empty when the load names none.
    pub tenants: Vec<(String, Histogram<u64>)>,
}

/// An open-loop send this late (µs) after its scheduled time counts as late.
pub const LATE_SEND_US: u64 = 1000;

impl Default for Tally {
    fn default() -> Self {
        Tally::with_tenants(&[])
    }
}

impl Tally {
    /// An empty tally keeping latencies apart for each of `tenants`.
    pub fn with_tenants(tenants: &[String]) -> Tally {
        Tally {
            all: new_histogram(),
            priority: new_histogram(),
            others: new_histogram(),
            errors: 0,
            late_sends: 0,
            sends: 0,
            send_lag_us: 0,
            send_lags: Default::default(),
            tenants: tenants.iter().map(|t| (t.clone(), new_histogram())).collect(),
        }
    }

    /// Requests that succeeded.
    pub fn ok(&self) -> u64 {
        self.all.len()
    }

    /// Adds `other`'s counts to this one.
    pub fn merge(&mut self, other: &Tally) {
        self.all.add(&other.all).expect("histograms with the same bounds");
        self.priority.add(&other.priority).expect("histograms with the same bounds");
        self.others.add(&other.others).expect("histograms with the same bounds");
        self.errors += other.errors;
        self.late_sends += other.late_sends;
        self.sends += other.sends;
        self.send_lag_us += other.send_lag_us;
        self.send_lags.merge(&other.send_lags);
        for (k, (name, h)) in other.tenants.iter().enumerate() {
            if k == self.tenants.len() {
                self.tenants.push((name.clone(), new_histogram()));
            }
            self.tenants[k].1.add(h).expect("histograms with the same bounds");
        }
    }

    fn reset(&mut self) {
        self.all.reset();
        self.priority.reset();
        self.others.reset();
        self.tenants.iter_mut().for_each(|(_, h)| h.reset());
        self.errors = 0;
        self.late_sends = 0;
        self.sends = 0;
        self.send_lag_us = 0;
        self.send_lags = Default::default();
    }
}

/// Latency recording shared by the load drivers (and the callbacks they hand
/// the runtime) and the controller that drains it at window boundaries.
pub struct Recorder {
    shards: Vec<Mutex<Tally>>,
    tenants: Vec<String>,
    /// Open loop: the generator thread's CPU time and its sends, over its whole run, and
    /// whether it ran at the real-time policy.
    generator: Mutex<(u64, u64, bool)>,
    /// Closed loop: the client threads' CPU time and their sends, summed over the clients.
    clients: Mutex<(u64, u64)>,
}

impl Recorder {
    /// A recorder with `shards` shards (at least one).
    pub fn new(shards: usize) -> Recorder {
        Recorder::with_tenants(shards, Vec::new())
    }

    /// A recorder with `shards` shards that also keeps each of `tenants`' latencies apart.
    pub fn with_tenants(shards: usize, tenants: Vec<String>) -> Recorder {
        let shards = (0..shards.max(1)).map(|_| Mutex::new(Tally::with_tenants(&tenants))).collect();
        Recorder { shards, tenants, generator: Mutex::new((0, 0, false)), clients: Mutex::new((0, 0)) }
    }

    /// Records one answer into shard `key % shards`: its latency when it succeeded, else an error.
    pub fn record(&self, key: usize, latency_us: u64, priority: bool, ok: bool) {
        self.record_sent(key, latency_us, crate::load::Sent { priority, tenant: None }, ok);
    }

    /// [`Recorder::record`] of a request sent as `sent` says (priority, its tenant's index).
    pub fn record_sent(&self, key: usize, latency_us: u64, sent: crate::load::Sent, ok: bool) {
        let mut shard = self.shards[key % self.shards.len()].lock();
        if ok {
            let us = latency_us.clamp(1, MAX_LATENCY_US);
            shard.all.saturating_record(us);
            if sent.priority {
                shard.priority.saturating_record(us);
            } else {
                shard.others.saturating_record(us);
            }
            if let Some((_, h)) = sent.tenant.and_then(|t| shard.tenants.get_mut(t)) {
                h.saturating_record(us);
            }
        } else {
            shard.errors += 1;
        }
    }

    /// Open loop: the generator thread ran `cpu_ns` on a core for its `sends` sends, at the
    /// real-time policy or not.
    pub fn generator_ran(&self, cpu_ns: u64, sends: u64, realtime: bool) {
        *self.generator.lock() = (cpu_ns, sends, realtime);
    }

    /// Open loop: whether the generator's sends ran at the real-time policy.
    pub fn generator_realtime(&self) -> bool {
        self.generator.lock().2
    }

    /// Closed loop: one client thread ran `cpu_ns` on a core for its `sends` sends.
    pub fn client_ran(&self, cpu_ns: u64, sends: u64) {
        let mut clients = self.clients.lock();
        clients.0 += cpu_ns;
        clients.1 += sends;
    }

    /// The load's CPU per send, µs: the open loop's generator's, else the closed loop's
    /// clients' (0 before they ended, or without sends).
    pub fn send_cpu_us(&self) -> f64 {
        let (generator_ns, generated, _) = *self.generator.lock();
        let (cpu_ns, sends) = if generated > 0 { (generator_ns, generated) } else { *self.clients.lock() };
        if sends == 0 {
            0.0
        } else {
            cpu_ns as f64 / sends as f64 / 1000.0
        }
    }

    /// Open loop: request `key` left `lag_us` after its scheduled time, its generator
    /// having slept `slept_us` (asked) before it (`None`: no sleep).
    pub fn sent_after(&self, key: usize, lag_us: u64, slept_us: Option<u64>) {
        let mut shard = self.shards[key % self.shards.len()].lock();
        shard.sends += 1;
        shard.send_lag_us += lag_us;
        shard.send_lags.record(slept_us, lag_us);
        shard.late_sends += u64::from(lag_us > LATE_SEND_US);
    }

    /// Everything recorded since the last call, merged; the shards start again empty.
    pub fn take(&self) -> Tally {
        let mut total = Tally::with_tenants(&self.tenants);
        for shard in &self.shards {
            let mut shard = shard.lock();
            total.merge(&shard);
            shard.reset();
        }
        total
    }
}

/// The stability rule: the last `n` window throughputs are each within
/// `tolerance` (a fraction, 0.10 for 10%) of their mean. False with fewer than `n` windows.
pub fn is_stable(throughputs: &[f64], n: usize, tolerance: f64) -> bool {
    if n == 0 || throughputs.len() < n {
        return false;
    }
    let last = &throughputs[throughputs.len() - n..];
    let mean = last.iter().sum::<f64>() / n as f64;
    mean > 0.0 && last.iter().all(|t| (t - mean).abs() <= tolerance * mean)
}

/// One measured window: what was recorded and the node totals at its ends.
#[derive(Clone, Debug)]
pub struct Window {
    pub elapsed: Duration,
    pub tally: Tally,
    pub nodes_start: Vec<NodeStats>,
    pub nodes_end: Vec<NodeStats>,
}

impl Window {
    /// Successful requests per second in this window.
    pub fn throughput(&self) -> f64 {
        self.tally.ok() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// One node over a measured interval: differences of its running totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeDelta {
    pub name: String,
    /// Batches run.
    pub executions: u64,
    /// Rows inferred.
    pub rows: u64,
    /// Tasks run.
    pub tasks: u64,
    /// Batches that failed.
    pub failed_batches: u64,
    /// Batches stopped for priority work before they ended (`preempt_before`).
    pub stopped_batches: u64,
    /// The time those batches had run, µs in all: the work lost.
    pub stopped_us: f64,
    /// Rows per batch (`rows / executions`; 0 when nothing ran).
    pub mean_batch: f64,
    /// Time a task waited in the node's buffer, µs per task.
    pub mean_queue_us: f64,
    /// Stitching and running the stages, µs per batch.
    pub mean_compute_us: f64,
    /// Handing the outputs on after a batch (the worker's time), µs per batch.
    pub mean_hand_on_us: f64,
    /// The same, p99 and p99.9 over the batches (the lower bound of the bucket holding
    /// them; 0 when nothing ran): the worker holds its node busy while it hands on.
    pub hand_on_p99_us: f64,
    pub hand_on_p999_us: f64,
    /// Every batch's hand-on, `[lower ns, upper ns, batches]` (the non-empty buckets).
    pub hand_on_buckets: Buckets,
    /// Bytes its engines copied between host and device memory (GPU nodes; 0 on the CPU).
    pub host_device_bytes: u64,
    /// Its workers' wake-ups (from the scheduler's word to the worker taking it).
    pub wakes: WakeSummary,
    /// Its tasks' waits in the buffer: the whole wait and the part before the word to run
    /// (`baton::queue_times`).
    pub queue: QueueSummary,
    /// Compute per batch (stitching and running the stages), p99 over every size, µs
    /// (the lower bound of its histogram bucket; 0 when nothing ran).
    pub compute_p99_us: f64,
    /// Each batch size's compute times, `[lower ns, upper ns, batches]` (what
    /// `baton simulate --batch-times` reads).
    pub batch_times: Vec<BatchTimes>,
    /// The same of its batches that started at the real-time policy (`foreground_realtime`
    /// under the collaborative rule; what `baton simulate --realtime-scale` is measured from).
    pub realtime_batch_times: Vec<BatchTimes>,
    /// The share of its batches' compute time its threads ran on a core, from the
    /// runtime's sampled batches (`baton::batch_cpu`; None without samples). In a
    /// simulation: the batches' work ÷ their time (the rest the shared cores held them).
    pub cpu_per_wall: Option<f64>,
    /// CPU its idle workers spent spinning for their next batch, µs in all, estimated
    /// from the runtime's sampled spins (`baton::spin_cpu`; 0 without samples).
    pub spin_cpu_us: f64,
}

/// A record's quantile (the lower bound of its bucket, ns) in µs; 0 for a record that holds nothing.
fn quantile_us(ns: Option<u64>) -> f64 {
    ns.map_or(0.0, |ns| ns as f64 / 1000.0)
}

/// A node's tasks' waits over a measured interval (see `baton::queue_times`): quantiles
/// (the lower bound of the bucket holding them), µs; 0 without tasks.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueueSummary {
    /// The whole wait, from entering the buffer to the batch's start.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Its part before the scheduler told a worker to run the batch (waiting to be picked).
    pub picked_p50_us: f64,
    pub picked_p99_us: f64,
    pub picked_p999_us: f64,
}

impl QueueSummary {
    pub fn of(times: &QueueTimes) -> Self {
        QueueSummary {
            p50_us: quantile_us(times.waited_ns(0.5)),
            p99_us: quantile_us(times.waited_ns(0.99)),
            p999_us: quantile_us(times.waited_ns(0.999)),
            picked_p50_us: quantile_us(times.picked_ns(0.5)),
            picked_p99_us: quantile_us(times.picked_ns(0.99)),
            picked_p999_us: quantile_us(times.picked_ns(0.999)),
        }
    }
}

/// A node's workers' wake-ups over a measured interval (see `baton::wake_delays`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WakeSummary {
    /// Wake-ups in all, those told while as many workers were busy as there are cores, and
    /// those of workers at the real-time policy (counted apart from the other two).
    pub count: u64,
    pub contended: u64,
    pub realtime: u64,
    /// Quantiles of every class (the lower bound of the bucket holding them), µs.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Each class's counts as `[lower ns, upper ns, count]` (what `baton simulate --wake-delays` reads).
    pub free_buckets: Buckets,
    pub contended_buckets: Buckets,
    pub realtime_buckets: Buckets,
}

impl WakeSummary {
    pub fn of(delays: &WakeDelays) -> Self {
        let us = |q: f64| quantile_us(delays.quantile_ns(q));
        WakeSummary {
            count: delays.count(),
            contended: delays.contended.iter().sum(),
            realtime: delays.realtime.iter().sum(),
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            free_buckets: WakeDelays::buckets(&delays.free),
            contended_buckets: WakeDelays::buckets(&delays.contended),
            realtime_buckets: WakeDelays::buckets(&delays.realtime),
        }
    }
}

/// The scheduler thread over a measured interval (see `baton::scheduler::TickRecord`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TickSummary {
    /// Its rounds (a sleep, a tick's decision, the retries) per second.
    pub rounds_per_s: f64,
    /// Its thread's CPU time per round, µs (0 without rounds).
    pub cpu_us_per_round: f64,
    /// How late its timed sleeps ended, in the classes of the workers' wake-ups
    /// (contended: its last decision left every core busy).
    #[serde(flatten)]
    pub lateness: WakeSummary,
    /// Every decision's wall time, on the tick thread and on the threads that poked on events.
    pub decisions: DecisionSummary,
}

impl TickSummary {
    pub fn of(record: &baton::scheduler::TickRecord, seconds: f64) -> Self {
        let times = &record.decisions;
        TickSummary {
            rounds_per_s: if seconds > 0.0 { record.rounds as f64 / seconds } else { 0.0 },
            cpu_us_per_round: record.cpu_ns_per_round().map_or(0.0, |ns| ns / 1000.0),
            lateness: WakeSummary::of(&record.lateness),
            decisions: DecisionSummary {
                on_ticks: DecisionTimesSummary::of(&times.on_ticks, seconds),
                on_finishes: DecisionTimesSummary::of(&times.on_finishes, seconds),
                on_arrivals: DecisionTimesSummary::of(&times.on_arrivals, seconds),
                handed_over_per_s: if seconds > 0.0 { times.handed_over as f64 / seconds } else { 0.0 },
            },
        }
    }
}

/// The scheduler's decisions over a measured interval (see `baton::scheduler::DecisionTimes`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DecisionSummary {
    /// Made by the tick thread.
    pub on_ticks: DecisionTimesSummary,
    /// Made by a worker whose batch ended, before it takes its next.
    pub on_finishes: DecisionTimesSummary,
    /// Made on an arrival, by the thread that delivered it (a submitter, a worker handing on).
    pub on_arrivals: DecisionTimesSummary,
    /// Pokes a second that found a decision running and left their reason to it.
    pub handed_over_per_s: f64,
}

/// One thread class's decisions: how many, and their wall times.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DecisionTimesSummary {
    pub per_s: f64,
    /// The mean, counting each decision at its bucket's middle (a bucket spans at most 12.5%), µs.
    pub mean_us: f64,
    /// Quantiles (the lower bound of the bucket holding them), µs.
    pub p50_us: f64,
    pub p99_us: f64,
    /// The counts as `[lower ns, upper ns, count]`.
    pub buckets: Buckets,
}

impl DecisionTimesSummary {
    pub fn of(counts: &[u64], seconds: f64) -> Self {
        let buckets = log_buckets::sparse(counts);
        let count: u64 = buckets.iter().map(|b| b.2).sum();
        let total_ns: f64 = buckets.iter().map(|&(lo, hi, n)| (lo as f64 + hi as f64) / 2.0 * n as f64).sum();
        let us = |q: f64| quantile_us(log_buckets::quantile_ns(&[counts], q));
        DecisionTimesSummary {
            per_s: if seconds > 0.0 { count as f64 / seconds } else { 0.0 },
            mean_us: if count > 0 { total_ns / count as f64 / 1000.0 } else { 0.0 },
            p50_us: us(0.5),
            p99_us: us(0.99),
            buckets,
        }
    }
}

/// Each size's compute times counted since `start` (sizes without any go).
fn batch_times_since(end: &[BatchTimes], start: &[BatchTimes]) -> Vec<BatchTimes> {
    end.iter()
        .map(|e| {
            let before = start.iter().find(|s| s.batch_size == e.batch_size).map_or(&[][..], |s| &s.buckets[..]);
            BatchTimes { batch_size: e.batch_size, buckets: log_buckets::minus(&e.buckets, before) }
        })
        .filter(|t| !t.buckets.is_empty())
        .collect()
}

/// The `q` quantile of every size's compute times together, µs (a bucket's lower bound; 0 without any).
fn compute_quantile_us(times: &[BatchTimes], q: f64) -> f64 {
    let mut all: Vec<(u64, u64)> = times.iter().flat_map(|t| t.buckets.iter().map(|b| (b.0, b.2))).collect();
    all.sort_unstable();
    let total: u64 = all.iter().map(|b| b.1).sum();
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (lower, count) in all {
        seen += count;
        if seen >= rank {
            return lower as f64 / 1000.0;
        }
    }
    0.0
}

/// Per-node differences `end - start` (matched by position; names from `end`).
pub fn node_deltas(start: &[NodeStats], end: &[NodeStats]) -> Vec<NodeDelta> {
    start
        .iter()
        .zip(end)
        .map(|(a, b)| {
            let executions = b.executions.saturating_sub(a.executions);
            let rows = b.rows.saturating_sub(a.rows);
            let tasks = b.tasks.saturating_sub(a.tasks);
            let queue_ns = b.queue_ns.saturating_sub(a.queue_ns);
            let compute_ns = b.compute_ns.saturating_sub(a.compute_ns);
            let per = |total: u64, count: u64| if count == 0 { 0.0 } else { total as f64 / count as f64 };
            let batch_times = batch_times_since(&b.batch_times, &a.batch_times);
            let hand_on_times = log_buckets::since(&b.hand_on_times, &a.hand_on_times);
            let hand_on_us = |q: f64| quantile_us(log_buckets::quantile_ns(&[&hand_on_times], q));
            NodeDelta {
                name: b.name.clone(),
                executions,
                rows,
                tasks,
                failed_batches: b.failed_batches.saturating_sub(a.failed_batches),
                stopped_batches: b.stopped_batches.saturating_sub(a.stopped_batches),
                stopped_us: b.stopped_ns.saturating_sub(a.stopped_ns) as f64 / 1000.0,
                mean_batch: per(rows, executions),
                mean_queue_us: per(queue_ns, tasks) / 1000.0,
                mean_compute_us: per(compute_ns, executions) / 1000.0,
                mean_hand_on_us: per(b.hand_on_ns.saturating_sub(a.hand_on_ns), executions) / 1000.0,
                hand_on_p99_us: hand_on_us(0.99),
                hand_on_p999_us: hand_on_us(0.999),
                hand_on_buckets: log_buckets::sparse(&hand_on_times),
                host_device_bytes: b.host_device_bytes.saturating_sub(a.host_device_bytes),
                wakes: WakeSummary::of(&b.wake_delays.since(&a.wake_delays)),
                queue: QueueSummary::of(&b.queue_times.since(&a.queue_times)),
                compute_p99_us: compute_quantile_us(&batch_times, 0.99),
                batch_times,
                realtime_batch_times: batch_times_since(&b.realtime_batch_times, &a.realtime_batch_times),
                cpu_per_wall: b.batch_cpu.since(&a.batch_cpu).cpu_per_wall(),
                spin_cpu_us: b.spin_cpu.since(&a.spin_cpu).estimated_cpu_ns() / 1000.0,
            }
        })
        .collect()
}

/// Latency summary, µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Requests it covers.
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub mean_us: f64,
    pub min_us: u64,
    pub max_us: u64,
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p95_us: h.value_at_quantile(0.95),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            mean_us: h.mean(),
            min_us: h.min(),
            max_us: h.max(),
        }
    }
}

/// One window's length and throughput, as reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowSummary {
    pub seconds: f64,
    pub throughput_rps: f64,
}

/// Everything one load point reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointResult {
    /// Batching policy the runtime ran under.
    pub policy: String,
    /// `closed` (concurrency) or `open` (request rate).
    pub mode: String,
    /// Concurrency (closed) or requests/s (open).
    pub load: f64,
    /// Length of the measured interval, s.
    pub seconds: f64,
    /// Successful requests in the measured interval.
    pub requests: u64,
    pub errors: u64,
    /// Open loop: sends more than 1 ms behind schedule (the generator could not keep up).
    pub late_sends: u64,
    /// Open loop: how long after its scheduled time a send left, µs on average (part of each
    /// latency with `--latency-from-schedule`).
    pub mean_send_lag_us: f64,
    /// Open loop: the sends by how long the generator slept before each (`send_lags`).
    pub send_lags: Vec<crate::send_lags::SendLagClass>,
    /// The generator thread's CPU per send (open loop; what `baton simulate --send-cpu-us`
    /// takes), or the client threads' (closed loop; `--client-send-us`), µs, over the whole run.
    pub send_cpu_us: f64,
    /// Open loop: the generator's sends ran at the real-time policy (`--generator-policy realtime`).
    pub generator_realtime: bool,
    pub throughput_rps: f64,
    pub rows_per_s: f64,
    /// All successful requests (priority ones included).
    pub latency: Latency,
    /// Priority requests only (`count` 0 when none were sent).
    pub priority_latency: Latency,
    /// The other requests only.
    pub others_latency: Latency,
    pub nodes: Vec<NodeDelta>,
    /// The windows measured (one for a fixed duration); the reported ones are the last `reported_windows`.
    pub windows: Vec<WindowSummary>,
    pub reported_windows: usize,
    /// Stability mode: whether the rule held (None for a fixed duration).
    pub stable: Option<bool>,
    /// rows/s ÷ the raw engine's best rows/s on the bottleneck node (with `--raw`).
    pub ratio_to_raw: Option<f64>,
    /// Concurrency 1: p50 − the raw engine's batch-1 median along the pipeline's critical path, µs (with `--raw`).
    pub p50_minus_raw_us: Option<f64>,
    /// The raw figures measured just before and after this point, which its ratios use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_beside: Option<crate::raw_beside::RawBeside>,
    /// Bytes copied between host and device memory per successful request, all nodes (0 on the CPU).
    pub host_device_bytes_per_request: f64,
    /// The process's CPU over the measured interval, per request (a real run of
    /// an in-process pipeline with a fixed `--duration`; `None` otherwise).
    pub cpu: Option<crate::cpu::RuntimeCpu>,
    /// The scheduler thread over the measured interval: its rounds and their CPU time, and
    /// how late its sleeps between ticks ended (what `baton simulate --tick-delays` reads).
    /// `None` where the target cannot tell (a remote server) and in a simulation.
    pub scheduler_ticks: Option<TickSummary>,
    /// Per tenant of the load (`--tenants`): its successful requests' latencies (left
    /// out of the JSON when the load names no tenants).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantLatency>,
}

/// One tenant's latencies at a point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TenantLatency {
    pub tenant: String,
    #[serde(flatten)]
    pub latency: Latency,
}

/// Builds a point's result from its windows: the last `reported` ones are merged.
pub fn point_result(
    policy: &str,
    mode: &str,
    load: f64,
    rows_per_request: usize,
    windows: &[Window],
    reported: usize,
    stable: Option<bool>,
) -> PointResult {
    let reported = reported.clamp(1, windows.len().max(1)).min(windows.len());
    let used = &windows[windows.len() - reported..];
    let mut tally = Tally::default();
    let mut elapsed = Duration::ZERO;
    for w in used {
        tally.merge(&w.tally);
        elapsed += w.elapsed;
    }
    let nodes = match (used.first(), used.last()) {
        (Some(first), Some(last)) => node_deltas(&first.nodes_start, &last.nodes_end),
        _ => Vec::new(),
    };
    let seconds = elapsed.as_secs_f64();
    let throughput = if seconds > 0.0 { tally.ok() as f64 / seconds } else { 0.0 };
    let copied: u64 = nodes.iter().map(|n| n.host_device_bytes).sum();
    let host_device_bytes_per_request = if tally.ok() > 0 { copied as f64 / tally.ok() as f64 } else { 0.0 };
    PointResult {
        policy: policy.to_string(),
        mode: mode.to_string(),
        load,
        seconds,
        requests: tally.ok(),
        errors: tally.errors,
        late_sends: tally.late_sends,
        mean_send_lag_us: if tally.sends > 0 { tally.send_lag_us as f64 / tally.sends as f64 } else { 0.0 },
        send_lags: tally.send_lags.classes(),
        send_cpu_us: 0.0,
        generator_realtime: false,
        throughput_rps: throughput,
        rows_per_s: throughput * rows_per_request as f64,
        latency: Latency::of(&tally.all),
        priority_latency: Latency::of(&tally.priority),
        others_latency: Latency::of(&tally.others),
        nodes,
        windows: windows
            .iter()
            .map(|w| WindowSummary { seconds: w.elapsed.as_secs_f64(), throughput_rps: w.throughput() })
            .collect(),
        reported_windows: reported,
        stable,
        ratio_to_raw: None,
        p50_minus_raw_us: None,
        raw_beside: None,
        host_device_bytes_per_request,
        cpu: None,
        scheduler_ticks: None,
        tenants: tally
            .tenants
            .iter()
            .map(|(tenant, h)| TenantLatency { tenant: tenant.clone(), latency: Latency::of(h) })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_times_give_the_rate_and_the_mean_at_the_buckets_middles() {
        let mut counts = Vec::new();
        for _ in 0..3 {
            log_buckets::record(&mut counts, 4000); // bucket [3840, 4096) ns
        }
        log_buckets::record(&mut counts, 1024); // bucket [1024, 1152) ns
        let s = DecisionTimesSummary::of(&counts, 2.0);
        assert_eq!(s.per_s, 2.0);
        assert!((s.mean_us - (3.0 * 3.968 + 1.088) / 4.0).abs() < 1e-9, "{}", s.mean_us);
        assert_eq!((s.p50_us, s.p99_us), (3.84, 3.84), "quantiles at their buckets' lower bounds");
        assert_eq!(s.buckets.len(), 2);
        assert_eq!(DecisionTimesSummary::of(&[], 2.0), DecisionTimesSummary::default(), "none: zeros");
    }

    fn stats(name: &str, executions: u64, rows: u64, tasks: u64, queue_ns: u64, compute_ns: u64) -> NodeStats {
        NodeStats {
            name: name.into(),
            executions,
            rows,
            tasks,
            failed_batches: 0,
            queue_ns,
            compute_ns,
            task_compute_ns: compute_ns,
            hand_on_ns: 0,
            hand_on_times: Vec::new(),
            placement_retries: 0,
            host_device_bytes: 0,
            stopped_batches: 0,
            stopped_ns: 0,
            batch_sizes: Vec::new(),
            wake_delays: Default::default(),
            queue_times: Default::default(),
            batch_times: Vec::new(),
            realtime_batch_times: Vec::new(),
            batch_cpu: Default::default(),
            spin_cpu: Default::default(),
        }
    }

    #[test]
    fn stability_needs_three_windows_within_ten_percent_of_their_mean() {
        assert!(!is_stable(&[100.0, 100.0], 3, 0.10), "fewer than 3 windows");
        assert!(is_stable(&[100.0, 100.0, 100.0], 3, 0.10));
        // mean 100: 91 and 109 are within 10%.
        assert!(is_stable(&[91.0, 100.0, 109.0], 3, 0.10));
        // mean 100: 88 is 12% below.
        assert!(!is_stable(&[88.0, 100.0, 112.0], 3, 0.10));
        // Only the last three count.
        assert!(is_stable(&[10.0, 500.0, 100.0, 101.0, 99.0], 3, 0.10));
        assert!(!is_stable(&[100.0, 101.0, 99.0, 500.0], 3, 0.10));
        assert!(!is_stable(&[0.0, 0.0, 0.0], 3, 0.10), "nothing done is not stable");
    }

    #[test]
    fn node_deltas_divide_differences_of_running_totals() {
        let start = [stats("a", 10, 100, 100, 5_000_000, 2_000_000), stats("b", 0, 0, 0, 0, 0)];
        let end = [stats("a", 30, 500, 500, 9_000_000, 6_000_000), stats("b", 0, 0, 0, 0, 0)];
        let d = node_deltas(&start, &end);
        assert_eq!(d[0].executions, 20);
        assert_eq!(d[0].rows, 400);
        assert_eq!(d[0].mean_batch, 20.0);
        // 4 ms of queueing over 400 tasks: 10 µs each.
        assert_eq!(d[0].mean_queue_us, 10.0);
        // 4 ms of compute over 20 batches: 200 µs each.
        assert_eq!(d[0].mean_compute_us, 200.0);
        // A node that never ran reports zeros, not NaN.
        assert_eq!((d[1].mean_batch, d[1].mean_queue_us, d[1].mean_compute_us), (0.0, 0.0, 0.0));
    }

    #[test]
    fn recorder_take_merges_shards_and_starts_again() {
        let r = Recorder::new(4);
        for i in 0..100 {
            r.record(i, 100 + i as u64, i % 10 == 0, true);
        }
        r.record(7, 5, false, false);
        let t = r.take();
        assert_eq!((t.ok(), t.priority.len(), t.errors), (100, 10, 1));
        assert_eq!(t.all.min(), 100);
        let t = r.take();
        assert_eq!((t.ok(), t.errors), (0, 0));
    }

    #[test]
    fn tenants_latencies_are_kept_apart_and_reported_per_point() {
        let r = Recorder::with_tenants(3, vec!["alice".into(), "bob".into()]);
        for i in 0..40u64 {
            let tenant = Some(usize::from(i % 4 == 0));
            r.record_sent(i as usize, 100 + i, crate::load::Sent { priority: false, tenant }, true);
        }
        r.record_sent(0, 7, crate::load::Sent { priority: false, tenant: Some(1) }, false);
        let window =
            Window { elapsed: Duration::from_secs(1), tally: r.take(), nodes_start: vec![], nodes_end: vec![] };
        let p = point_result("collaborative", "open", 40.0, 1, &[window], 1, None);
        let names: Vec<&str> = p.tenants.iter().map(|t| t.tenant.as_str()).collect();
        assert_eq!(names, ["alice", "bob"]);
        assert_eq!((p.tenants[0].latency.count, p.tenants[1].latency.count), (30, 10), "errors are not latencies");
        assert_eq!((p.tenants[1].latency.min_us, p.tenants[1].latency.max_us), (100, 136));
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["tenants"][1]["tenant"], "bob");
        assert_eq!(json["tenants"][1]["count"], 10);
        let plain = point_result("collaborative", "open", 40.0, 1, &[], 1, None);
        assert!(serde_json::to_value(&plain).unwrap().get("tenants").is_none(), "no tenants: no key");
    }

    #[test]
    fn point_result_reports_the_last_windows() {
        let nodes =
            |executions: u64| vec![stats("n", executions, executions * 2, executions * 2, 0, executions * 1000)];
        let window = |ok: u64, from: u64, to: u64| {
            let mut tally = Tally::default();
            for _ in 0..ok {
                tally.all.record(100).unwrap();
            }
            Window { elapsed: Duration::from_secs(1), tally, nodes_start: nodes(from), nodes_end: nodes(to) }
        };
        let windows = [window(50, 0, 10), window(100, 10, 20), window(100, 20, 30), window(100, 30, 40)];
        let p = point_result("dynamic", "closed", 4.0, 2, &windows, 3, Some(true));
        assert_eq!(p.requests, 300);
        assert_eq!(p.seconds, 3.0);
        assert_eq!(p.throughput_rps, 100.0);
        assert_eq!(p.rows_per_s, 200.0);
        assert_eq!(p.nodes[0].executions, 30);
        assert_eq!(p.nodes[0].mean_batch, 2.0);
        assert_eq!(p.windows.len(), 4);
        assert_eq!(p.latency.p50_us, 100);
    }
}
