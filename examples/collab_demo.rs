//! The main job: the collaborating-networks pipeline (`configs/collab.toml`)
//! serving many concurrent user sessions. Each session streams its speech
//! chunk by chunk (silero-vad, state written back per stream) and sends its
//! image with the final chunk (PP-OCRv4 detection + recognition); a
//! recommender joins both. Prints each session's result and a latency
//! summary (final, priority chunks apart from the rest); exits 1 if a
//! session's category is not the expected one.
//!
//! ```text
//! cargo run --release -p baton-examples --example collab -- [--repeat N] [--policy collaborative|greedy|dynamic|priority_fifo|none]
//!     [--config configs/collab-gpu.toml]
//! ```
//!
//! `--image-first`: sessions as users send them (`configs/collab_early.toml`):
//! the image when the session starts, then the speech; the final chunk carries
//! the text features the image's answer gave.
//!
//! Load mode, policies side by side (the issue's 70%-of-capacity comparison):
//! `--capacity N` first measures sessions/s with N unpaced concurrent sessions;
//! `--rate R --duration S [--pace-ms 32] [--policies collaborative,greedy]`
//! then starts sessions at R per second (Poisson) for S seconds, each streaming
//! its chunks every `pace` ms, and reports throughput and latency per policy.
//! `--client-slice-us S` makes every session's thread request an S µs slice
//! (`baton::request_thread_slice`), for every policy alike.
//! `--answer-callback` submits each chunk with `Runtime::submit_then` and ends
//! its latency in the callback, on the thread that answers, instead of when
//! the session's own thread wakes with the answer (for every policy alike).
//! `--sweep 50,70,90 --capacity-rate C [--plot FILE.svg]` runs that at each
//! percentage of C sessions/s (greedy's open-loop capacity, found with
//! `--rate`) and plots the final chunks' and the other chunks' p50/p99.
//! `BATON_JOIN_BOOST=0` / `BATON_DAG_PRIORITY=0` turn the join boost and
//! priority-follows-the-DAG options off, to compare; `BATON_BACKGROUND_NICE=N`
//! sets the background batches' nice increment (0: off).

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use baton::{BatchingPolicy, PipelineConfig, Runtime};
use baton_stages::collab::session::{
    char_accuracy, stream_session_timed, AnswerTime, Session, SessionResult, Sessions,
};

type Error = Box<dyn std::error::Error>;

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn policy(name: &str) -> Result<BatchingPolicy, Error> {
    Ok(match name {
        "collaborative" => BatchingPolicy::Collaborative,
        "greedy" => BatchingPolicy::Greedy,
        "dynamic" => BatchingPolicy::Dynamic,
        "priority_fifo" => BatchingPolicy::PriorityFifo,
        "none" => BatchingPolicy::None,
        other => return Err(format!("unknown policy `{other}`").into()),
    })
}

/// How sessions are sent: the image with the final chunk (`configs/collab.toml`), or first.
#[derive(Clone, Copy)]
struct Mode {
    image_first: bool,
    /// Where a chunk's latency ends (`--answer-callback`: in `submit_then`'s callback).
    answer: AnswerTime,
}

impl Mode {
    fn config(self, root: &Path) -> std::path::PathBuf {
        root.join(if self.image_first { "configs/collab_early.toml" } else { "configs/collab.toml" })
    }

    fn stream(
        self,
        runtime: &Runtime,
        session: &Session,
        id: u64,
        pace: Option<Duration>,
    ) -> Result<SessionResult, String> {
        stream_session_timed(runtime, session, id, pace, self.image_first, self.answer)
    }
}

fn start(config_path: &Path, policy: BatchingPolicy) -> Result<Runtime, Error> {
    let mut config = PipelineConfig::read(config_path)?;
    config.scheduler.policy = policy;
    // For side-by-side runs of the options beyond the seed (both on by default).
    let off = |name: &str| std::env::var(name).is_ok_and(|v| v == "0");
    config.scheduler.join_boost &= !off("BATON_JOIN_BOOST");
    config.scheduler.priority_follows_dag &= !off("BATON_DAG_PRIORITY");
    // For side-by-side runs of the background-batch option (docs/scheduling.md).
    if let Ok(nice) = std::env::var("BATON_BACKGROUND_NICE") {
        config.scheduler.background_nice = nice.parse()?;
    }
    Ok(Runtime::from_config(&config, Some(config_path), &baton_stages::collab::registry())?)
}

