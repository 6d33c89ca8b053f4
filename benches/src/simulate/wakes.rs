//! Workers' wake-ups drawn from the runtime's own record of them
//! (`--wake-delays FILE[,FILE..]`).
//!
//! The runtime records, per node, how long each told worker took to take its
//! `RunBatch`, in three classes: woken at the real-time policy (*realtime*),
//! else told while at least as many of the pipeline's workers were busy as the
//! process has cores (*contended*), or not (*free*) (`baton::wake_delays`).
//! `baton bench --json` writes each point's counts per node
//! (`nodes[].wakes.free_buckets`, `contended_buckets` and `realtime_buckets`:
//! `[lower ns, upper ns, count]`; a file from before the real-time class holds
//! those wake-ups in the other two). These draws add up every point of every
//! file given, per node and class, and the simulator draws a told worker's
//! wake-up from its node's class as it decides: realtime where its batch will
//! run at the real-time policy, else by its own busy workers against its
//! cores, as the runtime's scheduler counts them. A class with no wake-ups of
//! a node draws from the node's others (free, then contended, for a real-time
//! wake-up; the other normal class, then the real-time one, for a normal
//! one); a node with none at all (one the measured load never ran) wakes
//! after `--wake-us`.
//!
//! A draw picks a bucket with probability proportional to its count and a
//! uniform point within the bucket (the last bucket, unbounded above, is
//! taken an eighth of its lower bound wide, as every other bucket is).
//!
//! Checks, each naming the file: it is `baton bench` JSON of the same pipeline
//! (by name), and the files hold wake-ups of some node of the pipeline.
//!
//! The scheduler thread's own wake-ups are drawn the same way
//! (`--tick-delays FILE[,FILE..]`, [`TickDraws`]): the runtime records how late
//! each timed sleep between two ticks ended, in the same two classes (the last
//! decision left every core busy, or not), and `baton bench --json` writes them
//! per point (`scheduler_ticks`). The simulator's next tick then comes a tick
//! period plus a draw after the last, as the runtime's does.

use std::path::PathBuf;

use baton::wake_delays::WakeClass;
use serde::Deserialize;

#[derive(Deserialize)]
struct NodeEntry {
    name: String,
    wakes: Option<Wakes>,
}

#[derive(Deserialize)]
struct Wakes {
    free_buckets: Vec<(u64, u64, u64)>,
    contended_buckets: Vec<(u64, u64, u64)>,
    #[serde(default)]
    realtime_buckets: Vec<(u64, u64, u64)>,
}

/// One class of one node: buckets (lower, upper ns) with their running count.
#[derive(Clone, Debug, Default, PartialEq)]
struct Empirical {
    /// `(lower ns, upper ns, count)`, merged over files and sorted by delay.
    buckets: Vec<(u64, u64, u64)>,
    /// Running sums of the counts.
    cumulative: Vec<u64>,
}

impl Empirical {
    fn add(&mut self, buckets: &[(u64, u64, u64)]) {
        for &(lower, upper, count) in buckets {
            match self.buckets.iter_mut().find(|b| b.0 == lower) {
                Some(b) => b.2 += count,
                None => self.buckets.push((lower, upper, count)),
            }
        }
    }

    fn seal(&mut self) {
        self.buckets.sort_unstable();
        let mut sum = 0;
        self.cumulative = self
            .buckets
            .iter()
            .map(|b| {
                sum += b.2;
                sum
            })
            .collect();
    }

    fn total(&self) -> u64 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    /// The wake-up for uniform draws `u` (which bucket) and `v` (where in it), ns.
    fn draw(&self, u: f64, v: f64) -> u64 {
        let rank = ((u * self.total() as f64) as u64).min(self.total() - 1);
        let i = self.cumulative.partition_point(|&c| c <= rank);
        let (lower, upper, _) = self.buckets[i];
        let upper = if upper == u64::MAX { lower + lower / 8 } else { upper };
        lower + ((upper - lower) as f64 * v) as u64
    }
}

/// The scheduler thread's lateness at the end of its sleeps between ticks: free and contended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickDraws {
    classes: [Empirical; 2],
}

