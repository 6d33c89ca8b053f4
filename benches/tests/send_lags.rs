//! The open-loop generator's sends by the sleep before each (`send_lags`), in one short
//! real in-process run of a cost-model node.

// The simulator's options in `common` go unused here: this file runs the real bench alone.
#[allow(dead_code)]
mod common;

use std::time::Duration;

use baton_bench::BenchOptions;
use common::pipelines::one_node;
use common::{engines, folder};

#[test]
fn a_real_open_loop_counts_its_sends_by_the_sleep_before_each_and_the_classes_make_up_the_mean_lag() {
    let dir = folder("send_lags", "real");
    let args = BenchOptions {
        pipeline: Some(one_node(&dir, 8)),
        rate: vec![400.0],
        warmup: Duration::from_millis(100),
        duration: Duration::from_millis(500),
        ..BenchOptions::default()
    };
    let report = baton_bench::bench_with(&args, &engines()).unwrap();
    let p = &report.points[0];
    let sends: u64 = p.send_lags.iter().map(|c| c.sends).sum();
    assert!(sends > 0, "the measured sends are counted: {:?}", p.send_lags);
    // The classes are in order, each named once: the sends without a sleep first, then the
    // sleeps' classes by their bound, the unbounded one last.
    let keys: Vec<(bool, u64)> = p.send_lags.iter().map(|c| (c.slept, c.slept_below_us.unwrap_or(u64::MAX))).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "classes out of order: {keys:?}");
    // 2.5 ms apart on average, the generator sleeps before most sends (a send due while it
    // still runs is the exception, where the machine holds it off its core).
    let slept: u64 = p.send_lags.iter().filter(|c| c.slept).map(|c| c.sends).sum();
    assert!(slept * 2 > sends, "{slept} of {sends} sends after a sleep: {:?}", p.send_lags);
    let weighted: f64 = p.send_lags.iter().map(|c| c.mean_lag_us * c.sends as f64).sum::<f64>() / sends as f64;
    assert!(
        (weighted - p.mean_send_lag_us).abs() < 1e-6,
        "the classes' lags make up the mean: {weighted} against {}",
        p.mean_send_lag_us
    );
}
