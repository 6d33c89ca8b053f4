//! The main job: the collaborating-networks pipeline (`configs/collab.toml`)
//! serving many concurrent user sessions. Each session streams its speech
//! chunk by chunk (silero-vad, state written back per stream) and sends its
//! image (PP-OCRv4 detection + recognition); a recommender joins both.
//!
//! ```text
//! cargo run --release -p baton-examples --example collab -- --help
//! ```
//!
//! Unpaced (the default): every session `--repeat N` times at once, as fast as
//! the runtime answers, under one `--policy`; prints each session's result and
//! a latency summary (final, priority chunks apart from the rest); exits 1 if
//! a session's category is not the expected one. `--config` runs another file
//! of the same pipeline (`configs/collab-gpu.toml`, a placed one).
//!
//! `--image-first`: sessions as users send them (`configs/collab_early.toml`):
//! the image when the session starts, then the speech; the final chunk carries
//! the text features the image's answer gave.
//!
//! Load mode, policies side by side: `--rate R --duration S [--pace-ms 32]
//! [--policies collaborative,greedy]` starts sessions at R per second (Poisson,
//! the same arrivals for every policy) for S seconds, each streaming its
//! chunks every `pace` ms, and prints per policy the throughput, the sessions
//! whose category is right, and the other and final chunks' p50/p99, then each
//! policy's figures as a ratio to greedy's; it exits 1 if a session failed or
//! got a wrong category. `--print-sessions` lists every session's category and
//! final-chunk latency under each policy with its recognised text;
//! `--latency-plot FILE.svg` draws the latency distributions.
//! `--capacity N` first measures sessions/s with N unpaced concurrent sessions.
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
use baton_bench::plot::Distribution;
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
    // For side-by-side runs of the join boost and priority-follows-the-DAG options (both on by default).
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
const OPTIONS: [(&str, &str); 16] = [
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
    ("--print-sessions", "      load mode: every session's text and category under each policy"),
    ("--latency-plot", "FILE.svg  load mode: the latency distributions of the last load's runs"),
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
    let switch = |name: &str| args.iter().any(|a| a == name);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let answer = if switch("--answer-callback") { AnswerTime::Callback } else { AnswerTime::Waiter };
    let mode = Mode { image_first: switch("--image-first"), answer };
    // `--config` runs another file of the same pipeline (one host of a split, say).
    let config_path = arg("--config").map_or_else(|| mode.config(&root), std::path::PathBuf::from);
    let data = Sessions::load(&root.join("data"))?;
    if arg("--rate").is_some() || arg("--capacity").is_some() || arg("--sweep").is_some() {
        return load_mode(&arg, &switch, mode, &config_path, &data);
    }
    let repeat: usize = arg("--repeat").map_or(Ok(4), |r| r.parse())?;
    let policy = policy(&arg("--policy").unwrap_or("collaborative".into()))?;
    unpaced(&config_path, policy, mode, &data, repeat)
}

/// The unpaced run: every session `repeat` times at once, as fast as the runtime answers;
/// prints each session's result and the latency summary, exits 1 on a wrong category.
fn unpaced(
    config_path: &Path,
    policy: BatchingPolicy,
    mode: Mode,
    data: &Sessions,
    repeat: usize,
) -> Result<(), Error> {
    let runtime = start(config_path, policy)?;
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
    let wrong = print_unpaced_sessions(data, &results, repeat);
    print_unpaced_summary(&results, seconds, wrong);
    let failures = failures.into_inner().unwrap();
    for f in &failures {
        eprintln!("error: {f}");
    }
    if wrong > 0 || !failures.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

/// The session's category name and whether it is the expected one.
fn category<'a>(data: &'a Sessions, session: &Session, result: &SessionResult) -> (&'a str, bool) {
    let name = data.categories.get(result.category).map_or("?", String::as_str);
    (name, name == session.expected_category)
}

