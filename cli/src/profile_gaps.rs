//! `baton profile --idle-gaps US,..`: what an idle gap adds to a node's batch.
//!
//! After a node's timed runs, its smallest batch size runs again in rounds. In
//! each round, every gap asked for takes a turn (in an order that changes from
//! round to round, so that each gap follows every other equally often): [`WARM_RUNS`] runs
//! back to back, the last of them timed as the warm reference, then a sleep of
//! the gap, then one timed run. While the thread sleeps its core may halt and
//! other work (other threads, other tenants of the host) takes the caches; the
//! run after the gap pays to fetch the node's weights again and for the core's
//! clock to rise. A gap's `extra_us` is its runs' median less the warm runs'
//! median (at least 0); `baton simulate --idle-gaps` adds it to a batch by how
//! long its node sat idle before it (docs/simulate.md, "Measured terms").

use std::time::{Duration, Instant};

use baton_planners::pipeline::IdleGap;

/// Runs back to back before each gap; the last of them is the warm reference.
const WARM_RUNS: usize = 3;

/// The order of `gaps` (their indices) in round `round`: a Williams design, so that
/// within rounds every gap follows every other equally often (once in each `gaps` rounds
/// for an even count, twice in each `2 × gaps` for an odd one). A gap that mostly followed
/// the same one (the longest, say) would measure that one's slow warm runs as its own.
fn round_order(gaps: usize, round: usize) -> Vec<usize> {
    if gaps == 0 {
        return Vec::new();
    }
    // 0, 1, n-1, 2, n-2, ...: each difference between neighbours mod n taken once.
    let mut base: Vec<usize> =
        (0..gaps).map(|i| if i % 2 == 1 { i.div_ceil(2) } else { (gaps - i / 2) % gaps }).collect();
    if gaps % 2 == 1 && (round / gaps) % 2 == 1 {
        base.reverse();
    }
    base.into_iter().map(|g| (g + round) % gaps).collect()
}

/// The median of `times` (sorted in place), µs.
fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    times[(times.len() - 1) / 2]
}

/// Each gap's entry from the warm runs' times and each gap's runs' times.
fn summarize(gaps: &[f64], mut warm: Vec<f64>, mut after: Vec<Vec<f64>>) -> Vec<IdleGap> {
    let warm = median(&mut warm);
    gaps.iter()
        .zip(&mut after)
        .map(|(&gap_us, runs)| {
            let median_us = median(runs);
            IdleGap { gap_us, median_us, extra_us: (median_us - warm).max(0.0) }
        })
        .collect()
}

/// Times one call of `run`, µs.
fn timed(run: &mut impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let t0 = Instant::now();
    run()?;
    Ok(t0.elapsed().as_secs_f64() * 1e6)
}

/// Measures `gaps` (µs, each positive) over `rounds` rounds of `run` (one batch of
/// the node); an error from `run` ends it.
pub fn measure(
    gaps: &[f64],
    rounds: usize,
    mut run: impl FnMut() -> Result<(), String>,
) -> Result<Vec<IdleGap>, String> {
    if gaps.is_empty() || rounds == 0 {
        return Ok(Vec::new());
    }
    let mut warm = Vec::with_capacity(rounds * gaps.len());
    let mut after: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); gaps.len()];
    for round in 0..rounds {
        for g in round_order(gaps.len(), round) {
            for _ in 1..WARM_RUNS {
                run()?;
            }
            warm.push(timed(&mut run)?);
            std::thread::sleep(Duration::from_secs_f64(gaps[g] / 1e6));
            after[g].push(timed(&mut run)?);
        }
    }
    Ok(summarize(gaps, warm, after))
}

/// `--idle-gaps`' values, µs: each positive and finite, none twice.
pub fn check(gaps: &[f64]) -> Result<(), String> {
    for (i, &g) in gaps.iter().enumerate() {
        if !(g.is_finite() && g > 0.0) {
            return Err(format!("--idle-gaps: {g} is not a positive number of µs"));
        }
        if gaps[..i].contains(&g) {
            return Err(format!("--idle-gaps: {g} µs is given twice"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_takes_every_gap_once_and_each_gap_follows_every_other_equally_often() {
        for gaps in 1..=7 {
            let rounds = if gaps % 2 == 0 { gaps } else { 2 * gaps };
            let mut follows = vec![vec![0; gaps]; gaps];
            for round in 0..rounds {
                let order = round_order(gaps, round);
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..gaps).collect::<Vec<_>>(), "{gaps} gaps, round {round}: {order:?}");
                for w in order.windows(2) {
                    follows[w[1]][w[0]] += 1;
                }
            }
            let each = rounds / gaps;
            for (g, before) in follows.iter().enumerate() {
                for (h, &n) in before.iter().enumerate() {
                    assert_eq!(n, if g == h { 0 } else { each }, "{gaps} gaps: {g} after {h} {n} times");
                }
            }
        }
        assert!(round_order(0, 5).is_empty());
        assert_eq!(round_order(6, 0), [0, 1, 5, 2, 4, 3]);
    }

    #[test]
    fn a_gap_adds_its_median_over_the_warm_median_and_never_less_than_nothing() {
        let warm = vec![100.0, 90.0, 110.0];
        let after = vec![vec![150.0, 140.0, 400.0], vec![80.0, 85.0, 95.0]];
        let out = summarize(&[1000.0, 3000.0], warm, after);
        assert_eq!(out[0], IdleGap { gap_us: 1000.0, median_us: 150.0, extra_us: 50.0 });
        assert_eq!(out[1], IdleGap { gap_us: 3000.0, median_us: 85.0, extra_us: 0.0 });
    }

    #[test]
    fn each_gap_follows_warm_runs_and_an_error_ends_the_rounds() {
        let mut calls = 0;
        let out = measure(&[50.0, 60.0], 3, || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        // Per round and gap: the warm runs, then the run after the gap.
        assert_eq!(calls, 3 * 2 * (WARM_RUNS + 1));
        assert_eq!(out.iter().map(|g| g.gap_us).collect::<Vec<_>>(), [50.0, 60.0]);
        let mut calls = 0;
        let err = measure(&[50.0], 3, || {
            calls += 1;
            if calls == 6 {
                Err("engine failed".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!((err.as_str(), calls), ("engine failed", 6));
        assert!(measure(&[], 3, || Err("never run".into())).unwrap().is_empty());
    }

    #[test]
    fn gaps_must_be_positive_and_given_once() {
        assert!(check(&[300.0, 1000.0]).is_ok());
        assert!(check(&[0.0]).unwrap_err().contains("0 is not a positive"));
        assert!(check(&[f64::NAN]).unwrap_err().contains("not a positive"));
        assert!(check(&[300.0, 300.0]).unwrap_err().contains("300 µs is given twice"));
    }
}
