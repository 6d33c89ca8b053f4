//! Benchmark: the critical-gain partitioner against METIS on the shipped models'
//! operator graphs and on generated layered DAGs, for k = 2, 4, 8. Prints a
//! markdown table. Times are the fastest of three runs.
//!
//! `cargo run --release -p baton-partition --example partition_bench -- [--shapes DIR]
//!  [--sizes 1000,10000,100000] [--restarts R] [--scheme flat|multilevel] [--variant all|flow]
//!  [--critical path:0.1] [--value unit|weighted] [--epsilon 0.03] [--seed 1]
//!  [--hill-climb N] [--tries N] [--flow-slice] [--vcycles N] [--coarse-restarts N]
//!  [--quality default|strong] [--repetitions N]` (the last seven, and `--seed`, for our
//!  driver: hill climbing, initial tries, a flow-order slice tried first, multilevel cycles,
//!  restarts on the coarse levels, the strong mode and its repetitions)
//!
//! Model graphs are read from shape-annotated copies (`scripts/annotate_shapes.py`,
//! run by `scripts/setup.sh` into `.cache/shapes`); missing ones are skipped.

mod common;

use common::{arg, exit_on_help, fastest, load_average};

use std::path::{Path, PathBuf};

use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::graph::Graph;
use baton_partition::multilevel::{self, Params, Quality, Scheme};
use baton_partition::refine::Variant;
use baton_partition::report::{self, Row};
use baton_partition::{generate, metis_ref, onnx_graph};

/// The command line's settings (see the module docs).
struct Options {
    shapes: PathBuf,
    sizes: String,
    restarts: usize,
    scheme: Scheme,
    variant: Variant,
    rule: CriticalRule,
    value: CriticalValue,
    epsilon: f64,
    seed: u64,
    hill_climb: Option<usize>,
    tries: Option<usize>,
    flow_slice: bool,
    vcycles: Option<usize>,
    quality: Quality,
    repetitions: Option<usize>,
    coarse_restarts: Option<usize>,
}

impl Options {
    /// Reads the settings from `args`, with the documented defaults.
    fn parse(args: &[String]) -> Options {
        let given = |name: &str| args.iter().any(|a| a == name);
        Options {
            shapes: arg(args, "--shapes", PathBuf::from(".cache/shapes")),
            sizes: arg(args, "--sizes", "1000,10000,100000".to_string()),
            restarts: arg(args, "--restarts", 1),
            scheme: arg(args, "--scheme", Scheme::Multilevel),
            variant: arg(args, "--variant", Variant::AllCandidates),
            rule: arg(args, "--critical", CriticalRule::default()),
            value: arg(args, "--value", CriticalValue::Unit),
            epsilon: arg(args, "--epsilon", 0.03),
            seed: arg(args, "--seed", 1),
            hill_climb: given("--hill-climb").then(|| arg(args, "--hill-climb", 0)),
            tries: given("--tries").then(|| arg(args, "--tries", 0)),
            flow_slice: given("--flow-slice"),
            vcycles: given("--vcycles").then(|| arg(args, "--vcycles", 1)),
            quality: arg(args, "--quality", Quality::Default),
            repetitions: given("--repetitions").then(|| arg(args, "--repetitions", 64)),
            coarse_restarts: given("--coarse-restarts").then(|| arg(args, "--coarse-restarts", 1)),
        }
    }

    /// Our driver's parameters for `k` parts.
    fn params(&self, k: usize) -> Params {
        let mut p = Params::for_scheme(k, self.scheme);
        p.epsilon = self.epsilon;
        p.restarts = self.restarts;
        p.seed = self.seed;
        p.refine.variant = self.variant;
        p.quality = self.quality;
        p.strong.repetitions = self.repetitions;
        if let Some(h) = self.hill_climb {
            p.refine.hill_climb = h;
        }
        if let Some(t) = self.tries {
            p.initial_tries = t;
        }
        p.flow_slice = self.flow_slice;
        if let Some(c) = self.vcycles {
            p.vcycles = c;
        }
        if let Some(c) = self.coarse_restarts {
            p.coarse_restarts = c;
        }
        p
    }
}

