//! Worker groups in a running pipeline, with a recording Rust engine (no ONNX
//! Runtime): a task runs only on a group that fits it (its requested kind, its
//! rows within the group's capacity); a task whose group stays busy past the
//! placement timeout is retried, counted in stats and metrics, and then runs;
//! unknown kinds and bad settings are refused by name; nothing is stranded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

mod common;

use baton::engine::{Engine, EngineError, EngineProvider, EngineRegistry, ModelSignature, StageRequest};
use baton::{PipelineConfig, Request, RequestError, Runtime, Tensor};
use parking_lot::{Condvar, Mutex};

/// Engines that log which group ran each row (a group is told apart by its
/// `intra_threads`), double every row, and hold batches of a group while its gate is shut.
#[derive(Clone, Default)]
struct Groups {
    /// (intra_threads of the worker that ran it, row value), in run order.
    log: Arc<Mutex<Vec<(usize, f32)>>>,
    /// intra_threads → shut; a group not listed runs freely.
    gates: Arc<(Mutex<HashMap<usize, bool>>, Condvar)>,
}

impl Groups {
    fn shut(&self, threads: usize) {
        self.gates.0.lock().insert(threads, true);
    }

    fn open(&self, threads: usize) {
        self.gates.0.lock().insert(threads, false);
        self.gates.1.notify_all();
    }

    fn ran_on(&self, value: f32) -> Vec<usize> {
        self.log.lock().iter().filter(|(_, x)| *x == value).map(|(t, _)| *t).collect()
    }

    fn wait_until(&self, what: &str, done: impl Fn() -> bool) {
        common::wait_until(what, done)
    }
}

struct GroupEngine {
    groups: Groups,
    threads: usize,
}

impl Engine for GroupEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let rows = inputs[0].as_slice::<f32>().unwrap().to_vec();
        self.groups.log.lock().extend(rows.iter().map(|&x| (self.threads, x)));
        let (gates, changed) = &*self.groups.gates;
        let mut gates = gates.lock();
        while gates.get(&self.threads).copied().unwrap_or(false) {
            changed.wait(&mut gates);
        }
        drop(gates);
        Ok(vec![Tensor::from_vec(inputs[0].shape().to_vec(), rows.iter().map(|x| x * 2.0).collect()).unwrap()])
    }
}

impl EngineProvider for Groups {
    fn inspect(&self, _: &StageRequest) -> Result<ModelSignature, EngineError> {
        Ok(common::column_signature())
    }
    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(GroupEngine { groups: self.clone(), threads: stage.intra_threads }))
    }
}

/// One node `n` of max_batch 4 (budget for all three workers at once): group `narrow` (2 workers, 1 thread, max_rows 2) and
/// group `wide` (1 worker, 4 threads), plus `extra` settings for the node.
fn pipeline(extra: &str, fairness: &str) -> String {
    format!(
        r#"
[scheduler]
tick_us = 500
compute_budget = 3.0     # every worker may run at once (a running batch holds the node's cost)
[inputs.x]
to = ["n.x"]
[outputs.y]
from = "n.y"
[nodes.n]
stages = [{{ engine = "g" }}]
max_batch = 4
{extra}
[[nodes.n.worker_groups]]
kind = "narrow"
workers = 2
intra_threads = 1
max_rows = 2
[[nodes.n.worker_groups]]
kind = "wide"
workers = 1
intra_threads = 4
[fairness]
{fairness}
"#
    )
}

fn start(groups: &Groups, toml: &str) -> Result<Runtime, baton::StartError> {
    let config = PipelineConfig::parse(toml).map_err(baton::StartError::Config)?;
    Runtime::from_config(&config, None, &EngineRegistry::new().with("g", groups.clone()))
}

use common::rows;

fn doubled(result: baton::RequestResult) -> Vec<f64> {
    result.unwrap().get("y").unwrap().to_f64_vec()
}

const NARROW: usize = 1;
const WIDE: usize = 4;

