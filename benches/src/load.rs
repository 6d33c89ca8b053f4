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

use crate::measure::Recorder;
use crate::target::Target;

/// Pre-generated requests, handed out in turn.
pub struct RequestPool {
    requests: Vec<Request>,
    /// Which request is what (priority, stream chunk, plain, tenant): see [`LoadShape::plan`].
    shape: LoadShape,
    /// A mixed load: plain requests sent between the stream chunks (see [`RequestPool::with_plain`]).
    plain: Option<Vec<Request>>,
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
        Ok(RequestPool { requests, shape: LoadShape::plain(priority_fraction), plain: None })
    }

    /// Makes every request a chunk of a stream of `chunks` chunks (0: none).
    pub fn with_streams(mut self, chunks: usize) -> Self {
        self.shape.stream_chunks = chunks as u64;
        self
    }

    /// Makes the load mixed: of each sender's requests, `stream_fraction` (spread
    /// evenly, as [`is_priority`] spreads priority) are this pool's stream chunks and
    /// the others are `plain`'s requests (cloned in turn, not chunks of streams).
    pub fn with_plain(mut self, plain: RequestPool, stream_fraction: f64) -> Self {
        self.plain = Some(plain.requests);
        self.shape.stream_fraction = Some(stream_fraction);
        self
    }

    /// Makes each request name a tenant, in the shares given (see [`LoadShape::plan`]).
    pub fn with_tenants(mut self, tenants: Vec<TenantShare>) -> Self {
        self.shape.tenants = tenants;
        self
    }

    /// The tenants' names, in the order [`Sent::tenant`] counts them (empty: none named).
    pub fn tenant_names(&self) -> Vec<String> {
        self.shape.tenants.iter().map(|t| t.name.clone()).collect()
    }

    /// The request a sender sends as its `n`-th: a pooled request (`i` picks it), and
    /// with streams, chunk `n % chunks` of the sender's stream `n / chunks`, naming
    /// its tenant (see [`LoadShape::plan`]). Also returns whether it is a priority task
    /// (a stream's final chunk, or by the priority pattern) and its tenant.
    pub fn next(&self, sender: u64, n: u64, i: u64) -> (Request, Sent) {
        let plan = self.shape.plan(sender, n, i);
        let pool = match (&self.plain, plan.plain) {
            (Some(plain), true) => plain,
            _ => &self.requests,
        };
        let priority = is_priority(i, self.shape.priority_fraction);
        let mut request = pool[(i % pool.len() as u64) as usize].clone().priority(priority);
        if let Some(c) = plan.stream {
            request = request.stream(c.id, c.start, c.end);
        }
        if let Some(t) = plan.tenant {
            request = request.tenant(self.shape.tenants[t].name.clone());
        }
        (request, Sent { priority: plan.priority, tenant: plan.tenant })
    }

    /// Request number `i` (of some sender's sequence): a clone of a pooled request,
    /// marked priority by the deterministic pattern of [`is_priority`].
    pub fn get(&self, i: u64) -> (Request, bool) {
        let priority = is_priority(i, self.shape.priority_fraction);
        let request = self.requests[(i % self.requests.len() as u64) as usize].clone().priority(priority);
        (request, priority)
    }
}

/// How a sent request is reported: apart when priority, and under its tenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    pub priority: bool,
    /// Its index in the load's tenants (`--tenants`), if the load names tenants.
    pub tenant: Option<usize>,
}

/// One tenant of a load and its share of the requests (`--tenants alice=1,bob=3`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TenantShare {
    pub name: String,
    /// Relative request count: a tenant of share 3 sends 3 requests for each 1 of a tenant of share 1.
    pub share: u64,
}

/// Parses `--tenants NAME=SHARE,...`: names unique and not empty, shares whole numbers from 1.
pub fn parse_tenants(text: &str) -> Result<Vec<TenantShare>, String> {
    let mut tenants: Vec<TenantShare> = Vec::new();
    for item in text.split(',').map(str::trim) {
        let (name, share) = item
            .split_once('=')
            .ok_or_else(|| format!("--tenants: `{item}` is not NAME=SHARE (e.g. alice=1,bob=3)"))?;
        let (name, share) = (name.trim(), share.trim());
        if name.is_empty() {
            return Err(format!("--tenants: `{item}` has no tenant name"));
        }
        let share: u64 = share.parse().ok().filter(|s| (1..=1 << 20).contains(s)).ok_or_else(|| {
            format!("--tenants: tenant `{name}`'s share `{share}` is not a whole number from 1 to 1048576")
        })?;
        if tenants.iter().any(|t| t.name == name) {
            return Err(format!("--tenants: tenant `{name}` is named twice"));
        }
        tenants.push(TenantShare { name: name.to_string(), share });
    }
    Ok(tenants)
}

