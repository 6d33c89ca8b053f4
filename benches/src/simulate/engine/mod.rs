//! The discrete-event core: one load point of one policy in virtual time.
//!
//! Events, in time order (ties in the order they were scheduled):
//! - `Arrive`: a request enters (a closed-loop client's next, or the open
//!   loop's next, which schedules the one after from the seeded gaps). Its
//!   inputs go to their nodes (through join tables) as the runtime's router
//!   sends them; an arrival that the runtime would poke the scheduler for
//!   (a priority task, or `decide_on_arrival` at a node with an idle worker)
//!   makes a decision at once.
//! - `Start`: a worker told to run (at the decision, `wake` earlier) takes its
//!   batch from the buffer; its work is a draw from the profile for the node
//!   and the batch's (padded) size.
//! - `Done`: a batch's work is finished and (`hop` later) its outputs are
//!   handed on; the worker is idle again, and the scheduler decides.
//! - `Tick` every `tick_us`, and `Due` when the selector said a node falls
//!   due (the dynamic batcher): a decision.
//! - `Stall` (with `--core-stalls`): a core stalls for a drawn length and the
//!   jobs on it stop (see [`Sim::stall`]); `StallEnd`: they run again.
//!
//! Decisions run the runtime's own [`Decider`] (its selector, device budgets,
//! join boost) on views of the virtual nodes.
//!
//! With CPU costs ([`super::cpu`]), a request's arrival and a batch's
//! hand-on are jobs of the runtime's own work on the same cores: the inputs
//! reach their nodes, and the outputs go on, when that job ends.
//!
//! Cores: running batches share `cores` processors (each batch wants one);
//! with more running than cores, each runs at `cores / running` speed
//! (processor sharing), or as the collaborative rule's thread classes share
//! them ([`super::cores`]), so a batch's end moves whenever another starts or
//! ends. A running batch holds its pending end (time and sequence number, as
//! an event would), not the event queue: the loop takes whichever comes first,
//! the queue's next event or the earliest end, so a moved end leaves nothing
//! stale behind.
//!
//! This file holds the event loop and the state. Beside it: [`setup`] (what a
//! point derives from the pipeline before it starts), [`sends`] (the load's
//! sends and a request's entry), [`requests`] (a request's way through the
//! nodes: delivery, joins, streams' gates, routes, answers), [`workers`]
//! (decisions, the told workers and their batches' work, a job's end),
//! [`sharing`] (the running jobs' shares of the cores and their ends),
//! [`stalls`] (the cores' stalls), [`idle_gaps`] (what a node's idle gap adds
//! to its batch), [`generator_run`] (the generator's run holding a core) and
//! [`placement`] (jobs on the cores' own queues).

mod generator_run;
mod idle_gaps;
mod placement;
mod requests;
mod sends;
mod setup;
mod sharing;
mod stalls;
mod whole_cores;
mod workers;

use sends::SendQueue;
use setup::{efficient_rows, entry_nodes, padded_sizes, pinned_cores, sim_nodes, spin_ns};

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use baton::scheduler::decision::Decider;
use baton::{NodeStats, PipelineSpec};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::cores::{Class, Classes};
use super::cpu::{CpuCosts, Job, Sender};
use super::durations::Durations;
use super::nodes::{SimNode, SimTask};
use super::sessions::Send;
use super::streams::{StreamEvent, Streams};
use crate::load::{Arrivals, InterArrival, LoadShape};
use crate::measure::{Recorder, Tally, Window};

