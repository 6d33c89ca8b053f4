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
//! hypervisor's halts, deep C-states) are not in the record. How busy a core
//! is changes what it meets: a virtual core that never idles may lose whole
//! slices of the host (10 ms here) that one busy part of the time does not.
//! With a duty below 1 ([`Watch::duty`]) each thread spins in bursts of
//! [`BURST`] and sleeps between them, as a runtime at part load does, and the
//! record's rate is per second spun.
//!
//! Each thread also reads its own CPU clock over its spinning and across each stall: a
//! stall the clock counted as the thread's CPU time (a hypervisor's exit, which the guest
//! does not see) is already in every CPU time the runtime measures, batches and profiles
//! alike, where a stall the guest saw or accounted apart (another thread, an interrupt,
//! the host running another guest on the core, which the guest counts as stolen) is not
//! ([`CoreStalls::counted_share`], [`CoreStalls::uncounted_parts_us`]). The thread reads
//! the monotonic clock, then its CPU clock, on each turn of its loop; a stall may fall in
//! either read, so the CPU time across a stall is read from the CPU read before the
//! stall's first monotonic read to the one after its second: a window one turn wider than
//! the stall (a fraction of a µs), never narrower.
//!
//! After the watch two threads pinned to the first core spin side by side for
//! [`SLICE_WATCH`]: each one's gaps are the other's turns on the core, and their median
//! is the OS's time slice, the record's `slice_us`, which `baton simulate --slice-us`
//! takes (here the kernel's tick, 4 ms at 250 Hz).
//!
//! After its watch each thread also times [`SLEEPS`] timed sleeps of 50-300 µs
//! at a timer slack of 1 ns (as `baton bench`'s load generator sleeps until
//! its next send is due): how late each woke is the record's
//! `sleep_lateness_us`, which `baton simulate --send-wake-us` takes.

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
    /// How late each timed sleep on the core woke, µs (none in records made before them).
    #[serde(default)]
    pub sleep_lateness_us: Vec<f64>,
    /// How long this core's thread spun, µs, and its CPU clock over that time (None in
    /// records made before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spun_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spun_cpu_us: Option<f64>,
    /// The thread's CPU clock across each stall, µs, in `stalls_us`'s order (empty in
    /// records made before them, and where the clock could not be read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls_cpu_us: Vec<f64>,
}

impl CoreStalls {
    /// The share of the stalled time the watching thread's CPU clock counted as its own, in
    /// [0, 1]: with the clock read across each stall, the stalls' counted time over their
    /// length; else what its CPU time exceeds its time spun less the stalls by, over the
    /// stalls. None without the clock's reading or without stalls.
    pub fn counted_share(&self) -> Option<f64> {
        self.counted_share_of(|_| true)
    }

    /// [`Self::counted_share`] of the stalls `pick` takes by their length (µs), with the
    /// clock read across each stall; None without those readings or such stalls.
    pub fn counted_share_where(&self, pick: impl Fn(f64) -> bool) -> Option<f64> {
        self.has_stall_clocks().then(|| self.counted_share_of(pick)).flatten()
    }

    fn counted_share_of(&self, pick: impl Fn(f64) -> bool) -> Option<f64> {
        let stalled: f64 = self.stalls_us.iter().copied().filter(|&s| pick(s)).sum();
        if self.has_stall_clocks() {
            let counted: f64 =
                self.stalls_us.iter().zip(&self.stalls_cpu_us).filter(|(&s, _)| pick(s)).map(|(&s, &c)| c.min(s)).sum();
            return (stalled > 0.0).then(|| counted / stalled);
        }
        let (spun, cpu) = (self.spun_us?, self.spun_cpu_us?);
        (stalled > 0.0).then(|| ((cpu - (spun - stalled)) / stalled).clamp(0.0, 1.0))
    }

    /// Whether the record holds the CPU clock across each of this core's stalls.
    pub fn has_stall_clocks(&self) -> bool {
        !self.stalls_us.is_empty() && self.stalls_cpu_us.len() == self.stalls_us.len()
    }

