//! `baton serve`: Baton pipelines served over the Open Inference Protocol
//! (KServe v2) — HTTP/JSON with Triton's binary tensor extension, and gRPC
//! (`inference.GRPCInferenceService`) — with Prometheus metrics, so Baton can
//! sit where Triton sits and Triton's clients talk to it unchanged.
//!
//! Each pipeline is a model named by its pipeline name, version `1`; its
//! pipeline inputs and outputs are the model's tensors.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // The recorder first: runtimes register their metrics when they start.
//! baton_server::install_recorder();
//! let engines = baton_engines::standard_registry();
//! let runtime = baton::Runtime::from_file("configs/mlp.toml".as_ref(), &engines)?;
//! let running = baton_server::Server::new(baton_server::ServerConfig::default())
//!     .model(runtime)
//!     .start()
//!     .await?;
//! println!("HTTP on {:?}", running.http_addr());
//! running.run_until_signal().await; // SIGTERM / ctrl-c: graceful shutdown
//! # Ok(()) }
//! ```
//!
//! Status codes (HTTP / gRPC): bad request body, parameter, tensor name,
//! datatype or shape 400 / INVALID_ARGUMENT; unknown model or version 404 /
//! NOT_FOUND; body over the limit 413 / RESOURCE_EXHAUSTED;
//! an in-flight bound reached (pipeline `max_in_flight`, `--max-in-flight`) or
//! stream state memory full: 429 / RESOURCE_EXHAUSTED at once; deadline (`timeout`) passed while
//! queued 504 / DEADLINE_EXCEEDED; shutting down 503 / UNAVAILABLE; a node's
//! failure 500 / INTERNAL; a call Baton does not support 501 / UNIMPLEMENTED
//! (the message names it); an HTTP body not received in time 408.
//!
//! With [`Server::repository`], a directory of pipeline files is a model
//! repository: each `NAME.toml` model `NAME`, loaded at start, and loaded,
//! reloaded or unloaded while serving through the repository extension.

pub mod access;
mod access_grpc;
pub mod config;
pub mod conn;
pub mod control;
pub mod fence;
pub mod flow;
pub mod grpc;
mod grpc_admission;
mod grpc_gate;
pub mod http;
mod json;
pub mod metrics;
pub mod model;
pub mod models;
pub mod sequence_ids;
pub mod serve;
pub mod stats;
pub mod tls;
pub mod triton;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use baton::{EngineRegistry, Runtime};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use metrics::install_recorder;
pub use model::{ErrorKind, Model, Models};
pub use models::Repository;
pub use serve::{parse_listen_addr, run, run_with, ServeOptions};

/// The generated protobuf messages and service of proto/grpc_service.proto.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("inference");
}

/// Where to listen and the limits.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// HTTP (KServe v2 REST) address; `None`: no HTTP.
    pub http: Option<SocketAddr>,
    /// gRPC address; `None`: no gRPC.
    pub grpc: Option<SocketAddr>,
    /// Prometheus `/metrics` address; `None`: no metrics endpoint.
    pub metrics: Option<SocketAddr>,
    /// Largest request body (HTTP) or message (gRPC), bytes.
    pub max_body_bytes: usize,
    /// Inferences in flight server-wide past which requests are refused at once
    /// (429 with `Retry-After` / RESOURCE_EXHAUSTED); each pipeline's
    /// `max_in_flight` applies too. `None`: sized from the loaded models'
    /// capacity ([`models::default_bound`]).
    pub max_in_flight: Option<usize>,
    /// Concurrent HTTP/2 streams (requests) one gRPC connection may open
    /// (its SETTINGS_MAX_CONCURRENT_STREAMS); a client waits for a free one.
    pub grpc_max_concurrent_streams: u32,
    /// How long a graceful shutdown waits for accepted requests before closing anyway
    /// (and how long a reloaded or unloaded model's requests get to finish).
    pub shutdown_grace: Duration,
    /// Connections open at once (HTTP and gRPC each) past which new ones are
    /// closed at once (HTTP: after a 503).
    pub max_connections: usize,
    /// Longest an HTTP request's head may take to arrive, from its first byte.
    pub header_read_timeout: Duration,
    /// Longest an HTTP request's body may take to arrive, from its head (408 past it).
    pub body_read_timeout: Duration,
    /// Longest an HTTP connection may sit idle (no request in flight or arriving).
    pub keep_alive_timeout: Duration,
    /// TLS on the HTTP endpoint; `None`: plain text.
    pub http_tls: Option<tls::TlsFiles>,
    /// TLS on the gRPC endpoint; `None`: plain text.
    pub grpc_tls: Option<tls::TlsFiles>,
    /// HTTP endpoint groups that need a key header.
    pub http_restricted: access::Restrictions,
    /// gRPC endpoint groups that need a key metadata entry.
    pub grpc_restricted: access::Restrictions,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            http: Some(SocketAddr::from(([127, 0, 0, 1], 8000))),
            grpc: Some(SocketAddr::from(([127, 0, 0, 1], 8001))),
            metrics: Some(SocketAddr::from(([127, 0, 0, 1], 8002))),
            max_body_bytes: 64 << 20,
            max_in_flight: None,
            grpc_max_concurrent_streams: 128,
            shutdown_grace: Duration::from_secs(30),
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(60),
            http_tls: None,
            grpc_tls: None,
            http_restricted: access::Restrictions::default(),
            grpc_restricted: access::Restrictions::default(),
        }
    }
}