/// The measured costs the model adds to the profile's batch times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Terms {
    /// From a decision to its worker's start (the worker's wake-up), ns.
    pub wake_ns: u64,
    /// The same for a worker whose batch runs at the real-time policy, which preempts any
    /// normal thread, ns.
    pub realtime_wake_ns: u64,
    /// From a batch's end to its outputs at the next nodes or the client (the hand-off), ns.
    pub hop_ns: u64,
    /// The worker is free once its hand-on ends; `hop_ns` delays the outputs alone.
    pub hop_frees_worker: bool,
    /// Processors the batches share.
    pub cores: f64,
    /// The runtime's own CPU per request and per batch, charged on the cores.
    pub cpu: CpuCosts,
    /// Profile samples above this Tukey fence are dropped ([`super::outliers`]).
    pub fence: Option<f64>,
    /// The OS's time slice, ns: a worker woken into the normal class while every core is
    /// taken waits a uniform draw of up to this long before its batch starts (0: never).
    pub slice_ns: u64,
    /// A worker told within its node's `idle_spin_us` of going idle is still spinning for
    /// work and, with a core free, takes it at once: no wake-up term (the one `wake_ns`
    /// only; recorded wake-ups hold both kinds).
    pub spin_wakes: bool,
    /// The load generator's thread holds a core while it runs (from its first send after a
    /// sleep until its queue is empty): its sends take that core whole, and a job on it stays
    /// there until the run ends, whatever the other cores do ([`Sim::hold_for_generator`]).
    pub generator_holds_core: bool,
    /// Each job runs on one core's queue, as the kernel runs threads ([`super::core_queues`]),
    /// not on a share of one pool of cores.
    pub core_queues: bool,
    /// Each running job holds a whole core or waits for the first that frees
    /// ([`whole_cores`]), not a share of one pool of cores.
    pub whole_cores: bool,
    /// A stall also holds the idle threads on its core ([`Sim::stall`]).
    pub stalls_hold_idle: bool,
}

impl Terms {
    /// The hop split at the handoff, ns: the part that holds the worker (all of it) and
    /// the part on the outputs' way after it (none), or with `hop_frees_worker` the reverse.
    pub fn hop_split_ns(&self) -> (u64, u64) {
        if self.hop_frees_worker {
            (0, self.hop_ns)
        } else {
            (self.hop_ns, 0)
        }
    }
}

/// An idle worker of a node.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct IdleWorker {
    /// When it went idle, virtual ns (0: idle since the start).
    since: u64,
    /// A stall caught it spinning on the stalled core: its next batch starts no earlier
    /// than this (`Terms::stalls_hold_idle`; 0: none did).
    held_until: u64,
}

/// How requests arrive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SimLoad {
    Closed(usize),
    Open { rate: f64, arrivals: Arrivals },
}

/// One point to simulate.
#[derive(Clone, Copy, Debug)]
pub struct PointSetup {
    pub load: SimLoad,
    pub rows: usize,
    pub priority_fraction: f64,
    pub seed: u64,
    pub warmup_ns: u64,
    pub duration_ns: u64,
    /// With a load generator thread (`send_ns`): latency counts from each request's
    /// scheduled time, not from its send (as `baton bench --latency-from-schedule`).
    pub latency_from_schedule: bool,
    /// With a load generator thread: its sends run at the real-time policy above the
    /// workers' (`baton bench --generator-policy realtime`), else at the normal one.
    pub generator_realtime: bool,
    /// With a load generator thread at the normal policy: its nice value
    /// (`baton bench --generator-nice`).
    pub generator_nice: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A request arrives (closed loop: from this client).
    Arrive {
        client: Option<usize>,
    },
    /// A told worker wakes (`told_ns`: when the decision told it).
    Start {
        node: usize,
        told_ns: u64,
    },
    /// A worker that waited for a core (see [`Terms::slice_ns`]) takes its batch.
    Woken {
        node: usize,
        told_ns: u64,
    },
    /// A batch's outputs are handed on, `hop` after its end.
    Handoff {
        batch: usize,
    },
    /// A batch's outputs reach the next nodes, its node's route time after its hand-off.
    Route {
        batch: usize,
    },
    Tick,
    Due,
    /// The measured interval begins.
    Measure,
    /// A core stalls (`--core-stalls`).
    Stall {
        core: usize,
    },
    /// A core's stall may end (a later stall may have lengthened it).
    StallEnd,
    /// The generator's thread wakes from its sleep until a send was due.
    GeneratorWakes,
    /// Under core queues: the kernel's tick moves waiting jobs to idle cores.
    Balance,
}

