//! The scheduler: decides which nodes run next, on ticks and on events.
//!
//! A decision ([`decision::Decider`], a plain function of the nodes' views and
//! the clock, which the simulator runs too) reads every node's pending counts
//! and busy workers, asks the
//! pipeline's [`select::NodeSelector`] for target nodes, marks each target
//! busy (so it holds its cost against the budget until its worker finishes)
//! and sends it one [`Instruction::RunBatch`] (at a node with worker groups,
//! on the channel of a group that has an idle worker and waiting tasks it
//! fits: see [`crate::node`]'s module docs).
//!
//! GPU nodes hold a slot of their device's budget instead of compute (the
//! device-budget protocol, `scheduler/devices.rs`).
//!
//! With `preempt_before` (collaborative rule), a decision also stops young
//! batches that keep waiting priority work from its node (the stop protocol,
//! `node/stop.rs`; which batch, [`young_limit_ns`]).
//!
//! Decisions are made on the scheduler thread every `tick_us`, and at once on
//! events: a priority task arrives, a node finishes a batch, or (with
//! `decide_on_arrival`) any task arrives at a node that has an idle worker.
//!
//! ## Who decides: the poke protocol
//! An event does not wait for the scheduler thread to wake up: the thread
//! that raised it *pokes* the scheduler, deciding itself if the decision lock
//! is free. Each poke first ORs its reason into `reasons`, then (after a
//! SeqCst fence) tries the lock. The lock holder decides while `reasons` is
//! non-zero (swapping it to zero each round), releases the lock, fences, and
//! looks at `reasons` once more, retrying if it is set. A poke whose try-lock
//! fails therefore never goes unseen: either the holder's swap or its final
//! look after unlocking sees the poke's reason (the two SeqCst fences order
//! "set reason, try lock" against "unlock, look at reasons"). Decisions
//! are serialized by the lock and never block a poking thread.

pub mod decision;
mod devices;
pub mod select;

use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::clock;
use crate::metrics::PipelineMetrics;
use crate::node::{Instruction, NodeState};
use crate::spec::PipelineSpec;
use crate::wake_delays::WakeClass;
use decision::{Decider, NodeView};
use select::NodeLoad;

/// Why a decision is wanted (bits of `Scheduler::reasons`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    Tick = 1,
    PriorityArrival = 2,
    NodeFinished = 4,
    Arrival = 8,
}

fn reason_names(bits: u8) -> String {
    let names: Vec<&str> = [
        (Reason::Tick, "tick"),
        (Reason::PriorityArrival, "priority-arrival"),
        (Reason::NodeFinished, "node-finished"),
        (Reason::Arrival, "arrival"),
    ]
    .iter()
    .filter(|(r, _)| bits & *r as u8 != 0)
    .map(|(_, n)| *n)
    .collect();
    names.join("+")
}

/// The (join node, slot, parent, join weight) terms of the join boost: every
/// input slot of a multi-input node that an edge from another node feeds.
fn join_boosts(spec: &PipelineSpec) -> Vec<(usize, usize, usize, f64)> {
    let mut terms = Vec::new();
    for (parent, node) in spec.nodes.iter().enumerate() {
        for route in &node.routes {
            for target in &route.targets {
                if let crate::spec::Target::Node { node: join, slot } = *target {
                    if spec.nodes[join].inputs.len() - spec.nodes[join].state.len() > 1 {
                        terms.push((join, slot, parent, spec.nodes[join].weight));
                    }
                }
            }
        }
    }
    terms
}

/// How long a batch of a node may have run and still be stopped for the node's
/// waiting priority work: `fraction` of the node's mean batch time, when
/// priority work waits there and no worker is free (`None` otherwise, and for
/// a node that has not run yet). A batch stopped that young has most of its
/// time still to run, which the priority task would otherwise wait out, and
/// loses at most that fraction of a batch's work.
pub(crate) fn young_limit_ns(load: &NodeLoad, fraction: f64) -> Option<u64> {
    let waits = load.priority_pending > 0 && !load.can_start && load.mean_batch_ns > 0;
    waits.then(|| (load.mean_batch_ns as f64 * fraction).min(u64::MAX as f64) as u64)
}

/// Tells a picked node to run one batch: marks a worker busy (and its group,
/// the one with an idle worker and the most tasks it fits, see `node`'s module
/// docs) and sends it `RunBatch`, stamped with the time and whether `contended`
/// (for its wake-up's record). Group counts change only under the decision
/// lock (+1) or by their workers (-1). Returns whether a worker was told.
fn tell_to_run(state: &NodeState, contended: bool) -> bool {
    let channel = if state.groups.is_empty() {
        &state.instructions
    } else {
        let Some(g) = state.group_to_run() else { return false };
        state.groups[g].busy.fetch_add(1, Ordering::AcqRel);
        &state.groups[g].instructions
    };
    state.busy.fetch_add(1, Ordering::AcqRel);
    state.metrics.picks.increment(1);
    // Cannot be full: the channel holds at most `workers` instructions (of the node,
    // or of the group) and `busy` (which counts them) was below that for a picked node.
    let _ = channel.try_send(Instruction::RunBatch { told_ns: clock::now_ns(), contended });
    true
}

