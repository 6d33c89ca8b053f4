//! `baton tune PIPELINE --profile PROFILE --slo priority_p99=X,others_p99=Y`:
//! a scheduling-study tool that searches the pipeline file's scheduling knobs
//! (node weights, costs, `max_batch`, `priority_max_batch`, workers, batch
//! sizes, the compute budget, the rule's options, `max_queue_delay_us` under the
//! dynamic policy) for the highest request rate that meets the SLO in
//! `baton simulate`'s model, prints the best candidates and writes the best as
//! a pipeline file. The load is `baton simulate`'s: plain requests, chunks of
//! streams (a mixed load) or the collab example's sessions (rates in sessions/s).
//!
//! Modules: [`knobs`] (what may change, applying a candidate), [`goodput`]
//! (a candidate's goodput: a scan down a grid of rates, then bisection), [`search`] (coordinate
//! descent and restarts). docs/simulate.md says how to check a tuned file
//! with real runs.

pub mod goodput;
pub mod knobs;
pub mod search;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration;

use baton::PipelineConfig;
use toml::Table;

use crate::load::Arrivals;
use crate::simulate::traffic::{StreamLoad, Traffic};
use crate::simulate::{ModelTerms, SessionLoad};
use goodput::{Evaluator, Slo, TuneLoad};
use knobs::Knob;
use search::{Budget, Found, Search};

/// What `baton tune` runs.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneOptions {
    pub pipeline: PathBuf,
    pub profile: PathBuf,
    pub slo: Slo,
    pub load: TuneLoad,
    /// `--stream-chunks`, `--stream-inputs`, `--stream-fraction`, as `baton simulate` reads them.
    pub streams: StreamLoad,
    /// Send the collab example's sessions (rates count sessions per second).
    pub sessions: Option<SessionLoad>,
    pub budget: Budget,
    /// Candidates printed.
    pub top: usize,
    /// Where the best candidate is written as a pipeline file.
    pub write: Option<PathBuf>,
    /// The model's measured terms.
    pub model: ModelTerms,
    /// Keys the search leaves at the shipped file's values (see [`knobs::keep`]).
    pub keep: Vec<String>,
}

/// What a search found: the knobs, every candidate scored (the shipped file first), the best.
#[derive(Clone, Debug)]
pub struct TuneResult {
    pub knobs: Vec<Knob>,
    pub found: Vec<Found>,
    pub best: usize,
    /// The best candidate's file (as written by `--write`, before its paths are rebased).
    pub table: Table,
}

