//! The `remote` engine: a stage that runs on a KServe v2 server over gRPC
//! (another `baton serve`, or Triton), for pipelines that span machines.
//!
//! A pipeline names it as `{ remote = "grpc://HOST:PORT", model = "NAME" }`;
//! the pipeline builder passes the endpoint and the model as `params` (see
//! `baton::spec::remote`). Settings of its own, in the stage's `params`:
//!
//! ```toml
//! stages = [{ remote = "grpc://10.0.0.2:8001", model = "branches", params = { timeout_ms = 5000 } }]
//! # lazy: the server need not answer at load; the signature is then given here
//! stages = [{ remote = "grpc://10.0.0.2:8001", model = "branches", lazy = true, params = {
//!     inputs  = [{ name = "h", dtype = "f32", shape = [-1, 64] }],
//!     outputs = [{ name = "a", dtype = "f32", shape = [-1, 16] }] } }]
//! ```
//!
//! - **Signature**: at load (`inspect`, so `baton check` too), from the
//!   server's ModelMetadata; an unreachable server is an error naming the
//!   stage and the endpoint. With `lazy = true` an unreachable server is a
//!   warning and the signature given in `params` is used (an error if none is
//!   given); a reachable one must agree with it.
//! - **Calls**: each batch goes as one ModelInfer with raw binary tensors
//!   (`raw_input_contents`). Each worker's engine owns one client (one HTTP/2
//!   connection, reopened when it closes) and a single-threaded tokio runtime
//!   it blocks on: the engine API is synchronous, one engine per worker.
//! - **Deadline**: the batch's earliest request deadline, else `timeout_ms`
//!   (default 30 000) from the batch's start. What is left of it goes with
//!   every attempt as the gRPC deadline and as the `timeout` parameter, and
//!   cuts the call off locally, so no batch outlives it.
//! - **Retries**: failures where the request cannot have run — no
//!   connection could be made, or the server answered UNAVAILABLE — are
//!   retried, with exponential backoff (2 ms doubling to 200 ms), while the
//!   deadline leaves room. A connection that broke after the request may have
//!   gone out (a kept connection to a server that went away and came back) is
//!   retried too, but only by a stateless stage: running a stateless batch
//!   twice costs work, never a wrong answer, while a stream's chunk must not
//!   reach the far side's state twice. Any other failure fails the batch at
//!   once. The error names the endpoint, the model and the attempts made.
//! - **Streams** (`stateful = true`): the server keeps per-stream state, so
//!   each task of the batch goes as its own ModelInfer carrying its stream's
//!   `sequence_id`, `sequence_start` and `sequence_end`, all of the batch's
//!   calls in flight at once on the connection; the outputs are stitched back
//!   in batch order. The node passes a stream's chunks one at a time, in
//!   order, so the server sees them in order.

use std::time::{Duration, Instant};

use baton::engine::BatchInfo;
use baton::tensor::stitch;
use baton::{
    DType, Dim, Engine, EngineError, EngineProvider, ModelSignature, StageOutput, StageRequest, Tensor, TensorSpec,
};
use baton_kserve_client::{self as kserve, Client, ClientOptions, ErrorKind, InferRequest};

use serde::Deserialize;

use crate::cost_model::{tensor_specs, TensorParams};

/// First wait before a retry; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(2);
const MAX_BACKOFF: Duration = Duration::from_millis(200);

/// A remote stage's `params` as the builder hands them: the first four keys
/// come from the stage itself (`remote`, `model`, `lazy`, `stateful`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoteParams {
    url: String,
    model: String,
    #[serde(default)]
    lazy: bool,
    #[serde(default)]
    stateful: bool,
    timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    inputs: Option<Vec<TensorParams>>,
    outputs: Option<Vec<TensorParams>>,
}

/// A remote stage's settings, read from its `params`.
#[derive(Clone, Debug)]
pub struct RemoteSettings {
    pub url: String,
    pub model: String,
    pub lazy: bool,
    pub stateful: bool,
    /// The deadline of a batch whose requests have none.
    pub timeout: Duration,
    /// How long opening a connection may take (also bounds the load-time metadata call).
    pub connect_timeout: Duration,
    /// The signature given in `params`, if any.
    pub declared: Option<ModelSignature>,
}

