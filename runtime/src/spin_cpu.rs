//! How much CPU a node's idle workers spend spinning for their next batch.
//!
//! A worker without work spins `idle_spin_us` (trying its channel and yielding
//! its core between tries) before it parks. The spin is process CPU that is
//! neither a batch's compute nor the runtime's hand-offs, and it yields to any
//! other runnable thread, so a model of the cores that charged it like work
//! would slow batches it never slowed. Every worker counts its spins (a spin
//! starts when the worker finds its channel empty; one that finds an
//! instruction waiting is not a spin), and every
//! [`SAMPLE_EVERY`](crate::batch_cpu::SAMPLE_EVERY)-th spin of each worker (its
//! first included) reads the thread's CPU clock before and after. The node's
//! spin CPU is then the sampled spins' CPU × spins ÷ sampled spins. A sampled
//! spin that ends with an instruction reads the clock before taking it (about
//! 0.65 µs on the 2-vCPU VM, so 0.08 µs a spin on average), which the worker's
//! recorded wake-up holds.
//!
//! The counters are relaxed atomics, written by the node's workers and read by
//! snapshots: a snapshot may see a spin counted before its sample, an error of
//! one spin in many.

use std::sync::atomic::{AtomicU64, Ordering};

/// A node's running counts of its workers' spins.
#[derive(Default)]
pub(crate) struct SpinSamples {
    spins: AtomicU64,
    sampled: AtomicU64,
    cpu_ns: AtomicU64,
}

impl SpinSamples {
    /// Counts one spin, and its thread's CPU time where it was sampled.
    pub fn record(&self, sampled_cpu_ns: Option<u64>) {
        self.spins.fetch_add(1, Ordering::Relaxed);
        if let Some(ns) = sampled_cpu_ns {
            self.sampled.fetch_add(1, Ordering::Relaxed);
            self.cpu_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> SpinCpu {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SpinCpu { spins: get(&self.spins), sampled: get(&self.sampled), cpu_ns: get(&self.cpu_ns) }
    }
}

/// A node's spins (see the module docs): how many, how many were sampled, and the
/// sampled spins' CPU time, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpinCpu {
    pub spins: u64,
    pub sampled: u64,
    pub cpu_ns: u64,
}

impl SpinCpu {
    /// What was counted after `start` (an earlier reading of the same node).
    pub fn since(&self, start: &SpinCpu) -> SpinCpu {
        SpinCpu {
            spins: self.spins.saturating_sub(start.spins),
            sampled: self.sampled.saturating_sub(start.sampled),
            cpu_ns: self.cpu_ns.saturating_sub(start.cpu_ns),
        }
    }

    /// The CPU time of every spin, estimated from the sampled ones, ns (0 without samples).
    pub fn estimated_cpu_ns(&self) -> f64 {
        if self.sampled == 0 {
            return 0.0;
        }
        self.cpu_ns as f64 * self.spins as f64 / self.sampled as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_scales_the_sampled_spins_cpu_to_every_spin() {
        let s = SpinSamples::default();
        s.record(Some(3_000));
        for _ in 0..7 {
            s.record(None);
        }
        s.record(Some(5_000));
        let all = s.snapshot();
        assert_eq!(all, SpinCpu { spins: 9, sampled: 2, cpu_ns: 8_000 });
        assert_eq!(all.estimated_cpu_ns(), 36_000.0);
        let start = SpinCpu { spins: 1, sampled: 1, cpu_ns: 3_000 };
        assert_eq!(all.since(&start).estimated_cpu_ns(), 5_000.0 * 8.0);
        assert_eq!(SpinCpu::default().estimated_cpu_ns(), 0.0);
    }
}
