//! Profiling loop: the default driver on the Walshaw graphs (k = 2, 5%),
//! once per seed 1..=`--runs` on each graph (for `perf record`), and METIS on
//! the same seeds. Prints mean times, mean cuts and the seeds where the
//! default cuts more than METIS.
//!
//! With `--list`, each seed's cut (ours and METIS's) on a line of its own, so
//! that two builds can be compared seed by seed.
//!
//! `cargo run --release -p baton-partition --example default_profile -- [--dir DIR] [--runs 100] [--graphs add20,data] [--list]`

mod common;

use common::{arg, exit_on_help, fastest, load_average};

use std::path::PathBuf;

use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::multilevel::{self, Params};
use baton_partition::{metis_format, metis_ref};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    exit_on_help(&args, include_str!("default_profile.rs"));
    let dir: PathBuf = arg(&args, "--dir", PathBuf::from("../shared/data/walshaw"));
    let runs: usize = arg(&args, "--runs", 100);
    let only: String = arg(&args, "--graphs", "add20,data,3elt,uk".to_string());
    let list = args.iter().any(|a| a == "--list");
    println!("load average at the start: {}", load_average());
    for name in only.split(',') {
        let mut g = metis_format::read_file(&dir.join(format!("{name}.graph"))).expect("graph");
        critical::mark(&mut g, CriticalRule::None, CriticalValue::Unit);
        let (mut ours, mut metis, mut ms, mut metis_ms) = (Vec::new(), Vec::new(), 0.0, 0.0);
        let mut within = 0;
        for seed in 1..=runs as u64 {
            let o = fastest(|| multilevel::partition(&g, &Params { epsilon: 0.05, seed, ..Params::new(2) }));
            let m = fastest(|| metis_ref::partition(&g, 2, 0.05, false, seed).expect("METIS"));
            (ms, metis_ms) = (ms + 1e3 * o.seconds / runs as f64, metis_ms + 1e3 * m.seconds / runs as f64);
            within += usize::from(o.seconds <= 2.0 * m.seconds.max(1e-4));
            if list {
                println!("{name} seed {seed}: cut {} METIS {}", o.cut.total, m.cut.total);
            }
            ours.push(o.cut.total);
            metis.push(m.cut.total);
        }
        let mean = |c: &[i64]| c.iter().sum::<i64>() as f64 / c.len() as f64;
        let above = ours.iter().zip(&metis).filter(|(o, m)| o > m).count();
        println!(
            "{name}: {ms:.2} ms / METIS {metis_ms:.2} ms per run; mean cut {:.1} / METIS {:.1}; above METIS on {above} of {runs} seeds; within 2x METIS time on {within}",
            mean(&ours),
            mean(&metis)
        );
    }
    println!("load average at the end: {}", load_average());
}
