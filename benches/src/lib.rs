//! `baton bench`: latency benchmarks of a Baton pipeline, in the manner of
//! Triton's perf_analyzer — closed-loop (concurrency) and open-loop (request
//! rate) load, warm-up then a fixed duration or stability windows, latency
//! percentiles from hdrhistograms, per-node batch sizes and queue/compute
//! times — with batching policies side by side in one run (`--policy
//! collaborative,dynamic,none`) and, with `--raw`, ONNX Runtime called
//! directly on the same models so every figure is also a ratio to the engine's
//! ceiling.
//!
//! ```text
//! baton bench configs/mlp.toml --concurrency 1,4,16,64 --policy collaborative,dynamic,none --raw \
//!     --duration 5s --csv out.csv --json out.json --plot out.svg
//! ```
//!
//! With `--url http://HOST:PORT` or `grpc://HOST:PORT` the same loads drive a
//! KServe v2 server over the network instead (a `baton serve`, a fleet behind
//! a proxy, Triton), with the same tables, CSV, JSON and plots:
//!
//! ```text
//! baton bench --url grpc://127.0.0.1:8001 --model mlp --concurrency 1,64 --json out.json
//! ```
//!
//! Modules: [`load`] (request pool and drivers), [`target`] (what the drivers
//! send to), [`remote`] (a server as a target), [`measure`] (histograms,
//! windows, node deltas, point results), [`raw`] (the raw engine), [`report`]
//! (tables, CSV, JSON), [`plot`] (latency vs load).

pub mod cpu;
pub mod fairness;
pub mod flood;
pub mod load;
pub mod measure;
pub mod plot;
pub mod raw;
pub mod raw_beside;
pub mod remote;
pub mod report;
pub mod send_lags;
pub mod simulate;
pub mod stalls;
pub mod sweep;
pub mod target;
pub mod tune;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{BatchingPolicy, PipelineConfig, PipelineSpec, Runtime};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::load::{Arrivals, RequestPool};
use crate::measure::{point_result, PointResult, Recorder, Window};
use crate::remote::Remote;
use crate::report::BenchReport;
use crate::target::Target;