impl RemoteSettings {
    pub fn from_stage(stage: &StageRequest) -> Result<RemoteSettings, EngineError> {
        let params: RemoteParams = stage.params()?;
        let millis = |key: &str, value: Option<u64>, default: u64| match value {
            None => Ok(Duration::from_millis(default)),
            Some(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            Some(_) => Err(stage.params_error(key, "must be a positive number of milliseconds")),
        };
        let parsed = kserve::ServerUrl::parse(&params.url).map_err(|e| stage.params_error("url", e.to_string()))?;
        if parsed.protocol != kserve::Protocol::Grpc {
            return Err(EngineError::Setting {
                location: stage.location.clone(),
                message: format!("remote `{}`: remote stages speak gRPC: give grpc://HOST:PORT", params.url),
            });
        }
        let declared = match (params.inputs, params.outputs) {
            (None, None) => None,
            (Some(inputs), Some(outputs)) => Some(ModelSignature {
                inputs: tensor_specs(stage, "inputs", inputs)?,
                outputs: tensor_specs(stage, "outputs", outputs)?,
            }),
            _ => {
                return Err(EngineError::Setting {
                    location: stage.location.clone(),
                    message: "give both `inputs` and `outputs` of the remote model in params, or neither".into(),
                })
            }
        };
        Ok(RemoteSettings {
            url: params.url,
            model: params.model,
            lazy: params.lazy,
            stateful: params.stateful,
            timeout: millis("timeout_ms", params.timeout_ms, 30_000)?,
            connect_timeout: millis("connect_timeout_ms", params.connect_timeout_ms, 1_000)?,
            declared,
        })
    }

    /// `model `NAME` at grpc://HOST:PORT`, for messages.
    fn target(&self) -> String {
        format!("model `{}` at {}", self.model, self.url)
    }

    fn client(&self) -> Result<Client, String> {
        let options =
            ClientOptions { timeout: self.timeout, connect_timeout: self.connect_timeout, max_idle: 1, tls_ca: None };
        Client::new(&self.url, options).map_err(|e| e.to_string())
    }
}

/// A single-threaded tokio runtime for one engine (or one load-time call).
fn network_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the network runtime: {e}"))
}

/// Provider of [`RemoteEngine`]s, registered as `remote`. Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct RemoteProvider;

impl RemoteProvider {
    pub fn new() -> Self {
        RemoteProvider
    }
}

impl EngineProvider for RemoteProvider {
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        let settings = RemoteSettings::from_stage(stage)?;
        let unavailable = |message: String| EngineError::Unavailable { location: stage.location.clone(), message };
        let client = settings.client().map_err(unavailable)?;
        let fetched = network_runtime().map_err(unavailable)?.block_on(async {
            tokio::time::timeout(settings.connect_timeout * 2, client.model_metadata(&settings.model)).await
        });
        let fetched = match fetched {
            Ok(Ok(metadata)) => signature_of(&metadata).map_err(|e| format!("{}: {e}", settings.target())),
            Ok(Err(e)) => Err(format!("{} is not reachable: {e}", settings.target())),
            Err(_) => Err(format!(
                "{} did not answer ModelMetadata within {:?}",
                settings.target(),
                settings.connect_timeout * 2
            )),
        };
        match (fetched, settings.declared.clone(), settings.lazy) {
            (Ok(remote), Some(declared), _) => {
                agree(&declared, &remote).map_err(|e| EngineError::Setting {
                    location: stage.location.clone(),
                    message: format!("{}: the signature in params {e}", settings.target()),
                })?;
                Ok(remote)
            }
            (Ok(remote), None, _) => Ok(remote),
            (Err(e), Some(declared), true) => {
                tracing::warn!(stage = %stage.location, "{e}; lazy: using the signature in params, connecting at the first batch");
                Ok(declared)
            }
            (Err(e), None, true) => Err(unavailable(format!(
                "{e}; a lazy remote stage needs its signature in params (`inputs`, `outputs`)"
            ))),
            (Err(e), _, false) => {
                Err(unavailable(format!("{e} (set `lazy = true` and give the signature to start without it)")))
            }
        }
    }

    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(RemoteEngine::new(stage, self.inspect_cached(stage)?)?))
    }
}

