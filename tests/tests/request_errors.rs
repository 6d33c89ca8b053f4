//! Requests that cannot be answered with outputs, and the ones around them:
//! each bad request resolves with the right [`RequestError`] naming the
//! culprit, and the good requests beside it are still answered correctly.
//! Also admission (queue full), deadlines and both kinds of shutdown.

use std::time::{Duration, Instant};

use baton::{Request, RequestError, RequestResult, Runtime, Tensor};
use baton_e2e::{answer, random_f32, registry, start, Direct, Scheduling, TestFile};
use rand::rngs::StdRng;
use rand::SeedableRng;

fn mlp() -> Runtime {
    start("mlp.toml", Scheduling::AsShipped)
}

fn two_io() -> Runtime {
    start("two_io.toml", Scheduling::AsShipped)
}

fn diamond() -> Runtime {
    start("diamond.toml", Scheduling::AsShipped)
}

fn f32s(rows: usize, width: usize) -> Tensor {
    Tensor::from_vec(vec![rows, width], vec![0.25f32; rows * width]).unwrap()
}

/// Submits `request`; asserts it resolves with InvalidInput whose message holds every `part`.
fn invalid(runtime: &Runtime, request: Request, parts: &[&str]) -> String {
    match answer(runtime.submit(request)) {
        Err(RequestError::InvalidInput(message)) => {
            for part in parts {
                assert!(message.contains(part), "the message should contain {part:?}: {message}");
            }
            eprintln!("invalid input: {message}");
            message
        }
        Ok(_) => panic!("a bad request was answered with outputs"),
        Err(other) => panic!("expected InvalidInput, got {other:?}"),
    }
}

#[test]
fn unknown_input_name_is_invalid_input_naming_it_and_the_known_ones() {
    let runtime = mlp();
    invalid(&runtime, Request::new().input("input", f32s(1, 256)).input("extra", f32s(1, 256)), &["`extra`", "input"]);
    invalid(&runtime, Request::new().input("x", f32s(1, 256)), &["unknown input `x`", "the pipeline takes: input"]);
    assert_eq!(runtime.in_flight(), 0);
}

#[test]
fn missing_input_is_invalid_input_naming_it() {
    let runtime = two_io();
    invalid(&runtime, Request::new().input("a", f32s(1, 16)), &["missing input `b`"]);
    invalid(&runtime, Request::new(), &["missing input `a`"]);
}

#[test]
fn input_given_twice_is_invalid_input_naming_it() {
    let runtime = mlp();
    invalid(
        &runtime,
        Request::new().input("input", f32s(1, 256)).input("input", f32s(1, 256)),
        &["input `input` is given twice"],
    );
}

#[test]
fn wrong_dtype_is_invalid_input_naming_the_input_and_both_dtypes() {
    let runtime = mlp();
    let x = Tensor::from_vec(vec![1, 256], vec![1i64; 256]).unwrap();
    invalid(&runtime, Request::new().input("input", x), &["input `input` is i64", "takes f32"]);
    let x = Tensor::from_vec(vec![1, 256], vec![1.0f64; 256]).unwrap();
    invalid(&runtime, Request::new().input("input", x), &["input `input` is f64", "takes f32"]);
}

#[test]
fn wrong_rank_is_invalid_input_naming_the_shapes() {
    let runtime = mlp();
    let x = Tensor::from_vec(vec![256], vec![0.5f32; 256]).unwrap();
    invalid(&runtime, Request::new().input("input", x), &["input `input` has shape [256]", "[N, 256]"]);
    let x = Tensor::from_vec(vec![1, 1, 256], vec![0.5f32; 256]).unwrap();
    invalid(&runtime, Request::new().input("input", x), &["[1, 1, 256]", "[N, 256]"]);
}

#[test]
fn wrong_fixed_dim_is_invalid_input_naming_the_shapes() {
    let runtime = mlp();
    invalid(&runtime, Request::new().input("input", f32s(1, 255)), &["input `input` has shape [1, 255]", "[N, 256]"]);
}

