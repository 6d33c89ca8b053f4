//! Fault injection (`[nodes.NAME.faults]`) and per-node admission bounds
//! (`nodes.NAME.max_queue`), with small Rust engines (no ONNX Runtime):
//! injected errors and panics fail only their batches, the panicking stage's
//! engine is recreated, slowed runs take longer, a full node refuses
//! requests entering at it at once, naming itself, and a request whose ticket
//! is dropped while it runs finishes without leaking.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use baton::engine::{Engine, EngineError, EngineProvider, EngineRegistry, ModelSignature, StageRequest};
use baton::{PipelineConfig, PipelineSpec, Request, RequestError, Runtime, Tensor};
use parking_lot::{Condvar, Mutex};

/// An engine doubling its input after waiting for `gate` to open; counts the engines made.
#[derive(Clone, Default)]
struct Doubler {
    created: Arc<AtomicUsize>,
    /// Runs that entered the engine (counted before waiting at the gate).
    entered: Arc<AtomicUsize>,
    /// While `false`, runs wait (lets a test fill a node's buffer).
    gate: Arc<(Mutex<bool>, Condvar)>,
    /// Each run sleeps this long.
    work: Duration,
}

struct DoublerEngine(Doubler);

impl Engine for DoublerEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        self.0.entered.fetch_add(1, Ordering::SeqCst);
        let (open, cv) = &*self.0.gate;
        let mut open = open.lock();
        while !*open {
            cv.wait(&mut open);
        }
        drop(open);
        std::thread::sleep(self.0.work);
        let data: Vec<f32> = inputs[0].as_slice::<f32>().unwrap().iter().map(|x| 2.0 * x).collect();
        Ok(vec![Tensor::from_vec(inputs[0].shape().to_vec(), data).unwrap()])
    }
}

impl EngineProvider for Doubler {
    fn inspect(&self, _: &StageRequest) -> Result<ModelSignature, EngineError> {
        Ok(common::column_signature())
    }
    fn create(&self, _: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        self.created.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(DoublerEngine(self.clone())))
    }
}

impl Doubler {
    fn open() -> Doubler {
        let d = Doubler::default();
        *d.gate.0.lock() = true;
        d
    }
    fn release(&self) {
        *self.gate.0.lock() = true;
        self.gate.1.notify_all();
    }
}

fn pipeline(extra: &str) -> String {
    common::one_node_pipeline("double", extra)
}

fn start(engine: &Doubler, toml: &str) -> Runtime {
    let config = PipelineConfig::parse(toml).unwrap();
    Runtime::from_config(&config, None, &EngineRegistry::new().with("double", engine.clone())).unwrap()
}

fn value(x: f32) -> Tensor {
    Tensor::from_vec(vec![1, 1], vec![x]).unwrap()
}

/// Submits `n` one-row requests one at a time; returns each answer's value or error.
fn one_by_one(runtime: &Runtime, n: usize) -> Vec<Result<f32, RequestError>> {
    (0..n)
        .map(|i| {
            let answer = runtime.submit(Request::new().input("x", value(i as f32))).wait();
            answer.map(|out| out.get("y").unwrap().as_slice::<f32>().unwrap()[0])
        })
        .collect()
}

#[test]
fn injected_errors_fail_only_their_batch_and_the_node_serves_on() {
    let engine = Doubler::open();
    let runtime = start(&engine, &pipeline("max_batch = 1\nfaults = { error = 0.3, seed = 5 }"));
    let answers = one_by_one(&runtime, 300);
    let mut failed = 0;
    for (i, answer) in answers.iter().enumerate() {
        match answer {
            Ok(y) => assert_eq!(*y, 2.0 * i as f32, "request {i}"),
            Err(RequestError::Node { node, message }) => {
                assert_eq!(node, "n");
                assert!(message.contains("injected fault: error") && message.contains("stage 0"), "{message}");
                failed += 1;
            }
            Err(e) => panic!("request {i}: unexpected {e}"),
        }
    }
    assert!((50..=130).contains(&failed), "about 30% of 300 runs fail, got {failed}");
    assert_eq!(engine.created.load(Ordering::SeqCst), 1, "errors do not recreate the engine");
    assert_eq!(runtime.in_flight(), 0);
}

#[test]
fn an_injected_panic_is_caught_its_engine_recreated_and_the_node_serves_on() {
    let engine = Doubler::open();
    let runtime = start(&engine, &pipeline("max_batch = 1\nfaults = { panic = 0.2, seed = 9 }"));
    let answers = one_by_one(&runtime, 200);
    let panics = answers
        .iter()
        .filter(|a| matches!(a, Err(RequestError::Node { message, .. }) if message.contains("panicked: injected fault: panic")))
        .count();
    let ok = answers.iter().filter(|a| a.is_ok()).count();
    assert_eq!(ok + panics, 200, "every request either ran or met an injected panic");
    assert!(panics >= 10, "about 20% of 200 runs panic, got {panics}");
    assert_eq!(engine.created.load(Ordering::SeqCst), 1 + panics, "each panic recreates the stage's engine once");
}

