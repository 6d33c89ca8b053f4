//! The mixed workload on `configs/mixed.toml`: plain requests through the
//! diamond and chunks of streams through the stateful model, from several
//! submitter threads at once, optionally with injected faults. Used by the
//! stress, overload and shutdown tests and by the `stress` example (the same
//! run at a larger scale).
//!
//! What a run records, and how it is checked:
//! - every request's result and how many times its callback was called
//!   ([`Run::assert_resolved_exactly_once`]);
//! - successful plain answers against the diamond run directly with ONNX
//!   Runtime, and each stream's successful answers against the stateful model
//!   run directly over that stream's chunks alone, in order, skipping the
//!   chunks that failed (a failed chunk leaves its stream's state unchanged):
//!   [`Run::verify`];
//! - the process's peak resident memory while it ran ([`RssMonitor`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton::config::FaultConfig;
use baton::{PipelineConfig, Request, RequestError, RequestResult, Runtime, Submitter, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::{config, random_f32, registry, Agreement, Direct};

/// Width of the diamond's input `x` and of the stateful model's `seq` and state.
const X_WIDTH: usize = 32;
const SEQ_WIDTH: usize = 8;
const STATE_WIDTH: usize = 16;

/// Starts `configs/mixed.toml`, with `faults` on every node if given, after `tweak` edits the config.
pub fn start(faults: Option<FaultConfig>, tweak: impl FnOnce(&mut PipelineConfig)) -> Runtime {
    let path = config("mixed.toml");
    let mut config = PipelineConfig::read(&path).expect("configs/mixed.toml parses");
    for (k, node) in config.nodes.values_mut().enumerate() {
        node.faults = faults.clone().map(|f| FaultConfig { seed: f.seed.wrapping_add(k as u64), ..f });
    }
    tweak(&mut config);
    Runtime::from_config(&config, Some(Path::new(&path)), &registry()).expect("configs/mixed.toml starts")
}

/// How much each submitter sends.
#[derive(Clone, Debug)]
pub struct Workload {
    pub submitters: usize,
    /// Plain requests per submitter.
    pub plain: usize,
    /// Streams per submitter.
    pub streams: usize,
    /// Chunks per stream.
    pub chunks: usize,
    pub seed: u64,
}

/// One request of the workload.
#[derive(Clone, Debug)]
pub enum Item {
    Plain { x: Tensor },
    Chunk { stream: u64, index: usize, last: bool, seq: Tensor },
}

impl Item {
    fn request(&self) -> Request {
        match self {
            Item::Plain { x } => Request::new().input("x", x.clone()),
            Item::Chunk { stream, index, last, seq } => {
                Request::new().input("seq", seq.clone()).stream(*stream, *index == 0, *last)
            }
        }
    }
}

impl Workload {
    /// Each submitter's requests in rounds: a round holds the next two chunks of
    /// each of its streams (the second waits behind the first at the stateful
    /// node) and an even share of its plain requests.
    /// Made as they are taken, so a long workload starts at once.
    pub fn rounds(&self, submitter: usize) -> impl Iterator<Item = Vec<Item>> + '_ {
        let mut rng = StdRng::seed_from_u64(self.seed ^ (submitter as u64) << 20);
        let rounds = self.chunks.div_ceil(2).max(1);
        let mut plain_left = self.plain;
        (0..rounds).map(move |r| {
            let mut items = Vec::new();
            for s in 0..self.streams {
                let stream = (submitter * self.streams + s) as u64 + 1;
                for index in (2 * r)..(2 * r + 2).min(self.chunks) {
                    let seq = random_f32(&mut rng, 1, SEQ_WIDTH);
                    items.push(Item::Chunk { stream, index, last: index + 1 == self.chunks, seq });
                }
            }
            let share = plain_left.div_ceil(rounds - r);
            plain_left -= share;
            for _ in 0..share {
                let rows = if rng.random_range(0..8) == 0 { 2 } else { 1 };
                items.push(Item::Plain { x: random_f32(&mut rng, rows, X_WIDTH) });
            }
            items
        })
    }

    pub fn total(&self) -> usize {
        self.submitters * (self.plain + self.streams * self.chunks)
    }
}

