//! Background batches: the OS's priority follows the tasks' priority.
//!
//! Under the collaborative rule with `[scheduler] background_nice = N` (N > 0),
//! a worker about to run a *background batch* raises its thread's nice value
//! by N over the thread's own; other batches run at the thread's own nice.
//! With `background_scope = "node"` (the default) the background batches are
//! those of nodes no priority task has reached yet (bulk-only nodes, such as
//! an OCR node whose images arrive long before the answer is wanted); with
//! `"batch"`, every batch that holds no priority task. With more runnable
//! workers than cores, the OS then gives the cores to the other batches first,
//! while background batches still use whatever is left: the answers users wait
//! for are not slowed by a core shared with bulk work. A worker in the background is
//! lifted back to its own nice as soon as a priority task reaches its node
//! (see [`NodeNice`]), so the priority task does not wait on a background
//! batch run at the background nice. (See "Background batches" in docs/scheduling.md.)
//!
//! Nice values order threads within one scheduling group: all of Baton's
//! threads are in one, so the order between its batches holds; against other
//! processes they count only where the kernel's autogroup is off
//! (`/proc/sys/kernel/sched_autogroup_enabled`), otherwise each session
//! competes as a whole.
//!
//! Going back down to the thread's own nice needs the right to raise a
//! thread's priority (root, `CAP_SYS_NICE`, or an `RLIMIT_NICE` that allows
//! it). [`may_lower_nice`] tries that once on a scratch thread; without it the
//! feature stays off (logged once), since a worker could not come back from
//! the background.

