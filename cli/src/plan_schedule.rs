//! `baton plan --method list|periodic|ilp`: schedules a task graph (an STG
//! file, the compact text format, or a pipeline with its profile) on
//! `--processors` units, prints the plan with its bound and gap, writes it as
//! JSON (`--out`) and, for a pipeline, a copy of the pipeline file with the
//! plan's placement (`cores`, `workers` per node).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use baton_planners::dag::Dag;
use baton_planners::incumbent::Source;
use baton_planners::pipeline::{self, Profile};
use baton_planners::platform::Platform;
use baton_planners::simulate::Schedule;
use baton_planners::{bounds, ilp, list, periodic, stg, text};
use serde_json::json;

use crate::plan::{Method, Objective, PlanArgs};

/// The graph to plan and, for a pipeline, its file (for the placement).
fn load(args: &PlanArgs) -> Result<(Dag, Option<PathBuf>, &'static str), String> {
    match (&args.stg, &args.dag, &args.pipeline) {
        (Some(f), None, None) => Ok((stg::load(f).map_err(|e| e.to_string())?, None, "time units")),
        (None, Some(f), None) => Ok((text::load(f).map_err(|e| e.to_string())?, None, "time units")),
        (None, None, Some(f)) => {
            let prof = args.profile.as_ref().ok_or("--pipeline needs --profile (from `baton profile`)")?;
            let profile = Profile::load(prof)?;
            let graph = pipeline::node_graph(f)?;
            let dag = pipeline::dag_from_pipeline(&graph, &profile, args.batch)
                .map_err(|e| format!("{}: {e}", prof.display()))?;
            Ok((dag, Some(f.clone()), "µs"))
        }
        _ => Err("give exactly one of --stg, --dag, --pipeline".into()),
    }
}

pub fn plan(args: &PlanArgs) -> Result<(), String> {
    if args.objective == Objective::Latency {
        return Err(
            "--objective latency is the placement's: give --method ilp --pipeline P --profile F --out PLACED.toml"
                .into(),
        );
    }
    let (dag, pipeline_file, unit) = load(args)?;
    let h = args.processors;
    if h == 0 {
        return Err("--processors must be at least 1".into());
    }
    let p = Platform::identical(h);
    println!("graph: {dag}");
    println!("processors: {h}");
    let (mut report, placement, per_sample) = match args.method {
        Method::List => plan_list(&dag, &p, unit)?,
        Method::Ilp if args.objective == Objective::Makespan => plan_ilp_makespan(args, &dag, &p, unit)?,
        Method::Ilp => plan_ilp_period(args, &dag, &p, unit)?,
        Method::Periodic => plan_periodic(args, &dag, &p, unit)?,
        Method::Partition => unreachable!("dispatched to plan_partition"),
    };
    report["placement"] = json!(placement);
    if pipeline_file.is_some() {
        print_pipeline_prediction(args, &mut report, &placement, per_sample);
    }
    if let Some(out) = &args.out {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(out, text + "\n").map_err(|e| format!("{}: {e}", out.display()))?;
        println!("wrote {}", out.display());
    }
    if let Some(src) = pipeline_file {
        write_placed_pipeline(args, &src, &placement)?;
    }
    Ok(())
}

/// A method's result: its JSON report, the placement (node name -> units) and
/// the time per sample that the predicted throughput is computed from.
type Planned = (serde_json::Value, BTreeMap<String, Vec<usize>>, f64);

/// `--method list`: the best list schedule, printed with its bound and gap.
fn plan_list(dag: &Dag, p: &Platform, unit: &str) -> Result<Planned, String> {
    let s = list::best(dag, p, 32).map_err(|e| e.to_string())?;
    let ms = s.makespan(dag, p);
    let lb = bounds::lower_bound(dag, p);
    print_makespan("list", ms, lb, None, unit);
    print_schedule(dag, p, &s);
    let r = json!({"method": "list", "makespan": ms, "lower_bound": lb, "gap": gap(ms, lb), "schedule": schedule_json(dag, p, &s)});
    Ok((r, units_of(dag, &s.unit), pipelined_period(dag, p, &s.unit)))
}

