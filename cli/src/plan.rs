//! `baton plan`: offline planning. Scheduling methods (`periodic`, `ilp`,
//! `list`) live in `plan_schedule`, placement from profiles (`ilp` with
//! `--out PLACED.toml`) in `plan_place`, graph partitioning (`partition`) in
//! `plan_partition`; this module only holds the shared arguments and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Method {
    /// List scheduling on the critical path (the heuristic).
    List,
    /// Periodic schedule of a repeated DAG with retiming.
    Periodic,
    /// Exact MILP scheduling with HiGHS.
    Ilp,
    /// Graph partitioning with critical-relationship refinement.
    Partition,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The planning method.
    #[arg(long, value_enum)]
    pub method: Method,
    /// A task graph in the STG format.
    #[arg(long)]
    pub stg: Option<PathBuf>,
    /// A task graph in the periodic planner's text format (`44;0A1;1B2;...`).
    #[arg(long)]
    pub dag: Option<PathBuf>,
    /// A pipeline config; its nodes and edges form the graph.
    #[arg(long)]
    pub pipeline: Option<PathBuf>,
    /// A profile from `baton profile`, giving node costs for `--pipeline`.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// An ONNX model whose operator graph is partitioned.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A graph in the METIS/Chaco format.
    #[arg(long)]
    pub graph: Option<PathBuf>,
    /// Number of processing units to schedule on.
    #[arg(long, default_value_t = 2)]
    pub processors: usize,
    /// Number of parts to partition into.
    #[arg(short = 'k', long = "parts", default_value_t = 2)]
    pub parts: usize,
    /// Also run METIS on the same graph and print both.
    #[arg(long)]
    pub compare_metis: bool,
    /// Time limit in seconds (ILP; partition with `--quality strong`): a
    /// number >= 0, `inf` for none.
    #[arg(long, default_value_t = 10.0, value_parser = baton_planners::deadline::parse_seconds)]
    pub time_limit: f64,
    /// Write the plan here (JSON, plus a placement a pipeline config can use).
    /// With --method ilp --pipeline --profile, a `.toml` path: place each node
    /// on a provider with its workers from the profile, and write the placed pipeline here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Placement: cores for CPU workers (default: this machine's).
    #[arg(long)]
    pub cores: Option<usize>,
    /// Placement: the GPU's memory, bytes (default: the total the profile
    /// recorded on CUDA, else no limit).
    #[arg(long)]
    pub device_memory: Option<u64>,
    /// Placement: providers nodes may be placed on, `cpu`, `cuda` (default: every one the profile has).
    #[arg(long, value_delimiter = ',')]
    pub providers: Option<Vec<String>>,
    /// Partition: allowed imbalance, a part may carry (1 + EPSILON) * ceil(total / k), rounded down.
    #[arg(long, default_value_t = 0.03)]
    pub epsilon: f64,
    /// Partition: which relations are critical, `path[:SLACK]` (near-longest flow
    /// paths), `top:PERCENT` (heaviest relations) or `none` (plain edge cut).
    /// Default: `path:0.1`, and `none` for --graph (METIS edges carry no flow order).
    #[arg(long)]
    pub critical: Option<String>,
    /// Partition: a critical relation counts `unit` (1) or `weighted` (its bytes).
    #[arg(long, default_value = "unit")]
    pub critical_value: String,
    /// Partition: driver, `multilevel`, `flat` (flow clustering and critical-gain refinement on the whole
    /// graph) or `metis-refine` (the critical-gain refinement of METIS's partition).
    #[arg(long, default_value = "multilevel")]
    pub scheme: String,
    /// Partition: refinement variant, `all` (all candidates, best first) or `flow` (flow order).
    #[arg(long, default_value = "all")]
    pub variant: String,
    /// Partition: a move needs second gain - first gain > GAIN_THRESHOLD.
    #[arg(long, default_value_t = 0)]
    pub gain_threshold: i64,
    /// Partition: hill-climbing moves allowed past the best point in the
    /// all-candidates refinement (0 = improving moves only;
    /// default 0 for `--scheme flat`, 64 otherwise).
    #[arg(long)]
    pub hill_climb: Option<usize>,
    /// Partition: multilevel cycles (each further cycle coarsens within the
    /// parts found so far and refines again).
    #[arg(long, default_value_t = 1)]
    pub vcycles: usize,
    /// Partition: multilevel cycles run on the graph coarsened to max(2000, 100 k)
    /// vertices, each with its own coarsening, the best kept (quality for time).
    #[arg(long, default_value_t = 1)]
    pub coarse_restarts: usize,
    /// Partition: independent runs, the best kept (default 1; 16 for the
    /// plain cut, `--critical none`; with `--quality strong`: repetitions,
    /// default 64).
    #[arg(long)]
    pub restarts: Option<usize>,
    /// Partition: `default`, or `strong` (repeated multilevel runs with FM
    /// refinement and V-cycles; stops starting runs after --time-limit).
    #[arg(long, default_value = "default")]
    pub quality: String,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Periodic: most samples per period tried.
    #[arg(long, default_value_t = 4)]
    pub x_max: usize,
    /// Periodic: stop growing the samples per period once utilization exceeds this.
    #[arg(long, default_value_t = 0.99)]
    pub threshold: f64,
    /// ILP: minimize one run's `makespan`, or the `period` (bottleneck) of a pipelined stream.
    #[arg(long, value_enum, default_value_t = Objective::Makespan)]
    pub objective: Objective,
    /// With --pipeline: the profiled batch size whose latencies are the node times.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// With --pipeline: write a copy of the pipeline with the plan's `cores`/`workers` here
    /// (default: PIPELINE.placed.toml next to the pipeline).
    #[arg(long)]
    pub placed: Option<PathBuf>,
    /// With --method partition --pipeline: place the k parts on these hosts
    /// (`NAME=HOST:PORT` of each host's gRPC server, the home host first) and
    /// write one pipeline per host into --out DIR, cut edges as remote stages.
    #[arg(long)]
    pub hosts: Option<String>,
    /// Which partition --hosts places: `critical` (the critical-relationship
    /// refinement, default) or `metis` (METIS's, for comparison).
    #[arg(long, default_value = "critical")]
    pub placement: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Objective {
    /// Length of one run of the graph.
    Makespan,
    /// Steady-state period of a stream of runs (the busiest unit's load).
    Period,
    /// Placement only: the critical path of the nodes' batch times.
    Latency,
}

pub fn run(args: PlanArgs) -> ExitCode {
    let planned = match args.method {
        Method::Partition => crate::plan_partition::plan(&args),
        Method::Ilp if crate::plan_place::wanted(&args) => crate::plan_place::plan(&args),
        Method::List | Method::Periodic | Method::Ilp => crate::plan_schedule::plan(&args),
    };
    match planned {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
