//! `provider_diff`: where does ONNX Runtime's CUDA provider differ from its CPU provider on a
//! model, and which CUDA option or graph optimization changes that (docs/gpu.md, "Finding where
//! CUDA and the CPU differ").
//!
//! ```text
//! provider_diff --model M.onnx [--all-outputs M_all.onnx] --batch N --variants LIST --out DIR
//!               [--trace-sizes 1,2,4,8] [--input auto|image|random|test-random] [--size HxW]
//!               [--threshold 1e-4] [--cpu-reference-only | --require-gpu]
//! ```
//!
//! It loads ONNX Runtime's GPU build (as a CUDA node does: `ORT_DYLIB_PATH` / the cache, the
//! CUDA libraries of `BATON_CUDA_LIBS`), builds a deterministic input ([`inputs`]), runs the
//! model on the CPU provider as the reference and, for each variant ([`variants`]), on the CUDA
//! provider, and reports for each variant: each output's largest difference at the output's
//! scale, the run-to-run difference on CUDA, which provider ran which (fused) ops, and over the
//! all-outputs model (`scripts/make_all_outputs.py`) the first node whose result differs by more
//! than the threshold, with its inputs' differences, and the top 10 nodes by difference and by
//! growth ([`compare`]). `--trace-sizes` profiles the default CUDA session at each batch size
//! ([`trace`]). Everything goes to stdout and `DIR/provider-diff.txt` / `.json` ([`report`]).
//!
//! Without a GPU or the GPU build (or with `--cpu-reference-only`) the candidate runs on the
//! CPU provider too, so the tool can be tested anywhere; the report says so at the top.
//! `--require-gpu` makes that an error instead.

mod compare;
mod inputs;
mod npy;
mod report;
mod session;
mod trace;
mod variants;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use ort::environment::Environment;
use serde_json::json;

use crate::compare::{Graph, Named, TensorDiff};
use crate::report::Report;
use crate::session::{Provider, Settings};
use crate::variants::{Level, Variant};

/// Command-line arguments.
#[derive(Parser, Debug)]
#[command(about = "Compare ONNX Runtime's CUDA provider with its CPU provider on a model, node by node")]
struct Args {
    /// The model.
    #[arg(long)]
    model: PathBuf,
    /// Its all-outputs copy (scripts/make_all_outputs.py), with `<stem>.nodes.json` beside it.
    #[arg(long)]
    all_outputs: Option<PathBuf>,
    /// Rows in the batch.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Comma-separated variants, each tokens joined by `+` (see variants.rs; `default`, `tf32_off`, ...).
    #[arg(long, default_value = "default")]
    variants: String,
    /// Output folder (created).
    #[arg(long)]
    out: PathBuf,
    /// Batch sizes to profile the default CUDA session at (comma-separated).
    #[arg(long)]
    trace_sizes: Option<String>,
    /// How inputs are filled: auto, image, random, test-random.
    #[arg(long, default_value = "auto")]
    input: String,
    /// Height×width of a 4-D input's dynamic H and W (e.g. 96x160).
    #[arg(long)]
    size: Option<String>,
    /// Folder of the images for `--input image` (default: data/images of the repository).
    #[arg(long)]
    images: Option<PathBuf>,
    /// A node "differs" above this fraction of its output's scale.
    #[arg(long, default_value_t = 1e-4)]
    threshold: f64,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// CPU intra-op threads of every CPU session (0: ONNX Runtime's default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// At most this many MiB of .npy tensors (inputs, outputs, the tensors around each first
    /// divergent node) are written into the output folder.
    #[arg(long, default_value_t = 48)]
    save_mib: usize,
    /// Run the candidate on the CPU provider too (no GPU needed).
    #[arg(long, conflicts_with = "require_gpu")]
    cpu_reference_only: bool,
    /// Fail instead of falling back to CPU-vs-CPU when the GPU or the GPU build is missing.
    #[arg(long)]
    require_gpu: bool,
}