fn tasks_run_only_on_groups_that_fit_them(fairness: &str) {
    let groups = Groups::default();
    let runtime = start(&groups, &pipeline("", fairness)).unwrap();
    let mut tickets = Vec::new();
    for i in 0..30 {
        let i = i as f32;
        // Asks for the wide group; fits any (one row); too big for the narrow group (3 rows).
        tickets
            .push((vec![100.0 + i], runtime.submit(Request::new().input("x", rows(&[100.0 + i])).worker_kind("wide"))));
        tickets.push((vec![200.0 + i], runtime.submit(Request::new().input("x", rows(&[200.0 + i])))));
        let big = vec![300.0 + i, 400.0 + i, 500.0 + i];
        tickets.push((big.clone(), runtime.submit(Request::new().input("x", rows(&big)))));
        tickets.push((
            vec![600.0 + i],
            runtime.submit(Request::new().input("x", rows(&[600.0 + i])).worker_kind("narrow")),
        ));
    }
    for (values, ticket) in tickets {
        let want: Vec<f64> = values.iter().map(|&v| f64::from(v) * 2.0).collect();
        assert_eq!(doubled(ticket.wait()), want);
    }
    for i in 0..30 {
        let i = i as f32;
        assert_eq!(groups.ran_on(100.0 + i), [WIDE], "asked for wide");
        assert_eq!(groups.ran_on(300.0 + i), [WIDE], "3 rows are past the narrow group's max_rows 2");
        assert_eq!(groups.ran_on(600.0 + i), [NARROW], "asked for narrow");
        assert_eq!(groups.ran_on(200.0 + i).len(), 1, "runs once, on either group");
    }
    let stats = &runtime.node_stats()[0];
    assert_eq!((stats.tasks, stats.rows), (120, 180));
    assert_eq!(runtime.in_flight(), 0);
    runtime.shutdown();
}

#[test]
fn tasks_run_only_on_groups_that_fit_them_fifo() {
    tasks_run_only_on_groups_that_fit_them("");
}

#[test]
fn tasks_run_only_on_groups_that_fit_them_weighted() {
    tasks_run_only_on_groups_that_fit_them("order = \"weighted\"");
}

#[test]
fn a_task_whose_group_stays_busy_is_retried_counted_and_then_runs() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let groups = Groups::default();
    groups.shut(WIDE);
    let runtime =
        metrics::with_local_recorder(&recorder, || start(&groups, &pipeline("placement_timeout_us = 2000", "")))
            .unwrap();
    // The wide worker is held by a first wide request; a second one waits for it.
    let blocker = runtime.submit(Request::new().input("x", rows(&[1.0])).worker_kind("wide"));
    groups.wait_until("the blocker runs", || !groups.ran_on(1.0).is_empty());
    let waiting = runtime.submit(Request::new().input("x", rows(&[2.0])).worker_kind("wide"));
    // Meanwhile the narrow workers serve everyone else, passing the waiting task by.
    for i in 0..20 {
        let x = 10.0 + i as f32;
        assert_eq!(doubled(runtime.submit(Request::new().input("x", rows(&[x]))).wait()), [f64::from(x) * 2.0]);
    }
    // From here the waiting task is the only one queued (a narrow task that waited over
    // 2 ms on a loaded machine was retried too, so count only what follows).
    let (alone_since, retries_before) = (std::time::Instant::now(), runtime.node_stats()[0].placement_retries);
    let retries_alone = || runtime.node_stats()[0].placement_retries - retries_before;
    groups.wait_until("the waiting task is retried twice", || retries_alone() >= 2);
    assert!(!waiting.is_ready(), "a wide task does not run on a narrow worker");
    assert!(groups.ran_on(2.0).is_empty());
    groups.open(WIDE);
    assert_eq!(doubled(waiting.wait()), [4.0]);
    let alone_us = alone_since.elapsed().as_micros() as u64;
    assert_eq!(doubled(blocker.wait()), [2.0]);
    assert_eq!(groups.ran_on(2.0), [WIDE]);
    // At most once per 2 ms it waited (rounds of 2 ms, checked every 0.5 ms tick), not once per tick.
    let (alone, retries) = (retries_alone(), runtime.node_stats()[0].placement_retries);
    assert!(alone >= 2 && alone <= alone_us / 2000 + 1, "{alone} retries in {alone_us} µs");
    runtime.shutdown();
    let metric = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .find(|(key, ..)| key.key().name() == baton::metrics::PLACEMENT_RETRIES)
        .map(|(key, _, _, value)| (key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect(), value));
    let (labels, value): (Vec<String>, DebugValue) = metric.expect("the retry counter is recorded");
    assert!(labels.contains(&"node=n".to_string()), "{labels:?}");
    assert_eq!(value, DebugValue::Counter(retries));
}

#[test]
fn without_a_timeout_a_waiting_task_is_not_retried() {
    let groups = Groups::default();
    groups.shut(WIDE);
    let runtime = start(&groups, &pipeline("", "")).unwrap();
    let blocker = runtime.submit(Request::new().input("x", rows(&[1.0])).worker_kind("wide"));
    groups.wait_until("the blocker runs", || !groups.ran_on(1.0).is_empty());
    let waiting = runtime.submit(Request::new().input("x", rows(&[2.0])).worker_kind("wide"));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(runtime.node_stats()[0].placement_retries, 0);
    groups.open(WIDE);
    assert_eq!(doubled(waiting.wait()), [4.0]);
    blocker.wait().unwrap();
    runtime.shutdown();
}

