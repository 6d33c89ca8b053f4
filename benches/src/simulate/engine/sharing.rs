//! The running jobs on the cores: each job's share of them (pooled, by the thread
//! classes, a pinned job's core to the jobs pinned there; or on the cores' own
//! queues), its work left brought up to date whenever the shares change, and its
//! pending end.

use super::{Batch, Sim};
use crate::simulate::cores::speeds;

impl Sim<'_> {
    /// Puts a job on the shared cores; a job pinned to a stalled core waits for its end.
    pub(super) fn run_job(&mut self, mut batch: Batch) {
        if let Some(core) = batch.core {
            batch.frozen_until = self.stalled_until[core];
        }
        if self.generator_running && !batch.is_generator_send() {
            self.hold_for_generator(&mut batch);
        }
        if self.terms.core_queues {
            batch.placed = Some(self.place(&batch));
        } else if self.terms.whole_cores {
            self.placed_seq += 1;
            batch.placed = Some((super::whole_cores::UNPLACED, self.placed_seq));
        }
        let id = crate::simulate::store(&mut self.batches, &mut self.free_batches, batch);
        self.share();
        self.running.push(id);
        self.reschedule();
    }

    /// `idle_ns` brought up to now at the cores' current use.
    pub(super) fn idle_ns_now(&self) -> f64 {
        let busy: f64 = self.speeds.iter().sum();
        let cores = self.terms.cores;
        self.idle_ns + (self.now - self.shared_at) as f64 * ((cores - busy) / cores).max(0.0)
    }

    /// Brings the running batches' work left up to now at the speed they ran at.
    pub(super) fn share(&mut self) {
        let elapsed = (self.now - self.shared_at) as f64;
        self.share_halted();
        self.idle_ns = self.idle_ns_now();
        for (&id, &speed) in self.running.iter().zip(&self.speeds) {
            let b = self.batches[id].as_mut().expect("a running batch");
            b.left = (b.left - elapsed * speed).max(0.0);
        }
        self.shared_at = self.now;
    }

    /// Schedules every running batch's end at its speed now, where that speed
    /// differs from the one its pending end was scheduled at (that end goes
    /// stale); an end scheduled at the same speed still holds. A frozen job runs
    /// at speed 0; the others share the cores not stalled.
    pub(super) fn reschedule(&mut self) {
        let now = self.now;
        if self.terms.core_queues {
            self.queue_speeds();
            self.set_ends();
            return;
        }
        if self.terms.whole_cores {
            self.whole_core_speeds();
            self.set_ends();
            return;
        }
        self.speeds.clear();
        self.speeds.resize(self.running.len(), 0.0);
        // Each core that a running pinned job holds runs its pinned jobs alone, and the jobs
        // not pinned share the cores left: the kernel wakes a thread on an idle core, and
        // its balancer moves threads onto a busy core only every few ms, so short jobs wait
        // on the cores left. Where less than a core is left, every job shares every core.
        let mut pinned_cores = std::mem::take(&mut self.pinned_cores);
        pinned_cores.clear();
        pinned_cores.extend((0..self.running.len()).filter_map(|k| {
            let b = self.batch_at(k);
            b.core.filter(|_| !b.frozen(now))
        }));
        pinned_cores.sort_unstable();
        pinned_cores.dedup();
        let free = self.cores_up() - pinned_cores.len() as f64;
        if pinned_cores.is_empty() || free < 1.0 {
            self.share_among(self.cores_up(), |_| true);
        } else {
            for &core in &pinned_cores {
                self.share_among(1.0, |b| b.core == Some(core));
            }
            self.share_among(free, |b| b.core.is_none());
        }
        self.pinned_cores = pinned_cores;
        self.set_ends();
    }

    /// The running job at `k` in `running`.
    fn batch_at(&self, k: usize) -> &Batch {
        self.batches[self.running[k]].as_ref().expect("a running batch")
    }

    /// Sets the speeds of the running jobs not frozen that `member` takes as they share
    /// `cores` by their classes.
    fn share_among(&mut self, cores: f64, member: impl Fn(&Batch) -> bool) {
        let now = self.now;
        self.running_classes.clear();
        for k in 0..self.running.len() {
            let b = self.batch_at(k);
            if !b.frozen(now) && member(b) {
                self.running_classes.push(b.class);
            }
        }
        if self.running_classes.is_empty() {
            return;
        }
        speeds(cores, &self.running_classes, &mut self.unfrozen_speeds);
        let mut shares = self.unfrozen_speeds.iter();
        for k in 0..self.running.len() {
            let b = self.batch_at(k);
            if !b.frozen(now) && member(b) {
                self.speeds[k] = *shares.next().expect("a speed per member");
            }
        }
    }

    /// Schedules each running job's end at its speed in `speeds`, where that differs from the
    /// speed its pending end was scheduled at.
    fn set_ends(&mut self) {
        let now = self.now;
        for (&id, &speed) in self.running.iter().zip(&self.speeds) {
            let b = self.batches[id].as_mut().expect("a running batch");
            if b.speed == speed {
                continue;
            }
            // A new sequence number, as a scheduled event would take one: ends at the
            // same time as events run in the order they were set.
            self.seq += 1;
            b.speed = speed;
            // A job held off every core (a real-time level above takes them all) ends never,
            // until a reschedule gives it a share.
            let end = if speed > 0.0 { now.saturating_add((b.left / speed).round() as u64) } else { u64::MAX };
            b.end = (end, self.seq);
        }
    }

    /// The running batch that ends first: its end and id (None: none running).
    pub(super) fn earliest_end(&self) -> Option<((u64, u64), usize)> {
        self.running.iter().map(|&id| (self.batches[id].as_ref().expect("a running batch").end, id)).min()
    }
}