    /// Each stall's part the thread's CPU clock did not count, µs, in order, the stalls it
    /// counted whole left out; None without the clock read across each stall.
    pub fn uncounted_parts_us(&self) -> Option<Vec<f64>> {
        self.has_stall_clocks().then(|| {
            self.stalls_us.iter().zip(&self.stalls_cpu_us).map(|(s, c)| s - c).filter(|&part| part > 0.0).collect()
        })
    }
}

/// One spinning burst's length at a duty below 1.
pub const BURST: Duration = Duration::from_micros(500);

/// Timed sleeps each watching thread makes after its watch.
pub const SLEEPS: usize = 1000;

/// How the cores are watched.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    /// How long, wall time.
    pub duration: Duration,
    /// A gap between two clock reads longer than this is a stall.
    pub threshold: Duration,
    /// The share of the time each thread spins, in (0, 1]: at 1 all the time, below 1 in
    /// bursts of [`BURST`] with sleeps between them.
    pub duty: f64,
}

/// A `baton stalls` record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StallRecord {
    /// Always [`KIND`].
    pub kind: String,
    /// A gap between two clock reads counts as a stall above this, µs.
    pub threshold_us: f64,
    /// How long each core was watched (spun), s: the stalls' rate is per second of it.
    pub duration_s: f64,
    /// The share of the time the watching threads spun (1: all of it).
    #[serde(default = "whole_time")]
    pub duty: f64,
    /// The shortest gap between two reads seen on any core (the clock's own cost), µs.
    pub read_us: f64,
    pub cores: Vec<CoreStalls>,
    /// The OS's time slice, µs: how long a thread spinning beside another on one core waits
    /// for its turn, the median (None in records made before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_us: Option<f64>,
}

fn whole_time() -> f64 {
    1.0
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
        if let Some(c) = record.cores.iter().find(|c| !c.stalls_cpu_us.is_empty() && !c.has_stall_clocks()) {
            return Err(format!(
                "{at}: core {}: {} CPU clock readings (`stalls_cpu_us`) for {} stalls",
                c.core,
                c.stalls_cpu_us.len(),
                c.stalls_us.len()
            ));
        }
        if let Some(c) = record.cores.iter().find(|c| c.stalls_cpu_us.iter().any(|s| !(s.is_finite() && *s >= 0.0))) {
            return Err(format!("{at}: core {}: a stall's CPU time that is not a non-negative number of µs", c.core));
        }
        if let Some(slice) = record.slice_us.filter(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(format!("{at}: slice_us must be a positive number of µs, not {slice}"));
        }
        Ok(record)
    }
}

/// Watches every core of `cores` at once, as `how` says.
pub fn measure(cores: &[usize], how: Watch) -> Result<StallRecord, String> {
    if cores.is_empty() {
        return Err("no cores to watch".into());
    }
    if !(how.duty > 0.0 && how.duty <= 1.0) {
        return Err(format!("the duty must be in (0, 1], not {}", how.duty));
    }
    let start = Arc::new(Barrier::new(cores.len()));
    let watchers: Vec<_> = cores
        .iter()
        .map(|&core| {
            let start = start.clone();
            std::thread::spawn(move || {
                let pinned = core_affinity::set_for_current(core_affinity::CoreId { id: core });
                start.wait();
                let seen = watch(how);
                (pinned, seen, sleep_lateness(SLEEPS))
            })
        })
        .collect();
    let mut record = StallRecord {
        kind: KIND.into(),
        threshold_us: how.threshold.as_secs_f64() * 1e6,
        duration_s: 0.0,
        duty: how.duty,
        read_us: f64::INFINITY,
        cores: Vec::new(),
        slice_us: None,
    };
    for (&core, watcher) in cores.iter().zip(watchers) {
        let (pinned, seen, lateness) = watcher.join().map_err(|_| format!("core {core}: the watcher panicked"))?;
        if !pinned {
            return Err(format!("core {core}: could not pin a thread to it"));
        }
        record.read_us = record.read_us.min(seen.shortest_ns as f64 / 1e3);
        record.duration_s += seen.spun.as_secs_f64() / cores.len() as f64;
        let us = |ns: &u64| *ns as f64 / 1e3;
        record.cores.push(CoreStalls {
            core,
            stalls_us: seen.stalls_ns.iter().map(us).collect(),
            sleep_lateness_us: lateness,
            spun_us: Some(seen.spun.as_nanos() as f64 / 1e3),
            spun_cpu_us: seen.cpu_ns.map(|ns| ns as f64 / 1e3),
            stalls_cpu_us: seen.stalls_cpu_ns.as_ref().map_or(Vec::new(), |cpu| cpu.iter().map(us).collect()),
        });
    }
    record.slice_us = measure_slice(cores[0])?;
    Ok(record)
}

