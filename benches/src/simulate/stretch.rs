//! How far batches stretch while they run under a load, from the runtime's own
//! record of them (`--batch-times FILE[,FILE..]`).
//!
//! The runtime records each node's compute time per batch size as a histogram
//! (`baton::stats::BatchTimes`); `baton bench --json` writes each point's
//! (`nodes[].batch_times`: `batch_size` and `buckets`, `[lower ns, upper ns,
//! batches]`). A node's *stretch* is the distribution of a recorded batch's
//! time over the profile's median at its size, pooled over every size and
//! point of the files given: it holds both the compute scale (its centre) and
//! the stretched batches of other threads and the OS taking the core (its
//! tail), which the profile, timed alone, lacks. A normal-class batch then
//! takes the profile's median at its size times a draw of the stretch (the
//! draw's `u` picks the bucket by rank and the place within it); real-time
//! batches keep the profile's draws, as under `--compute-scale`. A node the
//! files hold no batches of keeps the profile's draws and its scale.
//!
//! Checks, each naming the file: it is `baton bench` JSON of the same pipeline
//! (by name), and the files hold batches of some node of the pipeline.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Deserialize)]
struct NodeEntry {
    name: String,
    #[serde(default)]
    batch_times: Vec<baton::stats::BatchTimes>,
}

/// Each node's recorded batches (pipeline order): (batch size, lower ns, upper ns, batches).
pub type Recorded = Vec<Vec<(usize, u64, u64, u64)>>;

/// The batches `files` recorded for pipeline `pipeline`'s `nodes`.
pub fn load(files: &[PathBuf], pipeline: &str, nodes: &[String]) -> Result<Recorded, String> {
    let mut recorded: Recorded = vec![Vec::new(); nodes.len()];
    for entry in super::records::node_entries::<NodeEntry>(files, pipeline, "--batch-times")? {
        if let Some(n) = nodes.iter().position(|n| *n == entry.name) {
            for t in &entry.batch_times {
                recorded[n].extend(t.buckets.iter().map(|&(lower, upper, count)| (t.batch_size, lower, upper, count)));
            }
        }
    }
    if recorded.iter().all(Vec::is_empty) {
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        return Err(format!("--batch-times {}: no batches of any node of `{pipeline}`", files.join(",")));
    }
    Ok(recorded)
}

/// One node's stretch: ranges of (time ÷ the profile's median at the batch's size),
/// sorted by their low end, with the running count of batches.
#[derive(Clone, Debug, PartialEq)]
pub struct Stretch {
    /// `(low, high)` factor of each recorded bucket.
    ranges: Vec<(f64, f64)>,
    cumulative: Vec<u64>,
}

impl Stretch {
    /// The stretch of a node's `recorded` batches, each over `median_us(batch size)`
    /// (`None` without batches).
    pub fn of(recorded: &[(usize, u64, u64, u64)], median_us: impl Fn(usize) -> f64) -> Option<Stretch> {
        let mut buckets: Vec<((f64, f64), u64)> = recorded
            .iter()
            .filter(|b| b.3 > 0)
            .map(|&(batch, lower, upper, count)| {
                let median_ns = (median_us(batch) * 1000.0).max(1.0);
                let upper = if upper == u64::MAX { lower + lower / 8 } else { upper };
                ((lower as f64 / median_ns, upper as f64 / median_ns), count)
            })
            .collect();
        if buckets.is_empty() {
            return None;
        }
        buckets.sort_by(|a, b| a.0 .0.total_cmp(&b.0 .0));
        let mut sum = 0;
        let cumulative = buckets
            .iter()
            .map(|b| {
                sum += b.1;
                sum
            })
            .collect();
        Some(Stretch { ranges: buckets.into_iter().map(|b| b.0).collect(), cumulative })
    }

    /// The `u`-quantile (u in [0, 1)): the bucket holding that rank, and as far into it.
    pub fn at(&self, u: f64) -> f64 {
        let total = *self.cumulative.last().expect("a stretch has batches") as f64;
        let rank = (u.clamp(0.0, 1.0) * total).min(total - 1e-9);
        let i = self.cumulative.partition_point(|&c| (c as f64) <= rank);
        let before = if i == 0 { 0.0 } else { self.cumulative[i - 1] as f64 };
        let within = (rank - before) / (self.cumulative[i] as f64 - before);
        let (low, high) = self.ranges[i];
        low + (high - low) * within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stretch_is_each_batch_over_the_median_at_its_size_and_draws_by_rank() {
        // Size 1 (median 100 µs): 3 batches in [100, 110) µs; size 4 (median 200 µs): 1 in [400, 440) µs.
        let recorded = vec![(1, 100_000, 110_000, 3), (4, 400_000, 440_000, 1)];
        let s = Stretch::of(&recorded, |b| if b == 1 { 100.0 } else { 200.0 }).unwrap();
        assert_eq!(s.at(0.0), 1.0);
        assert!((s.at(0.375) - 1.05).abs() < 1e-9, "half way through the first 3 of 4 ranks");
        assert_eq!(s.at(0.75), 2.0, "the fourth rank starts the stretched bucket");
        assert!((s.at(0.999) - 2.2).abs() < 1e-2);
        assert_eq!(Stretch::of(&[], |_| 1.0), None);
    }

    #[test]
    fn another_pipeline_or_files_without_batches_are_refused_naming_the_file() {
        let dir = baton_scratch::Scratch::new("stretch");
        let file = dir.join("b.json");
        let node = r#"{"name": "x", "batch_times": [{"batch_size": 2, "buckets": [[1000, 1100, 4]]}]}"#;
        std::fs::write(&file, format!(r#"{{"pipeline": "p", "points": [{{"nodes": [{node}]}}]}}"#)).unwrap();
        let names = vec!["x".to_string(), "y".to_string()];
        let recorded = load(std::slice::from_ref(&file), "p", &names).unwrap();
        assert_eq!(recorded, vec![vec![(2, 1000, 1100, 4)], vec![]]);
        let e = load(std::slice::from_ref(&file), "q", &names).unwrap_err();
        assert!(e.contains("b.json") && e.contains("`p`"), "{e}");
        let e = load(&[file], "p", &["y".to_string()]).unwrap_err();
        assert!(e.contains("no batches"), "{e}");
    }
}
