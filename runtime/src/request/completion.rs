//! The one-shot cell a ticket and the runtime share.
//!
//! ## The completion protocol
//! A [`Completion`] is shared by the ticket and the runtime. `resolve` stores
//! the result under the slot's lock and flips `done` with a compare-exchange,
//! so only the first resolution counts and every later one is refused (this
//! is what makes "exactly once" hold when a failing branch and a succeeding
//! branch of the same request race). Waiters first spin on `done` for
//! about the answer time the runtime expects (see [`super::spin`]), then
//! sleep on the condvar; an async waiter leaves its waker in the slot
//! instead. Dropping a ticket that has not resolved marks the request
//! cancelled, so tasks not yet run are skipped by the node that would run
//! them. A job of a split request ([`crate::split`]) counts as cancelled once
//! the request it belongs to is answered or cancelled: its tasks not yet run
//! are skipped, and it resolves (with [`super::RequestError::Cancelled`],
//! dropped by the assembly) as any cancelled request.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::spin::{spin_until, MAX_WAIT_SPIN, MIN_WAIT_SPIN};
use super::RequestResult;
use crate::wakeup::Sleepers;

#[derive(Default)]
struct Slot {
    result: Option<RequestResult>,
    waker: Option<Waker>,
    /// Set by [`crate::Runtime::submit_then`]: receives the result instead of a ticket.
    callback: Option<Callback>,
}

/// A function that receives a request's result on the thread that resolves it.
pub type Callback = Box<dyn FnOnce(RequestResult) + Send>;

/// The one-shot cell a ticket and the runtime share. See the module docs for the protocol.
#[derive(Default)]
pub(crate) struct Completion {
    done: AtomicBool,
    cancelled: AtomicBool,
    slot: Mutex<Slot>,
    ready: Condvar,
    /// How long a blocking waiter spins before sleeping (about the expected answer time).
    spin: Duration,
    /// A job's completion: the split request's, whose end (answered, or its ticket
    /// dropped) cancels the job too (see [`crate::split`]).
    parent: Option<Arc<Completion>>,
}

impl Completion {
    /// Stores the result if none was stored yet. Returns whether this call resolved it.
    pub(crate) fn resolve(self: &Arc<Self>, result: RequestResult) -> bool {
        let mut slot = self.slot.lock();
        if self.done.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return false;
        }
        if let Some(callback) = slot.callback.take() {
            drop(slot);
            callback(result);
            return true;
        }
        slot.result = Some(result);
        let waker = slot.waker.take();
        drop(slot);
        crate::wakeup::notify(Arc::clone(self) as Arc<dyn Sleepers>);
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// A completion whose waiter spins up to `expected` (bounded) before sleeping.
    pub(crate) fn expecting(expected: Duration) -> Self {
        Completion { spin: expected.clamp(MIN_WAIT_SPIN, MAX_WAIT_SPIN), ..Completion::default() }
    }

    /// A completion that hands its result to `callback` (no ticket waits on it).
    pub(crate) fn with_callback(callback: Callback) -> Self {
        let completion = Completion::default();
        completion.slot.lock().callback = Some(callback);
        completion
    }

    /// A job's completion, handing its result to `callback`: cancelled once `parent` is
    /// resolved or cancelled (a dropped ticket, or another job failed).
    pub(crate) fn job(callback: Callback, parent: Arc<Completion>) -> Self {
        let completion = Completion { parent: Some(parent), ..Completion::default() };
        completion.slot.lock().callback = Some(callback);
        completion
    }

    /// Resolved, or its ticket was dropped: nothing more should run for it.
    pub(crate) fn is_finished(&self) -> bool {
        self.is_resolved() || self.is_cancelled()
    }

    /// Its ticket was dropped, or (a job) its split request ended before it did.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire) || self.parent.as_ref().is_some_and(|p| p.is_finished())
    }

    /// A result was stored (it may have been taken since).
    pub(super) fn is_resolved(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Marks the request cancelled (its ticket was dropped unanswered).
    pub(super) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// The result, if it is there, without blocking.
    pub(super) fn take(&self) -> Option<RequestResult> {
        if !self.is_resolved() {
            return None;
        }
        self.slot.lock().result.take()
    }

    /// The result if it is there; else leaves `waker` to be woken when it comes.
    pub(super) fn take_or_register(&self, waker: &Waker) -> Option<RequestResult> {
        let mut slot = self.slot.lock();
        if let Some(result) = slot.result.take() {
            return Some(result);
        }
        slot.waker = Some(waker.clone());
        None
    }

    /// Blocks until the result comes (or `deadline` passes: `None`), spinning first.
    pub(super) fn wait(&self, deadline: Option<Instant>) -> Option<RequestResult> {
        spin_until(&self.done, self.spin);
        let mut slot = self.slot.lock();
        let result = loop {
            if let Some(result) = slot.result.take() {
                break Some(result);
            }
            match deadline {
                Some(d) => {
                    if self.ready.wait_until(&mut slot, d).timed_out() {
                        break slot.result.take();
                    }
                }
                None => self.ready.wait(&mut slot),
            }
        };
        drop(slot);
        // Pass the wake-ups on (see `wakeup`): other requesters of the same batch may still sleep.
        crate::wakeup::help(crate::wakeup::FANOUT);
        result
    }
}

impl Sleepers for Completion {
    /// Wakes threads blocked on this completion; returns how many were asleep.
    fn notify(&self) -> usize {
        self.ready.notify_all()
    }
}
