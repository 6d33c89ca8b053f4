//! Stopping a young batch for waiting priority work (`[scheduler] preempt_before`,
//! "Stopping young batches" in docs/scheduling.md).
//!
//! Each worker of a node whose batches may be stopped has a [`BatchSlot`]:
//! its engines' stop handles and a record of the batch it runs (when it
//! started, whether it holds a priority task, whether a stop was asked).
//!
//! ## Protocol
//! The slot's lock orders the worker's two steps against the scheduler's one:
//! - **The worker, before a run** ([`BatchSlot::begin`]): clears its engines'
//!   stop flags and records the batch.
//! - **The scheduler, deciding** ([`BatchSlot::stop_if_young`]): asks a stop
//!   only of a recorded batch that holds no priority task and has run less
//!   than the limit, marks it asked, and sets the engines' stop flags.
//! - **The worker, after the run** ([`BatchSlot::end`]): takes the record, so
//!   no later stop aims at this batch, and learns whether a stop was asked.
//!
//! A stop flag set for batch B is therefore either seen by B's run or left
//! over after B's record was taken, and cleared before the next batch runs:
//! it never stops a batch it was not aimed at. A run that ends well although
//! a stop was asked (it finished first) is answered as usual. A run that fails
//! after a stop was asked goes back to the buffer unanswered, its tasks at the
//! front of their queues ([`super::buffer::BatchBuffer::put_back`]), and the
//! node's priority task runs in the next batch.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::engine::RunStop;

/// One worker's stop handles and running batch (see the module docs).
#[derive(Default)]
pub(crate) struct BatchSlot {
    inner: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// The handles of every stage's engine; empty when some stage cannot be stopped.
    handles: Vec<Arc<dyn RunStop>>,
    running: Option<RunningBatch>,
}

#[derive(Clone, Copy)]
struct RunningBatch {
    /// When the batch began ([`crate::clock::now_ns`]).
    started_ns: u64,
    holds_priority: bool,
    stop_asked: bool,
}

impl BatchSlot {
    /// Registers the worker's engines' handles (once, after its engines exist).
    /// Every stage must have one, or the worker's batches are never stopped.
    pub fn register(&self, handles: Option<Vec<Arc<dyn RunStop>>>) {
        self.inner.lock().handles = handles.unwrap_or_default();
    }

    /// Whether the worker's batches can be stopped (every stage's engine gave a handle).
    pub fn stoppable(&self) -> bool {
        !self.inner.lock().handles.is_empty()
    }

    /// The worker is about to run a batch that began at `started_ns`.
    pub fn begin(&self, started_ns: u64, holds_priority: bool) {
        let mut slot = self.inner.lock();
        slot.handles.iter().for_each(|h| h.clear());
        slot.running = Some(RunningBatch { started_ns, holds_priority, stop_asked: false });
    }

    /// The worker's run ended; returns whether a stop was asked of it.
    pub fn end(&self) -> bool {
        self.inner.lock().running.take().is_some_and(|b| b.stop_asked)
    }

    /// Stops the running batch if it can be stopped, holds no priority task, no stop
    /// was asked of it yet, and it began less than `limit_ns` before `now_ns`.
    /// Returns whether it asked.
    pub fn stop_if_young(&self, now_ns: u64, limit_ns: u64) -> bool {
        let mut slot = self.inner.lock();
        let SlotState { handles, running } = &mut *slot;
        let Some(batch) = running.as_mut() else { return false };
        let old = now_ns.saturating_sub(batch.started_ns) >= limit_ns;
        if handles.is_empty() || batch.holds_priority || batch.stop_asked || old {
            return false;
        }
        batch.stop_asked = true;
        handles.iter().for_each(|h| h.stop());
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;

    #[derive(Default)]
    struct Flag {
        stopped: AtomicBool,
        clears: AtomicUsize,
    }

    impl RunStop for Flag {
        fn stop(&self) {
            self.stopped.store(true, Ordering::SeqCst);
        }
        fn clear(&self) {
            self.stopped.store(false, Ordering::SeqCst);
            self.clears.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn slot() -> (BatchSlot, Arc<Flag>) {
        let flag = Arc::new(Flag::default());
        let slot = BatchSlot::default();
        slot.register(Some(vec![flag.clone() as Arc<dyn RunStop>]));
        (slot, flag)
    }

    #[test]
    fn a_young_plain_batch_is_stopped_once_and_its_worker_learns_it() {
        let (slot, flag) = slot();
        slot.begin(1_000, false);
        assert!(!slot.stop_if_young(1_500, 500), "run 500 ns of a 500 ns limit: not young");
        assert!(slot.stop_if_young(1_499, 500));
        assert!(flag.stopped.load(Ordering::SeqCst));
        assert!(!slot.stop_if_young(1_499, 500), "a stop is asked once");
        assert!(slot.end());
        assert!(!slot.stop_if_young(1_499, 500), "an ended batch is not stopped");
    }

    #[test]
    fn batches_holding_priority_work_or_not_running_are_not_stopped() {
        let (slot, flag) = slot();
        assert!(!slot.stop_if_young(0, u64::MAX), "nothing runs");
        slot.begin(0, true);
        assert!(!slot.stop_if_young(0, u64::MAX));
        assert!(!slot.end());
        assert!(!flag.stopped.load(Ordering::SeqCst));
    }

    #[test]
    fn a_stop_left_over_from_an_ended_batch_is_cleared_before_the_next() {
        let (slot, flag) = slot();
        slot.begin(0, false);
        assert!(slot.stop_if_young(0, 1));
        assert!(slot.end());
        slot.begin(10, false);
        assert!(!flag.stopped.load(Ordering::SeqCst), "the next batch starts with its flag clear");
        assert_eq!(flag.clears.load(Ordering::SeqCst), 2);
        assert!(!slot.end(), "no stop was asked of the next batch");
    }

    #[test]
    fn a_worker_with_a_stage_that_cannot_stop_is_never_stopped() {
        let slot = BatchSlot::default();
        slot.register(None);
        assert!(!slot.stoppable());
        slot.begin(0, false);
        assert!(!slot.stop_if_young(0, 1));
        assert!(!slot.end());
    }
}