#[test]
fn slowed_runs_take_the_configured_factor_longer() {
    let engine = Doubler { work: Duration::from_millis(3), ..Doubler::open() };
    let runtime = start(&engine, &pipeline("faults = { slow = 1.0, slow_factor = 5.0 }"));
    let started = Instant::now();
    let answers = one_by_one(&runtime, 5);
    assert!(answers.iter().all(Result::is_ok));
    // 5 runs of 3 ms, each stretched to 15 ms.
    assert!(started.elapsed() >= Duration::from_millis(70), "took {:?}", started.elapsed());
}

#[test]
fn a_full_node_refuses_requests_entering_at_it_at_once_naming_itself() {
    let engine = Doubler::default(); // gate closed: the first batch holds the worker
    let runtime = start(&engine, &pipeline("max_batch = 1\nmax_queue = 2"));
    let first = runtime.submit(Request::new().input("x", value(0.0)));
    common::wait_until("the worker holds the first batch", || runtime.pending(0).0 == 0);
    let queued: Vec<_> = (1..=2).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    let refused = runtime.submit(Request::new().input("x", value(9.0)));
    assert!(refused.is_ready(), "the refusal is immediate");
    let error = refused.wait().unwrap_err();
    assert_eq!(error, RequestError::NodeQueueFull { node: "n".into(), limit: 2 });
    assert!(error.to_string().contains("nodes.n.max_queue"), "{error}");
    engine.release();
    for (i, ticket) in std::iter::once(first).chain(queued).enumerate() {
        let out = ticket.wait().expect("accepted requests run");
        assert_eq!(out.get("y").unwrap().as_slice::<f32>().unwrap()[0], 2.0 * i as f32);
    }
    // With room again, requests are accepted.
    assert!(runtime.submit(Request::new().input("x", value(1.0))).wait().is_ok());
}

/// The error building the pipeline with `extra` in its node table gives (panics if it builds).
fn rejected(extra: &str) -> baton::ConfigError {
    let config = PipelineConfig::parse(&pipeline(extra)).unwrap();
    match PipelineSpec::build(&config, None, &EngineRegistry::new().with("double", Doubler::open())) {
        Ok(_) => panic!("`{extra}` is accepted"),
        Err(e) => e,
    }
}

#[test]
fn a_priority_batch_cap_outside_1_to_max_batch_is_refused_naming_the_key() {
    for extra in ["max_batch = 4\npriority_max_batch = 0", "max_batch = 4\npriority_max_batch = 5"] {
        let e = rejected(extra);
        assert_eq!(e.location, "nodes.n.priority_max_batch", "{e}");
        assert!(e.message.contains("max_batch (4)"), "{e}");
    }
}

#[test]
fn fault_rates_and_queue_bounds_are_validated_naming_the_key() {
    let e = rejected("faults = { error = 1.5 }");
    assert_eq!(e.location, "nodes.n.faults.error", "{e}");
    let e = rejected("faults = { error = 0.6, panic = 0.6 }");
    assert_eq!(e.location, "nodes.n.faults", "{e}");
    assert!(e.message.contains("more than 1"), "{e}");
    let e = rejected("faults = { slow = 0.1, slow_factor = 0.5 }");
    assert_eq!(e.location, "nodes.n.faults.slow_factor", "{e}");
    let e = rejected("max_queue = 0");
    assert_eq!(e.location, "nodes.n.max_queue", "{e}");
    let e = PipelineConfig::parse(&pipeline("faults = { eror = 0.1 }")).unwrap_err();
    assert!(e.message.contains("eror"), "unknown fault keys are errors: {e}");
}

#[test]
fn a_ticket_dropped_while_its_batch_runs_lets_the_work_finish_and_leaks_nothing() {
    let engine = Doubler::default(); // gate closed: the batch waits inside the engine
    let runtime = start(&engine, &pipeline("max_batch = 4"));
    let ticket = runtime.submit(Request::new().input("x", value(3.0)));
    // Taken from the buffer is not yet running: the worker still checks for a dropped
    // ticket before the engine. Only a run that entered the engine cannot be removed.
    common::wait_until("the batch is inside the engine", || engine.entered.load(Ordering::SeqCst) == 1);
    drop(ticket); // the request is running: it cannot be removed any more
    engine.release();
    common::wait_until("the dropped request finished and was let go", || runtime.in_flight() == 0);
    assert_eq!(runtime.node_stats()[0].tasks, 1, "its work ran to the end");
    assert_eq!(runtime.partial_joins(), 0);
    let answer = runtime.submit(Request::new().input("x", value(5.0))).wait().expect("the node serves on");
    assert_eq!(answer.get("y").unwrap().as_slice::<f32>().unwrap()[0], 10.0);
}