/// Latency summary: (chunks, final chunks), each sorted.
fn latencies(results: &[SessionResult]) -> (Vec<Duration>, Vec<Duration>) {
    let (mut chunks, mut finals) = (Vec::new(), Vec::new());
    for r in results {
        let (last, rest) = r.latencies.split_last().expect("a session has chunks");
        finals.push(*last);
        chunks.extend_from_slice(rest);
    }
    chunks.sort();
    finals.sort();
    (chunks, finals)
}

/// The options, each with what follows it (empty: a switch), for `--help` and for refusing unknown ones.
const OPTIONS: [(&str, &str); 14] = [
    ("--repeat", "N             concurrent streams per session (default 4)"),
    ("--policy", "NAME          collaborative (default), greedy, dynamic, priority_fifo, none"),
    ("--config", "FILE          another file of the same pipeline (configs/collab-gpu.toml, a placed one)"),
    ("--image-first", "         sessions send the image first (configs/collab_early.toml)"),
    ("--answer-callback", "     end each chunk's latency in Runtime::submit_then's callback"),
    ("--capacity", "N           load mode: sessions/s with N unpaced concurrent sessions"),
    ("--rate", "R               load mode: start R sessions/s (Poisson) ..."),
    ("--duration", "S           ... for S seconds (default 20)"),
    ("--pace-ms", "MS           ... each streaming a chunk every MS ms (default 32)"),
    ("--policies", "LIST        ... under each of these policies (default collaborative,greedy)"),
    ("--sweep", "P,P,..         load mode at each percentage of --capacity-rate"),
    ("--capacity-rate", "C      sessions/s at 100% for --sweep"),
    ("--plot", "FILE.svg        with --sweep: plot p50/p99 of final and other chunks"),
    ("--client-slice-us", "S    every session's thread requests an S µs slice"),
];

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("collab: the collaborating-networks pipeline serving user sessions (see examples/collab_demo.rs)\n");
        println!("usage: collab [OPTION VALUE]...");
        for (name, what) in OPTIONS {
            println!("  {name} {what}");
        }
        return Ok(());
    }
    if let Some(unknown) = args.iter().skip(1).find(|a| a.starts_with("--") && !OPTIONS.iter().any(|(n, _)| n == a)) {
        return Err(format!("unknown option `{unknown}` (collab --help lists them)").into());
    }
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let answer = if args.iter().any(|a| a == "--answer-callback") { AnswerTime::Callback } else { AnswerTime::Waiter };
    let mode = Mode { image_first: args.iter().any(|a| a == "--image-first"), answer };
    // `--config` runs another file of the same pipeline (one host of a split, say).
    let config_path = arg("--config").map_or_else(|| mode.config(&root), std::path::PathBuf::from);
    let data = Sessions::load(&root.join("data"))?;
    if arg("--rate").is_some() || arg("--capacity").is_some() || arg("--sweep").is_some() {
        return load_mode(&arg, mode, &config_path, &data);
    }
    let repeat: usize = arg("--repeat").map_or(Ok(4), |r| r.parse())?;
    let runtime = start(&config_path, policy(&arg("--policy").unwrap_or("collaborative".into()))?)?;
    println!("pipeline `{}`: {} sessions x {repeat} concurrent streams", runtime.spec().name, data.sessions.len());

    let results: Mutex<Vec<(usize, SessionResult)>> = Mutex::new(Vec::new());
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for r in 0..repeat {
            for (s, session) in data.sessions.iter().enumerate() {
                let (runtime, results, failures) = (&runtime, &results, &failures);
                scope.spawn(move || match mode.stream(runtime, session, (r * 1000 + s) as u64, None) {
                    Ok(result) => results.lock().unwrap().push((s, result)),
                    Err(e) => failures.lock().unwrap().push(e),
                });
            }
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    runtime.shutdown();

    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(s, r)| (*s, r.id.clone()));
    let mut wrong = 0;
    println!(
        "{:<5} {:>10} {:>10}  {:<10} {:<10} {:>6}  text",
        "id", "speech", "known", "category", "expected", "chars"
    );
    for (i, (s, result)) in results.iter().enumerate() {
        let session = &data.sessions[*s];
        let category = data.categories.get(result.category).cloned().unwrap_or_default();
        wrong += usize::from(category != session.expected_category);
        if i % repeat == 0 {
            let span = result.speech_span().map_or("-".into(), |(a, b)| format!("{a}..{b}"));
            println!(
                "{:<5} {:>10} {:>10}  {:<10} {:<10} {:>5.1}%  {}",
                result.id,
                span,
                format!("{}..{}", session.onset_chunk, session.offset_chunk),
                category,
                session.expected_category,
                100.0 * char_accuracy(&result.text, &session.image_text),
                result.text
            );
        }
    }
    let plain: Vec<SessionResult> = results.iter().map(|(_, r)| r.clone()).collect();
    let (chunk_latencies, final_latencies) = latencies(&plain);
    let chunks = chunk_latencies.len() + final_latencies.len();
    println!(
        "{} sessions, {chunks} chunks in {seconds:.2} s ({:.0} chunks/s); categories right: {}/{}",
        results.len(),
        chunks as f64 / seconds,
        results.len() - wrong,
        results.len()
    );
    println!(
        "latency ms: chunks p50 {:.2} p99 {:.2} | final (priority) chunks p50 {:.2} p99 {:.2}",
        percentile(&chunk_latencies, 0.5),
        percentile(&chunk_latencies, 0.99),
        percentile(&final_latencies, 0.5),
        percentile(&final_latencies, 0.99)
    );
    let failures = failures.into_inner().unwrap();
    for f in &failures {
        eprintln!("error: {f}");
    }
    if wrong > 0 || !failures.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

