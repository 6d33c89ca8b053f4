//! A candidate pipeline file's goodput: the highest open-loop request rate at
//! which the simulated pipeline meets the SLO, found by a scan down
//! a grid of rates and bisection.
//!
//! A rate meets the SLO when the measured interval answers at least 97% of
//! the requests expected at that rate, less three standard deviations of a
//! Poisson count (the pipeline keeps up), and the p99 of the priority
//! requests and of the others are within their bounds (a class with no
//! requests meets its bound). The rates tried lie between 0 and 1.5 × the
//! simulated closed-loop throughput at `capacity_concurrency` (see
//! `Evaluator::search` for the order). Every rate runs
//! with the same seed (common random numbers), so two candidates are compared
//! on the same arrivals and draws.

use std::path::{Path, PathBuf};

use baton::{PipelineConfig, PipelineSpec};
use toml::Table;

use crate::load::Arrivals;
use crate::measure::{point_result, PointResult};
use crate::simulate::durations::Durations;
use crate::simulate::engine::{PointSetup, Sim, SimLoad, Terms};
use crate::simulate::{formable, unmodelled};

/// The service-level objective: p99 bounds per class, µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slo {
    pub priority_p99_us: u64,
    pub others_p99_us: u64,
}

/// The load the goodput is measured under.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuneLoad {
    pub rows: usize,
    pub priority_fraction: f64,
    pub arrivals: Arrivals,
    pub seed: u64,
    pub warmup_ns: u64,
    pub duration_ns: u64,
    pub capacity_concurrency: usize,
}

/// What one candidate scored.
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    /// The highest rate found meeting the SLO, requests/s (0: none).
    pub goodput: f64,
    /// The simulated closed-loop throughput, requests/s.
    pub capacity: f64,
    /// At the goodput rate: p99 of the priority requests and of the others, µs.
    pub priority_p99_us: u64,
    pub others_p99_us: u64,
    /// Why the candidate could not be simulated (its goodput is 0).
    pub error: Option<String>,
}

impl Score {
    fn failed(error: String) -> Score {
        Score { goodput: 0.0, capacity: 0.0, priority_p99_us: 0, others_p99_us: 0, error: Some(error) }
    }
}

/// Scores candidate files of one pipeline against one profile, load and SLO.
pub struct Evaluator<'a> {
    /// The shipped file (model paths resolve from its folder).
    pub file: PathBuf,
    pub profile: PathBuf,
    pub engines: &'a baton::EngineRegistry,
    pub load: TuneLoad,
    pub slo: Slo,
    pub terms: Terms,
}

/// Bisection stops when the bracket is within this fraction of its upper end.
const TOLERANCE: f64 = 0.01;

