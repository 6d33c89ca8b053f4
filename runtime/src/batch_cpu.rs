//! How much of a node's batch time its worker thread spent on a core.
//!
//! A batch's compute time (`NodeStats::compute_ns`) is wall time: where more
//! threads are runnable than there are cores it holds the time the worker
//! waited for its core as well as the time it ran. Every [`SAMPLE_EVERY`]-th
//! batch of each worker (its first included) also reads the thread's CPU
//! clock (`CLOCK_THREAD_CPUTIME_ID`) before and after, and the node adds up
//! the sampled batches' wall and CPU times. `cpu_ns / wall_ns` is then the
//! share of its batches' wall time the node's threads ran; the rest they
//! waited for a core (or, rarely, blocked). One clock read is a system call
//! (about 0.65 µs on the 2-vCPU VM of docs/simulate.md), so it is sampled,
//! not read for every batch: a few-µs batch would pay for it. A sampled
//! batch's wall time holds the first read (about 0.08 µs a batch on average
//! at one batch in eight). The thread's CPU clock does not count other threads: a stage whose
//! engine runs on a thread pool of its own (ONNX Runtime's intra-op threads
//! above one) is counted for the calling thread only.
//!
//! The counters are relaxed atomics, written by the node's workers and read
//! by snapshots: a snapshot may see one sample's wall time without its CPU
//! time, an error of one batch in many.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One batch in this many of each worker is sampled.
pub const SAMPLE_EVERY: u64 = 8;

/// The calling thread's CPU time, ns (None where the clock cannot be read).
pub fn thread_cpu_ns() -> Option<u64> {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// What `clock` reads now, ns (None where it cannot be read).
pub(crate) fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec for the call's duration.
    let ok = unsafe { libc::clock_gettime(clock, &mut t) } == 0;
    ok.then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

/// One thread's count of the spans it times (its batches, or its spins): every
/// [`SAMPLE_EVERY`]-th span, the first included, reads the thread's CPU clock.
#[derive(Default)]
pub(crate) struct Sampler {
    started: u64,
}

impl Sampler {
    /// A span starts: the thread's CPU time now where this span is sampled, else None.
    pub fn start(&mut self) -> Option<u64> {
        let sampled = self.started.is_multiple_of(SAMPLE_EVERY);
        self.started += 1;
        sampled.then(thread_cpu_ns).flatten()
    }

    /// The span that [`Sampler::start`] began at `start` ends: its CPU time, where sampled.
    pub fn end(start: Option<u64>) -> Option<u64> {
        start.and_then(|before| Some(thread_cpu_ns()?.saturating_sub(before)))
    }
}

/// A node's running sums of its sampled batches.
#[derive(Default)]
pub(crate) struct CpuSamples {
    batches: AtomicU64,
    wall_ns: AtomicU64,
    cpu_ns: AtomicU64,
}

impl CpuSamples {
    /// Adds one sampled batch: its wall time and its thread's CPU time.
    pub fn record(&self, wall: Duration, cpu_ns: u64) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.wall_ns.fetch_add(wall.as_nanos() as u64, Ordering::Relaxed);
        self.cpu_ns.fetch_add(cpu_ns, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> BatchCpu {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BatchCpu { batches: get(&self.batches), wall_ns: get(&self.wall_ns), cpu_ns: get(&self.cpu_ns) }
    }
}

/// A node's sampled batches (see the module docs): how many, their wall time and their
/// threads' CPU time, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchCpu {
    pub batches: u64,
    pub wall_ns: u64,
    pub cpu_ns: u64,
}

impl BatchCpu {
    /// What was sampled after `start` (an earlier reading of the same node).
    pub fn since(&self, start: &BatchCpu) -> BatchCpu {
        BatchCpu {
            batches: self.batches.saturating_sub(start.batches),
            wall_ns: self.wall_ns.saturating_sub(start.wall_ns),
            cpu_ns: self.cpu_ns.saturating_sub(start.cpu_ns),
        }
    }

    /// The share of the sampled batches' wall time their threads ran (None without any).
    pub fn cpu_per_wall(&self) -> Option<f64> {
        (self.wall_ns > 0).then(|| self.cpu_ns as f64 / self.wall_ns as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_reads_the_clock_for_the_first_span_and_every_eighth_after() {
        let mut s = Sampler::default();
        let read: Vec<bool> = (0..17).map(|_| s.start().is_some()).collect();
        let expected: Vec<bool> = (0..17).map(|k| k % 8 == 0).collect();
        assert_eq!(read, expected);
        assert_eq!(Sampler::end(None), None);
        assert!(Sampler::end(thread_cpu_ns()).is_some());
    }

    #[test]
    fn the_thread_clock_counts_this_threads_work_and_not_its_sleep() {
        let before = thread_cpu_ns().expect("Linux has a thread CPU clock");
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu_ns().unwrap() - before;
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let worked = thread_cpu_ns().unwrap() - before - slept;
        assert!(slept < 10_000_000, "a 20 ms sleep ran {slept} ns on the CPU");
        assert!(worked > slept, "20 ms of work ran {worked} ns, the sleep {slept} ns");
    }

    #[test]
    fn samples_add_up_and_a_later_reading_less_an_earlier_one_is_what_came_between() {
        let s = CpuSamples::default();
        s.record(Duration::from_micros(100), 60_000);
        let first = s.snapshot();
        s.record(Duration::from_micros(300), 240_000);
        let both = s.snapshot();
        assert_eq!(both, BatchCpu { batches: 2, wall_ns: 400_000, cpu_ns: 300_000 });
        assert_eq!(both.since(&first), BatchCpu { batches: 1, wall_ns: 300_000, cpu_ns: 240_000 });
        assert_eq!(both.cpu_per_wall(), Some(0.75));
        assert_eq!(BatchCpu::default().cpu_per_wall(), None);
    }
}
