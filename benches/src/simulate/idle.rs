//! What an idle gap adds to a batch (`--idle-gaps`), from the profile's
//! `idle_gaps` (`baton profile --idle-gaps`).
//!
//! While a node sits idle its worker sleeps, its core may halt, and other work
//! (other tenants of the host) takes the caches: the node's next batch fetches
//! its weights again and waits for the core's clock to rise. The profile
//! measured, per node, its smallest batch after sleeping each of a few gaps
//! against warm runs back to back: the extra µs at each gap ([`IdleCurve`]).
//!
//! The engine (`Sim::idle_extra_ns`) adds to each normal-class batch the extra
//! at its node's idle gap: the time the cores sat idle since the node's last
//! batch ended (the integral of the share of the cores no job ran on: a core
//! busy with another node's batch does not halt, and keeps the node's weights in
//! its last-level cache), 0 while another of its batches computes, and the
//! longest gap measured for a node that has not run yet. Real-time batches take
//! none: their measured `--realtime-scale` holds what they pay. Between two
//! measured gaps the extra is linear in the gap, from 0 at gap 0; past the last
//! it stays at the last's. The extra does not grow with the batch's rows (the
//! weights are fetched once) and takes no factor of the other terms.

use serde::Deserialize;

/// One measured gap, as `baton profile` writes it (other fields are ignored).
#[derive(Clone, Debug, Deserialize)]
pub struct GapEntry {
    pub gap_us: f64,
    pub extra_us: f64,
}

/// A node's extra by idle gap.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleCurve {
    /// (gap µs, extra µs), ascending in the gap, from (0, 0).
    points: Vec<(f64, f64)>,
}

impl IdleCurve {
    /// The curve through `measured` (`None` without entries).
    pub fn of(measured: &[GapEntry]) -> Option<IdleCurve> {
        if measured.is_empty() {
            return None;
        }
        let mut points: Vec<(f64, f64)> = measured.iter().map(|g| (g.gap_us, g.extra_us.max(0.0))).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points.insert(0, (0.0, 0.0));
        Some(IdleCurve { points })
    }

    /// The extra, µs, after an idle gap of `gap_us` (`None`: never ran, the longest gap's).
    pub fn extra_us(&self, gap_us: Option<f64>) -> f64 {
        let last = self.points[self.points.len() - 1].1;
        gap_us.map_or(last, |gap| super::durations::linear_at(&self.points, gap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve() -> IdleCurve {
        let at = |gap_us, extra_us| GapEntry { gap_us, extra_us };
        IdleCurve::of(&[at(1000.0, 100.0), at(100.0, 20.0), at(10000.0, 400.0)]).unwrap()
    }

    #[test]
    fn the_extra_is_linear_between_measured_gaps_from_nothing_at_no_gap() {
        let c = curve();
        assert_eq!(c.extra_us(Some(0.0)), 0.0);
        assert_eq!(c.extra_us(Some(50.0)), 10.0);
        assert_eq!(c.extra_us(Some(100.0)), 20.0);
        assert_eq!(c.extra_us(Some(550.0)), 60.0);
        assert_eq!(c.extra_us(Some(5500.0)), 250.0);
    }

    #[test]
    fn past_the_longest_gap_and_before_the_first_batch_the_extra_is_the_longest_gaps() {
        let c = curve();
        assert_eq!(c.extra_us(Some(1e6)), 400.0);
        assert_eq!(c.extra_us(None), 400.0);
    }

    #[test]
    fn no_entries_no_curve_and_a_negative_extra_counts_as_none() {
        assert!(IdleCurve::of(&[]).is_none());
        let c = IdleCurve::of(&[GapEntry { gap_us: 100.0, extra_us: -5.0 }]).unwrap();
        assert_eq!(c.extra_us(Some(100.0)), 0.0);
    }
}
