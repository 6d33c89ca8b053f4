//! Time limits on STG-like random graphs: generates `--graphs N` DAGs of
//! `--tasks T` tasks (times 1..=10, each task with up to 12 predecessors
//! among the earlier ones, 6.5 on average as in the STG 50-task set), solves
//! each with the MILP on `--procs M` units under `--time-limit S`, and prints
//! the elapsed time, the overrun past the limit, the status and whether the
//! solver thread was abandoned at the deadline.
//!
//! ```text
//! cargo run -p baton-planners --example time_limit_probe -- --tasks 100 --procs 2 --time-limit 10 --graphs 5 [--seed 1] [--write DIR]
//! ```
//! `--write DIR` also writes each graph as `DIR/gen_T_SEED_I.stg`;
//! `--no-search` starts the MILP from list scheduling and the periodic
//! planner only (no local search), so more graphs reach the solver.

use std::time::Instant;

use baton_planners::{generate, ilp, platform::Platform, stg, watchdog};

fn main() {
    let mut tasks = 100;
    let mut procs = 2;
    let mut limit = 10.0;
    let mut graphs = 5;
    let mut seed = 1u64;
    let mut write: Option<std::path::PathBuf> = None;
    let mut search_steps = ilp::Options::default().search_steps;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--tasks" => tasks = value().parse().expect("--tasks N"),
            "--procs" => procs = value().parse().expect("--procs M"),
            "--time-limit" => limit = value().parse().expect("--time-limit S"),
            "--graphs" => graphs = value().parse().expect("--graphs N"),
            "--seed" => seed = value().parse().expect("--seed S"),
            "--write" => write = Some(value().into()),
            "--no-search" => search_steps = 0,
            _ => panic!("unknown argument `{arg}`"),
        }
    }
    println!("graph,tasks,procs,limit_s,elapsed_s,overrun_s,status,makespan,lower_bound,start,start_from,abandoned");
    for g in 0..graphs {
        let text = generate::stg_text(tasks, seed.wrapping_mul(1000).wrapping_add(g));
        let name = format!("gen_{tasks}_{seed}_{g}");
        if let Some(dir) = &write {
            std::fs::write(dir.join(format!("{name}.stg")), &text).expect("writing the graph");
        }
        let dag = stg::parse(&text, std::path::Path::new(&name)).expect("a generated graph parses");
        let before = watchdog::abandoned();
        let t0 = Instant::now();
        let s = ilp::solve_makespan(
            &dag,
            &Platform::identical(procs),
            ilp::Options { time_limit: limit, search_steps, ..Default::default() },
        )
        .expect("solved");
        let el = t0.elapsed().as_secs_f64();
        println!(
            "{name},{tasks},{procs},{limit},{el:.3},{:.3},{:?},{},{},{},{},{}",
            (el - limit).max(0.0),
            s.proof.status,
            s.makespan,
            s.proof.lower_bound,
            s.proof.heuristic,
            s.proof.start,
            watchdog::abandoned() - before
        );
    }
}
