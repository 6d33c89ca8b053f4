//! `baton profile PIPELINE.toml --out profile.json [--providers cpu,cuda]`:
//! measures each node's latency per batch size on each provider asked for
//! (engines created as the runtime creates them, every size's warm-up runs
//! first, then the timed runs in turns of [`RUNS_PER_TURN`] runs a size, the
//! sizes in turn (on CUDA a size's runs in one turn): median with p10/p90, min, max, and every run's time in the
//! order they ran, for `baton simulate`), and its memory (resident
//! memory its engines added by the end of its runs, model file sizes; on CUDA
//! the device memory its sessions hold, and an estimate of it). The profile
//! gives `baton plan --pipeline` its node times and `baton plan --method ilp
//! --out PLACED.toml` its choices of provider (see [`crate::plan_place`]).
//!
//! A node is measured on CUDA only where it could run there: every stage an
//! ONNX model or a function, one model at least; the measurement rewrites
//! its execution to CUDA device `device` (its own, else 0) whatever its file
//! says. CUDA needs ONNX Runtime's GPU build and a GPU; it is readied before
//! any session is opened, so the process loads the GPU build (which runs the
//! CPU measurements too).
//!
//! Inputs are zero tensors shaped by the model signature; a dynamic dim other
//! than the batch dim is taken as 1 (or `--dim`). `--input NODE.INPUT=FILE,..`
//! feeds samples instead (`.npy`, `.json` or `.png` files, as `baton run`
//! reads them): run k takes the k-th sample in turn, and a batch of b rows
//! repeats that sample's rows in turn, so the measured distribution mixes the
//! samples evenly. Models whose work depends on the values (an OCR finds text
//! only in an image that holds some) are profiled on samples. A stage input produced by an
//! earlier stage of the node takes that stage's output, as in the runtime.
//!
//! With `--idle-gaps`, each node's smallest batch also runs after idle gaps
//! ([`crate::profile_gaps`]): what a gap adds to a batch, for `baton simulate`.
//!
//! It also prints the collaboration weights and costs [`crate::suggest`]
//! derives from these measurements (formula in docs/scheduling.md), as
//! `[nodes.NAME]` lines to paste into the pipeline file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use baton::engine::Dim;
use baton::execution::Execution;
use baton::{EngineRegistry, PipelineConfig, StageRequest, Tensor};
use baton_planners::pipeline::{BatchTiming, NodeProfile, Profile, Provider};
use clap::Args;

use crate::profile_jobs::{jobs, prepare, Job};
use crate::suggest::{brief_bound_us, children, suggest, Measured, BRIEF_GAP};
use baton_engines::cuda_runtime::CudaRuntime;

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// The pipeline file.
    pub pipeline: PathBuf,
    /// Where to write the profile (JSON).
    #[arg(long)]
    pub out: PathBuf,
    /// Batch sizes to measure (each at most the node's max_batch).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
    pub batches: Vec<usize>,
    /// Timed runs per node and batch size.
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Untimed warm-up runs before them.
    #[arg(long, default_value_t = 20)]
    pub warmup: usize,
    /// Size of dynamic dims other than the batch dim.
    #[arg(long, default_value_t = 1)]
    pub dim: usize,
    /// Providers to measure each node on: `cpu`, `cuda` or both (`cpu,cuda`).
    /// CUDA only for nodes whose stages are all ONNX models or functions; it
    /// needs ONNX Runtime's GPU build and a GPU. Default: each node on the
    /// provider its file names.
    #[arg(long, value_delimiter = ',')]
    pub providers: Option<Vec<String>>,
    /// Samples for a node's input instead of zeros: NODE.INPUT=FILE[,FILE..] (.npy, .json
    /// or .png); run k takes the k-th in turn, its rows repeated to the batch size.
    /// Repeat the option for other inputs.
    #[arg(long = "input", value_name = "NODE.INPUT=FILE[,FILE..]")]
    pub inputs: Vec<String>,
    /// Idle gaps to measure, µs: after its timed runs each node's smallest batch runs
    /// after sleeping each gap, against warm runs back to back (`idle_gaps` in the
    /// profile, for `baton simulate --idle-gaps`). Default: none.
    #[arg(long, value_delimiter = ',', value_name = "US,..")]
    pub idle_gaps: Vec<f64>,
    /// Rounds of `--idle-gaps`: in each, every gap once, after warm runs back to back.
    #[arg(long, default_value_t = 40)]
    pub idle_gap_rounds: usize,
}

