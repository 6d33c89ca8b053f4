//! Runtime behaviour with small Rust test engines (no ONNX Runtime): failures
//! stay inside their batch, panics are caught, joins clean up, priority tasks
//! go first, deadlines, tick-only scheduling, shutdown modes and metrics.
//! End-to-end tests on real ONNX Runtime live in the `baton-e2e` crate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::engine::{
    Dim, Engine, EngineError, EngineProvider, EngineRegistry, ModelSignature, StageRequest, TensorSpec,
};
use baton::{DType, PipelineConfig, Request, RequestError, Runtime, Tensor};
use parking_lot::Mutex;

type RunFn = dyn Fn(&[&Tensor]) -> Result<Vec<Tensor>, String> + Send + Sync;

/// An engine made of a Rust closure; the stage's `params.kind` picks the closure.
/// Registered test engines: (kind, signature, body).
type Kinds = Vec<(String, ModelSignature, Arc<RunFn>)>;

#[derive(Clone, Default)]
struct TestEngines {
    kinds: Arc<Mutex<Kinds>>,
}

struct FnEngine(Arc<RunFn>);

impl Engine for FnEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        (self.0)(inputs).map_err(EngineError::Run)
    }
}

impl TestEngines {
    fn add(
        &self,
        kind: &str,
        inputs: &[&str],
        outputs: &[&str],
        f: impl Fn(&[&Tensor]) -> Result<Vec<Tensor>, String> + Send + Sync + 'static,
    ) {
        let spec = |name: &&str| TensorSpec {
            name: name.to_string(),
            dtype: DType::F32,
            shape: vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(1)],
        };
        let signature =
            ModelSignature { inputs: inputs.iter().map(spec).collect(), outputs: outputs.iter().map(spec).collect() };
        self.kinds.lock().push((kind.to_string(), signature, Arc::new(f)));
    }

    fn add_specs(
        &self,
        kind: &str,
        inputs: Vec<TensorSpec>,
        outputs: Vec<TensorSpec>,
        f: impl Fn(&[&Tensor]) -> Result<Vec<Tensor>, String> + Send + Sync + 'static,
    ) {
        self.kinds.lock().push((kind.to_string(), ModelSignature { inputs, outputs }, Arc::new(f)));
    }

    fn find(&self, stage: &StageRequest) -> Result<(ModelSignature, Arc<RunFn>), EngineError> {
        let KindParams { kind } = stage.params()?;
        let kinds = self.kinds.lock();
        let (_, sig, f) = kinds.iter().find(|(k, _, _)| *k == kind).ok_or(format!("no test engine `{kind}`"))?;
        Ok((sig.clone(), f.clone()))
    }

    fn registry(&self) -> EngineRegistry {
        EngineRegistry::new().with("test", self.clone())
    }
}

/// A test stage's `params`: which registered test engine it runs.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KindParams {
    kind: String,
}

impl EngineProvider for TestEngines {
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        self.find(stage).map(|(s, _)| s)
    }
    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        self.find(stage).map(|(_, f)| Box::new(FnEngine(f)) as Box<dyn Engine>)
    }
}

fn value(x: f32) -> Tensor {
    Tensor::from_vec(vec![1, 1], vec![x]).unwrap()
}

fn first(t: &Tensor) -> f32 {
    t.as_slice::<f32>().unwrap()[0]
}

fn map(inputs: &[&Tensor], f: impl Fn(f32) -> f32) -> Vec<Tensor> {
    let data: Vec<f32> = inputs[0].as_slice::<f32>().unwrap().iter().map(|&x| f(x)).collect();
    vec![Tensor::from_vec(inputs[0].shape().to_vec(), data).unwrap()]
}

fn start(engines: &TestEngines, toml: &str) -> Runtime {
    let config = PipelineConfig::parse(toml).unwrap();
    Runtime::from_config(&config, None, &engines.registry()).unwrap()
}

const ONE_NODE: &str = r#"
[inputs.x]
to = ["n.x"]
[outputs.y]
from = "n.y"
[nodes.n]
stages = [{ engine = "test", params = { kind = "k" } }]
max_batch = 8
"#;

#[test]
fn a_failing_batch_fails_only_its_requests_and_the_node_keeps_serving() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |inputs| {
        if inputs[0].as_slice::<f32>().unwrap().contains(&-1.0) {
            return Err("negative one is not allowed".into());
        }
        Ok(map(inputs, |x| x * 2.0))
    });
    // One row per batch so the bad request's batch holds only itself.
    let runtime = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 1"));
    let tickets: Vec<_> =
        [1.0, -1.0, 3.0].iter().map(|&x| runtime.submit(Request::new().input("x", value(x)))).collect();
    let results: Vec<_> = tickets.into_iter().map(|t| t.wait()).collect();
    assert_eq!(first(results[0].as_ref().unwrap().get("y").unwrap()), 2.0);
    match &results[1] {
        Err(RequestError::Node { node, message }) => {
            assert_eq!(node, "n");
            assert!(message.contains("negative one"), "{message}");
        }
        other => panic!("expected a node error, got {other:?}"),
    }
    assert_eq!(first(results[2].as_ref().unwrap().get("y").unwrap()), 6.0);
    let later = runtime.submit(Request::new().input("x", value(5.0))).wait().unwrap();
    assert_eq!(first(later.get("y").unwrap()), 10.0);
}

#[test]
fn a_panicking_engine_is_caught_and_the_node_serves_on() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |inputs| {
        if inputs[0].as_slice::<f32>().unwrap().contains(&13.0) {
            panic!("unlucky number");
        }
        Ok(map(inputs, |x| x + 1.0))
    });
    let runtime = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 1"));
    let err = runtime.submit(Request::new().input("x", value(13.0))).wait().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("`n`") && text.contains("panicked") && text.contains("unlucky number"), "{text}");
    let ok = runtime.submit(Request::new().input("x", value(1.0))).wait().unwrap();
    assert_eq!(first(ok.get("y").unwrap()), 2.0);
}

const DIAMOND: &str = r#"
[inputs.x]
to = ["a.x", "b.x"]
[outputs.z]
from = "j.z"
[nodes.a]
stages = [{ engine = "test", params = { kind = "left" } }]
[nodes.b]
stages = [{ engine = "test", params = { kind = "right" } }]
[nodes.j]
stages = [{ engine = "test", params = { kind = "join" } }]
[[edges]]
from = "a.l"
to = "j.l"
[[edges]]
from = "b.r"
to = "j.r"
"#;

fn diamond_engines(fail_right_on: f32) -> TestEngines {
    let engines = TestEngines::default();
    engines.add("left", &["x"], &["l"], |i| Ok(map(i, |x| x + 1.0)));
    engines.add("right", &["x"], &["r"], move |i| {
        if i[0].as_slice::<f32>().unwrap().contains(&fail_right_on) {
            return Err("right branch refuses".into());
        }
        Ok(map(i, |x| x * 10.0))
    });
    engines.add("join", &["l", "r"], &["z"], |i| {
        let l = i[0].as_slice::<f32>().unwrap();
        let r = i[1].as_slice::<f32>().unwrap();
        let z: Vec<f32> = l.iter().zip(r).map(|(a, b)| a + b).collect();
        Ok(vec![Tensor::from_vec(i[0].shape().to_vec(), z).unwrap()])
    });
    engines
}