/// What every comparison shares.
struct Context<'a> {
    args: &'a Args,
    env: &'static Environment,
    /// Whether candidates run on CUDA (else CPU-reference-only mode).
    gpu: bool,
    inputs: Vec<Named>,
    /// The all-outputs model and its graph.
    all: Option<(PathBuf, Graph)>,
}

/// Where tensors are saved (`.npy`, within `--save-mib`).
type Saver = npy::Saver;

/// The CPU reference's outputs at one graph optimization level.
struct Reference {
    main: Vec<Named>,
    all: Option<Vec<Named>>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("provider_diff: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The whole run; `Err` for a setup error (nothing compared), exit 1 when a variant or a
/// trace failed (the report says which), 0 when everything ran.
fn run(args: &Args) -> Result<ExitCode, String> {
    let variants = variants::parse_list(&args.variants)?;
    let trace_sizes = parse_sizes(args.trace_sizes.as_deref())?;
    let size = args.size.as_deref().map(inputs::parse_size).transpose()?;
    let kind: inputs::Kind = args.input.parse()?;
    if args.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    if !args.model.is_file() {
        return Err(format!("--model {}: no such file", args.model.display()));
    }
    let all = match &args.all_outputs {
        None => None,
        Some(path) => {
            let sidecar = path.with_extension("nodes.json");
            let text = std::fs::read_to_string(&sidecar).map_err(|e| {
                format!("{}: {e} (scripts/make_all_outputs.py writes it beside the model)", sidecar.display())
            })?;
            Some((path.clone(), Graph::from_json(&text).map_err(|e| format!("{}: {e}", sidecar.display()))?))
        }
    };
    let mut report = Report::new(&args.out)?;
    let (env, gpu, why_cpu) = environment(args)?;
    report.say(format!("provider_diff: {}", args.model.display()));
    let mode = if gpu {
        format!("CUDA device {} vs the CPU provider", args.device)
    } else {
        format!("CPU-REFERENCE-ONLY: the candidate runs on the CPU provider ({})", why_cpu.as_deref().unwrap_or(""))
    };
    report.say(format!("mode: {mode}"));
    let library = std::env::var("ORT_DYLIB_PATH").unwrap_or_default();
    let cuda_libs = std::env::var("BATON_CUDA_LIBS").unwrap_or_default();
    report.say(format!("ORT_DYLIB_PATH={library}\nBATON_CUDA_LIBS={cuda_libs}"));
    report.say(format!("ONNX Runtime library: {}", loaded_library(gpu).unwrap_or_else(|| "?".into())));
    report.say(format!("threshold: {:e} of each tensor's scale (largest |reference|)", args.threshold));
    report.set(
        "setup",
        json!({
            "model": args.model.display().to_string(),
            "all_outputs": args.all_outputs.as_ref().map(|p| p.display().to_string()),
            "gpu": gpu,
            "mode": mode,
            "cpu_reason": why_cpu,
            "ort_dylib_path": library,
            "baton_cuda_libs": cuda_libs,
            "device": args.device,
            "batch": args.batch,
            "threshold": args.threshold,
            "variants": variants.iter().map(|v| v.name.clone()).collect::<Vec<_>>(),
            "onnxruntime_library": loaded_library(gpu),
        }),
    );

    let images = args.images.clone().unwrap_or_else(default_images);
    let probe = session::open(
        env,
        &args.model,
        &Settings { provider: Provider::Cpu, level: Level::Disable, threads: 1, profile: None },
    )?;
    let specs = session::input_specs(&probe);
    drop(probe);
    let built = inputs::build(&specs, kind, args.batch, size, &images)?;
    for d in built.description.as_array().into_iter().flatten() {
        report.say(format!("input: {d}"));
    }
    report.set("inputs", built.description.clone());
    report.save();
    let mut saver = Saver::new(&args.out, args.save_mib << 20);
    for t in &built.tensors {
        saver.save(&format!("input-{}.npy", t.name), &t.shape, &t.data)?;
    }

    let ctx = Context { args, env, gpu, inputs: built.tensors, all };
    let mut references: HashMap<Level, Reference> = HashMap::new();
    let mut failures = 0;
    let mut rows = Vec::new();
    for variant in &variants {
        match compare_variant(&ctx, &mut references, variant, &mut report, &mut saver) {
            Ok(row) => rows.push(row),
            Err(e) => {
                failures += 1;
                report.say(format!("variant {}: ERROR: {e}", variant.name));
                report.push("variants", json!({"name": variant.name, "error": e}));
                rows.push(format!("{:<40} ERROR (see above)", variant.name));
            }
        }
        report.save();
    }
    report.say(
        "\n== summary: variant | each output's rel diff | all-outputs model's outputs | first node over the threshold",
    );
    for row in rows {
        report.say(row);
    }
    report.save();

    for &n in &trace_sizes {
        if let Err(e) = trace_size(&ctx, n, kind, size, &images, &mut report) {
            failures += 1;
            report.say(format!("trace at batch {n}: ERROR: {e}"));
            report.push("traces", json!({"batch": n, "error": e}));
        }
        report.save();
    }
    report.set("npy_written", json!(saver.written));
    report.set("npy_skipped", json!(saver.skipped));
    report.say(format!(
        "saved {} .npy tensors ({} left out: over 16 MiB each or --save-mib {} in all)",
        saver.written.len(),
        saver.skipped.len(),
        args.save_mib
    ));
    report.say(format!("wrote {}/provider-diff.txt and provider-diff.json", args.out.display()));
    report.save();
    Ok(if failures == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The ONNX Runtime environment, whether candidates run on CUDA, and if not why.
fn environment(args: &Args) -> Result<(&'static Environment, bool, Option<String>), String> {
    use baton_engines::ort_library;
    if args.cpu_reference_only {
        return Ok((ort_library::environment()?, false, Some("--cpu-reference-only".into())));
    }
    match ort_library::gpu_environment(args.device) {
        Ok(env) => Ok((env, true, None)),
        Err(why) if args.require_gpu => Err(format!("--require-gpu: {why}")),
        Err(why) => {
            eprintln!("provider_diff: WARNING: no GPU run ({why}); comparing the CPU provider with itself");
            Ok((ort_library::environment()?, false, Some(why)))
        }
    }
}

/// The ONNX Runtime library the process loaded (as `ort_library` finds it), if known.
fn loaded_library(gpu: bool) -> Option<String> {
    use baton_engines::{cuda, ort_library};
    let path = if gpu {
        cuda::locate_gpu_build(std::env::var_os("ORT_DYLIB_PATH"), &ort_library::search_roots())
    } else {
        ort_library::find_library()
    };
    path.ok().map(|p| p.display().to_string())
}

/// `data/images` of the first ancestor of the current folder that has one.
fn default_images() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    cwd.ancestors()
        .map(|a| a.join("data/images"))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/images"))
}

/// `"1,2,4"` → [1, 2, 4]; none → [].
fn parse_sizes(list: Option<&str>) -> Result<Vec<usize>, String> {
    let Some(list) = list else { return Ok(Vec::new()) };
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("--trace-sizes: `{s}` is not a batch size"))
        })
        .collect()
}