struct Req {
    /// What was sent: its kind, chunk, priority, when, whether it is reported.
    send: Send,
    outputs_left: usize,
    client: Option<usize>,
    /// Answered with an error (a refused chunk): its other work is dropped, its slot never reused.
    failed: bool,
}

/// A job in flight on the cores: a node's batch, or the runtime's own work.
struct Batch {
    job: Job,
    node: usize,
    tasks: Vec<SimTask>,
    rows: usize,
    /// Work left at full speed, ns.
    left: f64,
    /// Its whole work at full speed, ns (what a runtime thread's CPU clock would count).
    work_ns: u64,
    /// When it started, virtual ns (its compute time runs from here to its end).
    started_ns: u64,
    /// Its pending end: (virtual ns, sequence number), ordered as the events are.
    end: (u64, u64),
    /// The speed its pending end was scheduled at (NaN before the first).
    speed: f64,
    /// Its thread class (how it shares the cores).
    class: Class,
    /// The core its thread is pinned to (a pinned worker's batch or hand-on), if any.
    core: Option<usize>,
    /// It makes no progress before this, virtual ns: its core stalled (`--core-stalls`),
    /// or `u64::MAX` while it waits behind the generator's run on its core.
    frozen_until: u64,
    /// It waits behind the generator's run (`Terms::generator_holds_core`).
    behind_generator: bool,
    /// Its core and its place in that core's order (`Terms::core_queues`), or the core it
    /// last ran on and its place in the order of the whole cores (`Terms::whole_cores`).
    placed: Option<(usize, u64)>,
}

impl Batch {
    /// A job of the runtime's own work of `work` ns (no node, no tasks), run by a
    /// thread of class `class`.
    fn runtime(job: Job, work: u64, now: u64, class: Class) -> Batch {
        Batch {
            job,
            node: usize::MAX,
            tasks: Vec::new(),
            rows: 0,
            left: work as f64,
            work_ns: work,
            started_ns: now,
            end: (u64::MAX, u64::MAX),
            speed: f64::NAN,
            class,
            core: None,
            frozen_until: 0,
            behind_generator: false,
            placed: None,
        }
    }

    /// The same job on the pinned `core`.
    fn on(self, core: Option<usize>) -> Batch {
        Batch { core, ..self }
    }

    fn frozen(&self, now: u64) -> bool {
        self.frozen_until > now
    }

    fn is_generator_send(&self) -> bool {
        matches!(self.job, Job::Send { from: Sender::Generator })
    }

    /// Under core queues, its place in its core's order: a send of the generator at nice 0
    /// or real-time preempts the job running there; one at a higher nice waits its turn.
    fn run_key(&self) -> super::core_queues::RunKey {
        let (_, seq) = self.placed.expect("a job placed on a core");
        let preempts = self.is_generator_send() && self.class.weight >= Class::PLAIN.weight;
        super::core_queues::run_key(self.class, preempts, seq)
    }
}

