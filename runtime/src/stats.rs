//! Per-node executions by batch size (rows per executed batch): how many
//! batches of each size a node ran, their compute time and the longest one, for statistics
//! endpoints that report per batch size (Triton's `batch_stats`).
//!
//! Concurrency: a node's workers record into one shared table under a mutex,
//! taken once per executed batch (after the batch ran, never while running
//! one); readers take a copy under the same mutex.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

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

/// The running table of one node.
#[derive(Default)]
pub(crate) struct BatchSizes(Mutex<BTreeMap<usize, (u64, u64, u64)>>);

impl BatchSizes {
    /// Records one executed batch of `rows` rows that took `compute`.
    pub fn record(&self, rows: usize, compute: Duration) {
        let mut table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let entry = table.entry(rows).or_default();
        let ns = compute.as_nanos() as u64;
        entry.0 += 1;
        entry.1 += ns;
        entry.2 = entry.2.max(ns);
    }

    /// The table so far, by increasing batch size.
    pub fn snapshot(&self) -> Vec<BatchSizeStats> {
        let table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        table.iter().map(|(&batch_size, &row)| BatchSizeStats::of_row(batch_size, row)).collect()
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
    }
}