/// One input's sample files.
type SampleFiles = (String, Vec<PathBuf>);

/// `--input`'s items: per node, its inputs' sample files; a node the pipeline lacks is named.
fn sample_files(items: &[String], cfg: &PipelineConfig) -> Result<BTreeMap<String, Vec<SampleFiles>>, String> {
    let mut out: BTreeMap<String, Vec<SampleFiles>> = BTreeMap::new();
    for item in items {
        let bad = || format!("--input `{item}`: not NODE.INPUT=FILE[,FILE..]");
        let (target, files) = item.split_once('=').ok_or_else(bad)?;
        let (node, input) = target.split_once('.').ok_or_else(bad)?;
        if !cfg.nodes.contains_key(node) {
            return Err(format!("--input `{item}`: the pipeline has no node `{node}`"));
        }
        let files: Vec<PathBuf> = files.split(',').filter(|f| !f.is_empty()).map(PathBuf::from).collect();
        if files.is_empty() {
            return Err(bad());
        }
        out.entry(node.to_string()).or_default().push((input.to_string(), files));
    }
    Ok(out)
}

/// Each sample read against the node's stage input of its name (else an error naming the inputs it has).
fn read_samples(node: &str, files: &[SampleFiles], stages: &[Stage]) -> Result<BTreeMap<String, Vec<Tensor>>, String> {
    let mut out: BTreeMap<String, Vec<Tensor>> = BTreeMap::new();
    for (input, file) in files.iter().flat_map(|(input, files)| files.iter().map(move |f| (input, f))) {
        let spec = stages.iter().flat_map(|s| &s.signature.inputs).find(|i| i.name == *input).ok_or_else(|| {
            let names: Vec<&str> = stages.iter().flat_map(|s| &s.signature.inputs).map(|i| i.name.as_str()).collect();
            format!(
                "--input {node}.{input}: node `{node}` has no input `{input}` (its stages take {})",
                names.join(", ")
            )
        })?;
        let tensor = crate::inputs::read_tensor(file, spec).map_err(|e| format!("--input {node}.{input}: {e}"))?;
        if tensor.shape().first().is_none_or(|&rows| rows == 0) {
            return Err(format!("--input {node}.{input}: {} holds no rows", file.display()));
        }
        out.entry(input.clone()).or_default().push(tensor);
    }
    Ok(out)
}

/// A batch of `b` rows: the sample's rows in turn.
fn sample_batch(sample: &Tensor, b: usize) -> Result<Tensor, String> {
    let n = sample.shape()[0];
    let rows: Vec<Tensor> = (0..b).map(|i| sample.rows(i % n..i % n + 1)).collect();
    let parts: Vec<&Tensor> = rows.iter().collect();
    baton::tensor::stitch(&parts).map_err(|e| e.to_string())
}