#[test]
fn rows_disagreeing_between_two_inputs_is_invalid_input_naming_both() {
    let runtime = two_io();
    invalid(
        &runtime,
        Request::new().input("a", f32s(2, 16)).input("b", f32s(3, 16)),
        &["disagree on rows", "`a` has 2", "`b` has 3"],
    );
}

#[test]
fn zero_rows_is_invalid_input() {
    let runtime = mlp();
    invalid(&runtime, Request::new().input("input", f32s(0, 256)), &["0 rows"]);
    let runtime = two_io();
    invalid(&runtime, Request::new().input("a", f32s(0, 16)).input("b", f32s(0, 16)), &["0 rows"]);
}

#[test]
fn more_rows_than_max_batch_is_invalid_input_naming_the_node_and_limit() {
    let runtime = mlp();
    invalid(&runtime, Request::new().input("input", f32s(33, 256)), &["33 rows", "node `mlp`", "32", "max_batch"]);
    // Exactly max_batch rows is fine.
    let x = f32s(32, 256);
    let out = answer(runtime.submit(Request::new().input("input", x))).expect("32 rows are answered");
    assert_eq!(out.get("output").unwrap().shape(), [32, 10]);
    // The smallest max_batch of all nodes counts: two_stage's encoder takes 16.
    let runtime = start("two_stage.toml", Scheduling::AsShipped);
    invalid(&runtime, Request::new().input("x", f32s(17, 32)), &["17 rows", "node `encoder`", "16"]);
}

/// A pipeline file in a temp folder: one cost_model node `slow` taking `x` [N, 4] f32,
/// running `latency_us` per batch (sleeping), with `settings` added to `[pipeline]`.
fn slow_pipeline(test: &str, latency_us: u64, max_batch: usize, pipeline_settings: &str) -> TestFile {
    let text = format!(
        r#"
[pipeline]
name = "{test}"
{pipeline_settings}

[inputs.x]
to = ["slow.x"]

[outputs.y]
from = "slow.y"

[nodes.slow]
max_batch = {max_batch}

[[nodes.slow.stages]]
engine = "cost_model"
params.inputs = [{{ name = "x", dtype = "f32", shape = [-1, 4] }}]
params.outputs = [{{ name = "y", dtype = "f32", shape = [-1, 4] }}]
params.latency_us = {latency_us}
params.mode = "sleep"
"#
    );
    TestFile::write(&format!("request-errors-{test}"), "slow.toml", &text)
}

fn outcome(result: &RequestResult) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(RequestError::InvalidInput(_)) => "invalid_input",
        Err(RequestError::Node { .. }) => "node",
        Err(RequestError::DeadlineExceeded { .. }) => "deadline",
        Err(RequestError::ShuttingDown) => "shutting_down",
        Err(RequestError::QueueFull { .. }) => "queue_full",
        Err(RequestError::Cancelled) => "cancelled",
        Err(RequestError::Stream { .. }) => "stream",
        Err(_) => "other",
    }
}

#[test]
fn queue_full_past_max_in_flight_and_every_request_still_resolves() {
    // max_in_flight = 1 and 20 ms a batch: requests submitted back to back while the first runs are refused.
    let path = slow_pipeline("queue_full", 20_000, 4, "max_in_flight = 1");
    let runtime = Runtime::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
    let tickets: Vec<_> = (0..20).map(|_| runtime.submit(Request::new().input("x", f32s(1, 4)))).collect();
    let results: Vec<RequestResult> = tickets.into_iter().map(answer).collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let full = results.iter().filter(|r| matches!(r, Err(RequestError::QueueFull { limit: 1 }))).count();
    let others: Vec<&str> = results.iter().map(outcome).filter(|o| !matches!(*o, "ok" | "queue_full")).collect();
    assert!(others.is_empty(), "only Ok or QueueFull expected, got {others:?}");
    assert!(ok >= 1, "the first request is admitted and answered");
    assert!(full >= 1, "at least one request is refused with QueueFull");
    assert_eq!(ok + full, 20, "every request resolved");
    let message = RequestError::QueueFull { limit: 1 }.to_string();
    assert!(message.contains("max_in_flight") && message.contains('1'), "{message}");
    assert_eq!(runtime.in_flight(), 0);
    // Once the queue drained, requests are admitted again.
    assert!(answer(runtime.submit(Request::new().input("x", f32s(1, 4)))).is_ok());
}

