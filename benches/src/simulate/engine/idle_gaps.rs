//! A node's idle gap (`--idle-gaps`): the time the cores sat idle since its worker
//! parked, and the extra its next batch pays for it ([`crate::simulate::idle`]).
//! A worker spinning for work keeps its core awake, so neither its own gap nor the
//! cores' halted time counts the spin (the cores' idle time, what a real run reads
//! as the process's CPU left over, does: a spin is not a job).

use super::Sim;

impl Sim<'_> {
    /// What `node`'s idle gap adds to the batch it starts now (`--idle-gaps`): the gap is
    /// the time the cores sat halted (`halted_ns`) since its worker parked after its last
    /// batch; none while that worker still spins, none while another of its batches
    /// computes, and none to a real-time batch unless `--realtime-idle-gaps` (else its
    /// measured `--realtime-scale` holds what it pays).
    pub(super) fn idle_extra_ns(&self, node: usize, realtime: bool) -> u64 {
        if !self.durations.pays_idle_gap(realtime) || self.computing[node] > 0 {
            return 0;
        }
        let gap_start = match self.parks_at[node] {
            Some(parks) if parks > self.now => return 0,
            Some(parks) => Some(self.halted_ns_at(parks)),
            None => self.halted_ns_at_end[node],
        };
        let gap = gap_start.map(|at| (self.halted_ns_at(self.now) - at).round() as u64);
        self.durations.idle_extra_ns(node, gap)
    }

    /// `halted_ns` at `at`, between the last share and now (clamped to them).
    pub(super) fn halted_ns_at(&self, at: u64) -> f64 {
        self.halted_ns + self.halted_since_share(at.clamp(self.shared_at, self.now))
    }

    /// The halted time from the last share to `to`: a core halts where no job runs on it
    /// and no idle worker spins there for work (a spin yields its core, but keeps it
    /// awake and leaves its caches be).
    fn halted_since_share(&self, to: u64) -> f64 {
        let busy: f64 = self.speeds.iter().sum();
        let cores = self.terms.cores;
        let from = self.shared_at;
        let free = cores - busy;
        let (spin_ns, spins) = self.spin_ns_between(from, to);
        // While no more workers spin than cores are free (the common case), no share
        // clips at 0: the halted time is the idle time less the spins.
        if spins <= free {
            return (to.saturating_sub(from) as f64 * free - spin_ns).max(0.0) / cores;
        }
        let spins: Vec<(u64, u64)> = self.spins_between(from, to).collect();
        let mut bounds: Vec<u64> = spins.iter().flat_map(|&(s, e)| [s, e]).chain([from, to]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        bounds
            .windows(2)
            .map(|w| {
                let spinning = spins.iter().filter(|&&(s, e)| s <= w[0] && w[1] <= e).count() as f64;
                (w[1] - w[0]) as f64 * ((cores - busy - spinning) / cores).max(0.0)
            })
            .sum()
    }

    /// The idle workers' spins for work within `from..to`: their summed length, ns, and how
    /// many there are.
    fn spin_ns_between(&self, from: u64, to: u64) -> (f64, f64) {
        self.spins_between(from, to)
            .fold((0.0, 0.0), |(total, count), (start, end)| (total + (end - start) as f64, count + 1.0))
    }

    /// The idle workers' spins for work, clipped to `from..to` (the non-empty ones).
    fn spins_between(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.idle_workers
            .iter()
            .zip(&self.spin_ns)
            .filter(|&(_, &spin)| spin > 0)
            .flat_map(move |(idle, &spin)| idle.iter().map(move |w| (w.since.max(from), (w.since + spin).min(to))))
            .filter(|&(start, end)| start < end)
    }

    /// Brings `halted_ns` up to now, the gap's start of each node whose worker parked
    /// since the last share with it; before the cores' use changes.
    pub(super) fn share_halted(&mut self) {
        for node in 0..self.parks_at.len() {
            match self.parks_at[node] {
                Some(parks) if parks <= self.now => {
                    self.halted_ns_at_end[node] = Some(self.halted_ns_at(parks));
                    self.parks_at[node] = None;
                }
                _ => {}
            }
        }
        self.halted_ns = self.halted_ns_at(self.now);
    }
}
