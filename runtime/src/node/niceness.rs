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
//! **Foreground slices** (`foreground_slice_us = S`): workers outside the
//! background request an EEVDF slice of S µs from the kernel (`sched_setattr`),
//! background ones the kernel's default. A woken thread whose slice is shorter
//! than the running thread's preempts it at once; otherwise it may wait for
//! the running thread's slice to end, seen only at the next tick (4 ms at
//! 250 Hz). So a chunk's worker waking onto a core that runs a background batch
//! starts at once. Needs Linux 6.12 or later (older kernels ignore the request)
//! and the right to set it, tried once like the nice.
//!
//! **Real-time foreground** (`foreground_realtime = true`): workers outside
//! the background run at the FIFO real-time policy (priority 1), so no normal
//! thread delays them, woken or running; background ones go back to the
//! normal policy at their background nice. For light nodes on the answer's
//! path: a long batch at that policy holds its core from every normal thread
//! (the kernel's real-time throttling still leaves them 5%).
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

/// `struct sched_attr` of `sched_setattr(2)` (the first version, 48 bytes).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Sets thread `tid` to the normal policy at `nice`, requesting an EEVDF slice of
/// `slice_ns` (0: the kernel's default).
fn set_nice_and_slice(tid: libc::id_t, nice: i32, slice_ns: u64) -> bool {
    set_attr(tid, SchedAttr { policy: libc::SCHED_OTHER as u32, nice, runtime: slice_ns, ..SchedAttr::default() })
}

/// Sets thread `tid` to the real-time FIFO policy at its lowest priority (1).
fn set_realtime(tid: libc::id_t) -> bool {
    set_attr(tid, SchedAttr { policy: libc::SCHED_FIFO as u32, priority: 1, ..SchedAttr::default() })
}

fn set_attr(tid: libc::id_t, attr: SchedAttr) -> bool {
    let attr = SchedAttr { size: std::mem::size_of::<SchedAttr>() as u32, ..attr };
    // SAFETY: sched_setattr reads `attr` (its size given inside) and changes only thread `tid`'s scheduling.
    unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0) == 0 }
}

/// Thread `tid`'s slice, ns, if it can be read (the kernel's default where none was requested).
#[cfg(test)]
fn get_slice(tid: libc::id_t) -> Option<u64> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: sched_getattr writes at most `size` bytes into `attr`.
    let ok = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut attr as *mut SchedAttr, size, 0) == 0 };
    ok.then_some(attr.runtime)
}

/// Sets the calling thread's nice value to `nice` (-20 to 19): for a thread of a serving
/// binary whose work should give way to the workers', such as the one that takes requests
/// in. At nice 0 such a thread, waking, preempts the batch running on its core about every
/// time, and the batch waits out its run while another core may sit idle
/// (`docs/simulate.md`, "Where the real runs wait for a core"); at a higher nice a running
/// batch goes on. Returns whether the kernel took it (a nice below the thread's own needs
/// `CAP_SYS_NICE`).
pub fn set_thread_nice(nice: i32) -> bool {
    set_nice(thread_id(), nice)
}

/// Asks the kernel for an EEVDF slice of `slice_us` µs (100 to 100000) for the
/// calling thread, at its nice: for the threads of a serving binary that submit
/// requests and wait for their answers, so that they, too, run at once when
/// an answer wakes them onto a busy core (as `foreground_slice_us` does for the
/// workers). Returns whether the kernel took it (Linux 6.12 or later, and the right to).
pub fn request_thread_slice(slice_us: u64) -> bool {
    let tid = thread_id();
    SLICE_US.contains(&slice_us) && set_nice_and_slice(tid, get_nice(tid), slice_us * 1000)
}

/// Moves the calling thread to the FIFO real-time policy at priority 2, one above the
/// workers' real-time foreground (`foreground_realtime`, priority 1): no worker, at either
/// policy, then delays it, woken or running. For a thread that stands for work outside the
/// runtime and must not wait for it, such as a load generator whose sends follow a schedule
/// (it should sleep between short bursts: at that policy it holds its core from every normal
/// thread while it runs). Returns whether the kernel took it (root or `CAP_SYS_NICE`).
pub fn request_thread_realtime() -> bool {
    set_attr(thread_id(), SchedAttr { policy: libc::SCHED_FIFO as u32, priority: 2, ..SchedAttr::default() })
}

