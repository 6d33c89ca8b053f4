//! Seed 003's node selection, as a pure function of the nodes' pending information.
//!
//! Each round the scheduler reads every node's pending-task count and
//! priority-task count. A node holding at least one priority task is a
//! *priority node*. A node's *inference priority* is its pending count times
//! its collaboration weight. Candidates are nodes with pending work and an
//! idle worker; they are ordered priority nodes first, then by descending
//! inference priority (ties: lower node index), and picked:
//!
//! - **count variant**: the first `K - running` of that order, where `K` is
//!   how many nodes may run at once;
//! - **budget variant**: walking that order, each node whose cost fits in
//!   the budget left (budget minus what running nodes hold) is picked; at the
//!   first that does not fit the walk stops (the seed's text) or, with
//!   [`OnMisfit::Skip`], skips it and keeps filling.
//!
//! Nodes not picked keep accumulating tasks, so their priority grows.
//!
//! Beyond the seed, a node's priority may carry a *join boost*: when a join
//! node holds requests waiting for this node's output, their count times the
//! join's weight is added, so the branch a join waits on runs sooner.
//!
//! Two baselines share the interface, for side-by-side benchmarks:
//! [`dynamic`] (each node on its own, like Triton's dynamic batcher: run when
//! the batch is full or the oldest task waited the queue delay) and
//! [`unbatched`] (one request per run, whenever a worker is idle).

use crate::config::{OnMisfit, Selection};

/// What the policy knows of one node this round.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodeLoad {
    /// Tasks waiting in the node's batching buffer.
    pub pending: usize,
    /// Of those, priority tasks.
    pub priority_pending: usize,
    /// Collaboration weight.
    pub weight: f64,
    /// Compute the node holds against the budget while it runs.
    pub cost: f64,
    /// Whether the node has an idle worker to run a batch now.
    pub can_start: bool,
    /// How long the node's oldest pending task has waited, ns.
    pub waited_ns: u64,
    /// The node's `max_batch`.
    pub max_batch: usize,
    /// Added to the inference priority: requests joins downstream wait for
    /// from this node, times the joins' weights (0 without join boost).
    pub boost: f64,
}

impl NodeLoad {
    /// Inference priority: pending count × collaboration weight (plus the join boost,
    /// the seed's "weighted sum" variant).
    pub fn inference_priority(&self) -> f64 {
        self.pending as f64 * self.weight + self.boost
    }

    pub fn is_priority_node(&self) -> bool {
        self.priority_pending > 0
    }
}

/// The selection rule and its limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelectionPolicy {
    pub selection: Selection,
    /// Rated compute budget (budget variant).
    pub budget: f64,
    /// K (count variant).
    pub max_nodes: usize,
    pub on_misfit: OnMisfit,
}

/// Reusable buffers, so a decision allocates nothing.
#[derive(Default)]
pub struct Scratch {
    order: Vec<(bool, f64, usize)>,
}

impl SelectionPolicy {
    /// Picks target nodes into `picked` (cleared first), in pick order.
    ///
    /// `in_use` is the compute held by running nodes; `running` is how many node executions are running.
    pub fn select(
        &self,
        loads: &[NodeLoad],
        in_use: f64,
        running: usize,
        scratch: &mut Scratch,
        picked: &mut Vec<usize>,
    ) {
        picked.clear();
        let order = &mut scratch.order;
        order.clear();
        order.extend(
            loads
                .iter()
                .enumerate()
                .filter(|(_, l)| l.pending > 0 && l.can_start)
                .map(|(i, l)| (l.is_priority_node(), l.inference_priority(), i)),
        );
        if order.is_empty() {
            return;
        }
        // Priority nodes first, then higher inference priority, then lower index.
        order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
        match self.selection {
            Selection::Count => {
                let slots = self.max_nodes.saturating_sub(running);
                picked.extend(order.iter().take(slots).map(|&(_, _, i)| i));
            }
            Selection::Budget => {
                let mut free = self.budget - in_use;
                for &(_, _, i) in order.iter() {
                    let cost = loads[i].cost;
                    if cost <= free + 1e-9 {
                        picked.push(i);
                        free -= cost;
                    } else if self.on_misfit == OnMisfit::Stop {
                        break;
                    }
                }
            }
        }
    }
}