impl Evaluator<'_> {
    /// The candidate `table`'s score (a candidate that does not build or that the
    /// simulator does not model scores 0, with the reason).
    pub fn evaluate(&self, table: &Table) -> Score {
        match self.spec(table) {
            Ok((spec, durations)) => self.search(&spec, &durations),
            Err(e) => Score::failed(e),
        }
    }

    /// The spec of `table` (built as if it were the shipped file) and its durations.
    pub fn spec(&self, table: &Table) -> Result<(PipelineSpec, Durations), String> {
        let text = toml::to_string(table).map_err(|e| format!("cannot write the candidate: {e}"))?;
        let config = PipelineConfig::parse(&text).map_err(|e| e.to_string())?;
        let spec = PipelineSpec::build(&config, Some(&self.file), self.engines).map_err(|e| e.to_string())?;
        if let Some(what) = unmodelled(&spec, false) {
            return Err(format!("the simulator does not model this yet: {what} (docs/simulate.md)"));
        }
        if let Some(node) = spec.nodes.iter().find(|n| n.max_batch < self.load.rows) {
            return Err(format!(
                "--rows {} is more than node `{}`'s max_batch {}",
                self.load.rows, node.name, node.max_batch
            ));
        }
        let durations = Durations::load(&self.profile, &spec.name, &formable(&spec, self.load.rows), self.terms.fence)?;
        Ok((spec, durations))
    }

    /// One simulated point of `spec` under `load`.
    pub fn point(&self, spec: &PipelineSpec, durations: &Durations, load: SimLoad) -> PointResult {
        let l = &self.load;
        let setup = PointSetup {
            load,
            rows: l.rows,
            priority_fraction: l.priority_fraction,
            seed: l.seed,
            warmup_ns: l.warmup_ns,
            duration_ns: l.duration_ns,
        };
        let window = Sim::new(spec, durations, self.terms, setup).run();
        let (mode, value) = match load {
            SimLoad::Closed(c) => ("closed", c as f64),
            SimLoad::Open { rate, .. } => ("open", rate),
        };
        point_result(spec.scheduler.policy.name(), mode, value, l.rows, &[window], 1, None)
    }

    /// Whether the point at `rate` meets the SLO.
    pub fn meets(&self, p: &PointResult, rate: f64) -> bool {
        let within = |count: u64, p99: u64, bound: u64| count == 0 || p99 <= bound;
        // Poisson arrivals vary by about sqrt(n) in n expected: 3 of those are not falling behind.
        let expected = rate * self.load.duration_ns as f64 / 1e9;
        let answered = p.throughput_rps * self.load.duration_ns as f64 / 1e9;
        answered >= 0.97 * expected - 3.0 * expected.sqrt()
            && within(p.priority_latency.count, p.priority_latency.p99_us, self.slo.priority_p99_us)
            && within(p.others_latency.count, p.others_latency.p99_us, self.slo.others_p99_us)
    }

    /// The highest rate meeting the SLO (0 when none from 10% of the capacity up does): a scan down the grid of fractions of
    /// the closed-loop capacity to the first rate that meets it, then bisection
    /// between it and the grid rate above (which failed). Scanning from the top
    /// keeps a failure at a low rate (a p99 of few requests) from hiding the
    /// rates above it.
    fn search(&self, spec: &PipelineSpec, durations: &Durations) -> Score {
        let capacity = self.point(spec, durations, SimLoad::Closed(self.load.capacity_concurrency)).throughput_rps;
        let mut score = Score { goodput: 0.0, capacity, priority_p99_us: 0, others_p99_us: 0, error: None };
        if capacity <= 0.0 {
            return score;
        }
        let try_rate = |rate: f64, score: &mut Score| {
            let p = self.point(spec, durations, SimLoad::Open { rate, arrivals: self.load.arrivals });
            let met = self.meets(&p, rate);
            if met {
                score.goodput = rate;
                score.priority_p99_us = p.priority_latency.p99_us;
                score.others_p99_us = p.others_latency.p99_us;
            }
            met
        };
        let (mut lo, mut hi) = (0.0, capacity * GRID[0]);
        for f in GRID {
            let rate = capacity * f;
            if try_rate(rate, &mut score) {
                lo = rate;
                break;
            }
            hi = rate;
        }
        // Meeting it at the top needs no bisection; failing it at the bottom scores 0.
        if lo == capacity * GRID[0] || lo == 0.0 {
            return score;
        }
        while hi - lo > TOLERANCE * hi {
            let rate = (lo + hi) / 2.0;
            if try_rate(rate, &mut score) {
                lo = rate;
            } else {
                hi = rate;
            }
        }
        score
    }
}

/// The scan's rates, as fractions of the closed-loop capacity, from the top.
const GRID: [f64; 9] = [1.5, 1.25, 1.0, 0.85, 0.7, 0.55, 0.4, 0.25, 0.1];

/// The profile's largest measured batch size per node (0 for a node it lacks).
pub fn max_profiled(profile: &Path) -> Result<impl Fn(&str) -> usize, String> {
    let at = profile.display();
    let text = std::fs::read_to_string(profile).map_err(|e| format!("{at}: cannot read: {e}"))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{at}: not a profile: {e}"))?;
    let nodes = value["nodes"].as_object().cloned().unwrap_or_default();
    Ok(move |node: &str| {
        nodes
            .get(node)
            .and_then(|n| n["batches"].as_array())
            .map_or(0, |b| b.iter().filter_map(|x| x["batch"].as_u64()).max().unwrap_or(0) as usize)
    })
}
