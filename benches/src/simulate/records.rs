//! Reading the runtime's records back from `baton bench --json` files: every
//! point's per-node entries, or its pipeline-wide scheduler ticks, from files of
//! one pipeline (the simulator's `--wake-delays`, `--batch-times` and `--tick-delays`).

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(bound = "P: DeserializeOwned")]
struct BenchFile<P> {
    pipeline: String,
    points: Vec<P>,
}

#[derive(Deserialize)]
#[serde(bound = "E: DeserializeOwned")]
struct Point<E> {
    nodes: Vec<E>,
}

#[derive(Deserialize)]
#[serde(bound = "E: DeserializeOwned")]
struct TickPoint<E> {
    scheduler_ticks: Option<E>,
}

/// The node entries of every point of `files`, read as `E`, in file and point order.
/// Errors name the option (`option`) and the file: unreadable, not `baton bench --json`
/// output, or measured on another pipeline than `pipeline`.
pub fn node_entries<E: DeserializeOwned>(files: &[PathBuf], pipeline: &str, option: &str) -> Result<Vec<E>, String> {
    Ok(points::<Point<E>>(files, pipeline, option)?.into_iter().flat_map(|p| p.nodes).collect())
}

/// The scheduler ticks of every point of `files` that recorded them, read as `E`, in file
/// and point order; errors as [`node_entries`]'.
pub fn tick_entries<E: DeserializeOwned>(files: &[PathBuf], pipeline: &str, option: &str) -> Result<Vec<E>, String> {
    Ok(points::<TickPoint<E>>(files, pipeline, option)?.into_iter().filter_map(|p| p.scheduler_ticks).collect())
}

fn points<P: DeserializeOwned>(files: &[PathBuf], pipeline: &str, option: &str) -> Result<Vec<P>, String> {
    let mut points = Vec::new();
    for file in files {
        let at = || format!("{option} {}", file.display());
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", at()))?;
        let bench: BenchFile<P> =
            serde_json::from_str(&text).map_err(|e| format!("{}: not `baton bench --json` output: {e}", at()))?;
        if bench.pipeline != pipeline {
            return Err(format!("{}: measured pipeline `{}`, not `{pipeline}`", at(), bench.pipeline));
        }
        points.extend(bench.points);
    }
    Ok(points)
}