/// What `baton bench` measures and how; the command line (`cli/`) fills it,
/// and [`BenchOptions::default`] holds the defaults it shows.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    /// The pipeline file (with --url: optional, names the model when --model does not).
    pub pipeline: Option<PathBuf>,
    /// Drive a KServe v2 server over the network instead of a runtime in this process:
    /// http://HOST:PORT (binary tensors) or grpc://HOST:PORT, or over TLS https:// or grpcs://.
    /// Inputs follow the model's metadata.
    pub url: Option<String>,
    /// With a TLS --url: the CA file (PEM) the server's certificate must chain to.
    pub tls_ca: Option<std::path::PathBuf>,
    /// With --url: the model to call (default: the pipeline file's name).
    pub model: Option<String>,
    /// With --url: network threads of the client.
    pub client_threads: usize,
    /// With --url: each request's deadline (it fails past it).
    pub request_timeout: Duration,
    /// Closed-loop points: client threads, each submitting and waiting in a loop
    /// (default 1,4,16,64 when no --rate is given).
    pub concurrency: Vec<usize>,
    /// Open-loop points: requests/s sent by one generator thread whatever the answers.
    pub rate: Vec<f64>,
    /// Open-loop arrivals: exponential gaps (poisson) or evenly spaced (constant).
    pub arrivals: Arrivals,
    /// Open loop: latency from each request's scheduled time, not from its send.
    pub latency_from_schedule: bool,
    /// Open loop: the generator thread's scheduling policy (see [`load::GeneratorPolicy`]).
    pub generator_policy: load::GeneratorPolicy,
    /// Open loop at the normal policy: the generator thread's nice value (0: as it starts).
    pub generator_nice: i32,
    /// Rows (dim 0) per request.
    pub rows: usize,
    /// Pre-generated requests, cloned in turn.
    pub pool: usize,
    /// Seed of the generated inputs and of Poisson arrivals.
    pub seed: u64,
    /// Fraction of requests marked priority (evenly spread); their latency is also reported apart.
    pub priority_fraction: f64,
    /// Send requests as chunks of streams of this many chunks (needed by pipelines that keep
    /// per-stream state); each stream's final chunk is a priority task, reported apart.
    pub stream_chunks: usize,
    /// A mixed load: the pipeline inputs stream chunks carry; requests not sent as
    /// chunks carry the other inputs (a flood of plain requests beside the streams).
    pub stream_inputs: Vec<String>,
    /// A mixed load: the fraction of each sender's requests sent as stream chunks (spread evenly).
    pub stream_fraction: f64,
    /// Requests name these tenants, in these shares of the requests (spread evenly; see
    /// [`load::LoadShape::tenant`]); each tenant's latencies are reported apart. Empty: none named.
    pub tenants: Vec<load::TenantShare>,
    /// Warm-up before each point's measurement (e.g. 1s, 500ms).
    pub warmup: Duration,
    /// Measured time per point (without --stability).
    pub duration: Duration,
    /// Measure in windows until the last 3 throughputs are within 10% of their mean; report those 3.
    pub stability: bool,
    /// Stability window length.
    pub window: Duration,
    /// Most stability windows per point.
    pub max_windows: usize,
    /// A load sweep: open-loop Poisson points at these percentages of the capacity
    /// (greedy's when it runs, else each policy's own), policies alternating (see `sweep`).
    pub sweep: Vec<f64>,
    /// Sweep: the closed-loop concurrency that measures each policy's capacity.
    pub capacity_concurrency: usize,
    /// Sweep: also search the baseline's open-loop capacity (the highest Poisson rate it
    /// keeps up with) and take the percentages of that (see `sweep`).
    pub open_capacity: bool,
    /// Sweep: the capacity the percentages are of, requests/s, given instead of measured
    /// (so runs of different configs offer the same rates).
    pub capacity_rate: Option<f64>,
    /// Sweep: rounds, each running every point of every policy once.
    pub repeat: usize,
    /// Batching policies to run side by side, each on a fresh runtime.
    pub policy: Vec<BatchingPolicy>,
    /// Dynamic policy: longest a task waits for its batch to fill, µs (default: the pipeline file's).
    pub max_queue_delay_us: Option<u64>,
    /// Keep the cores awake (`[scheduler] keep_cores_awake = true`) whatever the pipeline file says.
    pub keep_cores_awake: bool,
    /// Also run ONNX Runtime directly (no Baton) on each single-ONNX-stage node, and give ratios to it.
    pub raw: bool,
    /// Raw engine: measured time per batch size.
    pub raw_duration: Duration,
    /// Raw engine: batch sizes (those above a node's max_batch are skipped).
    pub raw_batches: Vec<usize>,
    /// Raw engine: through ONNX Runtime's I/O binding (default) or plain `Session::run`.
    pub raw_io: raw::RawIo,
    /// Raw engine: loops of each node run at once, each on its own thread (pinned to the
    /// node's `cores[i % len]`) and session; their rows/s is summed (the baseline for N workers).
    pub raw_loops: usize,
    /// Raw engine: the points' ratios against raw measured beside each point (default) or
    /// against the sweep at the start (see [`raw_beside`]).
    pub raw_ratios: raw_beside::RawRatios,
    /// Pin the load-generating threads to these cores (round-robin), e.g. away from
    /// the cores the pipeline's workers are pinned to, as remote clients would be.
    pub client_cores: Vec<usize>,
    /// Write one CSV row per point here.
    pub csv: Option<PathBuf>,
    /// Write everything measured (raw included) as JSON here.
    pub json: Option<PathBuf>,
    /// Plot latency percentiles vs load here (.svg or .png).
    pub plot: Option<PathBuf>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            pipeline: None,
            url: None,
            model: None,
            client_threads: 2,
            request_timeout: Duration::from_secs(30),
            tls_ca: None,
            concurrency: Vec::new(),
            rate: Vec::new(),
            arrivals: Arrivals::Poisson,
            latency_from_schedule: false,
            generator_policy: load::GeneratorPolicy::Normal,
            generator_nice: 0,
            rows: 1,
            pool: 64,
            seed: 0,
            priority_fraction: 0.0,
            stream_chunks: 0,
            stream_inputs: Vec::new(),
            stream_fraction: 0.25,
            tenants: Vec::new(),
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(5),
            stability: false,
            window: Duration::from_secs(1),
            max_windows: 10,
            sweep: Vec::new(),
            capacity_concurrency: 32,
            open_capacity: true,
            capacity_rate: None,
            repeat: 2,
            policy: vec![BatchingPolicy::Collaborative],
            max_queue_delay_us: None,
            keep_cores_awake: false,
            raw: false,
            raw_duration: Duration::from_secs(2),
            raw_batches: vec![1, 2, 4, 8, 16, 32],
            raw_io: raw::RawIo::Binding,
            raw_loops: 1,
            raw_ratios: raw_beside::RawRatios::Beside,
            client_cores: Vec::new(),
            csv: None,
            json: None,
            plot: None,
        }
    }
}