/// The simulation of one point.
pub struct Sim<'a> {
    spec: &'a PipelineSpec,
    durations: &'a Durations,
    /// Per node: the factor on its normal-class batches at this point's load (`--sparse-stretch`).
    sparse: Vec<f64>,
    /// The time the cores sat idle since the start, ns of the whole machine (an idle
    /// core counts its share, 1 / cores): the integral of the cores no job ran on.
    idle_ns: f64,
    /// `idle_ns` as the measured interval started.
    idle_ns_at_measure: f64,
    /// Like `idle_ns`, less the idle workers' spins for work: the cores halted.
    halted_ns: f64,
    /// Per node: `halted_ns` when its idle gap started (`None`: none has run), and how
    /// many of its batches compute now (`--idle-gaps`).
    halted_ns_at_end: Vec<Option<f64>>,
    computing: Vec<usize>,
    /// Per node: when the worker of its last batch parks, while that is still ahead of
    /// the cores' last share (`shared_at`): its spin for work keeps its core awake and
    /// its weights cached, so the node's idle gap starts there.
    parks_at: Vec<Option<u64>>,
    /// Per node: its idle workers, the latest idle last; a told worker is the one idle the
    /// shortest time (a spinning worker takes the instruction first).
    idle_workers: Vec<Vec<IdleWorker>>,
    /// Per node: how long its idle workers spin before they park, ns (0: they park at
    /// once). A spinning worker keeps its core awake (the idle gaps); it takes an
    /// instruction at once only under `spin_wakes`.
    spin_ns: Vec<u64>,
    terms: Terms,
    decider: Decider,
    nodes: Vec<SimNode>,
    /// Per node: the batch size each row count is padded to.
    padded: Vec<Vec<usize>>,
    /// Per node: the rows its engine runs take at most (`piece_rows`), if it runs batches in pieces.
    pieces: Vec<Option<usize>>,
    entry: Vec<bool>,
    decide_on_arrival: bool,
    tick_ns: u64,
    /// The time of the last tick, when no tick is scheduled because no task
    /// waited then ([`Sim::queue`] schedules the next one).
    tick_parked: Option<u64>,
    /// Whether the last decision left as many workers busy as there are cores (the class
    /// of the next tick's lateness).
    cores_taken: bool,
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    requests: Vec<Option<Req>>,
    free: Vec<usize>,
    /// Requests admitted and not yet answered (the runtime's `max_in_flight` permits held).
    in_flight: usize,
    /// The bounded entries, `(input, node, max_queue)` (see `PipelineSpec::entry_limits`).
    entry_limits: Vec<(usize, usize, usize)>,
    batches: Vec<Option<Batch>>,
    free_batches: Vec<usize>,
    running: Vec<usize>,
    /// When the running batches' `left` was last brought up to date.
    shared_at: u64,
    rng: StdRng,
    gaps: Option<InterArrival>,
    open_i: u64,
    /// Closed loop: each client's next request number.
    client_next: Vec<u64>,
    setup: PointSetup,
    recorder: Recorder,
    measuring: bool,
    last_due: u64,
    take_buffer: Vec<SimTask>,
    streams: Streams,
    sends: Vec<Send>,
    /// The load generator's sends (`send_ns` > 0, open loop) and the closed loop's
    /// clients' (`client_send_ns` > 0).
    generator: SendQueue,
    clients: SendQueue,
    classes: Classes,
    /// Each running batch's speed (in `running`'s order) since the last reschedule.
    speeds: Vec<f64>,
    /// Each running batch's class (in `running`'s order), rebuilt at each reschedule.
    running_classes: Vec<Class>,
    /// The speeds of the running batches not frozen, before they are merged into `speeds`.
    unfrozen_speeds: Vec<f64>,
    /// The cores running pinned jobs (a buffer of `reschedule`'s).
    pinned_cores: Vec<usize>,
    /// Per node: the core its workers are pinned to, if one (as the model numbers cores).
    pins: Vec<Option<usize>>,
    /// Per core of the model: until when it stalls (`--core-stalls`), virtual ns.
    stalled_until: Vec<u64>,
    /// The stalls' own draws, apart from the rest's.
    stall_rng: StdRng,
    /// Whether the generator's thread runs now and holds a core (`Terms::generator_holds_core`).
    generator_running: bool,
    /// The draws of which job the generator's run holds off its core, and of the cores jobs
    /// are placed on, apart from the rest's.
    hold_rng: StdRng,
    /// Under `core_queues` or `whole_cores`: the jobs placed so far; under `core_queues` the
    /// core the generator's thread ran on last.
    placed_seq: u64,
    generator_core: Option<usize>,
}

