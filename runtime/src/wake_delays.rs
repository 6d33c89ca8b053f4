//! How long a told worker takes to wake: from the scheduler sending a node's
//! `RunBatch` to a worker of the node receiving it, per node, as a histogram
//! of log-spaced buckets (eight a doubling, so a bucket spans at most 12.5%
//! of its lower bound).
//!
//! Each wake-up is counted in one of two classes, by what the scheduler saw
//! when it told the worker: *contended* when at least as many workers of the
//! pipeline were busy (running a batch, or told to) as the process may use
//! cores, so the woken thread may have to wait for a core; *free* otherwise.
//! A worker spinning for work (`idle_spin_us`) wakes in well under a
//! microsecond; a parked one pays the OS's wake-up, and, contended, may wait
//! for a running thread's time slice. `baton simulate --wake-delays` draws
//! its workers' wake-ups from these counts.
//!
//! Concurrency: a worker adds one to one bucket per batch (a relaxed atomic
//! `fetch_add`; a node's workers share the buckets); readers copy the
//! buckets without stopping anyone, so a copy taken while workers record may
//! hold some of a batch's wake-ups and not others, never a torn count.

use crate::log_buckets::{quantile_ns, record, since, AtomicCounts, Buckets};

/// A node's wake-ups as the workers record them (see the module docs).
#[derive(Default)]
pub(crate) struct WakeRecorder {
    free: AtomicCounts,
    contended: AtomicCounts,
}

impl WakeRecorder {
    /// Counts one wake-up that took `ns`, in its class.
    pub fn record(&self, ns: u64, contended: bool) {
        if contended { &self.contended } else { &self.free }.record(ns);
    }

    /// The counts so far.
    pub fn snapshot(&self) -> WakeDelays {
        WakeDelays { free: self.free.snapshot(), contended: self.contended.snapshot() }
    }
}

/// A node's wake-ups by bucket (see [`crate::log_buckets::bucket_lower_ns`]), in the two classes
/// of the module docs. Either vector is empty or holds [`crate::log_buckets::BUCKETS`] counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeDelays {
    pub free: Vec<u64>,
    pub contended: Vec<u64>,
}

impl WakeDelays {
    /// The wake-ups counted since `earlier` (a snapshot of the same node).
    pub fn since(&self, earlier: &WakeDelays) -> WakeDelays {
        WakeDelays { free: since(&self.free, &earlier.free), contended: since(&self.contended, &earlier.contended) }
    }

    /// Counts one wake-up that took `ns`, in its class (the single-threaded record, as a
    /// simulation keeps it).
    pub fn record(&mut self, ns: u64, contended: bool) {
        record(if contended { &mut self.contended } else { &mut self.free }, ns);
    }

    /// Wake-ups in both classes.
    pub fn count(&self) -> u64 {
        self.free.iter().chain(&self.contended).sum()
    }

    /// The class's non-empty buckets.
    pub fn buckets(counts: &[u64]) -> Buckets {
        crate::log_buckets::sparse(counts)
    }

    /// The `q` quantile (0..=1) of both classes together, as its bucket's lower bound, ns
    /// (`None` without wake-ups).
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        quantile_ns(&[&self.free, &self.contended], q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_buckets::{bucket, bucket_lower_ns};

    #[test]
    fn wake_ups_are_counted_by_class_and_read_back_as_differences_and_quantiles() {
        let recorder = WakeRecorder::default();
        recorder.record(1000, false);
        let start = recorder.snapshot();
        for _ in 0..98 {
            recorder.record(2000, false);
        }
        recorder.record(5_000_000, true);
        recorder.record(6_000_000, true);
        let window = recorder.snapshot().since(&start);
        assert_eq!(window.count(), 100, "the wake-up before the window is not in it");
        assert_eq!(WakeDelays::buckets(&window.free), vec![(1920, 2048, 98)]);
        let contended = WakeDelays::buckets(&window.contended);
        assert_eq!(contended.iter().map(|b| b.2).sum::<u64>(), 2);
        assert!(contended.iter().all(|&(lo, hi, _)| lo >= 4_000_000 && hi <= 6_291_456));
        assert_eq!(window.quantile_ns(0.5), Some(1920));
        assert_eq!(window.quantile_ns(0.99), Some(bucket_lower_ns(bucket(5_000_000))));
        assert_eq!(WakeDelays::default().quantile_ns(0.5), None);
        let mut kept = WakeDelays::default();
        kept.record(2000, false);
        kept.record(5_000_000, true);
        assert_eq!(kept.since(&WakeDelays::default()), kept, "an empty start subtracts nothing");
        assert_eq!((WakeDelays::buckets(&kept.free), kept.count()), (vec![(1920, 2048, 1)], 2));
    }
}
