//! What the simulator's test files share: scratch folders, profiles written
//! from samples, and the options of a plain run.

// Cost-model pipelines, and pipelines with streams and sessions; a test file uses some of
// them, or none.
#[allow(dead_code)]
pub mod pipelines;
#[allow(dead_code)]
pub mod streams;

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_bench::simulate::{ModelTerms, SimOptions};
use baton_bench::BenchOptions;

pub use baton_scratch::Scratch;

/// A fresh folder for one test's files (`suite` names the test file).
pub fn folder(suite: &str, test: &str) -> Scratch {
    Scratch::new(&format!("{suite}-{test}"))
}

/// A node's measured batch sizes, each with its samples (µs).
pub type Batches<'a> = &'a [(usize, &'a [f64])];

/// A profile: per node, per batch size, its samples (µs).
pub fn profile(dir: &Path, nodes: &[(&str, Batches)]) -> PathBuf {
    let nodes: serde_json::Map<String, serde_json::Value> = nodes
        .iter()
        .map(|(name, batches)| {
            let batches: Vec<serde_json::Value> = batches
                .iter()
                .map(|(b, s)| {
                    let mut sorted = s.to_vec();
                    sorted.sort_by(f64::total_cmp);
                    let q = |f: f64| sorted[((sorted.len() - 1) as f64 * f).round() as usize];
                    serde_json::json!({"batch": b, "runs": s.len(), "median_us": q(0.5), "p10_us": q(0.1),
                        "p90_us": q(0.9), "min_us": sorted[0], "max_us": sorted[sorted.len() - 1], "samples_us": s})
                })
                .collect();
            (
                name.to_string(),
                serde_json::json!({"provider": "cpu", "batches": batches, "memory_bytes": 0, "model_bytes": 0}),
            )
        })
        .collect();
    let path = dir.join("profile.json");
    std::fs::write(&path, serde_json::json!({"pipeline": "p.toml", "cores": 2, "nodes": nodes}).to_string()).unwrap();
    path
}

/// A run of `pipeline` under `profile`: 0.5 s warm-up, 1 s measured, no
/// measured terms.
pub fn options(pipeline: PathBuf, profile: PathBuf) -> SimOptions {
    SimOptions {
        bench: BenchOptions {
            pipeline: Some(pipeline),
            warmup: Duration::from_millis(500),
            duration: Duration::from_secs(1),
            ..BenchOptions::default()
        },
        profile,
        model: ModelTerms::default(),
        sessions: None,
    }
}

pub fn engines() -> baton::EngineRegistry {
    baton_engines::standard_registry()
}
