//! A node's batching buffer: the *batch* stage of the node model (docs/scheduling.md).
//!
//! Tasks wait here until the scheduler tells one of the node's workers to run.
//! Priority tasks wait in their own queue and are batched first; within each
//! queue order is first come, first served. The pending and priority-pending
//! counts are atomics the scheduler reads without taking the lock.
//!
//! With a tenant order other than fifo (`[fairness] order`, see
//! [`crate::fairness`]) the non-priority tasks wait in one queue per tenant
//! instead, and each task taken into a batch is one round of the order: it
//! names the tenant, the buffer takes that tenant's oldest task. The order
//! lives under the same lock as the queues, so its job counts always equal
//! the tenant queues' lengths.
//!
//! At a node with worker groups (see [`super`]'s module docs) a worker takes
//! only the tasks its group fits ([`BatchBuffer::take_for`]): it skips the
//! others, which keep their places; under a tenant order, the order
//! chooses among the tenants that have a task the group fits. The buffer
//! keeps per group the count of waiting tasks that fit it (`fit_pending`),
//! and [`BatchBuffer::requeue_overdue`] sends tasks whose placement round ran
//! out to the back of their queues.
//!
//! Protocol: the counts are changed under the queue lock, together with the
//! queues, so a reader never sees a count below what the queues hold after a
//! push returns. Readers outside the lock get a value that was true at some
//! moment, which is all a scheduling decision needs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::Task;
use crate::fairness::{FairnessKind, FairnessSpec, TenantOrder};

#[derive(Default)]
struct Queues {
    priority: VecDeque<Task>,
    normal: VecDeque<Task>,
    /// Per-tenant queues, when the pipeline's tenant order is not fifo (`normal` stays empty then).
    fair: Option<TenantQueues>,
}

/// Non-priority tasks by tenant, and the order that chooses among them.
struct TenantQueues {
    queues: Vec<VecDeque<Task>>,
    order: Box<dyn TenantOrder>,
}

impl TenantQueues {
    /// Like [`take`](Self::take), taking only tasks that group `bit` fits (the order chooses
    /// among the tenants that have one; within a tenant, its oldest such task).
    fn take_for(&mut self, bit: u64, max_rows: usize, pad_axes: &[Vec<usize>], rows: &mut usize, out: &mut Vec<Task>) {
        let TenantQueues { queues, order } = self;
        while let Some(tenant) = order.choose_where(&mut |t| queues[t].iter().any(|task| task.groups & bit != 0)) {
            let queue = &mut queues[tenant];
            let at = queue.iter().position(|task| task.groups & bit != 0).expect("the tenant is eligible");
            if !fits(out, *rows, max_rows, &queue[at], pad_axes) {
                break;
            }
            *rows += queue[at].rows;
            out.push(queue.remove(at).expect("index found"));
            order.served(tenant);
        }
    }

    /// Takes tasks tenant by tenant as the order chooses, while they fit (see [`BatchBuffer::take`]).
    fn take(&mut self, max_rows: usize, pad_axes: &[Vec<usize>], rows: &mut usize, out: &mut Vec<Task>) {
        while let Some(tenant) = self.order.choose() {
            let queue = &mut self.queues[tenant];
            let task = queue.front().expect("the order counts the queue's tasks");
            if !fits(out, *rows, max_rows, task, pad_axes) {
                break;
            }
            *rows += task.rows;
            out.push(queue.pop_front().expect("front exists"));
            self.order.served(tenant);
        }
    }
}

/// Whether `task` may join the batch being taken into `out` (`rows` so far).
fn fits(out: &[Task], rows: usize, max_rows: usize, task: &Task, pad_axes: &[Vec<usize>]) -> bool {
    out.is_empty() || (rows + task.rows <= max_rows && out[0].same_shapes(task, pad_axes))
}

pub(crate) struct BatchBuffer {
    queues: Mutex<Queues>,
    pending: AtomicUsize,
    priority_pending: AtomicUsize,
    /// When the oldest waiting task arrived ([`crate::clock::now_ns`]), or `u64::MAX` when empty.
    oldest_ns: AtomicU64,
    /// Per worker group: waiting tasks that fit it (empty without groups).
    fit_pending: Box<[AtomicUsize]>,
    /// A batch that takes priority tasks takes no others (`separate_priority_batches`).
    priority_alone: bool,
    /// Most rows in a batch taken while a priority task waits (`priority_max_batch`).
    priority_rows: usize,
}

impl Default for BatchBuffer {
    fn default() -> Self {
        BatchBuffer {
            queues: Mutex::default(),
            pending: AtomicUsize::new(0),
            priority_pending: AtomicUsize::new(0),
            oldest_ns: AtomicU64::new(u64::MAX),
            fit_pending: Box::default(),
            priority_alone: false,
            priority_rows: usize::MAX,
        }
    }
}

