//! The dynamic-batching baseline, like Triton's dynamic batcher: each node on
//! its own runs when its batch is full or its oldest task has waited the queue delay.

use super::{NodeLoad, NodeSelector, Running};

/// Picks every node with an idle worker whose batch is full or whose oldest task has waited `delay_ns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dynamic {
    /// `max_queue_delay_us`, in ns.
    pub delay_ns: u64,
}

impl NodeSelector for Dynamic {
    /// Returns how long until the next node's delay runs out, if a node is still waiting.
    fn select(&mut self, loads: &[NodeLoad], _: Running, picked: &mut Vec<usize>) -> Option<u64> {
        picked.clear();
        let mut next = None::<u64>;
        for (i, l) in loads.iter().enumerate() {
            if l.pending == 0 || !l.can_start {
                continue;
            }
            if l.pending >= l.max_batch || l.waited_ns >= self.delay_ns {
                picked.push(i);
            } else {
                let left = self.delay_ns - l.waited_ns;
                next = Some(next.map_or(left, |n| n.min(left)));
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_runs_full_or_overdue_nodes_and_says_when_the_next_is_due() {
        let load =
            |pending, waited_ns| NodeLoad { pending, waited_ns, max_batch: 4, can_start: true, ..NodeLoad::default() };
        let loads = [load(4, 10), load(1, 1_500), load(2, 300), load(0, 0)];
        let mut picked = Vec::new();
        let next = Dynamic { delay_ns: 1_000 }.select(&loads, Running::default(), &mut picked);
        assert_eq!(picked, vec![0, 1], "full batch and overdue task");
        assert_eq!(next, Some(700), "node 2 is due in 1000 - 300 ns");
    }
}
