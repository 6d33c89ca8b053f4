//! `baton tune PIPELINE --profile PROFILE --slo priority_p99=X,others_p99=Y`:
//! a scheduling-study tool that searches the pipeline's scheduling knobs for the
//! highest request rate meeting the SLO in `baton simulate`'s model (see
//! `baton_bench::tune` and docs/simulate.md).

use std::path::PathBuf;
use std::time::Duration;

use baton_bench::load::Arrivals;
use baton_bench::parse_duration;
use baton_bench::simulate::traffic::StreamLoad;
use baton_bench::simulate::SessionLoad;
use baton_bench::tune::goodput::{Slo, TuneLoad};
use baton_bench::tune::search::Budget;
use baton_bench::tune::TuneOptions;

use crate::bench_args::StreamArgs;

/// `baton tune` arguments: the pipeline, the profile, the SLO, the load and the search's budget.
#[derive(Clone, Debug, clap::Args)]
pub struct TuneArgs {
    /// The pipeline file to start from.
    pub pipeline: PathBuf,
    /// The profile the batch durations are drawn from (`baton profile PIPELINE --out FILE`).
    #[arg(long)]
    pub profile: PathBuf,
    /// The objective: p99 bounds per class, e.g. `priority_p99=20ms,others_p99=50ms`.
    #[arg(long)]
    pub slo: Slo,
    /// Rows (dim 0) per request.
    #[arg(long, default_value_t = 1)]
    pub rows: usize,
    /// Fraction of requests marked priority (spread evenly, as `baton bench` sends them).
    #[arg(long, default_value_t = 0.0)]
    pub priority_fraction: f64,
    /// Open-loop arrivals: exponential gaps (poisson) or evenly spaced (constant).
    #[arg(long, default_value = "poisson", value_parser = crate::bench_args::arrivals_parser())]
    pub arrivals: Arrivals,
    /// Seed of the arrivals, the draws and the search.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated warm-up before each point's measurement.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Simulated measured time per point.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Closed-loop clients of the capacity point (the rates tried are 10% to 150% of its
    /// throughput) [default: 32]; not with --sessions (see docs/simulate.md).
    #[arg(long)]
    pub capacity_concurrency: Option<usize>,
    #[command(flatten)]
    pub streams: StreamArgs,
    /// Send sessions as `examples/collab --image-first` does, from this session file
    /// (data/sessions.json), as `baton simulate --sessions` does; the goodput is in sessions/s.
    #[arg(long)]
    pub sessions: Option<PathBuf>,
    /// With --sessions: from one chunk of a session to the next, ms.
    #[arg(long, default_value_t = 32.0)]
    pub pace_ms: f64,
    /// The search's budget: candidates scored (`300`, deterministic) or time (`90s`, `5m`).
    #[arg(long, default_value = "200")]
    pub budget: Budget,
    /// Candidates printed besides the shipped file.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Write the best candidate as a pipeline file here.
    #[arg(long)]
    pub write: Option<PathBuf>,
    /// Keys the search leaves as the shipped file sets them, as the file writes them; `*`
    /// stands for one part, e.g. `scheduler.decide_on_arrival,nodes.*.workers`.
    #[arg(long, value_delimiter = ',', value_name = "KEY")]
    pub keep: Vec<String>,
    #[command(flatten)]
    pub terms: crate::simulate::ModelTermArgs,
}

impl TuneArgs {
    pub fn options(self) -> TuneOptions {
        TuneOptions {
            pipeline: self.pipeline,
            profile: self.profile,
            slo: self.slo,
            load: TuneLoad {
                rows: self.rows,
                priority_fraction: self.priority_fraction,
                arrivals: self.arrivals,
                seed: self.seed,
                warmup_ns: self.warmup.as_nanos() as u64,
                duration_ns: self.duration.as_nanos() as u64,
                capacity_concurrency: self.capacity_concurrency.map(|c| c.max(1)),
            },
            streams: StreamLoad {
                chunks: self.streams.stream_chunks,
                inputs: self.streams.stream_inputs,
                fraction: self.streams.stream_fraction,
                tenants: Vec::new(),
            },
            sessions: self.sessions.map(|file| SessionLoad { file, pace_ms: self.pace_ms }),
            budget: self.budget,
            top: self.top,
            write: self.write,
            model: self.terms.model(),
            keep: self.keep,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    enum Cli {
        Tune(TuneArgs),
    }

    #[test]
    fn defaults_are_the_library_defaults_and_the_slo_and_budget_parse() {
        let args = ["baton", "tune", "p.toml", "--profile", "q.json", "--slo", "priority_p99=2ms,others_p99=9ms"];
        let Cli::Tune(tune) = Cli::try_parse_from(args).unwrap();
        let options = tune.options();
        assert_eq!(options.load, baton_bench::tune::default_load());
        assert_eq!(options.slo, Slo { priority_p99_us: 2000, others_p99_us: 9000 });
        assert_eq!(options.budget, Budget::Evaluations(200));
        assert_eq!((options.streams, options.sessions), (StreamLoad::default(), None));
        let streamed = ["--stream-chunks", "16", "--stream-inputs", "chunk", "--sessions", "s.json", "--pace-ms", "8"];
        let Cli::Tune(tune) = Cli::try_parse_from(args.iter().copied().chain(streamed)).unwrap();
        let options = tune.options();
        assert_eq!(
            options.streams,
            StreamLoad { chunks: 16, inputs: vec!["chunk".into()], fraction: 0.25, tenants: Vec::new() }
        );
        assert_eq!(options.sessions, Some(SessionLoad { file: "s.json".into(), pace_ms: 8.0 }));
        let timed = ["baton", "tune", "p.toml", "--profile", "q.json", "--slo", "priority_p99=1,others_p99=1"];
        let Cli::Tune(tune) = Cli::try_parse_from(timed.iter().copied().chain(["--budget", "2m"])).unwrap();
        assert_eq!(tune.options().budget, Budget::Time(Duration::from_secs(120)));
        let bad = Cli::try_parse_from(timed.iter().copied().chain(["--budget", "soon"]));
        assert!(bad.is_err_and(|e| e.to_string().contains("--budget")));
    }
}