impl RemoteProvider {
    /// A worker's engine needs the signature to order outputs; the declared one
    /// serves a lazy stage, else the server is asked (it answered at load).
    fn inspect_cached(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        let settings = RemoteSettings::from_stage(stage)?;
        match (settings.lazy, settings.declared) {
            (true, Some(declared)) => Ok(declared),
            _ => self.inspect(stage),
        }
    }
}

/// A model's signature from its KServe metadata (-1: a dynamic dim).
fn signature_of(metadata: &kserve::ModelMetadata) -> Result<ModelSignature, String> {
    let specs = |list: &[kserve::TensorMetadata]| {
        list.iter()
            .map(|t| {
                let dtype = DType::from_kserve_name(&t.datatype)
                    .ok_or_else(|| format!("tensor `{}` is {}, which Baton does not carry", t.name, t.datatype))?;
                let shape = t.shape.iter().map(|&d| if d < 0 { Dim::Dynamic(None) } else { Dim::Fixed(d as usize) });
                Ok(TensorSpec { name: t.name.clone(), dtype, shape: shape.collect() })
            })
            .collect::<Result<Vec<_>, String>>()
    };
    Ok(ModelSignature { inputs: specs(&metadata.inputs)?, outputs: specs(&metadata.outputs)? })
}

/// Whether a declared signature agrees with the server's: same names, dtypes and ranks, in order.
fn agree(declared: &ModelSignature, remote: &ModelSignature) -> Result<(), String> {
    let describe = |list: &[TensorSpec]| {
        list.iter().map(|t| format!("{} {} {}", t.name, t.dtype, t.shape_string())).collect::<Vec<_>>().join(", ")
    };
    let same = |a: &[TensorSpec], b: &[TensorSpec]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| x.name == y.name && x.dtype == y.dtype && x.shape.len() == y.shape.len())
    };
    if same(&declared.inputs, &remote.inputs) && same(&declared.outputs, &remote.outputs) {
        return Ok(());
    }
    Err(format!(
        "({} -> {}) disagrees with the server's ({} -> {})",
        describe(&declared.inputs),
        describe(&declared.outputs),
        describe(&remote.inputs),
        describe(&remote.outputs)
    ))
}

/// A remote stage on one worker thread: its client (one connection) and network runtime.
pub struct RemoteEngine {
    settings: RemoteSettings,
    signature: ModelSignature,
    client: Client,
    network: tokio::runtime::Runtime,
}

impl RemoteEngine {
    pub fn new(stage: &StageRequest, signature: ModelSignature) -> Result<RemoteEngine, EngineError> {
        let settings = RemoteSettings::from_stage(stage)?;
        let unavailable = |message: String| EngineError::Unavailable { location: stage.location.clone(), message };
        let client = settings.client().map_err(unavailable)?;
        Ok(RemoteEngine { settings, signature, client, network: network_runtime().map_err(unavailable)? })
    }

    /// One call's request: `inputs` as raw tensors, named as the signature names them.
    fn request(&self, inputs: &[Tensor]) -> InferRequest {
        let wire = self.signature.inputs.iter().zip(inputs).map(|(spec, t)| {
            let shape = t.shape().iter().map(|&d| d as i64).collect();
            let data = match t.dtype() {
                DType::Bytes => {
                    let mut wire = Vec::with_capacity(t.wire_len());
                    t.write_length_prefixed(&mut wire).expect("strings under 4 GiB: a request carries no more");
                    bytes::Bytes::from(wire)
                }
                _ => bytes::Bytes::from_owner(TensorBytes(t.clone())),
            };
            kserve::Tensor::new(&spec.name, t.dtype().kserve_name(), shape, data)
        });
        InferRequest::new(&self.settings.model, wire.collect())
    }

    /// The answer's outputs in signature order, as tensors.
    fn outputs(&self, answer: &kserve::InferResponse) -> Result<Vec<Tensor>, String> {
        self.signature
            .outputs
            .iter()
            .map(|spec| {
                let t = answer.output(&spec.name).ok_or_else(|| format!("the answer lacks output `{}`", spec.name))?;
                if t.datatype != spec.dtype.kserve_name() {
                    return Err(format!(
                        "output `{}` came as {}, not {}",
                        spec.name,
                        t.datatype,
                        spec.dtype.kserve_name()
                    ));
                }
                let shape = t.shape.iter().map(|&d| d as usize).collect();
                match spec.dtype {
                    DType::Bytes => Tensor::from_length_prefixed(shape, &t.data),
                    _ => Tensor::from_bytes(spec.dtype, shape, &t.data),
                }
                .map_err(|e| format!("output `{}`: {e}", spec.name))
            })
            .collect()
    }
}