#[test]
fn deadlines_still_apply_to_a_task_waiting_for_its_group() {
    let groups = Groups::default();
    groups.shut(WIDE);
    let runtime = start(&groups, &pipeline("placement_timeout_us = 1000", "")).unwrap();
    let blocker = runtime.submit(Request::new().input("x", rows(&[1.0])).worker_kind("wide"));
    groups.wait_until("the blocker runs", || !groups.ran_on(1.0).is_empty());
    let late =
        runtime.submit(Request::new().input("x", rows(&[2.0])).worker_kind("wide").timeout(Duration::from_millis(5)));
    groups.wait_until("the late task is retried", || runtime.node_stats()[0].placement_retries >= 1);
    std::thread::sleep(Duration::from_millis(10));
    groups.open(WIDE);
    assert_eq!(late.wait().unwrap_err(), RequestError::DeadlineExceeded { node: "n".into() });
    blocker.wait().unwrap();
    assert_eq!(runtime.in_flight(), 0);
    runtime.shutdown();
}

#[test]
fn unknown_kinds_and_tasks_no_group_fits_are_invalid_input_naming_them() {
    let groups = Groups::default();
    let runtime = start(&groups, &pipeline("", "")).unwrap();
    match runtime.submit(Request::new().input("x", rows(&[1.0])).worker_kind("gpu")).wait() {
        Err(RequestError::InvalidInput(m)) => {
            assert!(m.contains("unknown worker kind `gpu`") && m.contains("narrow, wide"), "{m}")
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    // Asks for narrow (max_rows 2) with 3 rows: no group can ever take it.
    match runtime.submit(Request::new().input("x", rows(&[1.0, 2.0, 3.0])).worker_kind("narrow")).wait() {
        Err(RequestError::InvalidInput(m)) => assert!(
            m.contains("node `n`") && m.contains("3 rows of kind `narrow`") && m.contains("narrow (max_rows 2)"),
            "{m}"
        ),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    assert_eq!(runtime.in_flight(), 0);
    runtime.shutdown();
}

#[test]
fn bad_worker_group_settings_are_config_errors_naming_the_key() {
    let groups = Groups::default();
    let error = |extra: &str| start(&groups, &pipeline(extra, "")).err().expect("refused").to_string();
    let e = error("workers = 3");
    assert!(e.contains("nodes.n.workers") && e.contains("leave it out"), "{e}");
    let e = error("placement_timeout_us = 0");
    assert!(e.contains("nodes.n.placement_timeout_us"), "{e}");
    let e = error("[[nodes.n.worker_groups]]\nkind = \"wide\"");
    assert!(e.contains("nodes.n.worker_groups[0].kind") || e.contains("worker_groups[2].kind"), "{e}");
    assert!(e.contains("already has a worker group `wide`"), "{e}");
    let e = error("[[nodes.n.worker_groups]]\nkind = \"huge\"\nmax_rows = 8");
    assert!(e.contains("nodes.n.worker_groups[0].max_rows") || e.contains("worker_groups[2].max_rows"), "{e}");
    let e = error("[[nodes.n.worker_groups]]\nkind = \"odd\"\nthreads = 2");
    assert!(e.contains("threads"), "{e}");
    let e = error("[[nodes.n.worker_groups]]\nkind = \"none\"\nworkers = 0");
    assert!(e.contains("worker_groups[0].workers") && e.contains("at least 1"), "{e}");
    // The timeout without groups.
    let plain = common::one_node_pipeline("g", "placement_timeout_us = 100");
    let e = start(&groups, &plain).err().expect("refused").to_string();
    assert!(e.contains("nodes.n.placement_timeout_us") && e.contains("worker_groups"), "{e}");
}

#[test]
fn many_threads_of_mixed_kinds_all_resolve() {
    // One worker per group and the weighted policy: the tightest case for stranding.
    let groups = Groups::default();
    let toml = pipeline("placement_timeout_us = 200", "order = \"weighted\"\ntenants = { a = 1, b = 2 }")
        .replace("workers = 2", "workers = 1");
    let runtime = Arc::new(start(&groups, &toml).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let runtime = Arc::clone(&runtime);
            std::thread::spawn(move || {
                for i in 0..150 {
                    let x = (t * 1000 + i) as f32;
                    let mut request = Request::new().tenant(if i % 3 == 0 { "a" } else { "b" });
                    request = match (i + t) % 3 {
                        0 => request.worker_kind("wide").input("x", rows(&[x])),
                        1 => request.worker_kind("narrow").input("x", rows(&[x])),
                        _ => request.input("x", rows(&[x, x, x])),
                    };
                    let y = runtime.submit(request).wait().unwrap();
                    assert_eq!(y.get("y").unwrap().to_f64_vec()[0], f64::from(x) * 2.0);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(runtime.in_flight(), 0);
    assert_eq!(runtime.pending(0), (0, 0));
    Arc::into_inner(runtime).unwrap().shutdown();
}
