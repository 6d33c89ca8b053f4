//! The priority-FIFO baseline, like Triton's priority levels: nodes holding
//! priority tasks are told to run first, then the others by how long their
//! oldest task has waited; within a node priority tasks go first (the
//! buffer's rule). No weights, no budget: every node with work and an idle
//! worker runs.

use super::{NodeLoad, NodeSelector, Running};

/// Picks every node with pending work and an idle worker: priority nodes first, then oldest work first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriorityFifo {
    /// Reused each round: (priority node, oldest wait, node).
    order: Vec<(bool, u64, usize)>,
}

impl NodeSelector for PriorityFifo {
    fn select(&mut self, loads: &[NodeLoad], _: Running, picked: &mut Vec<usize>) -> Option<u64> {
        picked.clear();
        let order = &mut self.order;
        order.clear();
        order.extend(super::ready(loads).map(|(i, l)| (l.is_priority_node(), l.waited_ns, i)));
        // Priority nodes first, then the longest-waiting work, then lower index.
        order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        picked.extend(order.iter().map(|&(_, _, i)| i));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_nodes_go_first_then_the_oldest_work_and_weights_do_not_count() {
        let load = |pending, priority_pending, waited_ns, weight| NodeLoad {
            pending,
            priority_pending,
            waited_ns,
            weight,
            can_start: true,
            ..NodeLoad::default()
        };
        let loads = [
            load(50, 0, 100, 10.0), // heavy and weighty, but young
            load(1, 0, 900, 0.1),   // the oldest work
            load(2, 1, 10, 0.1),    // a priority task
            load(0, 0, 0, 5.0),     // nothing to do
        ];
        let mut picked = Vec::new();
        let due = PriorityFifo::default().select(&loads, Running { compute: 1e9, nodes: 99 }, &mut picked);
        assert_eq!(picked, vec![2, 1, 0]);
        assert_eq!(due, None);
    }
}