impl TickDraws {
    /// The tick lateness `files` recorded for pipeline `pipeline`.
    pub fn load(files: &[PathBuf], pipeline: &str) -> Result<Self, String> {
        let mut draws = TickDraws::default();
        for ticks in super::records::tick_entries::<Wakes>(files, pipeline, "--tick-delays")? {
            draws.classes[0].add(&ticks.free_buckets);
            draws.classes[1].add(&ticks.contended_buckets);
        }
        draws.classes.iter_mut().for_each(Empirical::seal);
        if draws.classes.iter().all(|c| c.total() == 0) {
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            return Err(format!(
                "--tick-delays {}: no scheduler ticks of `{pipeline}` (a `baton bench --json` file of an \
                 in-process run records them)",
                files.join(",")
            ));
        }
        Ok(draws)
    }

    /// How late a tick comes after a decision that left every core busy (`contended`) or
    /// not, for uniform draws `u` and `v`, ns (the other class where this one has none).
    pub fn draw_ns(&self, contended: bool, u: f64, v: f64) -> u64 {
        let [free, busy] = &self.classes;
        let (first, other) = if contended { (busy, free) } else { (free, busy) };
        if first.total() > 0 { first } else { other }.draw(u, v)
    }
}

/// Per node (the pipeline's order): its free, contended and real-time wake-ups.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WakeDraws {
    nodes: Vec<[Empirical; 3]>,
}

/// The classes a wake-up of `class` draws from, in order of preference (indices into a node's classes).
fn preference(class: WakeClass) -> [usize; 3] {
    match class {
        WakeClass::Free => [0, 1, 2],
        WakeClass::Contended => [1, 0, 2],
        WakeClass::Realtime => [2, 0, 1],
    }
}

impl WakeDraws {
    /// The wake-ups `files` recorded for pipeline `pipeline`'s `nodes` (`--wake-delays`).
    pub fn load(files: &[PathBuf], pipeline: &str, nodes: &[String]) -> Result<Self, String> {
        Self::load_for("--wake-delays", files, pipeline, nodes)
    }

    /// The same, for the option `option` (which its errors name).
    pub fn load_for(option: &str, files: &[PathBuf], pipeline: &str, nodes: &[String]) -> Result<Self, String> {
        let mut draws = WakeDraws { nodes: vec![Default::default(); nodes.len()] };
        for entry in super::records::node_entries::<NodeEntry>(files, pipeline, option)? {
            let (Some(n), Some(wakes)) = (nodes.iter().position(|n| *n == entry.name), &entry.wakes) else {
                continue;
            };
            draws.nodes[n][0].add(&wakes.free_buckets);
            draws.nodes[n][1].add(&wakes.contended_buckets);
            draws.nodes[n][2].add(&wakes.realtime_buckets);
        }
        draws.nodes.iter_mut().flatten().for_each(Empirical::seal);
        if draws.nodes.iter().flatten().all(|c| c.total() == 0) {
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            return Err(format!("{option} {}: no wake-ups of any node of `{pipeline}`", files.join(",")));
        }
        Ok(draws)
    }

    /// Whether the files recorded wake-ups of `node`.
    pub fn has(&self, node: usize) -> bool {
        self.nodes[node].iter().any(|c| c.total() > 0)
    }

    /// A wake-up of a worker of `node` in `class` alone, for uniform draws `u` and `v`, ns
    /// (`None` where the node has none of that class).
    pub fn draw_class_ns(&self, node: usize, class: WakeClass, u: f64, v: f64) -> Option<u64> {
        let recorded = &self.nodes[node][preference(class)[0]];
        (recorded.total() > 0).then(|| recorded.draw(u, v))
    }

