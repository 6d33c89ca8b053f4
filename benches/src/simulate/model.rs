//! The model's measured terms as `baton simulate` and `baton tune` take them
//! (µs and factors, as on the command line): checked, and turned into the
//! engine's [`Terms`] and the profile's [`Durations`], scaled per node.
//! docs/simulate.md ("Measured terms") says how each is measured.

use std::path::Path;

use baton::PipelineSpec;

use super::cpu::CpuUs;
use super::durations::{self, Durations};
use super::engine::Terms;
use super::wakes::WakeDraws;

/// What the model adds to the profile's batch times, as the user gives it.
/// `Default` is the model without any term (the profile's cores).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelTerms {
    /// From a decision to its worker's start, µs.
    pub wake_us: f64,
    /// The same for a worker whose batch runs at the real-time policy, µs (None: `wake_us`).
    pub realtime_wake_us: Option<f64>,
    /// From a batch's end to its outputs at the next nodes or the client, µs.
    pub hop_us: f64,
    /// The worker is free after its hand-on: `hop_us` delays the outputs alone.
    pub hop_frees_worker: bool,
    /// The OS's time slice a woken normal-class worker may wait for a core, µs (0: none).
    pub slice_us: f64,
    /// Processors the batches share (default: the profile's `cores`).
    pub cores: Option<f64>,
    /// The runtime's own CPU per request, batch and task.
    pub cpu: CpuUs,
    /// Drop profile samples above `q3 + K × (q3 − q1)` of their batch size.
    pub outlier_fence: Option<f64>,
    /// `NODE=FACTOR`: the node's normal-class batches take FACTOR × the profile's times.
    pub compute_scale: Vec<String>,
    /// `NODE=US`: each of the node's normal-class batches takes US more, after the scale
    /// (negative: less, never below the profile's time or the scaled one under 1).
    pub compute_offset: Vec<String>,
    /// `NODE=FACTOR`: the node's real-time-class batches take FACTOR × the profile's times.
    pub realtime_scale: Vec<String>,
    /// `NODE=FACTOR`: under an open load at `sparse_rate`, the node's normal-class batches take
    /// FACTOR × what the other terms give; the factor falls linearly to 1 at `dense_rate`.
    pub sparse_stretch: Vec<String>,
    /// Requests/s at which `sparse_stretch` is whole (a light load's rate).
    pub sparse_rate: Option<f64>,
    /// Requests/s at which `sparse_stretch` is gone (the capacity's rate).
    pub dense_rate: Option<f64>,
    /// `NODE=US`: the node's worker takes US to hand each batch's outputs on, before the hop.
    pub hand_on_us: Vec<String>,
    /// `NODE=US`: the node's outputs reach the next nodes or the client US after its worker's
    /// hand-on and the hop, a delay that does not hold the worker.
    pub route_us: Vec<String>,
    /// `NODE=US`: the route time of the node's real-time-class batches, in place of `route_us`.
    pub realtime_route_us: Vec<String>,
    /// `baton bench --json` files whose recorded wake-ups the workers' wake-ups are drawn
    /// from (instead of `wake_us`; see [`super::wakes`]).
    pub wake_delays: Vec<std::path::PathBuf>,
    /// `baton bench --json` files whose recorded real-time wake-ups the real-time workers'
    /// wake-ups are drawn from (instead of `realtime_wake_us`; `--realtime-wake-delays`).
    pub realtime_wake_delays: Vec<std::path::PathBuf>,
    /// `baton bench --json` files whose scheduler ticks' lateness the ticks draw from (`--tick-delays`).
    pub tick_delays: Vec<std::path::PathBuf>,
    /// `baton bench --json` files whose recorded batch times give each node's stretch over
    /// the profile (instead of its compute scale; see [`super::stretch`]).
    pub batch_times: Vec<std::path::PathBuf>,
    /// A `baton stalls` record: the cores stall as it says (see [`super::stalls`]).
    pub core_stalls: Option<std::path::PathBuf>,
    /// Every stall of `core_stalls`, those its CPU clocks counted too.
    pub core_stalls_whole: bool,
    /// A stall also holds the idle threads on its core: a worker spinning for work there
    /// starts its next batch no earlier than the stall's end, and the load generator asleep
    /// there wakes no earlier.
    pub stalls_hold_idle: bool,
    /// Each batch pays what its node's idle gap adds, as the profile measured it ([`super::idle`]).
    pub idle_gaps: bool,
    /// With `idle_gaps`: real-time batches pay theirs too, on top of their real-time scale.
    pub realtime_idle_gaps: bool,
    /// A worker told while it still spins for work (within its node's `idle_spin_us` of
    /// going idle) with a core free takes no wake-up term.
    pub spin_wakes: bool,
    /// The load generator's thread holds a core while it runs; a job on that core waits
    /// for the run's end.
    pub generator_holds_core: bool,
    /// Each job runs on one core's queue, as the kernel runs threads, not on a share of
    /// one pool of cores.
    pub core_queues: bool,
    /// Each running job holds a whole core or waits for the first that frees, not a share
    /// of one pool of cores.
    pub whole_cores: bool,
}

