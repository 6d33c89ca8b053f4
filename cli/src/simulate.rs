//! `baton simulate PIPELINE --profile PROFILE`: `baton bench`'s loads in
//! virtual time, through the runtime's own scheduling code (see
//! `baton_bench::simulate` and docs/simulate.md).

use std::path::PathBuf;

use baton_bench::simulate::{ModelTerms, SessionLoad, SimOptions};

use crate::bench_args::BenchArgs;

/// `baton simulate` arguments: `baton bench`'s, the profile and the model's measured terms.
#[derive(Clone, Debug, clap::Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
    /// The profile the batch durations are drawn from (`baton profile PIPELINE --out FILE`).
    #[arg(long)]
    pub profile: PathBuf,
    #[command(flatten)]
    pub terms: ModelTermArgs,
    /// Send sessions as `examples/collab --image-first` does (image first, paced
    /// chunks, the final chunk with the image's text features), from this session
    /// file (data/sessions.json); --rate and --sweep count sessions per second.
    #[arg(long)]
    pub sessions: Option<PathBuf>,
    /// With --sessions: from one chunk of a session to the next, ms.
    #[arg(long, default_value_t = 32.0)]
    pub pace_ms: f64,
}

/// The simulator's measured terms, shared by `baton simulate` and `baton tune`.
#[derive(Clone, Debug, clap::Args)]
pub struct ModelTermArgs {
    /// Measured term: from a scheduling decision to its worker's start, µs.
    #[arg(long, default_value_t = 0.0)]
    pub wake_us: f64,
    /// Measured term: the same for a worker whose batch runs at the real-time policy
    /// (`foreground_realtime`), µs (default: --wake-us).
    #[arg(long)]
    pub realtime_wake_us: Option<f64>,
    /// Measured term: the OS's time slice, µs (`baton stalls` records it): a worker woken
    /// into the normal class while every core is taken waits a uniform draw of up to this
    /// long, or less, until the first running job ends (0: never).
    #[arg(long, default_value_t = 0.0)]
    pub slice_us: f64,
    /// Measured term: from a batch's end to its outputs at the next nodes or the client, µs.
    #[arg(long, default_value_t = 0.0)]
    pub hop_us: f64,
    /// Model term: the worker is free once its batch's hand-on ends; --hop-us then delays the
    /// outputs alone (the requester's or next node's wake-up), not the worker's next batch.
    #[arg(long)]
    pub hop_frees_worker: bool,
    /// Processors the batches share (default: the profile's `cores`).
    #[arg(long)]
    pub cores: Option<f64>,
    /// Measured term: the runtime's own CPU per request (submitting, answering, the client), µs.
    #[arg(long, default_value_t = 0.0)]
    pub request_cpu_us: f64,
    /// Measured term: the runtime's own CPU per batch (waking its worker, the pokes), µs.
    #[arg(long, default_value_t = 0.0)]
    pub batch_cpu_us: f64,
    /// Measured term: the runtime's own CPU per task of a batch (handing its outputs on), µs.
    #[arg(long, default_value_t = 0.0)]
    pub task_cpu_us: f64,
    /// Measured term: the scheduler thread's CPU per tick (its wake-up, the decision, the
    /// pokes), µs, run beside the requests' way on the shared cores at every tick (`baton
    /// bench` writes it as `scheduler_ticks.cpu_us_per_round`).
    #[arg(long, default_value_t = 0.0)]
    pub tick_cpu_us: f64,
    /// Measured term: a worker's decision as its batch ends (its node-finished poke), µs, run
    /// on its core beside the requests' way (`baton bench` writes the decisions' times as
    /// `scheduler_ticks.decisions.on_finishes`).
    #[arg(long, default_value_t = 0.0)]
    pub decision_cpu_us: f64,
    /// Measured term: the load generator's CPU per open-loop send, µs: one thread sends the
    /// requests in turn, a job on the shared cores for each (normal-class, or with
    /// --generator-policy realtime above the real-time workers), and a request
    /// reaches the runtime when its send ends (`baton bench` writes it as `send_cpu_us`).
    /// With it, latency counts from each send as `baton bench`'s does, or from the
    /// schedule with --latency-from-schedule.
    #[arg(long, default_value_t = 0.0)]
    pub send_cpu_us: f64,
    /// Measured term: a closed-loop client's CPU per send, µs (`baton bench` writes the
    /// clients' as `send_cpu_us` at closed-loop points): the clients answered by one batch
    /// wake and send in turn, a normal-class job on the shared cores each, and a request
    /// reaches the runtime when its send ends. Without it every client sends at once.
    #[arg(long, default_value_t = 0.0)]
    pub client_send_us: f64,
    /// Measured term, with --send-cpu-us: the load generator's lateness waking from its
    /// sleep until a send is due, µs: a send due while the generator sleeps (nothing else
    /// to send) starts this late (`baton stalls` measures the machine's timed-sleep lateness).
    #[arg(long, default_value_t = 0.0)]
    pub send_wake_us: f64,
    /// Measured term, in place of --send-wake-us: the generator's lateness by how long it
    /// slept, µs, one value per class of the sleep asked (below 10, 30, 100 and 300 µs, and
    /// longer), as `baton bench` reports its open-loop sends (`send_lags`).
    #[arg(long, value_delimiter = ',')]
    pub send_wake_by_sleep: Vec<f64>,
    /// The runtime CPU terms take their share of the cores without delaying requests or
    /// workers (CPU beside the requests' way: idle workers spinning, the client).
    #[arg(long)]
    pub cpu_off_path: bool,
    /// Drop each batch size's profile samples above q3 + K × (q3 − q1) (default: keep all).
    #[arg(long, value_name = "K")]
    pub outlier_fence: Option<f64>,
    /// Measured term: NODE=FACTOR scales the node's profiled batch times in the normal
    /// thread class (its runtime compute at concurrency 1 under the load ÷ the
    /// profile's), e.g. `speech=2.3`; batches in the real-time class keep the profile's.
    #[arg(long, value_delimiter = ',', value_name = "NODE=FACTOR")]
    pub compute_scale: Vec<String>,
    /// Measured term: NODE=US adds US to each of the node's normal-class batches, after
    /// --compute-scale: the part of a batch's stretch under the load that does not grow with
    /// its rows (fitted with the scale through the concurrency-1 and capacity runs'
    /// compute per batch), e.g. `deep1=310`. Negative where the stretch grows with the rows
    /// (e.g. `mlp=-12`); a batch then never takes less than the profile's time (or its
    /// scaled time, where the scale is under 1).
    #[arg(long, value_delimiter = ',', value_name = "NODE=US")]
    pub compute_offset: Vec<String>,
    /// Measured term: NODE=FACTOR scales the node's profiled batch times in the real-time
    /// thread class (`foreground_realtime` under the collaborative rule): the runtime's
    /// real-time batches' compute (`baton bench --json`, `nodes[].realtime_batch_times`) ÷ the
    /// profile's at the same sizes, e.g. `speech=0.8`; default 1.
    #[arg(long, value_delimiter = ',', value_name = "NODE=FACTOR")]
    pub realtime_scale: Vec<String>,
    /// Measured term: NODE=FACTOR, how much slower the node's normal-class batches run under a
    /// light open load at --sparse-rate than the other terms give (the cores halt between sparse
    /// arrivals): the light load's compute per batch ÷ the model's, e.g. `text=2.4`. The factor
    /// falls linearly in the rate to 1 at --dense-rate; closed-loop points take 1.
    #[arg(long, value_delimiter = ',', value_name = "NODE=FACTOR")]
    pub sparse_stretch: Vec<String>,
    /// The light open load's rate at which --sparse-stretch was measured, requests/s.
    #[arg(long, value_name = "RATE")]
    pub sparse_rate: Option<f64>,
    /// The rate at which --sparse-stretch is gone (the capacity's), requests/s.
    #[arg(long, value_name = "RATE")]
    pub dense_rate: Option<f64>,
    /// Measured term: NODE=US, the time the node's worker takes to hand each batch's outputs
    /// on (splitting them, routing them on, answering requests), before --hop-us: the
    /// runtime's own record (`baton bench --json`, `nodes[].mean_hand_on_us`), e.g. `text=90`.
    #[arg(long, value_delimiter = ',', value_name = "NODE=US")]
    pub hand_on_us: Vec<String>,
    /// Measured term: NODE=US, the time from the node's hand-on and the hop to its outputs at
    /// the next nodes or the client that does not hold its worker (the requester's wake-up, the
    /// answer's way out), e.g. `text=300`.
    #[arg(long, value_delimiter = ',', value_name = "NODE=US")]
    pub route_us: Vec<String>,
    /// Measured term: NODE=US, the route time of the node's real-time-class batches
    /// (`foreground_realtime`), in place of --route-us: its route less the part of it that
    /// was its normal-class batches' compute beyond the model's at concurrency 1, which a
    /// real-time batch (at its own --realtime-scale) does not have, e.g. `speech=13`.
    #[arg(long, value_delimiter = ',', value_name = "NODE=US")]
    pub realtime_route_us: Vec<String>,
    /// Measured term: draw each told worker's wake-up from the wake-ups the runtime recorded
    /// per node in these `baton bench --json` files (contended or not, as the simulated
    /// scheduler counts busy workers against the cores), instead of --wake-us (which stays for
    /// a node the files hold no wake-ups of).
    #[arg(long, value_delimiter = ',', value_name = "BENCH_JSON")]
    pub wake_delays: Vec<PathBuf>,
    /// Measured term: draw the wake-up of each worker whose batch runs at the real-time policy
    /// from the real-time wake-ups the runtime recorded per node in these `baton bench --json`
    /// files, instead of --realtime-wake-us (which stays for a node the files hold none of);
    /// the other workers' wake-ups as without it.
    #[arg(long, value_delimiter = ',', value_name = "BENCH_JSON")]
    pub realtime_wake_delays: Vec<PathBuf>,
    /// Measured term: each scheduler tick comes its period plus a draw of how late the
    /// runtime's scheduler thread woke for its ticks, recorded in these `baton bench --json`
    /// files (in the class of the last decision: every core busy or not); without it the
    /// ticks come on time.
    #[arg(long, value_delimiter = ',', value_name = "BENCH_JSON")]
    pub tick_delays: Vec<PathBuf>,
    /// Measured term: each node's normal-class batches take the profile's median times a draw
    /// of how far the runtime's batches stretched over it, recorded per node in these
    /// `baton bench --json` files (instead of --compute-scale, which stays for a node the
    /// files hold no batches of).
    #[arg(long, value_delimiter = ',', value_name = "BENCH_JSON")]
    pub batch_times: Vec<PathBuf>,
    /// Measured term: the machine's core stalls, from a `baton stalls --out FILE` record:
    /// each core stalls at its recorded rate, for lengths drawn from its record; the jobs on
    /// a stalled core stop until it ends (a pinned worker's always, another job with the
    /// chance that it runs there), and the other jobs share the cores left.
    /// Where the record read its threads' CPU clocks, the stalls those clocks counted (which
    /// the profile's and the runtime's measured times already hold) are left out: with the
    /// clock read across each stall, each stall's part the clock did not count is drawn;
    /// with the clock read over the whole watch only, each core stalls at its rate times the
    /// share of its stalled time the clock did not count.
    #[arg(long, value_name = "STALLS_JSON")]
    pub core_stalls: Option<PathBuf>,
    /// With --core-stalls: every stall of the record, those its CPU clocks counted too.
    #[arg(long, requires = "core_stalls")]
    pub core_stalls_whole: bool,
    /// Measured term: each normal-class batch takes longer by what its node's idle gap adds
    /// (the time the cores sat idle since the node's last batch ended), as the profile
    /// measured it at a few gaps (`baton profile --idle-gaps US,..`; linear between them,
    /// from 0 at no gap).
    #[arg(long)]
    pub idle_gaps: bool,
    /// Model term, with --idle-gaps: real-time batches pay their node's idle gap too, on top
    /// of their --realtime-scale (fit that scale without what the gaps add).
    #[arg(long, requires = "idle_gaps")]
    pub realtime_idle_gaps: bool,
    /// Model term: a worker told within its node's `idle_spin_us` of going idle is still
    /// spinning for work and takes it at once, without --wake-us, unless every core is taken
    /// (a spinning worker yields its core, and then waits for one as a parked worker does).
    /// Workers at the real-time policy, `foreground_realtime`, never spin. Recorded wake-ups
    /// (--wake-delays) hold both kinds already.
    #[arg(long)]
    pub spin_wakes: bool,
    /// Model term: the load generator's thread holds a core while it runs (from its first
    /// send after a sleep until its queue is empty), as the OS keeps a preempted thread on
    /// its own core's queue: where every core is taken as its run starts, the job on the
    /// core it takes waits until the run ends, and so does a job that starts on that core
    /// (1 ÷ the cores of those that start while every core is taken), even where another
    /// core goes idle meanwhile. Needs --send-cpu-us.
    #[arg(long)]
    pub generator_holds_core: bool,
    /// Model term: each job runs on one core's queue, as the kernel runs threads, not on a
    /// share of one pool of cores: placed as it starts on a core with the fewest jobs (the
    /// generator's sends on its last core, a pinned worker's on its core), it waits there
    /// behind the job that core runs, even while another core is idle; the generator's send
    /// preempts the job on its core. Needs a whole number of cores.
    #[arg(long)]
    pub core_queues: bool,
    /// Model term: each running job holds a whole core or waits for the first core that
    /// frees, in the kernel's order (real-time, the generator's send, the heavier nice, the
    /// first started), in place of a share of one pool of cores every running job takes. A
    /// job pinned to a core waits for that core. Needs a whole number of cores.
    #[arg(long)]
    pub whole_cores: bool,
    /// Model term, with --core-stalls: a stall also holds the idle threads on its core, each
    /// there with the chance 1 ÷ the cores: a worker still spinning for work (within its
    /// node's `idle_spin_us` of going idle) starts its next batch no earlier than the stall's
    /// end, and the load generator asleep until its next send (its timer on that core)
    /// wakes no earlier. A spinning thread is running to the OS, so it stays on its core.
    #[arg(long)]
    pub stalls_hold_idle: bool,
}