    /// A wake-up of a worker of `node` in `class`, for uniform draws `u` and `v`, ns (`None`
    /// for a node without any recorded).
    pub fn draw_ns(&self, node: usize, class: WakeClass, u: f64, v: f64) -> Option<u64> {
        let classes = &self.nodes[node];
        let recorded = preference(class).into_iter().map(|k| &classes[k]).find(|c| c.total() > 0)?;
        Some(recorded.draw(u, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of this test's own, removed when dropped.
    fn folder(test: &str) -> baton_scratch::Scratch {
        baton_scratch::Scratch::new(&format!("wakes-{test}"))
    }

    fn bench_file(dir: &baton_scratch::Scratch, name: &str, pipeline: &str, nodes: &str) -> PathBuf {
        let path = dir.join(name);
        let text = format!(r#"{{"pipeline": "{pipeline}", "points": [{{"nodes": [{nodes}]}}]}}"#);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Node `x`'s entry with these free and contended buckets (`[lower, upper, count]` lists).
    fn node_x(free: &str, contended: &str) -> String {
        format!(r#"{{"name": "x", "wakes": {{"free_buckets": [{free}], "contended_buckets": [{contended}]}}}}"#)
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn draws_follow_the_recorded_counts_of_the_class_asked_for() {
        let dir = folder("draws");
        let a = bench_file(&dir, "a.json", "p", &node_x("[1000, 1100, 3]", "[500000, 560000, 1]"));
        let b = bench_file(&dir, "b.json", "p", &node_x("[1000, 1100, 1], [8000, 9000, 4]", ""));
        let draws = WakeDraws::load(&[a, b], "p", &names(&["x"])).unwrap();
        // Free: 4 in [1000, 1100), 4 in [8000, 9000): the lower half of the ranks lands in the first.
        assert_eq!(draws.draw_ns(0, WakeClass::Free, 0.0, 0.0), Some(1000));
        assert_eq!(draws.draw_ns(0, WakeClass::Free, 0.49, 0.5), Some(1050));
        assert_eq!(draws.draw_ns(0, WakeClass::Free, 0.5, 0.0), Some(8000));
        assert_eq!(draws.draw_ns(0, WakeClass::Free, 0.999, 0.9995), Some(8999));
        assert!((500_000..560_000).contains(&draws.draw_ns(0, WakeClass::Contended, 0.7, 0.3).unwrap()));
    }

    #[test]
    fn a_class_without_wake_ups_draws_from_the_other() {
        let dir = folder("fallback");
        let a = bench_file(&dir, "a.json", "p", &node_x("[2000, 2200, 5]", ""));
        let draws = WakeDraws::load(&[a], "p", &names(&["x"])).unwrap();
        assert!((2000..2200).contains(&draws.draw_ns(0, WakeClass::Contended, 0.5, 0.5).unwrap()));
        assert!((2000..2200).contains(&draws.draw_ns(0, WakeClass::Realtime, 0.5, 0.5).unwrap()), "a file without it");
        assert_eq!(draws.draw_class_ns(0, WakeClass::Realtime, 0.5, 0.5), None, "that class alone: none");
    }

    #[test]
    fn real_time_wake_ups_draw_from_their_own_class_and_normal_ones_never_do_while_theirs_hold_any() {
        let dir = folder("realtime");
        let x = r#"{"name": "x", "wakes": {"free_buckets": [[2000, 2200, 5]], "contended_buckets": [],
            "realtime_buckets": [[9000, 9900, 2]]}}"#;
        let a = bench_file(&dir, "a.json", "p", x);
        let draws = WakeDraws::load(&[a], "p", &names(&["x"])).unwrap();
        for u in [0.0, 0.5, 0.99] {
            assert!((9000..9900).contains(&draws.draw_ns(0, WakeClass::Realtime, u, 0.5).unwrap()));
            assert!((9000..9900).contains(&draws.draw_class_ns(0, WakeClass::Realtime, u, 0.5).unwrap()));
            assert!((2000..2200).contains(&draws.draw_ns(0, WakeClass::Contended, u, 0.5).unwrap()), "free first");
            assert!((2000..2200).contains(&draws.draw_ns(0, WakeClass::Free, u, 0.5).unwrap()));
        }
    }

    #[test]
    fn a_node_without_wake_ups_has_no_draw_and_a_file_without_any_or_of_another_pipeline_is_refused() {
        let dir = folder("refused");
        let a = bench_file(&dir, "a.json", "p", &node_x("[2000, 2200, 5]", ""));
        let e = WakeDraws::load(std::slice::from_ref(&a), "q", &names(&["x"])).unwrap_err();
        assert!(e.contains("a.json") && e.contains("`p`") && e.contains("`q`"), "{e}");
        let draws = WakeDraws::load(std::slice::from_ref(&a), "p", &names(&["x", "y"])).unwrap();
        assert!(draws.has(0) && !draws.has(1));
        assert_eq!(draws.draw_ns(1, WakeClass::Free, 0.5, 0.5), None, "node `y` never ran in the record");
        let old = bench_file(&dir, "old.json", "p", r#"{"name": "x"}"#);
        let e = WakeDraws::load(&[old], "p", &names(&["x"])).unwrap_err();
        assert!(e.contains("old.json") && e.contains("no wake-ups"), "{e}");
        let e = WakeDraws::load(&[dir.join("none.json")], "p", &names(&["x"])).unwrap_err();
        assert!(e.contains("none.json"), "{e}");
    }
}