#[test]
fn shutdown_now_with_many_pending_resolves_every_ticket_ok_or_shutting_down() {
    // 2 ms a batch of at most 4 rows: 200 requests would take 100 ms, so most are still queued.
    let path = slow_pipeline("shutdown_now", 2_000, 4, "");
    let runtime = Runtime::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
    let xs: Vec<Tensor> = (0..200).map(|i| f32s(1, 4).clone_with(i)).collect();
    let tickets: Vec<_> = xs.iter().map(|x| runtime.submit(Request::new().input("x", x.clone()))).collect();
    // Stop once the first batch is done: the next one is running or about to, the rest are queued.
    wait_ready(&tickets[0]);
    runtime.shutdown_now();
    let mut counts = std::collections::BTreeMap::new();
    for (x, ticket) in xs.iter().zip(tickets) {
        let result = answer(ticket);
        if let Ok(out) = &result {
            assert_eq!(out.get("y"), Some(x), "a request answered before shutdown has its own output");
        }
        *counts.entry(outcome(&result)).or_insert(0usize) += 1;
    }
    eprintln!("shutdown_now: {counts:?}");
    assert!(counts.keys().all(|o| matches!(*o, "ok" | "shutting_down")), "only Ok or ShuttingDown: {counts:?}");
    assert_eq!(counts.values().sum::<usize>(), 200, "every ticket resolved");
    assert!(counts.get("ok").copied().unwrap_or(0) >= 1, "the first batch finished before the shutdown: {counts:?}");
    assert!(counts.get("shutting_down").copied().unwrap_or(0) >= 1, "queued requests were refused: {counts:?}");
}