/// How long the two threads of [`measure_slice`] spin side by side.
pub const SLICE_WATCH: Duration = Duration::from_millis(300);
/// A gap this long or longer in a spinning thread's clock reads is the other thread's turn.
const TURN_GAP: Duration = Duration::from_micros(200);

/// The OS's time slice on `core`, µs: two threads pinned there spin for [`SLICE_WATCH`],
/// each timing its gaps of [`TURN_GAP`] or more (the other's turns); the median of them
/// all. None where no turn was seen (the OS ran both at once: not one core).
pub fn measure_slice(core: usize) -> Result<Option<f64>, String> {
    let start = Arc::new(Barrier::new(2));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                let pinned = core_affinity::set_for_current(core_affinity::CoreId { id: core });
                start.wait();
                let begin = Instant::now();
                let mut last = begin;
                let mut turns = Vec::new();
                while last - begin < SLICE_WATCH {
                    let now = Instant::now();
                    if now - last >= TURN_GAP {
                        turns.push((now - last).as_nanos() as f64 / 1e3);
                    }
                    last = now;
                }
                (pinned, turns)
            })
        })
        .collect();
    let mut turns = Vec::new();
    for spinner in spinners {
        let (pinned, seen) = spinner.join().map_err(|_| format!("core {core}: a slice spinner panicked"))?;
        if !pinned {
            return Err(format!("core {core}: could not pin a thread to it"));
        }
        turns.extend(seen);
    }
    turns.sort_by(f64::total_cmp);
    Ok(turns.get(turns.len() / 2).copied())
}

/// What one watching thread saw.
struct Seen {
    /// Every gap between two clock reads above the threshold, ns.
    stalls_ns: Vec<u64>,
    /// The shortest gap.
    shortest_ns: u64,
    /// The time it spun.
    spun: Duration,
    /// Its CPU clock over the time it spun, ns (None where the clock cannot be read).
    cpu_ns: Option<u64>,
    /// Its CPU clock across each stall, ns, in `stalls_ns`'s order (None where the clock
    /// could not be read).
    stalls_cpu_ns: Option<Vec<u64>>,
}

