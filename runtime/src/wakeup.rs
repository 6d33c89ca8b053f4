//! Waking blocked waiters without holding up the workers: a cooperative fan-out.
//!
//! A worker that finishes a batch of 32 requests would spend a futex wake
//! per blocked requester (microseconds each) before it could start the next
//! batch. Instead, while a worker answers a batch it *defers* wake-ups: the
//! answers are stored at once (a spinning or not-yet-waiting requester sees
//! them immediately), and the completions to wake go onto a queue. When the
//! batch is answered the worker wakes [`FANOUT`] sleepers, and every waiter
//! that wakes up wakes `FANOUT` more before returning, so the wake-ups spread
//! as a tree over the requesters' own threads.
//!
//! Liveness: `help(k)` keeps popping until it has woken `k` threads that were
//! actually asleep (a notify that wakes nobody does not count) or the queue
//! is empty, and every thread it wakes calls `help` in turn. So the queue is
//! never left non-empty with no woken thread on its way to drain it.
//!
//! The queue is process-wide on purpose: wake-ups are owed to threads, not to
//! a runtime. A thread waiting on tickets of two runtimes helps drain both;
//! a runtime-owned queue would need every waiter to know which runtime will
//! answer it, and a queue left behind by a dropped runtime would strand its
//! sleepers. What is queued is only "wake this completion's sleepers", which
//! is safe from any thread at any time.

use std::cell::Cell;
use std::sync::Arc;

use parking_lot::Mutex;

/// Something with sleeping threads to wake (a resolved request's completion).
pub(crate) trait Sleepers: Send + Sync {
    /// Wakes the threads asleep on it; returns how many were asleep.
    fn notify(&self) -> usize;
}

/// Sleepers each helper wakes.
pub(crate) const FANOUT: usize = 2;

static QUEUE: Mutex<Vec<Arc<dyn Sleepers>>> = Mutex::new(Vec::new());

thread_local! {
    static DEFERRING: Cell<u32> = const { Cell::new(0) };
}

/// Wakes the waiters of a just-resolved completion, now or (while deferring) later.
pub(crate) fn notify(completion: Arc<dyn Sleepers>) {
    if DEFERRING.with(Cell::get) > 0 {
        QUEUE.lock().push(completion);
    } else {
        completion.notify();
    }
}

/// Wakes up to `k` sleeping waiters from the queue.
pub(crate) fn help(k: usize) {
    let mut woken = 0;
    while woken < k {
        let Some(completion) = QUEUE.lock().pop() else { return };
        woken += completion.notify();
    }
}

/// While alive, wake-ups on this thread are deferred; dropping it starts the fan-out.
pub(crate) struct Deferred(());

impl Deferred {
    pub fn begin() -> Self {
        DEFERRING.with(|d| d.set(d.get() + 1));
        Deferred(())
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        let left = DEFERRING.with(|d| {
            d.set(d.get() - 1);
            d.get()
        });
        if left == 0 {
            help(FANOUT);
        }
    }
}