impl Queues {
    fn oldest_ns(&self) -> u64 {
        let front = |q: &VecDeque<Task>| q.front().map_or(u64::MAX, |t| t.enqueued_ns);
        let tenants = self.fair.as_ref().map_or(u64::MAX, |f| f.queues.iter().map(front).min().unwrap_or(u64::MAX));
        front(&self.priority).min(front(&self.normal)).min(tenants)
    }
}

impl BatchBuffer {
    /// Makes the buffer keep a queue per tenant, ordered by the pipeline's
    /// tenant order (nothing changes for fifo). Call before any push.
    pub fn set_fairness(&mut self, spec: &FairnessSpec) {
        let q = self.queues.get_mut();
        debug_assert!(q.normal.is_empty() && q.priority.is_empty(), "set before use");
        q.fair = (spec.order != FairnessKind::Fifo).then(|| TenantQueues {
            queues: (0..spec.tenants.weights.len()).map(|_| VecDeque::new()).collect(),
            order: spec.order.build(&spec.tenants.weights),
        });
    }

    /// Makes a batch that takes priority tasks take no others. Call before any take.
    pub fn set_priority_alone(&mut self, on: bool) {
        self.priority_alone = on;
    }

    /// Caps a batch taken while a priority task waits (so it holds one) at `rows`. Call before any take.
    pub fn set_priority_rows(&mut self, rows: usize) {
        self.priority_rows = rows;
    }

    /// Makes the buffer count, per worker group, the waiting tasks that fit it. Call before any push.
    pub fn set_groups(&mut self, groups: usize) {
        self.fit_pending = (0..groups).map(|_| AtomicUsize::new(0)).collect();
    }

    /// Waiting tasks that worker group `group` fits.
    pub fn fit_pending(&self, group: usize) -> usize {
        self.fit_pending[group].load(Ordering::Acquire)
    }

    /// Adds or removes tasks with fitting-group mask `groups` to the per-group counts (under the lock).
    fn count_fits(&self, groups: u64, add: bool) {
        let mut bits = groups;
        while bits != 0 {
            let g = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if add {
                self.fit_pending[g].fetch_add(1, Ordering::Release);
            } else {
                self.fit_pending[g].fetch_sub(1, Ordering::Release);
            }
        }
    }

    /// Adds a task; returns the pending count after it.
    pub fn push(&self, task: Task) -> usize {
        let mut q = self.queues.lock();
        // `pending` changes only under this lock: 0 means every queue is empty.
        if self.pending.load(Ordering::Relaxed) == 0 {
            self.oldest_ns.store(task.enqueued_ns, Ordering::Release);
        }
        if self.place(&mut q, task, false) {
            self.priority_pending.fetch_add(1, Ordering::Relaxed);
        }
        self.pending.fetch_add(1, Ordering::Release) + 1
    }

    /// Puts `task` into its queue (priority, its tenant's, or the plain one), at the
    /// back or, for a stopped batch's task, the front; counts the groups it fits.
    /// Returns whether it is a priority task (the caller counts it). Under the lock.
    fn place(&self, q: &mut Queues, task: Task, front: bool) -> bool {
        if task.groups != 0 {
            self.count_fits(task.groups, true);
        }
        let priority = task.priority;
        let queue = if priority {
            &mut q.priority
        } else if let Some(fair) = &mut q.fair {
            let tenant = task.request.tenant;
            fair.order.enqueue(tenant);
            &mut fair.queues[tenant]
        } else {
            &mut q.normal
        };
        if front {
            queue.push_front(task);
        } else {
            queue.push_back(task);
        }
        priority
    }

    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    pub fn priority_pending(&self) -> usize {
        self.priority_pending.load(Ordering::Acquire)
    }