/// Per node: mean batch, queue time per task, compute time per batch (to stderr).
fn print_stats(policy: BatchingPolicy, stats: &[baton::NodeStats]) {
    for n in stats {
        eprintln!(
            "  {policy:?} {}: {} batches, mean batch {:.2}, queue {:.2} ms/task, compute {:.2} ms/batch",
            n.name,
            n.executions,
            n.rows as f64 / n.executions.max(1) as f64,
            n.queue_ns as f64 / n.tasks.max(1) as f64 / 1e6,
            n.compute_ns as f64 / n.executions.max(1) as f64 / 1e6
        );
    }
}

/// `--capacity` and `--rate`: throughput and latency per policy under load.
fn load_mode(
    arg: &dyn Fn(&str) -> Option<String>,
    mode: Mode,
    config_path: &Path,
    data: &Sessions,
) -> Result<(), Error> {
    let policies: Vec<BatchingPolicy> =
        arg("--policies").unwrap_or("collaborative,greedy".into()).split(',').map(policy).collect::<Result<_, _>>()?;
    let clients = Clients {
        pace: Duration::from_millis(arg("--pace-ms").map_or(Ok(32), |p| p.parse())?),
        slice_us: arg("--client-slice-us").map_or(Ok(0), |s| s.parse())?,
    };
    if let Some(n) = arg("--capacity") {
        let n: usize = n.parse()?;
        for &p in &policies {
            let runtime = start(config_path, p)?;
            let started = Instant::now();
            let results: Vec<SessionResult> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..n)
                    .map(|i| {
                        let (runtime, session) = (&runtime, &data.sessions[i % data.sessions.len()]);
                        scope.spawn(move || mode.stream(runtime, session, i as u64, None))
                    })
                    .collect();
                handles.into_iter().filter_map(|h| h.join().unwrap().ok()).collect()
            });
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "capacity {p:?}: {n} unpaced sessions in {seconds:.2} s = {:.2} sessions/s",
                results.len() as f64 / seconds
            );
            print_stats(p, &runtime.node_stats());
            runtime.shutdown();
        }
    }
    let duration = Duration::from_secs_f64(arg("--duration").map_or(Ok(20.0), |d| d.parse())?);
    let loads: Vec<(f64, f64)> = match (arg("--rate"), arg("--sweep")) {
        (Some(rate), None) => vec![(0.0, rate.parse()?)],
        (None, Some(percents)) => {
            let capacity: f64 =
                arg("--capacity-rate").ok_or("--sweep needs --capacity-rate (sessions/s at 100%)")?.parse()?;
            let percents: Vec<f64> = percents.split(',').map(str::parse).collect::<Result<_, _>>()?;
            percents.into_iter().map(|p| (p, capacity * p / 100.0)).collect()
        }
        (Some(_), Some(_)) => return Err("give --rate or --sweep, not both".into()),
        (None, None) => return Ok(()),
    };
    // (policy, load %, [final p50, final p99, chunk p50, chunk p99] in µs) for the plot.
    let mut series = Vec::new();
    for (percent, rate) in loads {
        println!("open loop: {rate} sessions/s (Poisson) for {duration:?}, chunks every {:?}", clients.pace);
        println!(
            "{:<14} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11} {:>7}",
            "policy", "sessions/s", "chunks/s", "chunk p50", "chunk p99", "final p50", "final p99", "errors"
        );
        for &p in &policies {
            let latencies_ms = open_loop(config_path, p, mode, data, rate, duration, clients)?;
            let [chunk50, chunk99, final50, final99] = latencies_ms;
            series.push((
                format!("{p:?}").to_lowercase(),
                percent,
                [final50, final99, chunk50, chunk99].map(|ms| ms * 1e3),
            ));
        }
    }
    if let Some(path) = arg("--plot") {
        baton_bench::plot::sweep_plot(Path::new(&path), "collab, image first (final chunks: priority)", &series)?;
        println!("wrote {path}");
    }
    Ok(())
}

