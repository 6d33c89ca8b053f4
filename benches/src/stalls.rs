//! `baton stalls`: the machine's core stalls, the times the OS or the hypervisor
//! takes a core away from a thread that is running on it.
//!
//! One thread pinned to each core spins reading the monotonic clock for the
//! whole measurement, all cores at once (as a loaded runtime keeps them busy).
//! Two reads further apart than the threshold are a stall: an interrupt, a
//! kernel thread, another process, or the hypervisor running another guest on
//! the core. The record keeps every stall's length per core, in the order they
//! came; `baton simulate --core-stalls` takes cores away from the model's jobs
//! at the measured rate with lengths drawn from it (docs/simulate.md,
//! "Measured terms").
//!
//! A spinning thread meets the stalls of a busy core. An idle core's (the
//! hypervisor's halts, deep C-states) are not in the record.

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What a record file says it is.
pub const KIND: &str = "baton-core-stalls";

/// One core's stalls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreStalls {
    /// The core's id (as `cores = [..]` in a pipeline file names it).
    pub core: usize,
    /// Every stall's length, µs, in the order they came.
    pub stalls_us: Vec<f64>,
}

/// A `baton stalls` record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StallRecord {
    /// Always [`KIND`].
    pub kind: String,
    /// A gap between two clock reads counts as a stall above this, µs.
    pub threshold_us: f64,
    /// How long each core was watched, s.
    pub duration_s: f64,
    /// The shortest gap between two reads seen on any core (the clock's own cost), µs.
    pub read_us: f64,
    pub cores: Vec<CoreStalls>,
}

impl StallRecord {
    /// Reads and checks a record file; errors name the file and what is wrong.
    pub fn read(path: &std::path::Path) -> Result<StallRecord, String> {
        let at = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: {e}"))?;
        let record: StallRecord =
            serde_json::from_str(&text).map_err(|e| format!("{at}: not a `baton stalls` record: {e}"))?;
        if record.kind != KIND {
            return Err(format!("{at}: kind `{}`, not `{KIND}`", record.kind));
        }
        if record.cores.is_empty() {
            return Err(format!("{at}: no cores"));
        }
        if !(record.duration_s.is_finite() && record.duration_s > 0.0) {
            return Err(format!("{at}: duration_s must be positive, not {}", record.duration_s));
        }
        if let Some(c) = record.cores.iter().find(|c| c.stalls_us.iter().any(|s| !(s.is_finite() && *s >= 0.0))) {
            return Err(format!("{at}: core {}: a stall that is not a non-negative number of µs", c.core));
        }
        Ok(record)
    }
}

/// Watches every core of `cores` for `duration` at once; a gap above `threshold` is a stall.
pub fn measure(cores: &[usize], duration: Duration, threshold: Duration) -> Result<StallRecord, String> {
    if cores.is_empty() {
        return Err("no cores to watch".into());
    }
    let start = Arc::new(Barrier::new(cores.len()));
    let watchers: Vec<_> = cores
        .iter()
        .map(|&core| {
            let start = start.clone();
            std::thread::spawn(move || {
                let pinned = core_affinity::set_for_current(core_affinity::CoreId { id: core });
                start.wait();
                (pinned, watch(duration, threshold))
            })
        })
        .collect();
    let mut record = StallRecord {
        kind: KIND.into(),
        threshold_us: threshold.as_secs_f64() * 1e6,
        duration_s: duration.as_secs_f64(),
        read_us: f64::INFINITY,
        cores: Vec::new(),
    };
    for (&core, watcher) in cores.iter().zip(watchers) {
        let (pinned, (stalls_ns, read_ns)) =
            watcher.join().map_err(|_| format!("core {core}: the watcher panicked"))?;
        if !pinned {
            return Err(format!("core {core}: could not pin a thread to it"));
        }
        record.read_us = record.read_us.min(read_ns as f64 / 1e3);
        record.cores.push(CoreStalls { core, stalls_us: stalls_ns.iter().map(|&ns| ns as f64 / 1e3).collect() });
    }
    Ok(record)
}

/// Spins for `duration`: every gap between two clock reads above `threshold`, ns, and the shortest gap.
fn watch(duration: Duration, threshold: Duration) -> (Vec<u64>, u64) {
    let threshold = threshold.as_nanos() as u64;
    let mut stalls = Vec::with_capacity(1 << 16);
    let start = Instant::now();
    let mut last = start;
    let mut shortest = u64::MAX;
    loop {
        let now = Instant::now();
        let gap = (now - last).as_nanos() as u64;
        last = now;
        shortest = shortest.min(gap);
        if gap > threshold {
            stalls.push(gap);
        }
        if now - start >= duration {
            return (stalls, shortest);
        }
    }
}

/// One core's summary line: stalls per second, the share of the time they took, quantiles.
pub fn summary(core: &CoreStalls, duration_s: f64) -> String {
    let mut s = core.stalls_us.clone();
    s.sort_by(f64::total_cmp);
    let q = |p: f64| if s.is_empty() { 0.0 } else { s[((s.len() - 1) as f64 * p).round() as usize] };
    let total: f64 = s.iter().sum();
    format!(
        "core {:>3}: {:>7.0} stalls/s, {:>5.2}% of the time; µs p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1}",
        core.core,
        s.len() as f64 / duration_s,
        total / (duration_s * 1e6) * 100.0,
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    )
}

/// Runs `baton stalls`: measures, prints each core's summary and writes the record.
pub fn run(cores: Option<Vec<usize>>, duration: Duration, threshold: Duration, out: &std::path::Path) -> ExitCode {
    let cores =
        cores.unwrap_or_else(|| core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect());
    let record = match measure(&cores, duration, threshold) {
        Ok(record) => record,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for core in &record.cores {
        println!("{}", summary(core, record.duration_s));
    }
    let text = serde_json::to_string(&record).expect("a record serializes");
    if let Err(e) = std::fs::write(out, text) {
        eprintln!("error: {}: {e}", out.display());
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_watch_records_its_cores_and_reads_back() {
        let core = core_affinity::get_core_ids().unwrap()[0].id;
        let record = measure(&[core], Duration::from_millis(20), Duration::from_micros(2)).unwrap();
        assert_eq!(record.cores.len(), 1);
        assert_eq!(record.cores[0].core, core);
        assert!(record.read_us < 2.0, "a clock read took {} µs", record.read_us);
        assert!(record.cores[0].stalls_us.iter().all(|&s| s > 2.0));
        let dir = std::env::temp_dir().join(format!("baton-stalls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("stalls.json");
        std::fs::write(&file, serde_json::to_string(&record).unwrap()).unwrap();
        assert_eq!(StallRecord::read(&file).unwrap(), record);
        std::fs::write(&file, r#"{"kind":"other","threshold_us":2,"duration_s":1,"read_us":0.1,"cores":[]}"#).unwrap();
        let e = StallRecord::read(&file).unwrap_err();
        assert!(e.contains("kind `other`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_summary_counts_rate_and_share() {
        let core = CoreStalls { core: 1, stalls_us: vec![10.0, 20.0, 30.0, 1000.0] };
        let line = summary(&core, 2.0);
        assert!(line.contains("2 stalls/s"), "{line}");
        // 1060 µs of 2 s: 0.05%.
        assert!(line.contains("0.05% of the time"), "{line}");
        assert!(line.contains("max 1000.0"), "{line}");
    }
}