    /// How long the oldest waiting task has waited, in ns (0 when empty).
    pub fn oldest_wait_ns(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.oldest_ns.load(Ordering::Acquire))
    }

    /// Moves up to `max_rows` rows of tasks into `out`, priority tasks first
    /// (only those, when it keeps priority batches alone; at most the priority
    /// cap's rows when a priority task waits).
    ///
    /// A batch holds tasks whose inputs agree on every dim but the first, so
    /// the first task taken sets the shapes and the take stops at the first
    /// task of another shape (it waits for a later batch, keeping order).
    /// Axes in `pad_axes[slot]` may differ: they are padded when stitched.
    /// A single task larger than `max_rows` is taken alone.
    pub fn take(&self, max_rows: usize, pad_axes: &[Vec<usize>], out: &mut Vec<Task>) {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        let max_rows = if q.priority.is_empty() { max_rows } else { max_rows.min(self.priority_rows) };
        let mut rows = 0;
        let mut taken_priority = 0;
        for (queue, is_priority) in [(&mut q.priority, true), (&mut q.normal, false)] {
            while let Some(task) = queue.front() {
                if !fits(out, rows, max_rows, task, pad_axes) {
                    break;
                }
                rows += task.rows;
                out.push(queue.pop_front().expect("front exists"));
                taken_priority += usize::from(is_priority);
            }
            if rows >= max_rows || (self.priority_alone && taken_priority > 0) {
                break;
            }
        }
        let room = rows < max_rows && !(self.priority_alone && taken_priority > 0);
        if let Some(fair) = q.fair.as_mut().filter(|_| room) {
            fair.take(max_rows, pad_axes, &mut rows, out);
        }
        self.oldest_ns.store(q.oldest_ns(), Ordering::Release);
        self.priority_pending.fetch_sub(taken_priority, Ordering::Relaxed);
        self.pending.fetch_sub(out.len(), Ordering::Release);
    }

    /// Like [`take`](Self::take), at a node with worker groups, for a worker of group `group`:
    /// takes only tasks the group fits, priority ones first, skipping the rest (which keep
    /// their places); `max_rows` is the group's capacity.
    pub fn take_for(&self, group: usize, max_rows: usize, pad_axes: &[Vec<usize>], out: &mut Vec<Task>) {
        let bit = 1u64 << group;
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        // The cap applies when a priority task this group fits waits (looked for only under a cap).
        let capped = self.priority_rows < max_rows && q.priority.iter().any(|t| t.groups & bit != 0);
        let max_rows = if capped { self.priority_rows } else { max_rows };
        let mut rows = 0;
        let mut taken_priority = 0;
        for (queue, is_priority) in [(&mut q.priority, true), (&mut q.normal, false)] {
            let mut at = 0;
            while at < queue.len() && rows < max_rows {
                let task = &queue[at];
                if task.groups & bit == 0 {
                    at += 1;
                    continue;
                }
                if !fits(out, rows, max_rows, task, pad_axes) {
                    break;
                }
                rows += task.rows;
                out.push(queue.remove(at).expect("index in range"));
                taken_priority += usize::from(is_priority);
            }
            if self.priority_alone && taken_priority > 0 {
                break;
            }
        }
        let room = rows < max_rows && !(self.priority_alone && taken_priority > 0);
        if let Some(fair) = q.fair.as_mut().filter(|_| room) {
            fair.take_for(bit, max_rows, pad_axes, &mut rows, out);
        }
        for task in out.iter() {
            self.count_fits(task.groups, false);
        }
        self.oldest_ns.store(q.oldest_ns(), Ordering::Release);
        self.priority_pending.fetch_sub(taken_priority, Ordering::Relaxed);
        self.pending.fetch_sub(out.len(), Ordering::Release);
    }

    /// Puts the tasks of a stopped batch back (see [`super::stop`]), each at the
    /// front of its queue, in their batch order, so they go first among their
    /// class again; `out` is left empty.
    pub fn put_back(&self, out: &mut Vec<Task>) {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        let (count, mut priority) = (out.len(), 0);
        for task in out.drain(..).rev() {
            priority += usize::from(self.place(q, task, true));
        }
        self.oldest_ns.store(q.oldest_ns(), Ordering::Release);
        self.priority_pending.fetch_add(priority, Ordering::Relaxed);
        self.pending.fetch_add(count, Ordering::Release);
    }

    /// Placement timeout: moves every task whose round began at or before `due_ns`
    /// to the back of its queue (keeping their order), starting a new round at `now_ns`.
    /// Returns how many were moved (retries). A tenant's tasks stay its own, so the
    /// tenant order's counts do not change.
    pub fn requeue_overdue(&self, due_ns: u64, now_ns: u64) -> usize {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        let mut moved = 0;
        let fair = q.fair.as_mut().map(|f| f.queues.iter_mut());
        for queue in [&mut q.priority, &mut q.normal].into_iter().chain(fair.into_iter().flatten()) {
            if !queue.iter().any(|t| t.round_ns <= due_ns) {
                continue;
            }
            let (mut overdue, stay): (VecDeque<Task>, VecDeque<Task>) =
                queue.drain(..).partition(|t| t.round_ns <= due_ns);
            moved += overdue.len();
            overdue.iter_mut().for_each(|t| t.round_ns = now_ns);
            *queue = stay;
            queue.append(&mut overdue);
        }
        moved
    }

    /// Removes every task (shutdown).
    pub fn drain(&self) -> Vec<Task> {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        let mut tasks: Vec<Task> = q.priority.drain(..).chain(q.normal.drain(..)).collect();
        if let Some(fair) = &mut q.fair {
            tasks.extend(fair.queues.iter_mut().flat_map(|queue| queue.drain(..)));
            fair.order.clear();
        }
        self.oldest_ns.store(u64::MAX, Ordering::Release);
        self.fit_pending.iter().for_each(|f| f.store(0, Ordering::Release));
        self.priority_pending.store(0, Ordering::Relaxed);
        self.pending.store(0, Ordering::Release);
        tasks
    }
}
