//! Request-level fairness and decomposition in a running pipeline, with a
//! recording Rust engine (no ONNX Runtime): tenants' shares of a node's
//! batches follow their weights, priority tasks still go first, unknown
//! tenants are refused by name, and a request split into jobs fails as a
//! whole naming the job that failed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;

use baton::engine::{Engine, EngineError, EngineProvider, EngineRegistry, ModelSignature, StageRequest};
use baton::{PipelineConfig, Request, RequestError, Runtime, Tensor};
use parking_lot::{Condvar, Mutex};

/// An engine that logs every row it runs (in order), doubles it, fails a batch
/// holding a negative row, and holds its first batch until the gate opens.
#[derive(Clone, Default)]
struct Recorder {
    log: Arc<Mutex<Vec<f32>>>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl Recorder {
    fn open(&self) {
        *self.gate.0.lock() = true;
        self.gate.1.notify_all();
    }

    fn wait_until(&self, what: &str, done: impl Fn() -> bool) {
        common::wait_until(what, done)
    }
}

impl Engine for Recorder {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let rows = inputs[0].as_slice::<f32>().unwrap().to_vec();
        self.log.lock().extend(&rows);
        let mut open = self.gate.0.lock();
        while !*open {
            self.gate.1.wait(&mut open);
        }
        drop(open);
        if rows.iter().any(|&x| x < 0.0) {
            return Err("a negative row".into());
        }
        Ok(vec![Tensor::from_vec(inputs[0].shape().to_vec(), rows.iter().map(|x| x * 2.0).collect()).unwrap()])
    }
}

impl EngineProvider for Recorder {
    fn inspect(&self, _: &StageRequest) -> Result<ModelSignature, EngineError> {
        Ok(common::column_signature())
    }
    fn create(&self, _: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(self.clone()))
    }
}

fn pipeline(fairness: &str, max_batch: usize) -> String {
    common::one_node_pipeline("rec", &format!("max_batch = {max_batch}\n[fairness]\n{fairness}"))
}

fn start(recorder: &Recorder, toml: &str) -> Result<Runtime, baton::StartError> {
    let config = PipelineConfig::parse(toml).map_err(baton::StartError::Config)?;
    Runtime::from_config(&config, None, &EngineRegistry::new().with("rec", recorder.clone()))
}

use common::rows;

/// Tenant of a logged row: rows of tenant `a` are 1000 + i, of `b` 2000 + i.
fn tenant_of(x: f32) -> char {
    if x >= 2000.0 {
        'b'
    } else {
        'a'
    }
}

/// Holds the node on a first request, queues 40 requests of `a` and 40 of `b`
/// (interleaved) and one optional priority request of `a`, opens the gate and
/// returns the tenants of the rows in the order they ran (blocker left out).
fn served_order(policy: &str, priority_last: bool) -> Vec<char> {
    let recorder = Recorder::default();
    let fairness = format!("order = \"{policy}\"\ntenants = {{ a = 1, b = 3 }}");
    let runtime = start(&recorder, &pipeline(&fairness, 1)).unwrap();
    let blocker = runtime.submit(Request::new().input("x", rows(&[0.0])));
    recorder.wait_until("the blocker runs", || !recorder.log.lock().is_empty());
    let mut tickets = Vec::new();
    for i in 0..40 {
        tickets.push(runtime.submit(Request::new().input("x", rows(&[1000.0 + i as f32])).tenant("a")));
        tickets.push(runtime.submit(Request::new().input("x", rows(&[2000.0 + i as f32])).tenant("b")));
    }
    if priority_last {
        tickets.push(runtime.submit(Request::new().input("x", rows(&[1999.0])).tenant("a").priority(true)));
    }
    let queued = tickets.len();
    recorder.wait_until("every request is queued", || runtime.pending(0).0 == queued);
    recorder.open();
    blocker.wait().unwrap();
    for ticket in tickets {
        ticket.wait().unwrap();
    }
    let log = recorder.log.lock().clone();
    runtime.shutdown();
    assert_eq!(log.len(), queued + 1);
    if priority_last {
        assert_eq!(log[1], 1999.0, "the priority task runs first: {log:?}");
        return log[2..].iter().map(|&x| tenant_of(x)).collect();
    }
    log[1..].iter().map(|&x| tenant_of(x)).collect()
}

fn count(order: &[char], tenant: char) -> usize {
    order.iter().filter(|&&t| t == tenant).count()
}

