//! A client of the Open Inference Protocol (KServe v2), for any server that
//! speaks it: a `baton serve`, a fleet behind a proxy, or Triton.
//!
//! - `http://HOST:PORT`: HTTP/1.1 with Triton's binary tensor data extension
//!   (the JSON head, then the tensors' bytes; `Inference-Header-Content-Length`),
//!   on a pool of kept-alive connections.
//! - `grpc://HOST:PORT`: `inference.GRPCInferenceService` (the server's own
//!   proto/grpc_service.proto) with `raw_input_contents`, on one HTTP/2
//!   connection multiplexing every call.
//!
//! Sequences (`sequence_id`, `sequence_start`, `sequence_end`) go as request
//! parameters and, for proxies that route on headers, as the
//! [`SEQUENCE_ID_HEADER`] header (gRPC metadata). Every call has a deadline;
//! every error names the endpoint it came from.
//!
//! ```no_run
//! # async fn demo() -> Result<(), baton_kserve_client::Error> {
//! use baton_kserve_client::{Client, ClientOptions, InferRequest, Tensor};
//! let client = Client::new("grpc://127.0.0.1:8001", ClientOptions::default())?;
//! let input = Tensor::from_f32("input", vec![1, 256], &[0.0; 256]);
//! let answer = client.infer(&InferRequest::new("mlp", vec![input])).await?;
//! println!("{:?}", answer.output("output").map(|t| t.to_f32()));
//! # Ok(()) }
//! ```

mod conn;
mod error;
mod grpc;
mod http;
mod tensor;
mod tls;
pub mod vocabulary;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

pub use error::{Error, ErrorKind, Status};
pub use tensor::Tensor;
pub use vocabulary::{element_size, SEQUENCE_ID_HEADER};

/// The generated protobuf messages and client of proto/grpc_service.proto.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("inference");
}

/// A chunk's place in a stream (the protocol's sequence extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sequence {
    /// Non-zero.
    pub id: u64,
    /// The stream's first chunk: the server opens its state.
    pub start: bool,
    /// The stream's last chunk: the server closes its state after it.
    pub end: bool,
}

/// One inference request.
#[derive(Clone, Debug, Default)]
pub struct InferRequest {
    pub model: String,
    /// "" for the server's choice.
    pub version: String,
    /// Echoed back by the server; "" for none.
    pub id: String,
    pub inputs: Vec<Tensor>,
    /// Outputs to return, by name; empty for all.
    pub outputs: Vec<String>,
    pub sequence: Option<Sequence>,
    pub priority: bool,
    /// The `timeout` parameter: how long the server may queue the request.
    pub server_timeout: Option<Duration>,
    /// This call's deadline, from its start to its whole answer (default: the client's `timeout`).
    pub timeout: Option<Duration>,
}

impl InferRequest {
    pub fn new(model: impl Into<String>, inputs: Vec<Tensor>) -> Self {
        InferRequest { model: model.into(), inputs, ..Default::default() }
    }

    /// Makes it a chunk of stream `id`.
    pub fn sequence(mut self, id: u64, start: bool, end: bool) -> Self {
        self.sequence = Some(Sequence { id, start, end });
        self
    }
}

/// An inference answer.
#[derive(Clone, Debug)]
pub struct InferResponse {
    pub model: String,
    pub version: String,
    pub id: String,
    pub outputs: Vec<Tensor>,
}

impl InferResponse {
    pub fn output(&self, name: &str) -> Option<&Tensor> {
        self.outputs.iter().find(|t| t.name == name)
    }
}

/// A tensor of a model's metadata (-1: any size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMetadata {
    pub name: String,
    pub datatype: String,
    pub shape: Vec<i64>,
}

/// A model's metadata.
#[derive(Clone, Debug)]
pub struct ModelMetadata {
    pub name: String,
    pub versions: Vec<String>,
    pub platform: String,
    pub inputs: Vec<TensorMetadata>,
    pub outputs: Vec<TensorMetadata>,
}

/// How a client connects and how long it waits.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Each call's deadline, from its start to its whole answer (gRPC also sends it as `grpc-timeout`).
    pub timeout: Duration,
    /// How long opening a connection may take.
    pub connect_timeout: Duration,
    /// HTTP: idle connections kept for reuse (more may be open while calls overlap).
    pub max_idle: usize,
    /// `https://` and `grpcs://`: the CA file (PEM) the server's certificate must chain to.
    pub tls_ca: Option<std::path::PathBuf>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(5),
            max_idle: 256,
            tls_ca: None,
        }
    }
}

/// Which protocol a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Grpc,
}

/// A server's URL: `http://HOST:PORT` or `grpc://HOST:PORT`, or over TLS
/// `https://HOST:PORT` or `grpcs://HOST:PORT` (a trailing `/` is allowed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerUrl {
    pub protocol: Protocol,
    /// `HOST:PORT`.
    pub authority: String,
    /// Over TLS.
    pub tls: bool,
}