impl ServerConfig {
    /// The HTTP connection limits of this config.
    pub fn conn_limits(&self) -> conn::ConnLimits {
        conn::ConnLimits {
            max_connections: self.max_connections,
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            keep_alive_timeout: self.keep_alive_timeout,
            max_body_bytes: self.max_body_bytes,
        }
    }

    /// All three endpoints on 127.0.0.1 with ports the OS picks (for tests).
    pub fn ephemeral() -> Self {
        let any = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
        ServerConfig { http: any, grpc: any, metrics: any, ..Self::default() }
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Models(String),
    #[error("cannot start the network threads: {0}")]
    Threads(std::io::Error),
    #[error("{0}")]
    Tls(String),
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind { what: &'static str, addr: SocketAddr, source: std::io::Error },
}

/// A server to start: its config and models.
pub struct Server {
    config: ServerConfig,
    models: Vec<Model>,
    repository: Option<Repository>,
    control: control::ModelControl,
}

impl Server {
    pub fn new(config: ServerConfig) -> Self {
        Server { config, models: Vec::new(), repository: None, control: Default::default() }
    }

    /// Serves the model repository `dir` too: each pipeline file `NAME.toml`
    /// there is model `NAME`, loaded at start and loadable and unloadable
    /// while the server runs (the model repository extension).
    pub fn repository(mut self, dir: impl Into<PathBuf>, engines: EngineRegistry) -> Self {
        self.repository = Some(Repository::new(dir.into(), engines));
        self
    }

    /// Serves `runtime` as the model named by its pipeline name.
    pub fn model(mut self, runtime: Runtime) -> Self {
        self.models.push(Model::new(runtime));
        self
    }

    /// Which repository models load at start, and how they load later (`--model-control-mode`).
    pub fn model_control(mut self, control: control::ModelControl) -> Self {
        self.control = control;
        self
    }

    /// Serves models made already (Triton models from `.onnx` files, say).
    pub fn served(mut self, models: Vec<Model>) -> Self {
        self.models.extend(models);
        self
    }

    /// Serves each runtime as a model.
    pub fn models(self, runtimes: impl IntoIterator<Item = Runtime>) -> Self {
        runtimes.into_iter().fold(self, Server::model)
    }

    /// Serves on a tokio runtime of its own with `threads` network threads until
    /// SIGTERM or ctrl-c, then shuts down gracefully; blocks the calling thread.
    /// `on_start` sees the running server first (its addresses, its models).
    pub fn run_blocking(self, threads: usize, on_start: impl FnOnce(&RunningServer)) -> Result<(), StartError> {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("baton-serve")
            .enable_all()
            .build()
            .map_err(StartError::Threads)?;
        tokio.block_on(async move {
            let running = self.start().await?;
            on_start(&running);
            running.run_until_signal().await;
            Ok(())
        })
    }

    /// Binds the listeners and starts serving (on the current tokio runtime).
    /// On error the runtimes are shut down gracefully (dropped).
    pub async fn start(self) -> Result<RunningServer, StartError> {
        let config = self.config;
        let http_tls = config.http_tls.as_ref().map(tls::http_acceptor).transpose().map_err(StartError::Tls)?;
        let grpc_tls = config.grpc_tls.as_ref().map(tls::grpc_config).transpose().map_err(StartError::Tls)?;
        self.control.check().map_err(StartError::Models)?;
        let mut models = Models::new(self.models, config.max_in_flight)
            .map_err(StartError::Models)?
            .with_repository(self.repository, config.shutdown_grace);
        let polling = self.control.mode == control::ControlMode::Poll;
        if polling {
            models = models.refuse_api_control(
                "the server polls its model repository (--model-control-mode poll): change the files instead",
            );
        }
        let loaded = load_repository(&models, &self.control).await?;
        let models = Arc::new(models);
        let http = bind("http", config.http).await?;
        let grpc = bind("grpc", config.grpc).await?;
        let metrics = bind("metrics", config.metrics).await?;
        let local = |l: &Option<TcpListener>| l.as_ref().and_then(|l| l.local_addr().ok());
        let (http_addr, grpc_addr, metrics_addr) = (local(&http), local(&grpc), local(&metrics));

        let (stop, stopped) = watch::channel(false);
        let mut tasks: Vec<(&'static str, JoinHandle<()>)> = Vec::new();
        if let Some(listener) = http {
            tasks.push(("http", serve_http(listener, Arc::clone(&models), &config, http_tls, signal(&stopped))));
        }
        if let Some(listener) = grpc {
            tasks.push(("grpc", serve_grpc(listener, Arc::clone(&models), &config, grpc_tls, signal(&stopped))));
        }
        if polling {
            let poll = control::poll(Arc::clone(&models), self.control.poll_every, loaded, signal(&stopped));
            tasks.push(("repository-poll", tokio::spawn(poll)));
        }
        if let Some(listener) = metrics {
            let handle = install_recorder();
            tasks.push(("metrics-upkeep", metrics_upkeep(handle.clone(), signal(&stopped))));
            let limits = config.conn_limits();
            let served = conn::serve_http(listener, metrics::router(handle), limits, None, signal(&stopped));
            tasks.push(("metrics", tokio::spawn(served)));
        }
        Ok(RunningServer { http_addr, grpc_addr, metrics_addr, models, stop, tasks, grace: config.shutdown_grace })
    }
}

/// Loads every model of the models' repository, if they have one: pipeline files
/// and Triton model folders.
async fn load_repository(
    models: &Models,
    control: &control::ModelControl,
) -> Result<std::collections::BTreeMap<String, control::Fingerprint>, StartError> {
    let mut loaded = std::collections::BTreeMap::new();
    let Some(repository) = models.repository() else {
        return Ok(loaded);
    };
    let names = repository.names().map_err(|e| StartError::Models(e.message))?;
    if let Some(missing) = control.load.iter().find(|n| *n != "*" && !names.contains(n)) {
        return Err(StartError::Models(format!(
            "--load-model {missing}: the model repository {} has no model `{missing}`",
            repository.dir.display()
        )));
    }
    for name in names.into_iter().filter(|n| control.loads_at_start(n)) {
        loaded.insert(name.clone(), control::fingerprint(repository, &name));
        if models.knows(&name) {
            return Err(StartError::Models(format!(
                "model `{name}` is both on the command line and in the model repository"
            )));
        }
        // A model that fails to load is reported and noted in the repository index
        // (state UNAVAILABLE, the error as its reason); the others serve.
        if let Err(e) = models.load(&name).await {
            eprintln!("error: {}", e.message);
        }
    }
    Ok(loaded)
}

/// A listener on `addr` for the `what` endpoint, when it has an address.
async fn bind(what: &'static str, addr: Option<SocketAddr>) -> Result<Option<TcpListener>, StartError> {
    match addr {
        Some(addr) => TcpListener::bind(addr).await.map(Some).map_err(|source| StartError::Bind { what, addr, source }),
        None => Ok(None),
    }
}

/// Resolves once the server is told to stop.
fn signal(stopped: &watch::Receiver<bool>) -> impl std::future::Future<Output = ()> + Send + 'static {
    let mut stopped = stopped.clone();
    async move {
        let _ = stopped.wait_for(|&s| s).await;
    }
}

/// Serves the HTTP protocol on `listener` until `shutdown`.
fn serve_http(
    listener: TcpListener,
    models: Arc<Models>,
    config: &ServerConfig,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    let restrictions = Arc::new(config.http_restricted.clone());
    let app = Arc::new(http::App { models, max_body_bytes: config.max_body_bytes, restrictions });
    let limits = config.conn_limits();
    // Layers run outside in: the key check first, then the body is read.
    let router = http::router(Arc::clone(&app))
        .layer(axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
            conn::read_body(limits, request, next)
        }))
        .layer(axum::middleware::from_fn_with_state(app, http::restrict));
    tokio::spawn(conn::serve_http(listener, router, limits, tls, shutdown))
}