/// The slices, µs, the kernel takes (it clamps others to these limits).
pub(crate) const SLICE_US: std::ops::RangeInclusive<u64> = 100..=100_000;

/// Moves the calling thread, one that decides for the workers (the scheduler
/// thread), to `foreground` for good, where this process may: a decision held
/// up behind a background batch holds up every worker it would start.
pub(crate) fn enter_foreground(foreground: Foreground) {
    if foreground != Foreground::Plain && may_use(foreground) {
        let tid = thread_id();
        to_foreground(tid, get_nice(tid), foreground);
    }
}

/// Whether a thread of this process may take `foreground` and come back to the
/// normal policy (tried once per kind, on a scratch thread).
fn may_use(foreground: Foreground) -> bool {
    static SLICE: OnceLock<bool> = OnceLock::new();
    static REALTIME: OnceLock<bool> = OnceLock::new();
    let (may, what) = match foreground {
        Foreground::Plain => return true,
        Foreground::Slice(_) => (&SLICE, "foreground_slice_us"),
        Foreground::Realtime => (&REALTIME, "foreground_realtime"),
    };
    *may.get_or_init(|| {
        let may = std::thread::spawn(move || {
            let tid = thread_id();
            let own = get_nice(tid);
            to_foreground(tid, own, foreground) && to_background(tid, own, foreground)
        })
        .join()
        .unwrap_or(false);
        if !may {
            tracing::warn!("{what} is off: this process may not change a thread's scheduling that way");
        }
        may
    })
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
    /// How the node's workers run outside the background (set by the first worker).
    foreground: OnceLock<Foreground>,
}

/// What the background and the foreground are for one pipeline's workers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ThreadClasses {
    /// Background batches' nice increment (0: none).
    pub background_nice: i32,
    /// Which batches are background.
    pub scope: BackgroundScope,
    /// How workers outside the background run.
    pub foreground: Foreground,
}

impl ThreadClasses {
    /// The classes `[scheduler]` sets: the collaborative rule's; the baselines leave every thread alone.
    pub fn of(s: &crate::config::SchedulerConfig) -> ThreadClasses {
        if s.policy != crate::config::BatchingPolicy::Collaborative {
            return ThreadClasses::default();
        }
        let foreground = match (s.foreground_realtime, s.foreground_slice_us) {
            (true, _) => Foreground::Realtime,
            (false, 0) => Foreground::Plain,
            (false, us) => Foreground::Slice(us.saturating_mul(1000)),
        };
        ThreadClasses { background_nice: s.background_nice, scope: s.background_scope, foreground }
    }
}

/// How a worker outside the background runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) enum Foreground {
    /// At its own nice, as the kernel schedules it by default.
    #[default]
    Plain,
    /// At its own nice, requesting an EEVDF slice of this many ns.
    Slice(u64),
    /// At the real-time FIFO policy, priority 1: ahead of every normal thread.
    Realtime,
}

/// Moves thread `tid` out of the background: its own nice, as `foreground` says.
fn to_foreground(tid: libc::id_t, own: i32, foreground: Foreground) -> bool {
    match foreground {
        Foreground::Plain => set_nice(tid, own),
        Foreground::Slice(slice_ns) => set_nice_and_slice(tid, own, slice_ns),
        Foreground::Realtime => set_realtime(tid),
    }
}

/// Moves thread `tid` into the background: the normal policy at `nice`, with the
/// kernel's default slice (where the foreground changes more than the nice).
fn to_background(tid: libc::id_t, nice: i32, foreground: Foreground) -> bool {
    match foreground {
        Foreground::Plain => set_nice(tid, nice),
        Foreground::Slice(_) | Foreground::Realtime => set_nice_and_slice(tid, nice, 0),
    }
}