use std::sync::atomic::{fence, AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

use crate::config::BackgroundScope;

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
    // SAFETY: setpriority on a thread of this process changes only that thread's nice value.
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

/// One worker's nice state, shared with the threads that bring its node priority tasks.
#[derive(Default)]
struct WorkerSlot {
    /// The thread's id (0 until the worker starts).
    tid: AtomicI32,
    /// The thread's own nice value.
    own: AtomicI32,
    /// Whether the thread is now at the background nice.
    in_background: AtomicBool,
}

/// The nice state of one node's workers.
///
/// ## Lifting: the protocol that keeps priority tasks off the background nice
/// A priority task that arrives while the node's worker runs (or sleeps after)
/// a background batch would otherwise wait for that batch at the background
/// nice, and a sleeping worker would wake at it. So a worker leaves the
/// background as soon as its node holds a priority task ("priority
/// inheritance"):
/// - A worker going to the background sets its nice first, then stores
///   `in_background = true`, fences (SeqCst), and looks at the buffer's
///   priority count; if a priority task waits, it lifts itself.
/// - A thread that pushed a priority task into the buffer fences (SeqCst),
///   then, for each worker with `in_background`, swaps it to false and, if it
///   was the one to swap it, sets that worker's own nice ([`NodeNice::lift`]).
///
/// By the two fences, either the worker sees the task or the pusher sees the
/// flag (or both; the swap lets only one of them set the nice). A pusher that
/// sees the flag set it after the worker's own `setpriority`, so the lift
/// lands last. A priority chunk parked behind its stream's previous chunk
/// (not in the buffer, and the chunk it waits for is not priority) counts
/// the same way: its pusher lifts after parking it, and the worker's look
/// includes the node's parked priority chunks.
pub(crate) struct NodeNice {
    workers: Vec<WorkerSlot>,
    /// A priority task has reached this node.
    seen_priority: AtomicBool,
}

impl NodeNice {
    pub fn new(workers: usize) -> NodeNice {
        NodeNice {
            workers: (0..workers).map(|_| WorkerSlot::default()).collect(),
            seen_priority: AtomicBool::new(false),
        }
    }

    /// A priority task arrived: every worker of the node at the background nice goes back to its own.
    /// Call after the task is in the buffer (the fence here pairs with the worker's).
    pub fn lift(&self) {
        if !self.seen_priority.load(Ordering::Relaxed) {
            self.seen_priority.store(true, Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
        for slot in &self.workers {
            if slot.in_background.load(Ordering::Relaxed) && slot.in_background.swap(false, Ordering::SeqCst) {
                set_nice(slot.tid.load(Ordering::Relaxed) as libc::id_t, slot.own.load(Ordering::Relaxed));
            }
        }
    }
}

/// One worker thread's nice value: its own, or `own + background` while it runs a background batch.
pub(crate) struct BatchNice {
    slot: usize,
    background: i32,
    scope: BackgroundScope,
}

impl BatchNice {
    /// For the calling thread, worker `slot` of its node; `background` 0 (or no right
    /// to come back) leaves its nice alone.
    pub fn new(node: &NodeNice, slot: usize, background: i32, scope: BackgroundScope) -> BatchNice {
        let tid = thread_id();
        let background = if background > 0 && may_lower_nice() { background } else { 0 };
        let worker = &node.workers[slot];
        worker.own.store(get_nice(tid), Ordering::Relaxed);
        worker.tid.store(tid as i32, Ordering::Release);
        BatchNice { slot, background, scope }
    }

    /// Before a batch: background nice when it holds no priority task and none
    /// waits at the node (`priority_waits`, read after the flag: see [`NodeNice`]),
    /// the thread's own otherwise.
    pub fn set_for_batch(&self, node: &NodeNice, holds_priority: bool, priority_waits: impl Fn() -> bool) {
        if self.background == 0 {
            return;
        }
        let worker = &node.workers[self.slot];
        let (tid, own) = (worker.tid.load(Ordering::Relaxed) as libc::id_t, worker.own.load(Ordering::Relaxed));
        let foreground_node = self.scope == BackgroundScope::Node && node.seen_priority.load(Ordering::Relaxed);
        if holds_priority || foreground_node {
            if worker.in_background.swap(false, Ordering::SeqCst) {
                set_nice(tid, own);
            }
            return;
        }
        if worker.in_background.load(Ordering::Relaxed) || !set_nice(tid, (own + self.background).min(19)) {
            return;
        }
        worker.in_background.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if priority_waits() && worker.in_background.swap(false, Ordering::SeqCst) {
            set_nice(tid, own);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `body` on a fresh thread (so its nice changes touch no other test) with a
    /// one-worker node whose worker is that thread; skips where nice cannot come back down.
    fn on_worker_thread(
        background: i32,
        background_scope: BackgroundScope,
        body: impl FnOnce(libc::id_t, i32, &NodeNice, &BatchNice) + Send,
    ) {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let tid = thread_id();
                    let own = get_nice(tid);
                    let node = NodeNice::new(1);
                    let nice = BatchNice::new(&node, 0, background, background_scope);
                    body(tid, own, &node, &nice)
                })
                .join()
                .unwrap()
        });
    }

    #[test]
    fn a_background_batch_runs_at_the_raised_nice_and_a_priority_batch_at_the_threads_own() {
        on_worker_thread(5, BackgroundScope::Batch, |tid, own, node, nice| {
            nice.set_for_batch(node, false, || false);
            if !may_lower_nice() {
                assert_eq!(get_nice(tid), own, "without the right to come back, nothing changes");
                return;
            }
            assert_eq!(get_nice(tid), (own + 5).min(19));
            nice.set_for_batch(node, false, || false);
            assert_eq!(get_nice(tid), (own + 5).min(19), "unchanged for a second background batch");
            nice.set_for_batch(node, true, || true);
            assert_eq!(get_nice(tid), own);
        });
    }

    #[test]
    fn a_priority_arrival_lifts_a_worker_in_the_background_from_another_thread() {
        on_worker_thread(5, BackgroundScope::Batch, |tid, own, node, nice| {
            nice.set_for_batch(node, false, || false);
            if !may_lower_nice() {
                return;
            }
            assert_eq!(get_nice(tid), (own + 5).min(19));
            std::thread::scope(|scope| scope.spawn(|| node.lift()).join().unwrap());
            assert_eq!(get_nice(tid), own, "lifted by the thread that brought the priority task");
            nice.set_for_batch(node, false, || false);
            assert_eq!(get_nice(tid), (own + 5).min(19), "the next background batch goes back down");
        });
    }

    #[test]
    fn a_worker_does_not_go_to_the_background_while_a_priority_task_waits() {
        on_worker_thread(5, BackgroundScope::Batch, |tid, own, node, nice| {
            nice.set_for_batch(node, false, || true);
            assert_eq!(get_nice(tid), own);
            assert!(!node.workers[0].in_background.load(Ordering::SeqCst));
        });
    }

    #[test]
    fn zero_leaves_the_nice_alone() {
        on_worker_thread(0, BackgroundScope::Batch, |tid, own, node, nice| {
            nice.set_for_batch(node, false, || false);
            assert_eq!(get_nice(tid), own);
            node.lift();
            assert_eq!(get_nice(tid), own);
        });
    }

    #[test]
    fn with_node_scope_a_node_reached_by_a_priority_task_stays_at_the_threads_own_nice() {
        on_worker_thread(5, BackgroundScope::Node, |tid, own, node, nice| {
            nice.set_for_batch(node, false, || false);
            if !may_lower_nice() {
                return;
            }
            assert_eq!(get_nice(tid), (own + 5).min(19), "no priority task has reached the node yet");
            node.lift();
            assert_eq!(get_nice(tid), own);
            nice.set_for_batch(node, false, || false);
            assert_eq!(
                get_nice(tid),
                own,
                "a batch without priority tasks at a node they reach stays in the foreground"
            );
        });
    }
}