/// Serves the gRPC protocol on `listener` until `shutdown`.
fn serve_grpc(
    listener: TcpListener,
    models: Arc<Models>,
    config: &ServerConfig,
    tls: Option<tonic::transport::ServerTlsConfig>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    let service = pb::grpc_inference_service_server::GrpcInferenceServiceServer::new(grpc::Service {
        models: Arc::clone(&models),
    })
    .max_decoding_message_size(usize::MAX)
    .max_encoding_message_size(usize::MAX);
    // Layers run outside in: the key check, the bound on calls under way, the message limit.
    let service = conn::GrpcBodyLimit { inner: service, limit: config.max_body_bytes };
    let service = grpc_admission::GrpcAdmission { inner: service, models, under_way: Default::default() };
    let service = access_grpc::GrpcAccess { inner: service, restrictions: Arc::new(config.grpc_restricted.clone()) };
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let incoming = conn::limit_grpc(incoming, config.max_connections);
    let (keep_alive, answer_within) = (config.keep_alive_timeout, config.header_read_timeout);
    let max_streams = config.grpc_max_concurrent_streams;
    tokio::spawn(async move {
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = tls {
            builder = match builder.tls_config(tls) {
                Ok(builder) => builder,
                Err(e) => {
                    tracing::error!("gRPC TLS set-up failed: {e}");
                    return;
                }
            };
        }
        let served = builder
            .http2_keepalive_interval(Some(keep_alive))
            .http2_keepalive_timeout(Some(answer_within))
            .max_concurrent_streams(Some(max_streams))
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await;
        if let Err(e) = served {
            tracing::error!("gRPC server failed: {e}");
        }
    })
}

