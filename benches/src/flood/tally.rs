//! Answers counted by status, each status with its latency histogram.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::{FloodOptions, FloodReport};
use crate::measure::{new_histogram, Latency};

/// What one connection task saw.
#[derive(Default)]
pub struct Tally {
    by_status: BTreeMap<String, Histogram<u64>>,
    pub(crate) connect_failures: u64,
    pub(crate) connections_opened: u64,
    /// The most calls a connection had under way at once.
    pub(crate) widest: usize,
}

/// One status's answers and their latency.
#[derive(Clone, Debug, Serialize)]
pub struct StatusRow {
    pub status: String,
    pub latency: Latency,
}

impl Tally {
    /// Counts one request's outcome.
    pub fn record(&mut self, status: &str, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, crate::measure::MAX_LATENCY_US);
        if let Some(h) = self.by_status.get_mut(status) {
            h.saturating_record(us);
        } else {
            let mut h = new_histogram();
            h.saturating_record(us);
            self.by_status.insert(status.to_string(), h);
        }
    }

    pub fn merge(&mut self, other: Tally) {
        for (status, h) in other.by_status {
            match self.by_status.get_mut(&status) {
                Some(mine) => mine.add(&h).expect("histograms of one shape"),
                None => {
                    self.by_status.insert(status, h);
                }
            }
        }
        self.connect_failures += other.connect_failures;
        self.connections_opened += other.connections_opened;
        self.widest = self.widest.max(other.widest);
    }

    /// Requests counted, all statuses.
    pub fn requests(&self) -> u64 {
        self.by_status.values().map(Histogram::len).sum()
    }

    pub(crate) fn report(self, options: &FloodOptions, elapsed: Duration) -> FloodReport {
        let sent = self.requests();
        let mut statuses: Vec<StatusRow> =
            self.by_status.iter().map(|(s, h)| StatusRow { status: s.clone(), latency: Latency::of(h) }).collect();
        statuses.sort_by(|a, b| b.latency.count.cmp(&a.latency.count).then(a.status.cmp(&b.status)));
        FloodReport {
            url: options.url.clone(),
            model: options.model.clone(),
            connections: options.connections,
            streams: self.widest,
            seconds: elapsed.as_secs_f64(),
            sent,
            statuses,
            connect_failures: self.connect_failures,
            connections_opened: self.connections_opened,
        }
    }
}

/// The report as a table: a row per status with its share and latency (ms).
pub fn table(report: &FloodReport) -> String {
    let ms = |us: u64| format!("{:.2}", us as f64 / 1000.0);
    let mut out = format!(
        "{} model `{}`: {} connection(s) x {} stream(s), {:.1} s, {} requests ({:.0}/s); connections: {} opened, {} failed to connect\n",
        report.url,
        report.model,
        report.connections,
        report.streams,
        report.seconds,
        report.sent,
        report.sent as f64 / report.seconds.max(1e-9),
        report.connections_opened,
        report.connect_failures,
    );
    out += &format!(
        "{:<22} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "status", "answers", "share", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"
    );
    for row in &report.statuses {
        let l = &row.latency;
        out += &format!(
            "{:<22} {:>10} {:>6.1}% {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            row.status,
            l.count,
            100.0 * l.count as f64 / report.sent.max(1) as f64,
            ms(l.p50_us),
            ms(l.p90_us),
            ms(l.p99_us),
            ms(l.p999_us),
            ms(l.max_us)
        );
    }
    out
}