/// Processors this process may run on (its affinity mask), at least 1.
fn usable_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Stops, at each node where priority work waits, at most one young batch that
/// holds no priority task (see [`young_limit_ns`] and `node/stop.rs`).
fn stop_young_batches(decider: &Decider, nodes: &[Arc<NodeState>], now_ns: u64) {
    for (n, limit_ns) in decider.young_limits() {
        if nodes[n].slots.iter().any(|slot| slot.stop_if_young(now_ns, limit_ns)) {
            tracing::trace!(target: "baton::scheduler", limit_ns, "stopped a young batch for priority work");
        }
    }
}

/// What the decision reads of `state` at `now_ns` (its atomics, without locks).
fn view(state: &NodeState, now_ns: u64) -> NodeView {
    NodeView {
        busy: state.busy(),
        pending: state.buffer.pending(),
        priority_pending: state.buffer.priority_pending(),
        waited_ns: state.buffer.oldest_wait_ns(now_ns),
        // With worker groups: some group has an idle worker and a waiting task it fits.
        group_can_start: (!state.groups.is_empty()).then(|| state.group_to_run().is_some()),
        executions: state.counters.executions.load(Ordering::Relaxed),
        compute_ns: state.counters.compute_ns.load(Ordering::Relaxed),
    }
}

pub(crate) struct Scheduler {
    /// The decision state (see [`decision`]), touched only under this lock.
    core: Mutex<Decider>,
    reasons: AtomicU8,
    /// Per node: workers, copied from the spec.
    workers: Vec<usize>,
    names: Vec<String>,
    /// Per node: most rows a worker stitches into one batch (1 without batching).
    pub batch_rows: Vec<usize>,
    pub decide_on_arrival: bool,
    /// How workers run in the background and outside it (the collaborative rule only; see `node::niceness`).
    pub thread_classes: crate::node::ThreadClasses,
    /// The compute budget, for the decision log.
    budget: f64,
    /// Whether decisions stop young batches for priority work (`preempt_before`).
    pub stops_young_batches: bool,
    tick: Duration,
    /// Processors the process may use: a worker told while this many are busy is contended.
    cores: usize,
    /// A selector that waits on time (the dynamic batcher): when the next node's queue delay runs out ([`clock::now_ns`]), or `u64::MAX`.
    next_due_ns: AtomicU64,
    /// The tick thread, woken early when a node falls due before its next tick.
    ticker: OnceLock<Thread>,
    /// How late the tick thread's timed sleeps end (see [`Scheduler::record_tick`]).
    tick_lateness: crate::wake_delays::WakeRecorder,
    /// The tick thread's rounds, and the CPU time its thread spent over them (see [`Scheduler::record_tick_cpu`]).
    tick_rounds: AtomicU64,
    tick_cpu_ns: AtomicU64,
    /// Whether the last decision left as many workers busy as the process has cores.
    cores_taken: AtomicBool,
    /// Each decision's wall time, by the poke that made it (see [`DecisionTimes`]).
    decisions_on_ticks: crate::log_buckets::AtomicCounts,
    decisions_on_finishes: crate::log_buckets::AtomicCounts,
    decisions_on_arrivals: crate::log_buckets::AtomicCounts,
    /// Pokes that found another thread deciding and left their reason to it.
    handed_over: AtomicU64,
    metrics: PipelineMetrics,
}

impl Scheduler {
    pub fn new(spec: &PipelineSpec, metrics: PipelineMetrics) -> Self {
        let s = &spec.scheduler;
        let decider = Decider::new(spec);
        let selector = decider.selector();
        Scheduler {
            batch_rows: spec.nodes.iter().map(|n| selector.batch_rows(n.max_batch)).collect(),
            decide_on_arrival: s.decide_on_arrival || selector.decides_on_every_arrival(),
            thread_classes: crate::node::ThreadClasses::of(s),
            stops_young_batches: decider.stops_young_batches(),
            core: Mutex::new(decider),
            reasons: AtomicU8::new(0),
            workers: spec.nodes.iter().map(|n| n.workers).collect(),
            names: spec.nodes.iter().map(|n| n.name.clone()).collect(),
            budget: spec.compute_budget,
            tick: Duration::from_micros(s.tick_us),
            cores: usable_cores(),
            next_due_ns: AtomicU64::new(u64::MAX),
            ticker: OnceLock::new(),
            tick_lateness: Default::default(),
            tick_rounds: AtomicU64::new(0),
            tick_cpu_ns: AtomicU64::new(0),
            cores_taken: AtomicBool::new(false),
            decisions_on_ticks: Default::default(),
            decisions_on_finishes: Default::default(),
            decisions_on_arrivals: Default::default(),
            handed_over: AtomicU64::new(0),
            metrics,
        }
    }

