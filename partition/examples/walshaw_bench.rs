//! Benchmark: plain edge cut on the Walshaw graphs against their best-known
//! 2-way cuts at 5% imbalance (each part <= 1.05 x ceil(total / 2), the archive's rule), for the default
//! multilevel driver, METIS (same allowance) and the strong mode. Prints a
//! markdown table; the strong mode's cut is the mean over `--seeds` seeds.
//!
//! `cargo run --release -p baton-partition --example walshaw_bench -- [--dir ../shared/data/walshaw]
//!  [--seeds 3] [--repetitions 200] [--budget SECONDS] [--epsilon 0.05] [--coarsening heavy|expansion|lp|lp-hubs]
//!  [--vcycles 0] [--tries N] [--population N] [--combines N] [--flow true|false] [--local-rounds N] [--kicks N] [--kick-size N] [--graphs add20,data]`
//!  (`--local-rounds` and `--kicks` unset: the strong mode's plain-cut defaults)

mod common;

use common::{arg, exit_on_help, fastest, load_average};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton_partition::coarsen::{Grouping, Rating};
use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::graph::Graph;
use baton_partition::label_propagation::{self, Visit};
use baton_partition::multilevel::{self, Params};
use baton_partition::strong::{self, Strong};
use baton_partition::{metis_format, metis_ref, metrics};

/// Cuts separated by slashes (one per seed).
fn cut_list(cuts: &[i64]) -> String {
    cuts.iter().map(i64::to_string).collect::<Vec<_>>().join("/")
}

/// The command line's settings (see the module docs).
struct Options {
    dir: PathBuf,
    seeds: u64,
    repetitions: usize,
    budget: f64,
    epsilon: f64,
    vcycles: usize,
    tries: usize,
    population: usize,
    combines: usize,
    local_rounds: Option<usize>,
    kicks: Option<usize>,
    kick_size: usize,
    flow: Option<bool>,
    only: String,
    grouping: Option<Grouping>,
}

impl Options {
    /// Reads the settings from `args`; the strong mode's default where one is not given.
    fn parse(args: &[String]) -> Options {
        let dir: PathBuf = arg(args, "--dir", PathBuf::from("../shared/data/walshaw"));
        let seeds: u64 = arg(args, "--seeds", 3);
        let repetitions: usize = arg(args, "--repetitions", strong::PLAIN_CUT_REPETITIONS);
        let budget: f64 = arg(args, "--budget", f64::INFINITY);
        let epsilon: f64 = arg(args, "--epsilon", 0.05);
        let defaults = Strong::default();
        let vcycles: usize = arg(args, "--vcycles", strong::PLAIN_CUT_VCYCLES);
        let tries: usize = arg(args, "--tries", defaults.initial_tries);
        let population: usize = arg(args, "--population", defaults.population);
        let combines: usize = arg(args, "--combines", defaults.combines);
        let optional = |name: &str| match arg(args, name, String::new()).as_str() {
            "" => None,
            n => Some(n.parse::<usize>().unwrap_or_else(|_| panic!("{name} {n}: expected a count"))),
        };
        let local_rounds = optional("--local-rounds").or(defaults.local_rounds);
        let kicks = optional("--kicks").or(defaults.kicks);
        let kick_size: usize = arg(args, "--kick-size", defaults.kick_size);
        let flow: Option<bool> = match arg(args, "--flow", String::new()).as_str() {
            "" => defaults.flow,
            on => Some(on.parse().expect("--flow true|false")),
        };
        let only: String = arg(args, "--graphs", String::new());
        let grouping = match arg(args, "--coarsening", String::new()).as_str() {
            "heavy" => Some(Grouping::Matching(Rating::Heavy)),
            "expansion" => Some(Grouping::Matching(Rating::Expansion)),
            "lp" => Some(Grouping::LabelPropagation(label_propagation::ROUNDS, Visit::Random)),
            "lp-hubs" => Some(Grouping::LabelPropagation(label_propagation::ROUNDS, Visit::HubsFirst)),
            "" => defaults.grouping,
            other => panic!("--coarsening {other}: expected heavy, expansion, lp or lp-hubs"),
        };
        Options {
            dir,
            seeds,
            repetitions,
            budget,
            epsilon,
            vcycles,
            tries,
            population,
            combines,
            local_rounds,
            kicks,
            kick_size,
            flow,
            only,
            grouping,
        }
    }

    /// The strong mode's settings for one seed.
    fn strong(&self, seed: u64) -> Strong {
        Strong {
            repetitions: Some(self.repetitions),
            budget: self.budget.is_finite().then(|| Duration::from_secs_f64(self.budget)),
            seed,
            grouping: self.grouping,
            vcycles: Some(self.vcycles),
            initial_tries: self.tries,
            population: self.population,
            combines: self.combines,
            flow: self.flow,
            local_rounds: self.local_rounds,
            kicks: self.kicks,
            kick_size: self.kick_size,
        }
    }
}

/// The default driver's and METIS's runs on one graph, once per seed each.
struct Baselines {
    ml_cuts: Vec<i64>,
    m_cuts: Vec<i64>,
    /// Mean times over the seeds, ms.
    ml_ms: f64,
    m_ms: f64,
    /// Whether every run of each was within the balance limit.
    balanced: (bool, bool),
}