/// The CPU reference at `level`, computed once per level.
fn reference<'r>(
    ctx: &Context<'_>,
    cache: &'r mut HashMap<Level, Reference>,
    level: Level,
    report: &mut Report,
    saver: &mut Saver,
) -> Result<&'r Reference, String> {
    if let std::collections::hash_map::Entry::Vacant(slot) = cache.entry(level) {
        let settings = Settings { provider: Provider::Cpu, level, threads: ctx.args.threads, profile: None };
        let t = Instant::now();
        let mut s = session::open(ctx.env, &ctx.args.model, &settings)?;
        let main = session::run(&mut s, &ctx.inputs)?;
        drop(s);
        let all = match &ctx.all {
            None => None,
            Some((path, _)) => {
                let mut s = session::open(ctx.env, path, &settings)?;
                Some(session::run(&mut s, &ctx.inputs)?)
            }
        };
        report.say(format!("reference: CPU provider, graph optimization {level}: {:.1} s", t.elapsed().as_secs_f64()));
        for o in &main {
            saver.save(&format!("ref-{level}-{}.npy", o.name), &o.shape, &o.data)?;
        }
        slot.insert(Reference { main, all });
    }
    Ok(&cache[&level])
}

/// Compares `want` with `got` tensor by tensor (by name); a tensor missing on the candidate is an error.
fn diffs(want: &[Named], got: &[Named], threshold: f64) -> Result<Vec<(String, TensorDiff)>, String> {
    want.iter()
        .map(|w| {
            let g = got
                .iter()
                .find(|g| g.name == w.name)
                .ok_or_else(|| format!("the candidate has no output `{}`", w.name))?;
            Ok((w.name.clone(), compare::diff(w, g, threshold)?))
        })
        .collect()
}

