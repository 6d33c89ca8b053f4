//! Background batches: the OS's priority follows the tasks' priority.
//!
//! Under the collaborative rule with `[scheduler] background_nice = N` (N > 0),
//! a worker about to run a batch that holds no priority task raises its
//! thread's nice value by N over the thread's own; a batch holding one runs at
//! the thread's own nice. With more runnable workers than cores, the OS then
//! gives the cores to batches holding priority tasks first, while background
//! batches still use whatever is left: the answers users wait for are not
//! slowed by a core shared with bulk work. (See "Background batches" in docs/scheduling.md.)
//!
//! Going back down to the thread's own nice needs the right to raise a
//! thread's priority (root, `CAP_SYS_NICE`, or an `RLIMIT_NICE` that allows
//! it). [`may_lower_nice`] tries that once on a scratch thread; without it the
//! feature stays off (logged once), since a worker could not come back from
//! the background.

use std::sync::OnceLock;

/// The calling thread's id, as `setpriority` takes it.
fn thread_id() -> libc::id_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as libc::id_t }
}

fn get_nice(tid: libc::id_t) -> i32 {
    // SAFETY: getpriority reads the thread's nice value; -1 is also a valid nice, which is fine here.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) }
}

fn set_nice(tid: libc::id_t, nice: i32) -> bool {
    // SAFETY: setpriority on the calling thread's own id changes only that thread's nice value.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0 }
}

/// Whether a thread of this process may go back to its own nice after raising it
/// (tried once, on a scratch thread).
pub(crate) fn may_lower_nice() -> bool {
    static MAY: OnceLock<bool> = OnceLock::new();
    *MAY.get_or_init(|| {
        let may = std::thread::spawn(|| {
            let tid = thread_id();
            let own = get_nice(tid);
            set_nice(tid, (own + 1).min(19)) && set_nice(tid, own)
        })
        .join()
        .unwrap_or(false);
        if !may {
            tracing::warn!("background_nice is off: this process may not raise a thread's priority back");
        }
        may
    })
}

/// One worker thread's nice value: its own, or `own + background` while it runs a background batch.
pub(crate) struct BatchNice {
    tid: libc::id_t,
    own: i32,
    background: i32,
    /// Whether the thread is now at the background nice.
    in_background: bool,
}

impl BatchNice {
    /// For the calling thread; `background` 0 (or no right to come back) leaves its nice alone.
    pub fn new(background: i32) -> BatchNice {
        let tid = thread_id();
        let background = if background > 0 && may_lower_nice() { background } else { 0 };
        BatchNice { tid, own: get_nice(tid), background, in_background: false }
    }

    /// Before a batch: background nice when it holds no priority task, the thread's own otherwise.
    pub fn set_for_batch(&mut self, holds_priority: bool) {
        let background = !holds_priority && self.background > 0;
        if background == self.in_background {
            return;
        }
        let nice = if background { (self.own + self.background).min(19) } else { self.own };
        if set_nice(self.tid, nice) {
            self.in_background = background;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_background_batch_runs_at_the_raised_nice_and_a_priority_batch_at_the_threads_own() {
        std::thread::spawn(|| {
            let tid = thread_id();
            let own = get_nice(tid);
            let mut nice = BatchNice::new(5);
            nice.set_for_batch(false);
            if !may_lower_nice() {
                assert_eq!(get_nice(tid), own, "without the right to come back, nothing changes");
                return;
            }
            assert_eq!(get_nice(tid), (own + 5).min(19));
            nice.set_for_batch(false);
            assert_eq!(get_nice(tid), (own + 5).min(19), "unchanged for a second background batch");
            nice.set_for_batch(true);
            assert_eq!(get_nice(tid), own);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn zero_leaves_the_nice_alone() {
        std::thread::spawn(|| {
            let tid = thread_id();
            let own = get_nice(tid);
            let mut nice = BatchNice::new(0);
            nice.set_for_batch(false);
            assert_eq!(get_nice(tid), own);
        })
        .join()
        .unwrap();
    }
}