#[test]
fn joins_wait_for_both_parents_and_match_rows_per_request() {
    let runtime = start(&diamond_engines(f32::NAN), DIAMOND);
    let tickets: Vec<_> =
        (0..200).map(|i| (i as f32, runtime.submit(Request::new().input("x", value(i as f32))))).collect();
    for (x, ticket) in tickets {
        let z = first(ticket.wait().unwrap().get("z").unwrap());
        assert_eq!(z, (x + 1.0) + x * 10.0, "request {x}");
    }
    assert_eq!(runtime.partial_joins(), 0);
}

#[test]
fn a_branch_failure_fails_the_request_once_and_leaves_no_partial_join() {
    let runtime = start(&diamond_engines(7.0), &DIAMOND.replace("[nodes.b]", "[nodes.b]\nmax_batch = 1"));
    let tickets: Vec<_> = (0..20).map(|i| (i, runtime.submit(Request::new().input("x", value(i as f32))))).collect();
    for (i, ticket) in tickets {
        let result = ticket.wait();
        if i == 7 {
            assert!(matches!(&result, Err(RequestError::Node { node, .. }) if node == "b"), "{result:?}");
        } else {
            assert!(result.is_ok(), "request {i}: {result:?}");
        }
    }
    // The left branch's output for request 7 reached the join after or before the failure: either way it is gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    while runtime.partial_joins() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(runtime.partial_joins(), 0);
    assert_eq!(runtime.in_flight(), 0);
}

/// An engine that blocks until the test opens its gate, recording the values it ran.
/// A gate the test opens (flag + condvar).
type Gate = Arc<(Mutex<bool>, parking_lot::Condvar)>;

/// Engine kind `k`: waits for the gate to open, records the batch's values (one entry per batch), passes them on.
fn gated(engines: &TestEngines) -> (Gate, Arc<Mutex<Vec<Vec<f32>>>>) {
    let gate = Arc::new((Mutex::new(false), parking_lot::Condvar::new()));
    let batches = Arc::new(Mutex::new(Vec::new()));
    let (g, b) = (gate.clone(), batches.clone());
    engines.add("k", &["x"], &["y"], move |inputs| {
        let mut open = g.0.lock();
        while !*open {
            g.1.wait(&mut open);
        }
        b.lock().push(inputs[0].as_slice::<f32>().unwrap().to_vec());
        Ok(map(inputs, |x| x))
    });
    (gate, batches)
}

/// Engine kind `k`: counts each batch as it enters, waits for the gate to open, passes the
/// values on.
fn gated_counting(engines: &TestEngines) -> (Gate, Arc<AtomicUsize>) {
    let gate: Gate = Arc::new((Mutex::new(false), parking_lot::Condvar::new()));
    let entered = Arc::new(AtomicUsize::new(0));
    let (g, e) = (gate.clone(), entered.clone());
    engines.add("k", &["x"], &["y"], move |inputs| {
        e.fetch_add(1, Ordering::SeqCst);
        let mut open = g.0.lock();
        while !*open {
            g.1.wait(&mut open);
        }
        Ok(map(inputs, |x| x))
    });
    (gate, entered)
}

fn open(gate: &Gate) {
    *gate.0.lock() = true;
    gate.1.notify_all();
}

/// Opens the gate however the test ends, so a failed check fails instead of hanging the shutdown.
struct OpenOnDrop(Gate);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        open(&self.0);
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn priority_tasks_are_batched_before_earlier_normal_tasks() {
    let engines = TestEngines::default();
    let (gate, seen) = gated(&engines);
    let runtime = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 2"));
    // The first request occupies the only worker (blocked at the gate).
    let blocker = runtime.submit(Request::new().input("x", value(0.0)));
    wait_until("the worker holds the first batch", || runtime.pending(0).0 == 0 && runtime.in_flight() == 1);
    let normal: Vec<_> = (1..=4).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    let urgent = runtime.submit(Request::new().input("x", value(100.0)).priority(true));
    assert_eq!(runtime.pending(0), (5, 1));
    open(&gate);
    blocker.wait().unwrap();
    urgent.wait().unwrap();
    for t in normal {
        t.wait().unwrap();
    }
    let order = seen.lock().concat();
    assert_eq!(order[0], 0.0);
    assert_eq!(order[1], 100.0, "the priority task leads the next batch: {order:?}");
    assert_eq!(&order[2..], &[1.0, 2.0, 3.0, 4.0], "normal tasks keep their order: {order:?}");
}

#[test]
fn queued_requests_past_their_deadline_are_answered_with_a_deadline_error() {
    let engines = TestEngines::default();
    let (gate, _) = gated(&engines);
    let runtime = start(&engines, ONE_NODE);
    let blocker = runtime.submit(Request::new().input("x", value(0.0)));
    wait_until("the worker holds the first batch", || runtime.pending(0).0 == 0);
    let late = runtime.submit(Request::new().input("x", value(1.0)).timeout(Duration::from_millis(1)));
    let fine = runtime.submit(Request::new().input("x", value(2.0)).timeout(Duration::from_secs(60)));
    std::thread::sleep(Duration::from_millis(5));
    open(&gate);
    blocker.wait().unwrap();
    assert_eq!(late.wait().unwrap_err(), RequestError::DeadlineExceeded { node: "n".into() });
    assert!(fine.wait().is_ok());
}

#[test]
fn tick_only_scheduling_still_runs_everything() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| -x)));
    let runtime = start(&engines, &format!("[scheduler]\ntick_us = 300\ndecide_on_arrival = false\n{ONE_NODE}"));
    let tickets: Vec<_> = (0..50).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    for (i, t) in tickets.into_iter().enumerate() {
        assert_eq!(first(t.wait().unwrap().get("y").unwrap()), -(i as f32));
    }
}

#[test]
fn tasks_accumulate_into_batches_while_the_node_is_busy() {
    let engines = TestEngines::default();
    let batches = Arc::new(Mutex::new(Vec::new()));
    let b = batches.clone();
    engines.add("k", &["x"], &["y"], move |i| {
        b.lock().push(i[0].shape()[0]);
        std::thread::sleep(Duration::from_millis(2));
        Ok(map(i, |x| x))
    });
    let runtime = start(&engines, ONE_NODE);
    let tickets: Vec<_> = (0..40).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    for t in tickets {
        t.wait().unwrap();
    }
    let batches = batches.lock().clone();
    assert_eq!(batches.iter().sum::<usize>(), 40);
    assert!(batches.iter().all(|&b| b <= 8), "max_batch holds: {batches:?}");
    assert!(batches.len() <= 10, "40 requests arriving while the node is busy batch up: {batches:?}");
}

#[test]
fn graceful_shutdown_answers_everything_accepted() {
    let engines = TestEngines::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    engines.add("k", &["x"], &["y"], move |i| {
        r.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_micros(300));
        Ok(map(i, |x| x))
    });
    let runtime = start(&engines, ONE_NODE);
    let tickets: Vec<_> = (0..100).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    runtime.shutdown();
    for t in tickets {
        assert!(t.wait().is_ok());
    }
    assert!(runs.load(Ordering::Relaxed) > 0);
}

