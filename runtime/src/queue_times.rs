//! How long a node's tasks waited in its buffer, per task, as two histograms of
//! log-spaced buckets ([`crate::log_buckets`]):
//!
//! - *waited*: from the task entering the buffer to its batch's start (what
//!   `NodeStats::queue_ns` sums);
//! - *picked*: the part of that before the scheduler told the node's worker
//!   to run the batch (waiting for a decision to pick the node: its turn under
//!   the budget, the rule's order, the next tick); the rest is the worker's
//!   wake-up ([`crate::wake_delays`]) and its taking the batch. A task that
//!   came after the word counts 0.
//!
//! Their tails say where a request's slow moments were spent: waiting to be
//! picked, or picked and waiting for the worker. `baton bench` reports each
//! node's quantiles, and `baton simulate` keeps the same record.
//!
//! Concurrency: a worker adds one to one bucket of each histogram per task it
//! runs (relaxed atomic `fetch_add`s; a node's workers share the buckets);
//! readers copy the buckets without stopping anyone, so a copy taken while
//! workers record may hold some of a batch's tasks and not others, never a
//! torn count.

use crate::log_buckets::{quantile_ns, record, since, AtomicCounts};

/// A node's queue times as its workers record them (see the module docs).
#[derive(Default)]
pub(crate) struct QueueRecorder {
    waited: AtomicCounts,
    picked: AtomicCounts,
}

impl QueueRecorder {
    /// Counts one task that waited `waited_ns` in the buffer, of which `told_for_ns`
    /// after the word to run its batch (the picked part is the rest).
    pub fn record(&self, waited_ns: u64, told_for_ns: u64) {
        self.waited.record(waited_ns);
        self.picked.record(waited_ns.saturating_sub(told_for_ns));
    }

    /// The counts so far.
    pub fn snapshot(&self) -> QueueTimes {
        QueueTimes { waited: self.waited.snapshot(), picked: self.picked.snapshot() }
    }
}

/// A node's queue times by bucket (see the module docs). Either vector is empty or holds
/// [`crate::log_buckets::BUCKETS`] counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueTimes {
    pub waited: Vec<u64>,
    pub picked: Vec<u64>,
}

impl QueueTimes {
    /// The tasks counted since `earlier` (a snapshot of the same node).
    pub fn since(&self, earlier: &QueueTimes) -> QueueTimes {
        QueueTimes { waited: since(&self.waited, &earlier.waited), picked: since(&self.picked, &earlier.picked) }
    }

    /// Counts one task as [`QueueRecorder::record`] does (the single-threaded record, as a
    /// simulation keeps it).
    pub fn record(&mut self, waited_ns: u64, told_for_ns: u64) {
        record(&mut self.waited, waited_ns);
        record(&mut self.picked, waited_ns.saturating_sub(told_for_ns));
    }

    /// The `q` quantile (0..=1) of the whole wait, as its bucket's lower bound, ns (`None`
    /// without tasks).
    pub fn waited_ns(&self, q: f64) -> Option<u64> {
        quantile_ns(&[&self.waited], q)
    }

    /// The `q` quantile of the wait to be picked, likewise.
    pub fn picked_ns(&self, q: f64) -> Option<u64> {
        quantile_ns(&[&self.picked], q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_buckets::{bucket, bucket_lower_ns};

    #[test]
    fn each_task_counts_its_whole_wait_and_the_part_before_the_word() {
        let recorder = QueueRecorder::default();
        recorder.record(9_000, 1_000);
        let start = recorder.snapshot();
        for _ in 0..98 {
            // Came after the word: picked at once.
            recorder.record(2_000, 5_000);
        }
        recorder.record(4_000_000, 3_000);
        recorder.record(5_000_000, 1_000_000);
        let window = recorder.snapshot().since(&start);
        assert_eq!(window.waited.iter().sum::<u64>(), 100, "the task before the window is not in it");
        assert_eq!(window.waited_ns(0.5), Some(bucket_lower_ns(bucket(2_000))));
        assert_eq!(window.picked_ns(0.5), Some(0));
        assert_eq!(window.waited_ns(0.99), Some(bucket_lower_ns(bucket(4_000_000))));
        assert_eq!(window.picked_ns(0.99), Some(bucket_lower_ns(bucket(3_997_000))));
        assert_eq!(window.picked_ns(1.0), Some(bucket_lower_ns(bucket(4_000_000))));
        assert_eq!(QueueTimes::default().waited_ns(0.5), None);

        let mut kept = QueueTimes::default();
        kept.record(9_000, 1_000);
        assert_eq!(kept, start, "the simulation's record counts as the workers' does");
    }
}
