//! A candidate pipeline file's goodput: the highest open-loop request rate
//! (under sessions: sessions per second) at which the simulated pipeline meets
//! the SLO, found by a scan down a grid of rates and bisection. Each point
//! sends what `baton simulate` would send for the same options ([`Traffic`]).
//!
//! A rate meets the SLO when the measured interval answers at least 97% of
//! the requests expected at that rate, less three standard deviations of a
//! Poisson count (the pipeline keeps up), and the p99 of the priority
//! requests and of the others are within their bounds (a class with no
//! requests meets its bound). Under sessions the requests are the chunks
//! (final chunks the priority class) and the expected count is the chunks the
//! point's sessions have due in the interval on their own schedule
//! ([`Traffic::scheduled_chunks`]). The rates tried lie between 0 and 1.5 ×
//! the simulated closed-loop throughput at `capacity_concurrency`; under
//! sessions, which have no closed loop, between 0 and [`session_bound`] (see
//! `Evaluator::search` for the order). Every rate runs with the same seed
//! (common random numbers), so two candidates are compared on the same
//! arrivals and draws.

use std::path::{Path, PathBuf};

use baton::{PipelineConfig, PipelineSpec};
use toml::Table;

use crate::load::Arrivals;
use crate::measure::PointResult;
use crate::simulate::durations::Durations;
use crate::simulate::engine::{PointSetup, SimLoad, Terms};
use crate::simulate::sessions::{REACH_CHUNK, REACH_FINAL, REACH_IMAGE};
use crate::simulate::traffic::Traffic;
use crate::simulate::{formable, simulated_point, unmodelled, ModelTerms};

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
    /// Closed-loop clients of the capacity point (None: 32); not with sessions.
    pub capacity_concurrency: Option<usize>,
}

/// The capacity point's clients when none are given.
pub const CAPACITY_CONCURRENCY: usize = 32;

/// What one candidate scored.
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    /// The highest rate found meeting the SLO, requests/s or sessions/s (0: none).
    pub goodput: f64,
    /// The top of the rates scanned: the simulated closed-loop throughput,
    /// requests/s, or under sessions [`session_bound`], sessions/s.
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
    /// The model's terms as given, and as the engine takes them.
    pub model: ModelTerms,
    pub terms: Terms,
    /// What each point sends (plain requests by default).
    pub traffic: Traffic,
}

/// Bisection stops when the bracket is within this fraction of its upper end.
const TOLERANCE: f64 = 0.01;

impl<'a> Evaluator<'a> {
    /// The evaluator of `file`'s candidates under `options`' profile, load, SLO,
    /// model terms and traffic (model paths resolve from `file`'s folder).
    pub fn new(
        file: PathBuf,
        options: &super::TuneOptions,
        engines: &'a baton::EngineRegistry,
    ) -> Result<Self, String> {
        Ok(Evaluator {
            file,
            profile: options.profile.clone(),
            engines,
            load: options.load,
            slo: options.slo,
            terms: options.model.terms(&options.profile)?,
            model: options.model.clone(),
            traffic: super::traffic(options)?,
        })
    }

    /// The candidate `table`'s score (a candidate that does not build or that the
    /// simulator does not model scores 0, with the reason).
    pub fn evaluate(&self, table: &Table) -> Score {
        match self.spec(table) {
            Ok((spec, durations)) => self.search(&spec, &durations).unwrap_or_else(Score::failed),
            Err(e) => Score::failed(e),
        }
    }

    /// The spec of `table` (built as if it were the shipped file) and its durations.
    pub fn spec(&self, table: &Table) -> Result<(PipelineSpec, Durations), String> {
        let text = toml::to_string(table).map_err(|e| format!("cannot write the candidate: {e}"))?;
        let config = PipelineConfig::parse(&text).map_err(|e| e.to_string())?;
        let spec = PipelineSpec::build(&config, Some(&self.file), self.engines).map_err(|e| e.to_string())?;
        if let Some(what) = unmodelled(&spec, self.traffic.sends_streams()) {
            return Err(format!("the simulator does not model this yet: {what} (docs/simulate.md)"));
        }
        if let Some(node) = spec.nodes.iter().find(|n| n.max_batch < self.load.rows) {
            return Err(format!(
                "--rows {} is more than node `{}`'s max_batch {}",
                self.load.rows, node.name, node.max_batch
            ));
        }
        self.traffic.streams(&spec, self.load.rows, self.load.priority_fraction, false)?;
        let durations = self.model.durations(&self.profile, &spec, self.load.rows)?;
        Ok((spec, durations))
    }

    /// One simulated point of `spec` under `load`, sending what `baton simulate` would.
    pub fn point(&self, spec: &PipelineSpec, durations: &Durations, load: SimLoad) -> Result<PointResult, String> {
        let l = &self.load;
        let setup = PointSetup {
            load,
            rows: l.rows,
            priority_fraction: l.priority_fraction,
            seed: l.seed,
            warmup_ns: l.warmup_ns,
            duration_ns: l.duration_ns,
            latency_from_schedule: false,
            generator_realtime: false,
            generator_nice: 0,
        };
        let (window, busy_ns) = self.traffic.sim(spec, durations, self.terms, setup, false)?.run_busy();
        Ok(simulated_point(spec.scheduler.policy.name(), load, l.rows, &window, busy_ns))
    }