#[test]
fn immediate_shutdown_answers_every_request_with_outputs_or_a_shutdown_error() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| {
        std::thread::sleep(Duration::from_millis(1));
        Ok(map(i, |x| x))
    });
    let runtime = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 1"));
    let tickets: Vec<_> = (0..100).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    runtime.shutdown_now();
    let (mut ok, mut shut) = (0, 0);
    for t in tickets {
        match t.wait() {
            Ok(_) => ok += 1,
            Err(RequestError::ShuttingDown) => shut += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(ok + shut, 100);
    assert!(shut > 0, "most requests were still queued");
}

#[test]
fn dropping_a_ticket_cancels_its_queued_request() {
    let engines = TestEngines::default();
    let (gate, seen) = gated(&engines);
    let runtime = start(&engines, ONE_NODE);
    let blocker = runtime.submit(Request::new().input("x", value(0.0)));
    wait_until("the worker holds the first batch", || runtime.pending(0).0 == 0);
    drop(runtime.submit(Request::new().input("x", value(1.0))));
    let kept = runtime.submit(Request::new().input("x", value(2.0)));
    open(&gate);
    blocker.wait().unwrap();
    kept.wait().unwrap();
    wait_until("the cancelled request is answered", || runtime.in_flight() == 0);
    assert_eq!(seen.lock().concat(), vec![0.0, 2.0], "the dropped request never ran");
}

#[test]
fn admission_refuses_at_once_past_max_in_flight() {
    let engines = TestEngines::default();
    let (gate, _) = gated(&engines);
    let runtime = start(&engines, &format!("[pipeline]\nmax_in_flight = 3\n{ONE_NODE}"));
    let accepted: Vec<_> = (0..3).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    let refused = runtime.submit(Request::new().input("x", value(9.0)));
    assert!(refused.is_ready(), "refusal is immediate");
    assert_eq!(refused.wait().unwrap_err(), RequestError::QueueFull { limit: 3 });
    open(&gate);
    for t in accepted {
        t.wait().unwrap();
    }
}

#[test]
fn metrics_count_requests_batches_and_rows() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    let runtime = metrics::with_local_recorder(&recorder, || start(&engines, ONE_NODE));
    let tickets: Vec<_> = (0..30).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    for t in tickets {
        t.wait().unwrap();
    }
    let bad = runtime.submit(Request::new().input("nope", value(0.0)));
    assert!(bad.wait().is_err());
    runtime.shutdown();
    let mut counters = std::collections::HashMap::new();
    let mut batch_rows = 0.0;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        match value {
            DebugValue::Counter(c) => {
                counters.insert(name, c);
            }
            DebugValue::Histogram(v) if key.name() == baton::metrics::BATCH_SIZE => {
                batch_rows = v.iter().map(|x| x.0).sum()
            }
            _ => {}
        }
    }
    assert_eq!(counters["baton_requests_total{pipeline=pipeline,outcome=ok}"], 30);
    assert_eq!(counters["baton_requests_total{pipeline=pipeline,outcome=invalid_input}"], 1);
    assert_eq!(counters["baton_inferences_total{pipeline=pipeline,node=n}"], 30);
    let executions = counters["baton_executions_total{pipeline=pipeline,node=n}"];
    assert!((1..=30).contains(&executions));
    assert_eq!(batch_rows, 30.0, "batch sizes add up to the rows inferred");
    assert!(counters["baton_scheduler_picks_total{pipeline=pipeline,node=n}"] >= executions);
}

#[test]
fn dynamic_policy_runs_a_full_batch_without_waiting_for_the_delay() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    // A 60 s queue delay: only a full batch (4 rows) can run before the test gives up.
    let toml = format!(
        "[scheduler]\npolicy = \"dynamic\"\nmax_queue_delay_us = 60000000\n{}",
        ONE_NODE.replace("max_batch = 8", "max_batch = 4")
    );
    let runtime = start(&engines, &toml);
    let tickets: Vec<_> = (0..4).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    for t in tickets {
        assert!(t.wait_timeout(Duration::from_secs(10)).is_ok(), "a full batch runs at once");
    }
    let lone = runtime.submit(Request::new().input("x", value(9.0)));
    let lone = lone.wait_timeout(Duration::from_millis(50)).expect_err("a lone task waits for its delay").0;
    runtime.shutdown_now();
    assert_eq!(lone.wait().unwrap_err(), RequestError::ShuttingDown);
}

#[test]
fn dynamic_policy_runs_a_partial_batch_once_its_delay_ran_out() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    let toml = format!("[scheduler]\npolicy = \"dynamic\"\nmax_queue_delay_us = 20000\n{ONE_NODE}");
    let runtime = start(&engines, &toml);
    let sent = Instant::now();
    runtime.submit(Request::new().input("x", value(1.0))).wait().unwrap();
    assert!(sent.elapsed() >= Duration::from_millis(20), "waited for the queue delay");
    assert_eq!(runtime.node_stats()[0].executions, 1);
}

#[test]
fn no_batching_policy_runs_one_request_per_batch() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| {
        std::thread::sleep(Duration::from_micros(200));
        Ok(map(i, |x| x))
    });
    let runtime = start(&engines, &format!("[scheduler]\npolicy = \"none\"\n{ONE_NODE}"));
    let tickets: Vec<_> = (0..20).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    for t in tickets {
        t.wait().unwrap();
    }
    let stats = &runtime.node_stats()[0];
    assert_eq!((stats.executions, stats.rows, stats.tasks), (20, 20, 20));
}

#[test]
fn a_workers_hand_on_is_counted_before_it_takes_its_next_batch() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    // One worker: it counts a batch's hand-on after answering, and only then takes the next.
    let runtime = start(&engines, ONE_NODE);
    runtime.submit(Request::new().input("x", value(1.0))).wait().unwrap();
    assert_eq!(runtime.node_stats()[0].executions, 1);
    runtime.submit(Request::new().input("x", value(2.0))).wait().unwrap();
    let stats = &runtime.node_stats()[0];
    assert_eq!(stats.executions, 2);
    assert!(stats.hand_on_ns > 0, "the first batch's hand-on is counted: {stats:?}");
}

#[test]
fn node_stats_add_up_rows_and_batches() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    let runtime = start(&engines, ONE_NODE);
    let two_rows = Tensor::from_vec(vec![2, 1], vec![1.0f32, 2.0]).unwrap();
    runtime.submit(Request::new().input("x", two_rows)).wait().unwrap();
    runtime.submit(Request::new().input("x", value(3.0))).wait().unwrap();
    let stats = &runtime.node_stats()[0];
    assert_eq!(stats.name, "n");
    assert_eq!((stats.rows, stats.tasks), (3, 2));
    assert!(stats.executions >= 1 && stats.compute_ns > 0);
    let timed: u64 = stats.batch_times.iter().flat_map(|t| &t.buckets).map(|b| b.2).sum();
    assert_eq!(timed, stats.executions, "every batch's compute time is in its size's histogram");
}

#[test]
fn every_eighth_batch_of_a_worker_samples_its_threads_cpu_time_which_a_sleeping_stage_does_not_spend() {
    let engines = TestEngines::default();
    // Each batch sleeps 2 ms: wall time the thread spends off the CPU.
    engines.add("k", &["x"], &["y"], |i| {
        std::thread::sleep(std::time::Duration::from_millis(2));
        Ok(map(i, |x| x))
    });
    let runtime = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 1"));
    for i in 0..17 {
        runtime.submit(Request::new().input("x", value(i as f32))).wait().unwrap();
    }
    let stats = &runtime.node_stats()[0];
    assert_eq!(stats.executions, 17);
    assert_eq!(stats.batch_cpu.batches, 3, "batches 1, 9 and 17 of the one worker");
    assert!(stats.batch_cpu.wall_ns >= 3 * 2_000_000, "{:?}", stats.batch_cpu);
    let share = stats.batch_cpu.cpu_per_wall().unwrap();
    assert!(share < 0.5, "a stage that sleeps 2 ms ran {share} of its wall time on a core");
}

