//! `baton simulate PIPELINE --profile PROFILE`: the pipeline under `baton
//! bench`'s loads in virtual time, scheduled by the runtime's own decision code
//! ([`baton::scheduler::decision::Decider`]), each batch's duration drawn from
//! the profile's measured distribution for its node and size. Reports in
//! `baton bench`'s tables, CSV, JSON and plot. Deterministic: the same options
//! and seed give the same bytes.
//!
//! Modules: [`model`] (the measured terms as given, shared with `baton
//! tune`), [`durations`] (the profile, draws), [`outliers`] (dropping a
//! profile's far tail), [`idle`] (what an idle gap adds to a batch), [`cores`] (how running batches share the cores,
//! thread classes included), [`cpu`] (the runtime's own CPU as work on the
//! cores), [`nodes`] (buffers, joins, totals), [`streams`] (what each request
//! carries, per-stream order at stateful nodes), [`sessions`] (the collab
//! example's sessions as a load), [`stalls`] (the machine's core stalls), [`traffic`] (what a point sends: the options
//! checked, each point's simulation set up), [`engine`] (the event loop of one point).
//! docs/simulate.md says what it models, what it does not, and how close it
//! comes to real runs.

pub mod core_queues;
pub mod cores;
pub mod cpu;
pub mod durations;
pub mod engine;
pub mod idle;
pub mod model;
pub mod nodes;
pub mod outliers;
pub mod records;
pub mod sessions;
pub mod stalls;
pub mod streams;
pub mod stretch;
pub mod traffic;
pub mod wakes;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use baton::spec::Resource;
use baton::{BatchingPolicy, PipelineConfig, PipelineSpec};

use crate::cpu::RuntimeCpu;
use crate::measure::{point_result, PointResult, Window};
use crate::report::{self, BenchReport};
use crate::{BenchOptions, Load};
use durations::Durations;
use engine::{PointSetup, SimLoad, Terms};
pub use model::ModelTerms;
use traffic::{StreamLoad, Traffic};

/// What `baton simulate` runs: `baton bench`'s load options, the profile, and the model's measured terms.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    pub bench: BenchOptions,
    /// The `baton profile` file the batch durations come from.
    pub profile: PathBuf,
    /// The model's measured terms.
    pub model: ModelTerms,
    /// Send sessions as the collab example does, instead of `baton bench`'s requests.
    pub sessions: Option<SessionLoad>,
}

/// Sessions as the collab example sends them ([`sessions`]): `--rate` and `--sweep`
/// count sessions per second.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionLoad {
    /// The session file (`data/sessions.json`): each session's chunk count comes from its WAV.
    pub file: PathBuf,
    /// From one chunk to the next, ms (32: real time for 512 samples at 16 kHz).
    pub pace_ms: f64,
}

