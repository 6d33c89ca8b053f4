//! The `baton` command: check and run pipelines.
//!
//! - `baton check PIPELINE.toml` validates a pipeline (models included) and
//!   prints its node graph; exit 0, or exit 2 with the error.
//! - `baton run PIPELINE.toml` starts it, feeds requests (from files or
//!   generated), and prints outputs as JSON lines and a latency summary.

mod bench_args;
mod flood;
mod inputs;
mod plan;
mod plan_hosts;
mod plan_partition;
mod plan_place;
mod plan_schedule;
mod profile;
mod profile_gaps;
mod profile_jobs;
mod run;
mod serve_args;
mod simulate;
mod suggest;
mod tune;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "baton", version, about = "Real-time inference runtime for pipelines of collaborating ONNX models")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a pipeline file (models included) and print its node graph.
    Check {
        /// The pipeline file.
        pipeline: PathBuf,
    },
    /// Run a pipeline on inputs from files or generated, printing outputs as JSON.
    Run(run::RunArgs),
    /// Benchmark a pipeline: latency vs load, batching policies side by side, ratios to the raw engine.
    Bench(bench_args::BenchArgs),
    /// Serve pipelines over KServe v2 (HTTP and gRPC) with Prometheus metrics.
    Serve(serve_args::ServeArgs),
    /// Benchmark request-level tenant orders (weighted-fair, stride, fifo) on generated traces.
    BenchFairness(bench_args::FairnessArgs),
    /// Plan offline: schedules (list, periodic, ILP) and graph partitions.
    Plan(plan::PlanArgs),
    /// Measure each node's latency per batch size and its memory, for the planners.
    Profile(profile::ProfileArgs),
    /// Flood a KServe v2 server from many connections: each answer status's count and latency.
    Flood(flood::FloodArgs),
    /// Simulate a pipeline under bench's loads in virtual time, with the runtime's scheduler and a profile's batch times.
    Simulate(Box<simulate::SimulateArgs>),
    /// Search a pipeline's scheduling knobs for the most requests/s meeting an SLO, in the simulator.
    Tune(tune::TuneArgs),
    /// Measure the machine's core stalls (the OS or the hypervisor taking a busy core) for `baton simulate --core-stalls`.
    Stalls(StallsArgs),
}

/// `baton stalls` arguments.
#[derive(clap::Args)]
struct StallsArgs {
    /// Where to write the record (JSON).
    #[arg(long)]
    out: PathBuf,
    /// How long to watch every core at once.
    #[arg(long, default_value = "5s", value_parser = baton_bench::parse_duration)]
    duration: std::time::Duration,
    /// A gap between two clock reads longer than this is a stall, µs.
    #[arg(long, default_value_t = 2.0)]
    threshold_us: f64,
    /// The cores to watch (default: every core this process may run on).
    #[arg(long, value_delimiter = ',')]
    cores: Option<Vec<usize>>,
    /// The share of the time each watching thread spins, in (0, 1]: below 1 it spins in
    /// bursts of 500 µs and sleeps between them, as a runtime at part load keeps a core.
    #[arg(long, default_value_t = 1.0)]
    duty: f64,
}

/// The engines `baton` runs pipelines with: ONNX Runtime, the cost model, and
/// the Rust stages of the shipped pipelines (`configs/collab.toml`).
fn engines() -> baton::EngineRegistry {
    baton_stages::collab::registry()
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("BATON_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Check { pipeline } => match baton::PipelineSpec::from_file(&pipeline, &engines()) {
            Ok(spec) => {
                print!("{}", spec.describe());
                println!("ok");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Command::Run(args) => run::run(args, &engines()),
        Command::Bench(args) => baton_bench::run_with(args.options(), &engines()),
        Command::Serve(args) => match args.options() {
            Ok(options) => baton_server::run_with(options, &engines()),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Command::Plan(args) => plan::run(args),
        Command::BenchFairness(args) => baton_bench::fairness::run(args.options()),
        Command::Profile(args) => profile::run(args, &engines()),
        Command::Simulate(args) => baton_bench::simulate::run(args.options(), &engines()),
        Command::Flood(args) => flood::run(args),
        Command::Tune(args) => baton_bench::tune::run(args.options(), &engines()),
        Command::Stalls(a) => {
            if !(a.threshold_us.is_finite() && a.threshold_us > 0.0) {
                eprintln!("error: --threshold-us must be a positive number of µs, not {}", a.threshold_us);
                return ExitCode::from(2);
            }
            let threshold = std::time::Duration::from_secs_f64(a.threshold_us / 1e6);
            let how = baton_bench::stalls::Watch { duration: a.duration, threshold, duty: a.duty };
            baton_bench::stalls::run(a.cores, how, &a.out)
        }
    }
}