#[test]
fn weighted_buffer_serves_tenants_1_to_3() {
    let order = served_order("weighted", false);
    // While both wait, b gets 3 of every 4 slots: of the first 40, 10 ± 1 are a's.
    let a = count(&order[..40], 'a');
    assert!((9..=11).contains(&a), "a served {a} of the first 40: {order:?}");
    assert_eq!(count(&order, 'a'), 40);
}

#[test]
fn stride_buffer_serves_tenants_1_to_3() {
    let order = served_order("stride", false);
    let a = count(&order[..40], 'a');
    assert!((9..=11).contains(&a), "a served {a} of the first 40: {order:?}");
}

#[test]
fn fifo_buffer_ignores_tenants() {
    let order = served_order("fifo", false);
    assert_eq!(count(&order[..40], 'a'), 20, "{order:?}");
    assert!(order.chunks(2).all(|pair| pair == ['a', 'b']), "{order:?}");
}

#[test]
fn priority_tasks_go_first_whatever_the_tenant_shares() {
    let order = served_order("weighted", true);
    let a = count(&order[..40], 'a');
    assert!((9..=11).contains(&a), "a served {a} of the first 40: {order:?}");
}

#[test]
fn unknown_tenant_is_invalid_input_naming_it_and_the_known_ones() {
    let recorder = Recorder::default();
    recorder.open();
    // `policy`, the older name of `order`, is still read.
    let runtime = start(&recorder, &pipeline("policy = \"weighted\"\ntenants = { a = 1, b = 3 }", 4)).unwrap();
    match runtime.submit(Request::new().input("x", rows(&[1.0])).tenant("carol")).wait() {
        Err(RequestError::InvalidInput(message)) => {
            assert!(message.contains("unknown tenant `carol`") && message.contains("default, a, b"), "{message}")
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    // No tenant: the default tenant.
    let y = runtime.submit(Request::new().input("x", rows(&[1.0]))).wait().unwrap();
    assert_eq!(y.get("y").unwrap().to_f64_vec(), [2.0]);
    assert_eq!(runtime.in_flight(), 0);
}

#[test]
fn bad_fairness_settings_are_config_errors_naming_the_key() {
    let recorder = Recorder::default();
    let error = |fairness: &str| start(&recorder, &pipeline(fairness, 4)).err().expect("refused").to_string();
    let e = error("tenants = { a = 0 }");
    assert!(e.contains("fairness.tenants.a") && e.contains("1 to 65536"), "{e}");
    let e = error("granule = 5");
    assert!(e.contains("fairness.granule") && e.contains("node `n`") && e.contains("max_batch = 4"), "{e}");
    let e = error("order = \"lottery\"");
    assert!(e.contains("lottery"), "{e}");
    let e = error("granularity = 2");
    assert!(e.contains("granularity"), "{e}");
}

#[test]
fn split_request_reassembles_in_order_across_batches() {
    let recorder = Recorder::default();
    recorder.open();
    let runtime = start(&recorder, &pipeline("granule = 2", 4)).unwrap();
    let x: Vec<f32> = (0..23).map(|i| i as f32).collect();
    let y = runtime.submit(Request::new().input("x", rows(&x))).wait().unwrap();
    let want: Vec<f64> = x.iter().map(|&v| f64::from(v) * 2.0).collect();
    assert_eq!(y.get("y").unwrap().to_f64_vec(), want);
    // 23 rows, 4 per batch, granule 2: 8 jobs of 4 rows (the last of 3) — at least 6 batches.
    assert!(runtime.node_stats()[0].executions >= 6);
    assert_eq!(runtime.in_flight(), 0);
    // Without a granule the same request is refused, as before.
    let runtime = start(&recorder, &pipeline("", 4)).unwrap();
    let e = runtime.submit(Request::new().input("x", rows(&x))).wait().unwrap_err();
    assert!(e.to_string().contains("max_batch"), "{e}");
}

#[test]
fn one_failed_job_fails_the_split_request_naming_the_job_and_every_job_resolves() {
    let recorder = Recorder::default();
    recorder.open();
    let runtime = start(&recorder, &pipeline("granule = 2", 4)).unwrap();
    let mut x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    x[9] = -1.0;
    // 16 rows: 4 jobs of 4; row 9 is in job 2, rows 8..12.
    let error = runtime.submit(Request::new().input("x", rows(&x))).wait().unwrap_err();
    match &error {
        RequestError::Job { index: 2, start: 8, end: 12, error } => {
            assert!(matches!(**error, RequestError::Node { .. }), "{error:?}")
        }
        other => panic!("expected job 2 to fail, got {other:?}"),
    }
    assert!(error.to_string().starts_with("job 2 (rows 8..12) failed: node `n` failed"), "{error}");
    recorder.wait_until("every job resolved", || runtime.in_flight() == 0);
    // One batch per job, in order: once job 2 failed the request, job 3 was cancelled, not run.
    assert_eq!(recorder.log.lock().len(), 12, "jobs 0..=2 ran, job 3 did not");
    // The node keeps serving.
    assert_eq!(
        runtime.submit(Request::new().input("x", rows(&[3.0]))).wait().unwrap().get("y").unwrap().to_f64_vec(),
        [6.0]
    );
}

#[test]
fn stress_split_requests_from_many_threads_resolve_once_in_order_or_naming_their_failed_job() {
    let recorder = Recorder::default();
    recorder.open();
    let toml = pipeline("granule = 2", 4).replace("max_batch = 4", "max_batch = 4\nworkers = 2");
    let runtime = start(&recorder, &toml).unwrap();
    let collateral = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for thread in 0..4u32 {
            let (runtime, collateral) = (&runtime, &collateral);
            scope.spawn(move || {
                for i in 0..50u32 {
                    let n = 5 + ((thread * 50 + i) * 7 % 36) as usize;
                    let base = (thread * 1000 + i * 10) as f32 * 100.0;
                    let mut x: Vec<f32> = (0..n).map(|r| base + r as f32).collect();
                    // Every 5th request has a bad row.
                    let bad = (i % 5 == 0).then_some(n / 2);
                    if let Some(r) = bad {
                        x[r] = -1.0;
                    }
                    let answer = runtime.submit(Request::new().input("x", rows(&x))).wait();
                    match (answer, bad) {
                        (Ok(y), None) => {
                            let want: Vec<f64> = x.iter().map(|&v| f64::from(v) * 2.0).collect();
                            assert_eq!(y.get("y").unwrap().to_f64_vec(), want, "request {thread}/{i}");
                        }
                        // A job fails with its whole batch, which may hold another request's bad job.
                        (Err(RequestError::Job { start, end, error, .. }), bad) => {
                            assert!(start < end && end <= n && end - start <= 4, "{start}..{end} of {n}");
                            match *error {
                                RequestError::Node { message, .. } => assert!(message.contains("a negative row")),
                                other => panic!("request {thread}/{i}: job failed with {other:?}"),
                            }
                            if bad.is_none() {
                                collateral.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        (other, bad) => panic!("request {thread}/{i} (bad row {bad:?}): {other:?}"),
                    }
                }
            });
        }
    });
    // Most good requests do not share a batch with a bad job.
    assert!(collateral.load(Ordering::Relaxed) < 40, "{collateral:?}");
    recorder.wait_until("every job resolved", || runtime.in_flight() == 0);
    runtime.shutdown();
}

#[test]
fn dropping_a_split_requests_ticket_cancels_its_jobs_not_yet_run() {
    let recorder = Recorder::default();
    let runtime = start(&recorder, &pipeline("granule = 2", 4)).unwrap();
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    // 16 rows: 4 jobs of 4 rows, one batch each; the first holds the node at the gate.
    let ticket = runtime.submit(Request::new().input("x", rows(&x)));
    recorder.wait_until("the first job runs", || !recorder.log.lock().is_empty());
    recorder.wait_until("the other jobs wait", || runtime.pending(0).0 == 3);
    drop(ticket);
    recorder.open();
    recorder.wait_until("every job resolved", || runtime.in_flight() == 0);
    assert_eq!(*recorder.log.lock(), [0.0, 1.0, 2.0, 3.0], "only the job already running ran");
    assert_eq!(runtime.node_stats()[0].tasks, 1);
    runtime.shutdown();
}

#[test]
fn a_split_request_whose_jobs_would_pass_max_in_flight_is_refused_whole() {
    let recorder = Recorder::default();
    recorder.open();
    let toml = format!("[pipeline]\nmax_in_flight = 3\n{}", pipeline("granule = 2", 4));
    let runtime = start(&recorder, &toml).unwrap();
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let error = runtime.submit(Request::new().input("x", rows(&x))).wait().unwrap_err();
    assert_eq!(error, RequestError::QueueFull { limit: 3 });
    assert!(recorder.log.lock().is_empty(), "no job ran");
    // Three jobs fit.
    let y = runtime.submit(Request::new().input("x", rows(&x[..12]))).wait().unwrap();
    assert_eq!(y.get("y").unwrap().to_f64_vec().len(), 12);
    runtime.shutdown();
}