pub fn run(args: ProfileArgs, engines: &EngineRegistry) -> ExitCode {
    match profile(&args, engines) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// CPU time all threads of this process have run, ns (0 where unknown).
fn process_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `t` is.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Resident memory of this process, bytes (0 where unknown).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

struct Stage {
    engine: Box<dyn baton::Engine>,
    signature: baton::ModelSignature,
    /// A function stage (runs even on zero rows; a model stage then does not, as in the runtime).
    function: bool,
}

fn profile(args: &ProfileArgs, engines: &EngineRegistry) -> Result<(), String> {
    let cfg = PipelineConfig::read(&args.pipeline).map_err(|e| e.to_string())?;
    let jobs = jobs(&cfg, args.providers.as_deref())?;
    let samples = sample_files(&args.inputs, &cfg)?;
    crate::profile_gaps::check(&args.idle_gaps)?;
    // CUDA first: the GPU build must be the process's ONNX Runtime before any session opens.
    for job in jobs.iter().filter(|j| j.provider == Provider::Cuda) {
        prepare(job, engines)?;
    }
    // Full validation: the same checks `baton check` makes.
    let spec = baton::PipelineSpec::from_file(&args.pipeline, engines).map_err(|e| e.to_string())?;
    let base = args.pipeline.parent().map(Path::to_path_buf).unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut profile = Profile { pipeline: args.pipeline.display().to_string(), cores, ..Profile::default() };
    let gpu = jobs.iter().find_map(|j| match j.execution {
        Execution::Cuda { device, .. } => Some(device),
        Execution::Cpu => None,
    });
    // The first reading creates the device's context, which no node's measurement should count.
    let device_memory = gpu.and_then(|_| CudaRuntime::loaded());
    if let (Some(dm), Some(device)) = (&device_memory, gpu) {
        profile.device_memory_total_bytes = dm.memory_info(device).map(|(_, total)| total);
    }
    // Per node, first provider: busy cores while its largest batch ran (CPU time / wall time).
    let mut busy_cores: BTreeMap<String, f64> = BTreeMap::new();
    // Engines stay alive to the end, so one node's freed memory is not counted again for the next.
    let mut keep = Vec::new();
    for job in &jobs {
        let files = samples.get(job.name).map_or(&[][..], Vec::as_slice);
        let (measured, busy, stages) = measure(job, args, files, engines, &base, device_memory)?;
        busy_cores.entry(job.name.to_string()).or_insert(busy);
        keep.push(stages);
        profile.insert(job.name, measured);
    }
    print_suggestions(&spec, &profile.nodes, &busy_cores);
    let text = serde_json::to_string_pretty(&profile).map_err(|e| e.to_string())?;
    std::fs::write(&args.out, text + "\n").map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// On the CPU, the timed runs of a node come in turns of this many runs of each batch
/// size, the sizes in turn, until each size has its runs: a machine whose speed drifts
/// over tens of milliseconds (a shared VM's neighbours) then slows every size alike, not
/// the sizes that happened to run while it was slow. On CUDA each size runs all its runs
/// in one turn: ONNX Runtime's CUDA convolutions set themselves up again whenever the
/// input shape differs from the last run's (docs/gpu.md), which turns would pay every turn.
const RUNS_PER_TURN: usize = 10;

/// Measures one node on one provider: its profile, the cores it kept busy at its
/// largest batch, and its engines (kept alive by the caller).
fn measure(
    job: &Job,
    args: &ProfileArgs,
    sample_files: &[SampleFiles],
    engines: &EngineRegistry,
    base: &Path,
    device_memory: Option<&CudaRuntime>,
) -> Result<(NodeProfile, f64, Vec<Stage>), String> {
    let (name, node) = (job.name, job.node);
    let device = match job.execution {
        Execution::Cuda { device, .. } => Some(device),
        Execution::Cpu => None,
    };
    let free_before = device.and_then(|d| device_memory?.memory_info(d)).map(|(free, _)| free);
    let before = resident_bytes();
    let mut stages = Vec::new();
    let mut model_bytes = 0;
    for (s, stage) in node.stages.iter().enumerate() {
        let location = format!("nodes.{name}.stages[{s}]");
        let provider = match &stage.function {
            Some(f) => engines.function(f),
            None => engines.get(stage.engine.as_deref().unwrap_or("onnx")),
        }
        .ok_or_else(|| format!("{location}: no engine for this stage"))?;
        let model = stage.model.as_ref().map(|m| base.join(m));
        model_bytes += model.as_ref().and_then(|m| std::fs::metadata(m).ok()).map_or(0, |m| m.len());
        let request = StageRequest {
            location: location.clone(),
            model,
            params: stage.params.clone(),
            intra_threads: node.intra_threads,
            inter_threads: node.inter_threads,
            execution: job.execution.clone(),
            // Each batch size as it is: the profile measures the engine at every size.
            batch_sizes: baton::BatchSizes::none(),
            device_outputs: Vec::new(),
        };
        let signature = provider.inspect(&request).map_err(|e| format!("{location}: {e}"))?;
        let engine = provider.create(&request).map_err(|e| format!("{location}: {e}"))?;
        stages.push(Stage { engine, signature, function: stage.function.is_some() });
    }
    let sample_inputs = read_samples(name, sample_files, &stages)?;
    let on = job.provider;
    let sizes: Vec<usize> = args.batches.iter().copied().filter(|&b| b >= 1 && b <= node.max_batch).collect();
    let at = |b: usize| format!("nodes.{name} on {on} at batch {b}");
    let prepared = sizes
        .iter()
        .map(|&b| prepared_inputs(&stages, b, args.dim, &sample_inputs).map_err(|e| format!("{}: {e}", at(b))))
        .collect::<Result<Vec<_>, _>>()?;
    if args.runs == 0 && !sizes.is_empty() {
        return Err("--runs must be at least 1".into());
    }
    let mut tensor_bytes = 0;
    for (i, &b) in sizes.iter().enumerate() {
        for k in 0..args.warmup {
            tensor_bytes = run_node(&mut stages, &prepared[i], k).map_err(|e| format!("{}: {e}", at(b)))?;
        }
    }
    // The timed runs in turns (see [`RUNS_PER_TURN`]); each size's CPU and wall time
    // over its turns give the cores it kept busy.
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(args.runs); sizes.len()];
    let (mut cpu_ns, mut wall_ns) = (vec![0u64; sizes.len()], vec![0u64; sizes.len()]);
    let per_turn = if device.is_some() { args.runs } else { RUNS_PER_TURN };
    for (i, runs) in turns(sizes.len(), args.runs, per_turn) {
        let (cpu_start, turn_start) = (process_cpu_ns(), Instant::now());
        for _ in 0..runs {
            let k = args.warmup + times[i].len();
            let t0 = Instant::now();
            tensor_bytes = run_node(&mut stages, &prepared[i], k).map_err(|e| format!("{}: {e}", at(sizes[i])))?;
            times[i].push(t0.elapsed().as_secs_f64() * 1e6);
        }
        cpu_ns[i] += process_cpu_ns().saturating_sub(cpu_start);
        wall_ns[i] += turn_start.elapsed().as_nanos() as u64;
    }
    let busy = match sizes.len() {
        0 => 1.0,
        n => cpu_ns[n - 1] as f64 / wall_ns[n - 1].max(1) as f64,
    };
    let idle_gaps = match sizes.first() {
        Some(&b) => crate::profile_gaps::measure(&args.idle_gaps, args.idle_gap_rounds, || {
            run_node(&mut stages, &prepared[0], args.warmup).map(drop).map_err(|e| format!("{}: {e}", at(b)))
        })?,
        None => Vec::new(),
    };
    for g in &idle_gaps {
        println!(
            "{name:<16} {on:<4} batch {:>3} after {:>7.0} µs idle: median {:>9.1} µs, {:+.1} over warm runs",
            sizes[0], g.gap_us, g.median_us, g.extra_us
        );
    }
    let mut batches = Vec::new();
    for (&b, samples) in sizes.iter().zip(times) {
        let t = batch_timing(b, samples);
        println!(
            "{name:<16} {on:<4} batch {b:>3}: median {:>9.1} µs  p10 {:>9.1}  p90 {:>9.1}  ({:.0} samples/s)",
            t.median_us,
            t.p10_us,
            t.p90_us,
            b as f64 * 1e6 / t.median_us
        );
        batches.push(t);
    }
    // Engines allocate their buffers on first runs: measured after all batch sizes ran.
    let memory_bytes = resident_bytes().saturating_sub(before);
    let mut measured =
        NodeProfile { provider: on, batches, memory_bytes, model_bytes, idle_gaps, ..NodeProfile::default() };
    if let Some(d) = device {
        let free_after = device_memory.and_then(|dm| dm.memory_info(d)).map(|(free, _)| free);
        measured.device_memory_bytes = free_before.zip(free_after).map(|(b, a)| b.saturating_sub(a));
        measured.device_memory_estimate_bytes = Some(4 * model_bytes + tensor_bytes as u64);
    }
    let device_note = match (measured.device_memory_bytes, measured.device_memory_estimate_bytes) {
        (Some(m), _) => format!(", device {} KiB", m / 1024),
        (None, Some(e)) => format!(", device {} KiB (estimate: 4 x models + tensors at the largest batch)", e / 1024),
        (None, None) => String::new(),
    };
    println!(
        "{name:<16} {on:<4} memory: {} KiB resident, models {} KiB{device_note}",
        memory_bytes / 1024,
        model_bytes / 1024
    );
    Ok((measured, busy, stages))
}

/// The timed runs' order: `(size index, runs)` turns of at most `per_turn` runs, the
/// sizes in turn, until each of `sizes` sizes has had `runs` runs.
fn turns(sizes: usize, runs: usize, per_turn: usize) -> impl Iterator<Item = (usize, usize)> {
    let per_turn = per_turn.max(1);
    (0..runs.div_ceil(per_turn)).flat_map(move |t| (0..sizes).map(move |i| (i, per_turn.min(runs - t * per_turn))))
}

/// A batch size's timing from its runs' times, µs, in the order they ran.
fn batch_timing(batch: usize, samples: Vec<f64>) -> BatchTiming {
    let mut times = samples.clone();
    times.sort_by(f64::total_cmp);
    let q = |f: f64| times[((times.len() - 1) as f64 * f).round() as usize];
    BatchTiming {
        batch,
        runs: times.len(),
        median_us: q(0.5),
        p10_us: q(0.1),
        p90_us: q(0.9),
        min_us: times[0],
        max_us: times[times.len() - 1],
        samples_us: samples.iter().map(|us| (us * 10.0).round() / 10.0).collect(),
    }
}

/// Prints the suggested weights and costs (see [`crate::suggest`]) of the nodes measured at batch 1.
fn print_suggestions(spec: &baton::PipelineSpec, nodes: &BTreeMap<String, NodeProfile>, busy: &BTreeMap<String, f64>) {
    let measured: Option<Vec<Measured>> = spec
        .nodes
        .iter()
        .map(|n| {
            let batches = &nodes.get(&n.name)?.batches;
            let (first, full) = (batches.first()?, batches.last()?);
            (first.batch == 1).then(|| Measured {
                batch1_us: first.median_us,
                full: full.batch,
                full_us: full.median_us,
                busy_cores: busy.get(&n.name).copied().unwrap_or(1.0),
            })
        })
        .collect();
    let Some(measured) = measured else {
        println!("no suggested weights: measure every node at batch 1 (--batches 1,...)");
        return;
    };
    println!("suggested (docs/scheduling.md, \"Weights and costs from measurements\"):");
    for (n, s) in spec.nodes.iter().zip(suggest(&children(spec), &measured)) {
        println!(
            "[nodes.{}] weight = {:.2}  cost = {:.2}   # effect {:.2}, batching gain {:.1}x, device share {:.1}%",
            n.name,
            s.weight,
            s.cost,
            s.effect,
            s.gain,
            100.0 * s.share
        );
    }
    let full_us: Vec<f64> = measured.iter().map(|m| m.full_us).collect();
    match brief_bound_us(&full_us) {
        Some(bound) => {
            let brief: Vec<&str> = spec
                .nodes
                .iter()
                .zip(&full_us)
                .filter(|(_, &t)| t < bound as f64)
                .map(|(n, _)| n.name.as_str())
                .collect();
            println!("[scheduler] brief_batch_us = {bound}   # outside the budget: {}", brief.join(", "));
        }
        None => println!("[scheduler] no brief_batch_us: no node's full batch is {BRIEF_GAP}x shorter than the next"),
    }
}

/// Per stage and input: the batches the timed runs feed it in turn (one per sample given
/// for the input, else one of zeros), or `None` for an input an earlier stage makes.
type PreparedInputs = Vec<Vec<Option<Vec<Tensor>>>>;

/// The inputs of every run at batch size `b`, built before the runs are timed.
fn prepared_inputs(
    stages: &[Stage],
    b: usize,
    dim: usize,
    samples: &BTreeMap<String, Vec<Tensor>>,
) -> Result<PreparedInputs, String> {
    let mut made: Vec<&str> = Vec::new();
    let mut prepared = Vec::new();
    for stage in stages {
        let mut slots = Vec::new();
        for spec in &stage.signature.inputs {
            let turn = if made.contains(&spec.name.as_str()) {
                None
            } else if let Some(given) = samples.get(&spec.name) {
                Some(given.iter().map(|sample| sample_batch(sample, b)).collect::<Result<Vec<_>, _>>()?)
            } else {
                let shape = spec
                    .shape
                    .iter()
                    .enumerate()
                    .map(|(k, d)| match d {
                        _ if k == 0 => b,
                        Dim::Fixed(n) => *n,
                        Dim::Dynamic(_) => dim,
                    })
                    .collect();
                Some(vec![Tensor::zeros(spec.dtype, shape).map_err(|e| e.to_string())?])
            };
            slots.push(turn);
        }
        made.extend(stage.signature.outputs.iter().map(|o| o.name.as_str()));
        prepared.push(slots);
    }
    Ok(prepared)
}

/// Run `k` of all the node's stages, each input the k-th in turn of its `prepared`
/// batches or an earlier stage's output; the bytes of every tensor the stages took and gave.
fn run_node(stages: &mut [Stage], prepared: &PreparedInputs, k: usize) -> Result<usize, String> {
    let mut produced: BTreeMap<String, Tensor> = BTreeMap::new();
    let mut bytes = 0;
    for (stage, slots) in stages.iter_mut().zip(prepared) {
        let mut inputs = Vec::new();
        for (spec, turn) in stage.signature.inputs.iter().zip(slots) {
            let t = match turn {
                Some(turn) => turn[k % turn.len()].clone(),
                None => produced.get(&spec.name).cloned().ok_or_else(|| format!("no output `{}` made", spec.name))?,
            };
            inputs.push(t);
        }
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let outs = if !stage.function && !inputs.is_empty() && inputs.iter().all(|t| t.shape().first() == Some(&0)) {
            // Nothing to infer (an earlier stage gave zero rows): empty outputs, no engine call, as the runtime does.
            empty_outputs(&stage.signature)?
        } else {
            stage.engine.run(&refs).map_err(|e| e.to_string())?
        };
        bytes += inputs.iter().chain(&outs).map(|t| t.as_bytes().len()).sum::<usize>();
        for (spec, t) in stage.signature.outputs.iter().zip(outs) {
            produced.insert(spec.name.clone(), t);
        }
    }
    Ok(bytes)
}

/// Zero-row outputs of a model stage that had nothing to run (dynamic dims 0), as the runtime makes them.
fn empty_outputs(signature: &baton::ModelSignature) -> Result<Vec<Tensor>, String> {
    signature
        .outputs
        .iter()
        .map(|o| {
            let shape = o.shape.iter().enumerate().map(|(i, d)| match d {
                Dim::Fixed(n) if i > 0 => *n,
                _ => 0,
            });
            Tensor::zeros(o.dtype, shape.collect()).map_err(|e| e.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_runs_take_turns_of_ten_runs_a_size_until_each_size_has_its_runs() {
        let order: Vec<(usize, usize)> = turns(3, 25, RUNS_PER_TURN).collect();
        assert_eq!(order, [(0, 10), (1, 10), (2, 10), (0, 10), (1, 10), (2, 10), (0, 5), (1, 5), (2, 5)]);
        assert_eq!(turns(2, 10, RUNS_PER_TURN).collect::<Vec<_>>(), [(0, 10), (1, 10)]);
        assert_eq!(turns(0, 200, RUNS_PER_TURN).count(), 0);
        assert_eq!(turns(4, 0, RUNS_PER_TURN).count(), 0);
        // On CUDA a size's runs come in one turn (per_turn = runs).
        assert_eq!(turns(2, 200, 200).collect::<Vec<_>>(), [(0, 200), (1, 200)]);
    }
}