/// Runs `baton simulate`: exit 0, or 2 with the error.
pub fn run(options: SimOptions, engines: &baton::EngineRegistry) -> ExitCode {
    match simulate(&options, engines) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// What the simulator does not model, for `spec` under a load that sends streams
/// (`streams`) or not: the first one found.
pub(crate) fn unmodelled(spec: &PipelineSpec, streams: bool) -> Option<String> {
    let s = &spec.scheduler;
    let selector = baton::scheduler::decision::Decider::new(spec);
    let node_feature = spec.nodes.iter().find_map(|n| {
        let what = if n.keeps_streams() && !streams {
            "keeps per-stream state: the load must send streams (--stream-chunks N)"
        } else if !n.groups.is_empty() {
            "has worker groups"
        } else if matches!(n.resource, Resource::Remote { .. }) {
            "runs on a remote server"
        } else if n.faults.is_some() {
            "injects faults"
        } else if !n.pad.is_empty() && selector.selector().batch_rows(n.max_batch) > 1 {
            "pads inputs of different shapes (ragged batches of more than one row)"
        } else {
            return None;
        };
        Some(format!("node `{}` {what}", n.name))
    });
    let scheduler_feature = if s.preempt_before.is_some() && s.policy == BatchingPolicy::Collaborative {
        Some("[scheduler] preempt_before (stopping young batches)")
    } else {
        None
    };
    node_feature.or(scheduler_feature.map(str::to_string))
}

fn check(options: &SimOptions) -> Result<(), String> {
    let b = &options.bench;
    if b.url.is_some() || b.raw {
        return Err("--url and --raw measure real engines: leave them out of `baton simulate`".into());
    }
    if b.stability {
        return Err("--stability: the simulator measures one interval of --duration".into());
    }
    options.model.check()?;
    if options.sessions.is_some() {
        if !b.concurrency.is_empty() || (b.rate.is_empty() && b.sweep.is_empty()) {
            return Err("--sessions starts sessions at --rate (sessions/s) or --sweep: not --concurrency".into());
        }
        if !b.tenants.is_empty() {
            return Err("--sessions names no tenants: leave out --tenants".into());
        }
        if !b.sweep.is_empty() && b.capacity_rate.is_none() {
            return Err("--sessions with --sweep needs --capacity-rate (sessions/s at 100%)".into());
        }
    }
    Ok(())
}

/// The spec of `config` under `policy` (with `--max-queue-delay-us`), and its durations.
fn policy_spec(
    config: &PipelineConfig,
    policy: BatchingPolicy,
    options: &SimOptions,
    file: &Path,
    engines: &baton::EngineRegistry,
) -> Result<PipelineSpec, String> {
    let mut cfg = config.clone();
    cfg.scheduler.policy = policy;
    if let Some(delay) = options.bench.max_queue_delay_us {
        cfg.scheduler.max_queue_delay_us = delay;
    }
    let spec = PipelineSpec::build(&cfg, Some(file), engines).map_err(|e| format!("policy {}: {e}", policy.name()))?;
    let streams = options.bench.stream_chunks > 0 || options.sessions.is_some();
    if let Some(what) = unmodelled(&spec, streams) {
        return Err(format!("the simulator does not model this yet: {what} (docs/simulate.md)"));
    }
    Ok(spec)
}

/// Per node: its name and the batch sizes it can form (padded to its fixed sizes, if any).
pub(crate) fn formable(spec: &PipelineSpec, rows: usize) -> Vec<(String, Vec<usize>)> {
    let decider = baton::scheduler::decision::Decider::new(spec);
    spec.nodes
        .iter()
        .map(|n| {
            let most = decider.selector().batch_rows(n.max_batch).max(rows);
            let sizes = n.stages.iter().find(|s| !s.is_function()).map(|s| s.request.batch_sizes.clone());
            let mut all: Vec<usize> = (1..=most)
                .filter(|r| r % rows == 0 || *r == most)
                .map(|r| sizes.as_ref().map_or(r, |b| b.padded(r)))
                .collect();
            all.sort_unstable();
            all.dedup();
            (n.name.clone(), all)
        })
        .collect()
}

/// Simulates every policy × load point; prints `baton bench`'s tables and writes its files.
pub fn simulate(options: &SimOptions, engines: &baton::EngineRegistry) -> Result<BenchReport, String> {
    check(options)?;
    options.bench.check()?;
    let b = &options.bench;
    let file = b.pipeline.as_ref().ok_or("give the pipeline file")?;
    let config = PipelineConfig::read(file).map_err(|e| e.to_string())?;
    let terms = options.model.terms(&options.profile)?;
    let traffic = traffic(options)?;
    // Only the simulation counts toward the speed figure (not reading models or the profile).
    let mut took = 0.0;
    let mut simulated_ns = 0u64;
    let mut points = Vec::new();
    let mut batch_sizes = Vec::new();
    let mut spec_name = String::new();
    let mut node_names = Vec::new();
    for &policy in &b.policy {
        let spec = policy_spec(&config, policy, options, file, engines)?;
        if let Some(node) = spec.nodes.iter().find(|n| n.max_batch < b.rows) {
            return Err(format!("--rows {} is more than node `{}`'s max_batch {}", b.rows, node.name, node.max_batch));
        }
        let durations = options.model.durations(&options.profile, &spec, b.rows)?;
        let loads = sim_loads(options, &spec, &durations, terms, &traffic)?;
        let mut last_end = Vec::new();
        for (k, load) in loads.into_iter().enumerate() {
            let setup = setup(b, load, k);
            simulated_ns += setup.warmup_ns + setup.duration_ns;
            let started = Instant::now();
            let (window, busy_ns) = traffic.sim(&spec, &durations, terms, setup, false)?.run_busy();
            took += started.elapsed().as_secs_f64();
            points.push(simulated_point(policy.name(), load, b.rows, &window, busy_ns));
            last_end = window.nodes_end;
        }
        batch_sizes.push(report::policy_batches(policy.name(), &last_end, None));
        spec_name = spec.name.clone();
        node_names = spec.nodes.iter().map(|n| n.name.clone()).collect();
    }
    eprintln!(
        "simulated {:.1} s of traffic in {:.2} s ({:.0}x real time)",
        simulated_ns as f64 / 1e9,
        took,
        simulated_ns as f64 / 1e9 / took.max(1e-9)
    );
    print_report(&spec_name, options, &points, &batch_sizes);
    let report = BenchReport {
        pipeline: spec_name,
        file: file.display().to_string(),
        cores: terms.cores.round() as usize,
        settings: settings(options, terms),
        raw: None,
        points,
        batch_sizes,
    };
    crate::write_files(b, &report, &node_names)?;
    Ok(report)
}

/// One point (`load`) of `options`' first policy with the streams' trace kept
/// (every chunk's parking, start and write-back at stateful nodes), in time order.
pub fn trace_point(
    options: &SimOptions,
    engines: &baton::EngineRegistry,
    load: SimLoad,
) -> Result<(crate::measure::Window, Vec<streams::StreamEvent>), String> {
    check(options)?;
    options.bench.check()?;
    let b = &options.bench;
    let file = b.pipeline.as_ref().ok_or("give the pipeline file")?;
    let config = PipelineConfig::read(file).map_err(|e| e.to_string())?;
    let policy = *b.policy.first().ok_or("give a policy")?;
    let spec = policy_spec(&config, policy, options, file, engines)?;
    let terms = options.model.terms(&options.profile)?;
    let durations = options.model.durations(&options.profile, &spec, b.rows)?;
    Ok(traffic(options)?.sim(&spec, &durations, terms, setup(b, load, 0), true)?.run_traced())
}

fn print_report(name: &str, options: &SimOptions, points: &[PointResult], batch_sizes: &[report::PolicyBatches]) {
    println!(
        "Baton simulated: pipeline `{name}`, {} row(s) per request, profile {}, seed {}",
        options.bench.rows,
        options.profile.display(),
        options.bench.seed
    );
    print!("{}", report::points_table(points));
    print!("{}", report::tenants_table(points));
    // The generator's sends lag behind their schedule where the model gives them a cost.
    if points.iter().any(|p| p.mean_send_lag_us > 0.0) {
        print!("{}", report::sends_table(points));
    }
    println!();
    print!("{}", report::nodes_table(points));
    println!();
    print!("{}", report::batches_table(batch_sizes));
}

fn settings(options: &SimOptions, terms: Terms) -> serde_json::Value {
    let mut s = options.bench.settings();
    s["simulated"] = serde_json::json!(true);
    s["profile"] = serde_json::json!(options.profile.display().to_string());
    options.model.settings(&terms, &mut s);
    s
}

/// The profile's `cores` (the machine it was measured on).
pub(crate) fn profile_cores(path: &Path) -> Result<f64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a profile: {e}", path.display()))?;
    Ok(value["cores"].as_u64().filter(|&c| c > 0).unwrap_or(1) as f64)
}

