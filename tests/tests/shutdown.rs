//! Shutdown under load (configs/mixed.toml, real ONNX Runtime): 8 submitters
//! send plain requests and stream chunks while the runtime shuts down.
//! Graceful: every accepted request is answered with its outputs, later ones
//! are refused at admission. Immediate: every accepted request is answered
//! with its outputs or a shutdown error. Either way every request resolves
//! exactly once, successful answers are right, and no Baton thread (nor the
//! engine sessions its workers own) is left behind.

use std::sync::Mutex;
use std::time::Duration;

use baton::RequestError;
use baton_e2e::mixed::{self, Outcome, Run, Workload};

/// The tests count this process's Baton threads, so they run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Names of this process's threads whose name starts with `baton-`.
fn baton_threads() -> Vec<String> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .filter(|name| name.starts_with("baton-"))
        .collect()
}

/// Runs the workload and shuts down after `after`, gracefully or not; returns the run.
fn shut_down_under_load(immediate: bool, after: Duration) -> Run {
    assert!(baton_threads().is_empty(), "no Baton thread before the test: {:?}", baton_threads());
    let runtime = mixed::start(None, |_| {});
    assert!(!baton_threads().is_empty(), "the runtime's threads run");
    let submitter = runtime.submitter();
    // More than can finish before the shutdown: submitters stop when refused.
    let workload = Workload { submitters: 8, plain: 200_000, streams: 4, chunks: 20_000, seed: 3 };
    let run = std::thread::scope(|s| {
        let driving = s.spawn(|| mixed::drive(&submitter, &workload));
        std::thread::sleep(after);
        if immediate {
            runtime.shutdown_now();
        } else {
            runtime.shutdown();
        }
        assert!(baton_threads().is_empty(), "threads left after shutdown: {:?}", baton_threads());
        driving.join().expect("the submitters finish")
    });
    // A submitter handle outliving the runtime is refused at once.
    let late = submitter
        .submit(baton::Request::new().input("x", baton::Tensor::zeros(baton::DType::F32, vec![1, 32]).unwrap()));
    assert_eq!(late.wait().unwrap_err(), RequestError::ShuttingDown);
    run.assert_resolved_exactly_once();
    run
}

fn refused_at_admission(o: &Outcome) -> bool {
    o.at_admission && matches!(o.result, Err(RequestError::ShuttingDown))
}

#[test]
fn graceful_shutdown_under_load_answers_every_accepted_request_with_outputs() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let run = shut_down_under_load(false, Duration::from_millis(300));
    let verdict = run.verify(refused_at_admission);
    let refused = run.outcomes.iter().filter(|o| refused_at_admission(o)).count();
    eprintln!("graceful: {} requests, {refused} refused at admission, {verdict:?}", run.outcomes.len());
    assert!(verdict.plain_ok > 0 && verdict.chunks_ok > 0, "work was done before the shutdown");
    assert!(refused > 0, "submitters met the shutdown");
    assert_eq!(verdict.plain_failed + verdict.chunks_failed, refused, "only refusals at admission failed");
}

#[test]
fn immediate_shutdown_under_load_answers_every_request_with_outputs_or_a_shutdown_error() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let run = shut_down_under_load(true, Duration::from_millis(300));
    let verdict = run.verify(|o| matches!(o.result, Err(RequestError::ShuttingDown)));
    let accepted_then_stopped =
        run.outcomes.iter().filter(|o| !o.at_admission && matches!(o.result, Err(RequestError::ShuttingDown))).count();
    eprintln!("immediate: {} requests, {accepted_then_stopped} accepted then stopped, {verdict:?}", run.outcomes.len());
    assert!(verdict.plain_ok > 0 && verdict.chunks_ok > 0, "work was done before the shutdown");
    assert!(verdict.plain_failed + verdict.chunks_failed > 0, "the shutdown stopped some requests");
}