/// `--method ilp --objective makespan`: the MILP's schedule, printed with its proof.
fn plan_ilp_makespan(args: &PlanArgs, dag: &Dag, p: &Platform, unit: &str) -> Result<Planned, String> {
    let r = ilp::solve_makespan(dag, p, ilp::Options { time_limit: args.time_limit, ..Default::default() })?;
    print_makespan("ilp", r.makespan, r.proof.lower_bound, Some((r.proof.heuristic, r.proof.start)), unit);
    println!("status: {:?} ({:?}, {:.2} s)", r.proof.status, r.proof.formulation, r.proof.seconds);
    print_schedule(dag, p, &r.schedule);
    let mut j = serde_json::to_value(&r).map_err(|e| e.to_string())?;
    j["method"] = json!("ilp");
    j["schedule"] = schedule_json(dag, p, &r.schedule);
    Ok((j, units_of(dag, &r.schedule.unit), pipelined_period(dag, p, &r.schedule.unit)))
}

/// `--method ilp` for the period: the MILP's assignment, printed with its proof
/// and each unit's load.
fn plan_ilp_period(args: &PlanArgs, dag: &Dag, p: &Platform, unit: &str) -> Result<Planned, String> {
    let r = ilp::solve_period(dag, p, ilp::Options { time_limit: args.time_limit, ..Default::default() })?;
    println!("period: {} {unit}", r.period);
    println!("lower bound: {} {unit}", r.proof.lower_bound);
    println!("gap: {:.3}%", 100.0 * r.proof.gap);
    println!("start (the MILP's incumbent, from {}): {} {unit}", r.proof.start, r.proof.heuristic);
    println!("status: {:?} ({:?}, {:.2} s)", r.proof.status, r.proof.formulation, r.proof.seconds);
    let loads = ilp::loads(dag, p, &r.unit);
    for (u, load) in loads.iter().enumerate() {
        let names: Vec<&str> = (0..dag.len()).filter(|&i| r.unit[i] == u).map(|i| dag.tasks[i].name.as_str()).collect();
        println!("  unit {u}: load {load:.1}  {}", names.join(" "));
    }
    let mut j = serde_json::to_value(&r).map_err(|e| e.to_string())?;
    j["method"] = json!("ilp-period");
    Ok((j, units_of(dag, &r.unit), r.period))
}

/// `--method periodic`: the periodic plan, printed with its bounds, trials and
/// instances; a node's placement is every unit any of its instances runs on.
fn plan_periodic(args: &PlanArgs, dag: &Dag, p: &Platform, unit: &str) -> Result<Planned, String> {
    let opts = periodic::Options { x_max: args.x_max, threshold: args.threshold };
    let plan = periodic::plan(dag, args.processors, opts)?;
    let bound = bounds::periodic_bound(dag, p, args.x_max);
    let one_sample = bounds::period_bound(dag, p);
    println!("samples per period X: {}", plan.x);
    println!("period: {} {unit} ({} per sample)", plan.period, plan.period / plan.x as f64);
    println!("lower bound: {bound} {unit} per sample = max(sum / h, max c / x_max) for X <= x_max = {}", args.x_max);
    println!("gap: {:.3}%", 100.0 * gap(plan.period / plan.x as f64, bound));
    println!("one sample per period (X = 1) needs at least {one_sample} {unit} = max(sum / h, max c)");
    println!("utilization U: {:.4}", plan.utilization);
    println!("pipeline depth: {} periods, sample latency {:.1} {unit}", plan.depth, plan.latency(dag));
    print_periodic_plan(dag, &plan);
    let mut per_node: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for i in &plan.instances {
        per_node.entry(dag.tasks[i.task].name.clone()).or_default().insert(i.unit);
    }
    let placement = per_node.into_iter().map(|(k, v)| (k, v.into_iter().collect())).collect();
    let per_sample = plan.period / plan.x as f64;
    let mut j = serde_json::to_value(&plan).map_err(|e| e.to_string())?;
    j["method"] = json!("periodic");
    j["lower_bound"] = json!(bound);
    j["one_sample_bound"] = json!(one_sample);
    Ok((j, placement, per_sample))
}

/// Prints a periodic plan's trials and its instance table.
fn print_periodic_plan(dag: &Dag, plan: &periodic::PeriodicPlan) {
    for t in &plan.trials {
        println!("  tried X={}: period {} U {:.4}", t.x, t.period, t.utilization);
    }
    println!("  {:<16} {:>6} {:>4} {:>10} {:>6} {:>8}", "task", "sample", "unit", "offset", "stage", "retiming");
    for i in &plan.instances {
        println!(
            "  {:<16} {:>6} {:>4} {:>10.2} {:>6} {:>8}",
            dag.tasks[i.task].name, i.sample, i.unit, i.offset, i.stage, i.retiming
        );
    }
    println!("verified: every dependency and unit checked over {} periods", plan.depth + 1);
}