/// Runs the default driver and METIS on `g` once per seed each (fastest of
/// three), adding each seed's comparison (cut order, within 2x METIS time) to
/// `versus_metis`.
fn baselines(g: &Graph, o: &Options, versus_metis: &mut Vec<(std::cmp::Ordering, bool)>) -> Baselines {
    let (seeds, epsilon) = (o.seeds, o.epsilon);
    let (mut ml_cuts, mut m_cuts, mut ml_ms, mut m_ms, mut balanced) = (Vec::new(), Vec::new(), 0.0, 0.0, (true, true));
    for seed in 1..=seeds {
        let ml = fastest(|| multilevel::partition(g, &Params { epsilon, seed, ..Params::new(2) }));
        let m = fastest(|| metis_ref::partition(g, 2, epsilon, false, seed).expect("METIS"));
        versus_metis.push((ml.cut.total.cmp(&m.cut.total), ml.seconds <= 2.0 * m.seconds.max(1e-4)));
        (ml_ms, m_ms) = (ml_ms + 1e3 * ml.seconds / seeds as f64, m_ms + 1e3 * m.seconds / seeds as f64);
        balanced = (balanced.0 && ml.balanced, balanced.1 && m.balanced);
        ml_cuts.push(ml.cut.total);
        m_cuts.push(m.cut.total);
    }
    Baselines { ml_cuts, m_cuts, ml_ms, m_ms, balanced }
}

/// Bisects `g` in the strong mode once per seed, checking balance: the cuts
/// and the total seconds.
fn strong_runs(name: &str, g: &Graph, o: &Options) -> (Vec<i64>, f64) {
    let caps = strong::caps(g, o.epsilon);
    let (mut cuts, mut secs) = (Vec::new(), 0.0);
    for seed in 1..=o.seeds {
        let s = o.strong(seed);
        let t = Instant::now();
        let (part, rank, _) = strong::bisect(g, caps, &s);
        secs += t.elapsed().as_secs_f64();
        assert_eq!(rank.0, 0, "{name}: strong mode over the limit");
        assert!(metrics::is_balanced(g, &part, 2, o.epsilon));
        cuts.push(metrics::cut(g, &part).total);
    }
    (cuts, secs)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    exit_on_help(&args, include_str!("walshaw_bench.rs"));
    let o = Options::parse(&args);
    let (epsilon, repetitions, population, combines, flow) =
        (o.epsilon, o.repetitions, o.population, o.combines, o.flow);
    let (local_rounds, grouping, budget, seeds) = (o.local_rounds, o.grouping, o.budget, o.seeds);
    let (kicks, kick_size) = (o.kicks, o.kick_size);
    println!("load average at the start: {}", load_average());
    let csv = std::fs::read_to_string(o.dir.join("best_known_k2_eps5.csv")).expect("best_known_k2_eps5.csv");
    println!(
        "k = 2, epsilon {epsilon}, plain edge cut; strong: {repetitions} repetitions, population {population}, {combines} combines, flow {flow:?}, localized FM rounds {local_rounds:?}, kicks {kicks:?} of at most {kick_size}, coarsening {grouping:?}, budget {budget} s, mean of {seeds} seeds\n"
    );
    println!("| graph | n | m | best known | multilevel (per seed) | METIS (per seed) | strong (mean) | strong (best) | strong / best known | time multilevel / METIS (ms, mean) | strong (s per seed) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut ratios = Vec::new();
    let mut versus_metis = Vec::new();
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (name, best_known): (&str, i64) = (f[0], f[3].parse().expect("best-known cut"));
        if !o.only.is_empty() && !o.only.split(',').any(|g| g == name) {
            continue;
        }
        let mut g = metis_format::read_file(&o.dir.join(format!("{name}.graph"))).expect("graph");
        critical::mark(&mut g, CriticalRule::None, CriticalValue::Unit);
        let Baselines { ml_cuts, m_cuts, ml_ms, m_ms, balanced } = baselines(&g, &o, &mut versus_metis);
        let (cuts, secs) = strong_runs(name, &g, &o);
        let mean = cuts.iter().sum::<i64>() as f64 / cuts.len() as f64;
        ratios.push(mean / best_known as f64);
        let flag = |b: bool| if b { "" } else { "!" };
        println!(
            "| {name} | {} | {} | {best_known} | {}{} | {}{} | {mean:.1} | {} | {:.3} | {ml_ms:.1} / {m_ms:.1} | {:.1} |",
            g.n(),
            g.m(),
            cut_list(&ml_cuts),
            flag(balanced.0),
            cut_list(&m_cuts),
            flag(balanced.1),
            cuts.iter().min().expect("one seed"),
            mean / best_known as f64,
            secs / seeds as f64
        );
    }
    print_summary(&ratios, &versus_metis);
}

/// Prints the strong mode's mean ratio to the best-known cuts and the default
/// driver's seed-by-seed comparison with METIS.
fn print_summary(ratios: &[f64], versus_metis: &[(std::cmp::Ordering, bool)]) {
    let mean_ratio = ratios.iter().sum::<f64>() / ratios.len() as f64;
    println!("\nstrong mode: mean cut / best known, averaged over the graphs: {mean_ratio:.3}");
    let count = |o: std::cmp::Ordering| versus_metis.iter().filter(|x| x.0 == o).count();
    println!(
        "multilevel: cut vs METIS, seed by seed: {} lower, {} equal, {} higher (of {}); within 2x METIS time: {} (times: fastest of three, below 0.1 ms count as 0.1 ms)",
        count(std::cmp::Ordering::Less),
        count(std::cmp::Ordering::Equal),
        count(std::cmp::Ordering::Greater),
        versus_metis.len(),
        versus_metis.iter().filter(|x| x.1).count()
    );
    println!("load average at the end: {}", load_average());
    println!("`!` marks a partition over the balance limit.");
}