impl NodeNice {
    pub fn new(workers: usize) -> NodeNice {
        NodeNice {
            workers: (0..workers).map(|_| WorkerSlot::default()).collect(),
            seen_priority: AtomicBool::new(false),
            foreground: OnceLock::new(),
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
                let (tid, own) = (slot.tid.load(Ordering::Relaxed) as libc::id_t, slot.own.load(Ordering::Relaxed));
                to_foreground(tid, own, self.foreground.get().copied().unwrap_or_default());
            }
        }
    }
}

/// One worker thread's nice value: its own, or `own + background` while it runs a
/// background batch; and its slice: the foreground slice, or the kernel's default in the background.
pub(crate) struct BatchNice {
    slot: usize,
    background: i32,
    scope: BackgroundScope,
    /// How the thread runs outside the background.
    foreground: Foreground,
}

impl BatchNice {
    /// For the calling thread, worker `slot` of its node, which starts in the foreground
    /// (as `classes.foreground` says). A background nice of 0 (or no right to come back)
    /// leaves its nice alone; a foreground it may not take, its scheduling.
    pub fn new(node: &NodeNice, slot: usize, classes: ThreadClasses) -> BatchNice {
        let tid = thread_id();
        let background = if classes.background_nice > 0 && may_lower_nice() { classes.background_nice } else { 0 };
        let foreground = if may_use(classes.foreground) { classes.foreground } else { Foreground::Plain };
        let worker = &node.workers[slot];
        let own = get_nice(tid);
        worker.own.store(own, Ordering::Relaxed);
        worker.tid.store(tid as i32, Ordering::Release);
        let _ = node.foreground.set(foreground);
        if foreground != Foreground::Plain {
            to_foreground(tid, own, foreground);
        }
        BatchNice { slot, background, scope: classes.scope, foreground }
    }

    /// Whether the thread runs at the real-time policy outside the background.
    pub fn realtime(&self) -> bool {
        self.foreground == Foreground::Realtime
    }

    /// Whether the thread is at the real-time policy now: in the foreground of a real-time
    /// foreground (read as it wakes; a lift racing with the read may be missed).
    pub fn is_realtime_now(&self, node: &NodeNice) -> bool {
        self.realtime() && !node.workers[self.slot].in_background.load(Ordering::Relaxed)
    }

    /// Before a batch: background nice when it holds no priority task and none
    /// waits at the node (`priority_waits`, read after the flag: see [`NodeNice`]),
    /// the thread's own otherwise. Returns whether the batch starts at the real-time
    /// policy (a worker lifted while its batch runs is not told).
    pub fn set_for_batch(&self, node: &NodeNice, holds_priority: bool, priority_waits: impl Fn() -> bool) -> bool {
        if self.background == 0 && self.foreground == Foreground::Plain {
            return false;
        }
        let worker = &node.workers[self.slot];
        let (tid, own) = (worker.tid.load(Ordering::Relaxed) as libc::id_t, worker.own.load(Ordering::Relaxed));
        let foreground_node = self.scope == BackgroundScope::Node && node.seen_priority.load(Ordering::Relaxed);
        if holds_priority || foreground_node {
            if worker.in_background.swap(false, Ordering::SeqCst) {
                to_foreground(tid, own, self.foreground);
            }
            return self.realtime();
        }
        if worker.in_background.load(Ordering::Relaxed) {
            return false;
        }
        let background_nice = (own + self.background).min(19);
        if !to_background(tid, background_nice, self.foreground) {
            return self.realtime();
        }
        worker.in_background.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if priority_waits() && worker.in_background.swap(false, Ordering::SeqCst) {
            to_foreground(tid, own, self.foreground);
            return self.realtime();
        }
        false
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
        let classes =
            ThreadClasses { background_nice: background, scope: background_scope, foreground: Foreground::Plain };
        on_worker_thread_with(classes, body)
    }