/// Each load tenant's index in the pipeline's `[fairness]` tenants, or an error naming
/// the first the pipeline lacks (as the runtime would refuse its requests).
pub fn tenant_indices(tenants: &[TenantShare], pipeline: &baton::fairness::Tenants) -> Result<Vec<usize>, String> {
    tenants.iter().map(|t| pipeline.index(Some(&t.name)).map_err(|e| format!("--tenants: {e}"))).collect()
}

/// The shape of a load's requests, without their tensors: which are stream chunks
/// and which plain requests, which are priority, and whose (what [`RequestPool::next`]
/// sends, and what `baton simulate` simulates).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadShape {
    /// Chunks per stream (0: requests are not chunks of streams).
    pub stream_chunks: u64,
    /// A mixed load: the fraction of each sender's requests that are stream chunks.
    pub stream_fraction: Option<f64>,
    pub priority_fraction: f64,
    /// The tenants requests name, with their shares (empty: none named).
    pub tenants: Vec<TenantShare>,
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
    /// Its tenant's index in [`LoadShape::tenants`] (`None` when the load names none).
    pub tenant: Option<usize>,
}

impl LoadShape {
    /// Plain requests (no streams, no tenants), priority by the pattern of `priority_fraction`.
    pub fn plain(priority_fraction: f64) -> LoadShape {
        LoadShape { stream_chunks: 0, stream_fraction: None, priority_fraction, tenants: Vec::new() }
    }

    /// A sender's `n`-th request (`i`: its number for the priority pattern).
    ///
    /// Each sender starts its patterns at its own phase, so that senders stepping
    /// together (closed-loop clients answered by one batch, the open loop's senders
    /// taking turns) do not send their stream chunks, or their streams' final
    /// chunks, together, as independent users would not. In a mixed load,
    /// `stream_fraction` of the sender's requests (spread evenly, from phase
    /// `sender`) are chunks and the others plain requests, which are left out of
    /// the count `m` of the sender's chunks. With `a = m + sender % chunks`, chunk
    /// `m` is chunk `a % chunks` of the sender's stream `a / chunks` (its id
    /// `(sender + 1) << 40 | a / chunks`): a sender's first stream starts at chunk
    /// `sender % chunks` (flagged as its start) and is shorter, every later one
    /// runs 0 to `chunks - 1`; a stream's final chunk is a priority task. Its
    /// tenant: see [`LoadShape::tenant`].
    pub fn plan(&self, sender: u64, n: u64, i: u64) -> Planned {
        let priority = is_priority(i, self.priority_fraction);
        let tenant = self.tenant(i);
        let mut m = n;
        if let Some(fraction) = self.stream_fraction {
            if !is_priority(n + sender, fraction) {
                return Planned { plain: true, stream: None, priority, tenant };
            }
            // The sender's requests before this one that were stream chunks.
            let marked = |count: u64| (count as f64 * fraction.min(1.0)).floor() as u64;
            m = marked(n + sender) - marked(sender);
        }
        if self.stream_chunks == 0 {
            return Planned { plain: false, stream: None, priority, tenant };
        }
        let chunks = self.stream_chunks;
        let at = m + sender % chunks;
        // Ids start at 1 << 40: never 0, which the protocol reads as "no stream".
        let (id, k) = (((sender + 1) << 40) | (at / chunks), at % chunks);
        let end = k == chunks - 1;
        let start = k == 0 || m == 0;
        Planned { plain: false, stream: Some(Chunk { id, k, start, end }), priority: priority || end, tenant }
    }

