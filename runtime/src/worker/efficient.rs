//! A worker's most efficient batch size (`efficient_batches = true`): the
//! cap on the rows it takes, chosen from its own batches' times.
//!
//! A node's cost per row is not always lowest at `max_batch`: on a CPU a
//! batch whose activations outgrow the caches costs more per row than a
//! smaller one. So the worker keeps, per size class
//! ([`NodeSpec::efficient_batch_classes`]: the powers of two up to its batch
//! rows, and the batch rows themselves), an average of the time per row of
//! its batches that had exactly that many rows, and takes at most the class
//! with the lowest.
//!
//! How it learns: a class's first batch is its shape's first run (ONNX
//! Runtime sets up its kernels and memory there) and does not count. While
//! some class has fewer than [`SAMPLES`] counted batches the
//! cap is that class (the smallest such first): a batch of fewer rows than
//! the cap (fewer tasks waited) teaches nothing and costs nothing. Then the
//! cap is the best class, and every [`EXPLORE_EVERY`]-th batch takes the
//! next class in turn instead, so a class whose cost changed since (the
//! machine's, another node's weights in the caches) is seen again. A class's
//! average is the plain mean of its first [`SAMPLES`] counted batches, then
//! exponential ([`WEIGHT`] for the newest batch), so it follows such changes.
//!
//! One worker owns its tracker: no sharing, no locks.

use std::time::Duration;

use crate::spec::NodeSpec;

/// Batches a class needs before its average counts.
pub const SAMPLES: u32 = 8;
/// Every this many batches, one batch takes the next class in turn.
pub const EXPLORE_EVERY: u64 = 64;
/// The newest batch's weight in its class's average.
pub const WEIGHT: f64 = 0.125;

/// One size class: its rows and what its batches cost per row.
#[derive(Clone, Debug)]
struct Class {
    rows: usize,
    /// Whether its first batch (its shape's first run, not counted) has run.
    warmed: bool,
    /// Its batches counted in its average.
    batches: u32,
    ns_per_row: f64,
}

/// The rows a worker takes into its next batch (see the module's docs).
#[derive(Clone, Debug)]
pub struct EfficientRows {
    classes: Vec<Class>,
    /// Batches the cap was given for.
    batches: u64,
    /// The class the next exploring batch takes.
    explore_next: usize,
}

impl EfficientRows {
    /// The classes for a worker that takes at most `max_rows` rows.
    pub fn new(max_rows: usize) -> EfficientRows {
        let classes = NodeSpec::efficient_batch_classes(max_rows)
            .into_iter()
            .map(|rows| Class { rows, warmed: false, batches: 0, ns_per_row: 0.0 })
            .collect();
        EfficientRows { classes, batches: 0, explore_next: 0 }
    }

    /// The most rows the next batch takes.
    pub fn cap(&mut self) -> usize {
        self.batches += 1;
        if let Some(learning) = self.classes.iter().find(|c| c.batches < SAMPLES) {
            return learning.rows;
        }
        if self.batches.is_multiple_of(EXPLORE_EVERY) {
            let class = &self.classes[self.explore_next % self.classes.len()];
            self.explore_next += 1;
            return class.rows;
        }
        self.best()
    }

    /// The class of the lowest time per row, of those that counted (the largest before any has).
    pub fn best(&self) -> usize {
        self.classes
            .iter()
            .filter(|c| c.batches >= SAMPLES)
            .min_by(|a, b| a.ns_per_row.total_cmp(&b.ns_per_row))
            .or(self.classes.last())
            .map_or(1, |c| c.rows)
    }

    /// A batch of `rows` rows took `compute`; only a class's exact size counts.
    pub fn record(&mut self, rows: usize, compute: Duration) {
        let Some(class) = self.classes.iter_mut().find(|c| c.rows == rows) else { return };
        if !std::mem::replace(&mut class.warmed, true) {
            return;
        }
        let per_row = compute.as_nanos() as f64 / rows as f64;
        let weight = if class.batches < SAMPLES { 1.0 / f64::from(class.batches + 1) } else { WEIGHT };
        class.ns_per_row += weight * (per_row - class.ns_per_row);
        class.batches = class.batches.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node whose batch of `rows` takes `fixed + per_row × rows` µs, and a cost step past 8 rows.
    fn cost(rows: usize) -> Duration {
        let per_row = if rows > 8 { 33.0 } else { 25.0 };
        Duration::from_nanos(((20.0 + per_row * rows as f64) * 1e3) as u64)
    }

    /// Runs `batches` batches with `waiting` rows always waiting, as a worker would; the first
    /// batch of each size takes 10 ms more (its shape's first run).
    fn run(e: &mut EfficientRows, batches: usize, waiting: usize) -> Vec<usize> {
        (0..batches)
            .map(|_| {
                let rows = e.cap().min(waiting);
                let first = e.classes.iter().any(|c| c.rows == rows && !c.warmed);
                e.record(rows, cost(rows) + if first { Duration::from_millis(10) } else { Duration::ZERO });
                rows
            })
            .collect()
    }

    #[test]
    fn the_classes_are_the_powers_of_two_below_the_rows_and_the_rows() {
        let rows = |e: &EfficientRows| e.classes.iter().map(|c| c.rows).collect::<Vec<_>>();
        assert_eq!(rows(&EfficientRows::new(32)), [1, 2, 4, 8, 16, 32]);
        assert_eq!(rows(&EfficientRows::new(24)), [1, 2, 4, 8, 16, 24]);
        assert_eq!(rows(&EfficientRows::new(1)), [1]);
    }

    #[test]
    fn a_full_buffer_learns_each_class_then_takes_the_cheapest_per_row() {
        let mut e = EfficientRows::new(32);
        let learning = run(&mut e, 6 * (SAMPLES as usize + 1), 64);
        let first = SAMPLES as usize + 1;
        assert_eq!(
            &learning[..first],
            [1; SAMPLES as usize + 1],
            "the smallest class first, its first run not counted"
        );
        assert_eq!(learning.last(), Some(&32));
        // 8 rows: 20 / 8 + 25 = 27.5 µs a row; 32 rows: 20 / 32 + 33 = 33.6.
        assert_eq!(e.best(), 8);
        let steady = run(&mut e, 640, 64);
        let at_best = steady.iter().filter(|&&r| r == 8).count();
        assert!(at_best >= 640 - 640 / EXPLORE_EVERY as usize, "{at_best} of 640 at 8 rows");
        assert!(steady.iter().any(|&r| r != 8), "a batch now and then explores another class");
    }

    #[test]
    fn batches_smaller_than_the_cap_teach_nothing_and_the_cap_never_holds_them_back() {
        let mut e = EfficientRows::new(32);
        // Three rows wait each time: every batch takes them all, learning or not.
        let rows = run(&mut e, 100, 3);
        assert!(rows[(SAMPLES as usize + 1) * 2..].iter().all(|&r| r == 3), "{rows:?}");
        // Classes 1 and 2 counted; 4 and up never ran at their size, so the cap stays 4 to learn it.
        assert_eq!(e.cap(), 4);
    }

    #[test]
    fn a_class_whose_cost_changes_is_followed() {
        let mut e = EfficientRows::new(16);
        run(&mut e, 200, 64);
        assert_eq!(e.best(), 8);
        // 16-row batches become cheap per row: each exploring batch moves the average.
        for _ in 0..2000 {
            let rows = e.cap();
            let compute = if rows == 16 { Duration::from_micros(200) } else { cost(rows) };
            e.record(rows, compute);
        }
        assert_eq!(e.best(), 16);
    }
}