    /// Whether the point at `rate` meets the SLO.
    pub fn meets(&self, p: &PointResult, rate: f64) -> bool {
        let within = |count: u64, p99: u64, bound: u64| count == 0 || p99 <= bound;
        // Poisson arrivals vary by about sqrt(n) in n expected: 3 of those are not falling behind.
        let l = &self.load;
        let window = (l.warmup_ns, l.warmup_ns + l.duration_ns);
        let expected = match self.traffic.scheduled_chunks(rate, l.arrivals, l.seed, window.0, window.1) {
            Some(chunks) => chunks as f64,
            None => rate * l.duration_ns as f64 / 1e9,
        };
        let answered = p.throughput_rps * self.load.duration_ns as f64 / 1e9;
        answered >= 0.97 * expected - 3.0 * expected.sqrt()
            && within(p.priority_latency.count, p.priority_latency.p99_us, self.slo.priority_p99_us)
            && within(p.others_latency.count, p.others_latency.p99_us, self.slo.others_p99_us)
    }

    /// The highest rate meeting the SLO (0 when none from 10% of the capacity up
    /// does): a scan down the grid of fractions of the capacity to the first rate
    /// that meets it, then bisection between it and the grid rate above (which
    /// failed). Scanning from the top keeps a failure at a low rate (a p99 of few
    /// requests) from hiding the rates above it. Under sessions the capacity is an
    /// upper bound ([`session_bound`]), so the scan starts at 1 × it.
    fn search(&self, spec: &PipelineSpec, durations: &Durations) -> Result<Score, String> {
        let (capacity, grid) = if self.traffic.is_sessions() {
            (session_bound(spec, durations, &self.traffic, self.load.rows, self.terms.cores)?, &GRID[2..])
        } else {
            let clients = self.load.capacity_concurrency.unwrap_or(CAPACITY_CONCURRENCY);
            (self.point(spec, durations, SimLoad::Closed(clients))?.throughput_rps, &GRID[..])
        };
        let mut score = Score { goodput: 0.0, capacity, priority_p99_us: 0, others_p99_us: 0, error: None };
        if capacity <= 0.0 {
            return Ok(score);
        }
        let try_rate = |rate: f64, score: &mut Score| -> Result<bool, String> {
            let p = self.point(spec, durations, SimLoad::Open { rate, arrivals: self.load.arrivals })?;
            let met = self.meets(&p, rate);
            if met {
                score.goodput = rate;
                score.priority_p99_us = p.priority_latency.p99_us;
                score.others_p99_us = p.others_latency.p99_us;
            }
            Ok(met)
        };
        let (mut lo, mut hi) = (0.0, capacity * grid[0]);
        for f in grid {
            let rate = capacity * f;
            if try_rate(rate, &mut score)? {
                lo = rate;
                break;
            }
            hi = rate;
        }
        // Meeting it at the top needs no bisection; failing it at the bottom scores 0.
        if lo == capacity * grid[0] || lo == 0.0 {
            return Ok(score);
        }
        while hi - lo > TOLERANCE * hi {
            let rate = (lo + hi) / 2.0;
            if try_rate(rate, &mut score)? {
                lo = rate;
            } else {
                hi = rate;
            }
        }
        Ok(score)
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

/// Under sessions, the top of the rates scanned, sessions/s: the rate at which
/// the profile's median work saturates the cores. A session's work at a node is
/// its requests there (its image, its chunks, its final chunk, as each kind's
/// inputs reach the node) times the node's median time per row at its largest
/// batch (the cheapest a row gets); the bound is the least of `cores` over the
/// sum of every node's work and, per node, its workers (at most `cores`) over its
/// own work. The runtime's terms, smaller batches and the sessions' pacing only
/// lower what the pipeline carries, so no rate above it can meet the SLO.
pub fn session_bound(
    spec: &PipelineSpec,
    durations: &Durations,
    traffic: &Traffic,
    rows: usize,
    cores: f64,
) -> Result<f64, String> {
    let chunks = traffic.mean_chunks().ok_or("the session bound needs sessions")?;
    let streams = traffic.streams(spec, rows, 0.0, false)?;
    let sent = [(REACH_IMAGE, 1.0), (REACH_CHUNK, chunks - 1.0), (REACH_FINAL, 1.0)];
    let (mut total_us, mut bound) = (0.0, f64::INFINITY);
    for (i, (node, (_, sizes))) in spec.nodes.iter().zip(formable(spec, rows)).enumerate() {
        let largest = *sizes.last().expect("a node forms a batch");
        let per_row_us = durations.median_us(i, largest) / largest as f64;
        let tasks: f64 = sent.iter().filter(|(kind, _)| streams.reach(*kind).runs[i]).map(|(_, n)| n).sum();
        let work_us = tasks * rows as f64 * per_row_us;
        if work_us > 0.0 {
            total_us += work_us;
            bound = bound.min((node.workers.max(1) as f64).min(cores) * 1e6 / work_us);
        }
    }
    if total_us <= 0.0 {
        return Err("the profile gives the sessions no work: no bound for their rate".into());
    }
    Ok(bound.min(cores * 1e6 / total_us))
}