/// Runs `baton tune`: exit 0, or 2 with the error.
pub fn run(options: TuneOptions, engines: &baton::EngineRegistry) -> ExitCode {
    match tune(&options, engines, true) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Searches, prints the table (and, with `progress`, a line per candidate to stderr), writes `--write`.
pub fn tune(options: &TuneOptions, engines: &baton::EngineRegistry, progress: bool) -> Result<TuneResult, String> {
    let (table, config) = read(&options.pipeline)?;
    if options.load.rows == 0 {
        return Err("--rows must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&options.load.priority_fraction) {
        return Err("--priority-fraction must be within 0 and 1".into());
    }
    let evaluator = Evaluator::new(options.pipeline.clone(), options, engines)?;
    let cores = evaluator.terms.cores;
    // The shipped file must simulate: its errors are the user's to fix, not a candidate's.
    evaluator.spec(&table)?;
    let profiled = goodput::max_profiled(&options.profile)?;
    let knobs =
        knobs::keep(knobs::knobs(&table, config.scheduler.policy, options.load.rows, cores, &profiled), &options.keep)?;
    let on_scored = |n: usize, f: &Found| {
        if progress {
            eprintln!("candidate {n}: goodput {:.1} {}", f.score.goodput, unit(options));
        }
    };
    let search = Search {
        knobs: &knobs,
        table: &table,
        evaluator: &evaluator,
        budget: options.budget,
        seed: options.load.seed,
        on_scored: &on_scored,
    };
    let found = search.run();
    let best_found = search::best(&found);
    let best = found.iter().position(|f| std::ptr::eq(f, best_found)).expect("the best is a candidate");
    let result = TuneResult { table: knobs::apply(&table, &knobs, &found[best].choice), knobs, found, best };
    print!("{}", report(options, &result));
    if let Some(path) = &options.write {
        write(&result, options, path)?;
        println!("wrote the best candidate to {}", path.display());
    }
    Ok(result)
}

/// What each point sends, checked: `baton simulate`'s checks, and the closed
/// loop of the capacity point is not one sessions have.
fn traffic(options: &TuneOptions) -> Result<Traffic, String> {
    if options.sessions.is_some() && options.load.capacity_concurrency.is_some() {
        return Err("--sessions has no closed loop: leave out --capacity-concurrency (the rates scanned \
                    start at the rate the profile's median work saturates the cores, docs/simulate.md)"
            .into());
    }
    Traffic::new(options.streams.clone(), options.sessions.as_ref())
}

/// What the rates count.
fn unit(options: &TuneOptions) -> &'static str {
    if options.sessions.is_some() {
        "sessions/s"
    } else {
        "requests/s"
    }
}

/// The load, as the options that give it: rows, priority fraction, streams or sessions.
fn load_line(options: &TuneOptions) -> String {
    let l = &options.load;
    let streams = options.streams.describe();
    match &options.sessions {
        Some(s) => format!("--sessions {} --pace-ms {} (rates in sessions/s)", s.file.display(), s.pace_ms),
        None if streams.is_empty() => format!("--rows {} --priority-fraction {}", l.rows, l.priority_fraction),
        None => format!("--rows {} --priority-fraction {} {streams}", l.rows, l.priority_fraction),
    }
}

/// The pipeline file as a TOML table, and parsed.
fn read(path: &Path) -> Result<(Table, PipelineConfig), String> {
    let config = PipelineConfig::read(path).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let table: Table = text.parse().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((table, config))
}

/// The candidates table: the shipped file, then the best `top` goodputs (one candidate each).
pub fn report(options: &TuneOptions, result: &TuneResult) -> String {
    let shipped = result.found[0].score.goodput;
    let mut order: Vec<usize> = (0..result.found.len()).collect();
    order.sort_by(|&a, &b| result.found[b].score.goodput.total_cmp(&result.found[a].score.goodput).then(a.cmp(&b)));
    let mut out = format!(
        "Baton tune (simulated): pipeline {}, profile {}, SLO priority p99 <= {} µs, others p99 <= {} µs, \
         seed {}; {} candidates scored\nload: {}; goodput and capacity in {}\n",
        options.pipeline.display(),
        options.profile.display(),
        options.slo.priority_p99_us,
        options.slo.others_p99_us,
        options.load.seed,
        result.found.len(),
        load_line(options),
        unit(options)
    );
    out += &format!(
        "{:<5} {:>12} {:>9} {:>12} {:>12} {:>12}  {}\n",
        "rank", "goodput", "x shipped", "capacity", "prio p99 µs", "other p99 µs", "changes from the shipped file"
    );
    // Candidates of equal goodput differ in knobs the model shows no effect of: the first scored stands for them.
    let mut shown = vec![result.found[0].score.goodput.to_bits()];
    let distinct: Vec<usize> = order
        .into_iter()
        .filter(|&i| {
            let bits = result.found[i].score.goodput.to_bits();
            let new = !shown.contains(&bits);
            shown.push(bits);
            new
        })
        .take(options.top)
        .collect();
    let rows = std::iter::once(0).chain(distinct);
    for (rank, i) in rows.enumerate() {
        let f = &result.found[i];
        let label = if i == 0 { "ship".to_string() } else { rank.to_string() };
        out += &format!(
            "{label:<5} {:>12.1} {:>9.2} {:>12.1} {:>12} {:>12}  {}\n",
            f.score.goodput,
            if shipped > 0.0 { f.score.goodput / shipped } else { 0.0 },
            f.score.capacity,
            f.score.priority_p99_us,
            f.score.others_p99_us,
            changes(&result.knobs, &f.choice, f.score.error.as_deref())
        );
    }
    out
}

/// `key=value` for each knob not at its shipped choice.
fn changes(knobs: &[Knob], choice: &[usize], error: Option<&str>) -> String {
    let mut parts: Vec<String> = knobs
        .iter()
        .zip(choice)
        .filter(|(k, &c)| c != k.shipped)
        .map(|(k, &c)| format!("{}={}", k.name(), k.show(c)))
        .collect();
    if parts.is_empty() {
        parts.push("(none)".into());
    }
    if let Some(e) = error {
        parts.push(format!("[not simulated: {e}]"));
    }
    parts.join(" ")
}

/// Writes the best candidate as a pipeline file: the shipped file's keys, the
/// tuned ones changed, model and state paths rebased to resolve from `path`.
pub fn write(result: &TuneResult, options: &TuneOptions, path: &Path) -> Result<(), String> {
    let mut table = result.table.clone();
    knobs::rebase_paths(&mut table, &options.pipeline, path);
    let f = &result.found[result.best];
    let body = toml::to_string(&table).map_err(|e| format!("cannot write the tuned file: {e}"))?;
    let text = format!(
        "# Written by `baton tune` from {} (profile {}): simulated goodput {:.1} {}\n\
         # (shipped {:.1}) at priority p99 <= {} µs, others p99 <= {} µs.\n\
         # Load: {}.\n\
         # Changed: {}\n\n{body}",
        options.pipeline.display(),
        options.profile.display(),
        f.score.goodput,
        unit(options),
        result.found[0].score.goodput,
        options.slo.priority_p99_us,
        options.slo.others_p99_us,
        load_line(options),
        changes(&result.knobs, &f.choice, None)
    );
    std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

impl FromStr for Slo {
    type Err = String;

    /// `priority_p99=X,others_p99=Y`, each a duration (`20ms`, `500us`, `0.05s`; a bare number is µs).
    fn from_str(s: &str) -> Result<Slo, String> {
        let (mut priority, mut others) = (None, None);
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once('=').ok_or_else(|| format!("--slo: `{part}` is not KEY=VALUE"))?;
            let us = micros(value.trim()).map_err(|e| format!("--slo {key}: {e}"))?;
            match key.trim() {
                "priority_p99" => priority = Some(us),
                "others_p99" => others = Some(us),
                other => return Err(format!("--slo: unknown key `{other}` (priority_p99, others_p99)")),
            }
        }
        match (priority, others) {
            (Some(priority_p99_us), Some(others_p99_us)) => Ok(Slo { priority_p99_us, others_p99_us }),
            _ => Err("--slo needs both priority_p99=X and others_p99=Y".into()),
        }
    }
}

/// A duration in µs: `20ms`, `500us`, `0.05s`, or a bare number of µs.
fn micros(s: &str) -> Result<u64, String> {
    let (number, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("us").or_else(|| s.strip_suffix("µs")) {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else {
        (s, 1.0)
    };
    let v: f64 = number.trim().parse().map_err(|_| format!("`{s}` is not a duration (e.g. 20ms, 500us)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("`{s}` must be positive"));
    }
    Ok((v * scale).round() as u64)
}

impl FromStr for Budget {
    type Err = String;

    /// A count of candidates (`300`) or a time (`90s`, `5m`).
    fn from_str(s: &str) -> Result<Budget, String> {
        let bad = || format!("--budget: `{s}` is neither a count of candidates (300) nor a time (90s, 5m)");
        if let Ok(n) = s.parse::<usize>() {
            return if n == 0 {
                Err("--budget must be at least 1 candidate".into())
            } else {
                Ok(Budget::Evaluations(n))
            };
        }
        let (number, scale) = match s.strip_suffix('m') {
            Some(n) => (n, 60.0),
            None => (s.strip_suffix('s').ok_or_else(bad)?, 1.0),
        };
        let v: f64 = number.parse().map_err(|_| bad())?;
        if !(v.is_finite() && v > 0.0) {
            return Err(bad());
        }
        Ok(Budget::Time(Duration::from_secs_f64(v * scale)))
    }
}

/// The default load of `baton tune`'s options, for callers that build them in code.
pub fn default_load() -> TuneLoad {
    TuneLoad {
        rows: 1,
        priority_fraction: 0.0,
        arrivals: Arrivals::Poisson,
        seed: 1,
        warmup_ns: 500_000_000,
        duration_ns: 2_000_000_000,
        capacity_concurrency: None,
    }
}
