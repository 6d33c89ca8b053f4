//! How a blocking waiter spins before it sleeps, and the process-wide one-spinner rule.
//!
//! A waiter that expects its answer soon spins (yielding) for about the
//! answer time the runtime expects, bounded to 20-500 µs, before it sleeps on
//! its completion's condvar. Only one waiter in the process spins at a time
//! (the [`SPINNERS`] slot): the spinner competes for cores with every
//! runtime's workers in this process, so one spinner per process (not per
//! runtime) keeps light-load latency low without crowding the workers under load.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Spin bounds of a blocking waiter.
pub(super) const MIN_WAIT_SPIN: Duration = Duration::from_micros(20);
pub(super) const MAX_WAIT_SPIN: Duration = Duration::from_micros(500);

/// Waiters spinning now, process-wide (at most one), on purpose: see the module docs.
static SPINNERS: AtomicUsize = AtomicUsize::new(0);

/// Spins up to `spin` (at least [`MIN_WAIT_SPIN`]) until `done` is set, if no
/// other waiter in the process spins now; returns at once otherwise.
pub(super) fn spin_until(done: &AtomicBool, spin: Duration) {
    if SPINNERS.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return;
    }
    let spin_until = Instant::now() + spin.max(MIN_WAIT_SPIN);
    while !done.load(Ordering::Acquire) && Instant::now() < spin_until {
        // Yield rather than hold the core: on a machine with few cores the
        // worker about to answer may be waiting for this very core.
        std::thread::yield_now();
    }
    SPINNERS.store(0, Ordering::Release);
}
