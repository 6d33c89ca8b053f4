//! Profiling loop: the default driver on the Walshaw graphs (k = 2, 5%),
//! once per seed 1..=`--runs` on each graph (for `perf record`), and METIS on
//! the same seeds. Prints mean times, mean cuts and the seeds where the
//! default cuts more than METIS.
//!
//! `cargo run --release -p baton-partition --example default_profile -- [--dir DIR] [--runs 100] [--graphs add20,data]`

mod common;

use common::arg;

use std::path::PathBuf;
use std::time::Instant;

use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::{metis_format, metis_ref};
use baton_partition::multilevel::{self, Params};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir: PathBuf = arg(&args, "--dir", PathBuf::from("../shared/data/walshaw"));
    let runs: usize = arg(&args, "--runs", 100);
    let only: String = arg(&args, "--graphs", "add20,data,3elt,uk".to_string());
    for name in only.split(',') {
        let mut g = metis_format::read_file(&dir.join(format!("{name}.graph"))).expect("graph");
        critical::mark(&mut g, CriticalRule::None, CriticalValue::Unit);
        let t = Instant::now();
        let ours: Vec<i64> = (1..=runs as u64)
            .map(|seed| multilevel::partition(&g, &Params { epsilon: 0.05, seed, ..Params::new(2) }).cut.total)
            .collect();
        let ms = 1e3 * t.elapsed().as_secs_f64() / runs as f64;
        let t = Instant::now();
        let metis: Vec<i64> = (1..=runs as u64)
            .map(|seed| metis_ref::partition(&g, 2, 0.05, false, seed).expect("METIS").cut.total)
            .collect();
        let metis_ms = 1e3 * t.elapsed().as_secs_f64() / runs as f64;
        let mean = |c: &[i64]| c.iter().sum::<i64>() as f64 / c.len() as f64;
        let above = ours.iter().zip(&metis).filter(|(o, m)| o > m).count();
        println!(
            "{name}: {ms:.2} ms / METIS {metis_ms:.2} ms per run; mean cut {:.1} / METIS {:.1}; above METIS on {above} of {runs} seeds",
            mean(&ours),
            mean(&metis)
        );
    }
}