/// Waits until `ticket` has its answer, without taking it.
fn wait_ready(ticket: &baton::Ticket) {
    let deadline = Instant::now() + baton_e2e::LOST_AFTER;
    while !ticket.is_ready() {
        assert!(Instant::now() < deadline, "the first request was never answered");
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// A distinct tensor per index, for telling answers apart.
trait CloneWith {
    fn clone_with(&self, i: usize) -> Tensor;
}

impl CloneWith for Tensor {
    fn clone_with(&self, i: usize) -> Tensor {
        let data: Vec<f32> = (0..self.len()).map(|k| (i * 10 + k) as f32).collect();
        Tensor::from_vec(self.shape().to_vec(), data).unwrap()
    }
}

#[test]
fn shutdown_now_on_the_diamond_resolves_every_ticket_ok_or_shutting_down() {
    // Real ORT, with a join: requests may be half-way (one branch done) when it stops.
    let runtime = diamond();
    let mut rng = StdRng::seed_from_u64(11);
    let tickets: Vec<_> =
        (0..300).map(|_| runtime.submit(Request::new().input("x", random_f32(&mut rng, 1, 32)))).collect();
    wait_ready(&tickets[0]);
    runtime.shutdown_now();
    let mut counts = std::collections::BTreeMap::new();
    for ticket in tickets {
        let result = answer(ticket);
        if let Ok(out) = &result {
            assert_eq!(out.len(), 2, "an Ok answer has both outputs");
        }
        *counts.entry(outcome(&result)).or_insert(0usize) += 1;
    }
    eprintln!("shutdown_now on diamond: {counts:?}");
    assert!(counts.keys().all(|o| matches!(*o, "ok" | "shutting_down")), "only Ok or ShuttingDown: {counts:?}");
    assert_eq!(counts.values().sum::<usize>(), 300, "every ticket resolved");
}

#[test]
fn graceful_shutdown_drains_200_pending_requests_all_ok() {
    let runtime = diamond();
    let mut rng = StdRng::seed_from_u64(12);
    let xs: Vec<Tensor> = (0..200).map(|_| random_f32(&mut rng, 1, 32)).collect();
    let tickets: Vec<_> = xs.iter().map(|x| runtime.submit(Request::new().input("x", x.clone()))).collect();
    runtime.shutdown();
    let mut embed = Direct::load("embed.onnx");
    for (i, (x, ticket)) in xs.iter().zip(tickets).enumerate() {
        let out = answer(ticket).unwrap_or_else(|e| panic!("request {i} not drained: {e}"));
        assert_eq!(out.get("features"), Some(&embed.run_one(&[("x", x)], "h")), "request {i}: its own features");
        assert_eq!(out.get("out").unwrap().shape(), [1, 4]);
    }
}

#[test]
fn graceful_shutdown_of_a_slow_pipeline_drains_everything_ok() {
    // The slow pipeline still has most of 200 requests queued when shutdown() is called.
    let path = slow_pipeline("graceful_slow", 500, 8, "");
    let runtime = Runtime::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
    let xs: Vec<Tensor> = (0..200).map(|i| f32s(1, 4).clone_with(i)).collect();
    let tickets: Vec<_> = xs.iter().map(|x| runtime.submit(Request::new().input("x", x.clone()))).collect();
    runtime.shutdown();
    for (i, (x, ticket)) in xs.iter().zip(tickets).enumerate() {
        let out = answer(ticket).unwrap_or_else(|e| panic!("request {i} not drained: {e}"));
        assert_eq!(out.get("y"), Some(x), "request {i}: its own output");
    }
}

#[test]
fn passed_deadline_is_deadline_exceeded_naming_the_first_node() {
    let runtime = mlp();
    let past = Instant::now() - Duration::from_millis(1);
    let result = answer(runtime.submit(Request::new().input("input", f32s(1, 256)).deadline(past)));
    assert_eq!(result.unwrap_err(), RequestError::DeadlineExceeded { node: "mlp".into() });
    let message = RequestError::DeadlineExceeded { node: "mlp".into() }.to_string();
    assert!(message.contains("deadline") && message.contains("`mlp`"), "{message}");

    let runtime = diamond();
    let result = answer(runtime.submit(Request::new().input("x", f32s(1, 32)).deadline(past)));
    assert_eq!(result.unwrap_err(), RequestError::DeadlineExceeded { node: "embed".into() });
    assert_eq!(runtime.in_flight(), 0);
}

#[test]
fn zero_timeout_is_deadline_exceeded() {
    // timeout(0) sets the deadline to the submit instant: it has passed by the time any batch starts.
    let runtime = diamond();
    let result = answer(runtime.submit(Request::new().input("x", f32s(1, 32)).timeout(Duration::ZERO)));
    assert_eq!(result.unwrap_err(), RequestError::DeadlineExceeded { node: "embed".into() });
    // A generous timeout is answered.
    assert!(answer(runtime.submit(Request::new().input("x", f32s(1, 32)).timeout(Duration::from_secs(60)))).is_ok());
}

#[test]
fn bad_requests_among_good_concurrent_ones_do_not_fail_the_good_ones() {
    let runtime = diamond();
    let threads = 4;
    let per_thread = 60;
    std::thread::scope(|s| {
        for t in 0..threads {
            let runtime = &runtime;
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + t as u64);
                let mut embed = Direct::load("embed.onnx");
                let mut pending = Vec::new();
                for i in 0..per_thread {
                    let x = random_f32(&mut rng, 1 + i % 2, 32);
                    // Every 5th request is bad in one of three ways; the rest are good.
                    let (request, expect) = match i % 15 {
                        4 => (Request::new().input("x", f32s(1, 31)), "invalid_input"),
                        9 => (
                            Request::new().input("x", x.clone()).deadline(Instant::now() - Duration::from_millis(1)),
                            "deadline",
                        ),
                        14 => (Request::new().input("y", x.clone()), "invalid_input"),
                        _ => (Request::new().input("x", x.clone()).priority(i % 7 == 0), "ok"),
                    };
                    pending.push((x, expect, runtime.submit(request)));
                }
                for (i, (x, expect, ticket)) in pending.into_iter().enumerate() {
                    let result = answer(ticket);
                    assert_eq!(outcome(&result), expect, "thread {t} request {i}: {result:?}");
                    if let Ok(out) = result {
                        let want = embed.run_one(&[("x", &x)], "h");
                        assert_eq!(out.get("features"), Some(&want), "thread {t} request {i}: its own features");
                    }
                }
            });
        }
    });
    assert_eq!(runtime.in_flight(), 0);
}

