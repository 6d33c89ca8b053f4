//! The load generator's run on the cores (`Terms::generator_holds_core`): while its
//! thread sends it holds a core, and a job the OS left on that core waits for the
//! run's end.

use rand::Rng;

use super::{Batch, Sim};

impl Sim<'_> {
    /// The running jobs that run now (not frozen by a stall or behind the generator).
    fn unfrozen_jobs(&self) -> usize {
        let now = self.now;
        self.running.iter().filter(|&&id| !self.batches[id].as_ref().is_some_and(|b| b.frozen(now))).count()
    }

    /// The cores not stalled now.
    pub(super) fn cores_up(&self) -> f64 {
        let stalled = self.stalled_until.iter().filter(|&&until| until > self.now).count();
        (self.terms.cores - stalled as f64).max(0.0)
    }

    /// The generator's thread wakes and runs (`Terms::generator_holds_core`): it takes a
    /// core, and where every core is taken, the job on the core it takes (one drawn among
    /// the running jobs not pinned) waits behind it, as the OS's wake-up preemption leaves
    /// the preempted thread on its own core's queue.
    pub(super) fn start_generator_run(&mut self) {
        self.generator_running = true;
        if (self.unfrozen_jobs() as f64) < self.cores_up() {
            return;
        }
        let now = self.now;
        let loose: Vec<usize> = self
            .running
            .iter()
            .copied()
            .filter(|&id| self.batches[id].as_ref().is_some_and(|b| b.core.is_none() && !b.frozen(now)))
            .collect();
        if loose.is_empty() {
            return;
        }
        let k = self.hold_rng.random_range(0..loose.len());
        self.share();
        let b = self.batches[loose[k]].as_mut().expect("a running batch");
        b.frozen_until = u64::MAX;
        b.behind_generator = true;
        self.reschedule();
    }

    /// A job not pinned that starts while the generator runs and every core is taken lands
    /// on the generator's core with the chance a woken thread lands on any one busy core
    /// (1 ÷ the cores up): it waits there until the generator's run ends.
    pub(super) fn hold_for_generator(&mut self, batch: &mut Batch) {
        let cores = self.cores_up();
        if batch.core.is_some() || cores <= 0.0 || (self.unfrozen_jobs() as f64) < cores {
            return;
        }
        if self.hold_rng.random::<f64>() * cores < 1.0 {
            batch.frozen_until = u64::MAX;
            batch.behind_generator = true;
        }
    }

    /// The generator's queue is empty and its thread sleeps: the jobs behind its run go on.
    pub(super) fn end_generator_run(&mut self) {
        self.generator_running = false;
        self.share();
        let now = self.now;
        for &id in &self.running {
            let b = self.batches[id].as_mut().expect("a running batch");
            if b.behind_generator {
                b.behind_generator = false;
                b.frozen_until = now;
            }
        }
        self.reschedule();
    }
}