impl ModelTerms {
    /// Each term within its range, else an error naming its option.
    pub fn check(&self) -> Result<(), String> {
        let us = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a non-negative number of µs, not {v}"))
            }
        };
        us("--wake-us", self.wake_us)?;
        us("--realtime-wake-us", self.realtime_wake_us.unwrap_or(0.0))?;
        us("--hop-us", self.hop_us)?;
        us("--slice-us", self.slice_us)?;
        if self.cores.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
            return Err("--cores must be positive".into());
        }
        self.cpu.costs()?;
        if self.generator_holds_core && self.core_queues {
            return Err(
                "--generator-holds-core and --core-queues are two models of the generator's core: give one".into()
            );
        }
        if self.whole_cores && (self.core_queues || self.generator_holds_core) {
            return Err("--whole-cores is a model of the cores of its own: not with --core-queues or \
                        --generator-holds-core"
                .into());
        }
        if self.stalls_hold_idle && self.core_stalls.is_none() {
            return Err("--stalls-hold-idle needs the stalls: --core-stalls".into());
        }
        if self.generator_holds_core && self.cpu.send_us <= 0.0 {
            return Err("--generator-holds-core needs the generator's sends in the model: --send-cpu-us".into());
        }
        super::outliers::check(self.outlier_fence)?;
        durations::parse_scales(&self.compute_scale)?;
        durations::parse_offsets(&self.compute_offset)?;
        durations::parse_realtime_scales(&self.realtime_scale)?;
        self.sparse_rates()?;
        durations::parse_hand_ons(&self.hand_on_us)?;
        durations::parse_routes(&self.route_us)?;
        durations::parse_realtime_routes(&self.realtime_route_us)?;
        Ok(())
    }

    /// The sparse stretch's (sparse, dense) rates: both given, positive and the sparse
    /// one below the dense one, where a node has a sparse stretch; `None` where none has.
    fn sparse_rates(&self) -> Result<Option<(f64, f64)>, String> {
        let stretches = durations::parse_sparse_stretches(&self.sparse_stretch)?;
        match (stretches.is_empty(), self.sparse_rate, self.dense_rate) {
            (true, None, None) => Ok(None),
            (true, _, _) => Err("--sparse-rate and --dense-rate go with --sparse-stretch".into()),
            (false, Some(sparse), Some(dense))
                if sparse.is_finite() && sparse > 0.0 && dense.is_finite() && dense > sparse =>
            {
                Ok(Some((sparse, dense)))
            }
            (false, Some(sparse), Some(dense)) => {
                Err(format!("--sparse-rate ({sparse}) must be a positive rate below --dense-rate ({dense})"))
            }
            (false, _, _) => Err("--sparse-stretch needs --sparse-rate and --dense-rate (requests/s)".into()),
        }
    }

    /// The engine's terms, in ns; the cores default to `profile`'s.
    pub fn terms(&self, profile: &Path) -> Result<Terms, String> {
        self.check()?;
        let ns = |us: f64| (us * 1000.0).round() as u64;
        let terms = Terms {
            wake_ns: ns(self.wake_us),
            realtime_wake_ns: ns(self.realtime_wake_us.unwrap_or(self.wake_us)),
            hop_ns: ns(self.hop_us),
            hop_frees_worker: self.hop_frees_worker,
            cores: match self.cores {
                Some(cores) => cores,
                None => super::profile_cores(profile)?,
            },
            cpu: self.cpu.costs()?,
            fence: self.outlier_fence,
            slice_ns: ns(self.slice_us),
            spin_wakes: self.spin_wakes,
            generator_holds_core: self.generator_holds_core,
            core_queues: self.core_queues,
            whole_cores: self.whole_cores,
            stalls_hold_idle: self.stalls_hold_idle,
        };
        for (on, option) in [(terms.core_queues, "--core-queues"), (terms.whole_cores, "--whole-cores")] {
            if on && terms.cores.fract() != 0.0 {
                return Err(format!("{option} needs a whole number of cores, not {}", terms.cores));
            }
        }
        Ok(terms)
    }

    /// `profile`'s batch times for `spec`'s nodes at the batch sizes they can form
    /// with `rows` rows a request, fenced and scaled as the terms say.
    pub fn durations(&self, profile: &Path, spec: &PipelineSpec, rows: usize) -> Result<Durations, String> {
        let nodes = super::formable(spec, rows);
        let mut durations = Durations::load(profile, &spec.name, &nodes, self.outlier_fence)?;
        let index = |option: &str, node: &str| {
            nodes
                .iter()
                .position(|(name, _)| name == node)
                .ok_or_else(|| format!("{option}: pipeline `{}` has no node `{node}`", spec.name))
        };
        for (node, factor) in durations::parse_scales(&self.compute_scale)? {
            durations.scale(index("--compute-scale", &node)?, factor);
        }
        for (node, us) in durations::parse_offsets(&self.compute_offset)? {
            durations.offset(index("--compute-offset", &node)?, us);
        }
        for (node, factor) in durations::parse_realtime_scales(&self.realtime_scale)? {
            durations.realtime_scale(index("--realtime-scale", &node)?, factor);
        }
        for (node, factor) in durations::parse_sparse_stretches(&self.sparse_stretch)? {
            durations.sparse_stretch(index("--sparse-stretch", &node)?, factor);
        }
        if let Some((sparse, dense)) = self.sparse_rates()? {
            durations.sparse_rates(sparse, dense);
        }
        for (node, us) in durations::parse_hand_ons(&self.hand_on_us)? {
            durations.hand_on(index("--hand-on-us", &node)?, us);
        }
        for (node, us) in durations::parse_routes(&self.route_us)? {
            durations.route(index("--route-us", &node)?, us);
        }
        for (node, us) in durations::parse_realtime_routes(&self.realtime_route_us)? {
            durations.realtime_route(index("--realtime-route-us", &node)?, us);
        }
        let names: Vec<String> = nodes.into_iter().map(|(name, _)| name).collect();
        if !self.wake_delays.is_empty() {
            durations.wakes = Some(WakeDraws::load(&self.wake_delays, &spec.name, &names)?);
        }
        if !self.realtime_wake_delays.is_empty() {
            let files = &self.realtime_wake_delays;
            durations.realtime_wakes = Some(WakeDraws::load_for("--realtime-wake-delays", files, &spec.name, &names)?);
        }
        if !self.tick_delays.is_empty() {
            durations.ticks = Some(super::wakes::TickDraws::load(&self.tick_delays, &spec.name)?);
        }
        if let Some(file) = &self.core_stalls {
            durations.stalls = Some(super::stalls::StallDraws::load(file, self.core_stalls_whole)?);
        }
        if self.idle_gaps {
            durations.use_idle_gaps(&profile.display().to_string(), self.realtime_idle_gaps)?;
        }
        if !self.batch_times.is_empty() {
            durations.stretch(&super::stretch::load(&self.batch_times, &spec.name, &names)?);
        }
        Ok(durations)
    }

    /// Writes the terms into a report's settings (`terms`: as the engine took them).
    pub fn settings(&self, terms: &Terms, s: &mut serde_json::Value) {
        s["wake_us"] = serde_json::json!(self.wake_us);
        s["realtime_wake_us"] = serde_json::json!(self.realtime_wake_us);
        s["hop_us"] = serde_json::json!(self.hop_us);
        s["hop_frees_worker"] = serde_json::json!(self.hop_frees_worker);
        s["sim_cores"] = serde_json::json!(terms.cores);
        s["request_cpu_us"] = serde_json::json!(self.cpu.request_us);
        s["batch_cpu_us"] = serde_json::json!(self.cpu.batch_us);
        s["task_cpu_us"] = serde_json::json!(self.cpu.task_us);
        s["tick_cpu_us"] = serde_json::json!(self.cpu.tick_us);
        s["decision_cpu_us"] = serde_json::json!(self.cpu.decision_us);
        s["send_cpu_us"] = serde_json::json!(self.cpu.send_us);
        s["client_send_us"] = serde_json::json!(self.cpu.client_send_us);
        s["send_wake_us"] = serde_json::json!(self.cpu.send_wake_us);
        s["send_wake_by_sleep_us"] = serde_json::json!(self.cpu.send_wake_by_sleep_us);
        s["cpu_off_path"] = serde_json::json!(self.cpu.off_path);
        s["outlier_fence"] = serde_json::json!(self.outlier_fence);
        s["compute_scale"] = serde_json::json!(self.compute_scale);
        s["compute_offset"] = serde_json::json!(self.compute_offset);
        s["realtime_scale"] = serde_json::json!(self.realtime_scale);
        s["sparse_stretch"] = serde_json::json!(self.sparse_stretch);
        s["sparse_rate"] = serde_json::json!(self.sparse_rate);
        s["dense_rate"] = serde_json::json!(self.dense_rate);
        s["hand_on_us"] = serde_json::json!(self.hand_on_us);
        s["route_us"] = serde_json::json!(self.route_us);
        s["realtime_route_us"] = serde_json::json!(self.realtime_route_us);
        s["slice_us"] = serde_json::json!(self.slice_us);
        let files: Vec<String> = self.wake_delays.iter().map(|f| f.display().to_string()).collect();
        s["wake_delays"] = serde_json::json!(files);
        let files: Vec<String> = self.realtime_wake_delays.iter().map(|f| f.display().to_string()).collect();
        s["realtime_wake_delays"] = serde_json::json!(files);
        let files: Vec<String> = self.tick_delays.iter().map(|f| f.display().to_string()).collect();
        s["tick_delays"] = serde_json::json!(files);
        let files: Vec<String> = self.batch_times.iter().map(|f| f.display().to_string()).collect();
        s["batch_times"] = serde_json::json!(files);
        s["idle_gaps"] = serde_json::json!(self.idle_gaps);
        s["realtime_idle_gaps"] = serde_json::json!(self.realtime_idle_gaps);
        s["spin_wakes"] = serde_json::json!(self.spin_wakes);
        s["generator_holds_core"] = serde_json::json!(self.generator_holds_core);
        s["core_queues"] = serde_json::json!(self.core_queues);
        s["whole_cores"] = serde_json::json!(self.whole_cores);
        s["core_stalls"] = serde_json::json!(self.core_stalls.as_ref().map(|f| f.display().to_string()));
        s["core_stalls_whole"] = serde_json::json!(self.core_stalls_whole);
        s["stalls_hold_idle"] = serde_json::json!(self.stalls_hold_idle);
    }
}
