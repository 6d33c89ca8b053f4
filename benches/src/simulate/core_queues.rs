//! The cores as the kernel runs threads on them (`--core-queues`), in place of one pool of
//! cores every running job shares.
//!
//! Each job is placed on one core as it starts and stays there: a job pinned to a core on
//! that core; the load generator's sends on the core its thread ran on last (it wakes where
//! it slept); any other job on a core with the fewest jobs placed (one drawn among them). A
//! core runs one job at a time: the highest real-time priority first, then the generator's
//! send (its wake-up preempts whatever runs there; at a higher nice it waits its turn), then
//! the job placed there first. The
//! others wait on that core's queue, even while another core is idle: on a scheduling trace
//! of this machine one wait in 191 over 300 µs moved to the idle core
//! (`docs/simulate.md`, "Where the real runs wait for a core"). A stalled core runs none.
//!
//! Every `BALANCE_NS` (the kernel's tick at 250 Hz) each idle core takes the first job
//! waiting on a core where jobs wait, as the kernel's periodic balancing pulls a waiting
//! thread to an idle core; between ticks a job waits where it is.
//!
//! Not modelled: the kernel's time slices (a job runs to its end once it has its core) and
//! nice weights (jobs of one real-time level run in their order, whatever their nice).

use std::cmp::Reverse;

use super::cores::Class;

/// The kernel's tick here (`CONFIG_HZ=250`), when it balances its cores' queues, ns.
pub const BALANCE_NS: u64 = 4_000_000;

/// The core a job not pinned starts on: one of those with the fewest jobs placed, the
/// `u`-th share of them (`u` in [0, 1)).
pub fn place(placed: &[usize], u: f64) -> usize {
    let fewest = placed.iter().copied().min().unwrap_or(0);
    let candidates: Vec<usize> = (0..placed.len()).filter(|&c| placed[c] == fewest).collect();
    let k = ((u * candidates.len() as f64) as usize).min(candidates.len().saturating_sub(1));
    candidates.get(k).copied().unwrap_or(0)
}

/// The order in which a core picks the job it runs: the least key first.
pub type RunKey = (Reverse<u8>, bool, u64);

/// A job's place in its core's order: its real-time priority, whether it preempts as the
/// generator's send does, and when it was placed (`placed_seq`).
pub fn run_key(class: Class, preempts: bool, placed_seq: u64) -> RunKey {
    (Reverse(class.realtime_priority), !preempts, placed_seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_goes_to_a_core_with_the_fewest_jobs_drawn_among_them() {
        assert_eq!(place(&[1, 0], 0.9), 1);
        assert_eq!(place(&[0, 2, 0], 0.0), 0);
        assert_eq!(place(&[0, 2, 0], 0.6), 2);
        assert_eq!(place(&[3, 3], 0.999), 1);
    }

    #[test]
    fn a_core_runs_real_time_first_then_the_generators_send_then_the_first_placed() {
        let generator = run_key(Class::PLAIN, true, 9);
        let first = run_key(Class::PLAIN, false, 1);
        let later = run_key(Class::PLAIN, false, 2);
        let realtime = run_key(Class::REALTIME, false, 5);
        let mut keys = vec![later, generator, realtime, first];
        keys.sort();
        assert_eq!(keys, vec![realtime, generator, first, later]);
    }
}
