//! The no-batching baseline: one request per run, whenever a worker is idle.

use super::{NodeLoad, NodeSelector, Running};

/// Picks every node with pending work and an idle worker; its batches hold one task.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Unbatched;

impl NodeSelector for Unbatched {
    fn select(&mut self, loads: &[NodeLoad], _: Running, picked: &mut Vec<usize>) -> Option<u64> {
        super::pick_every_ready_node(loads, picked);
        None
    }

    fn batch_rows(&self, _: usize) -> usize {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbatched_picks_every_node_with_work_and_an_idle_worker() {
        let load = |pending, can_start| NodeLoad { pending, can_start, ..NodeLoad::default() };
        let mut picked = Vec::new();
        Unbatched.select(
            &[load(3, true), load(0, true), load(2, false), load(1, true)],
            Running::default(),
            &mut picked,
        );
        assert_eq!(picked, vec![0, 3]);
    }
}