/// Spins as `how` says (bursts and sleeps at a duty below 1); gaps count within the bursts only.
fn watch(how: Watch) -> Seen {
    let threshold = how.threshold.as_nanos() as u64;
    let burst = if how.duty < 1.0 { BURST } else { how.duration };
    let rest = burst.mul_f64(1.0 / how.duty - 1.0);
    let mut seen = Seen {
        stalls_ns: Vec::with_capacity(1 << 16),
        shortest_ns: u64::MAX,
        spun: Duration::ZERO,
        cpu_ns: Some(0),
        stalls_cpu_ns: Some(Vec::with_capacity(1 << 16)),
    };
    let start = Instant::now();
    loop {
        let burst_start = Instant::now();
        // Read after the burst's start: a wait for the core in this read is a gap the
        // watch sees, not time lost from the burst.
        let cpu_start = baton::batch_cpu::thread_cpu_ns();
        let mut last = burst_start;
        // The CPU clock's last two reads: a gap between two monotonic reads lies between
        // the CPU read before the first of them and the one after the second.
        let (mut cpu_before_last, mut cpu_last) = (cpu_start, cpu_start);
        loop {
            let now = Instant::now();
            let cpu = baton::batch_cpu::thread_cpu_ns();
            let gap = (now - last).as_nanos() as u64;
            last = now;
            seen.shortest_ns = seen.shortest_ns.min(gap);
            if gap > threshold {
                seen.stalls_ns.push(gap);
                let across = cpu.zip(cpu_before_last).map(|(after, before)| after.saturating_sub(before));
                seen.stalls_cpu_ns = seen.stalls_cpu_ns.take().zip(across).map(|(mut all, ns)| {
                    all.push(ns);
                    all
                });
            }
            (cpu_before_last, cpu_last) = (cpu_last, cpu);
            if now - burst_start >= burst || now - start >= how.duration {
                break;
            }
        }
        seen.spun += last - burst_start;
        let burst_cpu = cpu_start.zip(baton::batch_cpu::thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a));
        seen.cpu_ns = seen.cpu_ns.zip(burst_cpu).map(|(total, burst)| total + burst);
        if last - start >= how.duration {
            return seen;
        }
        std::thread::sleep(rest);
    }
}

/// Sleeps `count` times for 50-300 µs (a fixed sequence) at a timer slack of 1 ns: how late
/// each woke, µs.
fn sleep_lateness(count: usize) -> Vec<f64> {
    // SAFETY: PR_SET_TIMERSLACK changes only the calling thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let asked = Duration::from_micros(50 + (state >> 33) % 250);
            let start = Instant::now();
            std::thread::sleep(asked);
            start.elapsed().saturating_sub(asked).as_nanos() as f64 / 1e3
        })
        .collect()
}

/// The summary line gives the counted share of the stalls this long and longer apart, µs.
pub const LONG_STALL_US: f64 = 100.0;

/// One core's summary line: stalls per second, the share of the time they took, quantiles.
pub fn summary(core: &CoreStalls, duration_s: f64) -> String {
    let mut s = core.stalls_us.clone();
    s.sort_by(f64::total_cmp);
    let q = |p: f64| if s.is_empty() { 0.0 } else { s[((s.len() - 1) as f64 * p).round() as usize] };
    let total: f64 = s.iter().sum();
    let mut counted = core
        .counted_share()
        .map_or(String::new(), |c| format!("; {:.0}% of the stalled time counted as the thread's CPU time", c * 100.0));
    if let Some(long) = core.counted_share_where(|us| us >= LONG_STALL_US) {
        counted += &format!(", {:.0}% of the stalls of {LONG_STALL_US} µs and longer", long * 100.0);
    }
    format!(
        "core {:>3}: {:>7.0} stalls/s, {:>5.2}% of the time; µs p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1}{counted}",
        core.core,
        s.len() as f64 / duration_s,
        total / (duration_s * 1e6) * 100.0,
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    )
}

/// One core's timed sleeps: how late they woke, mean and quantiles.
pub fn sleep_summary(core: &CoreStalls) -> String {
    let mut s = core.sleep_lateness_us.clone();
    s.sort_by(f64::total_cmp);
    let q = |p: f64| if s.is_empty() { 0.0 } else { s[((s.len() - 1) as f64 * p).round() as usize] };
    let mean = if s.is_empty() { 0.0 } else { s.iter().sum::<f64>() / s.len() as f64 };
    format!(
        "core {:>3}: {} timed sleeps woke {:.1} µs late on average; p50 {:.1}, p99 {:.1}, max {:.1}",
        core.core,
        s.len(),
        mean,
        q(0.5),
        q(0.99),
        q(1.0)
    )
}

