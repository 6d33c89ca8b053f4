//! One task-graph row of `partition_bench` for a profiler: the default driver
//! and METIS on the same graph, `--runs` times each, nothing else timed.
//! Under `valgrind --tool=callgrind`, the inclusive instruction counts of
//! `multilevel::partition` and `metis_ref::partition` are the two sides.
//!
//! `cargo run --release -p baton-partition --example task_profile -- --graph dag:1000
//!  [--k 4] [--runs 3] [--seed 1] [--shapes DIR]` (`--graph` is `dag:N` or a model file
//!  name under `--shapes`, e.g. `silero_vad.onnx`)

mod common;

use common::{arg, exit_on_help, load_average};

use std::path::PathBuf;

use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::multilevel::{self, Params};
use baton_partition::{generate, metis_ref, onnx_graph};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    exit_on_help(&args, include_str!("task_profile.rs"));
    let graph: String = arg(&args, "--graph", "dag:1000".to_string());
    let shapes: PathBuf = arg(&args, "--shapes", PathBuf::from(".cache/shapes"));
    let k: usize = arg(&args, "--k", 4);
    let runs: usize = arg(&args, "--runs", 3);
    let seed: u64 = arg(&args, "--seed", 1);
    let mut g = match graph.strip_prefix("dag:") {
        Some(n) => generate::layered_dag(n.parse().expect("--graph dag:N"), 42),
        None => onnx_graph::read_file(&shapes.join(&graph)).expect("--graph"),
    };
    critical::mark(&mut g, CriticalRule::default(), CriticalValue::Unit);
    let p = Params { seed, ..Params::new(k) };
    println!("{graph}, k = {k}, load average {}", load_average());
    for _ in 0..runs {
        let o = multilevel::partition(&g, &p);
        println!("ours  {:?} imbalance {:.4} {:.3} ms", o.cut, o.imbalance, o.seconds * 1e3);
    }
    for _ in 0..runs {
        let m = metis_ref::partition(&g, k, p.epsilon, true, 1).expect("METIS");
        println!("METIS {:?} imbalance {:.4} {:.3} ms", m.cut, m.imbalance, m.seconds * 1e3);
    }
}
