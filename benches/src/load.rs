//! Load generation: the request pool, the priority pattern, inter-arrival
//! times, and the two drivers — closed loop (C client threads, each submitting
//! and waiting in a loop) and open loop (one generator thread submitting at a
//! request rate with [`Target::call_then`], latencies recorded by the callback).
//! Both drive any [`Target`]: a runtime in this process or a remote server.
//!
//! Inputs are generated once, before any measurement: a pool of seeded random
//! requests shaped by the pipeline's inputs, cloned per submit (tensors are
//! shared buffers, so a clone costs a few reference counts).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{DType, Dim, PipelineSpec, Request, Tensor, TensorSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::measure::{Recorder, LATE_SEND_US};
use crate::target::Target;

/// Pre-generated requests, handed out in turn.
pub struct RequestPool {
    requests: Vec<Request>,
    priority_fraction: f64,
    /// Chunks per stream (0: requests are not chunks of streams).
    stream_chunks: usize,
    /// A mixed load: plain requests sent between the stream chunks (see [`RequestPool::with_plain`]).
    plain: Option<Plain>,
}

/// The plain requests of a mixed load, and the fraction of each sender's requests that are stream chunks.
struct Plain {
    requests: Vec<Request>,
    stream_fraction: f64,
}

/// Open loop: requests go round-robin to this many streams open at once.
const OPEN_LOOP_STREAMS: u64 = 64;

impl RequestPool {
    /// `size` requests of `rows` rows for `spec`'s inputs, from `seed`.
    pub fn new(
        spec: &PipelineSpec,
        size: usize,
        rows: usize,
        seed: u64,
        priority_fraction: f64,
    ) -> Result<RequestPool, String> {
        let inputs: Vec<TensorSpec> = spec.inputs.iter().map(|i| i.spec.clone()).collect();
        Self::from_inputs(&inputs, size, rows, seed, priority_fraction)
    }

    /// `size` requests of `rows` rows for `inputs`, from `seed`.
    pub fn from_inputs(
        inputs: &[TensorSpec],
        size: usize,
        rows: usize,
        seed: u64,
        priority_fraction: f64,
    ) -> Result<RequestPool, String> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut requests = Vec::with_capacity(size.max(1));
        for _ in 0..size.max(1) {
            let mut request = Request::new();
            for input in inputs {
                let tensor = generate(input, rows, &mut rng)
                    .map_err(|e| format!("cannot generate input `{}`: {e}", input.name))?;
                request = request.input(input.name.clone(), tensor);
            }
            requests.push(request);
        }
        Ok(RequestPool { requests, priority_fraction, stream_chunks: 0, plain: None })
    }

    /// Makes every request a chunk of a stream of `chunks` chunks (0: none).
    pub fn with_streams(mut self, chunks: usize) -> Self {
        self.stream_chunks = chunks;
        self
    }

    /// Makes the load mixed: of each sender's requests, `stream_fraction` (spread
    /// evenly, as [`is_priority`] spreads priority) are this pool's stream chunks and
    /// the others are `plain`'s requests (cloned in turn, not chunks of streams).
    pub fn with_plain(mut self, plain: RequestPool, stream_fraction: f64) -> Self {
        self.plain = Some(Plain { requests: plain.requests, stream_fraction });
        self
    }

    /// The request a sender sends as its `n`-th: a pooled request (`i` picks it), and
    /// with streams, chunk `n % chunks` of the sender's stream `n / chunks` (see
    /// [`LoadShape::plan`]). Returns whether it is a priority task (a stream's final
    /// chunk, or by the priority pattern).
    pub fn next(&self, sender: u64, n: u64, i: u64) -> (Request, bool) {
        let shape = LoadShape {
            stream_chunks: self.stream_chunks as u64,
            stream_fraction: self.plain.as_ref().map(|p| p.stream_fraction),
            priority_fraction: self.priority_fraction,
        };
        let plan = shape.plan(sender, n, i);
        let pool = match (&self.plain, plan.plain) {
            (Some(plain), true) => &plain.requests,
            _ => &self.requests,
        };
        let request = pool[(i % pool.len() as u64) as usize].clone().priority(is_priority(i, self.priority_fraction));
        match plan.stream {
            Some(c) => (request.stream(c.id, c.start, c.end), plan.priority),
            None => (request, plan.priority),
        }
    }

    /// Request number `i` (of some sender's sequence): a clone of a pooled request,
    /// marked priority by the deterministic pattern of [`is_priority`].
    pub fn get(&self, i: u64) -> (Request, bool) {
        let priority = is_priority(i, self.priority_fraction);
        let request = self.requests[(i % self.requests.len() as u64) as usize].clone().priority(priority);
        (request, priority)
    }
}

