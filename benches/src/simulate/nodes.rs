//! A node in virtual time: its batching buffer, join table and running totals.
//!
//! The buffer forms batches as the runtime's (`runtime/src/node/buffer.rs`,
//! `take`): priority tasks first, then the others, first come first served,
//! up to the node's batch rows; at most `priority_max_batch` rows while a
//! priority task waits; with `separate_priority_batches`, a batch that takes
//! priority tasks takes no others. Tasks of one request have equal shapes, so
//! no take stops at a shape change.
//!
//! Under a tenant order other than fifo (`[fairness] order`), the non-priority
//! tasks wait in one queue per tenant instead ([`TenantQueues`], after the
//! runtime's `TenantQueues`), and each task taken into a batch is one round of
//! the runtime's own [`TenantOrder`]: it names the tenant, the buffer takes
//! that tenant's oldest task. Under fifo the single queue is kept and no order
//! is asked, as in the runtime.
//!
//! The join table holds, per request, the input slots arrived so far, and per
//! slot how many requests wait for it (what the join boost reads).

use std::collections::{BTreeMap, HashMap, VecDeque};

use baton::fairness::{FairnessKind, FairnessSpec, TenantOrder};
use baton::log_buckets;
use baton::stats::{BatchSizeStats, BatchTimes};
use baton::NodeStats;

/// One request's work waiting at a node.
#[derive(Clone, Copy, Debug)]
pub struct SimTask {
    pub request: usize,
    pub rows: usize,
    pub priority: bool,
    /// When it entered the buffer, virtual ns.
    pub enqueued_ns: u64,
    /// Its request's tenant: the index in the pipeline's `[fairness]` tenants (0: `default`).
    pub tenant: usize,
}

/// Non-priority tasks by tenant, and the tenant order that chooses among them.
pub struct TenantQueues {
    queues: Vec<VecDeque<SimTask>>,
    order: Box<dyn TenantOrder>,
}

impl std::fmt::Debug for TenantQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantQueues").field("queues", &self.queues).finish_non_exhaustive()
    }
}

impl TenantQueues {
    /// A node's tenant queues under `fairness` (its order built by the runtime's
    /// [`FairnessKind::build`] from the tenants' weights); `None` under fifo.
    pub fn new(fairness: &FairnessSpec) -> Option<TenantQueues> {
        (fairness.order != FairnessKind::Fifo).then(|| TenantQueues {
            queues: fairness.tenants.weights.iter().map(|_| VecDeque::new()).collect(),
            order: fairness.order.build(&fairness.tenants.weights),
        })
    }

    fn push(&mut self, task: SimTask) {
        self.order.enqueue(task.tenant);
        self.queues[task.tenant].push_back(task);
    }

    fn len(&self) -> usize {
        self.order.pending()
    }

    fn oldest_ns(&self) -> u64 {
        self.queues.iter().filter_map(|q| q.front()).map(|t| t.enqueued_ns).min().unwrap_or(u64::MAX)
    }

    /// Takes tasks tenant by tenant as the order chooses, while they fit (the runtime's `TenantQueues::take`).
    fn take(&mut self, max_rows: usize, rows: &mut usize, out: &mut Vec<SimTask>) {
        while let Some(tenant) = self.order.choose() {
            let task = self.queues[tenant].front().expect("the order counts the queue's tasks");
            if !out.is_empty() && *rows + task.rows > max_rows {
                break;
            }
            *rows += task.rows;
            out.push(self.queues[tenant].pop_front().expect("front exists"));
            self.order.served(tenant);
        }
    }
}

/// A node's state in virtual time.
#[derive(Debug, Default)]
pub struct SimNode {
    pub priority: VecDeque<SimTask>,
    pub normal: VecDeque<SimTask>,
    /// Per-tenant queues under a tenant order other than fifo (`normal` stays empty then).
    pub fair: Option<TenantQueues>,
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
    /// Its batches' hand-on times (`--hand-on-us`), ns in all.
    pub hand_on_ns: u64,
    /// Each batch's hand-on, dense counts by bucket (`baton::log_buckets`).
    pub hand_on_times: Vec<u64>,
    /// Per batch size (rows): (batches, compute ns, largest ns).
    pub sizes: BTreeMap<usize, (u64, u64, u64)>,
    /// Its told workers' wake-ups, as the runtime records them.
    pub wakes: baton::wake_delays::WakeDelays,
    /// Its tasks' waits in the buffer (`baton::queue_times`).
    pub queue_times: baton::queue_times::QueueTimes,
    /// Per batch size (rows): compute-time counts by log bucket, as the runtime records them.
    pub times: BTreeMap<usize, Vec<u64>>,
    /// The same of its real-time batches alone.
    pub realtime_times: BTreeMap<usize, Vec<u64>>,
    /// Every batch's work at full speed, ns: the CPU time the runtime samples (its wall
    /// time is `compute_ns`).
    pub work_ns: u64,
}

impl SimNode {
    pub fn pending(&self) -> usize {
        self.priority.len() + self.normal.len() + self.fair.as_ref().map_or(0, TenantQueues::len)
    }

    /// When the oldest waiting task arrived, or `u64::MAX`.
    pub fn oldest_ns(&self) -> u64 {
        let front = |q: &VecDeque<SimTask>| q.front().map_or(u64::MAX, |t| t.enqueued_ns);
        let tenants = self.fair.as_ref().map_or(u64::MAX, TenantQueues::oldest_ns);
        front(&self.priority).min(front(&self.normal)).min(tenants)
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
        } else if let Some(fair) = &mut self.fair {
            fair.push(task);
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
        let room = rows < max_rows && !(self.priority_alone && taken_priority);
        if let Some(fair) = self.fair.as_mut().filter(|_| room) {
            fair.take(max_rows, &mut rows, out);
        }
    }

