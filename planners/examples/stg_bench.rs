//! The STG benchmark: list scheduling and the MILP against the known optima of
//! the 180 STG 50-task graphs, and the periodic planner on the same graphs as
//! repeated DAGs.
//!
//! ```text
//! cargo run --release -p baton-planners --example stg_bench -- DIR [list|periodic|ilp]... \
//!     [--procs 2,4,8,16] [--ilp-procs 2,4] [--time-limit 10] [--limit N] [--csv FILE]
//! ```
//! `DIR` holds `50/randNNNN.stg` and `Case50_M_OPT.csv`. Without parts, all
//! three run. Prints one table per part; `--csv` also writes one line per ILP
//! instance.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use baton_planners::dag::Dag;
use baton_planners::{bounds, ilp, list, periodic, platform::Platform, simulate, stg};

struct Args {
    dir: PathBuf,
    parts: Vec<String>,
    procs: Vec<usize>,
    ilp_procs: Vec<usize>,
    time_limit: f64,
    limit: usize,
    csv: Option<PathBuf>,
}

fn parse_args() -> Args {
    let mut a = Args {
        dir: PathBuf::new(),
        parts: vec![],
        procs: vec![2, 4, 8, 16],
        ilp_procs: vec![2, 4],
        time_limit: 10.0,
        limit: usize::MAX,
        csv: None,
    };
    let list_of = |s: String| s.split(',').map(|v| v.parse().expect("a number")).collect::<Vec<usize>>();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--procs" => a.procs = list_of(it.next().expect("--procs LIST")),
            "--ilp-procs" => a.ilp_procs = list_of(it.next().expect("--ilp-procs LIST")),
            "--time-limit" => a.time_limit = it.next().and_then(|v| v.parse().ok()).expect("--time-limit SECONDS"),
            "--limit" => a.limit = it.next().and_then(|v| v.parse().ok()).expect("--limit N"),
            "--csv" => a.csv = Some(PathBuf::from(it.next().expect("--csv FILE"))),
            "list" | "periodic" | "ilp" => a.parts.push(arg),
            _ if a.dir.as_os_str().is_empty() => a.dir = PathBuf::from(arg),
            _ => panic!("unknown argument `{arg}`"),
        }
    }
    assert!(!a.dir.as_os_str().is_empty(), "usage: stg_bench DIR [list|periodic|ilp]...");
    if a.parts.is_empty() {
        a.parts = vec!["list".into(), "periodic".into(), "ilp".into()];
    }
    a
}

fn graphs(dir: &Path, limit: usize) -> Vec<(String, Dag)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("50"))
        .expect("DIR/50")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "stg"))
        .collect();
    files.sort();
    files.truncate(limit);
    files
        .into_iter()
        .map(|p| {
            let key = format!("50/{}", p.file_name().unwrap().to_string_lossy());
            (key, stg::load(&p).unwrap_or_else(|e| panic!("{e}")))
        })
        .collect()
}

fn main() {
    let args = parse_args();
    let gs = graphs(&args.dir, args.limit);
    println!("{} STG graphs from {}", gs.len(), args.dir.display());
    if args.parts.iter().any(|p| p == "list") {
        list_table(&args, &gs);
    }
    if args.parts.iter().any(|p| p == "periodic") {
        periodic_table(&gs);
    }
    if args.parts.iter().any(|p| p == "ilp") {
        ilp_table(&args, &gs);
    }
}

/// Prints the list-scheduling table: one row per `--procs` count, against the optima.
fn list_table(args: &Args, gs: &[(String, Dag)]) {
    println!("\n## List scheduling (best of priority rules, 32 perturbed runs) vs optimum");
    println!(
        "| processors | instances (proven opt) | mean gap | max gap | matched opt | = lower bound | time/instance |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &m in &args.procs {
        let optima = stg::load_optima(&args.dir.join(format!("Case50_{m}_OPT.csv"))).expect("optimum CSV");
        let p = Platform::identical(m);
        let (mut gaps, mut matched, mut at_lb, mut proven) = (Vec::new(), 0, 0, 0);
        let t0 = Instant::now();
        for (key, dag) in gs {
            let s = list::best(dag, &p, 32).expect("schedulable");
            let ms = simulate::verify(dag, &p, &s).expect("legal");
            at_lb += (ms <= bounds::lower_bound(dag, &p)) as usize;
            let opt = optima[key];
            if opt.proven() {
                proven += 1;
                gaps.push((ms - opt.best_known) / opt.best_known);
                matched += (ms == opt.best_known) as usize;
            }
        }
        let per = t0.elapsed().as_secs_f64() / gs.len() as f64;
        let mean = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
        let max = gaps.iter().copied().fold(0.0, f64::max);
        println!(
            "| {m} | {proven} | {:.3}% | {:.2}% | {matched}/{proven} | {at_lb}/{} | {:.1} ms |",
            100.0 * mean,
            100.0 * max,
            gs.len(),
            per * 1e3
        );
    }
}