    /// Asks for a decision for `reason`; decides now on this thread unless another thread is deciding.
    pub fn poke(&self, reason: Reason, nodes: &[Arc<NodeState>]) {
        self.reasons.fetch_or(reason as u8, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let times = match reason {
            Reason::Tick => &self.decisions_on_ticks,
            Reason::NodeFinished => &self.decisions_on_finishes,
            Reason::PriorityArrival | Reason::Arrival => &self.decisions_on_arrivals,
        };
        loop {
            let Some(mut decider) = self.core.try_lock() else {
                self.handed_over.fetch_add(1, Ordering::Relaxed);
                return;
            };
            loop {
                let reasons = self.reasons.swap(0, Ordering::SeqCst);
                if reasons == 0 {
                    break;
                }
                let started = Instant::now();
                self.decide(&mut decider, reasons, nodes);
                let took = started.elapsed();
                times.record(took.as_nanos() as u64);
                self.metrics.decisions.increment(1);
                self.metrics.decision_seconds.record(took.as_secs_f64());
            }
            drop(decider);
            fence(Ordering::SeqCst);
            if self.reasons.load(Ordering::SeqCst) == 0 {
                return;
            }
        }
    }

    /// Whether an arrival at `node` should trigger a decision now.
    pub fn arrival_wants_decision(&self, node: usize, state: &NodeState, priority: bool) -> bool {
        priority || (self.decide_on_arrival && state.busy() < self.workers[node])
    }

    fn decide(&self, decider: &mut Decider, reasons: u8, nodes: &[Arc<NodeState>]) {
        let now_ns = clock::now_ns();
        let decision =
            decider.decide(now_ns, |n| view(&nodes[n], now_ns), |join, slot| nodes[join].joins.waiting_for(slot));
        if decision.due_ns < self.next_due_ns.swap(decision.due_ns, Ordering::AcqRel) {
            if let Some(ticker) = self.ticker.get() {
                ticker.unpark();
            }
        }
        // A worker told while as many workers are busy as the process has cores (those the
        // decision saw running, and those told before it) is contended: it may wait for a core.
        let mut busy = decision.running.nodes;
        for &n in decision.picked {
            busy += usize::from(tell_to_run(&nodes[n], busy >= self.cores));
        }
        self.cores_taken.store(busy >= self.cores, Ordering::Relaxed);
        self.log_decision(reasons, decision.loads, decision.picked, decision.running.compute);
        if self.stops_young_batches {
            stop_young_batches(decider, nodes, now_ns);
        }
    }

    /// Logs a decision: at debug level, each picked node with the figures it was picked on.
    fn log_decision(&self, reasons: u8, loads: &[NodeLoad], picked: &[usize], in_use: f64) {
        if !picked.is_empty() && tracing::enabled!(target: "baton::scheduler", tracing::Level::DEBUG) {
            let why: Vec<String> = picked
                .iter()
                .map(|&n| {
                    let l = &loads[n];
                    format!(
                        "{}(pending={} priority={} inference_priority={:.2} cost={})",
                        self.names[n],
                        l.pending,
                        l.priority_pending,
                        l.inference_priority(),
                        l.cost
                    )
                })
                .collect();
            tracing::debug!(target: "baton::scheduler", reason = %reason_names(reasons), in_use, budget = self.budget, picked = %why.join(", "), "decision");
        } else {
            tracing::trace!(target: "baton::scheduler", reason = %reason_names(reasons), in_use, "decision: nothing to run");
        }
    }

    /// Registers the tick thread (once).
    pub fn set_ticker(&self, thread: Thread) {
        let _ = self.ticker.set(thread);
    }

    /// Counts one timed sleep of the tick thread that ended `late_ns` after it was due, in
    /// the class of the workers' wake-ups ([`crate::wake_delays`]): contended when the last
    /// decision left every core busy. A sleep cut short by an unpark is not counted.
    pub fn record_tick(&self, late_ns: u64) {
        self.tick_lateness.record(late_ns, WakeClass::normal(self.cores_taken.load(Ordering::Relaxed)));
    }

    /// Counts one round of the tick thread (sleep, tick, retries) that took `cpu_ns` of its
    /// thread's CPU time: the wake-up, the decision, the pokes it sent.
    pub fn record_tick_cpu(&self, cpu_ns: u64) {
        self.tick_rounds.fetch_add(1, Ordering::Relaxed);
        self.tick_cpu_ns.fetch_add(cpu_ns, Ordering::Relaxed);
    }

    /// The tick thread's record so far (see [`TickRecord`]).
    pub fn ticks(&self) -> TickRecord {
        TickRecord {
            lateness: self.tick_lateness.snapshot(),
            rounds: self.tick_rounds.load(Ordering::Relaxed),
            cpu_ns: self.tick_cpu_ns.load(Ordering::Relaxed),
            decisions: DecisionTimes {
                on_ticks: self.decisions_on_ticks.snapshot(),
                on_finishes: self.decisions_on_finishes.snapshot(),
                on_arrivals: self.decisions_on_arrivals.snapshot(),
                handed_over: self.handed_over.load(Ordering::Relaxed),
            },
        }
    }

    /// How long the tick thread should sleep: the tick period, or less when a
    /// node falls due sooner (dynamic policy).
    pub fn sleep_before_next_tick(&self) -> Duration {
        let due = self.next_due_ns.load(Ordering::Acquire);
        if due == u64::MAX {
            return self.tick;
        }
        self.tick.min(Duration::from_nanos(due.saturating_sub(clock::now_ns())))
    }
}

/// What the scheduler recorded: how late the tick thread's timed sleeps ended (the classes of
/// [`crate::wake_delays`]: contended when its last decision left every core busy), its
/// rounds with the CPU time they took, and every decision's wall time ([`DecisionTimes`]).
/// A reader subtracts two records ([`TickRecord::since`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickRecord {
    pub lateness: crate::wake_delays::WakeDelays,
    pub rounds: u64,
    pub cpu_ns: u64,
    pub decisions: DecisionTimes,
}