    /// The tenant of request `i` (`i` as the priority pattern counts): the priority
    /// pattern's requests and the others are each split among the tenants by their
    /// shares, so that each class holds each tenant's share (a priority fraction of
    /// 0.1 and tenants 9:1 do not make every priority request the first tenant's).
    /// Within a class, the `j`-th request goes to the first tenant when
    /// [`is_priority`]`(j, its share of all)`, else, counted among the requests the
    /// first tenant did not take, to the second by its share of the rest, and so
    /// on: exactly `floor(m × share / total)` of the first tenant's in the class's
    /// first `m`, spread evenly, and the others likewise among what is left.
    pub fn tenant(&self, i: u64) -> Option<usize> {
        if self.tenants.is_empty() {
            return None;
        }
        // Priority requests before `i` (the pattern marks floor(i × fraction) of the first i).
        let before =
            if self.priority_fraction >= 1.0 { i } else { (i as f64 * self.priority_fraction.max(0.0)).floor() as u64 };
        let mut j = if is_priority(i, self.priority_fraction) { before } else { i - before };
        let mut left: u64 = self.tenants.iter().map(|t| t.share).sum();
        let last = self.tenants.len() - 1;
        for (t, tenant) in self.tenants[..last].iter().enumerate() {
            let fraction = tenant.share as f64 / left as f64;
            if is_priority(j, fraction) {
                return Some(t);
            }
            j -= (j as f64 * fraction).floor() as u64;
            left -= tenant.share;
        }
        Some(last)
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

/// The open-loop generator thread's scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GeneratorPolicy {
    /// The normal policy: the generator shares the cores as any thread (behind real-time workers).
    Normal,
    /// The FIFO real-time policy, above the workers' real-time batches
    /// ([`baton::request_thread_realtime`]): no thread of the runtime holds a send back, and
    /// each send preempts whatever runs on its core.
    Realtime,
}

impl GeneratorPolicy {
    pub const ALL: [GeneratorPolicy; 2] = [GeneratorPolicy::Normal, GeneratorPolicy::Realtime];

    /// The name `--generator-policy` and the JSON report give it.
    pub fn name(self) -> &'static str {
        match self {
            GeneratorPolicy::Realtime => "realtime",
            GeneratorPolicy::Normal => "normal",
        }
    }

    pub fn from_name(name: &str) -> Option<GeneratorPolicy> {
        GeneratorPolicy::ALL.into_iter().find(|a| a.name() == name)
    }