/// A tensor's bytes, shared with the call (no copy).
struct TensorBytes(Tensor);

impl AsRef<[u8]> for TensorBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl Engine for RemoteEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let rows = vec![inputs.first().map_or(0, |t| t.batch_rows())];
        Ok(self.run_batch(inputs, &rows, &BatchInfo::default())?.tensors)
    }

    fn run_batch(&mut self, inputs: &[&Tensor], rows: &[usize], batch: &BatchInfo) -> Result<StageOutput, EngineError> {
        let deadline = batch.deadline.unwrap_or_else(|| Instant::now() + self.settings.timeout);
        let calls: Vec<InferRequest> = if self.settings.stateful {
            per_task(inputs, rows, batch)?
                .into_iter()
                .map(|(parts, chunk)| self.request(&parts).sequence(chunk.id, chunk.start, chunk.end))
                .collect()
        } else {
            vec![self.request(&inputs.iter().map(|&t| t.clone()).collect::<Vec<_>>())]
        };
        let (client, stateful) = (&self.client, self.settings.stateful);
        let answers = self.network.block_on(async {
            let calls = calls.into_iter().map(|request| infer_with_retries(client, request, deadline, stateful));
            futures_join(calls).await
        });
        let mut outputs: Vec<Vec<Tensor>> = Vec::with_capacity(answers.len());
        for answer in answers {
            let answer = answer.map_err(|e| format!("{}: {e}", self.settings.target()))?;
            outputs.push(self.outputs(&answer).map_err(|e| format!("{}: {e}", self.settings.target()))?);
        }
        let tensors = if outputs.len() == 1 {
            outputs.pop().unwrap_or_default()
        } else {
            (0..self.signature.outputs.len())
                .map(|o| {
                    let parts: Vec<&Tensor> = outputs.iter().map(|call| &call[o]).collect();
                    stitch(&parts)
                        .map_err(|e| format!("cannot stitch output `{}`: {e}", self.signature.outputs[o].name))
                })
                .collect::<Result<_, _>>()?
        };
        Ok(StageOutput { tensors, rows: None })
    }
}

/// Each task's rows of `inputs`, with its stream chunk.
fn per_task(
    inputs: &[&Tensor],
    rows: &[usize],
    batch: &BatchInfo,
) -> Result<Vec<(Vec<Tensor>, baton::request::StreamChunk)>, String> {
    let mut offset = 0;
    let mut tasks = Vec::with_capacity(rows.len());
    for (t, &n) in rows.iter().enumerate() {
        let chunk = batch
            .streams
            .get(t)
            .copied()
            .flatten()
            .ok_or("a stateful remote stage runs stream chunks only; this task is not one")?;
        tasks.push((inputs.iter().map(|i| i.rows(offset..offset + n).compact()).collect(), chunk));
        offset += n;
    }
    Ok(tasks)
}