/// Prints the periodic planner's table: one row per unit count 2 to 16, every
/// plan verified.
fn periodic_table(gs: &[(String, Dag)]) {
    println!("\n## Periodic planner (x_max 4, threshold 0.99), every plan simulator-verified");
    println!(
        "| h | U mean | U min | U >= 0.99 | X mean | X max | period/sample ÷ sum(c)/h | period/sample ÷ bound max(sum(c)/h, max c / x_max) (mean, min) | depth mean |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for h in 2..=16 {
        let opts = periodic::Options { x_max: 4, threshold: 0.99 };
        let (mut us, mut ok, mut xmax, mut xsum, mut depth) = (Vec::new(), 0, 0, 0, 0.0);
        let (mut load_ratio, mut ratio, mut ratio_min) = (0.0, 0.0, f64::INFINITY);
        for (_, dag) in gs {
            let plan = periodic::plan(dag, h, opts).expect("plan");
            periodic::verify(dag, &plan).expect("legal");
            ok += (plan.utilization >= 0.99) as usize;
            xmax = xmax.max(plan.x);
            xsum += plan.x;
            let per_sample = plan.period / plan.x as f64;
            load_ratio += per_sample / (dag.total_cost() / h as f64);
            let r = per_sample / bounds::periodic_bound(dag, &Platform::identical(h), opts.x_max);
            assert!(r >= 1.0 - 1e-9, "per-sample period {per_sample} below the periodic bound");
            ratio += r;
            ratio_min = f64::min(ratio_min, r);
            depth += plan.depth as f64;
            us.push(plan.utilization);
        }
        let k = gs.len() as f64;
        println!(
            "| {h} | {:.4} | {:.4} | {ok}/{} | {:.2} | {xmax} | {:.4} | {:.4}, {:.4} | {:.2} |",
            us.iter().sum::<f64>() / k,
            us.iter().copied().fold(1.0, f64::min),
            gs.len(),
            xsum as f64 / k,
            load_ratio / k,
            ratio / k,
            ratio_min,
            depth / k
        );
    }
}

/// Prints the MILP table, one row per `--ilp-procs` count, and with `--csv`
/// writes one line per instance.
fn ilp_table(args: &Args, gs: &[(String, Dag)]) {
    let mut csv = args.csv.as_ref().map(|f| std::fs::File::create(f).expect("--csv file"));
    if let Some(f) = csv.as_mut() {
        writeln!(f, "file,processors,heuristic,makespan,lower_bound,status,formulation,seconds,opt,opt_proven")
            .unwrap();
    }
    println!("\n## MILP (HiGHS, 1 thread, {} s limit) vs optimum", args.time_limit);
    println!(
        "| processors | instances | proven opt | certified (of proven) | certified (all) | matched opt | mean gap (proven) | solver calls | time mean | time max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &m in &args.ilp_procs {
        ilp_row(args, gs, m, &mut csv);
    }
}

/// Solves every graph on `m` units with the MILP, checks each answer against
/// the known optimum, writes the CSV lines and prints the table row.
fn ilp_row(args: &Args, gs: &[(String, Dag)], m: usize, csv: &mut Option<std::fs::File>) {
    let optima = stg::load_optima(&args.dir.join(format!("Case50_{m}_OPT.csv"))).expect("optimum CSV");
    let p = Platform::identical(m);
    let opts = ilp::Options { time_limit: args.time_limit, ..Default::default() };
    let (mut proven, mut cert_p, mut cert, mut matched, mut calls) = (0, 0, 0, 0, 0);
    let (mut gaps, mut times) = (Vec::new(), Vec::new());
    for (key, dag) in gs {
        let r = ilp::solve_makespan(dag, &p, opts).unwrap_or_else(|e| panic!("{key}: {e}"));
        let opt = optima[key];
        assert!(
            r.proof.lower_bound <= opt.best_known + 1e-6 && r.makespan >= opt.lower_bound - 1e-6,
            "{key} on {m}: solver claims [{}, {}] against known [{}, {}]",
            r.proof.lower_bound,
            r.makespan,
            opt.lower_bound,
            opt.best_known
        );
        let certified = r.proof.status == ilp::Status::Optimal;
        cert += certified as usize;
        calls += (r.proof.formulation != ilp::Formulation::None) as usize;
        if opt.proven() {
            proven += 1;
            cert_p += certified as usize;
            matched += (r.makespan == opt.best_known) as usize;
            gaps.push((r.makespan - opt.best_known) / opt.best_known);
        }
        times.push(r.proof.seconds);
        if let Some(f) = csv.as_mut() {
            writeln!(
                f,
                "{key},{m},{},{},{},{:?},{:?},{:.3},{},{}",
                r.proof.heuristic,
                r.makespan,
                r.proof.lower_bound,
                r.proof.status,
                r.proof.formulation,
                r.proof.seconds,
                opt.best_known,
                opt.proven()
            )
            .unwrap();
            f.flush().unwrap();
        }
    }
    let k = gs.len();
    println!(
        "| {m} | {k} | {proven} | {cert_p}/{proven} ({:.1}%) | {cert}/{k} | {matched}/{proven} | {:.3}% | {calls} | {:.2} s | {:.2} s |",
        100.0 * cert_p as f64 / proven.max(1) as f64,
        100.0 * gaps.iter().sum::<f64>() / gaps.len().max(1) as f64,
        times.iter().sum::<f64>() / k as f64,
        times.iter().copied().fold(0.0, f64::max)
    );
}