/// One variant: opens and runs the candidate, compares; returns the summary row.
fn compare_variant(
    ctx: &Context<'_>,
    cache: &mut HashMap<Level, Reference>,
    v: &Variant,
    report: &mut Report,
    saver: &mut Saver,
) -> Result<String, String> {
    let args = ctx.args;
    let on_cuda = ctx.gpu && !v.candidate_on_cpu;
    let provider =
        if on_cuda { Provider::Cuda { device: args.device, options: v.cuda_options.clone() } } else { Provider::Cpu };
    report.say(format!(
        "\n== variant {}: candidate {} ({}), graph optimization {}; reference CPU, graph optimization {}",
        v.name,
        if on_cuda { "CUDA" } else { "CPU" },
        if on_cuda { v.options_text() } else { "CUDA options unused".into() },
        v.candidate_level,
        v.reference_level
    ));
    let reference = reference(ctx, cache, v.reference_level, report, saver)?;
    let stem = v.file_stem();
    let settings = Settings {
        provider: provider.clone(),
        level: v.candidate_level,
        threads: args.threads,
        profile: Some(args.out.join(format!("profile-{stem}"))),
    };
    let t = Instant::now();
    let mut s = session::open(ctx.env, &args.model, &settings)?;
    let open_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let first = session::run(&mut s, &ctx.inputs)?;
    let run1_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let second = session::run(&mut s, &ctx.inputs)?;
    let run2_ms = t.elapsed().as_secs_f64() * 1e3;
    let trace_file = args.out.join(format!("trace-diff-{stem}.json"));
    let placement = session::finish_profile(&mut s, &trace_file).and_then(|text| trace::summarize(&text));
    drop(s);
    report.say(format!("   session open {open_s:.2} s; run 1 {run1_ms:.1} ms, run 2 {run2_ms:.1} ms"));
    match &placement {
        Ok(p) => report.say(format!("   placement (nodes after optimization): {}", p.placement_text())),
        Err(e) => report.say(format!("   placement: unknown ({e})")),
    }

    for o in &first {
        saver.save(&format!("out-{stem}-{}.npy", o.name), &o.shape, &o.data)?;
    }
    let finals = diffs(&reference.main, &first, args.threshold)?;
    let repeat = diffs(&first, &second, args.threshold)?;
    let mut row = format!("{:<40}", v.name);
    for ((name, d), (_, r)) in finals.iter().zip(&repeat) {
        report.say(format!("   output `{name}`: {}", d.text()));
        if d.per_row.len() > 1 {
            let rows: Vec<String> = d.per_row.iter().map(|x| format!("{x:.2e}")).collect();
            report.say(format!("      per batch row: {}", rows.join(" ")));
        }
        report.say(format!("      candidate run 1 vs run 2: rel {:.2e}", r.rel));
        row.push_str(&format!(" {name}={:.2e}", d.rel));
    }
    let mut entry = json!({
        "name": v.name,
        "candidate": if on_cuda { "cuda" } else { "cpu" },
        "cuda_options": v.cuda_options.iter().map(|(k, val)| json!([k, val])).collect::<Vec<_>>(),
        "candidate_level": v.candidate_level.to_string(),
        "reference_level": v.reference_level.to_string(),
        "open_s": open_s,
        "run1_ms": run1_ms,
        "run2_ms": run2_ms,
        "trace": trace_file.file_name().map(|f| f.to_string_lossy().to_string()),
        "placement": placement.as_ref().map(|p| p.to_json(10)).unwrap_or_else(|e| json!({"error": e})),
        "outputs": finals.iter().map(|(n, d)| json!({"name": n, "diff": d.to_json()})).collect::<Vec<_>>(),
        "repeat": repeat.iter().map(|(n, d)| json!({"name": n, "rel": compare::number(d.rel)})).collect::<Vec<_>>(),
    });

    if let (Some((path, graph)), Some(all_ref)) = (&ctx.all, &reference.all) {
        let settings = Settings { profile: None, ..settings };
        let t = Instant::now();
        let mut s = session::open(ctx.env, path, &settings)?;
        let got = session::run(&mut s, &ctx.inputs)?;
        drop(s);
        let all_diffs = diffs(all_ref, &got, args.threshold)?;
        report.say(format!(
            "   all-outputs model ({} tensors compared, {:.1} s): its extra outputs block fusions across them",
            all_diffs.len(),
            t.elapsed().as_secs_f64()
        ));
        row.push_str(" | all-outputs:");
        for (name, _) in &finals {
            if let Some((_, d)) = all_diffs.iter().find(|(n, _)| n == name) {
                report.say(format!("      final output `{name}` in it: {}", d.text()));
                row.push_str(&format!(" {name}={:.2e}", d.rel));
            }
        }
        let by_name: HashMap<String, TensorDiff> = all_diffs.into_iter().collect();
        let nodes = compare::node_diffs(graph, &by_name);
        let first_node = compare::first_divergent(&nodes, args.threshold);
        match first_node {
            Some(n) => {
                report.say(format!("   FIRST node over {:e}: {}", args.threshold, n.line()));
                report.say(format!("      its output `{}`: {}", n.output, n.output_diff.text()));
                report.say(format!("      attributes: {}", n.attributes));
                row.push_str(&format!(" | first: #{} {} {} {:.2e}", n.index, n.op_type, n.name, n.rel));
                // The tensors around it, both sides: its output and its compared inputs.
                let level = v.reference_level;
                let names = std::iter::once(&n.output).chain(
                    n.inputs.iter().filter(|(_, s)| matches!(s, compare::InputState::Diff(_))).map(|(name, _)| name),
                );
                for name in names {
                    if let Some(t) = all_ref.iter().find(|t| &t.name == name) {
                        saver.save(&format!("ref-{level}-{name}.npy"), &t.shape, &t.data)?;
                    }
                    if let Some(t) = got.iter().find(|t| &t.name == name) {
                        saver.save(&format!("out-{stem}-{name}.npy"), &t.shape, &t.data)?;
                    }
                }
            }
            None => {
                report.say(format!("   no node over {:e}", args.threshold));
                row.push_str(" | first: none");
            }
        }
        let top = compare::top_by(&nodes, 10, |n| n.rel);
        report.say("   top 10 nodes by difference:");
        for n in &top {
            report.say(format!("      {}", n.line()));
        }
        let growth: Vec<_> = compare::top_by(&nodes, 10, |n| if n.rel > args.threshold { n.growth } else { 0.0 })
            .into_iter()
            .filter(|n| n.rel > args.threshold)
            .collect();
        report.say("   top 10 nodes by growth (output diff ÷ largest input diff, among nodes over the threshold):");
        for n in &growth {
            report.say(format!("      {}", n.line()));
        }
        if growth.is_empty() {
            report.say("      (none)");
        }
        entry["all_outputs"] = json!({
            "compared": by_name.len(),
            "first_divergent": first_node.map(|n| n.to_json()),
            "top_by_diff": top.iter().map(|n| n.to_json()).collect::<Vec<_>>(),
            "top_by_growth": growth.iter().map(|n| n.to_json()).collect::<Vec<_>>(),
            "nodes": nodes.iter().map(|n| json!({"index": n.index, "name": n.name, "op_type": n.op_type, "rel": compare::number(n.rel)})).collect::<Vec<_>>(),
        });
    }
    report.push("variants", entry);
    Ok(row)
}

