//! The machine's core stalls as the model draws them (`--core-stalls`, a
//! `baton stalls` record): per core of the model, stalls come as a Poisson
//! process at the rate its record core saw, each as long as a draw from that
//! core's stalls. The model's core `k` takes record core `k mod n` of the
//! record's `n`.
//!
//! A record that read its threads' CPU clocks says which part of each stall that
//! clock counted as the thread's own: those parts are already in every CPU time the
//! model's terms come from (the profile's timed runs, the batches' sampled CPU time), so
//! the model draws the others alone, unless asked for the whole record
//! (`--core-stalls-whole`). With the clock read across each stall
//! ([`crate::stalls::CoreStalls::uncounted_parts_us`]) the model's stalls are the parts
//! it did not count, each as likely, at the rate the stalls with such a part came; with
//! the clock read over the whole watch only
//! ([`crate::stalls::CoreStalls::counted_share`]) they are the whole stalls at their
//! rate times the uncounted share.
//!
//! What a stall does is the engine's ([`super::engine`]): the jobs on the
//! stalled core stop until it ends, and the others share the cores left.

use std::path::Path;

use crate::stalls::StallRecord;

/// One core's stalls: their rate and lengths.
#[derive(Clone, Debug, PartialEq)]
struct CoreDraws {
    /// Stalls per ns.
    rate_per_ns: f64,
    /// Every recorded stall's length, ns.
    lengths_ns: Vec<u64>,
}

/// The record's cores, in its order.
#[derive(Clone, Debug, PartialEq)]
pub struct StallDraws {
    cores: Vec<CoreDraws>,
}

impl StallDraws {
    /// Reads a `baton stalls` record (errors name `--core-stalls` and the file).
    pub fn load(path: &Path, whole: bool) -> Result<StallDraws, String> {
        let record = StallRecord::read(path).map_err(|e| format!("--core-stalls {e}"))?;
        Ok(StallDraws::of(&record, whole))
    }

    /// The draws of `record`: of the stalls' parts its CPU clocks did not count, or (`whole`)
    /// of all the stalls.
    pub fn of(record: &StallRecord, whole: bool) -> StallDraws {
        let per_ns = 1.0 / (record.duration_s * 1e9);
        let ns = |us: &f64| (us * 1e3).round() as u64;
        let cores = record
            .cores
            .iter()
            .map(|c| match (!whole).then(|| c.uncounted_parts_us()).flatten() {
                Some(parts) => {
                    CoreDraws { rate_per_ns: parts.len() as f64 * per_ns, lengths_ns: parts.iter().map(ns).collect() }
                }
                None => CoreDraws {
                    rate_per_ns: c.stalls_us.len() as f64
                        * per_ns
                        * if whole { 1.0 } else { 1.0 - c.counted_share().unwrap_or(0.0) },
                    lengths_ns: c.stalls_us.iter().map(ns).collect(),
                },
            })
            .collect();
        StallDraws { cores }
    }

    fn core(&self, core: usize) -> &CoreDraws {
        &self.cores[core % self.cores.len()]
    }

    /// From one stall of the model's `core` to its next, ns (`u` uniform in [0, 1));
    /// `None`: that core never stalls.
    pub fn gap_ns(&self, core: usize, u: f64) -> Option<u64> {
        let c = self.core(core);
        (c.rate_per_ns > 0.0).then(|| (-(1.0 - u).ln() / c.rate_per_ns).round() as u64)
    }

    /// A stall's length on the model's `core`, ns (`u` uniform in [0, 1)): one of its record's, each as likely.
    pub fn length_ns(&self, core: usize, u: f64) -> u64 {
        let c = &self.core(core).lengths_ns;
        c[((u * c.len() as f64) as usize).min(c.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stalls::{CoreStalls, KIND};

    fn record() -> StallRecord {
        StallRecord {
            kind: KIND.into(),
            threshold_us: 2.0,
            duration_s: 2.0,
            duty: 1.0,
            read_us: 0.03,
            slice_us: None,
            cores: vec![
                CoreStalls {
                    core: 0,
                    stalls_us: vec![10.0, 30.0, 50.0, 4000.0],
                    sleep_lateness_us: vec![],
                    spun_us: None,
                    spun_cpu_us: None,
                    stalls_cpu_us: vec![],
                },
                CoreStalls {
                    core: 1,
                    stalls_us: vec![],
                    sleep_lateness_us: vec![],
                    spun_us: None,
                    spun_cpu_us: None,
                    stalls_cpu_us: vec![],
                },
            ],
        }
    }

    #[test]
    fn gaps_follow_the_cores_rate_and_lengths_its_record() {
        let d = StallDraws::of(&record(), false);
        // 4 stalls in 2 s: 2 a second, a mean gap of 0.5 s; the median gap is ln 2 × 0.5 s.
        assert_eq!(d.gap_ns(0, 0.5), Some((0.5e9 * std::f64::consts::LN_2).round() as u64));
        assert_eq!(d.gap_ns(0, 0.0), Some(0));
        assert_eq!(d.gap_ns(1, 0.5), None);
        // The model's core 2 takes record core 0.
        assert_eq!(d.gap_ns(2, 0.5), d.gap_ns(0, 0.5));
        assert_eq!(d.length_ns(0, 0.0), 10_000);
        assert_eq!(d.length_ns(0, 0.6), 50_000);
        assert_eq!(d.length_ns(0, 0.999), 4_000_000);
    }

    #[test]
    fn the_stalls_its_cpu_clock_counted_leave_the_rate_unless_the_whole_record_is_asked() {
        // 4090 µs stalled over 2 s spun; a CPU time 3681 µs above the time less the stalls:
        // 90% counted, so 10% of the rate is drawn, each stall as long as before.
        let mut r = record();
        r.cores[0].spun_us = Some(2e6);
        r.cores[0].spun_cpu_us = Some(2e6 - 4090.0 + 3681.0);
        let thinned = StallDraws::of(&r, false);
        let median_gap = thinned.gap_ns(0, 0.5).unwrap() as f64;
        assert!((median_gap - 5e9 * std::f64::consts::LN_2).abs() <= 1.0, "{median_gap} ns");
        assert_eq!(thinned.length_ns(0, 0.999), 4_000_000);
        assert_eq!(StallDraws::of(&r, true), StallDraws::of(&record(), false), "the whole record");
        assert_eq!(thinned.gap_ns(1, 0.5), None, "core 1 stalled never");
    }

    #[test]
    fn with_the_clock_read_across_each_stall_the_model_draws_each_stalls_uncounted_part() {
        // Of 4 stalls in 2 s, two were counted whole; the others leave 20 and 3600 µs.
        let mut r = record();
        r.cores[0].spun_us = Some(2e6);
        r.cores[0].spun_cpu_us = Some(2e6);
        r.cores[0].stalls_cpu_us = vec![10.0, 10.0, 50.0, 400.0];
        let d = StallDraws::of(&r, false);
        // 2 stalls in 2 s: a mean gap of 1 s.
        assert_eq!(d.gap_ns(0, 0.5), Some((1e9 * std::f64::consts::LN_2).round() as u64));
        assert_eq!(d.length_ns(0, 0.0), 20_000);
        assert_eq!(d.length_ns(0, 0.999), 3_600_000);
        assert_eq!(StallDraws::of(&r, true), StallDraws::of(&record(), false), "the whole record");
        assert_eq!(d.gap_ns(1, 0.5), None, "core 1 stalled never");
    }
}