#[test]
fn an_idle_worker_counts_its_spins_and_samples_the_first_ones_cpu_and_one_that_may_not_spin_counts_none() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    let spinning = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 8\nidle_spin_us = 300"));
    spinning.submit(Request::new().input("x", value(1.0))).wait().unwrap();
    // Answered, the worker finds its channel empty and spins 300 µs; the spin is
    // counted when it ends. Wait for that condition (bounded, as a failure guard).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let spun = loop {
        let s = spinning.node_stats()[0].spin_cpu;
        if s.spins >= 1 && s.sampled >= 1 {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "no spin counted: {s:?}");
        std::thread::yield_now();
    };
    assert!(spun.cpu_ns > 0, "a sampled spin of up to 300 µs ran on a core: {spun:?}");
    assert!(spun.estimated_cpu_ns() >= spun.cpu_ns as f64);

    let parking = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 8\nidle_spin_us = 0"));
    for i in 0..5 {
        parking.submit(Request::new().input("x", value(i as f32))).wait().unwrap();
    }
    let stats = &parking.node_stats()[0];
    assert_eq!(
        (stats.executions >= 1, stats.spin_cpu),
        (true, Default::default()),
        "a worker that parks at once never spins"
    );
}

/// Whether a thread of this process may take the real-time policy (and leave it).
fn may_use_realtime() -> bool {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: sets the calling thread's own policy; the thread ends right after.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
    })
    .join()
    .unwrap_or(false)
}

#[test]
fn a_batch_that_starts_at_the_real_time_policy_is_timed_apart_and_a_background_one_is_not() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    let toml = format!("[scheduler]\nforeground_realtime = true\nbackground_scope = \"batch\"\n{ONE_NODE}");
    let runtime = start(&engines, &toml);
    runtime.submit(Request::new().input("x", value(1.0)).priority(true)).wait().unwrap();
    runtime.submit(Request::new().input("x", value(2.0))).wait().unwrap();
    runtime.submit(Request::new().input("x", value(3.0))).wait().unwrap();
    let stats = &runtime.node_stats()[0];
    let count =
        |times: &[baton::stats::BatchTimes]| -> u64 { times.iter().flat_map(|t| &t.buckets).map(|b| b.2).sum() };
    assert_eq!(stats.executions, 3);
    let realtime = if may_use_realtime() { 1 } else { 0 };
    assert_eq!(count(&stats.realtime_batch_times), realtime, "the priority request's batch only, where permitted");
    assert_eq!(stats.realtime_batch_times.first().map(|t| t.batch_size), (realtime == 1).then_some(1));
    // The worker starts in the real-time foreground and leaves it for the second (plain)
    // batch only as that batch starts: the first two wake-ups are real-time, the third not.
    let wakes = &stats.wake_delays;
    let normal = wakes.free.iter().chain(&wakes.contended).sum::<u64>();
    assert_eq!(wakes.realtime.iter().sum::<u64>(), 2 * realtime, "woken at the real-time policy, where permitted");
    assert!(normal >= 3 - 2 * realtime, "the background worker's wake-up is a normal one: {wakes:?}");

    let plain = start(&engines, ONE_NODE);
    plain.submit(Request::new().input("x", value(1.0)).priority(true)).wait().unwrap();
    assert!(plain.node_stats()[0].realtime_batch_times.is_empty(), "without foreground_realtime no batch is real-time");
}

#[test]
fn every_batch_records_its_workers_wake_up_and_a_worker_or_tick_with_the_cores_busy_counts_as_contended() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores + 1;
    let engines = TestEngines::default();
    let (gate, entered) = gated_counting(&engines);
    let _opener = OpenOnDrop(gate.clone());
    let toml = ONE_NODE.replace("max_batch = 8", &format!("max_batch = 1\nworkers = {workers}"));
    let runtime = start(&engines, &toml);
    // The scheduler thread's own wake-ups between ticks: free while no worker is busy.
    wait_until("idle ticks are recorded", || runtime.ticks().lateness.free.iter().sum::<u64>() >= 2);
    assert_eq!(runtime.ticks().lateness.contended.iter().sum::<u64>(), 0, "no decision took every core");
    let ticks = runtime.ticks();
    assert!(ticks.rounds >= 2 && ticks.cpu_ns > 0, "each round's CPU time is counted: {ticks:?}");
    let tickets: Vec<_> = (0..workers).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    // Every worker holds a batch at the gate: none can finish, so the last one told was told
    // while the `cores` others were busy.
    wait_until("every worker holds a batch", || entered.load(Ordering::SeqCst) == workers);
    // Every decision from now on sees every core busy: the ticks after it are contended.
    wait_until("contended ticks are recorded", || runtime.ticks().lateness.contended.iter().sum::<u64>() >= 2);
    open(&gate);
    for t in tickets {
        t.wait().unwrap();
    }
    let stats = &runtime.node_stats()[0];
    let (free, contended): (u64, u64) = (stats.wake_delays.free.iter().sum(), stats.wake_delays.contended.iter().sum());
    assert_eq!(stats.executions, workers as u64);
    assert!(free + contended >= stats.executions, "a wake-up per batch: {free} + {contended} < {}", stats.executions);
    assert!(contended >= 1, "the last worker was told with {cores} busy: {free} free, {contended} contended");
    assert!(free >= 1, "the first worker was told with none busy");
}

#[test]
fn every_decision_is_timed_in_the_class_of_the_poke_that_made_it() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    let count = |counts: &[u64]| counts.iter().sum::<u64>();
    let ticking = start(&engines, ONE_NODE);
    wait_until("the tick thread decides", || count(&ticking.ticks().decisions.on_ticks) >= 1);

    // No tick within the test (one each 10 s): the decisions are the arrival's and the worker's alone.
    let runtime = start(&engines, &format!("[scheduler]\ntick_us = 10000000\n{ONE_NODE}"));
    let before = runtime.ticks().decisions;
    runtime.submit(Request::new().input("x", value(1.0)).priority(true)).wait().unwrap();
    // The worker pokes after it answered: it decides, or hands its reason to a decision running.
    wait_until("the worker's poke after its batch", || {
        let made = runtime.ticks().decisions.since(&before);
        count(&made.on_finishes) + made.handed_over >= 1
    });
    let made = runtime.ticks().decisions.since(&before);
    assert!(count(&made.on_arrivals) >= 1, "the priority arrival decided on the submitter: {made:?}");
    assert_eq!(count(&made.on_ticks), 0, "no tick: {made:?}");
    assert_eq!(made.on_finishes.len(), baton::log_buckets::BUCKETS, "dense counts by bucket");
}