/// The dynamic-batching baseline: picks every node with an idle worker whose
/// batch is full or whose oldest task has waited `delay_ns`. Returns how long
/// until the next node's delay runs out, if a node is still waiting.
pub fn dynamic(loads: &[NodeLoad], delay_ns: u64, picked: &mut Vec<usize>) -> Option<u64> {
    picked.clear();
    let mut next = None::<u64>;
    for (i, l) in loads.iter().enumerate() {
        if l.pending == 0 || !l.can_start {
            continue;
        }
        if l.pending >= l.max_batch || l.waited_ns >= delay_ns {
            picked.push(i);
        } else {
            let left = delay_ns - l.waited_ns;
            next = Some(next.map_or(left, |n| n.min(left)));
        }
    }
    next
}

/// The no-batching baseline: picks every node with pending work and an idle worker.
pub fn unbatched(loads: &[NodeLoad], picked: &mut Vec<usize>) {
    picked.clear();
    picked.extend(loads.iter().enumerate().filter(|(_, l)| l.pending > 0 && l.can_start).map(|(i, _)| i));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 003's worked example: pending 20/15/10/20/10, weights 1/1.5/1/0.8/0.8, nodes 1-3 priority.
    fn seed_example(costs: [f64; 5]) -> Vec<NodeLoad> {
        let pending = [20, 15, 10, 20, 10];
        let weights = [1.0, 1.5, 1.0, 0.8, 0.8];
        (0..5)
            .map(|i| NodeLoad {
                pending: pending[i],
                priority_pending: usize::from(i < 3),
                weight: weights[i],
                cost: costs[i],
                can_start: true,
                ..NodeLoad::default()
            })
            .collect()
    }

    fn pick(policy: SelectionPolicy, loads: &[NodeLoad], in_use: f64, running: usize) -> Vec<usize> {
        let mut picked = Vec::new();
        policy.select(loads, in_use, running, &mut Scratch::default(), &mut picked);
        // Report 1-based node numbers, as the seed does.
        picked.iter().map(|i| i + 1).collect()
    }

    fn count(k: usize) -> SelectionPolicy {
        SelectionPolicy { selection: Selection::Count, budget: f64::INFINITY, max_nodes: k, on_misfit: OnMisfit::Stop }
    }

    fn budget(b: f64, on_misfit: OnMisfit) -> SelectionPolicy {
        SelectionPolicy { selection: Selection::Budget, budget: b, max_nodes: usize::MAX, on_misfit }
    }

    #[test]
    fn inference_priorities_match_the_seed() {
        let p: Vec<f64> = seed_example([1.0; 5]).iter().map(NodeLoad::inference_priority).collect();
        assert_eq!(p, vec![20.0, 22.5, 10.0, 16.0, 8.0]);
    }

    #[test]
    fn count_variant_k1_picks_node_2() {
        assert_eq!(pick(count(1), &seed_example([1.0; 5]), 0.0, 0), vec![2]);
    }

    #[test]
    fn count_variant_k4_picks_nodes_1_2_3_and_4() {
        let mut picked = pick(count(4), &seed_example([1.0; 5]), 0.0, 0);
        assert_eq!(picked, vec![2, 1, 3, 4], "priority nodes by priority, then the best non-priority node");
        picked.sort();
        assert_eq!(picked, vec![1, 2, 3, 4]);
    }

    #[test]
    fn count_variant_with_more_priority_nodes_than_k_takes_the_best_priority_nodes() {
        assert_eq!(pick(count(2), &seed_example([1.0; 5]), 0.0, 0), vec![2, 1]);
    }

    #[test]
    fn count_variant_counts_running_nodes_against_k() {
        assert_eq!(pick(count(4), &seed_example([1.0; 5]), 0.0, 3), vec![2]);
        assert!(pick(count(4), &seed_example([1.0; 5]), 0.0, 4).is_empty());
    }

    #[test]
    fn budget_variant_fills_priority_nodes_then_others() {
        // Costs 1 each, budget 4: nodes 2, 1, 3 (priority), then 4 (16 > 8).
        assert_eq!(pick(budget(4.0, OnMisfit::Stop), &seed_example([1.0; 5]), 0.0, 0), vec![2, 1, 3, 4]);
    }

    #[test]
    fn budget_variant_stops_at_first_misfit() {
        // Node 2 (cost 2) fits, node 1 (cost 3) does not: stop, though node 3 (cost 1) would fit.
        let loads = seed_example([3.0, 2.0, 1.0, 1.0, 1.0]);
        assert_eq!(pick(budget(4.0, OnMisfit::Stop), &loads, 0.0, 0), vec![2]);
    }

    #[test]
    fn budget_variant_skip_and_fill_keeps_going() {
        let loads = seed_example([3.0, 2.0, 1.0, 1.0, 1.0]);
        assert_eq!(pick(budget(4.0, OnMisfit::Skip), &loads, 0.0, 0), vec![2, 3, 4]);
    }

    #[test]
    fn busy_nodes_hold_their_cost_against_the_budget() {
        // 2.5 of 4 in use by running nodes: only 1.5 left.
        let loads = seed_example([1.0, 1.0, 1.0, 1.0, 1.0]);
        assert_eq!(pick(budget(4.0, OnMisfit::Stop), &loads, 2.5, 2), vec![2]);
    }

    #[test]
    fn nodes_without_idle_workers_or_work_are_not_candidates() {
        let mut loads = seed_example([1.0; 5]);
        loads[1].can_start = false;
        loads[0].pending = 0;
        loads[0].priority_pending = 0;
        assert_eq!(pick(count(2), &loads, 0.0, 0), vec![3, 4]);
    }

    #[test]
    fn priority_beats_a_larger_non_priority_queue() {
        let loads = vec![
            NodeLoad { pending: 100, weight: 1.0, cost: 1.0, can_start: true, ..NodeLoad::default() },
            NodeLoad {
                pending: 1,
                priority_pending: 1,
                weight: 1.0,
                cost: 1.0,
                can_start: true,
                ..NodeLoad::default()
            },
        ];
        assert_eq!(pick(count(1), &loads, 0.0, 0), vec![2]);
    }

    #[test]
    fn dynamic_runs_full_or_overdue_nodes_and_says_when_the_next_is_due() {
        let load =
            |pending, waited_ns| NodeLoad { pending, waited_ns, max_batch: 4, can_start: true, ..NodeLoad::default() };
        let loads = [load(4, 10), load(1, 1_500), load(2, 300), load(0, 0)];
        let mut picked = Vec::new();
        let next = dynamic(&loads, 1_000, &mut picked);
        assert_eq!(picked, vec![0, 1], "full batch and overdue task");
        assert_eq!(next, Some(700), "node 2 is due in 1000 - 300 ns");
    }

    #[test]
    fn unbatched_picks_every_node_with_work_and_an_idle_worker() {
        let load = |pending, can_start| NodeLoad { pending, can_start, ..NodeLoad::default() };
        let mut picked = Vec::new();
        unbatched(&[load(3, true), load(0, true), load(2, false), load(1, true)], &mut picked);
        assert_eq!(picked, vec![0, 3]);
    }

    #[test]
    fn join_boost_lets_the_branch_a_join_waits_on_run_first() {
        let mut loads = vec![
            NodeLoad { pending: 10, weight: 1.0, cost: 1.0, can_start: true, ..NodeLoad::default() },
            NodeLoad { pending: 4, weight: 1.0, cost: 1.0, can_start: true, ..NodeLoad::default() },
        ];
        assert_eq!(pick(count(1), &loads, 0.0, 0), vec![1]);
        // A join holds 8 requests waiting for node 2's output, with weight 1.
        loads[1].boost = 8.0;
        assert_eq!(loads[1].inference_priority(), 12.0);
        assert_eq!(pick(count(1), &loads, 0.0, 0), vec![2]);
    }
}
