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
//! Beside this file: [`sharing`] (the running jobs' shares of the cores and
//! their ends), [`stalls`] (the cores' stalls), [`idle_gaps`] (what a node's
//! idle gap adds to its batch), [`generator_run`] (the generator's run holding
//! a core) and [`placement`] (jobs on the cores' own queues).

mod generator_run;
mod idle_gaps;
mod placement;
mod sharing;
mod stalls;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use baton::scheduler::decision::{Decider, NodeView};
use baton::scheduler::select::NodeSelector;
use baton::spec::Target;
use baton::{NodeStats, PipelineSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::cores::{Class, Classes};
use super::cpu::{CpuCosts, Job, Sender};
use super::durations::Durations;
use super::nodes::{SimNode, SimTask, TenantQueues};
use super::sessions::Send;
use super::streams::{Entry, StreamEvent, Streams};
use crate::load::{open_loop_sender, Arrivals, InterArrival, LoadShape, Sent};
use crate::measure::{Recorder, Tally, Window};

/// The measured costs the model adds to the profile's batch times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Terms {
    /// From a decision to its worker's start (the worker's wake-up), ns.
    pub wake_ns: u64,
    /// From a batch's end to its outputs at the next nodes or the client (the hand-off), ns.
    pub hop_ns: u64,
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
    /// Its core and its place in that core's order (`Terms::core_queues`).
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

/// Per node: how long its idle workers spin for work before they park, ns; workers at
/// the real-time policy never spin.
fn spin_ns(spec: &PipelineSpec) -> Vec<u64> {
    let spins = !Classes::new(spec).realtime_workers();
    spec.nodes.iter().map(|n| if spins { n.idle_spin_us * 1000 } else { 0 }).collect()
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
    /// Per node: when each of its idle workers went idle (0: idle since the start), the
    /// latest last; a told worker is the one idle the shortest time (a spinning worker
    /// takes the instruction first).
    idle_workers_since: Vec<Vec<u64>>,
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
    /// Under `core_queues`: the jobs placed so far, and the core the generator's thread ran on last.
    placed_seq: u64,
    generator_core: Option<usize>,
}

/// Each node's buffer state at the start, batching as the runtime's selector and policy say.
fn sim_nodes(spec: &PipelineSpec, selector: &dyn NodeSelector) -> Vec<SimNode> {
    let collaborative = spec.scheduler.policy == baton::BatchingPolicy::Collaborative;
    spec.nodes
        .iter()
        .map(|n| {
            let slots = n.inputs.len() - n.state.len();
            SimNode {
                batch_rows: selector.batch_rows(n.max_batch),
                priority_rows: if collaborative { n.priority_max_batch } else { usize::MAX },
                priority_alone: collaborative && spec.scheduler.separate_priority_batches,
                waiting: vec![0; n.inputs.len()],
                full_mask: if slots > 1 { (1u64 << n.inputs.len()) - 1 } else { 0 },
                fair: TenantQueues::new(&spec.fairness),
                ..SimNode::default()
            }
        })
        .collect()
}

/// The cap an `efficient_batches` node's workers settle on: of their size classes
/// ([`baton::spec::NodeSpec::efficient_batch_classes`]), the size whose median batch (the
/// profile's, with the node's compute terms) costs least per row. The runtime's workers
/// measure it on their own batches and take the other sizes now and then to see them again;
/// the model takes the size they settle on from the start.
fn efficient_rows(durations: &Durations, node: usize, batch_rows: usize) -> usize {
    let per_row = |rows: usize| durations.median_us(node, rows) / rows as f64;
    baton::spec::NodeSpec::efficient_batch_classes(batch_rows)
        .into_iter()
        .min_by(|&a, &b| per_row(a).total_cmp(&per_row(b)))
        .unwrap_or(batch_rows)
}

/// Per node: the batch size each row count (0 to its batch rows, at least `rows`) is padded to.
fn padded_sizes(spec: &PipelineSpec, nodes: &[SimNode], rows: usize) -> Vec<Vec<usize>> {
    spec.nodes
        .iter()
        .zip(nodes)
        .map(|(n, s)| {
            let sizes = n.stages.iter().find(|st| !st.is_function()).map(|st| st.request.batch_sizes.clone());
            (0..=s.batch_rows.max(rows)).map(|r| sizes.as_ref().map_or(r, |b| b.padded(r))).collect()
        })
        .collect()
}

/// Per node: whether a pipeline input feeds it.
fn entry_nodes(spec: &PipelineSpec) -> Vec<bool> {
    let mut entry = vec![false; spec.nodes.len()];
    for input in &spec.inputs {
        for t in &input.targets {
            if let Target::Node { node, .. } = *t {
                entry[node] = true;
            }
        }
    }
    entry
}

/// Per node: the core all its workers are pinned to (`cores = [..]` naming one, or every
/// worker's the same), as the model's core of `cores` (the id modulo their count); `None`
/// where they are not pinned, or pinned to different cores.
fn pinned_cores(spec: &PipelineSpec, cores: f64) -> Vec<Option<usize>> {
    let count = cores.ceil().max(1.0) as usize;
    spec.nodes
        .iter()
        .map(|n| {
            let first = *n.cores.first()?;
            let one = (0..n.workers.max(1)).all(|i| n.cores[i % n.cores.len()] == first);
            one.then_some(first % count)
        })
        .collect()
}

/// Sends made one at a time (one thread's, or clients' in turn): the one running, with
/// its closed-loop client, and those waiting their turn, in order.
#[derive(Default)]
struct SendQueue {
    running: Option<(Option<usize>, Send)>,
    waiting: std::collections::VecDeque<(Option<usize>, Send)>,
    /// The generator's thread is waking from its sleep until a send was due: no send
    /// starts before [`Ev::GeneratorWakes`].
    waking: bool,
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
            idle_workers_since: spec.nodes.iter().map(|n| vec![0; n.workers]).collect(),
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
                Ev::GeneratorWakes => {
                    self.generator.waking = false;
                    self.next_send(Sender::Generator);
                }
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

    /// A client sends (a closed-loop client's next request, a session's next chunk),
    /// or the open loop's next request or session starts: the requests' inputs go to
    /// their nodes.
    fn arrive(&mut self, client: Option<usize>) {
        let mut sends = std::mem::take(&mut self.sends);
        let now = self.now;
        let client = match client {
            Some(c) => {
                match self.streams.sessions() {
                    Some(sessions) => sessions.send_chunk(c, now, &mut sends),
                    None => {
                        let (sender, n, i) = self.client_i(c);
                        sends.push(self.streams.bench_send(sender, n, i, now));
                    }
                }
                Some(c)
            }
            None => {
                let i = self.open_i;
                self.open_i += 1;
                let gap = self.gaps.as_mut().expect("open loop").next_gap();
                self.at(now + (gap * 1e9).round() as u64, Ev::Arrive { client: None });
                match self.streams.sessions() {
                    Some(sessions) => Some(sessions.open(now, &mut sends)),
                    None => {
                        let (sender, n) = open_loop_sender(i);
                        sends.push(self.streams.bench_send(sender, n, i, now));
                        None
                    }
                }
            }
        };
        let mut wants = false;
        let from = if client.is_some() { Sender::Clients } else { Sender::Generator };
        let queued = self.streams.sessions().is_none() && self.send_ns(from) > 0;
        let asleep = queued && {
            let q = self.sends_of(from);
            q.running.is_none() && q.waiting.is_empty() && !q.waking
        };
        for send in sends.drain(..) {
            if queued {
                self.sends_of(from).waiting.push_back((client, send));
            } else {
                wants |= self.submit(send, client);
            }
        }
        self.sends = sends;
        let wake_ns = self.terms.cpu.send_wake_ns;
        if asleep && from == Sender::Generator && wake_ns > 0 {
            // The generator slept until this send was due: it starts when the thread wakes.
            self.generator.waking = true;
            self.at(now + wake_ns, Ev::GeneratorWakes);
        } else if queued {
            self.next_send(from);
        }
        if wants {
            self.decide();
        }
    }

    fn sends_of(&mut self, from: Sender) -> &mut SendQueue {
        match from {
            Sender::Generator => &mut self.generator,
            Sender::Clients => &mut self.clients,
        }
    }

    fn send_ns(&self, from: Sender) -> u64 {
        match from {
            Sender::Generator => self.terms.cpu.send_ns,
            Sender::Clients => self.terms.cpu.client_send_ns,
        }
    }

    /// `from`'s next send starts, when none of its runs and one waits: a job on the cores,
    /// from whose start the request counts as sent (the generator's: unless latency counts
    /// from the schedule). The generator's runs in its class (`--generator-policy`), a
    /// client's at the normal one.
    ///
    /// The closed loop's clients send in turn too: a batch answers them together, and the
    /// real threads then wake and send one after another, which spreads their next requests
    /// (all at once, processor sharing would end their sends together, and every batch after
    /// the first would hold every client's). One at a time, not one per core: with a worker
    /// busy on one of two cores, that matched the real capacities at concurrency 16-32 of
    /// four pipelines of five (`docs/simulate.md`).
    fn next_send(&mut self, from: Sender) {
        let (now, from_schedule) = (self.now, self.setup.latency_from_schedule);
        let queue = self.sends_of(from);
        if queue.running.is_some() || queue.waking {
            return;
        }
        let Some((client, mut send)) = queue.waiting.pop_front() else { return };
        if client.is_some() || !from_schedule {
            send.sent_ns = now;
        }
        queue.running = Some((client, send));
        // A generator at a higher nice than the workers' does not preempt them: it shares.
        let holds = from == Sender::Generator && self.terms.generator_holds_core && self.setup.generator_nice <= 0;
        let class = match from {
            Sender::Generator if self.setup.generator_realtime || holds => Class::GENERATOR_REALTIME,
            Sender::Generator => Class::at_nice(self.setup.generator_nice),
            Sender::Clients => Class::PLAIN,
        };
        if holds && !self.generator_running {
            self.start_generator_run();
        }
        self.run_job(Batch::runtime(Job::Send { from }, self.send_ns(from), now, class));
    }

    /// A request arrives: its entry work runs on the cores (when the model has a
    /// cost for it), then its inputs go to their nodes. Whether it wants a decision now.
    fn submit(&mut self, send: Send, client: Option<usize>) -> bool {
        let reach = self.streams.reach(send.reach);
        let req = Req { send, outputs_left: reach.outputs, client, failed: false };
        let id = super::store(&mut self.requests, &mut self.free, req);
        match self.terms.cpu.enter_ns() {
            0 => self.enter(id),
            work if self.terms.cpu.off_path => {
                self.run_job(Batch::runtime(Job::Beside, work, self.now, Class::PLAIN));
                self.enter(id)
            }
            work => {
                self.run_job(Batch::runtime(Job::Enter { request: id }, work, self.now, Class::PLAIN));
                false
            }
        }
    }

    /// A request's inputs go to their nodes. Whether an arrival wants a decision.
    fn enter(&mut self, id: usize) -> bool {
        let reach = self.requests[id].as_ref().expect("a live request").send.reach;
        let carried = self.streams.reach(reach).inputs.clone();
        let mut wants = false;
        for input in (0..self.spec.inputs.len()).filter(|&k| carried[k]) {
            for t in 0..self.spec.inputs[input].targets.len() {
                wants |= self.send(id, self.spec.inputs[input].targets[t]);
            }
        }
        wants
    }

    /// Closed loop: client `c`'s sender number, its request count and the priority
    /// pattern's `i` of its next request (as `baton bench` counts: client `c`'s `i`
    /// starts at `c × 7919`).
    fn client_i(&mut self, c: usize) -> (u64, u64, u64) {
        let i = self.client_next[c];
        self.client_next[c] = i.wrapping_add(1);
        (c as u64, i.wrapping_sub((c as u64).wrapping_mul(7919)), i)
    }

    /// Sends one output (or input) of `request` to `target`; whether the arrival wants a decision.
    fn send(&mut self, request: usize, target: Target) -> bool {
        match target {
            Target::Node { node, slot } => self.deliver(node, slot, request),
            Target::Output(_) => {
                self.output(request);
                false
            }
            Target::State(_) => false,
        }
    }

    fn deliver(&mut self, node: usize, slot: usize, request: usize) -> bool {
        // Answered already (its outputs came before this route's): nothing runs for it.
        let Some(req) = self.requests[request].as_ref() else { return false };
        let (priority, stream) = (req.send.priority, req.send.stream);
        let tenant = self.streams.pipeline_tenant(req.send.tenant);
        if req.failed || !self.streams.reach(req.send.reach).runs[node] {
            return false;
        }
        let n = &mut self.nodes[node];
        if n.full_mask != 0 && !n.join(request, slot) {
            return false;
        }
        let priority = priority && (self.spec.scheduler.priority_follows_dag || self.entry[node]);
        let mut task = SimTask { request, rows: self.setup.rows, priority, enqueued_ns: self.now, tenant };
        if self.streams.gated(node) {
            match stream.map(|chunk| self.streams.enter(node, chunk, task)) {
                Some(Entry::Now(t)) => task = t,
                Some(Entry::Later) => return false,
                Some(Entry::Refused) | None => {
                    self.fail(request);
                    return false;
                }
            }
        }
        self.queue(node, task);
        priority || (self.decide_on_arrival && self.nodes[node].busy < self.spec.nodes[node].workers)
    }

    /// Puts `task` in `node`'s buffer. The ticks, parked while no task waited (a
    /// tick then decides nothing), resume on their grid: at the next multiple
    /// of the period after the parked one (now, if now is on the grid).
    fn queue(&mut self, node: usize, task: SimTask) {
        self.nodes[node].push(task);
        if let Some(parked) = self.tick_parked.take() {
            let tick = self.tick_ns;
            let next = if self.now > parked && self.now.is_multiple_of(tick) {
                self.now
            } else {
                (self.now / tick + 1) * tick
            };
            let late = self.tick_late_ns();
            self.at(next + late, Ev::Tick);
        }
    }

    /// How late the next tick comes after its period: drawn from the runtime's record
    /// (`--tick-delays`) in the class of the last decision (every core busy or not), else 0.
    fn tick_late_ns(&mut self) -> u64 {
        match &self.durations.ticks {
            Some(ticks) => {
                let (u, v) = (self.rng.random::<f64>(), self.rng.random::<f64>());
                ticks.draw_ns(self.cores_taken, u, v)
            }
            None => 0,
        }
    }

    /// Answers `request` with an error (a chunk its stateful node refused).
    fn fail(&mut self, request: usize) {
        let req = self.requests[request].as_mut().expect("a live request");
        if std::mem::replace(&mut req.failed, true) {
            return;
        }
        let (send, client) = (req.send, req.client);
        if self.measuring && send.recorded {
            let sent = Sent { priority: send.priority, tenant: send.tenant };
            self.recorder.record_sent(0, (self.now - send.sent_ns) / 1000, sent, false);
        }
        if let Some(c) = client {
            self.follow(c, send);
        }
    }

    /// Client `client`'s request `sent` was answered: a closed-loop client sends its
    /// next at once, a session its next chunk when due (an event: the answering
    /// batch's other outputs are handed on first).
    fn follow(&mut self, client: usize, sent: Send) {
        let now = self.now;
        let next = match self.streams.sessions() {
            None => Some(now),
            Some(sessions) => sessions.answered(client, &sent, now),
        };
        if let Some(at) = next {
            self.at(at, Ev::Arrive { client: Some(client) });
        }
    }

    /// One pipeline output of `request` is ready; the last answers it.
    fn output(&mut self, request: usize) {
        let req = self.requests[request].as_mut().expect("a live request");
        if req.failed {
            return;
        }
        req.outputs_left -= 1;
        if req.outputs_left > 0 {
            return;
        }
        let req = self.requests[request].take().expect("a live request");
        self.free.push(request);
        if self.measuring && req.send.recorded {
            let sent = Sent { priority: req.send.priority, tenant: req.send.tenant };
            self.recorder.record_sent(0, (self.now - req.send.sent_ns) / 1000, sent, true);
        }
        if let Some(c) = req.client {
            self.follow(c, req.send);
        }
    }

    /// A scheduling decision through the runtime's [`Decider`]: each pick marks a
    /// worker busy and starts its batch `wake` later.
    fn decide(&mut self) {
        let now = self.now;
        let nodes = &self.nodes;
        let decision = self.decider.decide(
            now,
            |n| {
                let s = &nodes[n];
                NodeView {
                    busy: s.busy,
                    pending: s.pending(),
                    priority_pending: s.priority.len(),
                    waited_ns: now.saturating_sub(s.oldest_ns()),
                    group_can_start: None,
                    executions: s.totals.executions,
                    compute_ns: s.totals.compute_ns,
                }
            },
            |join, slot| nodes[join].waiting[slot],
        );
        let due = decision.due_ns;
        let picked: Vec<usize> = decision.picked.to_vec();
        let running = decision.running.nodes;
        self.cores_taken = (running + picked.len()) as f64 >= self.terms.cores;
        // Each told worker is contended when as many workers are busy as there are cores
        // (those told before it in this decision included), as the runtime's scheduler counts.
        for (busy, n) in (running..).zip(picked) {
            let contended = busy as f64 >= self.terms.cores;
            // A spinning worker yields its core: with every core taken it waits for one as a
            // parked worker does.
            let spinning = self.told_while_spinning(n);
            let wake = if spinning && !contended { 0 } else { self.wake_ns(n, contended) };
            self.nodes[n].totals.wakes.record(wake, contended);
            self.nodes[n].busy += 1;
            self.at(now + wake, Ev::Start { node: n, told_ns: now });
        }
        if due != u64::MAX && due != self.last_due {
            self.last_due = due;
            self.at(due.max(now), Ev::Due);
        }
    }

    /// Tells the worker of `node` idle the shortest time: whether it still spins for work
    /// (`spin_wakes`; a node with recorded wake-ups draws from them, which hold both kinds).
    fn told_while_spinning(&mut self, node: usize) -> bool {
        let since = self.idle_workers_since[node].pop().unwrap_or(0);
        let recorded = self.durations.wakes.as_ref().is_some_and(|w| w.has(node));
        self.terms.spin_wakes
            && !recorded
            && self.spin_ns[node] > 0
            && since > 0
            && self.now - since <= self.spin_ns[node]
    }

    /// A worker of `node` goes idle: it spins for work, then parks.
    fn worker_idle(&mut self, node: usize) {
        self.nodes[node].busy -= 1;
        self.idle_workers_since[node].push(self.now);
        if self.spin_ns[node] > 0 {
            self.parks_at[node] = Some(self.now + self.spin_ns[node]);
        }
    }

    /// How long a worker of `node` told now takes to wake: drawn from the runtime's
    /// record of its class (`contended`: as many workers busy as cores, as the runtime's
    /// scheduler counts), or the one `wake` term for a node the record lacks.
    fn wake_ns(&mut self, node: usize, contended: bool) -> u64 {
        match &self.durations.wakes {
            Some(wakes) if wakes.has(node) => {
                let (u, v) = (self.rng.random::<f64>(), self.rng.random::<f64>());
                wakes.draw_ns(node, contended, u, v).unwrap_or(self.terms.wake_ns)
            }
            _ => self.terms.wake_ns,
        }
    }

    /// A told worker wakes: with every core taken, a worker of the normal class waits for
    /// a running thread's slice to end (a uniform draw up to `slice_ns`); a real-time one
    /// takes a core at once.
    fn start(&mut self, node: usize, told_ns: u64) {
        let slice = self.terms.slice_ns;
        if slice > 0
            && self.running.len() as f64 >= self.terms.cores
            && !self.classes.is_realtime(node, self.priority_waits(node))
        {
            let wait = (self.rng.random::<f64>() * slice as f64) as u64;
            self.at(self.now + wait, Ev::Woken { node, told_ns });
            return;
        }
        self.take_and_run(node, told_ns);
    }

    /// Whether priority work waits at `node`: in its buffer, or parked behind an earlier
    /// chunk of its stream (as the runtime's worker asks before it sets its batch's class).
    fn priority_waits(&self, node: usize) -> bool {
        !self.nodes[node].priority.is_empty() || self.streams.priority_parked(node) > 0
    }

    /// A worker told at `told_ns` takes its batch and starts it (or, finding nothing, is
    /// idle again).
    fn take_and_run(&mut self, node: usize, told_ns: u64) {
        let mut tasks = std::mem::take(&mut self.take_buffer);
        self.nodes[node].take(&mut tasks);
        if tasks.is_empty() {
            self.take_buffer = tasks;
            self.worker_idle(node);
            self.decide();
            return;
        }
        if self.streams.gated(node) {
            for t in &tasks {
                let chunk = self.requests[t.request].as_ref().and_then(|r| r.send.stream).expect("a chunk");
                self.streams.started(node, chunk, self.now);
            }
        }
        let rows: usize = tasks.iter().map(|t| t.rows).sum();
        let totals = &mut self.nodes[node].totals;
        for t in &tasks {
            totals.queue_ns += self.now - t.enqueued_ns;
            totals.queue_times.record(self.now - t.enqueued_ns, self.now - told_ns);
        }
        let class = self.classes.of(node, tasks.iter().any(|t| t.priority), self.priority_waits(node));
        let work = self.work_ns(node, rows, class.is_realtime()) + self.idle_extra_ns(node, class.is_realtime());
        self.computing[node] += 1;
        self.parks_at[node] = None;
        let batch = Batch {
            node,
            tasks: tasks.clone(),
            rows,
            core: self.pins[node],
            ..Batch::runtime(Job::Compute, work, self.now, class)
        };
        tasks.clear();
        self.take_buffer = tasks;
        self.run_job(batch);
    }

    /// A batch's work at full speed: one draw from the profile at its padded size, or with
    /// `piece_rows` one draw per piece (the runtime runs the pieces one after another);
    /// a normal-class batch's times the node's sparse factor at this load.
    fn work_ns(&mut self, node: usize, rows: usize, realtime: bool) -> u64 {
        let piece = self.pieces[node].filter(|&p| rows > p).unwrap_or(rows.max(1));
        let mut work = 0;
        for start in (0..rows.max(1)).step_by(piece) {
            let n = (rows - start).min(piece);
            let size = self.padded[node].get(n).copied().unwrap_or(n);
            work += self.durations.draw_ns(node, size, self.rng.random::<f64>(), realtime);
        }
        if realtime || self.sparse[node] == 1.0 {
            work
        } else {
            (work as f64 * self.sparse[node]).round() as u64
        }
    }

    /// A job ended: it frees its share of the cores. A batch's outputs go on
    /// `hop` after its hand-on work (if any); an enter job delivers its request.
    fn done(&mut self, id: usize) {
        self.share();
        self.running.retain(|&b| b != id);
        self.reschedule();
        let b = self.batches[id].as_ref().expect("a running batch");
        match b.job {
            Job::Compute => {
                let (node, rows, tasks, took) = (b.node, b.rows, b.tasks.len(), self.now - b.started_ns);
                let class = b.class;
                self.computing[node] -= 1;
                self.halted_ns_at_end[node] = Some(self.halted_ns);
                self.nodes[node].record_batch(rows, tasks, took, b.work_ns);
                let hand_on_ns = self.durations.hand_on_ns(node);
                let totals = &mut self.nodes[node].totals;
                totals.hand_on_ns += hand_on_ns;
                baton::log_buckets::record(&mut totals.hand_on_times, hand_on_ns);
                // The hand-on runs on the batch's worker thread, in its class.
                match self.terms.cpu.hand_on_ns(tasks) {
                    0 => self.at(self.now + self.hop_ns(node), Ev::Handoff { batch: id }),
                    work if self.terms.cpu.off_path => {
                        self.run_job(Batch::runtime(Job::Beside, work, self.now, class).on(self.pins[node]));
                        self.at(self.now + self.hop_ns(node), Ev::Handoff { batch: id });
                    }
                    work => {
                        let hand_on = Batch::runtime(Job::HandOn { batch: id }, work, self.now, class);
                        self.run_job(hand_on.on(self.pins[node]))
                    }
                }
            }
            Job::Enter { request } => {
                self.batches[id] = None;
                self.free_batches.push(id);
                if self.enter(request) {
                    self.decide();
                }
            }
            Job::HandOn { batch } => {
                self.batches[id] = None;
                self.free_batches.push(id);
                let node = self.batches[batch].as_ref().expect("a finished batch").node;
                self.at(self.now + self.hop_ns(node), Ev::Handoff { batch });
            }
            Job::Beside => {
                self.batches[id] = None;
                self.free_batches.push(id);
            }
            Job::Send { from } => {
                self.batches[id] = None;
                self.free_batches.push(id);
                let (client, send) = self.sends_of(from).running.take().expect("the request being sent");
                let wants = self.submit(send, client);
                self.next_send(from);
                if from == Sender::Generator && self.generator_running && self.generator.running.is_none() {
                    self.end_generator_run();
                }
                if wants {
                    self.decide();
                }
            }
        }
    }

    /// From a batch of `node`'s end (and its hand-on job's, with CPU costs) to its outputs
    /// at the next nodes or the client: the node's hand-on time and the hop.
    fn hop_ns(&self, node: usize) -> u64 {
        self.durations.hand_on_ns(node) + self.terms.hop_ns
    }

    /// A batch is handed off: its worker is idle again and the scheduler decides (the
    /// runtime's node-finished poke); its outputs reach the next nodes (and answer their
    /// clients) now, or with a route time (`--route-us`, for a real-time batch
    /// `--realtime-route-us` where the node has one) that much later.
    fn handoff(&mut self, id: usize) {
        let batch = self.batches[id].as_ref().expect("a finished batch");
        let (node, realtime) = (batch.node, batch.class.is_realtime());
        match self.durations.route_ns(node, realtime) {
            0 => self.route(id),
            route => self.at(self.now + route, Ev::Route { batch: id }),
        }
        self.worker_idle(node);
        self.decide();
    }

    /// A handed-off batch's outputs reach the next nodes and answer their clients.
    fn route(&mut self, id: usize) {
        let batch = self.batches[id].take().expect("a finished batch");
        self.free_batches.push(id);
        let node = batch.node;
        let spec = self.spec;
        for task in &batch.tasks {
            if self.streams.gated(node) {
                self.write_back(node, task.request);
            }
            for route in &spec.nodes[node].routes {
                for &target in &route.targets {
                    self.send(task.request, target);
                }
            }
        }
    }

    /// `request`'s chunk ran at stateful node `node`: its state is written back (before
    /// its outputs are handed on, as the runtime commits before answering); the
    /// stream's next chunk enters the buffer, chunks behind a final one are refused.
    fn write_back(&mut self, node: usize, request: usize) {
        let chunk = self.requests[request].as_ref().and_then(|r| r.send.stream).expect("a chunk");
        let (next, refused) = self.streams.release(node, chunk, self.now);
        if let Some(task) = next {
            self.queue(node, task);
        }
        for r in refused {
            self.fail(r);
        }
    }
}
