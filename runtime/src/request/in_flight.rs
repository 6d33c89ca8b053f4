//! The in-flight limit: each admitted request holds a permit until it is answered.
//!
//! [`InFlight::acquire`] takes one of `limit` slots or refuses. The
//! [`InFlightPermit`] it returns gives the slot back when dropped, so it is
//! given back exactly once: the request's state owns the permit, and the one
//! resolution that claims the request takes the permit out and drops it,
//! before the requester is woken (a woken requester sees the count without
//! its request). A state dropped unclaimed gives its slot back as it goes.
//!
//! Shutdown: once [`InFlight::start_draining`] is called, the release that
//! empties the count notifies [`InFlight::wait_until_empty`] under its lock;
//! the waiter also wakes every 10 ms, so a missed notification only delays it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics::Gauge;
use parking_lot::{Condvar, Mutex};

/// The slots for requests in flight in one pipeline.
pub(crate) struct InFlight {
    count: AtomicUsize,
    limit: usize,
    /// The pipeline's in-flight gauge (`baton_in_flight`).
    gauge: Gauge,
    /// Set when the pipeline stops accepting: a release that empties the count notifies.
    draining: AtomicBool,
    empty: (Mutex<()>, Condvar),
}

/// One admitted request's slot; dropping it gives the slot back.
pub(crate) struct InFlightPermit {
    slots: Arc<InFlight>,
}

impl InFlight {
    pub fn new(limit: usize, gauge: Gauge) -> Arc<InFlight> {
        Arc::new(InFlight {
            count: AtomicUsize::new(0),
            limit,
            gauge,
            draining: AtomicBool::new(false),
            empty: (Mutex::new(()), Condvar::new()),
        })
    }

    /// Requests holding a permit now.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `more` permits would fit now (a check, not a reservation).
    pub fn has_room_for(&self, more: usize) -> bool {
        self.count.load(Ordering::Acquire) + more <= self.limit
    }

    /// A permit, or `None` when all `limit` slots are held.
    pub fn acquire(self: &Arc<Self>) -> Option<InFlightPermit> {
        if self.count.fetch_add(1, Ordering::AcqRel) >= self.limit {
            self.count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        self.gauge.increment(1.0);
        Some(InFlightPermit { slots: Arc::clone(self) })
    }

    /// From now on, the release that empties the count wakes [`Self::wait_until_empty`].
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Blocks until no permit is held, calling `meanwhile` after each wait (a release that
    /// empties the count while draining, or 10 ms).
    pub fn wait_until_empty(&self, mut meanwhile: impl FnMut()) {
        let (lock, empty) = &self.empty;
        let mut guard = lock.lock();
        while self.count() > 0 {
            empty.wait_for(&mut guard, Duration::from_millis(10));
            meanwhile();
        }
    }

    fn release(&self) {
        self.gauge.decrement(1.0);
        let emptied = self.count.fetch_sub(1, Ordering::AcqRel) == 1;
        if emptied && self.draining.load(Ordering::Acquire) {
            let _guard = self.empty.0.lock();
            self.empty.1.notify_all();
        }
    }
}

impl Drop for InFlightPermit {
    fn drop(&mut self) {
        self.slots.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(limit: usize) -> Arc<InFlight> {
        InFlight::new(limit, Gauge::noop())
    }

    #[test]
    fn a_permit_holds_its_slot_until_dropped() {
        let slots = slots(2);
        let a = slots.acquire().expect("first slot");
        let b = slots.acquire().expect("second slot");
        assert!(slots.acquire().is_none(), "a third is refused at the limit");
        assert_eq!(slots.count(), 2, "the refusal left the count as it was");
        drop(a);
        assert_eq!(slots.count(), 1);
        assert!(slots.has_room_for(1) && !slots.has_room_for(2));
        drop(b);
        assert_eq!(slots.count(), 0);
    }

    #[test]
    fn the_release_that_empties_a_draining_count_wakes_the_waiter() {
        let slots = slots(4);
        let permit = slots.acquire().expect("slot");
        slots.start_draining();
        let waiter = {
            let slots = Arc::clone(&slots);
            std::thread::spawn(move || slots.wait_until_empty(|| {}))
        };
        drop(permit);
        waiter.join().expect("the waiter returns once the count is empty");
        assert_eq!(slots.count(), 0);
    }
}
