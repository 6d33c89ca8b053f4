//! Raw figures taken beside each point (`--raw-ratios beside`, the default with `--raw`).
//!
//! The raw sweep at the start of a bench finds the bottleneck node and the batch
//! size at which it runs fastest. A machine whose speed drifts (a shared VM's
//! neighbours, its clock) can then run a point at another speed than the sweep
//! saw, and the best of several noisy sizes is itself biased upwards. So each
//! point's ratios are taken against raw measured again just before and just
//! after it, on the same cores: the bottleneck node at its best size and, where
//! a point is at concurrency 1 in the closed loop, every node at batch 1 (their
//! critical path). The runtime is up but idle meanwhile: no request is in flight.
//!
//! A point's ratio divides by the mean of the two measurements; their
//! difference (`drift`) says how much the machine moved across the point.

use serde::Serialize;

use crate::raw::{measure, RawOptions, RawReport};
use baton::PipelineSpec;

/// How the points' ratios to the raw engine are taken (`--raw-ratios`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawRatios {
    /// Against the raw sweep at the start of the bench.
    Start,
    /// Against raw measured just before and just after each point.
    #[default]
    Beside,
}

impl RawRatios {
    pub const ALL: [RawRatios; 2] = [RawRatios::Start, RawRatios::Beside];

    pub fn name(self) -> &'static str {
        match self {
            RawRatios::Start => "start",
            RawRatios::Beside => "beside",
        }
    }

    /// The way called `name` (as [`RawRatios::name`] writes it).
    pub fn from_name(name: &str) -> Option<RawRatios> {
        RawRatios::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// One raw measurement beside a point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RawSample {
    /// The bottleneck node's rows/s at its best batch size (as the sweep found it).
    pub rows_per_s: f64,
    /// Batch-1 medians summed along the critical path, µs (when measured).
    pub batch1_path_us: Option<f64>,
}

/// The raw measurements around one point, and the ratio the start's sweep would have given.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RawBeside {
    pub node: String,
    pub batch: usize,
    pub before: RawSample,
    pub after: RawSample,
    /// rows/s ÷ the start sweep's best, for comparison.
    pub ratio_to_start: f64,
}

impl RawBeside {
    /// The two measurements' mean rows/s.
    pub fn rows_per_s(&self) -> f64 {
        (self.before.rows_per_s + self.after.rows_per_s) / 2.0
    }

    /// The two measurements' mean batch-1 path, µs, when both have one.
    pub fn batch1_path_us(&self) -> Option<f64> {
        Some((self.before.batch1_path_us? + self.after.batch1_path_us?) / 2.0)
    }

    /// after ÷ before − 1 of the rows/s: how far the machine moved across the point.
    pub fn drift(&self) -> f64 {
        self.after.rows_per_s / self.before.rows_per_s - 1.0
    }
}

/// Takes the raw measurements beside points: what the start's sweep chose, measured again.
pub struct RawProbe<'a> {
    spec: &'a PipelineSpec,
    options: RawOptions,
    node: String,
    batch: usize,
    start_rows_per_s: f64,
}

impl<'a> RawProbe<'a> {
    /// A probe of `sweep`'s bottleneck at its best size, with `options`' duration, I/O and
    /// loops; `None` when the sweep found no bottleneck.
    pub fn new(spec: &'a PipelineSpec, options: &RawOptions, sweep: &RawReport) -> Option<RawProbe<'a>> {
        let b = sweep.bottleneck.as_ref()?;
        Some(RawProbe {
            spec,
            options: options.clone(),
            node: b.node.clone(),
            batch: b.batch,
            start_rows_per_s: b.rows_per_s,
        })
    }

    /// Measures now: the bottleneck at its size, and with `latency` every node at batch 1.
    pub fn sample(&self, latency: bool) -> Result<RawSample, String> {
        let only = |node: Option<String>, batches: Vec<usize>| RawOptions { node, batches, ..self.options.clone() };
        let best = measure(self.spec, &only(Some(self.node.clone()), vec![self.batch]), |_, _| ())?;
        let rows_per_s = best
            .bottleneck
            .as_ref()
            .map(|b| b.rows_per_s)
            .ok_or_else(|| format!("raw engine: node `{}` gave no figure at batch {}", self.node, self.batch))?;
        let batch1_path_us = if latency {
            // The bottleneck's batch-1 figure is the path only where it is the one node on it.
            match best.batch1_path_us.filter(|_| self.batch == 1) {
                Some(us) => Some(us),
                None => measure(self.spec, &only(None, vec![1]), |_, _| ())?.batch1_path_us,
            }
        } else {
            None
        };
        Ok(RawSample { rows_per_s, batch1_path_us })
    }

    /// The record of a point of `rows_per_s` between `before` and `after`.
    pub fn beside(&self, rows_per_s: f64, before: RawSample, after: RawSample) -> RawBeside {
        RawBeside {
            node: self.node.clone(),
            batch: self.batch,
            before,
            after,
            ratio_to_start: rows_per_s / self.start_rows_per_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rows_per_s: f64, us: Option<f64>) -> RawSample {
        RawSample { rows_per_s, batch1_path_us: us }
    }

    #[test]
    fn the_ratio_base_is_the_mean_of_before_and_after_and_drift_their_change() {
        let b = RawBeside {
            node: "mlp".into(),
            batch: 8,
            before: sample(30_000.0, Some(80.0)),
            after: sample(36_000.0, Some(90.0)),
            ratio_to_start: 0.9,
        };
        assert_eq!(b.rows_per_s(), 33_000.0);
        assert_eq!(b.batch1_path_us(), Some(85.0));
        assert!((b.drift() - 0.2).abs() < 1e-12);
        let half = RawBeside { after: sample(36_000.0, None), ..b };
        assert_eq!(half.batch1_path_us(), None, "a path needs both measurements");
    }

    #[test]
    fn ratios_parse_by_name() {
        assert_eq!(RawRatios::from_name("beside"), Some(RawRatios::Beside));
        assert_eq!(RawRatios::from_name("start"), Some(RawRatios::Start));
        assert_eq!(RawRatios::from_name("middle"), None);
        assert_eq!(RawRatios::default(), RawRatios::Beside);
    }
}
