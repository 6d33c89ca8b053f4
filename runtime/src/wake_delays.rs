//! How long a told worker takes to wake: from the scheduler sending a node's
//! `RunBatch` to a worker of the node receiving it, per node, as a histogram
//! of log-spaced buckets (eight a doubling, so a bucket spans at most 12.5%
//! of its lower bound).
//!
//! Each wake-up is counted in one of three classes ([`WakeClass`]). A worker
//! whose thread was at the real-time policy as it woke (`foreground_realtime`)
//! is *realtime*: it preempts any normal thread, so no core's time slice holds
//! it. The others by what the scheduler saw when it told the worker:
//! *contended* when at least as many workers of the pipeline were busy
//! (running a batch, or told to) as the process may use cores, so the woken
//! thread may have to wait for a core; *free* otherwise. A worker spinning for
//! work (`idle_spin_us`) wakes in well under a microsecond; a parked one pays
//! the OS's wake-up, and, contended, may wait for a running thread's time
//! slice. `baton simulate --wake-delays` draws its workers' wake-ups from these
//! counts. The scheduler thread's tick lateness uses the free and contended
//! classes alone.
//!
//! Concurrency: a worker adds one to one bucket per batch (a relaxed atomic
//! `fetch_add`; a node's workers share the buckets); readers copy the
//! buckets without stopping anyone, so a copy taken while workers record may
//! hold some of a batch's wake-ups and not others, never a torn count.

use crate::log_buckets::{quantile_ns, record, since, AtomicCounts, Buckets};

/// The class of one wake-up (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeClass {
    Free,
    Contended,
    Realtime,
}

impl WakeClass {
    /// The class of a wake-up at the real-time policy (`realtime`) or not, told while every
    /// core was taken (`contended`) or not.
    pub fn of(realtime: bool, contended: bool) -> WakeClass {
        if realtime {
            WakeClass::Realtime
        } else {
            WakeClass::normal(contended)
        }
    }

    /// A normal-policy wake-up: contended where every core was taken, else free.
    pub fn normal(contended: bool) -> WakeClass {
        if contended {
            WakeClass::Contended
        } else {
            WakeClass::Free
        }
    }
}

/// A node's wake-ups as the workers record them (see the module docs).
#[derive(Default)]
pub(crate) struct WakeRecorder {
    free: AtomicCounts,
    contended: AtomicCounts,
    realtime: AtomicCounts,
}

impl WakeRecorder {
    /// Counts one wake-up that took `ns`, in its class.
    pub fn record(&self, ns: u64, class: WakeClass) {
        match class {
            WakeClass::Free => &self.free,
            WakeClass::Contended => &self.contended,
            WakeClass::Realtime => &self.realtime,
        }
        .record(ns);
    }

    /// The counts so far.
    pub fn snapshot(&self) -> WakeDelays {
        WakeDelays {
            free: self.free.snapshot(),
            contended: self.contended.snapshot(),
            realtime: self.realtime.snapshot(),
        }
    }
}

/// A node's wake-ups by bucket (see [`crate::log_buckets::bucket_lower_ns`]), in the three classes
/// of the module docs. Each vector is empty or holds [`crate::log_buckets::BUCKETS`] counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeDelays {
    pub free: Vec<u64>,
    pub contended: Vec<u64>,
    pub realtime: Vec<u64>,
}

impl WakeDelays {
    /// The wake-ups counted since `earlier` (a snapshot of the same node).
    pub fn since(&self, earlier: &WakeDelays) -> WakeDelays {
        WakeDelays {
            free: since(&self.free, &earlier.free),
            contended: since(&self.contended, &earlier.contended),
            realtime: since(&self.realtime, &earlier.realtime),
        }
    }

    /// Counts one wake-up that took `ns`, in its class (the single-threaded record, as a
    /// simulation keeps it).
    pub fn record(&mut self, ns: u64, class: WakeClass) {
        let counts = match class {
            WakeClass::Free => &mut self.free,
            WakeClass::Contended => &mut self.contended,
            WakeClass::Realtime => &mut self.realtime,
        };
        record(counts, ns);
    }

    /// Wake-ups in every class.
    pub fn count(&self) -> u64 {
        self.free.iter().chain(&self.contended).chain(&self.realtime).sum()
    }

    /// The class's non-empty buckets.
    pub fn buckets(counts: &[u64]) -> Buckets {
        crate::log_buckets::sparse(counts)
    }

    /// The `q` quantile (0..=1) of every class together, as its bucket's lower bound, ns
    /// (`None` without wake-ups).
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        quantile_ns(&[&self.free, &self.contended, &self.realtime], q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_buckets::{bucket, bucket_lower_ns};

    #[test]
    fn wake_ups_are_counted_by_class_and_read_back_as_differences_and_quantiles() {
        let recorder = WakeRecorder::default();
        recorder.record(1000, WakeClass::Free);
        let start = recorder.snapshot();
        for _ in 0..98 {
            recorder.record(2000, WakeClass::Free);
        }
        recorder.record(5_000_000, WakeClass::Contended);
        recorder.record(6_000_000, WakeClass::Contended);
        recorder.record(3000, WakeClass::Realtime);
        let window = recorder.snapshot().since(&start);
        assert_eq!(window.count(), 101, "the wake-up before the window is not in it");
        assert_eq!(WakeDelays::buckets(&window.realtime).iter().map(|b| b.2).sum::<u64>(), 1, "its own class");
        assert_eq!(WakeDelays::buckets(&window.free), vec![(1920, 2048, 98)]);
        let contended = WakeDelays::buckets(&window.contended);
        assert_eq!(contended.iter().map(|b| b.2).sum::<u64>(), 2);
        assert!(contended.iter().all(|&(lo, hi, _)| lo >= 4_000_000 && hi <= 6_291_456));
        assert_eq!(window.quantile_ns(0.5), Some(1920));
        assert_eq!(window.quantile_ns(0.99), Some(bucket_lower_ns(bucket(5_000_000))));
        assert_eq!(WakeDelays::default().quantile_ns(0.5), None);
        let mut kept = WakeDelays::default();
        kept.record(2000, WakeClass::Free);
        kept.record(5_000_000, WakeClass::Contended);
        assert_eq!(kept.since(&WakeDelays::default()), kept, "an empty start subtracts nothing");
        assert_eq!((WakeDelays::buckets(&kept.free), kept.count()), (vec![(1920, 2048, 1)], 2));
    }
}
