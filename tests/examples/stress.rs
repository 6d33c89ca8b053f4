//! The stress test at a larger scale, as a benchmark command: the mixed
//! workload (configs/mixed.toml) under injected faults, repeated, checking
//! every answer each round and reporting throughput and resident memory per
//! round, so growth over a long run shows.
//!
//! ```text
//! cargo run --release -p baton-e2e --example stress -- --rounds 10 --plain 20000 --streams 32 --chunks 128
//! ```

use std::time::Instant;

use baton::config::FaultConfig;
use baton_e2e::mixed::{self, Workload};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Stress Baton with the mixed workload under injected faults")]
struct Args {
    /// Rounds of the whole workload, on one runtime.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    #[arg(long, default_value_t = 8)]
    submitters: usize,
    /// Plain requests per submitter per round.
    #[arg(long, default_value_t = 20_000)]
    plain: usize,
    /// Streams per submitter per round.
    #[arg(long, default_value_t = 32)]
    streams: usize,
    /// Chunks per stream.
    #[arg(long, default_value_t = 128)]
    chunks: usize,
    /// Share of stage runs failing with an error, on every node.
    #[arg(long, default_value_t = 0.01)]
    error: f64,
    /// Share of stage runs panicking, on every node.
    #[arg(long, default_value_t = 0.001)]
    panic: f64,
    /// Check answers only in the last round (the checks load their own ONNX
    /// Runtime sessions, which weigh on the resident memory being watched).
    #[arg(long)]
    verify_last_only: bool,
}

fn main() {
    let args = Args::parse();
    let faults = FaultConfig { error: args.error, panic: args.panic, seed: 1, ..FaultConfig::default() };
    let runtime = mixed::start(Some(faults), |_| {});
    let started = Instant::now();
    println!("| round | requests | req/s | plain ok/failed | chunks ok/failed | bitwise | peak RSS MiB |");
    println!("|---|---|---|---|---|---|---|");
    for round in 0..args.rounds {
        let workload = Workload {
            submitters: args.submitters,
            plain: args.plain,
            streams: args.streams,
            chunks: args.chunks,
            seed: round as u64,
        };
        let run = mixed::drive(&runtime.submitter(), &workload);
        assert_eq!(run.outcomes.len(), workload.total(), "every request recorded");
        run.assert_resolved_exactly_once();
        let v = if args.verify_last_only && round + 1 < args.rounds {
            mixed::Verdict::default()
        } else {
            run.verify(mixed::injected)
        };
        println!(
            "| {round} | {} | {:.0} | {}/{} | {}/{} | {}/{} | {} |",
            workload.total(),
            workload.total() as f64 / run.elapsed.as_secs_f64(),
            v.plain_ok,
            v.plain_failed,
            v.chunks_ok,
            v.chunks_failed,
            v.agreement.bitwise,
            v.agreement.compared,
            run.peak_rss_bytes >> 20
        );
    }
    assert_eq!(runtime.in_flight(), 0);
    let stats = runtime.node_stats();
    let failed: u64 = stats.iter().map(|n| n.failed_batches).sum();
    let batches: u64 = stats.iter().map(|n| n.executions).sum();
    println!("{batches} batches, {failed} failed by injected faults, {:.1} s in all", started.elapsed().as_secs_f64());
    runtime.shutdown();
}
