//! Per-node executions by batch size (rows per executed batch): how many
//! batches of each size a node ran, their compute time and the longest one, for statistics
//! endpoints that report per batch size (Triton's `batch_stats`), and each size's
//! compute times as a histogram ([`crate::log_buckets`]: how far batches stretch
//! while they run, which `baton simulate --batch-times` draws from).
//!
//! Concurrency: a node's workers record into one shared table under a mutex,
//! taken once per executed batch (after the batch ran, never while running
//! one); readers take a copy under the same mutex.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::log_buckets::{bucket, sparse, Buckets, BUCKETS};

/// Executed batches of one size at one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchSizeStats {
    /// Rows per batch.
    pub batch_size: usize,
    /// Batches of this size run.
    pub executions: u64,
    /// Their summed compute time (stitching and running the stages), ns.
    pub compute_ns: u64,
    /// The largest compute time of one of them, ns.
    pub max_ns: u64,
}

impl BatchSizeStats {
    /// The stats of one row of a table by batch size: (executions, compute ns, largest ns).
    pub fn of_row(batch_size: usize, (executions, compute_ns, max_ns): (u64, u64, u64)) -> Self {
        BatchSizeStats { batch_size, executions, compute_ns, max_ns }
    }
}

/// The compute times of one node's batches of one size, by bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchTimes {
    /// Rows per batch.
    pub batch_size: usize,
    /// Non-empty buckets of compute time, `(lower ns, upper ns, batches)`.
    pub buckets: Buckets,
}

/// One size's running row: (executions, compute ns, largest ns) and its compute-time counts.
#[derive(Default)]
struct SizeRow {
    totals: (u64, u64, u64),
    times: Vec<u64>,
}

/// The running table of one node.
#[derive(Default)]
pub(crate) struct BatchSizes(Mutex<BTreeMap<usize, SizeRow>>);

impl BatchSizes {
    /// Records one executed batch of `rows` rows that took `compute`.
    pub fn record(&self, rows: usize, compute: Duration) {
        let mut table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let row = table.entry(rows).or_default();
        let ns = compute.as_nanos().min(u64::MAX as u128) as u64;
        row.totals.0 += 1;
        row.totals.1 += ns;
        row.totals.2 = row.totals.2.max(ns);
        if row.times.is_empty() {
            row.times.resize(BUCKETS, 0);
        }
        row.times[bucket(ns)] += 1;
    }

    /// The table so far, by increasing batch size.
    pub fn snapshot(&self) -> Vec<BatchSizeStats> {
        let table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        table.iter().map(|(&batch_size, row)| BatchSizeStats::of_row(batch_size, row.totals)).collect()
    }

    /// Each size's compute times so far, by increasing batch size.
    pub fn times(&self) -> Vec<BatchTimes> {
        let table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        table.iter().map(|(&batch_size, row)| BatchTimes { batch_size, buckets: sparse(&row.times) }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_counted_by_size_and_the_largest_time_kept() {
        let sizes = BatchSizes::default();
        sizes.record(4, Duration::from_nanos(100));
        sizes.record(1, Duration::from_nanos(7));
        sizes.record(4, Duration::from_nanos(50));
        assert_eq!(
            sizes.snapshot(),
            vec![
                BatchSizeStats { batch_size: 1, executions: 1, compute_ns: 7, max_ns: 7 },
                BatchSizeStats { batch_size: 4, executions: 2, compute_ns: 150, max_ns: 100 },
            ]
        );
        let times = sizes.times();
        assert_eq!(times[0], BatchTimes { batch_size: 1, buckets: vec![(7, 8, 1)] });
        assert_eq!(times[1], BatchTimes { batch_size: 4, buckets: vec![(48, 52, 1), (96, 104, 1)] });
    }
}