/// Parses `5s`, `0.5s`, `500ms`, `250us`, `2m`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a duration (like 5s, 500ms)"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        other => return Err(format!("`{text}`: unknown unit `{other}` (use s, ms, us or m)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("`{text}`: {e}"))
}

/// One load point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// Closed loop with this many clients.
    Closed(usize),
    /// Open loop at this many requests/s.
    Open(f64),
}

impl Load {
    fn mode(self) -> &'static str {
        match self {
            Load::Closed(_) => "closed",
            Load::Open(_) => "open",
        }
    }

    fn value(self) -> f64 {
        match self {
            Load::Closed(c) => c as f64,
            Load::Open(r) => r,
        }
    }

    fn label(self) -> String {
        match self {
            Load::Closed(c) => format!("c={c}"),
            Load::Open(r) => format!("{r}/s"),
        }
    }
}

impl BenchOptions {
    /// The load points, closed loop first.
    pub fn loads(&self) -> Vec<Load> {
        let closed = if self.concurrency.is_empty() && self.rate.is_empty() {
            vec![1, 4, 16, 64]
        } else {
            self.concurrency.clone()
        };
        closed.into_iter().map(Load::Closed).chain(self.rate.iter().map(|&r| Load::Open(r))).collect()
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if self.concurrency.contains(&0) {
            return Err("--concurrency values must be at least 1".into());
        }
        if self.rate.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return Err("--rate values must be positive".into());
        }
        if !(self.stream_fraction > 0.0 && self.stream_fraction <= 1.0) {
            return Err("--stream-fraction must be in (0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.priority_fraction) {
            return Err("--priority-fraction must be between 0 and 1".into());
        }
        if self.rows == 0 || self.pool == 0 {
            return Err("--rows and --pool must be at least 1".into());
        }
        if self.duration.is_zero() || self.window.is_zero() || self.max_windows == 0 {
            return Err("--duration, --window and --max-windows must be positive".into());
        }
        if self.sweep.iter().any(|p| !(p.is_finite() && *p > 0.0)) {
            return Err("--sweep values must be positive percentages".into());
        }
        if !self.sweep.is_empty() && self.capacity_concurrency == 0 {
            return Err("--capacity-concurrency must be at least 1".into());
        }
        if self.capacity_rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            return Err("--capacity-rate must be a positive number of requests per second".into());
        }
        if self.capacity_rate.is_some() && self.sweep.is_empty() {
            return Err("--capacity-rate sets the base of --sweep: give --sweep too".into());
        }
        if self.policy.is_empty() {
            return Err("--policy needs at least one policy".into());
        }
        if !(0..=19).contains(&self.generator_nice) {
            return Err(format!("--generator-nice must be between 0 and 19, not {}", self.generator_nice));
        }
        if self.generator_nice != 0 && self.generator_policy.is_realtime() {
            return Err("--generator-nice sets the normal policy's nice: not with --generator-policy realtime".into());
        }
        if self.raw_loops == 0 {
            return Err("--raw-loops must be at least 1".into());
        }
        Ok(())
    }

    pub(crate) fn settings(&self) -> serde_json::Value {
        let mut settings = self.load_settings();
        if !self.tenants.is_empty() {
            settings["tenants"] = json!(self.tenants);
        }
        settings
    }

    fn load_settings(&self) -> serde_json::Value {
        json!({
            "concurrency": self.loads().iter().filter_map(|l| match l { Load::Closed(c) => Some(*c), _ => None }).collect::<Vec<_>>(),
            "rate": self.rate,
            "arrivals": self.arrivals,
            "latency_from_schedule": self.latency_from_schedule,
            "generator_policy": self.generator_policy,
            "generator_nice": self.generator_nice,
            "rows": self.rows,
            "pool": self.pool,
            "seed": self.seed,
            "priority_fraction": self.priority_fraction,
            "stream_chunks": self.stream_chunks,
            "stream_inputs": self.stream_inputs,
            "stream_fraction": self.stream_fraction,
            "warmup_s": self.warmup.as_secs_f64(),
            "duration_s": self.duration.as_secs_f64(),
            "stability": self.stability,
            "window_s": self.window.as_secs_f64(),
            "max_windows": self.max_windows,
            "policies": self.policy.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "sweep": self.sweep,
            "capacity_concurrency": self.capacity_concurrency,
            "open_capacity": self.open_capacity,
            "capacity_rate": self.capacity_rate,
            "repeat": self.repeat,
            "max_queue_delay_us": self.max_queue_delay_us,
            "keep_cores_awake": self.keep_cores_awake,
            "raw": self.raw,
            "raw_duration_s": self.raw_duration.as_secs_f64(),
            "raw_batches": self.raw_batches,
            "raw_io": self.raw_io.name(),
            "raw_loops": self.raw_loops,
            "raw_ratios": self.raw_ratios.name(),
        })
    }
}

