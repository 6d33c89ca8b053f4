//! A node in virtual time: its batching buffer, join table and running totals.
//!
//! The buffer forms batches as the runtime's (`runtime/src/node/buffer.rs`,
//! `take`): priority tasks first, then the others, first come first served,
//! up to the node's batch rows; at most `priority_max_batch` rows while a
//! priority task waits; with `separate_priority_batches`, a batch that takes
//! priority tasks takes no others. Tasks of one request have equal shapes, so
//! no take stops at a shape change.
//!
//! The join table holds, per request, the input slots arrived so far, and per
//! slot how many requests wait for it (what the join boost reads).

use std::collections::{BTreeMap, HashMap, VecDeque};

use baton::stats::BatchSizeStats;
use baton::NodeStats;

/// One request's work waiting at a node.
#[derive(Clone, Copy, Debug)]
pub struct SimTask {
    pub request: usize,
    pub rows: usize,
    pub priority: bool,
    /// When it entered the buffer, virtual ns.
    pub enqueued_ns: u64,
}

/// A node's state in virtual time.
#[derive(Debug, Default)]
pub struct SimNode {
    pub priority: VecDeque<SimTask>,
    pub normal: VecDeque<SimTask>,
    /// Workers told to run and not finished.
    pub busy: usize,
    /// Most rows per batch (the selector's batch rows).
    pub batch_rows: usize,
    /// Most rows in a batch while a priority task waits.
    pub priority_rows: usize,
    pub priority_alone: bool,
    /// Join table: per request, the bit mask of the slots arrived.
    pub joins: HashMap<usize, u64>,
    /// Per input slot: requests in the join table that wait for it.
    pub waiting: Vec<usize>,
    /// The mask of every input slot (needed for a task).
    pub full_mask: u64,
    pub totals: Totals,
}

/// Running totals, as the runtime's node counters keep them.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub executions: u64,
    pub rows: u64,
    pub tasks: u64,
    pub queue_ns: u64,
    pub compute_ns: u64,
    pub task_compute_ns: u64,
    /// Per batch size (rows): (batches, compute ns, largest ns).
    pub sizes: BTreeMap<usize, (u64, u64, u64)>,
}

impl SimNode {
    pub fn pending(&self) -> usize {
        self.priority.len() + self.normal.len()
    }

    /// When the oldest waiting task arrived, or `u64::MAX`.
    pub fn oldest_ns(&self) -> u64 {
        let front = |q: &VecDeque<SimTask>| q.front().map_or(u64::MAX, |t| t.enqueued_ns);
        front(&self.priority).min(front(&self.normal))
    }

    /// Input `slot` of `request` arrived: `true` when every slot has (the task may run).
    pub fn join(&mut self, request: usize, slot: usize) -> bool {
        let bit = 1u64 << slot;
        let mask = self.joins.entry(request).or_insert(0);
        if *mask == 0 {
            // A new partial waits for every slot but this one.
            for (s, w) in self.waiting.iter_mut().enumerate() {
                if s != slot && self.full_mask & (1 << s) != 0 {
                    *w += 1;
                }
            }
        } else {
            self.waiting[slot] -= 1;
        }
        *mask |= bit;
        if *mask == self.full_mask {
            self.joins.remove(&request);
            return true;
        }
        false
    }

    pub fn push(&mut self, task: SimTask) {
        if task.priority {
            self.priority.push_back(task);
        } else {
            self.normal.push_back(task);
        }
    }

    /// Takes a batch into `out` (cleared first), as the runtime's buffer does.
    pub fn take(&mut self, out: &mut Vec<SimTask>) {
        out.clear();
        let max_rows = if self.priority.is_empty() { self.batch_rows } else { self.batch_rows.min(self.priority_rows) };
        let mut rows = 0;
        let mut taken_priority = false;
        for is_priority in [true, false] {
            let queue = if is_priority { &mut self.priority } else { &mut self.normal };
            while let Some(task) = queue.front() {
                if !out.is_empty() && rows + task.rows > max_rows {
                    break;
                }
                rows += task.rows;
                taken_priority |= is_priority;
                out.push(queue.pop_front().expect("front exists"));
            }
            if rows >= max_rows || (self.priority_alone && taken_priority) {
                break;
            }
        }
    }

    /// Counts a batch of `rows` rows and `tasks` tasks that computed for `ns`.
    pub fn record_batch(&mut self, rows: usize, tasks: usize, ns: u64) {
        let t = &mut self.totals;
        t.executions += 1;
        t.rows += rows as u64;
        t.tasks += tasks as u64;
        t.compute_ns += ns;
        t.task_compute_ns += ns * tasks as u64;
        let size = t.sizes.entry(rows).or_insert((0, 0, 0));
        size.0 += 1;
        size.1 += ns;
        size.2 = size.2.max(ns);
    }

    /// The totals as the runtime's [`NodeStats`] give them.
    pub fn stats(&self, name: &str) -> NodeStats {
        let t = &self.totals;
        NodeStats {
            name: name.to_string(),
            executions: t.executions,
            rows: t.rows,
            tasks: t.tasks,
            failed_batches: 0,
            queue_ns: t.queue_ns,
            compute_ns: t.compute_ns,
            task_compute_ns: t.task_compute_ns,
            placement_retries: 0,
            host_device_bytes: 0,
            stopped_batches: 0,
            stopped_ns: 0,
            batch_sizes: t.sizes.iter().map(|(&batch_size, &row)| BatchSizeStats::of_row(batch_size, row)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(request: usize, priority: bool) -> SimTask {
        SimTask { request, rows: 1, priority, enqueued_ns: request as u64 }
    }

    #[test]
    fn batches_take_priority_tasks_first_within_the_caps() {
        let mut n = SimNode { batch_rows: 3, priority_rows: 2, ..SimNode::default() };
        for (r, p) in [(0, false), (1, true), (2, false), (3, true), (4, true)] {
            n.push(task(r, p));
        }
        let mut out = Vec::new();
        n.take(&mut out);
        assert_eq!(out.iter().map(|t| t.request).collect::<Vec<_>>(), [1, 3], "capped at 2 while priority waits");
        n.take(&mut out);
        assert_eq!(out.iter().map(|t| t.request).collect::<Vec<_>>(), [4, 0]);
        n.take(&mut out);
        assert_eq!(out.iter().map(|t| t.request).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn a_join_counts_the_requests_waiting_for_each_slot() {
        let mut n = SimNode { full_mask: 0b11, waiting: vec![0, 0], ..SimNode::default() };
        assert!(!n.join(7, 0));
        assert_eq!(n.waiting, [0, 1]);
        assert!(n.join(7, 1));
        assert_eq!(n.waiting, [0, 0]);
        assert!(n.joins.is_empty());
    }
}
