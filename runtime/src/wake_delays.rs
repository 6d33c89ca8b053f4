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

use std::sync::atomic::{AtomicU64, Ordering};

/// Buckets per doubling (as a power of two).
const SUB_BITS: u32 = 3;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets in all: every `u64` of nanoseconds has one.
pub const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// The bucket holding `ns`: exact below `SUB` ns, then `SUB` buckets a doubling.
pub fn bucket(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let exponent = 63 - ns.leading_zeros(); // >= SUB_BITS
    let mantissa = (ns >> (exponent - SUB_BITS)) & (SUB - 1);
    ((exponent - SUB_BITS + 1) as u64 * SUB + mantissa) as usize
}

/// The smallest value of bucket `i` (ns); bucket `i` holds `[lower(i), lower(i + 1))`.
pub fn bucket_lower_ns(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let exponent = i / SUB - 1 + SUB_BITS as u64;
    let mantissa = i % SUB;
    (SUB | mantissa) << (exponent - SUB_BITS as u64)
}

/// The bound above bucket `i` (ns, exclusive; `u64::MAX` for the last).
pub fn bucket_upper_ns(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        bucket_lower_ns(i + 1)
    }
}

/// A node's wake-ups as the workers record them (see the module docs).
pub(crate) struct WakeRecorder {
    free: Box<[AtomicU64]>,
    contended: Box<[AtomicU64]>,
}

impl Default for WakeRecorder {
    fn default() -> Self {
        let buckets = || (0..BUCKETS).map(|_| AtomicU64::new(0)).collect();
        WakeRecorder { free: buckets(), contended: buckets() }
    }
}

impl WakeRecorder {
    /// Counts one wake-up that took `ns`, in its class.
    pub fn record(&self, ns: u64, contended: bool) {
        let buckets = if contended { &self.contended } else { &self.free };
        buckets[bucket(ns)].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn snapshot(&self) -> WakeDelays {
        let copy = |b: &[AtomicU64]| b.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        WakeDelays { free: copy(&self.free), contended: copy(&self.contended) }
    }
}

/// A node's wake-ups by bucket (see [`bucket_lower_ns`]), in the two classes
/// of the module docs. Either vector is empty or holds [`BUCKETS`] counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeDelays {
    pub free: Vec<u64>,
    pub contended: Vec<u64>,
}

/// One class's counts as (lower ns, upper ns, count) of its non-empty buckets, by increasing delay.
pub type WakeBuckets = Vec<(u64, u64, u64)>;

impl WakeDelays {
    /// The wake-ups counted since `earlier` (a snapshot of the same node).
    pub fn since(&self, earlier: &WakeDelays) -> WakeDelays {
        let minus = |now: &[u64], then: &[u64]| -> Vec<u64> {
            now.iter().enumerate().map(|(i, &c)| c.saturating_sub(then.get(i).copied().unwrap_or(0))).collect()
        };
        WakeDelays { free: minus(&self.free, &earlier.free), contended: minus(&self.contended, &earlier.contended) }
    }

    /// Counts one wake-up that took `ns`, in its class (the single-threaded record, as a
    /// simulation keeps it).
    pub fn record(&mut self, ns: u64, contended: bool) {
        let counts = if contended { &mut self.contended } else { &mut self.free };
        if counts.is_empty() {
            counts.resize(BUCKETS, 0);
        }
        counts[bucket(ns)] += 1;
    }

    /// Wake-ups in both classes.
    pub fn count(&self) -> u64 {
        self.free.iter().chain(&self.contended).sum()
    }

    /// The class's non-empty buckets.
    pub fn buckets(counts: &[u64]) -> WakeBuckets {
        counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (bucket_lower_ns(i), bucket_upper_ns(i), c))
            .collect()
    }

    /// The `q` quantile (0..=1) of both classes together, as its bucket's lower bound, ns
    /// (`None` without wake-ups).
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for i in 0..BUCKETS {
            seen += self.free.get(i).copied().unwrap_or(0) + self.contended.get(i).copied().unwrap_or(0);
            if seen >= rank {
                return Some(bucket_lower_ns(i));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_the_bucket_whose_bounds_hold_it() {
        let mut values: Vec<u64> = (0..2000).collect();
        values.extend([4095, 4096, 4097, 1_000_000, 123_456_789, u64::MAX / 3, u64::MAX - 1, u64::MAX]);
        for v in values {
            let i = bucket(v);
            assert!(i < BUCKETS, "{v} -> bucket {i}");
            assert!(bucket_lower_ns(i) <= v, "{v}: lower bound {} of bucket {i}", bucket_lower_ns(i));
            assert!(v < bucket_upper_ns(i) || i == BUCKETS - 1, "{v}: upper bound {}", bucket_upper_ns(i));
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn buckets_are_exact_below_eight_and_an_eighth_of_a_doubling_wide_above() {
        assert_eq!((0..8).map(bucket).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!((bucket_lower_ns(bucket(1000)), bucket_upper_ns(bucket(1000))), (960, 1024));
        for i in 8..BUCKETS - 1 {
            let (lo, hi) = (bucket_lower_ns(i), bucket_upper_ns(i));
            assert!(hi > lo && (hi - lo) * 8 <= lo, "bucket {i}: [{lo}, {hi})");
        }
    }

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
