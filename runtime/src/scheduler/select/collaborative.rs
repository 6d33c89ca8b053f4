//! The collaborative rule (docs/scheduling.md): priority nodes first, then
//! pending tasks × collaboration weight, under a compute budget or a count.
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
//!   first that does not fit the walk stops (the rule's text) or, with
//!   [`OnMisfit::Skip`], skips it and keeps filling.
//!
//! Nodes not picked keep accumulating tasks, so their priority grows.
//!
//! With the **work-conserving budget** ([`Collaborative::with_work_conserving`],
//! budget variant), the budget holds work back only while priority work
//! waits: while no node holds a priority task, every candidate runs (as the
//! greedy baseline would, so light load pays no wait); while one does,
//! priority nodes run whatever the budget has left, and the other candidates
//! fill only what the budget still has (stop or skip as above), so the cores
//! go to the priority work first.
//!
//! With a **bounded hold** ([`Collaborative::with_max_hold`]), the budget (or
//! K) may hold a node's oldest task back at most that long: a candidate whose
//! oldest task has waited the bound is *overdue* and is picked whatever the
//! budget or K says, after the walk above. `select` returns how long until the
//! next candidate not picked falls overdue, so the scheduler decides then
//! even between ticks. The hold bounds the wait the rule adds for the work no
//! one is waiting on first, at the price of that much priority work sharing
//! the cores sooner.
//!
//! With **brief nodes** ([`Collaborative::with_brief_batches`], budget
//! variant), a node whose batches have taken less than a bound on average so
//! far is outside the budget: it runs whenever it is a candidate, and its
//! running batches hold none of the budget. Holding such a node back frees a
//! core for a few µs, while its tasks, and the nodes downstream that they
//! would feed, wait for a whole batch of the nodes that hold the budget. A
//! node that has not run yet is not brief.
//!
//! A node's priority may also carry a *join boost* (see [`NodeLoad::boost`]):
//! when a join node holds requests waiting for this node's output, their
//! count times the join's weight is added, so the branch a join waits on runs sooner.

use super::{NodeLoad, NodeSelector, Running};
use crate::config::{OnMisfit, Selection};

/// The collaborative rule with its limits.
#[derive(Clone, Debug, PartialEq)]
pub struct Collaborative {
    pub selection: Selection,
    /// Rated compute budget (budget variant).
    pub budget: f64,
    /// K (count variant).
    pub max_nodes: usize,
    pub on_misfit: OnMisfit,
    /// Budget variant: the budget holds work back only while priority work waits.
    pub work_conserving: bool,
    /// Longest a candidate's oldest task may be held back, ns (`None`: no bound).
    pub max_hold_ns: Option<u64>,
    /// Budget variant: nodes whose mean batch is shorter than this, ns, are outside the budget.
    pub brief_batch_ns: Option<u64>,
    /// Reused each round, so a decision allocates nothing: (priority node, inference priority, node).
    order: Vec<(bool, f64, usize)>,
}

impl Collaborative {
    pub fn new(selection: Selection, budget: f64, max_nodes: usize, on_misfit: OnMisfit) -> Self {
        Collaborative {
            selection,
            budget,
            max_nodes,
            on_misfit,
            work_conserving: false,
            max_hold_ns: None,
            brief_batch_ns: None,
            order: Vec::new(),
        }
    }

    /// The rule with the work-conserving budget (see the module docs) on or off.
    pub fn with_work_conserving(mut self, on: bool) -> Self {
        self.work_conserving = on;
        self
    }

    /// The rule with a bounded hold (see the module docs): `None`, no bound.
    pub fn with_max_hold(mut self, max_hold_ns: Option<u64>) -> Self {
        self.max_hold_ns = max_hold_ns;
        self
    }

    /// The rule with brief nodes (see the module docs): `None`, every node is within the budget.
    pub fn with_brief_batches(mut self, brief_batch_ns: Option<u64>) -> Self {
        self.brief_batch_ns = brief_batch_ns;
        self
    }

    /// Whether a candidate's oldest task has been held back the longest the hold allows.
    fn overdue(&self, load: &NodeLoad) -> bool {
        self.max_hold_ns.is_some_and(|hold| load.waited_ns >= hold)
    }