/// Runs the futures concurrently on the current task, answers in order.
async fn futures_join<F: std::future::Future>(calls: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = calls.map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (i, call) in pending.iter_mut().enumerate() {
            if done[i].is_none() {
                match call.as_mut().poll(cx) {
                    std::task::Poll::Ready(out) => done[i] = Some(out),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    done.into_iter().map(|d| d.expect("every call finished")).collect()
}

/// Whether a failed call may be sent again: it certainly did not run (no
/// connection, or the server said UNAVAILABLE), or it is stateless and its
/// connection broke (running it twice is harmless).
fn retryable(e: &kserve::Error, stateful: bool) -> bool {
    match e.kind() {
        ErrorKind::Connect | ErrorKind::Unavailable => true,
        ErrorKind::Transport => !stateful,
        _ => false,
    }
}

/// One ModelInfer, retried with backoff while it could not have run and the deadline leaves room.
async fn infer_with_retries(
    client: &Client,
    mut request: InferRequest,
    deadline: Instant,
    stateful: bool,
) -> Result<kserve::InferResponse, String> {
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1.. {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("the deadline passed before attempt {attempt}"));
        }
        request.timeout = Some(left);
        request.server_timeout = Some(left);
        match client.infer(&request).await {
            Ok(answer) => return Ok(answer),
            Err(e) if retryable(&e, stateful) && Instant::now() + backoff < deadline => {
                tracing::debug!(attempt, error = %e, "remote call not run; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(e) => {
                let attempts = if attempt == 1 { String::new() } else { format!(" (after {attempt} attempts)") };
                return Err(format!("{e}{attempts}"));
            }
        }
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(params: &str) -> StageRequest {
        StageRequest {
            location: "nodes.far.stages[0]".into(),
            model: None,
            params: params.parse().unwrap(),
            intra_threads: 1,
            inter_threads: 1,
            execution: baton::Execution::Cpu,
            batch_sizes: baton::BatchSizes::none(),
            device_outputs: Vec::new(),
        }
    }

    fn settings(params: &str) -> Result<RemoteSettings, String> {
        RemoteSettings::from_stage(&stage(params)).map_err(|e| e.to_string())
    }

    #[test]
    fn settings_read_the_endpoint_model_and_timeouts() {
        let s =
            settings("url = \"grpc://127.0.0.1:9\"\nmodel = \"m\"\nlazy = false\nstateful = true\ntimeout_ms = 250")
                .unwrap();
        assert_eq!((s.url.as_str(), s.model.as_str(), s.stateful), ("grpc://127.0.0.1:9", "m", true));
        assert_eq!(s.timeout, Duration::from_millis(250));
        assert!(s.declared.is_none());
    }

    #[test]
    fn bad_settings_say_what_is_wrong() {
        let e = settings("url = \"http://h:1\"\nmodel = \"m\"").unwrap_err();
        assert!(e.contains("grpc://HOST:PORT"), "{e}");
        let e = settings("url = \"grpc://h:1\"\nmodel = \"m\"\nretries = 3").unwrap_err();
        assert!(e.contains("unknown key `retries`"), "{e}");
        let e =
            settings("url = \"grpc://h:1\"\nmodel = \"m\"\ninputs = [{ name = \"x\", dtype = \"f32\", shape = [-1] }]")
                .unwrap_err();
        assert!(e.contains("both `inputs` and `outputs`"), "{e}");
    }

    #[test]
    fn an_unreachable_server_is_an_error_naming_the_endpoint_unless_lazy() {
        // Port 9 on loopback: nothing listens there, the connection is refused at once.
        let base = "url = \"grpc://127.0.0.1:9\"\nmodel = \"m\"\n";
        let stage = |extra: &str| stage(&format!("{base}{extra}"));
        let e = RemoteProvider.inspect(&stage("lazy = false")).unwrap_err().to_string();
        assert!(e.contains("model `m` at grpc://127.0.0.1:9 is not reachable"), "{e}");
        let e = RemoteProvider.inspect(&stage("lazy = true")).unwrap_err().to_string();
        assert!(e.contains("needs its signature in params"), "{e}");
        let lazy = stage(
            "lazy = true\ninputs = [{ name = \"x\", dtype = \"f32\", shape = [-1, 2] }]\noutputs = [{ name = \"y\", dtype = \"f32\", shape = [-1, 2] }]",
        );
        let signature = RemoteProvider.inspect(&lazy).unwrap();
        assert_eq!(signature.inputs[0].name, "x");
    }

    #[test]
    fn a_batch_past_its_deadline_fails_naming_the_endpoint_without_waiting() {
        let stage = stage("url = \"grpc://127.0.0.1:9\"\nmodel = \"m\"\nlazy = true\ninputs = [{ name = \"x\", dtype = \"f32\", shape = [-1, 2] }]\noutputs = [{ name = \"y\", dtype = \"f32\", shape = [-1, 2] }]");
        let mut engine = RemoteProvider.create(&stage).unwrap();
        let x = Tensor::from_vec(vec![1, 2], vec![1.0f32, 2.0]).unwrap();
        let deadline = Instant::now() + Duration::from_millis(50);
        let batch = BatchInfo { deadline: Some(deadline), streams: vec![None] };
        let e = engine.run_batch(&[&x], &[1], &batch).unwrap_err().to_string();
        assert!(e.contains("model `m` at grpc://127.0.0.1:9"), "{e}");
        assert!(e.contains("cannot connect"), "{e}");
        // Retried while the deadline left room, and gave up before it passed by much.
        assert!(Instant::now() < deadline + Duration::from_secs(5), "gave up long after the deadline");
    }
}