/// Each decision's wall time (dense [`crate::log_buckets`] counts), by the poke that made it:
/// the tick thread's; a worker's when its batch ended (it has handed its outputs on and left
/// its node's busy count, and takes no next batch before the decision returns); an arrival's
/// (a submitter's, or a worker's that handed a priority task or a stream's next chunk on).
/// A decision holds the decision lock for its time, and its thread is taken from whatever it
/// was doing. `handed_over` counts the pokes that found the lock held and left their reason
/// to its holder, who decides again before it lets go (that decision counts in the holder's
/// class).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionTimes {
    pub on_ticks: Vec<u64>,
    pub on_finishes: Vec<u64>,
    pub on_arrivals: Vec<u64>,
    pub handed_over: u64,
}

impl DecisionTimes {
    /// What was recorded since `earlier` (a record of the same scheduler).
    pub fn since(&self, earlier: &DecisionTimes) -> DecisionTimes {
        DecisionTimes {
            on_ticks: crate::log_buckets::since(&self.on_ticks, &earlier.on_ticks),
            on_finishes: crate::log_buckets::since(&self.on_finishes, &earlier.on_finishes),
            on_arrivals: crate::log_buckets::since(&self.on_arrivals, &earlier.on_arrivals),
            handed_over: self.handed_over.saturating_sub(earlier.handed_over),
        }
    }
}

impl TickRecord {
    /// What was recorded since `earlier` (a record of the same runtime).
    pub fn since(&self, earlier: &TickRecord) -> TickRecord {
        TickRecord {
            lateness: self.lateness.since(&earlier.lateness),
            rounds: self.rounds.saturating_sub(earlier.rounds),
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            decisions: self.decisions.since(&earlier.decisions),
        }
    }

    /// CPU time per round, ns (`None` without rounds).
    pub fn cpu_ns_per_round(&self) -> Option<f64> {
        (self.rounds > 0).then(|| self.cpu_ns as f64 / self.rounds as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_young_for_a_fraction_of_the_mean_only_where_priority_work_waits_for_a_worker() {
        let load = NodeLoad { priority_pending: 1, can_start: false, mean_batch_ns: 1_000_000, ..NodeLoad::default() };
        assert_eq!(young_limit_ns(&load, 0.25), Some(250_000));
        assert_eq!(young_limit_ns(&NodeLoad { priority_pending: 0, ..load }, 0.25), None, "no priority work waits");
        assert_eq!(young_limit_ns(&NodeLoad { can_start: true, ..load }, 0.25), None, "a worker is free");
        assert_eq!(young_limit_ns(&NodeLoad { mean_batch_ns: 0, ..load }, 0.25), None, "the node has not run");
        assert_eq!(young_limit_ns(&load, 1e30), Some(u64::MAX), "a huge fraction saturates");
    }
}