/// The shape of a load's requests, without their tensors: which are stream chunks
/// and which plain requests, and which are priority (what [`RequestPool::next`]
/// sends, and what `baton simulate` simulates).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadShape {
    /// Chunks per stream (0: requests are not chunks of streams).
    pub stream_chunks: u64,
    /// A mixed load: the fraction of each sender's requests that are stream chunks.
    pub stream_fraction: Option<f64>,
    pub priority_fraction: f64,
}

/// A chunk of a stream: the stream's id, its number in the stream, first, last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub id: u64,
    pub k: u64,
    pub start: bool,
    pub end: bool,
}

/// What one request of a load is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    /// A mixed load's plain request (carries the inputs streams do not).
    pub plain: bool,
    pub stream: Option<Chunk>,
    pub priority: bool,
}

impl LoadShape {
    /// Plain requests (no streams), priority by the pattern of `priority_fraction`.
    pub fn plain(priority_fraction: f64) -> LoadShape {
        LoadShape { stream_chunks: 0, stream_fraction: None, priority_fraction }
    }

    /// A sender's `n`-th request (`i`: its number for the priority pattern). In a
    /// mixed load, `stream_fraction` of the sender's requests (spread evenly) are
    /// chunks and the others plain requests, which are left out of `n` first. A
    /// chunk is chunk `n % chunks` of the sender's stream `n / chunks` (id
    /// `(sender + 1) << 40 | n / chunks`); its final chunk is a priority task.
    pub fn plan(&self, sender: u64, n: u64, i: u64) -> Planned {
        let priority = is_priority(i, self.priority_fraction);
        let mut n = n;
        if let Some(fraction) = self.stream_fraction {
            if !is_priority(n, fraction) {
                return Planned { plain: true, stream: None, priority };
            }
            // The sender's requests before this one that were stream chunks.
            n = (n as f64 * fraction).floor() as u64;
        }
        if self.stream_chunks == 0 {
            return Planned { plain: false, stream: None, priority };
        }
        let chunks = self.stream_chunks;
        // Ids start at 1 << 40: never 0, which the protocol reads as "no stream".
        let (id, k) = (((sender + 1) << 40) | (n / chunks), n % chunks);
        let end = k == chunks - 1;
        Planned { plain: false, stream: Some(Chunk { id, k, start: k == 0, end }), priority: priority || end }
    }
}

/// Open loop: the sender and its request number of the generator's `i`-th request
/// (requests go round-robin to [`OPEN_LOOP_STREAMS`] streams open at once).
pub fn open_loop_sender(i: u64) -> (u64, u64) {
    (i % OPEN_LOOP_STREAMS, i / OPEN_LOOP_STREAMS)
}

/// Whether request `i` of a sequence is a priority one, so that exactly
/// `floor(n × fraction)` of the first `n` are, spread evenly (fraction 0.25:
/// requests 3, 7, 11, …).
pub fn is_priority(i: u64, fraction: f64) -> bool {
    if fraction <= 0.0 {
        return false;
    }
    if fraction >= 1.0 {
        return true;
    }
    ((i + 1) as f64 * fraction).floor() > (i as f64 * fraction).floor()
}

/// Seeded random tensor for `spec`: dim 0 = `rows`, other dynamic dims 1.
pub fn generate(spec: &TensorSpec, rows: usize, rng: &mut StdRng) -> Result<Tensor, String> {
    let shape: Vec<usize> = spec
        .shape
        .iter()
        .enumerate()
        .map(|(i, d)| match d {
            _ if i == 0 => rows,
            Dim::Fixed(n) => *n,
            Dim::Dynamic(_) => 1,
        })
        .collect();
    let len: usize = shape.iter().product();
    // Floats in -1..1, integers in 0..100, bools half true.
    let values: Vec<f64> = (0..len)
        .map(|_| match spec.dtype {
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 => rng.random_range(-1.0f64..1.0),
            DType::Bool => f64::from(u8::from(rng.random_bool(0.5))),
            _ => f64::from(rng.random_range(0u8..100)),
        })
        .collect();
    Tensor::from_f64(spec.dtype, shape, &values).map_err(|e| e.to_string())
}

/// How open-loop requests are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exponential gaps (a Poisson process) with mean 1/rate.
    Poisson,
    /// Every 1/rate exactly.
    Constant,
}

impl Arrivals {
    pub const ALL: [Arrivals; 2] = [Arrivals::Poisson, Arrivals::Constant];