    /// Picks the overdue candidates the walk left out, and returns how long until
    /// the first candidate still left out falls overdue.
    fn pick_overdue(&self, loads: &[NodeLoad], picked: &mut Vec<usize>) -> Option<u64> {
        let hold = self.max_hold_ns?;
        let mut next_due: Option<u64> = None;
        for &(_, _, i) in &self.order {
            if picked.contains(&i) {
                continue;
            }
            if self.overdue(&loads[i]) {
                picked.push(i);
            } else {
                let left = hold - loads[i].waited_ns;
                next_due = Some(next_due.map_or(left, |d| d.min(left)));
            }
        }
        next_due
    }
}

impl NodeSelector for Collaborative {
    fn select(&mut self, loads: &[NodeLoad], running: Running, picked: &mut Vec<usize>) -> Option<u64> {
        picked.clear();
        let order = &mut self.order;
        order.clear();
        order.extend(super::ready(loads).map(|(i, l)| (l.is_priority_node(), l.inference_priority(), i)));
        if order.is_empty() {
            return None;
        }
        // Priority nodes first, then higher inference priority, then lower index.
        order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
        match self.selection {
            Selection::Count => {
                let slots = self.max_nodes.saturating_sub(running.nodes);
                picked.extend(order.iter().take(slots).map(|&(_, _, i)| i));
            }
            Selection::Budget => {
                let priority_waits = self.work_conserving && loads.iter().any(NodeLoad::is_priority_node);
                if self.work_conserving && !priority_waits {
                    picked.extend(order.iter().map(|&(_, _, i)| i));
                    return None;
                }
                // Whether a node's batches have been brief enough so far to leave it outside the budget.
                let bound = self.brief_batch_ns;
                let brief = |l: &NodeLoad| bound.is_some_and(|b| l.mean_batch_ns > 0 && l.mean_batch_ns < b);
                // Brief nodes' running batches hold none of the budget.
                let brief_running: f64 = loads.iter().filter(|l| brief(l)).map(|l| l.running as f64 * l.cost).sum();
                let mut free = self.budget - (running.compute - brief_running);
                for &(priority_node, _, i) in order.iter() {
                    let cost = loads[i].cost;
                    if brief(&loads[i]) {
                        picked.push(i);
                    } else if cost <= free + 1e-9 || (priority_waits && priority_node) {
                        picked.push(i);
                        free -= cost;
                    } else if self.on_misfit == OnMisfit::Stop {
                        break;
                    }
                }
            }
        }
        self.pick_overdue(loads, picked)
    }