impl<'a> Sim<'a> {
    pub fn new(spec: &'a PipelineSpec, durations: &'a Durations, terms: Terms, setup: PointSetup) -> Self {
        let decider = Decider::new(spec);
        let selector = decider.selector();
        let decide_on_arrival = spec.scheduler.decide_on_arrival || selector.decides_on_every_arrival();
        let mut nodes = sim_nodes(spec, selector);
        for (n, node) in nodes.iter_mut().enumerate() {
            if spec.nodes[n].efficient_batches {
                node.batch_rows = efficient_rows(durations, n, node.batch_rows);
            }
        }
        let padded = padded_sizes(spec, &nodes, setup.rows);
        let entry = entry_nodes(spec);
        let gaps = match setup.load {
            SimLoad::Open { rate, arrivals } => Some(InterArrival::new(rate, arrivals, setup.seed)),
            SimLoad::Closed(_) => None,
        };
        Sim {
            spec,
            durations,
            sparse: (0..spec.nodes.len()).map(|n| durations.sparse_factor(n, &setup.load)).collect(),
            idle_ns: 0.0,
            idle_ns_at_measure: 0.0,
            halted_ns: 0.0,
            halted_ns_at_end: vec![None; spec.nodes.len()],
            computing: vec![0; spec.nodes.len()],
            parks_at: vec![None; spec.nodes.len()],
            idle_workers: spec.nodes.iter().map(|n| vec![IdleWorker::default(); n.workers]).collect(),
            spin_ns: spin_ns(spec),
            terms,
            decider,
            nodes,
            padded,
            pieces: spec
                .nodes
                .iter()
                .map(|n| {
                    n.stages.iter().find(|st| !st.is_function()).and_then(|st| st.request.batch_sizes.piece_rows())
                })
                .collect(),
            entry,
            decide_on_arrival,
            tick_ns: spec.scheduler.tick_us.max(1) * 1000,
            tick_parked: None,
            cores_taken: false,
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            requests: Vec::new(),
            free: Vec::new(),
            in_flight: 0,
            entry_limits: spec.entry_limits(),
            batches: Vec::new(),
            free_batches: Vec::new(),
            running: Vec::new(),
            shared_at: 0,
            rng: StdRng::seed_from_u64(setup.seed ^ 0x005e_ed0f_d0a7_10e5),
            gaps,
            open_i: 0,
            client_next: match setup.load {
                SimLoad::Closed(c) => (0..c.max(1) as u64).map(|c| c.wrapping_mul(7919)).collect(),
                SimLoad::Open { .. } => Vec::new(),
            },
            setup,
            recorder: Recorder::new(1),
            measuring: false,
            last_due: u64::MAX,
            take_buffer: Vec::new(),
            streams: Streams::new(spec, LoadShape::plain(setup.priority_fraction), &[], false),
            sends: Vec::new(),
            generator: SendQueue::default(),
            clients: SendQueue::default(),
            classes: Classes::new(spec),
            speeds: Vec::new(),
            running_classes: Vec::new(),
            unfrozen_speeds: Vec::new(),
            pinned_cores: Vec::new(),
            pins: pinned_cores(spec, terms.cores),
            stalled_until: vec![0; terms.cores.ceil().max(1.0) as usize],
            stall_rng: StdRng::seed_from_u64(setup.seed ^ 0x0057_a11e_d0c0_4e55),
            generator_running: false,
            hold_rng: StdRng::seed_from_u64(setup.seed ^ 0x0060_1d5c_0a3e_0001),
            placed_seq: 0,
            generator_core: None,
        }
    }

    /// Sends requests as `streams` plans them (stream chunks, a mixed load, tenants).
    pub fn with_streams(mut self, streams: Streams) -> Self {
        self.recorder = Recorder::with_tenants(1, streams.tenant_names());
        self.streams = streams;
        self
    }

    /// Runs the point; also returns the streams' trace (kept if `with_streams` asked for it).
    pub fn run_traced(mut self) -> (Window, Vec<StreamEvent>) {
        let window = self.run_loop();
        (window, self.streams.take_trace())
    }

    /// Every node's totals, as the runtime's node statistics.
    fn stats(&self) -> Vec<NodeStats> {
        self.nodes.iter().zip(&self.spec.nodes).map(|(s, n)| s.stats(&n.name)).collect()
    }

