//! Reading the runtime's records back from `baton bench --json` files: every
//! point's per-node entries, from files of one pipeline (the simulator's
//! `--wake-delays` and `--batch-times`).

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(bound = "E: DeserializeOwned")]
struct BenchFile<E> {
    pipeline: String,
    points: Vec<Point<E>>,
}

#[derive(Deserialize)]
#[serde(bound = "E: DeserializeOwned")]
struct Point<E> {
    nodes: Vec<E>,
}

/// The node entries of every point of `files`, read as `E`, in file and point order.
/// Errors name the option (`option`) and the file: unreadable, not `baton bench --json`
/// output, or measured on another pipeline than `pipeline`.
pub fn node_entries<E: DeserializeOwned>(files: &[PathBuf], pipeline: &str, option: &str) -> Result<Vec<E>, String> {
    let mut entries = Vec::new();
    for file in files {
        let at = || format!("{option} {}", file.display());
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", at()))?;
        let bench: BenchFile<E> =
            serde_json::from_str(&text).map_err(|e| format!("{}: not `baton bench --json` output: {e}", at()))?;
        if bench.pipeline != pipeline {
            return Err(format!("{}: measured pipeline `{}`, not `{pipeline}`", at(), bench.pipeline));
        }
        entries.extend(bench.points.into_iter().flat_map(|p| p.nodes));
    }
    Ok(entries)
}