#[test]
fn every_task_records_its_queue_time_and_the_part_before_its_batch_was_picked() {
    let engines = TestEngines::default();
    let (gate, entered) = gated_counting(&engines);
    let _opener = OpenOnDrop(gate.clone());
    let runtime = start(&engines, &ONE_NODE.replace("max_batch = 8", "max_batch = 1"));
    let first = runtime.submit(Request::new().input("x", value(1.0)));
    wait_until("the first batch holds the worker", || entered.load(Ordering::SeqCst) == 1);
    let second = runtime.submit(Request::new().input("x", value(2.0)));
    wait_until("the second task waits in the buffer", || runtime.pending(0).0 == 1);
    // The one worker is busy: the second task cannot be picked until the first batch ends,
    // at least `held` from now.
    let held = std::time::Duration::from_millis(3);
    let since = std::time::Instant::now();
    while since.elapsed() < held {
        std::hint::spin_loop();
    }
    open(&gate);
    first.wait().unwrap();
    second.wait().unwrap();
    let count = |counts: &[u64]| counts.iter().sum::<u64>();
    // A batch's hand-on is counted as it ends, after it has answered its requests.
    wait_until("both hand-ons are counted", || count(&runtime.node_stats()[0].hand_on_times) >= 2);
    let stats = &runtime.node_stats()[0];
    assert_eq!(stats.executions, 2);
    assert_eq!(count(&stats.queue_times.waited), 2, "a wait per task");
    assert_eq!(count(&stats.queue_times.picked), 2);
    assert_eq!(count(&stats.hand_on_times), 2, "a hand-on per batch");
    let q = &stats.queue_times;
    let lower_bound = baton::log_buckets::bucket_lower_ns(baton::log_buckets::bucket(held.as_nanos() as u64));
    assert!(q.picked_ns(1.0).unwrap() >= lower_bound, "the second task waited to be picked: {q:?}");
    assert!(q.picked_ns(1.0) <= q.waited_ns(1.0) && q.picked_ns(0.5) <= q.waited_ns(0.5), "picked is part of the wait");
}

#[test]
fn submit_then_calls_back_exactly_once_with_outputs_or_the_refusal() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x * 3.0)));
    let runtime = start(&engines, ONE_NODE);
    let (tx, rx) = crossbeam_channel::unbounded();
    for i in 0..50 {
        let tx = tx.clone();
        runtime.submit_then(Request::new().input("x", value(i as f32)), move |r| tx.send((i, r)).unwrap());
    }
    let tx2 = tx.clone();
    runtime.submit_then(Request::new().input("bogus", value(0.0)), move |r| tx2.send((99, r)).unwrap());
    drop(tx);
    let mut seen: Vec<(usize, RequestResultLite)> = rx.iter().take(51).map(|(i, r)| (i, lite(r))).collect();
    seen.sort_by_key(|(i, _)| *i);
    assert_eq!(seen.len(), 51);
    for (i, r) in &seen[..50] {
        assert_eq!(*r, RequestResultLite::Ok(*i as f32 * 3.0));
    }
    assert!(matches!(&seen[50].1, RequestResultLite::Err(e) if e.contains("bogus")));
    runtime.shutdown();
    assert!(rx.try_recv().is_err(), "no second call");
}

#[derive(Debug, PartialEq)]
enum RequestResultLite {
    Ok(f32),
    Err(String),
}

fn lite(r: baton::RequestResult) -> RequestResultLite {
    match r {
        Ok(o) => RequestResultLite::Ok(first(o.get("y").unwrap())),
        Err(e) => RequestResultLite::Err(e.to_string()),
    }
}

/// A stateful node: y = x + state, new_state = state + x (a running sum per stream).
const STATEFUL: &str = r#"
[streams]
idle_timeout_ms = 60000
[inputs.x]
to = ["acc.x"]
[outputs.y]
from = "acc.y"
[nodes.acc]
stages = [{ engine = "test", params = { kind = "acc" } }]
max_batch = 8
[[nodes.acc.state]]
input = "state"
output = "new_state"
"#;

fn accumulator(fail_on: f32) -> TestEngines {
    let engines = TestEngines::default();
    engines.add("acc", &["x", "state"], &["y", "new_state"], move |i| {
        let x = i[0].as_slice::<f32>().unwrap();
        if x.contains(&fail_on) {
            return Err("refused value".into());
        }
        let s = i[1].as_slice::<f32>().unwrap();
        let sum: Vec<f32> = x.iter().zip(s).map(|(a, b)| a + b).collect();
        let t = Tensor::from_vec(i[0].shape().to_vec(), sum).unwrap();
        Ok(vec![t.clone(), t])
    });
    engines
}

fn chunk(runtime: &Runtime, stream: u64, x: f32, start: bool, end: bool) -> baton::Ticket {
    runtime.submit(Request::new().input("x", value(x)).stream(stream, start, end))
}

#[test]
fn streams_carry_state_per_stream_while_batching_across_streams() {
    let runtime = start(&accumulator(f32::NAN), STATEFUL);
    // 16 streams interleaved, 10 chunks each, all submitted before any answer.
    let mut tickets = Vec::new();
    for step in 0..10 {
        for s in 0..16u64 {
            let x = (s * 100 + step) as f32;
            tickets.push((s, step, chunk(&runtime, s, x, step == 0, step == 9)));
        }
    }
    for (s, step, ticket) in tickets {
        let y = first(ticket.wait().unwrap().get("y").unwrap());
        // Running sum of s*100 + 0..=step.
        let expected: f32 = (0..=step).map(|k| (s * 100 + k) as f32).sum();
        assert_eq!(y, expected, "stream {s} step {step}");
    }
    assert!(runtime.node_stats()[0].executions < 160, "chunks of different streams batched together");
    assert_eq!(runtime.stream_usage()[0].1, 0, "final chunks closed every stream");
}

#[test]
fn a_failed_chunk_leaves_the_state_unchanged_and_the_next_chunk_works() {
    let runtime = start(&accumulator(-1.0), STATEFUL);
    assert_eq!(first(chunk(&runtime, 7, 5.0, true, false).wait().unwrap().get("y").unwrap()), 5.0);
    let err = chunk(&runtime, 7, -1.0, false, false).wait().unwrap_err();
    assert!(err.to_string().contains("stream 7's state is unchanged"), "{err}");
    assert_eq!(first(chunk(&runtime, 7, 2.0, false, true).wait().unwrap().get("y").unwrap()), 7.0);
}

#[test]
fn a_chunk_of_a_stream_never_started_is_refused_naming_the_stream() {
    let runtime = start(&accumulator(f32::NAN), STATEFUL);
    let err = chunk(&runtime, 99, 1.0, false, false).wait().unwrap_err();
    assert!(matches!(&err, RequestError::Stream { id: 99, message } if message.contains("not open")), "{err}");
    let err = runtime.submit(Request::new().input("x", value(1.0))).wait().unwrap_err();
    assert!(err.to_string().contains("must be a chunk of a stream"), "{err}");
}

#[test]
fn the_final_chunk_is_a_priority_task_and_closes_the_stream() {
    let runtime = start(&accumulator(f32::NAN), STATEFUL);
    chunk(&runtime, 1, 1.0, true, false).wait().unwrap();
    assert_eq!(runtime.stream_usage()[0].1, 1);
    chunk(&runtime, 1, 1.0, false, true).wait().unwrap();
    assert_eq!(runtime.stream_usage()[0].1, 0);
    let err = chunk(&runtime, 1, 1.0, false, false).wait().unwrap_err();
    assert!(matches!(err, RequestError::Stream { id: 1, .. }), "closed after its final chunk");
}

#[test]
fn idle_streams_expire_and_free_their_state() {
    // The sweep runs every 100 ms, so expiry follows within ~1.1 s of the last chunk.
    let idle_timeout = Duration::from_millis(1000);
    let toml = STATEFUL.replace("idle_timeout_ms = 60000", &format!("idle_timeout_ms = {}", idle_timeout.as_millis()));
    let runtime = start(&accumulator(f32::NAN), &toml);
    let opened = Instant::now();
    for s in 0..5 {
        chunk(&runtime, s, 1.0, true, false).wait().unwrap();
    }
    let (_, open, bytes) = runtime.stream_usage()[0].clone();
    // No stream can have expired yet only if less than the idle timeout passed since the
    // first opened: on a machine so loaded that it did not, the count proves nothing.
    if opened.elapsed() < idle_timeout {
        assert_eq!((open, bytes), (5, 5 * 4), "five open streams, one f32 of state each");
    }
    wait_until("idle streams expire", || runtime.stream_usage()[0].1 == 0);
    assert_eq!(runtime.stream_usage()[0].2, 0, "their state is freed");
    let err = chunk(&runtime, 0, 1.0, false, false).wait().unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");
}