/// What each point sends: `baton bench`'s requests (streams, a mixed load) or sessions.
fn traffic(options: &SimOptions) -> Result<Traffic, String> {
    let b = &options.bench;
    let streams = StreamLoad {
        chunks: b.stream_chunks,
        inputs: b.stream_inputs.clone(),
        fraction: b.stream_fraction,
        tenants: b.tenants.clone(),
    };
    Traffic::new(streams, options.sessions.as_ref())
}

/// The point's setup: the bench's warm-up and duration, a seed per point.
fn setup(b: &BenchOptions, load: SimLoad, k: usize) -> PointSetup {
    PointSetup {
        load,
        rows: b.rows,
        priority_fraction: b.priority_fraction,
        seed: b.seed.wrapping_add(k as u64),
        warmup_ns: b.warmup.as_nanos() as u64,
        duration_ns: b.duration.as_nanos() as u64,
        latency_from_schedule: b.latency_from_schedule,
        generator_realtime: b.generator_policy.is_realtime(),
        generator_nice: b.generator_nice,
    }
}

/// A simulated point as `baton bench` reports a real one under `policy`: its window, and
/// the core time the model's jobs took (`busy_ns`) as the process CPU (`cpu`).
pub(crate) fn simulated_point(policy: &str, load: SimLoad, rows: usize, window: &Window, busy_ns: u64) -> PointResult {
    let (mode, value) = match load {
        SimLoad::Closed(c) => ("closed", c as f64),
        SimLoad::Open { rate, .. } => ("open", rate),
    };
    let mut point = point_result(policy, mode, value, rows, std::slice::from_ref(window), 1, None);
    point.cpu = RuntimeCpu::of(busy_ns, point.seconds, &point.nodes, point.requests);
    point
}

