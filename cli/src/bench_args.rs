//! The clap arguments of `baton bench` and `baton bench-fairness`, turned into
//! the plain options the `baton-bench` crate runs on.

use std::path::PathBuf;
use std::time::Duration;

use baton::BatchingPolicy;
use baton_bench::fairness::FairnessOptions;
use baton_bench::load::{Arrivals, GeneratorPolicy};
use baton_bench::raw::RawIo;
use baton_bench::raw_beside::RawRatios;
use baton_bench::{parse_duration, BenchOptions};
use clap::builder::{PossibleValuesParser, TypedValueParser};

/// `baton bench` arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// The pipeline file (with --url: optional, names the model when --model does not).
    #[arg(required_unless_present = "url")]
    pub pipeline: Option<PathBuf>,
    /// Drive a KServe v2 server over the network instead of a runtime in this process:
    /// http://HOST:PORT (binary tensors) or grpc://HOST:PORT, or over TLS https:// or grpcs://
    /// (with --tls-ca). Inputs follow the model's metadata.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// With a TLS --url: the CA file (PEM) the server's certificate must chain to.
    #[arg(long, value_name = "FILE", requires = "url")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// With --url: the model to call (default: the pipeline file's name).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// With --url: network threads of the client.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub client_threads: usize,
    /// With --url: each request's deadline (it fails past it).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Closed-loop points: client threads, each submitting and waiting in a loop
    /// (default 1,4,16,64 when no --rate is given).
    #[arg(long, value_delimiter = ',', value_name = "C,..")]
    pub concurrency: Vec<usize>,
    /// Open-loop points: requests/s sent by one generator thread whatever the answers.
    #[arg(long, value_delimiter = ',', value_name = "R,..")]
    pub rate: Vec<f64>,
    /// Open-loop arrivals: exponential gaps (poisson) or evenly spaced (constant).
    #[arg(long, default_value = "poisson", value_parser = arrivals_parser())]
    pub arrivals: Arrivals,
    /// Open loop: count each request's latency from its scheduled time, not from the moment
    /// the generator sent it: a send the generator could not make on time (its cores busy)
    /// then counts its lag, as a client whose arrivals do not wait for the server's would see
    /// it. Each point reports the sends' mean lag either way. (In `baton simulate`, sends lag
    /// only with its generator thread, --send-cpu-us.)
    #[arg(long)]
    pub latency_from_schedule: bool,
    /// Open loop: the generator thread's scheduling. `normal`: it shares the cores as any
    /// thread, behind real-time workers (`foreground_realtime`). `realtime`: the FIFO real-time
    /// policy, above the runtime's real-time workers, so no thread of the runtime holds a send
    /// back (needs root or CAP_SYS_NICE; where the kernel refuses, the sends run at the normal
    /// policy and the point's open-loop sends line is not marked). Each real-time send preempts
    /// whatever runs on its core, which costs the pipeline where sends are frequent; keep it off
    /// pinned workers' cores (--client-cores). See BENCHMARKS.md.
    #[arg(long, default_value = "normal", value_parser = generator_policy_parser())]
    pub generator_policy: GeneratorPolicy,
    /// Open loop at the normal policy: the generator thread's nice value, 0 to 19. At 0 the
    /// generator, waking for a send, preempts the batch running on its core about every time,
    /// and that batch waits out the generator's run; at 10 a running batch goes on, and the
    /// sends wait for it instead. See docs/simulate.md, "Where the real runs wait for a core".
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub generator_nice: i32,
    /// Rows (dim 0) per request.
    #[arg(long, default_value_t = 1)]
    pub rows: usize,
    /// Pre-generated requests, cloned in turn.
    #[arg(long, default_value_t = 64)]
    pub pool: usize,
    /// Seed of the generated inputs and of Poisson arrivals.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Fraction of requests marked priority (evenly spread); their latency is also reported apart.
    #[arg(long, default_value_t = 0.0)]
    pub priority_fraction: f64,
    #[command(flatten)]
    pub streams: StreamArgs,
    /// Requests name these tenants of the pipeline's [fairness] table, in these shares of the
    /// requests (relative counts, spread evenly; a flood: alice=9,bob=1); each tenant's
    /// latencies are reported apart.
    #[arg(long, value_name = "NAME=SHARE,..", value_parser = tenants_parser)]
    pub tenants: Option<TenantList>,
    /// Warm-up before each point's measurement (e.g. 1s, 500ms).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Measured time per point (without --stability).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Measure in windows until the last 3 throughputs are within 10% of their mean; report those 3.
    #[arg(long)]
    pub stability: bool,
    /// Stability window length.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub window: Duration,
    /// Most stability windows per point.
    #[arg(long, default_value_t = 10)]
    pub max_windows: usize,
    /// A load sweep: open-loop Poisson points at these percentages of the capacity
    /// (greedy's when it runs, else each policy's own), policies alternating.
    #[arg(long, value_delimiter = ',', value_name = "PERCENT,..")]
    pub sweep: Vec<f64>,
    /// Sweep: the closed-loop concurrency that measures each policy's capacity.
    #[arg(long, default_value_t = 32)]
    pub capacity_concurrency: usize,
    /// Sweep: where the percentages come from: `open` searches the highest Poisson rate
    /// the baseline keeps up with; `closed` takes the closed-loop throughput.
    #[arg(long, default_value = "open", value_parser = ["open", "closed"])]
    pub capacity_search: String,
    /// Sweep: take the percentages of this rate (requests/s) instead of measuring a capacity.
    #[arg(long, value_name = "REQ_PER_S")]
    pub capacity_rate: Option<f64>,
    /// Sweep: rounds, each running every point of every policy once.
    #[arg(long, default_value_t = 2)]
    pub repeat: usize,
    /// Batching policies to run side by side, each on a fresh runtime.
    #[arg(long, value_delimiter = ',', default_value = "collaborative", value_parser = policy_parser())]
    pub policy: Vec<BatchingPolicy>,
    /// Dynamic policy: longest a task waits for its batch to fill, µs (default: the pipeline file's).
    #[arg(long)]
    pub max_queue_delay_us: Option<u64>,
    /// Keep the cores awake between requests (`[scheduler] keep_cores_awake = true`, docs/scheduling.md
    /// "Cores kept awake") whatever the pipeline file says; their keepers' CPU is left out of the
    /// runtime's CPU figures and reported apart.
    #[arg(long)]
    pub keep_cores_awake: bool,
    /// Also run ONNX Runtime directly (no Baton) on each single-ONNX-stage node, and give ratios to it.
    #[arg(long)]
    pub raw: bool,
    /// Raw engine: measured time per batch size.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub raw_duration: Duration,
    /// Raw engine: batch sizes (those above a node's max_batch are skipped).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
    pub raw_batches: Vec<usize>,
    /// Raw engine: how inputs and outputs go to ONNX Runtime: `binding` (I/O binding, outputs
    /// bound once to host memory, inputs bound before every run) or `plain` (`Session::run`).
    #[arg(long, default_value = "binding", value_parser = raw_io_parser())]
    pub raw_io: RawIo,
    /// Raw engine: N loops of each node at once, each on its own thread (pinned to the node's
    /// cores[i % len]) and session, their rows/s summed: the baseline for N workers.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub raw_loops: usize,
    /// Raw engine: the points' ratios against raw measured again just before and just after
    /// each point (`beside`: the bottleneck node at its best batch, and batch 1 beside points at
    /// concurrency 1) or against the sweep at the start (`start`).
    #[arg(long, default_value = "beside", value_parser = raw_ratios_parser())]
    pub raw_ratios: RawRatios,
    /// Pin the load-generating threads to these cores (round-robin), e.g. away from
    /// the cores the pipeline's workers are pinned to, as remote clients would be.
    #[arg(long, value_delimiter = ',')]
    pub client_cores: Vec<usize>,
    /// Write one CSV row per point here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write everything measured (raw included) as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Plot latency percentiles vs load here (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