/// One request as sent and answered.
pub struct Outcome {
    pub item: Item,
    pub result: RequestResult,
    pub latency: Duration,
    /// Answered inside `submit_then` (refused at admission), on the submitting thread.
    pub at_admission: bool,
}

/// What a run of the workload left.
pub struct Run {
    pub outcomes: Vec<Outcome>,
    /// How many times each request's callback was called (must be 1).
    pub calls: Vec<u32>,
    pub elapsed: Duration,
    pub peak_rss_bytes: u64,
}

/// Counts of a verified run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Verdict {
    pub plain_ok: usize,
    pub plain_failed: usize,
    pub chunks_ok: usize,
    pub chunks_failed: usize,
    pub agreement: Agreement,
}

/// A request's result slot and call count, filled by its callback.
struct Slot {
    /// Result, latency, and whether the callback ran on the submitting thread.
    result: Mutex<Option<(RequestResult, Duration, bool)>>,
    calls: AtomicU32,
}

/// Sends the workload from `workload.submitters` threads, each sending a round
/// and waiting for it to resolve before the next; returns every outcome. A
/// submitter stops early after a round in which requests were refused because
/// the runtime is shutting down.
pub fn drive(submitter: &Submitter, workload: &Workload) -> Run {
    let rss = RssMonitor::start();
    let started = Instant::now();
    let per_thread: Vec<Vec<(Item, Arc<Slot>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workload.submitters)
            .map(|t| {
                let submitter = submitter.clone();
                s.spawn(move || {
                    let mut sent = Vec::new();
                    for round in workload.rounds(t) {
                        let slots: Vec<Arc<Slot>> = round
                            .iter()
                            .map(|item| {
                                let slot = Arc::new(Slot { result: Mutex::new(None), calls: AtomicU32::new(0) });
                                let (filled, sent_at) = (Arc::clone(&slot), Instant::now());
                                let me = std::thread::current().id();
                                submitter.submit_then(item.request(), move |result| {
                                    let inline = std::thread::current().id() == me;
                                    *filled.result.lock().unwrap() = Some((result, sent_at.elapsed(), inline));
                                    filled.calls.fetch_add(1, Ordering::SeqCst);
                                });
                                slot
                            })
                            .collect();
                        wait_for(&slots);
                        let shutting_down = slots.iter().any(|slot| {
                            matches!(*slot.result.lock().unwrap(), Some((Err(RequestError::ShuttingDown), _, true)))
                        });
                        sent.extend(round.into_iter().zip(slots));
                        if shutting_down {
                            break;
                        }
                    }
                    sent
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("submitter thread")).collect()
    });
    let elapsed = started.elapsed();
    let peak_rss_bytes = rss.stop();
    // Let late duplicate calls (a bug) show before counting.
    std::thread::sleep(Duration::from_millis(20));
    let mut run = Run { outcomes: Vec::new(), calls: Vec::new(), elapsed, peak_rss_bytes };
    for (item, slot) in per_thread.into_iter().flatten() {
        run.calls.push(slot.calls.load(Ordering::SeqCst));
        let (result, latency, at_admission) = slot.result.lock().unwrap().take().expect("resolved");
        run.outcomes.push(Outcome { item, result, latency, at_admission });
    }
    run
}

/// Waits until every slot has its result (bounded: a lost request fails the run).
fn wait_for(slots: &[Arc<Slot>]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    for slot in slots {
        while slot.calls.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "a request was not answered within 120 s");
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Run {
    /// Panics unless every request's callback ran exactly once.
    pub fn assert_resolved_exactly_once(&self) {
        let bad: Vec<(usize, u32)> = self.calls.iter().copied().enumerate().filter(|&(_, c)| c != 1).collect();
        assert!(bad.is_empty(), "requests resolved other than exactly once (index, calls): {bad:?}");
    }

    /// Checks every answer (see the module docs); panics naming the first that is
    /// wrong, or a failure that `expected_failure` does not accept.
    pub fn verify(&self, expected_failure: impl Fn(&Outcome) -> bool) -> Verdict {
        let mut verdict = Verdict::default();
        let mut diamond = DiamondReference::load();
        let mut rnn = Direct::load("stateful.onnx");
        let mut streams: std::collections::BTreeMap<u64, Vec<&Outcome>> = Default::default();
        for (i, outcome) in self.outcomes.iter().enumerate() {
            match &outcome.item {
                Item::Plain { x } => match &outcome.result {
                    Ok(outputs) => {
                        assert!(outputs.get("y").is_none(), "plain request {i}: no stream output");
                        let got = outputs.get("out").expect("plain request: output `out`");
                        verdict.agreement.check(&format!("plain request {i}"), got, &diamond.out(x));
                        verdict.plain_ok += 1;
                    }
                    Err(e) => {
                        assert!(expected_failure(outcome), "plain request {i} failed unexpectedly: {e}");
                        verdict.plain_failed += 1;
                    }
                },
                Item::Chunk { stream, .. } => streams.entry(*stream).or_default().push(outcome),
            }
        }
        for (stream, mut chunks) in streams {
            chunks.sort_by_key(|o| match o.item {
                Item::Chunk { index, .. } => index,
                Item::Plain { .. } => unreachable!(),
            });
            let mut state = Tensor::zeros(baton::DType::F32, vec![1, STATE_WIDTH]).expect("state");
            for outcome in chunks {
                let Item::Chunk { index, ref seq, .. } = outcome.item else { unreachable!() };
                let what = format!("stream {stream} chunk {index}");
                match &outcome.result {
                    Ok(outputs) => {
                        assert!(outputs.get("out").is_none(), "{what}: no diamond output");
                        let mut direct = rnn.run(&[("x", seq), ("state", &state)]);
                        let take = |direct: &mut Vec<(String, Tensor)>, name: &str| {
                            let at = direct.iter().position(|(n, _)| n == name).expect("model output");
                            direct.swap_remove(at).1
                        };
                        let y = take(&mut direct, "y");
                        state = take(&mut direct, "new_state");
                        verdict.agreement.check(&what, outputs.get("y").expect("output `y`"), &y);
                        verdict.chunks_ok += 1;
                    }
                    Err(e) => {
                        assert!(expected_failure(outcome), "{what} failed unexpectedly: {e}");
                        verdict.chunks_failed += 1;
                    }
                }
            }
        }
        verdict
    }

    /// Latencies of the requests that succeeded, sorted.
    pub fn ok_latencies(&self) -> Vec<Duration> {
        let mut l: Vec<Duration> = self.outcomes.iter().filter(|o| o.result.is_ok()).map(|o| o.latency).collect();
        l.sort();
        l
    }
}

/// Whether `outcome` failed with a node error caused by an injected fault.
pub fn injected(outcome: &Outcome) -> bool {
    matches!(&outcome.result, Err(RequestError::Node { message, .. }) if message.contains("injected fault"))
}

/// The diamond (embed → branch_a, branch_b → join) run directly with ONNX Runtime.
pub struct DiamondReference {
    embed: Direct,
    branch_a: Direct,
    branch_b: Direct,
    join: Direct,
}

impl DiamondReference {
    pub fn load() -> Self {
        DiamondReference {
            embed: Direct::load("embed.onnx"),
            branch_a: Direct::load("branch_a.onnx"),
            branch_b: Direct::load("branch_b.onnx"),
            join: Direct::load("join.onnx"),
        }
    }

    /// The embedding `h` of `x`.
    pub fn features(&mut self, x: &Tensor) -> Tensor {
        self.embed.run_one(&[("x", x)], "h")
    }

    /// The join's `out` for `x`.
    pub fn out(&mut self, x: &Tensor) -> Tensor {
        let h = self.features(x);
        self.out_from_features(&h)
    }

    /// The join's `out` for embedding `h`.
    pub fn out_from_features(&mut self, h: &Tensor) -> Tensor {
        let a = self.branch_a.run_one(&[("h", h)], "a");
        let b = self.branch_b.run_one(&[("h", h)], "b");
        self.join.run_one(&[("a", &a), ("b", &b)], "out")
    }
}

/// Samples the process's resident memory every few milliseconds; keeps the peak.
pub struct RssMonitor {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssMonitor {
    pub fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(rss_bytes()));
        let (s, p) = (Arc::clone(&stop), Arc::clone(&peak));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_bytes(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        RssMonitor { stop, peak, thread: Some(thread) }
    }

    /// Stops sampling; returns the peak in bytes.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed).max(rss_bytes())
    }
}

/// The process's resident set size now (`VmRSS`), in bytes; 0 where unknown.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}