/// Runs `baton stalls`: measures, prints each core's summary and writes the record.
pub fn run(cores: Option<Vec<usize>>, how: Watch, out: &std::path::Path) -> ExitCode {
    let cores =
        cores.unwrap_or_else(|| core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect());
    let record = match measure(&cores, how) {
        Ok(record) => record,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for core in &record.cores {
        println!("{}", summary(core, record.duration_s));
    }
    for core in &record.cores {
        println!("{}", sleep_summary(core));
    }
    match record.slice_us {
        Some(us) => println!("time slice: {us:.0} µs (two threads spinning on core {})", cores[0]),
        None => println!("time slice: none seen (two threads pinned to core {} ran at once)", cores[0]),
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
        let how = Watch { duration: Duration::from_millis(20), threshold: Duration::from_micros(2), duty: 1.0 };
        let record = measure(&[core], how).unwrap();
        assert_eq!(record.cores.len(), 1);
        assert!(record.duration_s >= 0.019, "spun the whole time: {} s", record.duration_s);
        assert_eq!(record.cores[0].core, core);
        assert!(record.read_us < 2.0, "a clock read took {} µs", record.read_us);
        assert!(record.cores[0].stalls_us.iter().all(|&s| s > 2.0));
        let lateness = &record.cores[0].sleep_lateness_us;
        assert_eq!(lateness.len(), SLEEPS);
        assert!(lateness.iter().all(|&us| us >= 0.0 && us.is_finite()));
        let dir = baton_scratch::Scratch::new("stalls");
        let file = dir.join("stalls.json");
        std::fs::write(&file, serde_json::to_string(&record).unwrap()).unwrap();
        assert_eq!(StallRecord::read(&file).unwrap(), record);
        std::fs::write(&file, r#"{"kind":"other","threshold_us":2,"duration_s":1,"read_us":0.1,"cores":[]}"#).unwrap();
        let e = StallRecord::read(&file).unwrap_err();
        assert!(e.contains("kind `other`"), "{e}");
    }

    #[test]
    fn at_a_duty_below_one_the_record_counts_the_time_spun_and_no_sleep_as_a_stall() {
        let core = core_affinity::get_core_ids().unwrap()[0].id;
        let how = Watch { duration: Duration::from_millis(40), threshold: Duration::from_micros(2), duty: 0.25 };
        let record = measure(&[core], how).unwrap();
        assert_eq!(record.duty, 0.25);
        // Bursts of 500 µs with 1.5 ms sleeps between them: about 10 ms of the 40 spun.
        assert!(record.duration_s > 0.0 && record.duration_s < 0.035, "spun {} s", record.duration_s);
        let bursts = (0.04 / (BURST.as_secs_f64() * 4.0)).ceil() as usize;
        let sleeps_counted = record.cores[0].stalls_us.iter().filter(|&&us| us >= 1400.0).count();
        assert!(
            sleeps_counted < bursts / 2,
            "{sleeps_counted} gaps as long as a sleep: {:?}",
            record.cores[0].stalls_us
        );
        assert!(measure(&[core], Watch { duty: 0.0, ..how }).unwrap_err().contains("duty"));
    }

    #[test]
    fn the_summary_counts_rate_and_share() {
        let core = CoreStalls {
            core: 1,
            stalls_us: vec![10.0, 20.0, 30.0, 1000.0],
            sleep_lateness_us: vec![20.0, 40.0],
            spun_us: None,
            spun_cpu_us: None,
            stalls_cpu_us: vec![],
        };
        assert!(sleep_summary(&core).contains("2 timed sleeps woke 30.0 µs late"), "{}", sleep_summary(&core));
        let line = summary(&core, 2.0);
        assert!(line.contains("2 stalls/s"), "{line}");
        // 1060 µs of 2 s: 0.05%.
        assert!(line.contains("0.05% of the time"), "{line}");
        assert!(line.contains("max 1000.0"), "{line}");
        assert!(!line.contains("counted"), "no CPU clock read, no share: {line}");
    }

    #[test]
    fn the_counted_share_is_the_stalled_time_the_threads_cpu_clock_holds() {
        // 1 s spun with 100 ms of stalls: a CPU time of 1 s counted all of them, 0.9 s none,
        // 0.97 s 70%; a clock that read less than the time less the stalls counted none.
        let core = |cpu: f64| CoreStalls {
            core: 0,
            stalls_us: vec![40_000.0, 60_000.0],
            sleep_lateness_us: vec![],
            spun_us: Some(1e6),
            spun_cpu_us: Some(cpu),
            stalls_cpu_us: vec![],
        };
        assert_eq!(core(1e6).counted_share(), Some(1.0));
        assert_eq!(core(0.9e6).counted_share(), Some(0.0));
        assert!((core(0.97e6).counted_share().unwrap() - 0.7).abs() < 1e-9);
        assert_eq!(core(0.8e6).counted_share(), Some(0.0));
        assert!(summary(&core(1e6), 1.0).contains("100% of the stalled time counted"), "{}", summary(&core(1e6), 1.0));
        assert_eq!(CoreStalls { spun_cpu_us: None, ..core(1e6) }.counted_share(), None, "no clock read");
        assert_eq!(CoreStalls { stalls_us: vec![], ..core(1e6) }.counted_share(), None, "no stalls");
    }

    #[test]
    fn a_watch_reads_its_threads_cpu_clock_over_the_time_it_spun() {
        let core = core_affinity::get_core_ids().unwrap()[0].id;
        let how = Watch { duration: Duration::from_millis(20), threshold: Duration::from_micros(2), duty: 1.0 };
        let c = &measure(&[core], how).unwrap().cores[0];
        let (spun, cpu) = (c.spun_us.unwrap(), c.spun_cpu_us.unwrap());
        assert!(spun >= 19_000.0, "spun {spun} µs");
        // The thread's clock counts no more than the wall time it spun: the clock's reads
        // around the burst, and a stall that falls between them, add a few µs at most.
        assert!(cpu > 0.0 && cpu <= spun + 50.0, "cpu {cpu} µs of {spun} spun");
    }

    #[test]
    fn with_the_clock_read_across_each_stall_the_share_and_the_uncounted_parts_are_the_stalls_own() {
        // A short stall counted whole, a long one counted a tenth, a read that exceeds its
        // stall (the window is one turn wider) counted whole and no more.
        let core = CoreStalls {
            core: 0,
            stalls_us: vec![4.0, 1000.0, 3.0],
            sleep_lateness_us: vec![],
            spun_us: Some(1e6),
            spun_cpu_us: Some(1e6),
            stalls_cpu_us: vec![4.0, 100.0, 3.4],
        };
        assert!((core.counted_share().unwrap() - 107.0 / 1007.0).abs() < 1e-12, "the stalls' own, not the totals'");
        assert_eq!(core.counted_share_where(|us| us >= LONG_STALL_US), Some(0.1));
        assert_eq!(core.counted_share_where(|us| us > 5000.0), None, "no such stall");
        assert_eq!(core.uncounted_parts_us(), Some(vec![900.0]));
        let line = summary(&core, 1.0);
        assert!(line.contains("11% of the stalled time counted"), "{line}");
        assert!(line.contains("10% of the stalls of 100 µs and longer"), "{line}");
        let totals_only = CoreStalls { stalls_cpu_us: vec![], ..core.clone() };
        assert_eq!(totals_only.uncounted_parts_us(), None);
        assert_eq!(totals_only.counted_share(), Some(1.0), "from the totals");
        assert!(!summary(&totals_only, 1.0).contains("100 µs and longer"));
    }

    #[test]
    fn a_record_whose_cpu_readings_do_not_match_its_stalls_is_refused_naming_the_core() {
        let dir = baton_scratch::Scratch::new("stall-clocks");
        let file = dir.join("stalls.json");
        let with = |cpu: &str| {
            format!(
                r#"{{"kind":"{KIND}","threshold_us":2,"duration_s":1,"read_us":0.1,"cores":[{{"core":3,"stalls_us":[5.0,7.0],"stalls_cpu_us":{cpu}}}]}}"#
            )
        };
        std::fs::write(&file, with("[5.0]")).unwrap();
        let e = StallRecord::read(&file).unwrap_err();
        assert!(e.contains("core 3: 1 CPU clock readings (`stalls_cpu_us`) for 2 stalls"), "{e}");
        std::fs::write(&file, with("[5.0,-1.0]")).unwrap();
        let e = StallRecord::read(&file).unwrap_err();
        assert!(e.contains("core 3: a stall's CPU time"), "{e}");
        std::fs::write(&file, with("[5.0,1.0]")).unwrap();
        assert_eq!(StallRecord::read(&file).unwrap().cores[0].uncounted_parts_us(), Some(vec![6.0]));
    }

    #[test]
    fn a_watch_reads_its_threads_cpu_clock_across_each_stall() {
        let core = core_affinity::get_core_ids().unwrap()[0].id;
        let how = Watch { duration: Duration::from_millis(50), threshold: Duration::from_micros(2), duty: 1.0 };
        let c = &measure(&[core], how).unwrap().cores[0];
        assert_eq!(c.stalls_cpu_us.len(), c.stalls_us.len(), "one reading a stall");
        // The window is one turn of the loop wider than the stall: a few µs at most more.
        for (stall, cpu) in c.stalls_us.iter().zip(&c.stalls_cpu_us) {
            assert!(*cpu <= stall + 50.0, "{cpu} µs of CPU across a stall of {stall} µs");
        }
    }

    #[test]
    fn two_threads_on_one_core_take_turns_of_the_os_slice_and_a_record_refuses_a_bad_one() {
        let core = core_affinity::get_core_ids().unwrap()[0].id;
        let slice = measure_slice(core).unwrap().expect("two threads on one core take turns");
        // Whatever the kernel's slice, a turn is at least the gap that counts as one and
        // well under the watch.
        assert!(slice >= TURN_GAP.as_secs_f64() * 1e6 && slice < 100_000.0, "{slice} µs");
        let dir = baton_scratch::Scratch::new("stalls-slice");
        let how = Watch { duration: Duration::from_millis(20), threshold: Duration::from_micros(2), duty: 1.0 };
        let mut record = measure(&[core], how).unwrap();
        assert!(record.slice_us.is_some());
        record.slice_us = Some(-1.0);
        let file = dir.join("stalls.json");
        std::fs::write(&file, serde_json::to_string(&record).unwrap()).unwrap();
        let e = StallRecord::read(&file).unwrap_err();
        assert!(e.contains("slice_us") && e.contains("-1"), "{e}");
    }

    #[test]
    fn a_thread_that_takes_the_watched_core_makes_stalls_its_cpu_clock_does_not_count() {
        // A second thread pinned to the watched core runs for the whole watch: the OS shares
        // the core between the two in slices, and the watcher's clock counts none of the
        // other's slices.
        use std::sync::atomic::{AtomicBool, Ordering};
        let core = core_affinity::get_core_ids().unwrap()[0].id;
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(Barrier::new(2));
        let rival = {
            let (stop, started) = (stop.clone(), started.clone());
            std::thread::spawn(move || {
                assert!(core_affinity::set_for_current(core_affinity::CoreId { id: core }));
                started.wait();
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        started.wait();
        let how = Watch { duration: Duration::from_millis(200), threshold: Duration::from_micros(2), duty: 1.0 };
        let record = measure(&[core], how);
        stop.store(true, Ordering::Relaxed);
        rival.join().unwrap();
        let c = &record.unwrap().cores[0];
        let long: f64 = c.stalls_us.iter().filter(|&&us| us >= LONG_STALL_US).sum();
        assert!(long >= 20_000.0, "the rival's slices: {long} µs of long stalls in 200 ms");
        let share = c.counted_share_where(|us| us >= LONG_STALL_US).unwrap();
        assert!(share < 0.2, "the watcher's clock counted {share} of the rival's slices");
        let uncounted: f64 = c.uncounted_parts_us().unwrap().iter().sum();
        assert!(uncounted >= 0.8 * long, "{uncounted} µs uncounted of {long}");
    }
}
