//! Stopping young batches (`[scheduler] preempt_before`): a batch that holds no
//! priority task stops for priority work waiting at its node, its tasks run
//! again after it, and each request is answered once.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::engine::{Engine, EngineError, EngineProvider, EngineRegistry, ModelSignature, RunStop, StageRequest};
use baton::{PipelineConfig, Request, Runtime, Tensor};
use common::{column_signature, one_node_pipeline, rows, wait_until};
use parking_lot::{Condvar, Mutex};

/// How a run of the scene's engine ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Done,
    Stopped,
}

/// Engine `stoppable`: a batch whose values are all below 100 waits until the
/// gate opens or its run is stopped (then fails, as a stopped ORT run does);
/// a batch holding a value of 100 or more runs at once. Records every run.
#[derive(Default)]
struct Scene {
    gate: Mutex<bool>,
    changed: Condvar,
    stop: AtomicBool,
    waiting: AtomicBool,
    runs: Mutex<Vec<(Vec<f32>, Ended)>>,
}

impl Scene {
    fn open(&self) {
        *self.gate.lock() = true;
        self.changed.notify_all();
    }
}

struct SceneStop(Arc<Scene>);

impl RunStop for SceneStop {
    fn stop(&self) {
        // Under the gate's lock, so a run about to wait cannot miss it.
        let _gate = self.0.gate.lock();
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.changed.notify_all();
    }
    fn clear(&self) {
        self.0.stop.store(false, Ordering::SeqCst);
    }
}

struct SceneEngine(Arc<Scene>);

impl Engine for SceneEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let scene = &self.0;
        let values = inputs[0].as_slice::<f32>().unwrap().to_vec();
        if values.iter().all(|&v| v < 100.0) {
            let mut open = scene.gate.lock();
            scene.waiting.store(true, Ordering::SeqCst);
            while !*open && !scene.stop.load(Ordering::SeqCst) {
                scene.changed.wait(&mut open);
            }
            scene.waiting.store(false, Ordering::SeqCst);
            if !*open {
                scene.runs.lock().push((values, Ended::Stopped));
                return Err("stopped".into());
            }
        }
        scene.runs.lock().push((values, Ended::Done));
        Ok(vec![inputs[0].clone()])
    }

    fn stop_handle(&self) -> Option<Arc<dyn RunStop>> {
        Some(Arc::new(SceneStop(self.0.clone())))
    }
}

#[derive(Clone)]
struct SceneProvider(Arc<Scene>);

impl EngineProvider for SceneProvider {
    fn inspect(&self, _: &StageRequest) -> Result<ModelSignature, EngineError> {
        Ok(column_signature())
    }
    fn create(&self, _: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(SceneEngine(self.0.clone())))
    }
}

/// Opens the gate however the test ends, so a failed check fails instead of hanging the shutdown.
struct OpenOnDrop(Arc<Scene>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

fn first(t: &Tensor) -> f32 {
    t.as_slice::<f32>().unwrap()[0]
}

/// One node with one worker, the collaborative rule and `rule` (a `[scheduler]` line).
/// A priority task arrives while a plain batch waits at the gate. Returns the
/// runtime's scene and whether the priority answer came (within `patience`)
/// while the gate stayed shut; both requests are answered by the time it returns.
fn priority_work_behind_a_running_plain_batch(rule: &str, patience: Duration) -> (Arc<Scene>, Runtime, bool) {
    let scene = Arc::new(Scene::default());
    let engines = EngineRegistry::new().with("stoppable", SceneProvider(scene.clone()));
    let toml =
        format!("[scheduler]\npolicy = \"collaborative\"\n{rule}\n{}", one_node_pipeline("stoppable", "max_batch = 8"));
    let runtime = Runtime::from_config(&PipelineConfig::parse(&toml).unwrap(), None, &engines).unwrap();
    // One batch first, so the node has a mean batch time.
    let warm = runtime.submit(Request::new().input("x", rows(&[100.0]))).wait().unwrap();
    assert_eq!(first(warm.get("y").unwrap()), 100.0);
    let plain = runtime.submit(Request::new().input("x", rows(&[1.0])));
    wait_until("the plain batch waits at the gate", || scene.waiting.load(Ordering::SeqCst));
    let priority = runtime.submit(Request::new().input("x", rows(&[200.0])).priority(true));
    let gate = OpenOnDrop(scene.clone());
    let (came, answer) = match priority.wait_timeout(patience) {
        Ok(answer) => (true, answer),
        Err((ticket, _)) => {
            scene.open();
            (false, ticket.wait())
        }
    };
    drop(gate);
    assert_eq!(first(answer.expect("the priority answer").get("y").unwrap()), 200.0);
    assert_eq!(first(plain.wait().expect("the plain answer").get("y").unwrap()), 1.0);
    assert_eq!(runtime.in_flight(), 0);
    (scene, runtime, came)
}

#[test]
fn a_young_plain_batch_stops_for_waiting_priority_work_and_runs_again_after_it() {
    // Any batch is young: a billion times the node's mean batch time.
    let (scene, runtime, came) =
        priority_work_behind_a_running_plain_batch("preempt_before = 1e9", Duration::from_secs(10));
    assert!(came, "the priority answer waited for the plain batch");
    let runs = scene.runs.lock().clone();
    let want = vec![
        (vec![100.0], Ended::Done),
        (vec![1.0], Ended::Stopped),
        // The stopped task goes back first among plain tasks, after the priority one.
        (vec![200.0, 1.0], Ended::Done),
    ];
    assert_eq!(runs, want);
    let stats = &runtime.node_stats()[0];
    assert_eq!((stats.executions, stats.stopped_batches, stats.failed_batches), (2, 1, 0));
    assert_eq!(stats.tasks, 3, "the stopped task counts once, when it ran");
    runtime.shutdown();
}

#[test]
fn without_preempt_before_a_running_plain_batch_keeps_priority_work_waiting() {
    // The scene above, without the rule: the priority task cannot run before the gate
    // opens, so however long the wait, no answer comes (a short one shows it).
    let (scene, runtime, came) = priority_work_behind_a_running_plain_batch("", Duration::from_millis(100));
    assert!(!came, "the priority answer came while the plain batch still ran");
    let runs = scene.runs.lock().clone();
    assert_eq!(runs, vec![(vec![100.0], Ended::Done), (vec![1.0], Ended::Done), (vec![200.0], Ended::Done)]);
    assert_eq!(runtime.node_stats()[0].stopped_batches, 0);
    runtime.shutdown();
}

#[test]
fn preempt_before_must_be_a_positive_number() {
    let engines = EngineRegistry::new().with("stoppable", SceneProvider(Arc::default()));
    for bad in ["0", "-0.5", "nan", "inf"] {
        let toml = format!("[scheduler]\npreempt_before = {bad}\n{}", one_node_pipeline("stoppable", ""));
        let Err(err) = Runtime::from_config(&PipelineConfig::parse(&toml).unwrap(), None, &engines) else {
            panic!("preempt_before = {bad} was taken");
        };
        let err = err.to_string();
        assert!(err.contains("scheduler.preempt_before") && err.contains("not a positive number"), "{bad}: {err}");
    }
}