/// The points: `--concurrency` and `--rate` as `baton bench` reads them, or with
/// `--sweep` open-loop Poisson points at those percentages of the capacity
/// (`--capacity-rate`, else the closed-loop throughput at `--capacity-concurrency`
/// simulated under this policy).
fn sim_loads(
    options: &SimOptions,
    spec: &PipelineSpec,
    durations: &Durations,
    terms: Terms,
    traffic: &Traffic,
) -> Result<Vec<SimLoad>, String> {
    let b = &options.bench;
    if b.sweep.is_empty() {
        return Ok(b
            .loads()
            .into_iter()
            .map(|l| match l {
                Load::Closed(c) => SimLoad::Closed(c),
                Load::Open(rate) => SimLoad::Open { rate, arrivals: b.arrivals },
            })
            .collect());
    }
    let capacity = match b.capacity_rate {
        Some(rate) => rate,
        None => {
            let setup = setup(b, SimLoad::Closed(b.capacity_concurrency), usize::MAX);
            let window = traffic.sim(spec, durations, terms, setup, false)?.run();
            let rate = window.throughput();
            if rate <= 0.0 {
                return Err("the capacity point answered no request: lengthen --duration".into());
            }
            println!("capacity (simulated, closed loop c={}): {rate:.1} requests/s", b.capacity_concurrency);
            rate
        }
    };
    Ok(b.sweep
        .iter()
        .map(|p| SimLoad::Open { rate: capacity * p / 100.0, arrivals: crate::load::Arrivals::Poisson })
        .collect())
}

/// Stores `item` in a free slot of `slots` (the last freed, `free` listing them), or in a
/// new one at the end: its index.
fn store<T>(slots: &mut Vec<Option<T>>, free: &mut Vec<usize>, item: T) -> usize {
    match free.pop() {
        Some(k) => {
            slots[k] = Some(item);
            k
        }
        None => {
            slots.push(Some(item));
            slots.len() - 1
        }
    }
}