impl ModelTermArgs {
    /// The terms as the simulator takes them.
    pub fn model(self) -> ModelTerms {
        ModelTerms {
            wake_us: self.wake_us,
            realtime_wake_us: self.realtime_wake_us,
            hop_us: self.hop_us,
            hop_frees_worker: self.hop_frees_worker,
            slice_us: self.slice_us,
            cores: self.cores,
            cpu: baton_bench::simulate::cpu::CpuUs {
                request_us: self.request_cpu_us,
                batch_us: self.batch_cpu_us,
                task_us: self.task_cpu_us,
                tick_us: self.tick_cpu_us,
                decision_us: self.decision_cpu_us,
                send_us: self.send_cpu_us,
                client_send_us: self.client_send_us,
                send_wake_us: self.send_wake_us,
                send_wake_by_sleep_us: self.send_wake_by_sleep.clone(),
                off_path: self.cpu_off_path,
            },
            outlier_fence: self.outlier_fence,
            compute_scale: self.compute_scale,
            compute_offset: self.compute_offset,
            realtime_scale: self.realtime_scale,
            sparse_stretch: self.sparse_stretch,
            sparse_rate: self.sparse_rate,
            dense_rate: self.dense_rate,
            hand_on_us: self.hand_on_us,
            route_us: self.route_us,
            realtime_route_us: self.realtime_route_us,
            wake_delays: self.wake_delays,
            realtime_wake_delays: self.realtime_wake_delays,
            tick_delays: self.tick_delays,
            batch_times: self.batch_times,
            core_stalls: self.core_stalls,
            core_stalls_whole: self.core_stalls_whole,
            idle_gaps: self.idle_gaps,
            realtime_idle_gaps: self.realtime_idle_gaps,
            spin_wakes: self.spin_wakes,
            generator_holds_core: self.generator_holds_core,
            core_queues: self.core_queues,
            whole_cores: self.whole_cores,
            stalls_hold_idle: self.stalls_hold_idle,
        }
    }
}

impl SimulateArgs {
    pub fn options(self) -> SimOptions {
        SimOptions {
            bench: self.bench.options(),
            profile: self.profile,
            model: self.terms.model(),
            sessions: self.sessions.map(|file| SessionLoad { file, pace_ms: self.pace_ms }),
        }
    }
}