/// Runs `baton bench` with the standard engines: exit 0 when every request succeeded,
/// 1 when some failed, 2 when the bench could not run.
pub fn run(args: BenchOptions) -> ExitCode {
    run_with(args, &baton_engines::standard_registry())
}

/// [`run`] with the given engines and Rust stages.
pub fn run_with(args: BenchOptions, engines: &baton::EngineRegistry) -> ExitCode {
    match bench_with(&args, engines) {
        Ok(report) if report.points.iter().any(|p| p.errors > 0) => {
            eprintln!("some requests failed (see the errors column)");
            ExitCode::from(1)
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the whole benchmark: raw engine (with `--raw`), then every policy × load
/// point; prints the tables to stdout, writes the requested files, and returns the report.
pub fn bench(args: &BenchOptions) -> Result<BenchReport, String> {
    bench_with(args, &baton_engines::standard_registry())
}

/// [`bench`] with the given engines and Rust stages.
pub fn bench_with(args: &BenchOptions, engines: &baton::EngineRegistry) -> Result<BenchReport, String> {
    args.check()?;
    if let Some(url) = &args.url {
        return bench_remote(args, url);
    }
    let file = args.pipeline.as_ref().ok_or("give the pipeline file (or --url to measure a server)")?;
    let config = PipelineConfig::read(file).map_err(|e| e.to_string())?;
    let spec = PipelineSpec::build(&config, Some(file), engines).map_err(|e| e.to_string())?;
    if let Some(node) = spec.nodes.iter().find(|n| n.max_batch < args.rows) {
        return Err(format!("--rows {} is more than node `{}`'s max_batch {}", args.rows, node.name, node.max_batch));
    }
    if args.stream_chunks == 0 {
        if let Some(node) = spec.nodes.iter().find(|n| !n.state.is_empty()) {
            return Err(format!("node `{}` keeps per-stream state: give --stream-chunks N", node.name));
        }
    }
    load::tenant_indices(&args.tenants, &spec.fairness.tenants)?;
    let inputs: Vec<baton::TensorSpec> = spec.inputs.iter().map(|i| i.spec.clone()).collect();
    let pool = request_pool(args, &inputs)?;
    let loads = args.loads();

    let raw = if args.raw { Some(measure_raw(args, &spec)?) } else { None };

    if !args.sweep.is_empty() {
        return run_sweep(args, &config, file, engines, &spec, &pool);
    }
    let probe = match &raw {
        Some(raw) if args.raw_ratios == raw_beside::RawRatios::Beside => {
            raw_beside::RawProbe::new(&spec, &raw_options(args), raw)
        }
        _ => None,
    };
    // A point at concurrency 1 has its latency against raw's batch-1 path: measured beside it too.
    let latency = |load: Option<&Load>| load.is_some_and(|l| *l == Load::Closed(1));
    let mut points = Vec::new();
    let mut batch_sizes = Vec::new();
    for policy in &args.policy {
        let runtime = policy_runtime(&config, *policy, args, file, engines)?;
        let mut before = probe.as_ref().map(|p| p.sample(latency(loads.first()))).transpose()?;
        for (i, &load) in loads.iter().enumerate() {
            let mut point = run_point(&runtime, &pool, args, policy.name(), load);
            if let (Some(probe), Some(previous)) = (&probe, before.take()) {
                // The measurement after this point is the one before the next.
                let next = loads.get(i + 1);
                let after = probe.sample(latency(Some(&load)) || latency(next))?;
                point.raw_beside = Some(probe.beside(point.rows_per_s, previous, after.clone()));
                before = Some(after);
            }
            points.push(point);
        }
        batch_sizes.push(report::policy_batches(policy.name(), &runtime.node_stats(), raw.as_ref()));
        runtime.shutdown();
    }
    if let Some(raw) = &raw {
        add_ratios(&mut points, raw);
    }

    print_points(&spec, args, &points, raw.as_ref(), &batch_sizes);
    let node_names: Vec<String> = spec.nodes.iter().map(|n| n.name.clone()).collect();
    let report = BenchReport {
        pipeline: spec.name.clone(),
        file: file.display().to_string(),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        settings: args.settings(),
        raw,
        points,
        batch_sizes,
    };
    write_files(args, &report, &node_names)?;
    Ok(report)
}

/// The raw engine's figures for every node at each `--raw-batches` size it can take, printed as a table.
fn measure_raw(args: &BenchOptions, spec: &PipelineSpec) -> Result<raw::RawReport, String> {
    let batches =
        spec.nodes.iter().map(|n| args.raw_batches.iter().filter(|&&b| b <= n.max_batch).count()).sum::<usize>().max(1);
    let bar = progress_bar(batches as u64, "raw engine".into());
    let report = raw::measure(spec, &raw_options(args), |node, batch| {
        bar.set_message(format!("{node} batch {batch}"));
        bar.inc(1);
    });
    bar.finish_and_clear();
    let report = report?;
    println!("{}", report::raw_table(&report, args.raw_duration.as_secs_f64()));
    Ok(report)
}

/// The raw engine's options the arguments say, every node.
fn raw_options(args: &BenchOptions) -> raw::RawOptions {
    raw::RawOptions {
        batches: args.raw_batches.clone(),
        duration: args.raw_duration,
        seed: args.seed,
        io: args.raw_io,
        loops: args.raw_loops,
        node: None,
    }
}

/// Prints the points (with their ratios to the raw engine), the per-node table and the batch-size table.
fn print_points(
    spec: &PipelineSpec,
    args: &BenchOptions,
    points: &[PointResult],
    raw: Option<&raw::RawReport>,
    batch_sizes: &[report::PolicyBatches],
) {
    println!("Baton: pipeline `{}`, {} row(s) per request", spec.name, args.rows);
    print!("{}", report::points_table(points));
    if let Some(raw) = raw {
        if let Some(b) = &raw.bottleneck {
            if points.iter().any(|p| p.raw_beside.is_some()) {
                println!(
                    "×raw = rows/s ÷ raw of bottleneck node `{}` at its best batch {}, measured beside the \
                     point (below)",
                    b.node, b.batch
                );
            } else {
                println!(
                    "×raw = rows/s ÷ raw best of bottleneck node `{}` ({:.0} rows/s at batch {})",
                    b.node, b.rows_per_s, b.batch
                );
            }
        }
        if let Some(us) = raw.batch1_path_us {
            if points.iter().any(|p| p.raw_beside.is_some()) {
                println!("p50−raw = p50 − raw batch-1 latency along the critical path, concurrency 1 only");
            } else {
                println!(
                    "p50−raw = p50 − raw batch-1 latency along the critical path ({us:.1} µs), concurrency 1 only"
                );
            }
        }
    }
    print!("{}", report::raw_beside_table(points));
    print!("{}", report::tenants_table(points));
    print!("{}", report::ticks_table(points));
    print!("{}", report::sends_table(points));
    println!();
    print!("{}", report::nodes_table(points));
    println!();
    print!("{}", report::batches_table(batch_sizes));
    if points.iter().any(|p| p.cpu.is_some()) {
        println!();
        print!("{}", cpu::cpu_table(points));
    }
}

/// A runtime of `config` under `policy` (with `--max-queue-delay-us` and `--keep-cores-awake`, when given).
fn policy_runtime(
    config: &PipelineConfig,
    policy: BatchingPolicy,
    args: &BenchOptions,
    file: &Path,
    engines: &baton::EngineRegistry,
) -> Result<Runtime, String> {
    let mut cfg = config.clone();
    cfg.scheduler.policy = policy;
    if let Some(delay) = args.max_queue_delay_us {
        cfg.scheduler.max_queue_delay_us = delay;
    }
    cfg.scheduler.keep_cores_awake |= args.keep_cores_awake;
    Runtime::from_config(&cfg, Some(file), engines).map_err(|e| format!("policy {}: {e}", policy.name()))
}

/// `--sweep`: one runtime per policy, kept up, [`sweep::sweep`] over them; prints
/// the summary, writes `--json` (every point) and `--plot` (the sweep's plot).
fn run_sweep(
    args: &BenchOptions,
    config: &PipelineConfig,
    file: &Path,
    engines: &baton::EngineRegistry,
    spec: &PipelineSpec,
    pool: &RequestPool,
) -> Result<BenchReport, String> {
    let mut runtimes = Vec::new();
    for &policy in &args.policy {
        runtimes.push((policy, policy_runtime(config, policy, args, file, engines)?));
    }
    let report = sweep::sweep(&runtimes, pool, args);
    for (_, runtime) in runtimes {
        runtime.shutdown();
    }
    let summary = sweep::summarize(&report);
    println!("Baton: pipeline `{}`, load sweep ({} rounds)", spec.name, args.repeat.max(1));
    print!("{}", sweep::table(&report, &summary));
    if let Some(path) = &args.json {
        let mut value = serde_json::to_value(&report).map_err(|e| e.to_string())?;
        value["settings"] = args.settings();
        value["pipeline"] = json!(spec.name);
        write(path, &(serde_json::to_string_pretty(&value).map_err(|e| e.to_string())? + "\n"))?;
    }
    if let Some(path) = &args.plot {
        plot::sweep_plot(path, &spec.name, &sweep::plot_series(&summary))?;
    }
    let points: Vec<PointResult> = report.points.into_iter().map(|p| p.point).collect();
    if let Some(path) = &args.csv {
        let node_names: Vec<String> = spec.nodes.iter().map(|n| n.name.clone()).collect();
        write(path, &report::csv(&points, &node_names))?;
    }
    Ok(BenchReport {
        pipeline: spec.name.clone(),
        file: file.display().to_string(),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        settings: args.settings(),
        raw: None,
        points,
        batch_sizes: Vec::new(),
    })
}

/// Writes the CSV, JSON and plot the arguments ask for.
pub(crate) fn write_files(args: &BenchOptions, report: &BenchReport, node_names: &[String]) -> Result<(), String> {
    if let Some(path) = &args.csv {
        write(path, &report::csv(&report.points, node_names))?;
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        write(path, &(text + "\n"))?;
    }
    if let Some(path) = &args.plot {
        plot::plot(path, &report.pipeline, &report.points)?;
    }
    Ok(())
}

/// The model `--url` measures: `--model`, else the pipeline file's name.
fn remote_model(args: &BenchOptions) -> Result<String, String> {
    if let Some(model) = &args.model {
        return Ok(model.clone());
    }
    let file = args.pipeline.as_ref().ok_or("--url needs --model NAME (or a pipeline file naming the model)")?;
    Ok(PipelineConfig::read(file).map_err(|e| e.to_string())?.pipeline.name)
}

/// The loads against a server at `url`: each point's policy column names the URL.
fn bench_remote(args: &BenchOptions, url: &str) -> Result<BenchReport, String> {
    if args.raw {
        return Err("--raw measures the engine in this process: leave it out with --url".into());
    }
    if !args.tenants.is_empty() {
        return Err("--tenants: the KServe v2 protocol carries no tenant: leave it out with --url".into());
    }
    let model = remote_model(args)?;
    let client = remote::ClientSettings { timeout: args.request_timeout, tls_ca: args.tls_ca.clone() };
    let remote = Remote::new(url, &model, args.client_threads, &args.client_cores, client)?;
    let inputs = remote.input_specs()?;
    let pool = request_pool(args, &inputs)?;
    let label = remote.url();
    let points: Vec<PointResult> =
        args.loads().into_iter().map(|load| run_point(&remote, &pool, args, &label, load)).collect();
    println!("{label}: model `{model}`, {} row(s) per request", args.rows);
    print!("{}", report::points_table(&points));
    let failures = remote.failures();
    for (what, n) in &failures {
        println!("failed: {n} × {what}");
    }
    let mut settings = args.settings();
    settings["url"] = json!(label);
    settings["model"] = json!(model);
    settings["failures"] = json!(failures);
    settings["answered"] = json!(remote.answered());
    let report = BenchReport {
        pipeline: model,
        file: label,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        settings,
        raw: None,
        points,
        batch_sizes: Vec::new(),
    };
    write_files(args, &report, &[])?;
    Ok(report)
}

/// The requests the load sends: every input in each request, or with
/// `--stream-inputs` a mixed load (stream chunks with those inputs, plain
/// requests with the others).
fn request_pool(args: &BenchOptions, inputs: &[baton::TensorSpec]) -> Result<RequestPool, String> {
    let generate = |inputs: &[baton::TensorSpec], seed: u64| {
        RequestPool::from_inputs(inputs, args.pool, args.rows, seed, args.priority_fraction)
    };
    if args.stream_inputs.is_empty() {
        return Ok(generate(inputs, args.seed)?.with_streams(args.stream_chunks).with_tenants(args.tenants.clone()));
    }
    if let Some(name) = args.stream_inputs.iter().find(|n| !inputs.iter().any(|i| &i.name == *n)) {
        return Err(format!("--stream-inputs: the pipeline has no input `{name}`"));
    }
    if args.stream_chunks == 0 {
        return Err("--stream-inputs needs --stream-chunks N".into());
    }
    let (streamed, plain): (Vec<_>, Vec<_>) =
        inputs.iter().cloned().partition(|i| args.stream_inputs.contains(&i.name));
    if plain.is_empty() {
        return Err("--stream-inputs names every input: a mixed load needs inputs for its plain requests".into());
    }
    let plain = generate(&plain, args.seed.wrapping_add(1))?;
    Ok(generate(&streamed, args.seed)?
        .with_streams(args.stream_chunks)
        .with_plain(plain, args.stream_fraction)
        .with_tenants(args.tenants.clone()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Sets each point's ratios to the raw engine: to the raw figures measured beside it
/// where it has them, else to the sweep's.
pub fn add_ratios(points: &mut [PointResult], raw: &raw::RawReport) {
    for p in points {
        let (rows_per_s, batch1_path_us) = match &p.raw_beside {
            Some(b) => (Some(b.rows_per_s()), b.batch1_path_us()),
            None => (raw.bottleneck.as_ref().map(|b| b.rows_per_s), raw.batch1_path_us),
        };
        p.ratio_to_raw = rows_per_s.map(|raw| p.rows_per_s / raw);
        if p.mode == "closed" && p.load == 1.0 && p.latency.count > 0 {
            p.p50_minus_raw_us = batch1_path_us.map(|us| p.latency.p50_us as f64 - us);
        }
    }
}

/// A progress bar on stderr (drawn only when stderr is a terminal).
fn progress_bar(len: u64, prefix: String) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix:>24} [{bar:30}] {msg}")
            .expect("a valid progress template")
            .progress_chars("=> "),
    );
    bar.set_prefix(prefix);
    bar
}

/// Sleeps until `until`, moving the bar to the milliseconds elapsed since `start`.
fn wait_until(until: Instant, start: Instant, bar: &ProgressBar) {
    loop {
        let now = Instant::now();
        bar.set_position(now.duration_since(start).as_millis() as u64);
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

/// Runs one load point on a target: warm-up, then measured windows.
fn run_point(target: &dyn Target, pool: &RequestPool, args: &BenchOptions, policy: &str, load: Load) -> PointResult {
    let measured = if args.stability { args.window * args.max_windows as u32 } else { args.duration };
    let bar = progress_bar((args.warmup + measured).as_millis() as u64, format!("{policy} {}", load.label()));
    bar.set_message("warm-up");
    let shards = match load {
        Load::Closed(c) => c,
        Load::Open(_) => 16,
    };
    let recorder = Arc::new(Recorder::with_tenants(shards, pool.tenant_names()));
    let start = Instant::now();
    // The process's CPU time over the measured windows (read as the first starts and the last ends).
    let mut cpu_from = None;
    let mut cpu_to = None;
    // Of it, the core keepers' (`keep_cores_awake`), left out of the runtime's CPU.
    let (mut keepers_from, mut keepers_to) = (0, 0);
    // The scheduler's tick lateness over the same interval.
    let mut ticks_from = None;
    let mut ticks_to = None;
    let windows = std::thread::scope(|scope| {
        let driver = match load {
            Load::Closed(c) => load::closed_loop(scope, target, pool, &recorder, c, &args.client_cores),
            Load::Open(rate) => {
                let schedule = load::Schedule {
                    rate,
                    arrivals: args.arrivals,
                    seed: args.seed,
                    from_schedule: args.latency_from_schedule,
                    realtime: args.generator_policy.is_realtime(),
                    nice: args.generator_nice,
                };
                load::open_loop(scope, target, pool, &recorder, schedule, &args.client_cores)
            }
        };
        wait_until(start + args.warmup, start, &bar);
        recorder.take();
        bar.set_message("measuring");
        let mut windows: Vec<Window> = Vec::new();
        cpu_from = cpu::process_cpu_ns();
        keepers_from = target.keepers_cpu_ns();
        ticks_from = target.ticks();
        let mut mark = (Instant::now(), target.node_stats());
        let length = if args.stability { args.window } else { args.duration };
        loop {
            wait_until(mark.0 + length, start, &bar);
            let tally = recorder.take();
            cpu_to = cpu::process_cpu_ns();
            keepers_to = target.keepers_cpu_ns();
            ticks_to = target.ticks();
            let now = Instant::now();
            let stats = target.node_stats();
            let elapsed = now - mark.0;
            windows.push(Window { elapsed, tally, nodes_start: mark.1, nodes_end: stats.clone() });
            mark = (now, stats);
            if !args.stability || windows.len() >= args.max_windows {
                break;
            }
            let throughputs: Vec<f64> = windows.iter().map(Window::throughput).collect();
            if measure::is_stable(&throughputs, 3, 0.10) {
                break;
            }
            bar.set_message(format!("window {}", windows.len() + 1));
        }
        bar.set_message("stopping");
        driver.stop();
        windows
    });
    // Open loop: let what is still in flight finish before the next point.
    let drain_until = Instant::now() + Duration::from_secs(60);
    while target.in_flight() > 0 && Instant::now() < drain_until {
        std::thread::sleep(Duration::from_millis(1));
    }
    bar.finish_and_clear();
    let stable = args.stability.then(|| {
        let throughputs: Vec<f64> = windows.iter().map(Window::throughput).collect();
        measure::is_stable(&throughputs, 3, 0.10)
    });
    let reported = if args.stability { 3 } else { 1 };
    let mut point = point_result(policy, load.mode(), load.value(), args.rows, &windows, reported, stable);
    point.send_cpu_us = recorder.send_cpu_us();
    point.generator_realtime = recorder.generator_realtime();
    if !args.stability && args.url.is_none() {
        if let (Some(from), Some(to)) = (cpu_from, cpu_to) {
            let (cpu_ns, keepers_ns) = (to.saturating_sub(from), keepers_to.saturating_sub(keepers_from));
            point.cpu = cpu::RuntimeCpu::less_keepers(cpu_ns, keepers_ns, point.seconds, &point.nodes, point.requests);
        }
    }
    if let (Some(from), Some(to)) = (ticks_from, ticks_to) {
        point.scheduler_ticks = Some(measure::TickSummary::of(&to.since(&from), point.seconds));
    }
    point
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("0.1s").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn a_given_capacity_must_be_a_positive_rate_and_needs_a_sweep() {
        let with =
            |sweep: Vec<f64>, rate: f64| BenchOptions { sweep, capacity_rate: Some(rate), ..BenchOptions::default() };
        assert!(with(vec![50.0], 1000.0).check().is_ok());
        assert!(with(vec![50.0], 0.0).check().unwrap_err().contains("--capacity-rate"));
        assert!(with(vec![50.0], f64::NAN).check().unwrap_err().contains("--capacity-rate"));
        assert!(with(vec![], 1000.0).check().unwrap_err().contains("--sweep"));
    }

    #[test]
    fn ratios_use_the_bottleneck_and_the_batch1_path() {
        let raw = raw::RawReport {
            io: raw::RawIo::Binding,
            loops: 1,
            nodes: vec![],
            skipped: vec![],
            bottleneck: Some(raw::Bottleneck { node: "mlp".into(), batch: 32, rows_per_s: 10_000.0 }),
            batch1_path_us: Some(80.0),
        };
        let window = Window {
            elapsed: Duration::from_secs(1),
            tally: {
                let mut t = measure::Tally::default();
                for _ in 0..9000 {
                    t.all.record(100).unwrap();
                }
                t
            },
            nodes_start: vec![],
            nodes_end: vec![],
        };
        let mut points = vec![
            point_result("collaborative", "closed", 1.0, 1, std::slice::from_ref(&window), 1, None),
            point_result("collaborative", "closed", 4.0, 1, std::slice::from_ref(&window), 1, None),
        ];
        add_ratios(&mut points, &raw);
        assert!((points[0].ratio_to_raw.unwrap() - 0.9).abs() < 1e-9);
        assert_eq!(points[0].p50_minus_raw_us, Some(20.0));
        assert_eq!(points[1].p50_minus_raw_us, None, "only concurrency 1");
    }
}
