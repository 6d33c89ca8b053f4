//! The exact planner on a heterogeneous instance: two training-step subtasks
//! (forward ops, the loss, backward ops) on three units (two fast, one at half
//! speed), a transfer delay between units, and per-unit memory capacity.
//! Prints the list-scheduling start and the MILP result with its bound and gap.
//!
//! `cargo run -p baton-planners --example training_step`

use baton_planners::dag::{Dag, Edge, Task};
use baton_planners::ilp::{self, Options};
use baton_planners::platform::Platform;
use baton_planners::{list, simulate};

fn main() {
    // Per subtask: F1 -> F2 -> F3 -> L -> B3 -> B2 -> B1; backward op k needs forward op k's activations.
    let ops = [
        ("F1", 4.0, 3.0),
        ("F2", 6.0, 4.0),
        ("F3", 3.0, 2.0),
        ("L", 1.0, 0.0),
        ("B3", 5.0, 2.0),
        ("B2", 9.0, 4.0),
        ("B1", 6.0, 3.0),
    ];
    let mut tasks = Vec::new();
    let mut edges = Vec::new();
    for s in 0..2 {
        let base = tasks.len();
        for (name, cost, memory) in ops {
            tasks.push(Task { name: format!("{name}.{s}"), cost, memory });
        }
        for k in 0..ops.len() - 1 {
            edges.push(Edge { from: base + k, to: base + k + 1, transfer: 2.0, data: String::new() });
        }
        for (f, b) in [(0, 6), (1, 5), (2, 4)] {
            edges.push(Edge { from: base + f, to: base + b, transfer: 3.0, data: String::new() });
        }
    }
    let dag = Dag::new(tasks, edges).expect("a DAG");
    let p = Platform {
        names: vec!["fast0".into(), "fast1".into(), "slow".into()],
        durations: dag.tasks.iter().map(|t| vec![t.cost, t.cost, 2.0 * t.cost]).collect(),
        comm: vec![],
        memory: vec![14.0, 14.0, 20.0],
    };
    let start = list::best(&dag, &p, 32).expect("schedulable");
    let heuristic = simulate::verify(&dag, &p, &start).expect("legal");
    println!("{dag}");
    println!("list scheduling: makespan {heuristic}");
    let r = ilp::solve_makespan(&dag, &p, Options { time_limit: 30.0, ..Default::default() }).expect("solved");
    println!("MILP: makespan {}, {}", r.makespan, r.proof);
    for u in 0..p.units() {
        let mut on: Vec<usize> = (0..dag.len()).filter(|&i| r.schedule.unit[i] == u).collect();
        on.sort_by(|&a, &b| r.schedule.start[a].total_cmp(&r.schedule.start[b]));
        let used: f64 = on.iter().map(|&i| dag.tasks[i].memory).sum();
        let cells: Vec<String> = on
            .iter()
            .map(|&i| format!("{}@{}-{}", dag.tasks[i].name, r.schedule.start[i], r.schedule.finish(&dag, &p, i)))
            .collect();
        println!("  {:<6} memory {used}/{}: {}", p.names[u], p.capacity(u), cells.join(" "));
    }
    let r = ilp::solve_period(&dag, &p, Options { time_limit: 30.0, ..Default::default() }).expect("solved");
    println!("MILP period (pipelined steps): {}, {}", r.period, r.proof);
}
