//! A node's batching buffer: the *batch* stage of seed 003.
//!
//! Tasks wait here until the scheduler tells one of the node's workers to run.
//! Priority tasks wait in their own queue and are batched first; within each
//! queue order is first come, first served. The pending and priority-pending
//! counts are atomics the scheduler reads without taking the lock.
//!
//! With a fairness policy other than fifo (`[fairness] policy`, see
//! [`crate::fairness`]) the non-priority tasks wait in one queue per tenant
//! instead, and each task taken into a batch is one round of the policy: it
//! names the tenant, the buffer takes that tenant's oldest task. The policy
//! lives under the same lock as the queues, so its job counts always equal
//! the tenant queues' lengths.
//!
//! Protocol: the counts are changed under the queue lock, together with the
//! queues, so a reader never sees a count below what the queues hold after a
//! push returns. Readers outside the lock get a value that was true at some
//! moment, which is all a scheduling decision needs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::Task;
use crate::fairness::{FairPolicy, FairnessKind, FairnessSpec};

#[derive(Default)]
struct Queues {
    priority: VecDeque<Task>,
    normal: VecDeque<Task>,
    /// Per-tenant queues, when the pipeline's fairness policy is not fifo (`normal` stays empty then).
    fair: Option<TenantQueues>,
}

/// Non-priority tasks by tenant, and the policy that chooses among them.
struct TenantQueues {
    queues: Vec<VecDeque<Task>>,
    policy: Box<dyn FairPolicy>,
}

impl TenantQueues {
    /// Takes tasks tenant by tenant as the policy chooses, while they fit (see [`BatchBuffer::take`]).
    fn take(&mut self, max_rows: usize, pad_axes: &[Vec<usize>], rows: &mut usize, out: &mut Vec<Task>) {
        while let Some(tenant) = self.policy.choose() {
            let queue = &mut self.queues[tenant];
            let task = queue.front().expect("the policy counts the queue's tasks");
            if !fits(out, *rows, max_rows, task, pad_axes) {
                break;
            }
            *rows += task.rows;
            out.push(queue.pop_front().expect("front exists"));
            self.policy.served(tenant);
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
}

impl Default for BatchBuffer {
    fn default() -> Self {
        BatchBuffer {
            queues: Mutex::default(),
            pending: AtomicUsize::new(0),
            priority_pending: AtomicUsize::new(0),
            oldest_ns: AtomicU64::new(u64::MAX),
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
    /// fairness policy (nothing changes for fifo). Call before any push.
    pub fn set_fairness(&mut self, spec: &FairnessSpec) {
        let q = self.queues.get_mut();
        debug_assert!(q.normal.is_empty() && q.priority.is_empty(), "set before use");
        q.fair = (spec.policy != FairnessKind::Fifo).then(|| TenantQueues {
            queues: (0..spec.tenants.weights.len()).map(|_| VecDeque::new()).collect(),
            policy: spec.policy.build(&spec.tenants.weights),
        });
    }

    /// Adds a task; returns the pending count after it.
    pub fn push(&self, task: Task) -> usize {
        let mut q = self.queues.lock();
        // `pending` changes only under this lock: 0 means every queue is empty.
        if self.pending.load(Ordering::Relaxed) == 0 {
            self.oldest_ns.store(task.enqueued_ns, Ordering::Release);
        }
        if task.priority {
            q.priority.push_back(task);
            self.priority_pending.fetch_add(1, Ordering::Relaxed);
        } else if let Some(fair) = &mut q.fair {
            let tenant = task.request.tenant;
            fair.queues[tenant].push_back(task);
            fair.policy.enqueue(tenant);
        } else {
            q.normal.push_back(task);
        }
        self.pending.fetch_add(1, Ordering::Release) + 1
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

    /// Moves up to `max_rows` rows of tasks into `out`, priority tasks first.
    ///
    /// A batch holds tasks whose inputs agree on every dim but the first, so
    /// the first task taken sets the shapes and the take stops at the first
    /// task of another shape (it waits for a later batch, keeping order).
    /// Axes in `pad_axes[slot]` may differ: they are padded when stitched.
    /// A single task larger than `max_rows` is taken alone.
    pub fn take(&self, max_rows: usize, pad_axes: &[Vec<usize>], out: &mut Vec<Task>) {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
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
            if rows >= max_rows {
                break;
            }
        }
        if let Some(fair) = q.fair.as_mut().filter(|_| rows < max_rows) {
            fair.take(max_rows, pad_axes, &mut rows, out);
        }
        self.oldest_ns.store(q.oldest_ns(), Ordering::Release);
        self.priority_pending.fetch_sub(taken_priority, Ordering::Relaxed);
        self.pending.fetch_sub(out.len(), Ordering::Release);
    }

    /// Removes every task (shutdown).
    pub fn drain(&self) -> Vec<Task> {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        let mut tasks: Vec<Task> = q.priority.drain(..).chain(q.normal.drain(..)).collect();
        if let Some(fair) = &mut q.fair {
            tasks.extend(fair.queues.iter_mut().flat_map(|queue| queue.drain(..)));
            fair.policy.clear();
        }
        self.oldest_ns.store(u64::MAX, Ordering::Release);
        self.priority_pending.store(0, Ordering::Relaxed);
        self.pending.store(0, Ordering::Release);
        tasks
    }
}