    /// Counts a batch of `rows` rows and `tasks` tasks that computed for `ns`, `work_ns` of it
    /// on a core (the rest its share of the cores kept it waiting); a `realtime` one in the
    /// real-time batches' times too, as the runtime counts them.
    pub fn record_batch(&mut self, rows: usize, tasks: usize, ns: u64, work_ns: u64, realtime: bool) {
        let t = &mut self.totals;
        t.work_ns += work_ns;
        t.executions += 1;
        t.rows += rows as u64;
        t.tasks += tasks as u64;
        t.compute_ns += ns;
        t.task_compute_ns += ns * tasks as u64;
        let size = t.sizes.entry(rows).or_insert((0, 0, 0));
        size.0 += 1;
        size.1 += ns;
        size.2 = size.2.max(ns);
        count_time(&mut t.times, rows, ns);
        if realtime {
            count_time(&mut t.realtime_times, rows, ns);
        }
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
            hand_on_ns: t.hand_on_ns,
            hand_on_times: t.hand_on_times.clone(),
            placement_retries: 0,
            host_device_bytes: 0,
            stopped_batches: 0,
            stopped_ns: 0,
            batch_sizes: t.sizes.iter().map(|(&batch_size, &row)| BatchSizeStats::of_row(batch_size, row)).collect(),
            wake_delays: t.wakes.clone(),
            queue_times: t.queue_times.clone(),
            batch_times: batch_times(&t.times),
            realtime_batch_times: batch_times(&t.realtime_times),
            batch_cpu: baton::batch_cpu::BatchCpu { batches: t.executions, wall_ns: t.compute_ns, cpu_ns: t.work_ns },
            spin_cpu: Default::default(),
        }
    }
}

/// Counts a batch of `rows` rows that took `ns` in `times` (per size, dense counts by log bucket).
fn count_time(times: &mut BTreeMap<usize, Vec<u64>>, rows: usize, ns: u64) {
    times.entry(rows).or_insert_with(|| vec![0; log_buckets::BUCKETS])[log_buckets::bucket(ns)] += 1;
}

/// Per batch size, dense counts by log bucket as the runtime's sparse [`BatchTimes`].
fn batch_times(times: &BTreeMap<usize, Vec<u64>>) -> Vec<BatchTimes> {
    times.iter().map(|(&batch_size, counts)| BatchTimes { batch_size, buckets: log_buckets::sparse(counts) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(request: usize, priority: bool) -> SimTask {
        SimTask { request, rows: 1, priority, enqueued_ns: request as u64, tenant: 0 }
    }

    /// `[fairness]` of `order` over tenants `default` (weight 1), `a` and `b` of these weights.
    fn fairness(order: FairnessKind, a: u32, b: u32) -> FairnessSpec {
        let tenants =
            baton::fairness::Tenants { names: vec!["default".into(), "a".into(), "b".into()], weights: vec![1, a, b] };
        FairnessSpec { order, tenants, granule: None }
    }

    #[test]
    fn backlogged_tenants_are_served_as_the_runtimes_order_steps() {
        for order in [FairnessKind::Weighted, FairnessKind::Stride] {
            let spec = fairness(order, 1, 3);
            let mut n =
                SimNode { batch_rows: 8, priority_rows: 8, fair: TenantQueues::new(&spec), ..SimNode::default() };
            // The same order, stepped by hand over the same arrivals.
            let mut by_hand = order.build(&spec.tenants.weights);
            // 200 tasks each: both stay backlogged through the 160 taken.
            for r in 0..400 {
                let tenant = 1 + r % 2;
                n.push(SimTask { tenant, ..task(r, false) });
                by_hand.enqueue(tenant);
            }
            assert_eq!(n.pending(), 400);
            let (mut served, mut expected, mut out) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..20 {
                n.take(&mut out);
                assert_eq!(out.len(), 8, "{order:?}: full batches while both are backlogged");
                served.extend(out.iter().map(|t| t.tenant));
                expected.extend((0..8).map(|_| by_hand.step().unwrap()));
            }
            assert_eq!(served, expected, "{order:?}");
            let b = served.iter().filter(|&&t| t == 2).count();
            assert!(b.abs_diff(120) <= 1, "{order:?}: weights 1:3 give b three in four of 160: {b}");
            // Within a tenant, first come first served.
            let a: Vec<usize> = out.iter().filter(|t| t.tenant == 1).map(|t| t.request).collect();
            assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        }
    }

    #[test]
    fn priority_tasks_go_first_outside_the_tenant_order() {
        let spec = fairness(FairnessKind::Weighted, 1, 3);
        let mut n = SimNode { batch_rows: 3, priority_rows: 3, fair: TenantQueues::new(&spec), ..SimNode::default() };
        n.push(SimTask { tenant: 1, ..task(0, false) });
        n.push(SimTask { tenant: 2, ..task(1, true) });
        assert_eq!(n.oldest_ns(), 0, "the tenant queues' oldest counts");
        let mut out = Vec::new();
        n.take(&mut out);
        assert_eq!(out.iter().map(|t| t.request).collect::<Vec<_>>(), [1, 0]);
        assert_eq!(n.pending(), 0);
    }

    #[test]
    fn fifo_keeps_the_single_queue() {
        assert!(TenantQueues::new(&fairness(FairnessKind::Fifo, 1, 3)).is_none());
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
