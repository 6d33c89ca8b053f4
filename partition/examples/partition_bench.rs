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

use std::path::PathBuf;

use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::graph::Graph;
use baton_partition::multilevel::{self, Params, Quality, Scheme};
use baton_partition::refine::Variant;
use baton_partition::report::{self, Row};
use baton_partition::{generate, metis_ref, onnx_graph};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    exit_on_help(&args, include_str!("partition_bench.rs"));
    let shapes: PathBuf = arg(&args, "--shapes", PathBuf::from(".cache/shapes"));
    let sizes: String = arg(&args, "--sizes", "1000,10000,100000".to_string());
    let restarts: usize = arg(&args, "--restarts", 1);
    let scheme: Scheme = arg(&args, "--scheme", Scheme::Multilevel);
    let variant: Variant = arg(&args, "--variant", Variant::AllCandidates);
    let rule: CriticalRule = arg(&args, "--critical", CriticalRule::default());
    let value: CriticalValue = arg(&args, "--value", CriticalValue::Unit);
    let epsilon: f64 = arg(&args, "--epsilon", 0.03);
    let seed: u64 = arg(&args, "--seed", 1);
    let hill_climb: Option<usize> = args.iter().any(|a| a == "--hill-climb").then(|| arg(&args, "--hill-climb", 0));
    let tries: Option<usize> = args.iter().any(|a| a == "--tries").then(|| arg(&args, "--tries", 0));
    let flow_slice = args.iter().any(|a| a == "--flow-slice");
    let vcycles: Option<usize> = args.iter().any(|a| a == "--vcycles").then(|| arg(&args, "--vcycles", 1));
    let quality: Quality = arg(&args, "--quality", Quality::Default);
    let repetitions: usize = arg(&args, "--repetitions", 64);
    let coarse_restarts: Option<usize> =
        args.iter().any(|a| a == "--coarse-restarts").then(|| arg(&args, "--coarse-restarts", 1));

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
    println!("load average at the start: {}", load_average());
    println!(
        "critical rule {rule:?}, value {value:?}, epsilon {epsilon}, scheme {scheme:?}, variant {variant:?}, restarts {restarts}, quality {quality:?} ({repetitions} repetitions when strong)\n"
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
            let mut p = Params::for_scheme(k, scheme);
            p.epsilon = epsilon;
            p.restarts = restarts;
            p.seed = seed;
            p.refine.variant = variant;
            p.quality = quality;
            p.strong.repetitions = repetitions;
            if let Some(h) = hill_climb {
                p.refine.hill_climb = h;
            }
            if let Some(t) = tries {
                p.initial_tries = t;
            }
            p.flow_slice = flow_slice;
            if let Some(c) = vcycles {
                p.vcycles = c;
            }
            if let Some(c) = coarse_restarts {
                p.coarse_restarts = c;
            }
            let ml = fastest(|| multilevel::partition(&g, &p));
            let mr_p = Params { epsilon, ..Params::for_scheme(k, Scheme::MetisRefine) };
            let mr = fastest(|| multilevel::partition(&g, &mr_p));
            let m = fastest(|| metis_ref::partition(&g, k, epsilon, true, 1).expect("METIS"));
            let theirs = Row::from_outcome("metis", &g, k, &m);
            let ours = [Row::from_outcome(&ours_label, &g, k, &ml), Row::from_outcome("metis-refine", &g, k, &mr)];
            for (t, o) in tally.iter_mut().zip(&ours) {
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
