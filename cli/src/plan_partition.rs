//! `baton plan --method partition`: split a pipeline, an ONNX model's operator
//! graph or a METIS-format graph into k balanced parts, keeping critical
//! relations inside parts (the critical-gain refinement, see `baton-partition`), and
//! with `--compare-metis` run METIS on the same graph in the same call.

use baton_partition::critical::{self, CriticalRule, CriticalValue};
use baton_partition::graph::Graph;
use baton_partition::multilevel::{self, Params, Quality, Scheme};
use baton_partition::refine::Variant;
use baton_partition::report::{self, Row};
use baton_partition::{metis_format, metis_ref, metrics, onnx_graph, pipeline};
use serde_json::json;

use std::path::Path;

use crate::plan::PlanArgs;
use crate::plan_hosts::Host;

/// Graphs up to this size get their parts listed by vertex name.
const LIST_PARTS_UP_TO: usize = 64;

fn load(args: &PlanArgs) -> Result<(String, Graph), String> {
    let given = [args.pipeline.is_some(), args.model.is_some(), args.graph.is_some()];
    if given.iter().filter(|&&g| g).count() != 1 {
        return Err("give exactly one of --pipeline, --model, --graph".into());
    }
    if let Some(p) = &args.pipeline {
        return Ok((p.display().to_string(), pipeline::read_file(p, args.profile.as_deref())?));
    }
    if let Some(m) = &args.model {
        return Ok((m.display().to_string(), onnx_graph::read_file(m)?));
    }
    let f = args.graph.as_ref().expect("checked above");
    Ok((f.display().to_string(), metis_format::read_file(f).map_err(|e| e.to_string())?))
}