/// Profiles the default session (CUDA, or the CPU in CPU-only mode) at batch `n`: 3 warm-up
/// runs, then one more; the trace (all four runs) goes to `trace-<model-stem>-b<n>.json`, the
/// summary reads the last run.
fn trace_size(
    ctx: &Context<'_>,
    n: usize,
    kind: inputs::Kind,
    size: Option<(usize, usize)>,
    images: &Path,
    report: &mut Report,
) -> Result<(), String> {
    let args = ctx.args;
    let provider = if ctx.gpu { Provider::Cuda { device: args.device, options: Vec::new() } } else { Provider::Cpu };
    let stem = args.model.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "model".into());
    let settings = Settings {
        provider,
        level: Level::All,
        threads: args.threads,
        profile: Some(args.out.join(format!("profile-{stem}-b{n}"))),
    };
    let mut s = session::open(ctx.env, &args.model, &settings)?;
    let specs = session::input_specs(&s);
    let inputs = inputs::build(&specs, kind, n, size, images)?.tensors;
    let mut warm_ms = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        session::run(&mut s, &inputs)?;
        warm_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let t = Instant::now();
    session::run(&mut s, &inputs)?;
    let run_ms = t.elapsed().as_secs_f64() * 1e3;
    let file = args.out.join(format!("trace-{stem}-b{n}.json"));
    let summary = trace::summarize(&session::finish_profile(&mut s, &file)?)?;
    let warm: Vec<String> = warm_ms.iter().map(|m| format!("{m:.1}")).collect();
    report.say(format!(
        "\n== trace batch {n} ({}): warm-up runs {} ms; profiled run {run_ms:.2} ms (model_run {} µs) -> {}",
        if ctx.gpu { "CUDA, ORT defaults" } else { "CPU" },
        warm.join(", "),
        summary.runs_us.last().copied().unwrap_or(0),
        file.display()
    ));
    let total: u64 = summary.last_run_ops.iter().map(|o| o.2).sum();
    for (op, provider, us, kernels) in summary.last_run_ops.iter().take(5) {
        report.say(format!(
            "   {op:<24} {provider:<24} {us:>8} µs ({:.1}%) in {kernels} kernels",
            *us as f64 * 100.0 / total.max(1) as f64
        ));
    }
    let mut entry = summary.to_json(5);
    entry["batch"] = json!(n);
    entry["warmup_ms"] = json!(warm_ms);
    entry["run_ms"] = json!(run_ms);
    entry["trace"] = json!(file.file_name().map(|f| f.to_string_lossy().to_string()));
    report.push("traces", entry);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_sizes_parse() {
        assert_eq!(parse_sizes(Some("1, 2,8")).unwrap(), vec![1, 2, 8]);
        assert_eq!(parse_sizes(None).unwrap(), Vec::<usize>::new());
        assert!(parse_sizes(Some("1,0")).unwrap_err().contains("`0`"));
    }
}