/// Runs the metrics recorder's upkeep every 5 s until `stopped`.
fn metrics_upkeep(
    upkeep: metrics_exporter_prometheus::PrometheusHandle,
    stopped: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        tokio::pin!(stopped);
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = every.tick() => upkeep.run_upkeep(),
                _ = &mut stopped => break,
            }
        }
    })
}

/// A started server. Dropping it without [`RunningServer::shutdown`] leaves the
/// listeners running until the tokio runtime ends.
pub struct RunningServer {
    http_addr: Option<SocketAddr>,
    grpc_addr: Option<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    models: Arc<Models>,
    stop: watch::Sender<bool>,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
    grace: Duration,
}

impl RunningServer {
    /// The HTTP address actually bound (the port the OS picked for port 0).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_addr
    }

    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The models served.
    pub fn models(&self) -> &Models {
        &self.models
    }

    /// Waits for SIGTERM or ctrl-c (SIGINT), then shuts down gracefully.
    pub async fn run_until_signal(self) {
        wait_for_signal().await;
        tracing::info!("signal received: shutting down");
        self.shutdown().await;
    }

    /// Graceful shutdown: stops accepting connections and requests (new ones on
    /// open connections get 503 / UNAVAILABLE), lets accepted requests finish
    /// (up to the grace period), then shuts the runtimes down, draining them.
    pub async fn shutdown(self) {
        self.models.stop_accepting();
        let _ = self.stop.send(true);
        let deadline = tokio::time::Instant::now() + self.grace;
        for (what, mut task) in self.tasks {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                tracing::warn!("{what} server still busy after the grace period: closing it");
                task.abort();
                let _ = task.await;
            }
        }
        let runtimes = match Arc::try_unwrap(self.models) {
            Ok(models) => models.into_runtimes(),
            Err(_) => {
                // Some request still holds the models (past the grace period); the last
                // holder drops them, and a dropped runtime drains gracefully too.
                tracing::warn!("requests still in flight after the grace period");
                return;
            }
        };
        let _ = tokio::task::spawn_blocking(move || {
            for runtime in runtimes {
                runtime.shutdown();
            }
        })
        .await;
    }
}

/// Resolves on SIGTERM or ctrl-c.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