pub fn plan(args: &PlanArgs) -> Result<(), String> {
    check_numbers(args)?;
    let hosts = check_hosts(args)?;
    // METIS graphs are the only input whose relations carry no flow direction.
    let has_flow = args.graph.is_none();
    let rule: CriticalRule = match &args.critical {
        Some(text) => text.parse()?,
        None => critical::default_rule(has_flow),
    };
    let value: CriticalValue = args.critical_value.parse()?;
    let scheme: Scheme = args.scheme.parse()?;
    let variant: Variant = args.variant.parse()?;
    let (source, mut g) = load(args)?;
    if g.n() < args.parts {
        return Err(format!("{source}: {} vertices cannot fill {} parts", g.n(), args.parts));
    }
    if let Some(why) = critical::misfit(rule, has_flow) {
        eprintln!("warning: {source}: {why}");
    }
    critical::mark(&mut g, rule, value);
    let k = args.parts;
    let objective = critical::objective(rule, value);
    println!(
        "{source}: {} vertices, {} relations, {} critical ({rule}, {value:?}); k = {k}, epsilon = {}",
        g.n(),
        g.m(),
        g.critical_edges(),
        args.epsilon
    );
    println!("objective: {objective}");
    println!(
        "balance limit: each part <= {} of {} total (the same for every partitioner, METIS's ufactor included)",
        metrics::max_part_weight(&g, k, args.epsilon),
        g.total_weight()
    );
    let p = params(args, scheme, variant, rule)?;
    let rows = run_partitioners(args, &g, &p, hosts.is_some())?;
    print_rows(&g, &rows, k);
    if let (Some(hosts), Some(pipeline), Some(out)) = (&hosts, &args.pipeline, &args.out) {
        return write_placement(args, &g, &rows, hosts, pipeline, out);
    }
    if let Some(out) = &args.out {
        let doc = json!({
            "source": source,
            "k": k,
            "epsilon": args.epsilon,
            "critical": rule.to_string(),
            "objective": objective,
            "critical_value": format!("{value:?}"),
            "vertices": g.n(),
            "relations": g.m(),
            "critical_relations": g.critical_edges(),
            "runs": runs_json(&g, &rows),
        });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// Checks `-k`, `--epsilon` and `--gain-threshold` are in range.
fn check_numbers(args: &PlanArgs) -> Result<(), String> {
    if args.parts < 1 {
        return Err("-k must be at least 1".into());
    }
    if !(0.0..=10.0).contains(&args.epsilon) {
        return Err(format!("--epsilon must be in [0, 10], got {}", args.epsilon));
    }
    if args.gain_threshold < 0 {
        return Err("--gain-threshold must be >= 0".into());
    }
    Ok(())
}

/// Parses `--hosts`, if given, and checks the options that placing a pipeline
/// on them needs: `--pipeline`, `--out`, one host per part and a known
/// `--placement`.
fn check_hosts(args: &PlanArgs) -> Result<Option<Vec<Host>>, String> {
    let Some(text) = &args.hosts else {
        return Ok(None);
    };
    let hosts = crate::plan_hosts::parse_hosts(text)?;
    if args.pipeline.is_none() || args.out.is_none() {
        return Err("--hosts places a pipeline: give --pipeline and --out DIR".into());
    }
    if hosts.len() != args.parts {
        return Err(format!("--hosts names {} hosts but -k is {}: one part per host", hosts.len(), args.parts));
    }
    if !["critical", "metis"].contains(&args.placement.as_str()) {
        return Err(format!("--placement `{}`: use critical or metis", args.placement));
    }
    Ok(Some(hosts))
}

/// The multilevel partitioner's parameters from the command line.
fn params(args: &PlanArgs, scheme: Scheme, variant: Variant, rule: CriticalRule) -> Result<Params, String> {
    let mut p = Params::for_scheme(args.parts, scheme);
    p.epsilon = args.epsilon;
    let default_restarts = if rule == CriticalRule::None { multilevel::PLAIN_CUT_RESTARTS } else { 1 };
    p.quality = args.quality.parse()?;
    // With `--quality strong`, `--restarts` counts the strong mode's
    // repetitions; the default driver it also runs (as a candidate) keeps its
    // own count, so a large count cannot run it past the time limit.
    let own_restarts = if p.quality == Quality::Strong { None } else { args.restarts };
    p.restarts = own_restarts.unwrap_or(default_restarts).max(1);
    p.strong.repetitions = args.restarts.map(|r| r.max(1));
    p.strong.budget = baton_planners::deadline::duration(args.time_limit)?;
    p.vcycles = args.vcycles.max(1);
    p.coarse_restarts = args.coarse_restarts.max(1);
    p.seed = args.seed;
    p.refine.variant = variant;
    p.refine.threshold = args.gain_threshold;
    if let Some(h) = args.hill_climb {
        p.refine.hill_climb = h;
    }
    Ok(p)
}

/// Runs the multilevel partitioner and, with `--compare-metis` or a METIS
/// placement on hosts, METIS: one row each.
fn run_partitioners(args: &PlanArgs, g: &Graph, p: &Params, placing: bool) -> Result<Vec<Row>, String> {
    let k = args.parts;
    let o = multilevel::partition(g, p);
    let label = if p.quality == Quality::Strong { "strong" } else { args.scheme.as_str() };
    let mut rows = vec![Row::from_outcome(label, g, k, &o)];
    if args.compare_metis || (placing && args.placement == "metis") {
        let m = metis_ref::partition(g, k, args.epsilon, true, args.seed)?;
        rows.push(Row::from_outcome("metis", g, k, &m));
    }
    Ok(rows)
}

/// Prints each row and, for a small graph, its parts by vertex name.
fn print_rows(g: &Graph, rows: &[Row], k: usize) {
    for r in rows {
        println!("{}", r.line());
        if g.n() <= LIST_PARTS_UP_TO {
            for (i, names) in report::parts_listing(g, &r.part, k).iter().enumerate() {
                println!("    part {i}: {}", names.join(", "));
            }
        }
    }
}

/// Places the pipeline's parts on the hosts by the `--placement` row and
/// writes one pipeline file per host under `out`.
fn write_placement(
    args: &PlanArgs,
    g: &Graph,
    rows: &[Row],
    hosts: &[Host],
    pipeline: &Path,
    out: &Path,
) -> Result<(), String> {
    let row = rows.iter().find(|r| (r.method == "metis") == (args.placement == "metis")).expect("run above");
    let host_of = crate::plan_hosts::host_of_parts(pipeline, g, &row.part)?;
    println!("placement ({}): {}", row.method, crate::plan_hosts::describe(&host_of, hosts));
    for file in crate::plan_hosts::write_split(pipeline, hosts, &host_of, out)? {
        println!("wrote {}", file.display());
    }
    Ok(())
}

/// Each row with its assignment (vertex name -> part), for the JSON report.
fn runs_json(g: &Graph, rows: &[Row]) -> Vec<serde_json::Value> {
    rows.iter()
        .map(|r| {
            let assignment: serde_json::Map<String, serde_json::Value> =
                (0..g.n()).map(|v| (g.name(v as u32), json!(r.part[v]))).collect();
            json!({"result": r, "assignment": assignment})
        })
        .collect()
}