#[test]
fn dropping_a_ticket_cancels_without_disturbing_other_requests() {
    let path = slow_pipeline("cancel", 5_000, 4, "");
    let runtime = Runtime::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
    let keep: Vec<_> =
        (0..8).map(|i| (i, runtime.submit(Request::new().input("x", f32s(1, 4).clone_with(i))))).collect();
    for i in 8..16 {
        drop(runtime.submit(Request::new().input("x", f32s(1, 4).clone_with(i))));
    }
    for (i, ticket) in keep {
        let out = answer(ticket).unwrap_or_else(|e| panic!("request {i}: {e}"));
        assert_eq!(out.get("y"), Some(&f32s(1, 4).clone_with(i)));
    }
    // The dropped requests resolve (cancelled) and leave nothing in flight.
    let deadline = Instant::now() + baton_e2e::LOST_AFTER;
    while runtime.in_flight() > 0 {
        assert!(Instant::now() < deadline, "cancelled requests stayed in flight");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A pipeline file of two cost_model nodes in a chain, `first` (sleeping `latency_us` a batch) -> `second`.
fn chain_pipeline(test: &str, latency_us: u64) -> TestFile {
    let stage = |name: &str, input: &str, output: &str, latency: u64| {
        format!(
            r#"
[[nodes.{name}.stages]]
engine = "cost_model"
params.inputs = [{{ name = "{input}", dtype = "f32", shape = [-1, 4] }}]
params.outputs = [{{ name = "{output}", dtype = "f32", shape = [-1, 4] }}]
params.latency_us = {latency}
params.mode = "sleep"
"#
        )
    };
    let text = format!(
        "[pipeline]\nname = \"{test}\"\n[inputs.x]\nto = [\"first.x\"]\n[outputs.z]\nfrom = \"second.z\"\n\
         [[edges]]\nfrom = \"first.y\"\nto = \"second.y\"\n{}{}",
        stage("first", "x", "y", latency_us),
        stage("second", "y", "z", 0)
    );
    TestFile::write(&format!("request-errors-{test}"), "chain.toml", &text)
}

/// How long the tests below give the runtime to settle before calling it stuck (a hang guard).
const STUCK_AFTER: Duration = Duration::from_secs(5);

/// Shuts `runtime` down on another thread; panics if that has not returned within [`STUCK_AFTER`]
/// (the runtime and its threads are leaked then, so the test fails instead of hanging).
fn shutdown_or_panic(runtime: Runtime, what: &str) {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime.shutdown();
        let _ = done_tx.send(());
    });
    if done_rx.recv_timeout(STUCK_AFTER).is_err() {
        panic!("{what}: Runtime::shutdown() did not return within {STUCK_AFTER:?} (it waits for in_flight to reach 0)");
    }
}

#[test]
fn dropping_a_ticket_mid_pipeline_still_resolves_the_request_and_shutdown_returns() {
    let path = chain_pipeline("cancel_mid_pipeline", 30_000);
    let runtime = Runtime::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
    let first = runtime.spec().node_index("first").unwrap();
    let ticket = runtime.submit(Request::new().input("x", f32s(1, 4)));
    // Wait until `first` took the task (its 30 ms batch is running), then drop the ticket.
    let deadline = Instant::now() + STUCK_AFTER;
    while runtime.pending(first) != (0, 0) {
        assert!(Instant::now() < deadline, "`first` never took the task");
        std::thread::sleep(Duration::from_micros(50));
    }
    assert!(!ticket.is_ready(), "the 30 ms batch is still running");
    drop(ticket);
    // The request must still resolve (as cancelled), leaving nothing in flight.
    let deadline = Instant::now() + STUCK_AFTER;
    while runtime.in_flight() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let left = runtime.in_flight();
    if left > 0 {
        // Dropping the runtime would hang in its graceful shutdown: leak it instead.
        std::mem::forget(runtime);
        panic!("{left} request(s) still in flight {STUCK_AFTER:?} after the only ticket was dropped mid-pipeline");
    }
    shutdown_or_panic(runtime, "after a ticket dropped mid-pipeline");
}
