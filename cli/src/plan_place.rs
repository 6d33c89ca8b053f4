//! `baton plan --method ilp --pipeline P --profile F --out PLACED.toml`: places
//! each node of the pipeline on a provider (CPU cores or the GPU) with a worker
//! count, by the exact MILP of [`baton_planners::placement`] on the profile's
//! measurements, and writes the placed pipeline ([`baton_planners::placed`]).
//!
//! `--objective period` (steady-state time per row) or `latency` (critical
//! path of batch times); `--cores N` (default: this machine's cores),
//! `--device-memory BYTES` (default: the GPU's total memory the profile
//! recorded, else no limit), `--providers cpu,cuda` (default: every provider
//! the profile has).

use std::collections::BTreeMap;
use std::path::Path;

use baton::PipelineConfig;
use baton_planners::pipeline::{self, Profile, Provider};
use baton_planners::placed::write_placement;
use baton_planners::placement::{self, Machine, Objective as Goal, Placement, Problem};

use crate::plan::{Method, Objective, PlanArgs};

/// Whether `baton plan` places from profiles: `--method ilp --pipeline P --out FILE.toml`.
pub fn wanted(args: &PlanArgs) -> bool {
    args.method == Method::Ilp
        && args.pipeline.is_some()
        && args.out.as_ref().is_some_and(|o| o.extension().is_some_and(|e| e == "toml"))
}

pub fn plan(args: &PlanArgs) -> Result<(), String> {
    let src = args.pipeline.as_deref().expect("wanted() checked --pipeline");
    let out = args.out.as_deref().expect("wanted() checked --out");
    let prof_path = args.profile.as_deref().ok_or("--pipeline needs --profile (from `baton profile`)")?;
    let goal = match args.objective {
        Objective::Period => Goal::Period,
        Objective::Latency => Goal::Latency,
        Objective::Makespan => {
            return Err("--out PLACED.toml places nodes from a profile: give --objective period or latency".into())
        }
    };
    let cfg = PipelineConfig::read(src).map_err(|e| e.to_string())?;
    let mut cores_per_worker = BTreeMap::new();
    for (name, node) in &cfg.nodes {
        if !node.worker_groups.is_empty() {
            return Err(format!(
                "{}: nodes.{name}.worker_groups: the placement gives a node identical workers; remove the groups to place it",
                src.display()
            ));
        }
        cores_per_worker.insert(name.clone(), node.intra_threads);
    }
    let profile = Profile::load(prof_path)?;
    let allowed = match &args.providers {
        Some(names) => names
            .iter()
            .map(|p| Provider::parse(p).map_err(|e| format!("--providers: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
        None => Provider::ALL.to_vec(),
    };
    let graph = pipeline::node_graph(src)?;
    let in_profile =
        |p: &Provider| graph.nodes.iter().any(|n| profile.measurements(n).iter().any(|m| m.provider == *p));
    let allowed: Vec<Provider> =
        if args.providers.is_some() { allowed } else { allowed.into_iter().filter(in_profile).collect() };
    let nodes = placement::nodes_from_profile(&graph, &profile, &allowed, &cores_per_worker)
        .map_err(|e| format!("{}: {e}", prof_path.display()))?;
    let index: BTreeMap<&str, usize> = graph.nodes.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let node =
        |n: &str| index.get(n).copied().ok_or_else(|| format!("{}: an edge names unknown node `{n}`", src.display()));
    let edges = graph.edges.iter().map(|(f, t, _)| Ok((node(f)?, node(t)?))).collect::<Result<Vec<_>, String>>()?;
    let cores = args.cores.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if cores == 0 {
        return Err("--cores must be at least 1".into());
    }
    let device_memory = args.device_memory.or(profile.device_memory_total_bytes);
    let problem = Problem { nodes, edges, machine: Machine { cores, device_memory }, objective: goal };
    let placed = placement::solve(&problem, args.time_limit)?;
    print(&placed, &problem);
    let note = header(args, src, prof_path, &allowed, &problem, &placed);
    write_placement(src, out, &placed, &note)?;
    // What was written must load as a pipeline file.
    PipelineConfig::read(out).map_err(|e| format!("the placed pipeline does not parse: {e}"))?;
    println!("wrote {} (the pipeline placed; check it with `baton check {}`)", out.display(), out.display());
    Ok(())
}

fn print(placed: &Placement, p: &Problem) {
    println!("placement ({} cores, device memory {}):", p.machine.cores, limit(p.machine.device_memory));
    for (n, node) in placed.nodes.iter().zip(&p.nodes) {
        println!("  {}", describe(n, node));
    }
    println!(
        "period: {:.1} µs per row ({:.0} rows/s); latency: {:.1} µs; cores used: {}; device memory: {} bytes",
        placed.period_us,
        1e6 / placed.period_us,
        placed.latency_us,
        placed.cores_used,
        placed.device_memory
    );
    println!("status: {}", if placed.optimal { "optimal" } else { "time limit (best found)" });
}

fn describe(n: &placement::Placed, node: &placement::PlaceNode) -> String {
    let c = node.choices.iter().find(|c| c.provider == n.provider).expect("placed on one of its choices");
    let where_ = match n.provider {
        Provider::Cpu => format!("cpu, {} worker{} on cores {:?}", n.workers, plural(n.workers), n.cores),
        Provider::Cuda => {
            format!("cuda0, {} worker{}, {} bytes of device memory", n.workers, plural(n.workers), c.device_memory)
        }
    };
    format!(
        "{:<16} {where_}: {:.1} µs per row at batch {}, load {:.1} µs per row, batch-1 time {:.1} µs",
        n.name, c.row_us, c.best_batch, n.load_us, n.latency_us
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn limit(m: Option<u64>) -> String {
    m.map_or("no limit".into(), |m| format!("{m} bytes"))
}

/// The placed file's header comment: how it was made and what it predicts.
fn header(args: &PlanArgs, src: &Path, prof: &Path, allowed: &[Provider], p: &Problem, placed: &Placement) -> String {
    let providers: Vec<&str> = allowed.iter().map(|p| p.name()).collect();
    let mut note = format!(
        "Written by `baton plan --method ilp --objective {}` (the placement planner, docs/planners.md)\n\
         from the profile {} of {}, providers {}, {} cores, device memory {}.\n\
         Predicted: period {:.1} µs per row ({:.0} rows/s), latency {:.1} µs; {}.\n",
        format!("{:?}", args.objective).to_lowercase(),
        prof.display(),
        src.display(),
        providers.join(", "),
        p.machine.cores,
        limit(p.machine.device_memory),
        placed.period_us,
        1e6 / placed.period_us,
        placed.latency_us,
        if placed.optimal { "optimal" } else { "stopped at the time limit" },
    );
    for (n, node) in placed.nodes.iter().zip(&p.nodes) {
        note.push_str(&describe(n, node));
        note.push('\n');
    }
    note
}
