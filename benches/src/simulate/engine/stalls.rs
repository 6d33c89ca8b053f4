//! The machine's core stalls (`--core-stalls`, [`crate::simulate::stalls`]): each core
//! stalls for drawn lengths at drawn gaps, and the jobs on it stop meanwhile.

use rand::Rng;

use super::{Ev, Sim};

impl Sim<'_> {
    /// Schedules `core`'s next stall, if its record has any.
    pub(super) fn next_stall(&mut self, core: usize) {
        let Some(stalls) = &self.durations.stalls else { return };
        if let Some(gap) = stalls.gap_ns(core, self.stall_rng.random::<f64>()) {
            self.at(self.now.saturating_add(gap), Ev::Stall { core });
        }
    }

    /// `core` stalls for a drawn length: the running jobs pinned to it stop until it ends;
    /// where none is, a job not pinned stops with the chance that it runs on that core (the
    /// running ones not pinned ÷ the cores, at most 1), one drawn among them. The cores
    /// left run the rest.
    pub(super) fn stall(&mut self, core: usize) {
        let stalls = self.durations.stalls.as_ref().expect("stalls come from a record");
        let end = self.now + stalls.length_ns(core, self.stall_rng.random::<f64>());
        self.next_stall(core);
        self.stalled_until[core] = self.stalled_until[core].max(end);
        self.at(end, Ev::StallEnd);
        self.share();
        let now = self.now;
        let mut pinned_here = false;
        let mut loose = 0;
        for &id in &self.running {
            let b = self.batches[id].as_mut().expect("a running batch");
            if b.core == Some(core) {
                b.frozen_until = b.frozen_until.max(end);
                pinned_here = true;
            } else if b.core.is_none() && !b.frozen(now) {
                loose += 1;
            }
        }
        if self.terms.stalls_hold_idle {
            self.hold_idle_threads(core, end);
        }
        // Under core queues or whole cores a job not pinned is on one core: the stalled core's
        // stops it.
        if !self.terms.core_queues && !self.terms.whole_cores && !pinned_here && loose > 0 {
            let (u, v) = (self.stall_rng.random::<f64>(), self.stall_rng.random::<f64>());
            if u * self.terms.cores < loose as f64 {
                let k = ((v * loose as f64) as usize).min(loose - 1);
                let batches = &mut self.batches;
                let id = self
                    .running
                    .iter()
                    .copied()
                    .filter(|&id| batches[id].as_ref().is_some_and(|b| b.core.is_none() && !b.frozen(now)))
                    .nth(k)
                    .expect("the k-th loose job");
                batches[id].as_mut().expect("a running batch").frozen_until = end;
            }
        }
        self.reschedule();
    }

    /// The idle threads on the stalled `core` stop until `end` too: a worker spinning for work
    /// (running to the OS, so it stays on its core) of a node pinned there, or, not pinned,
    /// with the chance 1 ÷ the cores; and with that chance the load generator asleep until its
    /// next send (its timer waits on that core), or waking.
    fn hold_idle_threads(&mut self, core: usize, end: u64) {
        let cores = self.terms.cores;
        for node in 0..self.idle_workers.len() {
            for w in 0..self.idle_workers[node].len() {
                if !self.spins(node, self.idle_workers[node][w].since) {
                    continue;
                }
                let here = match self.pins[node] {
                    Some(pinned) => pinned == core,
                    None => self.stall_rng.random::<f64>() * cores < 1.0,
                };
                if here {
                    let worker = &mut self.idle_workers[node][w];
                    worker.held_until = worker.held_until.max(end);
                }
            }
        }
        if self.generator_asleep() && self.stall_rng.random::<f64>() * cores < 1.0 {
            self.generator.held_until = self.generator.held_until.max(end);
        }
    }

    /// A stall's end: the jobs it froze run again, and the core is back (unless a later
    /// stall lengthened it).
    pub(super) fn stall_end(&mut self) {
        self.share();
        self.reschedule();
    }
}