impl BenchArgs {
    /// The options these arguments say.
    pub fn options(self) -> BenchOptions {
        BenchOptions {
            pipeline: self.pipeline,
            url: self.url,
            model: self.model,
            client_threads: self.client_threads,
            request_timeout: self.request_timeout,
            tls_ca: self.tls_ca,
            concurrency: self.concurrency,
            rate: self.rate,
            arrivals: self.arrivals,
            latency_from_schedule: self.latency_from_schedule,
            generator_policy: self.generator_policy,
            generator_nice: self.generator_nice,
            rows: self.rows,
            pool: self.pool,
            seed: self.seed,
            priority_fraction: self.priority_fraction,
            stream_chunks: self.streams.stream_chunks,
            stream_inputs: self.streams.stream_inputs,
            stream_fraction: self.streams.stream_fraction,
            tenants: self.tenants.map(|t| t.0).unwrap_or_default(),
            warmup: self.warmup,
            duration: self.duration,
            stability: self.stability,
            window: self.window,
            max_windows: self.max_windows,
            sweep: self.sweep,
            capacity_concurrency: self.capacity_concurrency,
            open_capacity: self.capacity_search == "open",
            capacity_rate: self.capacity_rate,
            repeat: self.repeat,
            policy: self.policy,
            max_queue_delay_us: self.max_queue_delay_us,
            keep_cores_awake: self.keep_cores_awake,
            raw: self.raw,
            raw_duration: self.raw_duration,
            raw_batches: self.raw_batches,
            raw_io: self.raw_io,
            raw_loops: self.raw_loops,
            raw_ratios: self.raw_ratios,
            client_cores: self.client_cores,
            csv: self.csv,
            json: self.json,
            plot: self.plot,
        }
    }
}

