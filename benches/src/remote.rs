//! A KServe v2 server as a benchmark [`Target`]: requests go out with
//! `baton-kserve-client` (HTTP with binary tensors, or gRPC), on a tokio
//! runtime of the bench's own ("network threads", pinned to `--client-cores`
//! like the load threads). The inputs' names, datatypes and shapes come from
//! the server's model metadata, so any server speaking the protocol (Baton,
//! a fleet behind a proxy, Triton) can be driven.
//!
//! Failures are counted by kind ([`Remote::failures`]) so a run can say what
//! failed (refused connections, 503s from a proxy, unknown streams, ...).
//!
//! Chunks of one stream go out in order, one at a time: a runtime in this
//! process parks a stream's next chunk until the previous one is done, but
//! over the network chunks sent at once could overtake each other (separate
//! connections, concurrent handlers). [`Target::call_then`] therefore chains
//! them: at the call (on the caller's thread, so in call order) a chunk takes
//! the previous chunk's completion signal from `chains` and leaves its own;
//! its task waits for that signal before sending and fires its own after the
//! answer, whatever the outcome. A stream's final chunk removes the entry.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use baton::{Dim, NodeStats, Request, Tensor, TensorSpec};
use baton_kserve_client::{Client, ClientOptions, Error, InferRequest, Sequence};
use baton_server::model::{datatype_name, parse_datatype};

use crate::target::Target;

/// A tensor's bytes, owned by the tensor (no copy into the request).
struct TensorBytes(Tensor);

impl AsRef<[u8]> for TensorBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// One model on a remote server.
pub struct Remote {
    client: Client,
    model: String,
    network: tokio::runtime::Runtime,
    in_flight: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
    failures: Arc<Mutex<BTreeMap<String, u64>>>,
    /// Per open stream: the completion signal of its last chunk sent (see the module's note).
    chains: Mutex<HashMap<u64, tokio::sync::oneshot::Receiver<()>>>,
}

/// How the bench's client calls: each request's deadline, and the CA to trust over TLS.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    pub timeout: Duration,
    pub tls_ca: Option<std::path::PathBuf>,
}

impl Remote {
    /// A client of `model` at `url` with `threads` network threads pinned round-robin to `cores`.
    pub fn new(
        url: &str,
        model: &str,
        threads: usize,
        cores: &[usize],
        settings: ClientSettings,
    ) -> Result<Remote, String> {
        let options = ClientOptions { timeout: settings.timeout, tls_ca: settings.tls_ca, ..ClientOptions::default() };
        let client = Client::new(url, options).map_err(|e| e.to_string())?;
        let cores = cores.to_vec();
        let next = AtomicUsize::new(0);
        let network = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("bench-network")
            .enable_all()
            .on_thread_start(move || {
                if !cores.is_empty() {
                    let core = cores[next.fetch_add(1, Ordering::Relaxed) % cores.len()];
                    core_affinity::set_for_current(core_affinity::CoreId { id: core });
                }
            })
            .build()
            .map_err(|e| format!("cannot start the network threads: {e}"))?;
        Ok(Remote {
            client,
            model: model.to_string(),
            network,
            in_flight: Arc::new(AtomicUsize::new(0)),
            answered: Arc::new(AtomicUsize::new(0)),
            failures: Arc::new(Mutex::new(BTreeMap::new())),
            chains: Mutex::new(HashMap::new()),
        })
    }

    pub fn url(&self) -> String {
        self.client.url().to_string()
    }

    /// The model's inputs as the server describes them (-1 dimensions dynamic).
    pub fn input_specs(&self) -> Result<Vec<TensorSpec>, String> {
        let meta = self.network.block_on(self.client.model_metadata(&self.model)).map_err(|e| e.to_string())?;
        meta.inputs
            .iter()
            .map(|t| {
                let dtype = parse_datatype(&t.datatype).ok_or_else(|| {
                    format!(
                        "model `{}`: input `{}` has datatype {}, which the bench cannot generate",
                        self.model, t.name, t.datatype
                    )
                })?;
                let shape = t.shape.iter().map(|&d| if d < 0 { Dim::Dynamic(None) } else { Dim::Fixed(d as usize) });
                Ok(TensorSpec { name: t.name.clone(), dtype, shape: shape.collect() })
            })
            .collect()
    }