#[test]
fn state_memory_is_bounded_for_new_streams_only() {
    let toml = STATEFUL.replace("idle_timeout_ms = 60000", "idle_timeout_ms = 60000\nmax_state_bytes = 8");
    let runtime = start(&accumulator(f32::NAN), &toml);
    chunk(&runtime, 1, 1.0, true, false).wait().unwrap();
    chunk(&runtime, 2, 1.0, true, false).wait().unwrap();
    let err = chunk(&runtime, 3, 1.0, true, false).wait().unwrap_err();
    assert!(matches!(&err, RequestError::StateMemoryFull { id: 3, .. }), "{err:?}");
    assert!(err.to_string().contains("out of state memory"), "{err}");
    assert_eq!(
        first(chunk(&runtime, 1, 2.0, false, false).wait().unwrap().get("y").unwrap()),
        3.0,
        "existing streams go on"
    );
}

fn dynamic_spec(name: &str, rank: usize) -> TensorSpec {
    TensorSpec { name: name.into(), dtype: DType::F32, shape: vec![Dim::Dynamic(None); rank] }
}

const FUNCTION_NODE: &str = r#"
[inputs.n]
to = ["node.n"]
[outputs.y]
from = "node.y"
[nodes.node]
stages = [{ function = "repeat" }, { engine = "test", params = { kind = "double" } }]
max_batch = 8
"#;

/// A Rust stage turning each request's one value v into v rows (a count-changing stage).
fn repeat_function() -> baton::FunctionStage {
    let signature = ModelSignature { inputs: vec![dynamic_spec("n", 2)], outputs: vec![dynamic_spec("item", 2)] };
    baton::FunctionStage::new(signature, |inputs, rows| {
        let values = inputs[0].as_slice::<f32>().unwrap();
        let mut out = Vec::new();
        let mut counts = Vec::new();
        let mut at = 0;
        for &r in rows {
            let mut count = 0;
            for &v in &values[at..at + r] {
                out.extend(std::iter::repeat_n(v, v as usize));
                count += v as usize;
            }
            at += r;
            counts.push(count);
        }
        let n = out.len();
        Ok(baton::StageOutput { tensors: vec![Tensor::from_vec(vec![n, 1], out).unwrap()], rows: Some(counts) })
    })
}

#[test]
fn a_rust_stage_can_change_how_many_items_each_request_has() {
    let engines = TestEngines::default();
    engines.add_specs("double", vec![dynamic_spec("item", 2)], vec![dynamic_spec("y", 2)], |i| Ok(map(i, |x| x * 2.0)));
    let registry = engines.registry().with_function("repeat", repeat_function());
    let config =
        PipelineConfig::parse(&format!("[scheduler]\ndecide_on_arrival = false\ntick_us = 20000\n{FUNCTION_NODE}"))
            .unwrap();
    let runtime = Runtime::from_config(&config, None, &registry).unwrap();
    let tickets: Vec<_> =
        [3.0f32, 0.0, 2.0].iter().map(|&v| (v, runtime.submit(Request::new().input("n", value(v))))).collect();
    for (v, ticket) in tickets {
        let y = ticket.wait().unwrap();
        let y = y.get("y").unwrap();
        assert_eq!(y.shape(), &[v as usize, 1], "request {v} has {v} items");
        assert!(y.as_slice::<f32>().unwrap().iter().all(|&x| x == v * 2.0));
    }
    assert_eq!(runtime.node_stats()[0].executions, 1, "the three requests shared one batch");
}

#[test]
fn an_unknown_function_is_a_load_time_error_naming_it() {
    let config = PipelineConfig::parse(FUNCTION_NODE).unwrap();
    let err = baton::PipelineSpec::build(&config, None, &TestEngines::default().registry()).err().unwrap();
    assert_eq!(err.location, "nodes.node.stages[0].function");
    assert!(err.message.contains("unknown function `repeat`"), "{err}");
}

/// One node `n` of engine kind `twice` whose input `x` is padded along axis 1 with -5
/// and whose output `y` is cut back along axis 1.
const PADDED_NODE: &str = r#"
[inputs.x]
to = ["n.x"]
[outputs.y]
from = "n.y"
[nodes.n]
stages = [{ engine = "test", params = { kind = "twice" } }]
[[nodes.n.pad]]
input = "x"
axes = [1]
value = -5.0
cut = { y = [1] }
"#;

#[test]
fn ragged_inputs_are_padded_into_one_batch_and_outputs_cut_back() {
    let engines = TestEngines::default();
    engines.add_specs("twice", vec![dynamic_spec("x", 2)], vec![dynamic_spec("y", 2)], |i| {
        // Padding must be the configured value: count it, so the test sees it was padded.
        Ok(map(i, |x| if x == -5.0 { 1000.0 } else { x * 2.0 }))
    });
    let toml = format!("[scheduler]\ndecide_on_arrival = false\ntick_us = 20000\n{PADDED_NODE}");
    let runtime = start(&engines, &toml);
    let tickets: Vec<_> = [2usize, 5, 3]
        .iter()
        .map(|&len| {
            let x = Tensor::from_vec(vec![1, len], (0..len).map(|i| i as f32).collect()).unwrap();
            (len, runtime.submit(Request::new().input("x", x)))
        })
        .collect();
    for (len, ticket) in tickets {
        let out = ticket.wait().unwrap();
        let y = out.get("y").unwrap();
        assert_eq!(y.shape(), &[1, len]);
        let expected: Vec<f32> = (0..len).map(|i| i as f32 * 2.0).collect();
        assert_eq!(y.as_slice::<f32>().unwrap(), expected.as_slice(), "padding cut away for length {len}");
    }
    assert_eq!(runtime.node_stats()[0].executions, 1, "different lengths batched together");
}

#[test]
fn a_padded_axis_is_rounded_up_to_its_multiple_and_the_outputs_cut_back_to_each_request() {
    let engines = TestEngines::default();
    let widths = Arc::new(Mutex::new(Vec::new()));
    let seen = widths.clone();
    engines.add_specs("twice", vec![dynamic_spec("x", 2)], vec![dynamic_spec("y", 2)], move |i| {
        seen.lock().push(i[0].shape()[1]);
        Ok(map(i, |x| if x == -5.0 { 1000.0 } else { x * 2.0 }))
    });
    let toml = PADDED_NODE.replace("axes = [1]", "axes = [1]\nmultiple = [4]");
    let runtime = start(&engines, &toml);
    for len in [2usize, 5, 8, 1] {
        let x = Tensor::from_vec(vec![1, len], (0..len).map(|i| i as f32).collect()).unwrap();
        let out = runtime.submit(Request::new().input("x", x)).wait().unwrap();
        let y = out.get("y").unwrap();
        let expected: Vec<f32> = (0..len).map(|i| i as f32 * 2.0).collect();
        assert_eq!(y.as_slice::<f32>().unwrap(), expected.as_slice(), "padding cut away for length {len}");
    }
    assert_eq!(*widths.lock(), [4, 8, 8, 4], "each batch ran at the next multiple of 4");
    let bad = toml.replace("multiple = [4]", "multiple = [4, 2]");
    let err =
        baton::PipelineSpec::build(&PipelineConfig::parse(&bad).unwrap(), None, &engines.registry()).err().unwrap();
    assert_eq!(err.location, "nodes.n.pad[0].multiple");
}