    fn on_worker_thread_with(classes: ThreadClasses, body: impl FnOnce(libc::id_t, i32, &NodeNice, &BatchNice) + Send) {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let tid = thread_id();
                    let own = get_nice(tid);
                    let node = NodeNice::new(1);
                    let nice = BatchNice::new(&node, 0, classes);
                    body(tid, own, &node, &nice)
                })
                .join()
                .unwrap()
        });
    }

    #[test]
    fn a_background_batch_runs_at_the_raised_nice_and_a_priority_batch_at_the_threads_own() {
        on_worker_thread(5, BackgroundScope::Batch, |tid, own, node, nice| {
            assert!(!nice.set_for_batch(node, false, || false), "no batch is real-time without the policy");
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

    #[test]
    fn foreground_workers_request_the_short_slice_and_background_ones_the_default() {
        let foreground = Foreground::Slice(200_000);
        let classes = ThreadClasses { background_nice: 5, scope: BackgroundScope::Batch, foreground };
        on_worker_thread_with(classes, |tid, own, node, nice| {
            if !may_use(foreground) || !may_lower_nice() {
                eprintln!("skipped: this process may not set a thread's slice or lower its nice");
                return;
            }
            assert_eq!(get_slice(tid), Some(200_000), "a worker starts in the foreground");
            nice.set_for_batch(node, false, || false);
            assert_eq!(get_nice(tid), (own + 5).min(19));
            let default = get_slice(tid).expect("the slice reads back");
            assert!(default > 200_000, "background: the kernel's default slice (reads back as {default} ns)");
            std::thread::scope(|scope| scope.spawn(|| node.lift()).join().unwrap());
            assert_eq!((get_nice(tid), get_slice(tid)), (own, Some(200_000)), "lifted: the short slice again");
        });
    }

    fn policy(tid: libc::id_t) -> i32 {
        // SAFETY: sched_getscheduler only reads thread `tid`'s policy.
        unsafe { libc::sched_getscheduler(tid as libc::pid_t) }
    }

    #[test]
    fn realtime_foreground_workers_run_fifo_and_background_ones_the_normal_policy() {
        let classes =
            ThreadClasses { background_nice: 5, scope: BackgroundScope::Batch, foreground: Foreground::Realtime };
        on_worker_thread_with(classes, |tid, own, node, nice| {
            if !may_use(Foreground::Realtime) || !may_lower_nice() {
                eprintln!("skipped: this process may not use the real-time policy or lower a nice");
                return;
            }
            assert_eq!(policy(tid), libc::SCHED_FIFO, "a worker starts in the foreground");
            assert!(!nice.set_for_batch(node, false, || false), "a background batch is not real-time");
            assert_eq!((policy(tid), get_nice(tid)), (libc::SCHED_OTHER, (own + 5).min(19)), "background");
            std::thread::scope(|scope| scope.spawn(|| node.lift()).join().unwrap());
            assert_eq!(policy(tid), libc::SCHED_FIFO, "lifted back to the real-time policy");
            assert!(nice.set_for_batch(node, true, || true), "a batch holding a priority task starts real-time");
            assert!(nice.set_for_batch(node, false, || true), "priority work waits: back in the foreground");
            assert_eq!(policy(tid), libc::SCHED_FIFO);
            assert!(!nice.set_for_batch(node, false, || false));
        });
    }

    #[test]
    fn a_thread_asking_for_real_time_runs_fifo_above_the_realtime_workers() {
        std::thread::spawn(|| {
            let tid = thread_id();
            if !request_thread_realtime() {
                eprintln!("skipped: this process may not use the real-time policy");
                return;
            }
            let mut param = libc::sched_param { sched_priority: 0 };
            // SAFETY: sched_getparam writes thread `tid`'s parameters into `param`.
            assert_eq!(unsafe { libc::sched_getparam(tid as libc::pid_t, &mut param) }, 0);
            assert_eq!(policy(tid), libc::SCHED_FIFO);
            let mut worker = SchedAttr::default();
            assert!(set_realtime(tid), "back to the workers' real-time priority");
            let size = std::mem::size_of::<SchedAttr>() as u32;
            // SAFETY: sched_getattr writes at most `size` bytes into `worker`.
            let read = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut worker as *mut SchedAttr, size, 0) };
            assert_eq!(read, 0);
            assert!(
                param.sched_priority as u32 > worker.priority,
                "{} over the workers' {}",
                param.sched_priority,
                worker.priority
            );
        })
        .join()
        .unwrap();
    }
}
