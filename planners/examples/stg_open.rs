//! The open STG instances (a CSV row with two numbers: lower bound and
//! best-known length, the optimum not proven) on m identical units: the MILP
//! with a time limit per instance, each schedule replayed by the simulator
//! (`simulate::verify`) before it is counted. Prints a markdown table, one
//! row per instance, with the set's bounds, ours, the verdict and the time.
//!
//! ```text
//! cargo run -p baton-planners --example stg_open -- DIR [--procs 2,4,8] [--time-limit 60] [--csv FILE]
//! ```
//! `DIR` holds `50/randNNNN.stg` and `Case50_M_OPT.csv`. Verdicts: `certified`
//! (our schedule meets our bound: the optimum, now proven), `improved` (a
//! schedule shorter than the best known), `bound raised` (our bound above the
//! set's), `open` (neither).

use std::io::Write;
use std::path::PathBuf;

use baton_planners::{ilp, platform::Platform, simulate, stg};

struct Args {
    dir: PathBuf,
    procs: Vec<usize>,
    time_limit: f64,
    csv: Option<PathBuf>,
    /// Instance names (`rand0090`) to run; empty: every open one.
    only: Vec<String>,
}

fn parse_args() -> Args {
    let mut a = Args { dir: PathBuf::new(), procs: vec![2, 4, 8], time_limit: 60.0, csv: None, only: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--procs" => {
                let list = it.next().expect("--procs LIST");
                a.procs = list.split(',').map(|v| v.parse().expect("--procs: numbers")).collect();
            }
            "--time-limit" => a.time_limit = it.next().and_then(|v| v.parse().ok()).expect("--time-limit SECONDS"),
            "--csv" => a.csv = Some(PathBuf::from(it.next().expect("--csv FILE"))),
            "--instances" => {
                let list = it.next().expect("--instances LIST");
                a.only = list.split(',').map(str::to_string).collect();
            }
            _ if a.dir.as_os_str().is_empty() => a.dir = PathBuf::from(arg),
            _ => panic!("unknown argument `{arg}`"),
        }
    }
    assert!(
        !a.dir.as_os_str().is_empty(),
        "usage: stg_open DIR [--procs 2,4,8] [--time-limit 60] [--csv FILE] [--instances rand0090,...]"
    );
    a
}

/// What our answer says against the set's bounds `[lb, best]`.
fn verdict(value: f64, bound: f64, status: ilp::Status, lb: f64, best: f64) -> String {
    let mut v = Vec::new();
    if status == ilp::Status::Optimal {
        v.push("certified");
    }
    if value < best - 1e-9 {
        v.push("improved");
    }
    if bound > lb + 1e-9 && status != ilp::Status::Optimal {
        v.push("bound raised");
    }
    if v.is_empty() {
        v.push("open");
    }
    v.join(", ")
}

fn main() {
    let args = parse_args();
    let mut csv = args.csv.as_ref().map(|f| std::fs::File::create(f).expect("--csv file"));
    if let Some(f) = csv.as_mut() {
        writeln!(f, "file,processors,set_lower_bound,set_best_known,makespan,lower_bound,status,start,seconds,verdict")
            .unwrap();
    }
    println!("open STG instances, MILP (HiGHS, 1 thread) with a {} s limit each", args.time_limit);
    println!("| instance | m | set's bound | set's best known | our schedule | our bound | status | start | time (s) | verdict |");
    println!("|---|---:|---:|---:|---:|---:|---|---|---:|---|");
    for &m in &args.procs {
        let optima = stg::load_optima(&args.dir.join(format!("Case50_{m}_OPT.csv"))).expect("optimum CSV");
        let p = Platform::identical(m);
        let opts = ilp::Options { time_limit: args.time_limit, ..Default::default() };
        for (key, opt) in optima.iter().filter(|(_, o)| !o.proven()) {
            let name = key.trim_start_matches("50/").trim_end_matches(".stg");
            if !args.only.is_empty() && !args.only.iter().any(|i| i == name) {
                continue;
            }
            let dag = stg::load(&args.dir.join(key)).unwrap_or_else(|e| panic!("{e}"));
            let r = ilp::solve_makespan(&dag, &p, opts).unwrap_or_else(|e| panic!("{key}: {e}"));
            let replayed = simulate::verify(&dag, &p, &r.schedule).unwrap_or_else(|e| panic!("{key} on {m}: {e:?}"));
            assert!((replayed - r.makespan).abs() < 1e-6, "{key} on {m}: replay {replayed} against {}", r.makespan);
            assert!(r.proof.lower_bound <= opt.best_known + 1e-6, "{key} on {m}: bound above a known schedule");
            let v = verdict(r.makespan, r.proof.lower_bound, r.proof.status, opt.lower_bound, opt.best_known);
            let row = [
                opt.lower_bound.to_string(),
                opt.best_known.to_string(),
                r.makespan.to_string(),
                r.proof.lower_bound.to_string(),
                format!("{:?}", r.proof.status),
                format!("{:?}", r.proof.start),
            ];
            println!("| {name} | {m} | {} | {:.1} | {v} |", row.join(" | "), r.proof.seconds);
            if let Some(f) = csv.as_mut() {
                writeln!(f, "{key},{m},{},{:.3},{v}", row.join(","), r.proof.seconds).unwrap();
                f.flush().unwrap();
            }
        }
    }
}