    /// The name `--arrivals` and the JSON report give it.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Constant => "constant",
        }
    }

    pub fn from_name(name: &str) -> Option<Arrivals> {
        Arrivals::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// Gaps between open-loop arrivals, s.
pub struct InterArrival {
    mean: f64,
    arrivals: Arrivals,
    rng: StdRng,
}

impl InterArrival {
    /// Gaps for `rate` requests/s.
    pub fn new(rate: f64, arrivals: Arrivals, seed: u64) -> InterArrival {
        InterArrival { mean: 1.0 / rate, arrivals, rng: StdRng::seed_from_u64(seed) }
    }

    /// The next gap, s.
    pub fn next_gap(&mut self) -> f64 {
        match self.arrivals {
            Arrivals::Constant => self.mean,
            Arrivals::Poisson => {
                // Inverse transform: -ln(U) × mean with U in (0, 1].
                let u: f64 = 1.0 - self.rng.random::<f64>();
                -u.ln() * self.mean
            }
        }
    }
}

/// A running load: threads submitting to the runtime until stopped.
pub struct Driver<'scope> {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::ScopedJoinHandle<'scope, ()>>,
}

impl Driver<'_> {
    /// Stops the senders and waits for them (closed-loop clients finish their request in flight).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Starts `concurrency` client threads, each submitting a request and waiting
/// for its answer in a loop, recording into shard = its client number.
pub fn closed_loop<'scope, 'env: 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    target: &'env dyn Target,
    pool: &'env RequestPool,
    recorder: &'env Recorder,
    concurrency: usize,
    cores: &'env [usize],
) -> Driver<'scope> {
    let stop = Arc::new(AtomicBool::new(false));
    let threads = (0..concurrency.max(1))
        .map(|client| {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(format!("bench-client-{client}"))
                .spawn_scoped(scope, move || {
                    pin(cores, client);
                    // Clients start at different places in the pool.
                    let mut i = (client as u64).wrapping_mul(7919);
                    let mut n = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        let (request, priority) = pool.next(client as u64, n, i);
                        n += 1;
                        let sent = Instant::now();
                        let ok = target.call(request);
                        recorder.record(client, sent.elapsed().as_micros() as u64, priority, ok);
                        i = i.wrapping_add(1);
                    }
                })
                .expect("spawn a client thread")
        })
        .collect();
    Driver { stop, threads }
}

/// Pins the current thread to `cores[index % len]` (no pinning when `cores` is empty).
fn pin(cores: &[usize], index: usize) {
    if let Some(&core) = cores.get(index % cores.len().max(1)) {
        core_affinity::set_for_current(core_affinity::CoreId { id: core });
    }
}

/// An open-loop schedule: `rate` requests/s, gaps drawn by `arrivals` from `seed`.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    pub rate: f64,
    pub arrivals: Arrivals,
    pub seed: u64,
}