impl ServerUrl {
    pub fn parse(url: &str) -> Result<ServerUrl, Error> {
        let bad = |reason: &str| Error::Url { url: url.to_string(), reason: reason.to_string() };
        let schemes = [
            ("http://", Protocol::Http, false),
            ("https://", Protocol::Http, true),
            ("grpc://", Protocol::Grpc, false),
            ("grpcs://", Protocol::Grpc, true),
        ];
        let Some((protocol, tls, rest)) =
            schemes.iter().find_map(|(prefix, protocol, tls)| Some((*protocol, *tls, url.strip_prefix(prefix)?)))
        else {
            return Err(bad("expected http://, https://, grpc:// or grpcs:// and HOST:PORT"));
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains('/') {
            return Err(bad("give the server only (HOST:PORT), no path"));
        }
        let Some((host, port)) = authority.rsplit_once(':') else {
            return Err(bad("the port is missing (HOST:PORT)"));
        };
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad("expected HOST:PORT with a numeric port"));
        }
        Ok(ServerUrl { protocol, authority: authority.to_string(), tls })
    }

    fn scheme(&self) -> &'static str {
        match (self.protocol, self.tls) {
            (Protocol::Http, false) => "http",
            (Protocol::Http, true) => "https",
            (Protocol::Grpc, false) => "grpc",
            (Protocol::Grpc, true) => "grpcs",
        }
    }
}

impl std::fmt::Display for ServerUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme(), self.authority)
    }
}

/// A KServe v2 client; cheap to clone (clones share connections).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("url", &self.url().to_string()).finish()
    }
}

enum Inner {
    Http(http::HttpClient),
    Grpc(grpc::GrpcClient),
}

impl Client {
    /// A client of the server at `url`; connects at the first call.
    pub fn new(url: &str, options: ClientOptions) -> Result<Client, Error> {
        let url = ServerUrl::parse(url)?;
        let bad = |reason: String| Error::Url { url: url.to_string(), reason };
        let tls = match (&options.tls_ca, url.tls) {
            (Some(ca), true) => Some(tls::ClientTls::from_ca_file(ca).map_err(bad)?),
            (None, true) => return Err(bad("a TLS URL needs the CA file to trust (ClientOptions::tls_ca)".into())),
            (_, false) => None,
        };
        let alpn: &[u8] = if url.protocol == Protocol::Http { b"http/1.1" } else { b"h2" };
        let connector =
            conn::Connector::new(url.authority.clone(), options.connect_timeout, tls.as_ref(), alpn).map_err(bad)?;
        let inner = match url.protocol {
            Protocol::Http => Inner::Http(http::HttpClient::new(url, options, connector)),
            Protocol::Grpc => Inner::Grpc(grpc::GrpcClient::new(url, options, connector)),
        };
        Ok(Client { inner: Arc::new(inner) })
    }

    pub fn url(&self) -> &ServerUrl {
        match &*self.inner {
            Inner::Http(c) => c.url(),
            Inner::Grpc(c) => c.url(),
        }
    }

    /// Runs one inference.
    pub async fn infer(&self, request: &InferRequest) -> Result<InferResponse, Error> {
        check_request(request, self.url())?;
        match &*self.inner {
            Inner::Http(c) => c.infer(request).await,
            Inner::Grpc(c) => c.infer(request).await,
        }
    }

    /// Whether the server is live (`/v2/health/live`, ServerLive).
    pub async fn server_live(&self) -> Result<bool, Error> {
        match &*self.inner {
            Inner::Http(c) => c.health("live").await,
            Inner::Grpc(c) => c.server_live().await,
        }
    }

    /// Whether the server is ready (`/v2/health/ready`, ServerReady).
    pub async fn server_ready(&self) -> Result<bool, Error> {
        match &*self.inner {
            Inner::Http(c) => c.health("ready").await,
            Inner::Grpc(c) => c.server_ready().await,
        }
    }

    /// A model's inputs and outputs.
    pub async fn model_metadata(&self, model: &str) -> Result<ModelMetadata, Error> {
        match &*self.inner {
            Inner::Http(c) => c.model_metadata(model).await,
            Inner::Grpc(c) => c.model_metadata(model).await,
        }
    }
}

/// Checks what the client itself can: every input's bytes match its shape and datatype.
fn check_request(request: &InferRequest, url: &ServerUrl) -> Result<(), Error> {
    let bad = |message: String| Error::Request { endpoint: url.to_string(), message };
    if request.model.is_empty() {
        return Err(bad("the request names no model".into()));
    }
    for input in &request.inputs {
        input.check().map_err(|e| bad(format!("input `{}`: {e}", input.name)))?;
    }
    if let Some(s) = request.sequence {
        if s.id == 0 {
            return Err(bad("sequence id 0 means no sequence: give a non-zero id".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_their_protocol() {
        let u = ServerUrl::parse("http://127.0.0.1:8000").unwrap();
        assert_eq!((u.protocol, u.authority.as_str()), (Protocol::Http, "127.0.0.1:8000"));
        let u = ServerUrl::parse("grpc://baton.local:8001/").unwrap();
        assert_eq!((u.protocol, u.authority.as_str()), (Protocol::Grpc, "baton.local:8001"));
        assert_eq!(u.to_string(), "grpc://baton.local:8001");
        let u = ServerUrl::parse("https://localhost:8443").unwrap();
        assert_eq!((u.protocol, u.tls, u.to_string().as_str()), (Protocol::Http, true, "https://localhost:8443"));
        assert!(ServerUrl::parse("grpcs://h:1").unwrap().tls);
        for bad in ["127.0.0.1:8000", "http://host", "http://host:x", "ftp://h:1", "http://h:1/v2", "http://:80"] {
            let e = ServerUrl::parse(bad).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