    /// Arrivals wait for the tick unless `decide_on_arrival` is set: tasks accumulate into batches.
    fn decides_on_every_arrival(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule's worked example (docs/scheduling.md): pending 20/15/10/20/10, weights 1/1.5/1/0.8/0.8, nodes 1-3 priority.
    fn worked_example(costs: [f64; 5]) -> Vec<NodeLoad> {
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

    fn pick(mut policy: Collaborative, loads: &[NodeLoad], in_use: f64, running: usize) -> Vec<usize> {
        let mut picked = Vec::new();
        policy.select(loads, Running { compute: in_use, nodes: running }, &mut picked);
        // Report 1-based node numbers, as the worked example does.
        picked.iter().map(|i| i + 1).collect()
    }

    fn count(k: usize) -> Collaborative {
        Collaborative::new(Selection::Count, f64::INFINITY, k, OnMisfit::Stop)
    }

    fn budget(b: f64, on_misfit: OnMisfit) -> Collaborative {
        Collaborative::new(Selection::Budget, b, usize::MAX, on_misfit)
    }

    #[test]
    fn inference_priorities_match_the_worked_example() {
        let p: Vec<f64> = worked_example([1.0; 5]).iter().map(NodeLoad::inference_priority).collect();
        assert_eq!(p, vec![20.0, 22.5, 10.0, 16.0, 8.0]);
    }

    #[test]
    fn count_variant_k1_picks_node_2() {
        assert_eq!(pick(count(1), &worked_example([1.0; 5]), 0.0, 0), vec![2]);
    }

    #[test]
    fn count_variant_k4_picks_nodes_1_2_3_and_4() {
        let mut picked = pick(count(4), &worked_example([1.0; 5]), 0.0, 0);
        assert_eq!(picked, vec![2, 1, 3, 4], "priority nodes by priority, then the best non-priority node");
        picked.sort();
        assert_eq!(picked, vec![1, 2, 3, 4]);
    }

    #[test]
    fn count_variant_with_more_priority_nodes_than_k_takes_the_best_priority_nodes() {
        assert_eq!(pick(count(2), &worked_example([1.0; 5]), 0.0, 0), vec![2, 1]);
    }

    #[test]
    fn count_variant_counts_running_nodes_against_k() {
        assert_eq!(pick(count(4), &worked_example([1.0; 5]), 0.0, 3), vec![2]);
        assert!(pick(count(4), &worked_example([1.0; 5]), 0.0, 4).is_empty());
    }

    #[test]
    fn budget_variant_fills_priority_nodes_then_others() {
        // Costs 1 each, budget 4: nodes 2, 1, 3 (priority), then 4 (16 > 8).
        assert_eq!(pick(budget(4.0, OnMisfit::Stop), &worked_example([1.0; 5]), 0.0, 0), vec![2, 1, 3, 4]);
    }

    #[test]
    fn budget_variant_stops_at_first_misfit() {
        // Node 2 (cost 2) fits, node 1 (cost 3) does not: stop, though node 3 (cost 1) would fit.
        let loads = worked_example([3.0, 2.0, 1.0, 1.0, 1.0]);
        assert_eq!(pick(budget(4.0, OnMisfit::Stop), &loads, 0.0, 0), vec![2]);
    }

    #[test]
    fn budget_variant_skip_and_fill_keeps_going() {
        let loads = worked_example([3.0, 2.0, 1.0, 1.0, 1.0]);
        assert_eq!(pick(budget(4.0, OnMisfit::Skip), &loads, 0.0, 0), vec![2, 3, 4]);
    }

    #[test]
    fn busy_nodes_hold_their_cost_against_the_budget() {
        // 2.5 of 4 in use by running nodes: only 1.5 left.
        let loads = worked_example([1.0, 1.0, 1.0, 1.0, 1.0]);
        assert_eq!(pick(budget(4.0, OnMisfit::Stop), &loads, 2.5, 2), vec![2]);
    }

    #[test]
    fn nodes_without_idle_workers_or_work_are_not_candidates() {
        let mut loads = worked_example([1.0; 5]);
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

    fn work_conserving(b: f64, on_misfit: OnMisfit) -> Collaborative {
        budget(b, on_misfit).with_work_conserving(true)
    }

    #[test]
    fn work_conserving_budget_runs_every_candidate_while_no_priority_work_waits() {
        let mut loads = worked_example([1.0; 5]);
        for l in &mut loads {
            l.priority_pending = 0;
        }
        // Budget 1, 3 in use: the rule as written runs nothing.
        assert!(pick(budget(1.0, OnMisfit::Stop), &loads, 3.0, 3).is_empty());
        assert_eq!(pick(work_conserving(1.0, OnMisfit::Stop), &loads, 3.0, 3), vec![2, 1, 4, 3, 5]);
    }

    #[test]
    fn work_conserving_budget_runs_priority_nodes_and_holds_the_others_to_the_budget() {
        // Nodes 1-3 hold priority tasks; budget 4, 2.5 in use: 1.5 left.
        let loads = worked_example([1.0; 5]);
        assert_eq!(pick(budget(4.0, OnMisfit::Skip), &loads, 2.5, 2), vec![2], "the rule as written");
        assert_eq!(
            pick(work_conserving(4.0, OnMisfit::Skip), &loads, 2.5, 2),
            vec![2, 1, 3],
            "every priority node runs; nothing is left for node 4 or 5"
        );
        // With budget left over after the priority nodes, the others fill it.
        assert_eq!(pick(work_conserving(4.0, OnMisfit::Skip), &loads, 0.0, 0), vec![2, 1, 3, 4]);
    }

    #[test]
    fn brief_nodes_are_outside_the_budget_while_priority_work_waits() {
        // Node 1 (priority) and node 2 (plain) are slow; nodes 3 and 4 (plain) are light,
        // 10 µs per batch so far; node 5 (plain, light) has not run yet. Budget 2: two slow
        // batches fill it, and a light one running (cost 0.2) would leave too little for node 2.
        let slow = |priority_pending, running| NodeLoad {
            pending: 8,
            priority_pending,
            weight: 1.0,
            cost: 1.0,
            can_start: running == 0,
            running,
            mean_batch_ns: 600_000,
            ..NodeLoad::default()
        };
        let light = |mean_batch_ns, running| NodeLoad {
            pending: 4,
            weight: 1.0,
            cost: 0.2,
            can_start: running == 0,
            running,
            mean_batch_ns,
            ..NodeLoad::default()
        };
        let loads = [slow(1, 0), slow(0, 1), light(10_000, 0), light(10_000, 0), light(0, 0)];
        let rule = |brief_ns| work_conserving(2.0, OnMisfit::Skip).with_brief_batches(brief_ns);
        assert_eq!(pick(rule(None), &loads, 1.0, 1), vec![1], "without the bound, the light nodes wait");
        assert_eq!(
            pick(rule(Some(50_000)), &loads, 1.0, 1),
            vec![1, 3, 4],
            "brief nodes run beside the two slow batches; a node that has not run is not brief"
        );
        assert_eq!(pick(rule(Some(5_000)), &loads, 1.0, 1), vec![1], "10 µs is not brief under a 5 µs bound");
        // A brief node's running batch holds none of the budget: with node 2 idle and a light
        // batch running, the budget still has room for node 2 beside node 1.
        let loads = [slow(1, 0), slow(0, 0), light(10_000, 1), light(10_000, 0)];
        assert_eq!(pick(rule(None), &loads, 0.2, 1), vec![1, 4], "the light batch's 0.2 leaves 0.8 after node 1");
        assert_eq!(pick(rule(Some(50_000)), &loads, 0.2, 1), vec![1, 2, 4]);
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

    fn held(waited_ns: [u64; 5]) -> Vec<NodeLoad> {
        let mut loads = worked_example([1.0; 5]);
        for (l, w) in loads.iter_mut().zip(waited_ns) {
            l.waited_ns = w;
        }
        loads
    }

    fn pick_with_due(mut policy: Collaborative, loads: &[NodeLoad], in_use: f64) -> (Vec<usize>, Option<u64>) {
        let mut picked = Vec::new();
        let due = policy.select(loads, Running { compute: in_use, nodes: 0 }, &mut picked);
        (picked.iter().map(|i| i + 1).collect(), due)
    }

    #[test]
    fn bounded_hold_runs_a_node_the_budget_held_back_as_long_as_the_bound() {
        // Budget 4 fills with nodes 2, 1, 3 and 4; node 5 waits. The hold is 1000 ns.
        let policy = || work_conserving(4.0, OnMisfit::Skip).with_max_hold(Some(1000));
        let (picked, due) = pick_with_due(policy(), &held([0, 0, 0, 0, 400]), 0.0);
        assert_eq!(picked, vec![2, 1, 3, 4]);
        assert_eq!(due, Some(600), "node 5 falls overdue 600 ns from now");
        let (picked, due) = pick_with_due(policy(), &held([0, 0, 0, 0, 1000]), 0.0);
        assert_eq!(picked, vec![2, 1, 3, 4, 5], "overdue: past the budget");
        assert_eq!(due, None);
        // Without a bound the budget holds node 5 however long it waited.
        let (picked, due) = pick_with_due(work_conserving(4.0, OnMisfit::Skip), &held([0, 0, 0, 0, u64::MAX]), 0.0);
        assert_eq!((picked, due), (vec![2, 1, 3, 4], None));
    }

    #[test]
    fn bounded_hold_picks_overdue_nodes_after_the_walk_stopped() {
        // Costs 3, 2, 1, 1, 1 and budget 4 stop the walk at node 1; node 4 is overdue, node 3 not yet.
        let mut loads = worked_example([3.0, 2.0, 1.0, 1.0, 1.0]);
        loads[2].waited_ns = 10;
        loads[3].waited_ns = 50;
        let policy = budget(4.0, OnMisfit::Stop).with_max_hold(Some(50));
        assert_eq!(pick_with_due(policy, &loads, 0.0), (vec![2, 4], Some(40)));
    }

    #[test]
    fn bounded_hold_runs_overdue_nodes_beyond_k() {
        let policy = count(1).with_max_hold(Some(100));
        assert_eq!(pick_with_due(policy, &held([0, 0, 0, 100, 0]), 0.0), (vec![2, 4], Some(100)));
    }
}
