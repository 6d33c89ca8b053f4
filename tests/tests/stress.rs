//! Stress under injected faults (configs/mixed.toml, small scale; the `stress`
//! example runs the same at a larger scale): 8 submitters send plain requests
//! and chunks of streams at once while every node fails 1% of its runs with an
//! error and 0.1% with a panic. Every request resolves exactly once; every
//! successful answer equals the models run directly (streams: over that
//! stream's own successful chunks, in order, so states never mix); resident
//! memory stays under a stated bound.

use baton::config::FaultConfig;
use baton::metrics::INJECTED_FAULTS;
use baton_e2e::mixed::{self, Workload};

/// The bound on the test process's peak resident memory (ORT, 5 sessions, the
/// test harness and the run; about 100-150 MiB measured).
const RSS_BOUND_BYTES: u64 = 512 << 20;

#[test]
fn every_request_resolves_once_and_answers_match_direct_runs_under_injected_faults() {
    let faults = FaultConfig { error: 0.01, panic: 0.001, seed: 2026, ..FaultConfig::default() };
    baton_e2e::record_metrics();
    let runtime = mixed::start(Some(faults), |_| {});
    let workload = Workload { submitters: 8, plain: 4000, streams: 16, chunks: 64, seed: 7 };
    let run = mixed::drive(&runtime.submitter(), &workload);
    assert_eq!(run.outcomes.len(), workload.total(), "every request submitted was recorded");
    run.assert_resolved_exactly_once();
    let verdict = run.verify(mixed::injected);
    eprintln!(
        "stress: {} requests in {:?}: plain {} ok / {} failed, chunks {} ok / {} failed; {} tensors compared \
         ({} bitwise), peak RSS {} MiB",
        workload.total(),
        run.elapsed,
        verdict.plain_ok,
        verdict.plain_failed,
        verdict.chunks_ok,
        verdict.chunks_failed,
        verdict.agreement.compared,
        verdict.agreement.bitwise,
        run.peak_rss_bytes >> 20
    );
    let stats = runtime.node_stats();
    let (batches, failed) = stats.iter().fold((0, 0), |(b, f), n| (b + n.executions, f + n.failed_batches));
    let injected = |kind| baton_e2e::counter_total(INJECTED_FAULTS, &[("pipeline", "mixed"), ("kind", kind)]);
    let (errors, panics) = (injected("error"), injected("panic"));
    eprintln!("  {batches} batches run, {failed} failed: {errors} injected errors, {panics} injected panics");
    assert_eq!(errors + panics, failed, "every failed batch is an injected fault");
    assert!(failed > 0, "1% injected errors fail some of {batches} batches");
    assert!(verdict.plain_failed + verdict.chunks_failed > 0, "failed batches fail their requests");
    assert!(verdict.plain_ok > 30_000 && verdict.chunks_ok > 7_500, "most requests succeed: {verdict:?}");
    assert!(run.peak_rss_bytes < RSS_BOUND_BYTES, "peak RSS {} MiB", run.peak_rss_bytes >> 20);
    assert_eq!(runtime.in_flight(), 0, "nothing left in flight");
    assert!(runtime.stream_usage().iter().all(|(_, open, _)| *open == 0), "every stream was closed by its final chunk");
    runtime.shutdown();
}