/// The shipped models' graphs found under `shapes` (the others are skipped
/// with a note), then a layered DAG for each of the comma-separated `sizes`.
fn load_graphs(shapes: &Path, sizes: &str) -> Vec<(String, Graph)> {
    let mut graphs: Vec<(String, Graph)> = Vec::new();
    for (label, file) in [
        ("PP-OCRv4 det", "ch_PP-OCRv4_det_infer.onnx"),
        ("PP-OCRv4 rec", "ch_PP-OCRv4_rec_infer.onnx"),
        ("silero-vad", "silero_vad.onnx"),
    ] {
        match onnx_graph::read_file(&shapes.join(file)) {
            Ok(g) => graphs.push((label.to_string(), g)),
            Err(e) => eprintln!("skipping {label}: {e}"),
        }
    }
    for n in sizes.split(',').filter(|s| !s.is_empty()) {
        let n: usize = n.trim().parse().expect("--sizes");
        graphs.push((format!("layered DAG {n}"), generate::layered_dag(n, 42)));
    }
    graphs
}

/// Counts each of `ours` against METIS's row in its `tally`: a lower, equal or
/// higher critical cut, and whether it ran within twice METIS's time.
fn count_against(tally: &mut [[usize; 4]; 2], ours: &[Row; 2], theirs: &Row) {
    for (t, o) in tally.iter_mut().zip(ours) {
        let idx = match o.cut.critical.cmp(&theirs.cut.critical) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Greater => 2,
        };
        t[idx] += 1;
        if o.seconds <= 2.0 * theirs.seconds.max(1e-4) {
            t[3] += 1;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    exit_on_help(&args, include_str!("partition_bench.rs"));
    let o = Options::parse(&args);
    let (rule, value, epsilon, scheme, variant) = (o.rule, o.value, o.epsilon, o.scheme, o.variant);
    let (restarts, quality, repetitions) = (o.restarts, o.quality, o.repetitions);

    let graphs = load_graphs(&o.shapes, &o.sizes);
    println!("load average at the start: {}", load_average());
    println!(
        "critical rule {rule:?}, value {value:?}, epsilon {epsilon}, scheme {scheme:?}, variant {variant:?}, restarts {restarts}, quality {quality:?} ({repetitions:?} repetitions when strong, None: the default)\n"
    );
    let ours_label = match quality {
        Quality::Default => format!("{scheme:?}").to_lowercase(),
        Quality::Strong => "strong".to_string(),
    };
    println!("{}", report::table_header(&[&ours_label, "METIS+refine", "METIS"]));
    // (lower, equal, higher) critical cut than METIS, and runs within 2x METIS time.
    let mut tally = [[0usize; 4]; 2];
    let mut rows = 0;
    for (name, mut g) in graphs {
        critical::mark(&mut g, rule, value);
        for k in [2usize, 4, 8] {
            if g.n() < 2 * k {
                continue;
            }
            let p = o.params(k);
            let ml = fastest(|| multilevel::partition(&g, &p));
            let mr_p = Params { epsilon, ..Params::for_scheme(k, Scheme::MetisRefine) };
            let mr = fastest(|| multilevel::partition(&g, &mr_p));
            let m = fastest(|| metis_ref::partition(&g, k, epsilon, true, 1).expect("METIS"));
            let theirs = Row::from_outcome("metis", &g, k, &m);
            let ours = [Row::from_outcome(&ours_label, &g, k, &ml), Row::from_outcome("metis-refine", &g, k, &mr)];
            count_against(&mut tally, &ours, &theirs);
            let [a, b] = ours;
            println!("{}", report::table_row(&name, &g, &[a, b, theirs]));
            rows += 1;
        }
    }
    for (label, t) in [ours_label.as_str(), "METIS+refine"].iter().zip(tally) {
        println!(
            "\n{label}: critical cut vs METIS {} lower, {} equal, {} higher (of {rows}); within 2x METIS time: {} of {rows}",
            t[0], t[1], t[2], t[3]
        );
    }
    println!("`!` marks a partition over the balance limit; times below 0.1 ms count as 0.1 ms for the 2x test.");
    println!("load average at the end: {}", load_average());
}
