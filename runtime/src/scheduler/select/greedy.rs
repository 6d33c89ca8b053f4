//! The greedy baseline, Triton's default dynamic batcher with no queue delay:
//! a node runs as soon as it has work and a free worker, and its batch is
//! whatever is waiting (up to `max_batch`). No weights, no budget, no waiting.

use super::{NodeLoad, NodeSelector, Running};

/// Picks every node with pending work and an idle worker; its batches take what waits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Greedy;

impl NodeSelector for Greedy {
    fn select(&mut self, loads: &[NodeLoad], _: Running, picked: &mut Vec<usize>) -> Option<u64> {
        super::pick_every_ready_node(loads, picked);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_runs_every_node_with_work_and_an_idle_worker_at_once_with_full_batches() {
        let load = |pending, can_start| NodeLoad { pending, can_start, max_batch: 8, ..NodeLoad::default() };
        let mut picked = Vec::new();
        let loads = [load(1, true), load(0, true), load(5, false), load(3, true)];
        let due = Greedy.select(&loads, Running { compute: 100.0, nodes: 100 }, &mut picked);
        assert_eq!(picked, vec![0, 3], "no budget or count holds a node back, and one task is enough");
        assert_eq!(due, None, "nothing waits for time");
        assert_eq!(Greedy.batch_rows(8), 8, "a batch takes whatever is waiting");
        assert!(Greedy.decides_on_every_arrival());
    }
}