    /// Requests answered successfully since the start (warm-ups included).
    pub fn answered(&self) -> usize {
        self.answered.load(Ordering::Acquire)
    }

    /// Failed requests since the start, by kind and status.
    pub fn failures(&self) -> BTreeMap<String, u64> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn wire(&self, request: Request) -> InferRequest {
        let inputs = request.inputs.into_iter().map(|(name, tensor)| wire_tensor(name, tensor)).collect();
        InferRequest {
            model: self.model.clone(),
            inputs,
            sequence: request.stream.map(|s| Sequence { id: s.id, start: s.start, end: s.end }),
            priority: request.priority,
            ..InferRequest::default()
        }
    }

    /// The call as a future that counts itself in flight until it resolves.
    fn send(&self, request: Request) -> impl std::future::Future<Output = bool> + Send + 'static {
        let wire = self.wire(request);
        let client = self.client.clone();
        let in_flight = Arc::clone(&self.in_flight);
        let answered = Arc::clone(&self.answered);
        let failures = Arc::clone(&self.failures);
        in_flight.fetch_add(1, Ordering::AcqRel);
        async move {
            // Counted before it leaves the in-flight count, so a drained target's counts are whole.
            let ok = match client.infer(&wire).await {
                Ok(_) => {
                    answered.fetch_add(1, Ordering::AcqRel);
                    true
                }
                Err(e) => {
                    *failures.lock().unwrap_or_else(PoisonError::into_inner).entry(failure_key(&e)).or_default() += 1;
                    false
                }
            };
            in_flight.fetch_sub(1, Ordering::AcqRel);
            ok
        }
    }
}

/// A tensor as the client sends it, its bytes shared, not copied.
pub fn wire_tensor(name: impl Into<String>, tensor: Tensor) -> baton_kserve_client::Tensor {
    let shape = tensor.shape().iter().map(|&d| d as i64).collect();
    let datatype = datatype_name(tensor.dtype());
    baton_kserve_client::Tensor::new(name, datatype, shape, bytes::Bytes::from_owner(TensorBytes(tensor)))
}

/// How a failure is counted: its kind and status, and for a server's answer the
/// start of its message (without numbers, so that one cause is one key).
fn failure_key(e: &Error) -> String {
    let head: String = e.message().chars().filter(|c| !c.is_ascii_digit()).take(60).collect();
    match e {
        Error::Server { status, .. } => format!("{:?} ({status}): {head}", e.kind()),
        _ => format!("{:?}", e.kind()),
    }
}

impl Target for Remote {
    fn call(&self, request: Request) -> bool {
        self.network.block_on(self.send(request))
    }

    fn call_then(&self, request: Request, done: Box<dyn FnOnce(bool) + Send>) {
        let Some(chunk) = request.stream else {
            let call = self.send(request);
            self.network.spawn(async move { done(call.await) });
            return;
        };
        let (finished, next) = tokio::sync::oneshot::channel();
        let previous = {
            let mut chains = self.chains.lock().unwrap_or_else(PoisonError::into_inner);
            if chunk.end {
                chains.remove(&chunk.id)
            } else {
                chains.insert(chunk.id, next)
            }
        };
        let call = self.send(request);
        self.network.spawn(async move {
            if let Some(previous) = previous {
                // Err: the previous chunk's task ended without signalling (the runtime stopped).
                let _ = previous.await;
            }
            let ok = call.await;
            let _ = finished.send(());
            done(ok)
        });
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    fn node_stats(&self) -> Vec<NodeStats> {
        Vec::new()
    }
}
