//! Overload at 10× capacity (real ONNX Runtime): one node running `slow.onnx`
//! (about a millisecond a batch) with `max_queue` bounding its buffer. Its
//! capacity is measured closed-loop first; then an open-loop generator offers
//! ten times that. Refusals are immediate (answered inside `submit_then`, on
//! the submitting thread, naming the node), accepted requests keep the
//! latency a full queue implies, and memory stays bounded.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton::{PipelineConfig, Request, RequestError, Runtime};
use baton_e2e::mixed::RssMonitor;
use baton_e2e::{model, random_f32, registry};
use rand::rngs::StdRng;
use rand::SeedableRng;

const MAX_BATCH: usize = 8;
const MAX_QUEUE: usize = 64;

fn start() -> Runtime {
    let toml = format!(
        r#"
[inputs.x]
to = ["slow.x"]
[outputs.y]
from = "slow.y"
[nodes.slow]
stages = [{{ model = "{}" }}]
max_batch = {MAX_BATCH}
max_queue = {MAX_QUEUE}
"#,
        model("slow.onnx").display()
    );
    Runtime::from_config(&PipelineConfig::parse(&toml).unwrap(), None, &registry()).expect("starts")
}

/// Requests per second the node answers with 8 closed-loop submitters.
fn capacity(runtime: &Runtime) -> f64 {
    let done = AtomicU32::new(0);
    let started = Instant::now();
    let window = Duration::from_millis(1500);
    std::thread::scope(|s| {
        for t in 0..8 {
            let done = &done;
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(t);
                while started.elapsed() < window {
                    runtime.submit(Request::new().input("x", random_f32(&mut rng, 1, 64))).wait().expect("answered");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    f64::from(done.load(Ordering::Relaxed)) / started.elapsed().as_secs_f64()
}

/// What became of one request of the overload.
#[derive(Default)]
struct Fate {
    calls: u32,
    ok: bool,
    refused_at_admission: bool,
    latency: Duration,
}

#[test]
fn at_10x_capacity_refusals_are_immediate_and_accepted_requests_keep_their_latency_bound() {
    let runtime = start();
    let capacity = capacity(&runtime);
    let rate = 10.0 * capacity;
    let duration = Duration::from_secs(2);
    let total = (rate * duration.as_secs_f64()) as usize;
    let fates: Arc<Vec<Mutex<Fate>>> = Arc::new((0..total).map(|_| Mutex::new(Fate::default())).collect());
    let mut rng = StdRng::seed_from_u64(99);
    let inputs: Vec<_> = (0..256).map(|_| random_f32(&mut rng, 1, 64)).collect();
    let rss = RssMonitor::start();
    let rss_before = baton_e2e::mixed::rss_bytes();
    let started = Instant::now();
    let me = std::thread::current().id();
    for i in 0..total {
        // Open loop: request i is due at i / rate, whatever happened to the others.
        let due = started + Duration::from_secs_f64(i as f64 / rate);
        while Instant::now() < due {
            std::thread::yield_now(); // the generator shares 2 cores with the worker
        }
        let (fates, sent) = (Arc::clone(&fates), Instant::now());
        runtime.submit_then(Request::new().input("x", inputs[i % inputs.len()].clone()), move |result| {
            let mut fate = fates[i].lock().unwrap();
            fate.calls += 1;
            fate.latency = sent.elapsed();
            fate.refused_at_admission = std::thread::current().id() == me;
            match result {
                Ok(_) => fate.ok = true,
                Err(RequestError::NodeQueueFull { node, limit }) => {
                    assert_eq!((node.as_str(), limit), ("slow", MAX_QUEUE), "the refusal names the node and bound")
                }
                Err(e) => panic!("request {i}: unexpected {e}"),
            }
        });
    }
    let offered = total as f64 / started.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(30);
    while runtime.in_flight() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let peak_rss = rss.stop();
    let fates: Vec<Fate> = fates.iter().map(|f| std::mem::take(&mut *f.lock().unwrap())).collect();
    assert!(fates.iter().all(|f| f.calls == 1), "every request resolved exactly once");
    let accepted: Vec<&Fate> = fates.iter().filter(|f| f.ok).collect();
    let refused: Vec<&Fate> = fates.iter().filter(|f| !f.ok).collect();
    assert!(refused.iter().all(|f| f.refused_at_admission), "every refusal was answered inside submit_then");
    assert!(accepted.iter().all(|f| !f.refused_at_admission), "accepted requests were answered by a worker");
    let mut latencies: Vec<Duration> = accepted.iter().map(|f| f.latency).collect();
    latencies.sort();
    let p99 = latencies[latencies.len() * 99 / 100];
    // An accepted request waits behind at most a full queue and the batch running: (MAX_QUEUE + MAX_BATCH) rows.
    let bound = Duration::from_secs_f64((MAX_QUEUE + MAX_BATCH) as f64 / capacity);
    let mut refusal_times: Vec<Duration> = refused.iter().map(|f| f.latency).collect();
    refusal_times.sort();
    eprintln!(
        "overload: capacity {capacity:.0}/s, offered {offered:.0}/s ({:.1}x), {} accepted ({:.0}/s), {} refused; \
         accepted p50 {:?} p99 {p99:?} (queue bound {bound:?}); refusal p50 {:?} p99 {:?}; RSS {} -> peak {} MiB",
        offered / capacity,
        accepted.len(),
        accepted.len() as f64 / duration.as_secs_f64(),
        refused.len(),
        latencies[latencies.len() / 2],
        refusal_times[refusal_times.len() / 2],
        refusal_times[refusal_times.len() * 99 / 100],
        rss_before >> 20,
        peak_rss >> 20
    );
    assert!(offered > 5.0 * capacity, "the generator offered well past capacity ({offered:.0}/s)");
    assert!(refused.len() > total / 2, "most of a 10x overload is refused");
    assert!(p99 <= 3 * bound + Duration::from_millis(20), "accepted p99 {p99:?} vs queue bound {bound:?}");
    assert!(peak_rss < rss_before + (64 << 20), "RSS grew from {} to {} MiB", rss_before >> 20, peak_rss >> 20);
    runtime.shutdown();
}