/// Starts one generator thread submitting on `schedule` with `call_then`; each callback records the latency from the
/// submit to the answer into shard = request number. A send leaving more than
/// 1 ms behind its schedule counts as late (the generator could not keep up).
pub fn open_loop<'scope, 'env: 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    target: &'env dyn Target,
    pool: &'env RequestPool,
    recorder: &'env Arc<Recorder>,
    schedule: Schedule,
    cores: &'env [usize],
) -> Driver<'scope> {
    let Schedule { rate, arrivals, seed } = schedule;
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("bench-generator".into())
        .spawn_scoped(scope, move || {
            pin(cores, 0);
            let mut gaps = InterArrival::new(rate, arrivals, seed);
            let start = Instant::now();
            let mut due = 0.0f64;
            let mut i = 0u64;
            while !thread_stop.load(Ordering::Acquire) {
                let at = start + Duration::from_secs_f64(due);
                // Sleep in short steps so a stop is seen even at low rates.
                loop {
                    let now = Instant::now();
                    if now >= at || thread_stop.load(Ordering::Acquire) {
                        break;
                    }
                    std::thread::sleep((at - now).min(Duration::from_millis(20)));
                }
                if thread_stop.load(Ordering::Acquire) {
                    break;
                }
                let sent = Instant::now();
                if sent.saturating_duration_since(at) > Duration::from_micros(LATE_SEND_US) {
                    recorder.late_send(i as usize);
                }
                // Streams interleave: request i is chunk i / 64 of stream i % 64 (as a sender's).
                let (sender, n) = open_loop_sender(i);
                let (request, priority) = pool.next(sender, n, i);
                let rec = Arc::clone(recorder);
                let key = i as usize;
                target.call_then(
                    request,
                    Box::new(move |ok| rec.record(key, sent.elapsed().as_micros() as u64, priority, ok)),
                );
                i += 1;
                due += gaps.next_gap();
            }
        })
        .expect("spawn the generator thread");
    Driver { stop, threads: vec![thread] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_gaps_average_one_over_the_rate() {
        let rate = 2000.0;
        let mut gaps = InterArrival::new(rate, Arrivals::Poisson, 42);
        let n = 200_000;
        let samples: Vec<f64> = (0..n).map(|_| gaps.next_gap()).collect();
        let mean = samples.iter().sum::<f64>() / n as f64;
        // Standard error of the mean of an exponential: mean/sqrt(n) ≈ 0.22%; allow 2%.
        assert!((mean * rate - 1.0).abs() < 0.02, "mean gap {mean}, expected {}", 1.0 / rate);
        // Exponential: the standard deviation equals the mean.
        let var = samples.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((var.sqrt() / mean - 1.0).abs() < 0.03, "sd/mean {}", var.sqrt() / mean);
        assert!(samples.iter().all(|&g| g >= 0.0 && g.is_finite()));
    }

    #[test]
    fn poisson_gaps_are_reproducible_from_the_seed() {
        let mut a = InterArrival::new(100.0, Arrivals::Poisson, 7);
        let mut b = InterArrival::new(100.0, Arrivals::Poisson, 7);
        assert!((0..100).all(|_| a.next_gap() == b.next_gap()));
    }

    #[test]
    fn constant_gaps_are_exact() {
        let mut gaps = InterArrival::new(250.0, Arrivals::Constant, 0);
        assert!((0..10).all(|_| gaps.next_gap() == 0.004));
    }

    #[test]
    fn priority_pattern_marks_the_fraction_evenly() {
        let marked: Vec<u64> = (0..12).filter(|&i| is_priority(i, 0.25)).collect();
        assert_eq!(marked, [3, 7, 11]);
        assert_eq!((0..1000).filter(|&i| is_priority(i, 0.1)).count(), 100);
        assert_eq!((0..1000).filter(|&i| is_priority(i, 1.0 / 3.0)).count(), 333);
        assert!(!(0..100).any(|i| is_priority(i, 0.0)));
        assert!((0..100).all(|i| is_priority(i, 1.0)));
    }

    #[test]
    fn stream_chunks_number_streams_per_sender_and_mark_final_chunks_priority() {
        let pool =
            RequestPool { requests: vec![Request::new()], priority_fraction: 0.0, stream_chunks: 3, plain: None };
        let chunks: Vec<_> = (0..6).map(|n| pool.next(5, n, n)).collect();
        let ids: Vec<(u64, bool, bool)> =
            chunks.iter().map(|(r, _)| r.stream.map(|s| (s.id, s.start, s.end)).unwrap()).collect();
        let base = 6u64 << 40;
        assert_eq!(
            ids,
            vec![
                (base, true, false),
                (base, false, false),
                (base, false, true),
                (base + 1, true, false),
                (base + 1, false, false),
                (base + 1, false, true)
            ]
        );
        let priority: Vec<bool> = chunks.iter().map(|(_, p)| *p).collect();
        assert_eq!(priority, vec![false, false, true, false, false, true]);
        let plain =
            RequestPool { requests: vec![Request::new()], priority_fraction: 0.0, stream_chunks: 0, plain: None };
        assert!(plain.next(5, 0, 0).0.stream.is_none());
    }

    #[test]
    fn a_mixed_load_sends_plain_requests_between_whole_streams() {
        let pool = |stream_chunks| RequestPool {
            requests: vec![Request::new()],
            priority_fraction: 0.0,
            stream_chunks,
            plain: None,
        };
        // A quarter of each sender's requests are chunks of 2-chunk streams.
        let mixed = pool(2).with_plain(pool(0), 0.25);
        let sent: Vec<_> = (0..16).map(|n| mixed.next(0, n, n)).collect();
        let chunks: Vec<(u64, u64, bool, bool)> = sent
            .iter()
            .enumerate()
            .filter_map(|(n, (r, _))| r.stream.map(|s| (n as u64, s.id & 0xff, s.start, s.end)))
            .collect();
        assert_eq!(chunks, vec![(3, 0, true, false), (7, 0, false, true), (11, 1, true, false), (15, 1, false, true)]);
        let priority: Vec<u64> = (0..16).filter(|&n| sent[n as usize].1).collect();
        assert_eq!(priority, vec![7, 15], "only the streams' final chunks are priority");
    }
}
