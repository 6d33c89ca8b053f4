//! The cores as whole cores (`Terms::whole_cores`): each running job holds a whole core
//! or waits for one, in place of a share of one pool of cores every running job takes.
//!
//! The kernel runs one thread at a time on a core, and a batch far shorter than its time
//! slice runs to its end once it has a core: under `many_nodes`' load the real deep nodes'
//! batches ran on a core for 0.92-0.99 of their wall time, where the pooled cores stretched
//! every batch to about twice its work. So here the waiting comes before a job, not
//! within it. The jobs take the cores in the kernel's order
//! ([`crate::simulate::core_queues::run_key`] and the class's weight): real-time first,
//! then the generator's send, then the heavier nice, then the first started. A job keeps
//! the core it runs on until it ends or a job before it in that order wants a core and
//! none is free; one waiting takes the first core that frees (any core: the kernel's
//! balancing pulls a waiting thread to a core that goes idle). A job pinned to a core
//! waits for that core; a job whose core stalls waits for it (the thread is on that core
//! when the hypervisor takes it). Not modelled: time slices (a job longer than the
//! kernel's slice shares its core with those waiting there).

use std::cmp::Reverse;

use super::Sim;
use crate::simulate::core_queues::RunKey;

/// A job's core before it first runs.
pub(super) const UNPLACED: usize = usize::MAX;

/// The order in which jobs take whole cores: the run order's real-time level and the
/// generator's preemption, then the heavier weight, then the first started.
type WholeKey = (Reverse<u8>, bool, Reverse<u64>, u64);

impl Sim<'_> {
    /// Under `whole_cores`: the speed of each running job, 1 on the core it holds, 0 waiting.
    pub(super) fn whole_core_speeds(&mut self) {
        let now = self.now;
        let mut free: Vec<bool> = self.stalled_until.iter().map(|&until| until <= now).collect();
        let mut order: Vec<(WholeKey, usize)> = self
            .running
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                let b = self.batches[id].as_ref().expect("a running batch");
                let (rt, generator, seq): RunKey = b.run_key();
                ((rt, generator, Reverse(b.class.weight.round() as u64), seq), k)
            })
            .collect();
        order.sort_unstable();
        self.speeds.clear();
        self.speeds.resize(self.running.len(), 0.0);
        for (_, k) in order {
            let b = self.batches[self.running[k]].as_mut().expect("a running batch");
            if b.frozen(now) {
                continue;
            }
            let (held, seq) = b.placed.expect("a job in the run order");
            let core = match b.core {
                Some(pinned) => free[pinned].then_some(pinned),
                None if held != UNPLACED && self.stalled_until[held] > now => None,
                None if held != UNPLACED && free[held] => Some(held),
                None => free.iter().position(|&f| f),
            };
            if let Some(core) = core {
                free[core] = false;
                b.placed = Some((core, seq));
                self.speeds[k] = 1.0;
            }
        }
    }
}