#[test]
fn padding_a_fixed_dim_is_a_config_error() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |i| Ok(map(i, |x| x)));
    let toml = format!("{ONE_NODE}\n[[nodes.n.pad]]\ninput = \"x\"\naxes = [1]\n");
    let err =
        baton::PipelineSpec::build(&PipelineConfig::parse(&toml).unwrap(), None, &engines.registry()).err().unwrap();
    assert_eq!(err.location, "nodes.n.pad[0].axes");
    assert!(err.message.contains("fixed"), "{err}");
}

#[test]
fn a_request_leaving_out_an_optional_input_runs_only_the_nodes_it_reaches() {
    // The diamond, with `b` fed by the optional `extra` instead of `x`, and `a`'s output exposed.
    let engines = diamond_engines(f32::NAN);
    let toml = DIAMOND
        .replace("to = [\"a.x\", \"b.x\"]", "to = [\"a.x\"]\n[inputs.extra]\nto = [\"b.x\"]\noptional = true")
        + "[outputs.out_a]\nfrom = \"a.l\"\n";
    let runtime = start(&engines, &toml);
    let partial = runtime.submit(Request::new().input("x", value(1.0))).wait().unwrap();
    assert_eq!(partial.len(), 1, "only the output its inputs lead to");
    assert_eq!(first(partial.get("out_a").unwrap()), 2.0);
    assert!(partial.get("z").is_none());
    let full = runtime.submit(Request::new().input("x", value(1.0)).input("extra", value(3.0))).wait().unwrap();
    assert_eq!(first(full.get("z").unwrap()), 2.0 + 30.0);
    let stats = runtime.node_stats();
    assert_eq!(stats[1].tasks, 1, "node b ran for the full request only");
    assert_eq!(runtime.partial_joins(), 0, "the partial request left nothing waiting at the join");
    let err = runtime.submit(Request::new().input("extra", value(3.0))).wait().unwrap_err();
    assert!(err.to_string().contains("missing input `x`"), "{err}");
}

#[test]
fn priority_follows_the_dag_unless_configured_otherwise() {
    for follows in [true, false] {
        let engines = TestEngines::default();
        engines.add("pass", &["x"], &["m"], |i| Ok(map(i, |x| x)));
        let (gate, _) = gated(&engines);
        let toml = format!(
            "[scheduler]\npriority_follows_dag = {follows}\n[inputs.x]\nto = [\"a.x\"]\n[outputs.y]\nfrom = \"b.y\"\n\
             [nodes.a]\nstages = [{{ engine = \"test\", params = {{ kind = \"pass\" }} }}]\n\
             [nodes.b]\nstages = [{{ engine = \"test\", params = {{ kind = \"k\" }} }}]\n\
             [[edges]]\nfrom = \"a.m\"\nto = \"b.x\"\n"
        );
        let runtime = start(&engines, &toml);
        // Occupy b's only worker, then send a priority request through a to b.
        let blocker = runtime.submit(Request::new().input("x", value(0.0)));
        wait_until("b holds the first request", || runtime.node_stats()[0].tasks == 1 && runtime.pending(1).0 == 0);
        let urgent = runtime.submit(Request::new().input("x", value(1.0)).priority(true));
        wait_until("the urgent request waits at b", || runtime.pending(1).0 == 1);
        assert_eq!(runtime.pending(1), (1, usize::from(follows)), "priority_follows_dag = {follows}");
        open(&gate);
        blocker.wait().unwrap();
        urgent.wait().unwrap();
    }
}

