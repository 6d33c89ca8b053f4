//! The open-loop generator's sends, by how long its thread slept before each: how many,
//! and how far behind their schedule they left.
//!
//! The generator sleeps until its next send is due (a timed sleep at a timer slack of
//! 1 ns). How late such a sleep ends depends on its length on a virtual machine: a
//! sleep shorter than the guest's idle poll ends with the timer's own delay, a longer one
//! halts the core and pays its wake on top (docs/simulate.md, `--send-wake-by-sleep`).
//! A send due while the generator still ran (no sleep) lags by the backlog before it.
//!
//! Classes: no sleep, then asked sleeps below each of [`SLEPT_BELOW_US`], then the rest.

use serde::Serialize;

/// The upper bounds of the sleep classes, µs (a sleep of exactly a bound is in the next).
pub const SLEPT_BELOW_US: [u64; 4] = [10, 30, 100, 300];

/// The classes of a sleep's length: one per bound, and the sleeps at or above the last.
pub const SLEEP_CLASSES: usize = SLEPT_BELOW_US.len() + 1;

/// The classes: no sleep, then the sleeps' classes.
const CLASSES: usize = SLEEP_CLASSES + 1;

/// Sends and their summed lag, µs, per class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendLags {
    sends: [u64; CLASSES],
    lag_us: [u64; CLASSES],
}

/// One class's sends in a report: `slept_below_us` its upper bound (`None`: the last,
/// unbounded class), `slept` false for the sends made without a sleep.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SendLagClass {
    pub slept: bool,
    pub slept_below_us: Option<u64>,
    pub sends: u64,
    pub mean_lag_us: f64,
}

/// The class of a sleep of `slept_us` asked, among the [`SLEEP_CLASSES`].
pub fn sleep_class(slept_us: u64) -> usize {
    SLEPT_BELOW_US.iter().take_while(|&&bound| slept_us >= bound).count()
}

fn class_of(slept_us: Option<u64>) -> usize {
    slept_us.map_or(0, |us| 1 + sleep_class(us))
}

impl SendLags {
    /// One send `lag_us` behind its schedule, after a sleep of `slept_us` asked (`None`: none).
    pub fn record(&mut self, slept_us: Option<u64>, lag_us: u64) {
        let class = class_of(slept_us);
        self.sends[class] += 1;
        self.lag_us[class] += lag_us;
    }

    pub fn merge(&mut self, other: &SendLags) {
        for class in 0..CLASSES {
            self.sends[class] += other.sends[class];
            self.lag_us[class] += other.lag_us[class];
        }
    }

    /// The classes with a send, in order.
    pub fn classes(&self) -> Vec<SendLagClass> {
        (0..CLASSES)
            .filter(|&class| self.sends[class] > 0)
            .map(|class| SendLagClass {
                slept: class > 0,
                slept_below_us: SLEPT_BELOW_US.get(class.wrapping_sub(1)).copied(),
                sends: self.sends[class],
                mean_lag_us: self.lag_us[class] as f64 / self.sends[class] as f64,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_go_to_the_class_of_their_sleep_and_each_class_averages_its_own_lags() {
        let mut lags = SendLags::default();
        lags.record(None, 7);
        lags.record(Some(0), 12);
        lags.record(Some(9), 14);
        lags.record(Some(10), 20);
        lags.record(Some(29), 22);
        lags.record(Some(5000), 40);
        let classes = lags.classes();
        let view: Vec<(bool, Option<u64>, u64, f64)> =
            classes.iter().map(|c| (c.slept, c.slept_below_us, c.sends, c.mean_lag_us)).collect();
        assert_eq!(
            view,
            [(false, None, 1, 7.0), (true, Some(10), 2, 13.0), (true, Some(30), 2, 21.0), (true, None, 1, 40.0)]
        );
    }

    #[test]
    fn merged_lags_add_the_counts_and_the_sums() {
        let (mut a, mut b) = (SendLags::default(), SendLags::default());
        a.record(Some(50), 10);
        b.record(Some(60), 30);
        b.record(None, 2);
        a.merge(&b);
        let classes = a.classes();
        assert_eq!(classes.len(), 2);
        assert_eq!((classes[1].slept_below_us, classes[1].sends, classes[1].mean_lag_us), (Some(100), 2, 20.0));
        assert_eq!((classes[0].slept, classes[0].sends), (false, 1));
    }
}
