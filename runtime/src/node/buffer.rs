//! A node's batching buffer: the *batch* stage of seed 003.
//!
//! Tasks wait here until the scheduler tells one of the node's workers to run.
//! Priority tasks wait in their own queue and are batched first; within each
//! queue order is first come, first served. The pending and priority-pending
//! counts are atomics the scheduler reads without taking the lock.
//!
//! Protocol: the counts are changed under the queue lock, together with the
//! queues, so a reader never sees a count below what the queues hold after a
//! push returns. Readers outside the lock get a value that was true at some
//! moment, which is all a scheduling decision needs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::Task;

#[derive(Default)]
struct Queues {
    priority: VecDeque<Task>,
    normal: VecDeque<Task>,
}

#[derive(Default)]
pub(crate) struct BatchBuffer {
    queues: Mutex<Queues>,
    pending: AtomicUsize,
    priority_pending: AtomicUsize,
}

impl BatchBuffer {
    /// Adds a task; returns the pending count after it.
    pub fn push(&self, task: Task) -> usize {
        let mut q = self.queues.lock();
        if task.request.priority {
            q.priority.push_back(task);
            self.priority_pending.fetch_add(1, Ordering::Relaxed);
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

    /// Moves up to `max_rows` rows of tasks into `out`, priority tasks first.
    ///
    /// A batch holds tasks whose inputs agree on every dim but the first, so
    /// the first task taken sets the shapes and the take stops at the first
    /// task of another shape (it waits for a later batch, keeping order).
    /// A single task larger than `max_rows` is taken alone.
    pub fn take(&self, max_rows: usize, out: &mut Vec<Task>) {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        let mut rows = 0;
        let mut taken_priority = 0;
        for (queue, is_priority) in [(&mut q.priority, true), (&mut q.normal, false)] {
            while let Some(task) = queue.front() {
                let fits = out.is_empty() || (rows + task.rows <= max_rows && out[0].same_shapes(task));
                if !fits {
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
        self.priority_pending.fetch_sub(taken_priority, Ordering::Relaxed);
        self.pending.fetch_sub(out.len(), Ordering::Release);
    }

    /// Removes every task (shutdown).
    pub fn drain(&self) -> Vec<Task> {
        let mut guard = self.queues.lock();
        let q = &mut *guard;
        let tasks: Vec<Task> = q.priority.drain(..).chain(q.normal.drain(..)).collect();
        self.priority_pending.store(0, Ordering::Relaxed);
        self.pending.store(0, Ordering::Release);
        tasks
    }
}