/// The nice value of this process's thread named `name`, from /proc.
fn thread_nice(name: &str) -> Option<i32> {
    std::fs::read_dir("/proc/self/task").ok()?.flatten().find_map(|task| {
        let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
        if comm.trim_end() != name {
            return None;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
        // Fields after the command's closing parenthesis start at field 3; nice is field 19.
        stat.rsplit_once(')')?.1.split_whitespace().nth(16)?.parse().ok()
    })
}

/// Whether a thread of this process may lower its nice again after raising it.
fn may_lower_nice() -> bool {
    std::thread::spawn(|| unsafe {
        let own = libc::getpriority(libc::PRIO_PROCESS, 0);
        libc::setpriority(libc::PRIO_PROCESS, 0, (own + 1).min(19)) == 0
            && libc::setpriority(libc::PRIO_PROCESS, 0, own) == 0
    })
    .join()
    .unwrap()
}

#[test]
fn a_worker_in_a_background_batch_is_lifted_when_a_priority_task_reaches_its_node() {
    if !may_lower_nice() {
        eprintln!("skipped: this process may not lower a thread's nice value back (no CAP_SYS_NICE)");
        return;
    }
    let engines = TestEngines::default();
    let (gate, seen) = gated(&engines);
    let runtime = start(&engines, &format!("[scheduler]\npolicy = \"collaborative\"\nbackground_nice = 5\n{ONE_NODE}"));
    let gate = OpenOnDrop(gate);
    let own = thread_nice("baton-n-0").expect("the worker thread");
    // A batch without priority tasks runs at the background nice (blocked at the gate).
    let background = runtime.submit(Request::new().input("x", value(1.0)));
    wait_until("the worker runs the background batch at the raised nice", || {
        thread_nice("baton-n-0") == Some((own + 5).min(19))
    });
    // A priority task reaches the node while that batch still runs: the worker comes back to its own nice.
    let urgent = runtime.submit(Request::new().input("x", value(2.0)).priority(true));
    wait_until("the worker is lifted to its own nice", || thread_nice("baton-n-0") == Some(own));
    assert!(seen.lock().is_empty(), "the background batch is still running");
    drop(gate);
    background.wait().unwrap();
    urgent.wait().unwrap();
    assert_eq!(seen.lock().concat(), vec![1.0, 2.0]);
}

/// Runs `config` (ONE_NODE plus `node_extra` in its node table): holds the worker on a
/// first batch, queues three plain tasks and then one priority task behind it, opens the
/// gate, and returns the batches the node ran, in order.
fn batches_behind_a_held_batch(scheduler: &str, node_extra: &str) -> Vec<Vec<f32>> {
    let engines = TestEngines::default();
    let (gate, batches) = gated(&engines);
    let runtime = start(&engines, &format!("{scheduler}{ONE_NODE}{node_extra}"));
    let blocker = runtime.submit(Request::new().input("x", value(0.0)));
    wait_until("the worker holds the first batch", || runtime.pending(0).0 == 0 && runtime.in_flight() == 1);
    let normal: Vec<_> = (1..=3).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    let urgent = runtime.submit(Request::new().input("x", value(100.0)).priority(true));
    assert_eq!(runtime.pending(0), (4, 1));
    open(&gate);
    blocker.wait().unwrap();
    urgent.wait().unwrap();
    for t in normal {
        t.wait().unwrap();
    }
    let ran = batches.lock().clone();
    ran
}

#[test]
fn with_separate_priority_batches_a_priority_task_runs_in_a_batch_of_its_own() {
    let scheduler = "[scheduler]\npolicy = \"collaborative\"\nseparate_priority_batches = true\n";
    assert_eq!(
        batches_behind_a_held_batch(scheduler, ""),
        vec![vec![0.0], vec![100.0], vec![1.0, 2.0, 3.0]],
        "the priority task alone, then the rest"
    );
}

#[test]
fn an_efficient_batches_worker_first_takes_each_size_class_in_turn() {
    let engines = TestEngines::default();
    let (gate, batches) = gated(&engines);
    let _open = OpenOnDrop(gate.clone());
    let runtime = start(&engines, &format!("{ONE_NODE}efficient_batches = true\n"));
    let blocker = runtime.submit(Request::new().input("x", value(0.0)));
    wait_until("the worker holds the first batch", || runtime.pending(0).0 == 0 && runtime.in_flight() == 1);
    let waiting: Vec<_> = (1..=40).map(|i| runtime.submit(Request::new().input("x", value(i as f32)))).collect();
    open(&gate);
    blocker.wait().unwrap();
    for t in waiting {
        t.wait().unwrap();
    }
    let rows: Vec<usize> = batches.lock().iter().map(Vec::len).collect();
    // The classes 1, 2, 4 and 8 rows, each nine batches (its first run does not count) before
    // the next, with more tasks waiting than any: 1 + 8 single rows, nine pairs, then fours.
    let mut expected = vec![1; 9];
    expected.extend([2; 9]);
    expected.extend([4, 4, 4, 2]);
    assert_eq!(rows, expected);
}

#[test]
fn priority_max_batch_caps_the_batch_that_holds_a_priority_task() {
    let collaborative = "[scheduler]\npolicy = \"collaborative\"\n";
    assert_eq!(
        batches_behind_a_held_batch(collaborative, "priority_max_batch = 2\n"),
        vec![vec![0.0], vec![100.0, 1.0], vec![2.0, 3.0]],
        "the priority task and one other (2 rows), then the rest"
    );
    assert_eq!(
        batches_behind_a_held_batch(collaborative, ""),
        vec![vec![0.0], vec![100.0, 1.0, 2.0, 3.0]],
        "without the cap, one batch of max_batch"
    );
    assert_eq!(
        batches_behind_a_held_batch("[scheduler]\npolicy = \"greedy\"\n", "priority_max_batch = 2\n"),
        vec![vec![0.0], vec![100.0, 1.0, 2.0, 3.0]],
        "the baselines leave the cap alone"
    );
}

/// Node a (gated, priority) and node b (a pass-through, plain) under the work-conserving
/// budget 1 and `rule` (one more `[scheduler]` line): node a runs a priority task and holds
/// another waiting, so the budget has nothing left for node b. Returns whether a plain task
/// submitted to b then got its answer while a's gate stayed shut (waiting at most `patience`),
/// after `warm_b` plain tasks ran at b while no priority work waited.
fn plain_work_runs_beside_held_priority_work(rule: &str, warm_b: usize, patience: Duration) -> bool {
    let engines = TestEngines::default();
    let (gate, _) = gated(&engines);
    engines.add("pass", &["v"], &["w"], |i| Ok(map(i, |x| x)));
    let toml = format!(
        r#"
[scheduler]
policy = "collaborative"
compute_budget = 1.0
work_conserving = true
{rule}
[inputs.x]
to = ["a.x"]
optional = true
[inputs.v]
to = ["b.v"]
optional = true
[outputs.y]
from = "a.y"
[outputs.w]
from = "b.w"
[nodes.a]
stages = [{{ engine = "test", params = {{ kind = "k" }} }}]
[nodes.b]
stages = [{{ engine = "test", params = {{ kind = "pass" }} }}]
"#
    );
    let runtime = start(&engines, &toml);
    for _ in 0..warm_b {
        let answer = runtime.submit(Request::new().input("v", value(1.0))).wait().expect("node b's answer");
        assert_eq!(first(answer.get("w").unwrap()), 1.0);
    }
    let running = runtime.submit(Request::new().input("x", value(1.0)).priority(true));
    wait_until("node a runs the first priority task", || runtime.pending(0).0 == 0 && runtime.in_flight() == 1);
    let waiting = runtime.submit(Request::new().input("x", value(2.0)).priority(true));
    assert_eq!(runtime.pending(0), (1, 1), "a priority task waits at node a");
    let plain = runtime.submit(Request::new().input("v", value(3.0)));
    // The gate stays shut however the test ends, so a failed wait must not hang.
    let gate = OpenOnDrop(gate);
    let ran = match plain.wait_timeout(patience) {
        Ok(answer) => {
            assert_eq!(first(answer.expect("node b's answer").get("w").unwrap()), 3.0);
            true
        }
        Err(_) => false,
    };
    assert_eq!(runtime.pending(0), (1, 1), "node a's priority work still waits behind its gate");
    drop(gate);
    running.wait().unwrap();
    waiting.wait().unwrap();
    ran
}

#[test]
fn a_brief_node_runs_while_the_budget_holds_plain_work_back() {
    // Brief: under 1 s a batch on average (a pass-through's take a few µs). A node that has
    // not run is not brief, so b runs once first, while no priority work waits.
    assert!(
        plain_work_runs_beside_held_priority_work("brief_batch_us = 1000000", 1, Duration::from_secs(10)),
        "node b's task was held although its batches are brief"
    );
}

#[test]
fn with_a_bounded_hold_the_budget_holds_plain_work_back_no_longer_than_the_bound() {
    // The hold lets b run after 1 ms.
    assert!(
        plain_work_runs_beside_held_priority_work("max_hold_us = 1000", 0, Duration::from_secs(10)),
        "node b's task was held past the bound"
    );
}

#[test]
fn without_a_hold_or_brief_nodes_the_budget_holds_plain_work_while_priority_work_waits() {
    // The scene of the two tests above holds b back: b cannot run before a's gate opens,
    // so however long the wait, no answer comes (a short one shows it).
    let patience = Duration::from_millis(100);
    assert!(
        !plain_work_runs_beside_held_priority_work("", 1, patience),
        "the work-conserving budget held nothing back"
    );
    assert!(
        !plain_work_runs_beside_held_priority_work("brief_batch_us = 1000000", 0, patience),
        "a node that has not run yet is not brief"
    );
}

/// This process's threads whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().starts_with(prefix))
        .count()
}

#[test]
fn kept_awake_a_pipeline_runs_a_keeper_per_core_until_it_shuts_down() {
    let engines = TestEngines::default();
    engines.add("k", &["x"], &["y"], |inputs| Ok(map(inputs, |x| x + 1.0)));
    let cores = core_affinity::get_core_ids().unwrap().len();
    let runtime = start(&engines, &format!("[scheduler]\nkeep_cores_awake = true\n{ONE_NODE}"));
    assert_eq!(threads_named("baton-awake-"), cores, "one keeper per core of the process");
    let out = runtime.submit(Request::new().input("x", value(1.0))).wait().unwrap();
    assert_eq!(first(out.get("y").unwrap()), 2.0);
    // The keepers spin whenever a core is free: their CPU clock moves.
    let before = runtime.keepers_cpu_ns();
    wait_until("the keepers to run", || runtime.keepers_cpu_ns() > before);
    runtime.shutdown();
    assert_eq!(threads_named("baton-awake-"), 0, "the keepers stop with the runtime");
    let plain = start(&engines, ONE_NODE);
    assert_eq!((threads_named("baton-awake-"), plain.keepers_cpu_ns()), (0, 0), "none by default");
}