/// For a pipeline: prints the predicted throughput and the placement, and adds
/// the throughput and batch to the report.
fn print_pipeline_prediction(
    args: &PlanArgs,
    report: &mut serde_json::Value,
    placement: &BTreeMap<String, Vec<usize>>,
    per_sample: f64,
) {
    let per_s = args.batch as f64 * 1e6 / per_sample;
    println!(
        "predicted throughput: {per_s:.0} samples/s (batch {} every {per_sample:.1} µs per unit load)",
        args.batch
    );
    report["predicted_samples_per_s"] = json!(per_s);
    report["batch"] = json!(args.batch);
    println!("placement (node -> units):");
    for (node, units) in placement {
        println!("  {node}: {units:?}");
    }
}

/// Writes a copy of the pipeline file `src` with the plan's placement, to
/// `--placed` or next to `src`.
fn write_placed_pipeline(args: &PlanArgs, src: &Path, placement: &BTreeMap<String, Vec<usize>>) -> Result<(), String> {
    let dst = args.placed.clone().unwrap_or_else(|| placed_path(src));
    let note = format!(
        "Generated by `baton plan --method {} --processors {}` from {}:\nnode workers pinned to the planned units (unit u = core u).",
        format!("{:?}", args.method).to_lowercase(),
        args.processors,
        src.display()
    );
    pipeline::write_placed(src, &dst, placement, &note)?;
    println!("wrote {} (the pipeline with this placement)", dst.display());
    Ok(())
}

fn placed_path(src: &Path) -> PathBuf {
    let stem = src.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    src.with_file_name(format!("{stem}.placed.toml"))
}

fn gap(value: f64, bound: f64) -> f64 {
    if value > 0.0 {
        (value - bound).max(0.0) / value
    } else {
        0.0
    }
}

/// `start`: the MILP's starting schedule's makespan and where it came from.
fn print_makespan(method: &str, ms: f64, lb: f64, start: Option<(f64, Source)>, unit: &str) {
    println!("method: {method}");
    println!("makespan: {ms} {unit}");
    println!("lower bound: {lb} {unit}");
    println!("gap: {:.3}%", 100.0 * gap(ms, lb));
    if let Some((value, source)) = start {
        println!("start (the MILP's incumbent, from {source}): {value} {unit}");
    }
}

fn print_schedule(dag: &Dag, p: &Platform, s: &Schedule) {
    for u in 0..p.units() {
        let mut tasks: Vec<usize> = (0..dag.len()).filter(|&i| s.unit[i] == u).collect();
        tasks.sort_by(|&a, &b| s.start[a].total_cmp(&s.start[b]));
        let cells: Vec<String> =
            tasks.iter().map(|&i| format!("{}@{}-{}", dag.tasks[i].name, s.start[i], s.finish(dag, p, i))).collect();
        println!("  unit {u}: {}", cells.join(" "));
    }
    match baton_planners::simulate::verify(dag, p, s) {
        Ok(_) => println!(
            "verified: no unit overlap, every input (with its transfer time) arrives before its consumer starts"
        ),
        Err(v) => panic!("the planner produced an illegal schedule: {v}"),
    }
}

fn schedule_json(dag: &Dag, p: &Platform, s: &Schedule) -> serde_json::Value {
    json!((0..dag.len())
        .map(|i| json!({"task": dag.tasks[i].name, "unit": s.unit[i], "start": s.start[i], "finish": s.finish(dag, p, i)}))
        .collect::<Vec<_>>())
}

fn units_of(dag: &Dag, unit: &[usize]) -> BTreeMap<String, Vec<usize>> {
    (0..dag.len()).map(|i| (dag.tasks[i].name.clone(), vec![unit[i]])).collect()
}

/// Period of a stream of runs overlapped on this assignment: the busiest unit's load.
fn pipelined_period(dag: &Dag, p: &Platform, unit: &[usize]) -> f64 {
    ilp::loads(dag, p, unit).into_iter().fold(0.0, f64::max)
}