/// One line per session (the first of its `repeat` streams); returns how many streams got a wrong category.
fn print_unpaced_sessions(data: &Sessions, results: &[(usize, SessionResult)], repeat: usize) -> usize {
    let mut wrong = 0;
    println!(
        "{:<5} {:>10} {:>10}  {:<10} {:<10} {:>6}  text",
        "id", "speech", "known", "category", "expected", "chars"
    );
    for (i, (s, result)) in results.iter().enumerate() {
        let session = &data.sessions[*s];
        let (category, right) = category(data, session, result);
        wrong += usize::from(!right);
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
    wrong
}

/// Throughput, categories right, and the chunks' and final chunks' p50/p99.
fn print_unpaced_summary(results: &[(usize, SessionResult)], seconds: f64, wrong: usize) {
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

/// `--capacity`: sessions/s of each policy with `n` unpaced concurrent sessions.
fn capacity(
    config_path: &Path,
    policies: &[BatchingPolicy],
    mode: Mode,
    data: &Sessions,
    n: usize,
) -> Result<(), Error> {
    for &p in policies {
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
    Ok(())
}

/// The open-loop loads to run: (percent of capacity, or 0 for a plain `--rate`; sessions/s).
fn loads(arg: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(f64, f64)>, Error> {
    Ok(match (arg("--rate"), arg("--sweep")) {
        (Some(rate), None) => vec![(0.0, rate.parse()?)],
        (None, Some(percents)) => {
            let capacity: f64 =
                arg("--capacity-rate").ok_or("--sweep needs --capacity-rate (sessions/s at 100%)")?.parse()?;
            let percents: Vec<f64> = percents.split(',').map(str::parse).collect::<Result<_, _>>()?;
            percents.into_iter().map(|p| (p, capacity * p / 100.0)).collect()
        }
        (Some(_), Some(_)) => return Err("give --rate or --sweep, not both".into()),
        (None, None) => Vec::new(),
    })
}

/// `--capacity`, `--rate` and `--sweep`: throughput and latency per policy under load,
/// side by side; fails if a session got a wrong category or failed under any policy.
fn load_mode(
    arg: &dyn Fn(&str) -> Option<String>,
    switch: &dyn Fn(&str) -> bool,
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
        capacity(config_path, &policies, mode, data, n.parse()?)?;
    }
    let duration = Duration::from_secs_f64(arg("--duration").map_or(Ok(20.0), |d| d.parse())?);
    // (policy, load %, [final p50, final p99, chunk p50, chunk p99] in µs) for the plot.
    let mut series = Vec::new();
    let (mut failed, mut last) = (0, Vec::new());
    for (percent, rate) in loads(arg)? {
        eprintln!("open loop: {rate} sessions/s (Poisson) for {duration:?}, chunks every {:?}", clients.pace);
        let runs: Vec<Run> = policies
            .iter()
            .map(|&p| open_loop(config_path, p, mode, data, rate, duration, clients))
            .collect::<Result<_, _>>()?;
        if switch("--print-sessions") {
            print_sessions(data, &runs);
        }
        println!("open loop: {rate} sessions/s (Poisson) for {duration:?}, chunks every {:?}", clients.pace);
        print_table(data, &runs);
        failed += runs.iter().map(|r| r.wrong(data) + r.errors).sum::<usize>();
        for run in &runs {
            let [chunk50, chunk99, final50, final99] = run.percentiles_ms();
            series.push((run.name(), percent, [final50, final99, chunk50, chunk99].map(|ms| ms * 1e3)));
        }
        last = runs;
    }
    if let Some(path) = arg("--plot") {
        baton_bench::plot::sweep_plot(Path::new(&path), "collab, image first (final chunks: priority)", &series)?;
        println!("wrote {path}");
    }
    if let Some(path) = arg("--latency-plot") {
        latency_plot(Path::new(&path), &last)?;
    }
    if failed > 0 {
        return Err(format!("{failed} sessions failed or got a wrong category").into());
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

/// One open-loop run of one policy: each answered session with its arrival number.
struct Run {
    policy: BatchingPolicy,
    /// (arrival number, result), by arrival; the session sent is `arrival % sessions`.
    results: Vec<(usize, SessionResult)>,
    seconds: f64,
    /// Sessions that failed.
    errors: usize,
}

impl Run {
    fn name(&self) -> String {
        format!("{:?}", self.policy).to_lowercase()
    }

    /// The other chunks' and the final chunks' latencies, each sorted.
    fn latencies(&self) -> (Vec<Duration>, Vec<Duration>) {
        let plain: Vec<SessionResult> = self.results.iter().map(|(_, r)| r.clone()).collect();
        latencies(&plain)
    }

    /// The other chunks' p50 and p99, then the final chunks' p50 and p99, ms.
    fn percentiles_ms(&self) -> [f64; 4] {
        let (chunks, finals) = self.latencies();
        [percentile(&chunks, 0.5), percentile(&chunks, 0.99), percentile(&finals, 0.5), percentile(&finals, 0.99)]
    }

    /// Answered sessions whose category is not the expected one.
    fn wrong(&self, data: &Sessions) -> usize {
        self.results.iter().filter(|(i, r)| !category(data, &data.sessions[i % data.sessions.len()], r).1).count()
    }
}

/// Seeded exponential gaps (xorshift): the same arrivals for every policy.
struct Arrivals {
    seed: u64,
    rate: f64,
}

impl Arrivals {
    fn new(rate: f64) -> Arrivals {
        Arrivals { seed: 0x9E37_79B9_7F4A_7C15, rate }
    }

    /// The gap to the next arrival.
    fn gap(&mut self) -> Duration {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let uniform = (self.seed >> 11) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64(-(1.0 - uniform).ln() / self.rate)
    }
}

/// One open-loop run of `policy` at `rate` sessions/s for `duration`, each
/// session paced as its user speaks; prints the node stats to stderr.
fn open_loop(
    config_path: &Path,
    policy: BatchingPolicy,
    mode: Mode,
    data: &Sessions,
    rate: f64,
    duration: Duration,
    clients: Clients,
) -> Result<Run, Error> {
    let runtime = start(config_path, policy)?;
    let results = Mutex::new(Vec::new());
    let errors = Mutex::new(0usize);
    let mut arrivals = Arrivals::new(rate);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let (mut at, mut i) = (Duration::ZERO, 0usize);
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
                    Ok(r) => results.lock().unwrap().push((i, r)),
                    Err(_) => *errors.lock().unwrap() += 1,
                }
            });
            at += arrivals.gap();
            i += 1;
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    print_stats(policy, &runtime.node_stats());
    runtime.shutdown();
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    Ok(Run { policy, results, seconds, errors: errors.into_inner().unwrap() })
}

/// Every session in arrival order: its category and final-chunk latency under
/// each policy (the same arrivals for all), and the text the OCR recognised.
fn print_sessions(data: &Sessions, runs: &[Run]) {
    print!("{:>4} {:<5} {:<10}", "#", "id", "expected");
    for run in runs {
        print!(" {:>24}", format!("{} (final ms)", run.name()));
    }
    println!("  recognised text");
    let arrivals = runs.iter().flat_map(|r| r.results.iter().map(|(i, _)| i + 1)).max().unwrap_or(0);
    for i in 0..arrivals {
        let session = &data.sessions[i % data.sessions.len()];
        print!("{i:>4} {:<5} {:<10}", session.id, session.expected_category);
        let mut text = None;
        for run in runs {
            match run.results.iter().find(|(a, _)| *a == i) {
                Some((_, r)) => {
                    let (name, right) = category(data, session, r);
                    let ms = r.latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3);
                    print!(" {:>14}{} {ms:>7.1}", name, if right { ' ' } else { '!' });
                    text.get_or_insert(r.text.as_str());
                }
                None => print!(" {:>24}", "failed"),
            }
        }
        println!("  {}", text.unwrap_or("-"));
    }
}

/// The runs side by side (throughput, categories right, the other chunks' and
/// the final chunks' p50/p99), then each policy's figures as a ratio to greedy's.
fn print_table(data: &Sessions, runs: &[Run]) {
    println!(
        "{:<14} {:>10} {:>10} {:>9} {:>11} {:>11} {:>11} {:>11} {:>7}",
        "policy", "sessions/s", "chunks/s", "right", "chunk p50", "chunk p99", "final p50", "final p99", "errors"
    );
    for run in runs {
        let [chunk50, chunk99, final50, final99] = run.percentiles_ms();
        let chunks: usize = run.results.iter().map(|(_, r)| r.latencies.len()).sum();
        println!(
            "{:<14} {:>10.2} {:>10.0} {:>9} {chunk50:>9.2}ms {chunk99:>9.2}ms {final50:>9.2}ms {final99:>9.2}ms {:>7}",
            run.name(),
            run.results.len() as f64 / run.seconds,
            chunks as f64 / run.seconds,
            format!("{}/{}", run.results.len() - run.wrong(data), run.results.len()),
            run.errors
        );
    }
    let Some(greedy) = runs.iter().find(|r| r.policy == BatchingPolicy::Greedy) else { return };
    let [_, g_chunk99, g_final50, g_final99] = greedy.percentiles_ms();
    let g_rate = greedy.results.len() as f64 / greedy.seconds;
    for run in runs.iter().filter(|r| r.policy != BatchingPolicy::Greedy) {
        let [_, chunk99, final50, final99] = run.percentiles_ms();
        println!(
            "{} / greedy: final chunks p50 {:.2}x p99 {:.2}x | other chunks p99 {:.2}x | sessions/s {:.2}x",
            run.name(),
            final50 / g_final50,
            final99 / g_final99,
            chunk99 / g_chunk99,
            run.results.len() as f64 / run.seconds / g_rate
        );
    }
}

/// The final chunks' and the other chunks' latency distributions of `runs`, one line per policy.
fn latency_plot(path: &Path, runs: &[Run]) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let us = |v: Vec<Duration>| v.iter().map(|d| d.as_secs_f64() * 1e6).collect::<Vec<f64>>();
    let series: Vec<Distribution> = runs
        .iter()
        .map(|run| {
            let (chunks, finals) = run.latencies();
            Distribution { policy: run.name(), priority: us(finals), others: us(chunks) }
        })
        .collect();
    baton_bench::plot::distribution_plot(path, "collab, paced sessions (final chunks: priority)", &series)?;
    println!("latency distributions: {}", path.display());
    Ok(())
}
