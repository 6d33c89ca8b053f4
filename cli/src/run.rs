//! `baton run`: feed a pipeline requests and print what comes back.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use baton::{Request, Runtime, Tensor};
use serde_json::json;

use crate::inputs;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The pipeline file.
    pipeline: PathBuf,
    /// An input from a file, as NAME=FILE (.npy or .json); repeatable. Inputs not given are generated.
    #[arg(long = "input", value_name = "NAME=FILE")]
    inputs: Vec<String>,
    /// Requests to send.
    #[arg(long, default_value_t = 1)]
    requests: usize,
    /// Submitting threads (each waits for its answer before sending the next).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Rows (dim 0) of generated inputs.
    #[arg(long, default_value_t = 1)]
    rows: usize,
    /// Seed of generated inputs (request i uses seed + i).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Mark every request as a priority task.
    #[arg(long)]
    priority: bool,
    /// Print the outputs of the first N requests (default: all when sending at most 4).
    #[arg(long)]
    print: Option<usize>,
    /// Stream a 16 kHz mono WAV through the pipeline as one stream, chunk by chunk
    /// (512 samples after 64 of context), printing each chunk's outputs. Inputs given
    /// with --input go with the final chunk when the pipeline marks them optional.
    #[arg(long, value_name = "FILE")]
    wav: Option<PathBuf>,
    /// The pipeline input that takes the WAV's chunks.
    #[arg(long, default_value = "chunk")]
    wav_input: String,
}

fn parse_files(args: &RunArgs, spec: &baton::PipelineSpec) -> Result<BTreeMap<String, Tensor>, String> {
    let mut files = BTreeMap::new();
    for item in &args.inputs {
        let (name, path) = item.split_once('=').ok_or_else(|| format!("--input {item}: use NAME=FILE"))?;
        let input = spec
            .inputs
            .iter()
            .find(|i| i.spec.name == name)
            .ok_or_else(|| format!("--input {item}: the pipeline has no input `{name}`"))?;
        files.insert(name.to_string(), inputs::read_tensor(path.as_ref(), &input.spec)?);
    }
    Ok(files)
}

fn request(
    args: &RunArgs,
    spec: &baton::PipelineSpec,
    files: &BTreeMap<String, Tensor>,
    i: usize,
) -> Result<Request, String> {
    let mut rng = inputs::rng(args.seed + i as u64);
    let mut request = Request::new().priority(args.priority);
    for input in &spec.inputs {
        let name = &input.spec.name;
        let tensor = match files.get(name) {
            Some(t) => t.clone(),
            None => baton_bench::load::generate(&input.spec, args.rows, &mut rng)?,
        };
        request = request.input(name.clone(), tensor);
    }
    Ok(request)
}

pub fn run(args: RunArgs, engines: &baton::EngineRegistry) -> ExitCode {
    let runtime = match Runtime::from_file(&args.pipeline, engines) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let spec = runtime.spec().clone();
    let files = match parse_files(&args, &spec) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(wav) = &args.wav {
        let code = stream_wav(&runtime, &spec, wav, &args.wav_input, &files);
        runtime.shutdown();
        return code;
    }
    let print = args.print.unwrap_or(if args.requests <= 4 { args.requests } else { 0 });
    let next = AtomicUsize::new(0);
    let latencies =
        Mutex::new(hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"));
    let errors: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    let printed: Mutex<BTreeMap<usize, serde_json::Value>> = Mutex::new(BTreeMap::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..args.concurrency.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= args.requests {
                    break;
                }
                let sent = Instant::now();
                let result = request(&args, &spec, &files, i)
                    .map_err(|e| e.to_string())
                    .and_then(|r| runtime.submit(r).wait().map_err(|e| e.to_string()));
                latencies.lock().unwrap().saturating_record(sent.elapsed().as_micros() as u64);
                match result {
                    Ok(outputs) if i < print => {
                        let map: serde_json::Map<String, serde_json::Value> =
                            outputs.iter().map(|(n, t)| (n.to_string(), inputs::tensor_to_json(t))).collect();
                        printed.lock().unwrap().insert(i, json!({ "request": i, "outputs": map }));
                    }
                    Ok(_) => {}
                    Err(e) => {
                        if i < print {
                            printed.lock().unwrap().insert(i, json!({ "request": i, "error": e }));
                        }
                        *errors.lock().unwrap().entry(e).or_default() += 1;
                    }
                }
            });
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    runtime.shutdown();
    for line in printed.into_inner().unwrap().values() {
        println!("{line}");
    }
    let latencies = latencies.into_inner().unwrap();
    let errors = errors.into_inner().unwrap();
    let failed: usize = errors.values().sum();
    let summary = json!({
        "pipeline": spec.name,
        "requests": args.requests,
        "ok": args.requests - failed,
        "errors": errors,
        "concurrency": args.concurrency,
        "seconds": seconds,
        "throughput_rps": args.requests as f64 / seconds,
        "latency_us": {
            "p50": latencies.value_at_quantile(0.5),
            "p90": latencies.value_at_quantile(0.9),
            "p99": latencies.value_at_quantile(0.99),
            "max": latencies.max(),
        },
    });
    println!("{summary}");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `--wav`: one stream, chunk by chunk; a JSON line of outputs per chunk.
fn stream_wav(
    runtime: &Runtime,
    spec: &baton::PipelineSpec,
    wav: &std::path::Path,
    input: &str,
    files: &BTreeMap<String, Tensor>,
) -> ExitCode {
    use baton_stages::collab::speech::{chunk_tensor, chunks, read_wav};
    let samples = match read_wav(wav) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if !spec.inputs.iter().any(|i| i.spec.name == input) {
        eprintln!("error: the pipeline has no input `{input}` for the WAV's chunks (use --wav-input)");
        return ExitCode::from(2);
    }
    let chunks = chunks(&samples);
    let last = chunks.len() - 1;
    for (k, chunk) in chunks.iter().enumerate() {
        let mut request = Request::new().input(input, chunk_tensor(chunk)).stream(0, k == 0, k == last);
        for (name, tensor) in files {
            let optional = spec.inputs.iter().any(|i| &i.spec.name == name && i.optional);
            if k == last || !optional {
                request = request.input(name.clone(), tensor.clone());
            }
        }
        match runtime.submit(request).wait() {
            Ok(outputs) => {
                let map: serde_json::Map<String, serde_json::Value> =
                    outputs.iter().map(|(n, t)| (n.to_string(), inputs::tensor_to_json(t))).collect();
                println!("{}", json!({ "chunk": k, "final": k == last, "outputs": map }));
            }
            Err(e) => {
                println!("{}", json!({ "chunk": k, "error": e.to_string() }));
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