    fn at(&mut self, time: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((time, self.seq, ev)));
    }

    /// Runs the point: warm-up, then the measured interval; returns its window.
    pub fn run(self) -> Window {
        self.run_busy().0
    }

    /// Like [`Sim::run`], with the core time the model's jobs took over the measured
    /// interval, ns (batches, the runtime's CPU jobs and the sends; what a real run reads
    /// as its process's CPU time).
    pub fn run_busy(mut self) -> (Window, u64) {
        let window = self.run_loop();
        self.now = self.setup.warmup_ns + self.setup.duration_ns;
        let cores = self.terms.cores;
        let idle_core_ns = (self.idle_ns_now() - self.idle_ns_at_measure) * cores;
        let busy = (window.elapsed.as_nanos() as f64 * cores - idle_core_ns).max(0.0);
        (window, busy.round() as u64)
    }

    fn run_loop(&mut self) -> Window {
        match self.setup.load {
            SimLoad::Closed(c) => {
                for client in 0..c.max(1) {
                    self.at(0, Ev::Arrive { client: Some(client) });
                }
            }
            SimLoad::Open { .. } => self.at(0, Ev::Arrive { client: None }),
        }
        self.at(self.tick_ns, Ev::Tick);
        self.at(self.setup.warmup_ns, Ev::Measure);
        for core in 0..self.stalled_until.len() {
            self.next_stall(core);
        }
        if self.terms.core_queues {
            self.at(super::core_queues::BALANCE_NS, Ev::Balance);
        }
        let end = self.setup.warmup_ns + self.setup.duration_ns;
        let mut start_stats = Vec::new();
        loop {
            let queued = self.events.peek().map(|Reverse((time, seq, _))| (*time, *seq));
            // The next thing to happen: a running batch's end, or the queue's next event.
            let (time, ending) = match (queued, self.earliest_end()) {
                (None, None) => break,
                (Some(q), Some((e, id))) if e < q => (e.0, Some(id)),
                (None, Some((e, id))) => (e.0, Some(id)),
                (Some(q), _) => (q.0, None),
            };
            if time >= end {
                break;
            }
            self.now = time;
            if let Some(id) = ending {
                self.done(id);
                continue;
            }
            let Some(Reverse((_, _, ev))) = self.events.pop() else { break };
            match ev {
                Ev::Arrive { client } => self.arrive(client),
                Ev::GeneratorWakes => self.generator_wakes(),
                Ev::Start { node, told_ns } => self.start(node, told_ns),
                Ev::Woken { node, told_ns } => self.take_and_run(node, told_ns),
                Ev::Handoff { batch } => self.handoff(batch),
                Ev::Route { batch } => {
                    self.route(batch);
                    self.decide();
                }
                Ev::Tick => {
                    // With the tick thread's CPU modelled, its ticks go on whatever waits, as the
                    // runtime's do; without, a tick that finds nothing waiting parks them.
                    let costs = self.terms.cpu.tick_ns > 0;
                    if costs {
                        self.run_job(Batch::runtime(Job::Beside, self.terms.cpu.tick_ns, self.now, Class::PLAIN));
                    }
                    let pending = self.nodes.iter().any(|n| n.pending() > 0);
                    if pending {
                        self.decide();
                    }
                    if pending || costs {
                        let late = self.tick_late_ns();
                        self.at(time + self.tick_ns + late, Ev::Tick);
                    } else {
                        self.tick_parked = Some(time);
                    }
                }
                Ev::Due => self.decide(),
                Ev::Stall { core } => self.stall(core),
                Ev::StallEnd => self.stall_end(),
                Ev::Balance => {
                    self.balance();
                    self.at(time + super::core_queues::BALANCE_NS, Ev::Balance);
                }
                Ev::Measure => {
                    self.recorder.take();
                    self.measuring = true;
                    start_stats = self.stats();
                    self.idle_ns_at_measure = self.idle_ns_now();
                }
            }
        }
        let tally: Tally = if self.measuring { self.recorder.take() } else { Tally::default() };
        Window {
            elapsed: std::time::Duration::from_nanos(self.setup.duration_ns),
            tally,
            nodes_start: if start_stats.is_empty() { self.stats() } else { start_stats },
            nodes_end: self.stats(),
        }
    }
}