/// How the open-loop sessions' threads behave, the same for every policy.
#[derive(Clone, Copy)]
struct Clients {
    /// Gap between a session's chunks.
    pace: Duration,
    /// EEVDF slice each session's thread requests, µs (0: the kernel's default; see
    /// `baton::request_thread_slice`).
    slice_us: u64,
}

/// One open-loop run of `policy` at `rate` sessions/s: prints its row and node
/// stats; returns the chunks' and the final chunks' p50 and p99, ms.
fn open_loop(
    config_path: &Path,
    policy: BatchingPolicy,
    mode: Mode,
    data: &Sessions,
    rate: f64,
    duration: Duration,
    clients: Clients,
) -> Result<[f64; 4], Error> {
    let runtime = start(config_path, policy)?;
    let results = Mutex::new(Vec::new());
    let errors = Mutex::new(0usize);
    // Seeded exponential gaps (xorshift), the same arrivals for every policy.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let started = Instant::now();
    std::thread::scope(|scope| {
        let mut at = Duration::ZERO;
        let mut i = 0usize;
        while at < duration {
            std::thread::sleep((started + at).saturating_duration_since(Instant::now()));
            let (runtime, results, errors) = (&runtime, &results, &errors);
            let session = &data.sessions[i % data.sessions.len()];
            scope.spawn(move || {
                if clients.slice_us > 0 && !baton::request_thread_slice(clients.slice_us) {
                    *errors.lock().unwrap() += 1;
                    return;
                }
                match mode.stream(runtime, session, i as u64, Some(clients.pace)) {
                    Ok(r) => results.lock().unwrap().push(r),
                    Err(_) => *errors.lock().unwrap() += 1,
                }
            });
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let uniform = (seed >> 11) as f64 / (1u64 << 53) as f64;
            at += Duration::from_secs_f64(-(1.0 - uniform).ln() / rate);
            i += 1;
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let stats = runtime.node_stats();
    runtime.shutdown();
    let results = results.into_inner().unwrap();
    let (chunks, finals) = latencies(&results);
    print_stats(policy, &stats);
    let latencies_ms =
        [percentile(&chunks, 0.5), percentile(&chunks, 0.99), percentile(&finals, 0.5), percentile(&finals, 0.99)];
    println!(
        "{:<14} {:>10.2} {:>10.0} {:>9.2}ms {:>9.2}ms {:>9.2}ms {:>9.2}ms {:>7}",
        format!("{policy:?}"),
        results.len() as f64 / seconds,
        (chunks.len() + finals.len()) as f64 / seconds,
        latencies_ms[0],
        latencies_ms[1],
        latencies_ms[2],
        latencies_ms[3],
        errors.into_inner().unwrap()
    );
    Ok(latencies_ms)
}
