//! The cores as the kernel runs threads (`Terms::core_queues`): each job placed on one
//! core's queue as it starts, each core's speeds from its own queue, and the
//! periodic balance that lets an idle core take a waiting job (the order itself is
//! [`crate::simulate::core_queues`]).

use std::cmp::Reverse;

use rand::Rng;

use super::{Batch, Sim};

impl Sim<'_> {
    /// Under `core_queues`, the core `batch` starts on and its place in that core's order.
    pub(super) fn place(&mut self, batch: &Batch) -> (usize, u64) {
        let generator = batch.is_generator_send();
        let core = match (batch.core, generator, self.generator_core) {
            (Some(core), _, _) => core,
            (None, true, Some(core)) => core,
            _ => crate::simulate::core_queues::place(&self.placed_counts(), self.hold_rng.random::<f64>()),
        };
        if generator {
            self.generator_core = Some(core);
        }
        self.placed_seq += 1;
        (core, self.placed_seq)
    }

    /// Under `core_queues`, the running jobs placed on each core.
    fn placed_counts(&self) -> Vec<usize> {
        let mut placed = vec![0; self.stalled_until.len()];
        for &id in &self.running {
            if let Some((core, _)) = self.batches[id].as_ref().and_then(|b| b.placed) {
                placed[core] += 1;
            }
        }
        placed
    }

    /// Under `core_queues`: each core runs the first job of its order at full speed (none
    /// while it stalls), the others on it wait.
    pub(super) fn queue_speeds(&mut self) {
        let now = self.now;
        let mut first: Vec<Option<(crate::simulate::core_queues::RunKey, usize)>> =
            vec![None; self.stalled_until.len()];
        for (k, &id) in self.running.iter().enumerate() {
            let b = self.batches[id].as_ref().expect("a running batch");
            let (core, _) = b.placed.expect("a job placed on a core");
            let key = b.run_key();
            if first[core].is_none_or(|(best, _)| key < best) {
                first[core] = Some((key, k));
            }
        }
        self.speeds.clear();
        self.speeds.resize(self.running.len(), 0.0);
        for (core, pick) in first.into_iter().enumerate() {
            if let Some((_, k)) = pick {
                if self.stalled_until[core] <= now {
                    self.speeds[k] = 1.0;
                }
            }
        }
    }

    /// Under `core_queues`, the kernel's tick: each idle core takes the first waiting job of
    /// a core with jobs waiting, the one with the most first.
    pub(super) fn balance(&mut self) {
        let now = self.now;
        let cores = self.stalled_until.len();
        let mut placed = self.placed_counts();
        let idle: Vec<usize> = (0..cores).filter(|&c| placed[c] == 0 && self.stalled_until[c] <= now).collect();
        if idle.is_empty() || placed.iter().all(|&n| n < 2) {
            return;
        }
        self.share();
        for to in idle {
            let Some(from) = (0..cores).filter(|&c| placed[c] >= 2).max_by_key(|&c| (placed[c], Reverse(c))) else {
                break;
            };
            // The first waiting job on `from` not pinned there (the first by the run order runs).
            let mut order: Vec<(crate::simulate::core_queues::RunKey, usize, bool)> = self
                .running
                .iter()
                .filter_map(|&id| {
                    let b = self.batches[id].as_ref()?;
                    (b.placed?.0 == from).then(|| (b.run_key(), id, b.core.is_some()))
                })
                .collect();
            order.sort();
            let Some(&(_, id, _)) = order.iter().skip(1).find(|(_, _, pinned)| !pinned) else { continue };
            let b = self.batches[id].as_mut().expect("a running batch");
            b.placed = b.placed.map(|(_, seq)| (to, seq));
            placed[from] -= 1;
            placed[to] += 1;
        }
        self.reschedule();
    }
}