/// `baton bench-fairness` arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct FairnessArgs {
    /// Slots (batches) per trace.
    #[arg(long, default_value_t = 4000)]
    pub slots: usize,
    /// Jobs per batch (the node's max_batch, one row per job).
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Seed of the generated traces.
    #[arg(long, default_value_t = 4)]
    pub seed: u64,
    /// Decisions timed per policy for the cost per decision.
    #[arg(long, default_value_t = 2_000_000)]
    pub decisions: usize,
    /// Also run the flood through a real runtime (a simulated 1 ms-per-batch node) for this long per
    /// policy and case, e.g. 2s; 0 skips it.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub runtime: std::time::Duration,
}

impl FairnessArgs {
    /// The options these arguments say.
    pub fn options(self) -> FairnessOptions {
        FairnessOptions {
            slots: self.slots,
            batch: self.batch,
            seed: self.seed,
            decisions: self.decisions,
            runtime: self.runtime,
        }
    }
}

/// `--policy` values: the names [`BatchingPolicy::name`] gives.
/// `--tenants`' value: the load's tenants and shares.
#[derive(Clone, Debug)]
pub struct TenantList(pub Vec<baton_bench::load::TenantShare>);

fn tenants_parser(text: &str) -> Result<TenantList, String> {
    baton_bench::load::parse_tenants(text).map(TenantList)
}

fn policy_parser() -> impl TypedValueParser<Value = BatchingPolicy> {
    PossibleValuesParser::new(BatchingPolicy::ALL.map(BatchingPolicy::name))
        .map(|name| BatchingPolicy::from_name(&name).expect("one of the possible values"))
}

/// `--raw-io` values: the names [`RawIo::name`] gives.
fn raw_io_parser() -> impl TypedValueParser<Value = RawIo> {
    PossibleValuesParser::new(RawIo::ALL.map(RawIo::name))
        .map(|name| RawIo::from_name(&name).expect("one of the possible values"))
}

fn raw_ratios_parser() -> impl TypedValueParser<Value = RawRatios> {
    PossibleValuesParser::new(RawRatios::ALL.map(RawRatios::name))
        .map(|name| RawRatios::from_name(&name).expect("one of the possible values"))
}

/// `--arrivals` values: the names [`Arrivals::name`] gives.
pub(crate) fn arrivals_parser() -> impl TypedValueParser<Value = Arrivals> {
    PossibleValuesParser::new(Arrivals::ALL.map(Arrivals::name))
        .map(|name| Arrivals::from_name(&name).expect("one of the possible values"))
}