    pub fn is_realtime(self) -> bool {
        self == GeneratorPolicy::Realtime
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
                    let cpu_start = baton::batch_cpu::thread_cpu_ns();
                    // Clients start at different places in the pool.
                    let mut i = (client as u64).wrapping_mul(7919);
                    let mut n = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        let (request, what) = pool.next(client as u64, n, i);
                        n += 1;
                        let sent = Instant::now();
                        let ok = target.call(request);
                        recorder.record_sent(client, sent.elapsed().as_micros() as u64, what, ok);
                        i = i.wrapping_add(1);
                    }
                    if let (Some(from), Some(to)) = (cpu_start, baton::batch_cpu::thread_cpu_ns()) {
                        recorder.client_ran(to.saturating_sub(from), n);
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
    /// Latency from each request's scheduled time (else from its send).
    pub from_schedule: bool,
    /// The generator thread asks for the real-time policy above the runtime's workers.
    pub realtime: bool,
    /// The generator thread's nice value at the normal policy (0: left as it starts).
    pub nice: i32,
}

/// Starts one generator thread submitting on `schedule` with `call_then`; each callback records the latency
/// from the submit (or, `from_schedule`, from the request's scheduled time: a send that leaves late,
/// the generator's cores busy with the runtime's threads, then counts its lag, as a client whose
/// arrivals do not wait for the server's would see it) to the answer into shard = request number.
/// Each send's lag behind its schedule is recorded; one more than 1 ms behind counts as late; at
/// its end, the thread's CPU time over its sends (`Recorder::send_cpu_us`). The
/// thread asks the kernel for a timer slack of 1 ns, so its sleeps end when due, not up to 50 µs later,
/// and, with `schedule.realtime`, for the real-time policy above the workers' (whether it got it
/// is recorded: `Recorder::generator_realtime`), or else for `schedule.nice`.
pub fn open_loop<'scope, 'env: 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    target: &'env dyn Target,
    pool: &'env RequestPool,
    recorder: &'env Arc<Recorder>,
    schedule: Schedule,
    cores: &'env [usize],
) -> Driver<'scope> {
    let Schedule { rate, arrivals, seed, from_schedule, realtime, nice } = schedule;
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("bench-generator".into())
        .spawn_scoped(scope, move || {
            pin(cores, 0);
            // SAFETY: PR_SET_TIMERSLACK changes only the calling thread's timer slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
            if nice != 0 && !baton::set_thread_nice(nice) {
                eprintln!("warning: the generator runs at its own nice: the kernel refused nice {nice}");
            }
            let realtime = realtime && {
                let granted = baton::request_thread_realtime();
                if !granted {
                    eprintln!("warning: the generator runs at the normal policy: the kernel refused the real-time one");
                }
                granted
            };
            let cpu_start = baton::batch_cpu::thread_cpu_ns();
            let mut gaps = InterArrival::new(rate, arrivals, seed);
            let start = Instant::now();
            let mut due = 0.0f64;
            let mut i = 0u64;
            while !thread_stop.load(Ordering::Acquire) {
                let at = start + Duration::from_secs_f64(due);
                // Sleep in short steps so a stop is seen even at low rates; the first step's
                // length (the sleep asked) is recorded with the send's lag.
                let mut slept_us = None;
                loop {
                    let now = Instant::now();
                    if now >= at || thread_stop.load(Ordering::Acquire) {
                        break;
                    }
                    slept_us.get_or_insert((at - now).as_micros() as u64);
                    std::thread::sleep((at - now).min(Duration::from_millis(20)));
                }
                if thread_stop.load(Ordering::Acquire) {
                    break;
                }
                let sent = Instant::now();
                recorder.sent_after(i as usize, sent.saturating_duration_since(at).as_micros() as u64, slept_us);
                let from = if from_schedule { at } else { sent };
                // Streams interleave: request i is chunk i / 64 of stream i % 64 (as a sender's).
                let (sender, n) = open_loop_sender(i);
                let (request, what) = pool.next(sender, n, i);
                let rec = Arc::clone(recorder);
                let key = i as usize;
                target.call_then(
                    request,
                    Box::new(move |ok| rec.record_sent(key, from.elapsed().as_micros() as u64, what, ok)),
                );
                i += 1;
                due += gaps.next_gap();
            }
            let cpu_ns = match (cpu_start, baton::batch_cpu::thread_cpu_ns()) {
                (Some(from), Some(to)) => to.saturating_sub(from),
                _ => 0,
            };
            recorder.generator_ran(cpu_ns, i, realtime);
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
            RequestPool { requests: vec![Request::new()], shape: LoadShape::plain(0.0), plain: None }.with_streams(3);
        let ids = |sender: u64| -> (Vec<(u64, bool, bool)>, Vec<bool>) {
            let chunks: Vec<_> = (0..6).map(|n| pool.next(sender, n, n)).collect();
            let ids = chunks.iter().map(|(r, _)| r.stream.map(|s| (s.id, s.start, s.end)).unwrap()).collect();
            (ids, chunks.iter().map(|(_, p)| p.priority).collect())
        };
        let base = 1u64 << 40;
        assert_eq!(
            ids(0),
            (
                vec![
                    (base, true, false),
                    (base, false, false),
                    (base, false, true),
                    (base + 1, true, false),
                    (base + 1, false, false),
                    (base + 1, false, true)
                ],
                vec![false, false, true, false, false, true]
            )
        );
        // Sender 5 starts at chunk 5 % 3 = 2: its first stream is that one chunk, start and end.
        let base = 6u64 << 40;
        assert_eq!(
            ids(5),
            (
                vec![
                    (base, true, true),
                    (base + 1, true, false),
                    (base + 1, false, false),
                    (base + 1, false, true),
                    (base + 2, true, false),
                    (base + 2, false, false)
                ],
                vec![true, false, false, true, false, false]
            )
        );
        // Four senders stepping together: at every step one of them sends a final chunk.
        let pool4 =
            RequestPool { requests: vec![Request::new()], shape: LoadShape::plain(0.0), plain: None }.with_streams(4);
        for n in 0..8 {
            let finals = (0..4).filter(|&s| pool4.next(s, n, n).0.stream.unwrap().end).count();
            assert_eq!(finals, 1, "step {n}");
        }
        let plain = RequestPool { requests: vec![Request::new()], shape: LoadShape::plain(0.0), plain: None };
        assert!(plain.next(5, 0, 0).0.stream.is_none());
    }

    #[test]
    fn a_mixed_load_sends_plain_requests_between_whole_streams() {
        let pool = |stream_chunks| {
            RequestPool { requests: vec![Request::new()], shape: LoadShape::plain(0.0), plain: None }
                .with_streams(stream_chunks)
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
        let priority: Vec<u64> = (0..16).filter(|&n| sent[n as usize].1.priority).collect();
        assert_eq!(priority, vec![7, 15], "only the streams' final chunks are priority");
        // Eight senders stepping together: at every step a quarter of them send a chunk.
        for n in 0..8 {
            let chunks = (0..8).filter(|&s| mixed.next(s, n, n).0.stream.is_some()).count();
            assert_eq!(chunks, 2, "step {n}");
        }
    }

    fn shares(list: &[(&str, u64)]) -> Vec<TenantShare> {
        list.iter().map(|&(name, share)| TenantShare { name: name.into(), share }).collect()
    }

    #[test]
    fn tenants_take_their_shares_exactly_and_evenly_spread() {
        let shape = LoadShape { tenants: shares(&[("a", 1), ("b", 3)]), ..LoadShape::plain(0.0) };
        let first: Vec<usize> = (0..8).map(|i| shape.tenant(i).unwrap()).collect();
        assert_eq!(first, [1, 1, 1, 0, 1, 1, 1, 0], "a quarter are a's, one in every four");
        let shape = LoadShape { tenants: shares(&[("a", 2), ("b", 3), ("c", 5)]), ..LoadShape::plain(0.0) };
        let mut counts = [0usize; 3];
        for i in 0..1000 {
            counts[shape.tenant(i).unwrap()] += 1;
            // Within two requests of the share at every prefix (the first two
            // tenants' counts are floors, each less than one request short).
            let n = (i + 1) as f64;
            for (t, share) in [0.2, 0.3, 0.5].iter().enumerate() {
                assert!((counts[t] as f64 - n * share).abs() < 2.0, "prefix {n}: {counts:?}");
            }
        }
        assert_eq!(counts, [200, 300, 500]);
        assert_eq!(LoadShape::plain(0.0).tenant(3), None, "no tenants named: none");
    }

    #[test]
    fn priority_requests_and_the_others_each_hold_every_tenants_share() {
        let shape = LoadShape { tenants: shares(&[("flood", 9), ("light", 1)]), ..LoadShape::plain(0.1) };
        let (mut priority, mut others) = ([0usize; 2], [0usize; 2]);
        for i in 0..10_000 {
            let t = shape.tenant(i).unwrap();
            if is_priority(i, 0.1) {
                priority[t] += 1;
            } else {
                others[t] += 1;
            }
        }
        assert_eq!(priority, [900, 100]);
        assert_eq!(others, [8100, 900]);
    }

    #[test]
    fn requests_name_their_tenant_and_report_it() {
        let pool = RequestPool { requests: vec![Request::new()], shape: LoadShape::plain(0.0), plain: None }
            .with_tenants(shares(&[("alice", 1), ("bob", 1)]));
        let (request, sent) = pool.next(0, 0, 0);
        assert_eq!((request.tenant.as_deref(), sent.tenant), (Some("bob"), Some(1)));
        let (request, sent) = pool.next(0, 1, 1);
        assert_eq!((request.tenant.as_deref(), sent.tenant), (Some("alice"), Some(0)));
        assert_eq!(pool.tenant_names(), ["alice", "bob"]);
    }

    #[test]
    fn tenant_lists_parse_and_bad_ones_are_refused_by_name() {
        assert_eq!(parse_tenants("alice=1, bob=3").unwrap(), shares(&[("alice", 1), ("bob", 3)]));
        assert!(parse_tenants("alice").unwrap_err().contains("`alice` is not NAME=SHARE"));
        assert!(parse_tenants("alice=0").unwrap_err().contains("tenant `alice`'s share `0`"));
        assert!(parse_tenants("alice=1.5").unwrap_err().contains("`1.5`"));
        assert!(parse_tenants("=2").unwrap_err().contains("no tenant name"));
        assert!(parse_tenants("a=1,a=2").unwrap_err().contains("`a` is named twice"));
    }
}
