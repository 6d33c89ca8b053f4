//! The main job: the collaborating-networks pipeline (`configs/collab.toml`)
//! serving many concurrent user sessions. Each session streams its speech
//! chunk by chunk (silero-vad, state written back per stream) and sends its
//! image with the final chunk (PP-OCRv4 detection + recognition); a
//! recommender joins both. Prints each session's result and a latency
//! summary (final, priority chunks apart from the rest); exits 1 if a
//! session's category is not the expected one.
//!
//! `cargo run --release -p baton-examples --example collab -- [--repeat N] [--policy collaborative|dynamic]`

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use baton::{PipelineConfig, Policy, Runtime};
use baton_examples::collab::session::{char_accuracy, stream_session, SessionResult, Sessions};

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let repeat: usize = arg("--repeat").map_or(Ok(4), |r| r.parse())?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let config_path = root.join("configs/collab.toml");
    let mut config = PipelineConfig::read(&config_path)?;
    if let Some(policy) = arg("--policy") {
        config.scheduler.policy = match policy.as_str() {
            "collaborative" => Policy::Collaborative,
            "dynamic" => Policy::Dynamic,
            "none" => Policy::None,
            other => return Err(format!("unknown policy `{other}`").into()),
        };
    }
    let runtime = Runtime::from_config(&config, Some(&config_path), &baton_examples::collab::registry())?;
    let data = Sessions::load(&root.join("data"))?;
    println!("pipeline `{}`: {} sessions x {repeat} concurrent streams", runtime.spec().name, data.sessions.len());

    let results: Mutex<Vec<(usize, SessionResult)>> = Mutex::new(Vec::new());
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for r in 0..repeat {
            for (s, session) in data.sessions.iter().enumerate() {
                let (runtime, results, failures) = (&runtime, &results, &failures);
                scope.spawn(move || match stream_session(runtime, session, (r * 1000 + s) as u64) {
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
    let (mut chunk_latencies, mut final_latencies) = (Vec::new(), Vec::new());
    println!(
        "{:<5} {:>10} {:>10}  {:<10} {:<10} {:>6}  text",
        "id", "speech", "known", "category", "expected", "chars"
    );
    for (i, (s, result)) in results.iter().enumerate() {
        let session = &data.sessions[*s];
        let category = data.categories.get(result.category).cloned().unwrap_or_default();
        wrong += usize::from(category != session.expected_category);
        let (last, rest) = result.latencies.split_last().expect("a session has chunks");
        final_latencies.push(*last);
        chunk_latencies.extend_from_slice(rest);
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
    chunk_latencies.sort();
    final_latencies.sort();
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