/// `--generator-policy` values: the names [`GeneratorPolicy::name`] gives.
fn generator_policy_parser() -> impl TypedValueParser<Value = GeneratorPolicy> {
    PossibleValuesParser::new(GeneratorPolicy::ALL.map(GeneratorPolicy::name))
        .map(|name| GeneratorPolicy::from_name(&name).expect("one of the possible values"))
}

/// The stream load's options, shared by `baton bench`, `baton simulate` and `baton tune`.
#[derive(Clone, Debug, clap::Args)]
pub struct StreamArgs {
    /// Send requests as chunks of streams of this many chunks (needed by pipelines that keep
    /// per-stream state); each stream's final chunk is a priority task, reported apart.
    #[arg(long, default_value_t = 0)]
    pub stream_chunks: usize,
    /// A mixed load: the pipeline inputs stream chunks carry; requests not sent as
    /// chunks carry the other inputs (a flood of plain requests beside the streams).
    #[arg(long, value_delimiter = ',', value_name = "INPUT,..")]
    pub stream_inputs: Vec<String>,
    /// A mixed load: the fraction of each sender's requests sent as stream chunks (spread evenly).
    #[arg(long, default_value_t = 0.25)]
    pub stream_fraction: f64,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    enum Cli {
        Bench(Box<BenchArgs>),
        BenchFairness(FairnessArgs),
    }

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("baton").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn bench_defaults_are_the_options_defaults() {
        let Cli::Bench(args) = parse(&["bench", "p.toml"]) else { panic!("bench") };
        assert_eq!(args.options(), BenchOptions { pipeline: Some("p.toml".into()), ..BenchOptions::default() });
    }

    #[test]
    fn bench_fairness_defaults_are_the_options_defaults() {
        let Cli::BenchFairness(args) = parse(&["bench-fairness"]) else { panic!("bench-fairness") };
        assert_eq!(args.options(), FairnessOptions::default());
    }

    #[test]
    fn policies_and_arrivals_parse_by_name() {
        let Cli::Bench(args) =
            parse(&["bench", "p.toml", "--policy", "greedy,priority-fifo,none", "--arrivals", "constant"])
        else {
            panic!("bench")
        };
        let options = args.options();
        assert_eq!(options.policy, [BatchingPolicy::Greedy, BatchingPolicy::PriorityFifo, BatchingPolicy::None]);
        assert_eq!(options.arrivals, Arrivals::Constant);
        assert!(Cli::try_parse_from(["baton", "bench", "p.toml", "--policy", "fastest"]).is_err());
    }

    #[test]
    fn raw_io_and_raw_loops_parse() {
        let Cli::Bench(args) = parse(&["bench", "p.toml", "--raw", "--raw-io", "plain", "--raw-loops", "4"]) else {
            panic!("bench")
        };
        let options = args.options();
        assert_eq!((options.raw_io, options.raw_loops), (RawIo::Plain, 4));
        assert_eq!(options.raw_ratios, RawRatios::Beside, "ratios beside each point by default");
        let Cli::Bench(args) = parse(&["bench", "p.toml", "--raw", "--raw-ratios", "start"]) else { panic!("bench") };
        assert_eq!(args.options().raw_ratios, RawRatios::Start);
        assert!(Cli::try_parse_from(["baton", "bench", "p.toml", "--raw-io", "mmap"]).is_err());
    }

    #[test]
    fn tenants_parse_into_shares_and_bad_lists_are_refused() {
        let Cli::Bench(args) = parse(&["bench", "p.toml", "--tenants", "alice=1,bob=3"]) else { panic!("bench") };
        let names: Vec<(String, u64)> = args.options().tenants.into_iter().map(|t| (t.name, t.share)).collect();
        assert_eq!(names, [("alice".to_string(), 1), ("bob".to_string(), 3)]);
        let e = Cli::try_parse_from(["baton", "bench", "p.toml", "--tenants", "alice=0"]).err().unwrap().to_string();
        assert!(e.contains("tenant `alice`'s share"), "{e}");
    }
}
