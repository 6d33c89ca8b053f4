//! The Open Inference Protocol (KServe v2) over HTTP/1.1, with axum: health,
//! server and model metadata, readiness, inference with JSON tensors and
//! Triton's binary tensor data extension, and Triton's statistics, model
//! configuration and model repository extensions. Triton's other calls
//! (shared memory, trace and log settings, generate) answer 501 with a
//! message naming the call; any other path 404 naming the method and path.
//!
//! An infer request runs through the shared flow ([`crate::flow`]); this
//! module is its HTTP codec: it reads the body (JSON, and the binary tensor
//! part after it) into tensors and writes the answer back the same way.
//!
//! Errors are answered as the protocol says, `{"error": "..."}` with the
//! status of [`crate::model::ErrorKind::http_status`].

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use baton::Tensor;
pub use baton_kserve_client::vocabulary::{EXTENSIONS, HEADER_LENGTH};
use serde_json::json;

use crate::access::{Group, Restrictions};
use crate::flow::{self, Decode, Decoded, Encode, PickedOutput};
use crate::json::{self, BinarySize, InferRequest, InputTensor, OutputTensor, RequestedOutput, TensorData};
use crate::metrics::{count, http_code};
use crate::model::{
    check_input, datatype_name, CallOptions, ErrorKind, InputData, Model, Models, Param, ServeError, TensorMeta,
    SEQUENCE_ID_HEADER,
};
use crate::stats::Report;

/// Calls of Triton's HTTP API Baton does not support (path, method, the call's name):
/// each answers 501 with a message naming it.
const UNSUPPORTED: [(&str, &str, &str); 14] = [
    ("/v2/systemsharedmemory/status", "GET", "system shared memory status"),
    ("/v2/systemsharedmemory/region/{region}/status", "GET", "system shared memory status"),
    ("/v2/systemsharedmemory/region/{region}/register", "POST", "system shared memory register"),
    ("/v2/systemsharedmemory/unregister", "POST", "system shared memory unregister"),
    ("/v2/systemsharedmemory/region/{region}/unregister", "POST", "system shared memory unregister"),
    ("/v2/cudasharedmemory/status", "GET", "CUDA shared memory status"),
    ("/v2/cudasharedmemory/region/{region}/status", "GET", "CUDA shared memory status"),
    ("/v2/cudasharedmemory/region/{region}/register", "POST", "CUDA shared memory register"),
    ("/v2/cudasharedmemory/unregister", "POST", "CUDA shared memory unregister"),
    ("/v2/cudasharedmemory/region/{region}/unregister", "POST", "CUDA shared memory unregister"),
    ("/v2/trace/setting", "GET POST", "trace settings"),
    ("/v2/models/{name}/trace/setting", "GET POST", "trace settings"),
    ("/v2/logging", "GET POST", "log settings"),
    ("/v2/models/{name}/generate", "POST", "the generate extension"),
];

/// What every handler shares.
pub(crate) struct App {
    pub models: Arc<Models>,
    pub max_body_bytes: usize,
    /// Endpoint groups that need a key header.
    pub restrictions: Arc<Restrictions>,
}

type AppState = State<Arc<App>>;

/// The HTTP routes.
pub(crate) fn router(app: Arc<App>) -> Router {
    let limit = app.max_body_bytes;
    Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2/models/{name}", get(model_metadata))
        .route("/v2/models/{name}/versions/{version}", get(model_metadata_v))
        .route("/v2/models/{name}/ready", get(model_ready))
        .route("/v2/models/{name}/versions/{version}/ready", get(model_ready_v))
        .route("/v2/models/{name}/infer", post(infer))
        .route("/v2/models/{name}/versions/{version}/infer", post(infer_v))
        .route("/v2/models/stats", get(all_stats))
        .route("/v2/models/{name}/stats", get(model_stats))
        .route("/v2/models/{name}/versions/{version}/stats", get(model_stats_v))
        .route("/v2/models/{name}/config", get(model_config))
        .route("/v2/models/{name}/versions/{version}/config", get(model_config_v))
        .route("/v2/repository/index", post(repository_index))
        .route("/v2/repository/models/{name}/load", post(repository_load))
        .route("/v2/repository/models/{name}/unload", post(repository_unload))
        .merge(unsupported_routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app)
}

/// Middleware: refuses (403) a call to a restricted endpoint group without
/// its key header, before the body is read and before anything runs. The
/// group comes from the request's path, read as the router reads it (literal
/// segments, no decoding), so a path routed to an endpoint has its group.
pub(crate) async fn restrict(State(app): AppState, request: axum::extract::Request, next: Next) -> Response {
    if let Some(group) = Group::of_http_route(request.uri().path()) {
        let headers = request.headers();
        if let Err(message) = app.restrictions.check(group, |key| headers.get(key).map(HeaderValue::as_bytes)) {
            return counted(group.name(), "", json_body(StatusCode::FORBIDDEN, &json!({ "error": message })));
        }
    }
    next.run(request).await
}

fn json_body(status: StatusCode, value: &serde_json::Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

fn error_response(error: &ServeError) -> Response {
    let status = StatusCode::from_u16(error.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_body(status, &json!({ "error": error.message }));
    if status == StatusCode::TOO_MANY_REQUESTS {
        // Refused at once for load: a client may try again in a second.
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    response
}

/// Counts the response and passes it on.
fn counted(endpoint: &'static str, model: &str, response: Response) -> Response {
    count("http", endpoint, model, http_code(response.status()));
    response
}

/// The model label of a request: its name when the model exists, else empty.
fn label<'a>(app: &App, name: &'a str) -> &'a str {
    if app.models.knows(name) {
        name
    } else {
        ""
    }
}

async fn server_metadata() -> Response {
    let body = json!({ "name": "baton", "version": env!("CARGO_PKG_VERSION"), "extensions": EXTENSIONS });
    counted("metadata", "", json_body(StatusCode::OK, &body))
}

async fn live() -> Response {
    counted("health", "", json_body(StatusCode::OK, &json!({ "live": true })))
}

async fn ready(State(app): AppState) -> Response {
    let ready = app.models.ready();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    counted("health", "", json_body(status, &json!({ "ready": ready })))
}

async fn model_metadata(state: AppState, Path(name): Path<String>) -> Response {
    model_metadata_v(state, Path((name, String::new()))).await
}

async fn model_metadata_v(State(app): AppState, Path((name, version)): Path<(String, String)>) -> Response {
    let response = match app.models.find(&name, &version) {
        Ok(model) => {
            let tensors = |list: &[crate::model::TensorMeta]| {
                list.iter()
                    .map(|t| json!({ "name": t.name, "datatype": t.datatype, "shape": t.shape }))
                    .collect::<Vec<_>>()
            };
            let body = json!({
                "name": model.name,
                "versions": model.versions,
                "platform": model.platform(),
                "inputs": tensors(&model.inputs),
                "outputs": tensors(&model.outputs),
            });
            json_body(StatusCode::OK, &body)
        }
        Err(e) => error_response(&e),
    };
    counted("metadata", label(&app, &name), response)
}

async fn model_ready(state: AppState, Path(name): Path<String>) -> Response {
    model_ready_v(state, Path((name, String::new()))).await
}

async fn model_ready_v(State(app): AppState, Path((name, version)): Path<(String, String)>) -> Response {
    let response = match app.models.model_ready(&name, &version) {
        Ok(ready) => {
            let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
            json_body(status, &json!({ "name": name, "ready": ready }))
        }
        Err(e) => error_response(&e),
    };
    counted("ready", label(&app, &name), response)
}

async fn model_stats(state: AppState, Path(name): Path<String>) -> Response {
    model_stats_v(state, Path((name, String::new()))).await
}

/// Triton's statistics extension for one model (see [`crate::stats`]).
async fn model_stats_v(State(app): AppState, Path((name, version)): Path<(String, String)>) -> Response {
    let response = match app.models.find(&name, &version) {
        Ok(model) => json_body(StatusCode::OK, &json!({ "model_stats": [Report::of(&model).to_json()] })),
        Err(e) => error_response(&e),
    };
    counted("stats", label(&app, &name), response)
}

/// Triton's statistics extension for every loaded model.
async fn all_stats(State(app): AppState) -> Response {
    let stats: Vec<_> = app.models.list().iter().map(|m| Report::of(m).to_json()).collect();
    counted("stats", "", json_body(StatusCode::OK, &json!({ "model_stats": stats })))
}

async fn model_config(state: AppState, Path(name): Path<String>) -> Response {
    model_config_v(state, Path((name, String::new()))).await
}

/// The model configuration extension: the pipeline's config, Triton-shaped.
async fn model_config_v(State(app): AppState, Path((name, version)): Path<(String, String)>) -> Response {
    let response = match app.models.find(&name, &version) {
        Ok(model) => json_body(StatusCode::OK, &model.config_json()),
        Err(e) => error_response(&e),
    };
    counted("config", label(&app, &name), response)
}

/// The body of a repository call: optional JSON (`ready` of index, `parameters` of load and unload).
fn repository_body(body: &Bytes) -> Result<serde_json::Value, ServeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| ServeError::bad(format!("malformed JSON in the repository request: {e}")))
}

/// The model repository extension's index: every model, its state and why.
async fn repository_index(State(app): AppState, body: Bytes) -> Response {
    let response = repository_body(&body).and_then(|request| {
        let ready_only = request.get("ready").and_then(|r| r.as_bool()).unwrap_or(false);
        let index = app.models.index()?;
        Ok(index
            .into_iter()
            .filter(|e| !ready_only || e.state == "READY")
            .map(|e| json!({ "name": e.name, "version": e.version, "state": e.state, "reason": e.reason }))
            .collect::<Vec<_>>())
    });
    let response = match response {
        Ok(index) => json_body(StatusCode::OK, &serde_json::Value::Array(index)),
        Err(e) => error_response(&e),
    };
    counted("repository", "", response)
}

/// A load call's `config` (JSON text) and files (`file:PATH`: base64, as tritonclient sends them).
type LoadParameters = (Option<String>, Vec<(String, Vec<u8>)>);

fn load_parameters(request: &serde_json::Value) -> Result<LoadParameters, ServeError> {
    use base64::Engine;
    let (mut config, mut files) = (None, Vec::new());
    let Some(parameters) = request.get("parameters").and_then(|p| p.as_object()) else { return Ok((None, files)) };
    for (key, value) in parameters {
        match (key.as_str(), value) {
            ("config", serde_json::Value::String(c)) => config = Some(c.clone()),
            ("config", _) => {
                return Err(ServeError::bad("the load parameter `config` must be a string (the model config as JSON)"))
            }
            (key, value) if key.starts_with("file:") => {
                let text = value.as_str().ok_or_else(|| {
                    ServeError::bad(format!("the load parameter `{key}` must be a string (the file, base64)"))
                })?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|e| ServeError::bad(format!("the load parameter `{key}` is not base64: {e}")))?;
                files.push((key["file:".len()..].to_string(), bytes));
            }
            _ => {}
        }
    }
    Ok((config, files))
}

async fn repository_load(State(app): AppState, Path(name): Path<String>, body: Bytes) -> Response {
    let checked = repository_body(&body).and_then(|r| load_parameters(&r));
    let result = match checked {
        Ok((config, files)) => app.models.api_load_files(&name, config, files).await,
        Err(e) => Err(e),
    };
    let response = match result {
        Ok(()) => json_body(StatusCode::OK, &json!({})),
        Err(e) => error_response(&e),
    };
    counted("repository", label(&app, &name), response)
}

async fn repository_unload(State(app): AppState, Path(name): Path<String>, body: Bytes) -> Response {
    let result = match repository_body(&body) {
        Ok(_) => app.models.api_unload(&name).await,
        Err(e) => Err(e),
    };
    let response = match result {
        Ok(()) => json_body(StatusCode::OK, &json!({})),
        Err(e) => error_response(&e),
    };
    counted("repository", if app.models.knows(&name) { name.as_str() } else { "" }, response)
}

/// The calls of [`UNSUPPORTED`], each answering 501 with a message naming it.
fn unsupported_routes() -> Router<Arc<App>> {
    UNSUPPORTED.iter().fold(Router::new(), |router, &(path, methods, call)| {
        let answer = move || async move { counted("unsupported", "", error_response(&ServeError::unsupported(call))) };
        let route = if methods.contains("GET") { get(answer) } else { post(answer) };
        let route = if methods.contains("GET") && methods.contains("POST") { route.post(answer) } else { route };
        router.route(path, route)
    })
}

async fn not_found(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let error = ServeError::new(
        ErrorKind::NotFound,
        format!("no such endpoint: {method} {} (see server/README.md for the calls Baton answers)", uri.path()),
    );
    counted("other", "", error_response(&error))
}

async fn method_not_allowed() -> Response {
    let body = json!({ "error": "method not allowed (infer is POST, the rest GET)" });
    counted("other", "", json_body(StatusCode::METHOD_NOT_ALLOWED, &body))
}

async fn infer(
    state: AppState,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    infer_v(state, Path((name, String::new())), headers, body).await
}

/// An infer request, through the shared flow ([`crate::flow`]).
async fn infer_v(
    State(app): AppState,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = HttpInfer { headers: &headers, body, max_body_bytes: app.max_body_bytes };
    let response = match flow::infer(&app.models, "http", &name, &version, request).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    };
    counted("infer", label(&app, &name), response)
}

/// An HTTP infer request as received: its headers and body.
struct HttpInfer<'a> {
    headers: &'a HeaderMap,
    body: Result<Bytes, BytesRejection>,
    max_body_bytes: usize,
}

/// How an HTTP infer request wants its answer.
struct HttpReply {
    /// The request's `id`, echoed.
    id: Option<String>,
    /// Per output the request names, in its order: written as binary (none named: `binary_default` for all).
    binary: Vec<bool>,
    /// The `binary_data_output` parameter.
    binary_default: bool,
}

impl Decode for HttpInfer<'_> {
    type Reply = HttpReply;

    fn decode(self, model: &Model) -> Result<Decoded<HttpReply>, ServeError> {
        let body = self.body.map_err(|rejection| body_error(&rejection, self.max_body_bytes))?;
        if let Some(encoding) = self.headers.get(header::CONTENT_ENCODING) {
            if !encoding.as_bytes().eq_ignore_ascii_case(b"identity") {
                return Err(ServeError::bad(format!(
                    "Content-Encoding {encoding:?} is not supported: send the request uncompressed"
                )));
            }
        }
        let header = |name: &str| self.headers.get(name).map(|v| v.as_bytes());
        let decoded = decode_infer_with_sequence(
            &model.name,
            &model.inputs,
            header(HEADER_LENGTH),
            header(SEQUENCE_ID_HEADER),
            &body,
        )?;
        let DecodedInfer { request, options, inputs } = decoded;
        let binary = binary_outputs(&request.outputs, options.binary_output)?;
        let reply = HttpReply { id: request.id, binary, binary_default: options.binary_output };
        let requested = request.outputs.into_iter().map(|o| o.name).collect();
        Ok(Decoded { options, inputs, requested, reply })
    }
}

/// Why a body could not be read (too large, or broken off).
fn body_error(rejection: &BytesRejection, max_body_bytes: usize) -> ServeError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ServeError::new(
            ErrorKind::TooLarge,
            format!("request body over the server's limit of {max_body_bytes} bytes (--max-body-bytes)"),
        )
    } else {
        ServeError::bad(format!("could not read the request body: {}", rejection.body_text()))
    }
}

/// Whether each requested output is to be written as binary (its
/// `binary_data` parameter, else `default`); refuses the classification extension.
fn binary_outputs(outputs: &[RequestedOutput], default: bool) -> Result<Vec<bool>, ServeError> {
    let binary = outputs
        .iter()
        .map(|o| match o.parameters.get("binary_data") {
            Some(p) => p.0.as_bool("binary_data"),
            None => Ok(default),
        })
        .collect::<Result<Vec<bool>, ServeError>>()?;
    for output in outputs {
        if let Some(p) = output.parameters.get("classification") {
            if !matches!(p.0, Param::Int(0) | Param::UInt(0)) {
                return Err(ServeError::bad(format!(
                    "output `{}`: the classification extension is not supported by Baton",
                    output.name
                )));
            }
        }
    }
    Ok(binary)
}

impl Encode for HttpReply {
    type Answer = Response;

    /// The JSON answer, with the binary outputs' bytes after it when there are any.
    /// A BYTES output holding bytes that are not UTF-8 is binary whatever was
    /// asked (JSON strings cannot carry them); BYTES are written length-prefixed.
    fn encode(self, model: &Model, outputs: Vec<PickedOutput>) -> Response {
        let binary = |o: &PickedOutput| {
            self.binary.get(o.position).copied().unwrap_or(self.binary_default) || json::needs_binary(&o.tensor)
        };
        let response = json::InferResponse {
            model_name: &model.name,
            model_version: &model.version,
            id: self.id.as_deref(),
            outputs: outputs
                .iter()
                .map(|o| OutputTensor {
                    name: &model.outputs[o.output].name,
                    datatype: datatype_name(o.tensor.dtype()),
                    shape: o.tensor.shape(),
                    parameters: binary(o).then(|| BinarySize { binary_data_size: o.tensor.wire_len() }),
                    data: (!binary(o)).then_some(TensorData(&o.tensor)),
                })
                .collect(),
        };
        let mut body = serde_json::to_vec(&response).expect("the response serializes");
        let binary_outputs: Vec<&Tensor> = outputs.iter().filter(|o| binary(o)).map(|o| &o.tensor).collect();
        if binary_outputs.is_empty() {
            return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
        }
        let json_len = body.len();
        body.reserve(binary_outputs.iter().map(|t| t.wire_len()).sum());
        for tensor in binary_outputs {
            match tensor.dtype() {
                baton::DType::Bytes => {
                    tensor.write_length_prefixed(&mut body).expect("strings under 4 GiB: the body limit bounds them")
                }
                _ => body.extend_from_slice(tensor.as_bytes()),
            }
        }
        let mut response = ([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response();
        response.headers_mut().insert(HEADER_LENGTH, HeaderValue::from(json_len));
        response
    }
}

/// An infer request's body read into tensors, before anything runs.
pub struct DecodedInfer {
    request: InferRequest,
    /// What the request's parameters ask of the runtime.
    pub options: CallOptions,
    /// The inputs, by name, in request order.
    pub inputs: Vec<(String, Tensor)>,
}

/// Reads an infer request body for a model `model` taking `model_inputs`: the
/// JSON (the whole body, or its first `header_length` bytes, the value of the
/// Inference-Header-Content-Length header, when there is one), its parameters,
/// and each input from its JSON `data` or from its `binary_data_size` bytes of
/// the binary part after the JSON. Every size a request claims (shape, binary
/// sizes, header length) is checked against the bytes it carries before any
/// tensor is allocated, so a small body cannot make the server allocate much.
pub fn decode_infer(
    model: &str,
    model_inputs: &[TensorMeta],
    header_length: Option<&[u8]>,
    body: &[u8],
) -> Result<DecodedInfer, ServeError> {
    decode_infer_with_sequence(model, model_inputs, header_length, None, body)
}

/// [`decode_infer`] of a request whose [`SEQUENCE_ID_HEADER`] is `sequence_header`
/// (see [`CallOptions::from_params_and_header`]).
pub fn decode_infer_with_sequence(
    model: &str,
    model_inputs: &[TensorMeta],
    header_length: Option<&[u8]>,
    sequence_header: Option<&[u8]>,
    body: &[u8],
) -> Result<DecodedInfer, ServeError> {
    let json_len = json_length(header_length, body.len())?;
    let request: InferRequest = serde_json::from_slice(&body[..json_len]).map_err(|e| match header_length {
        Some(_) => ServeError::bad(format!(
            "malformed JSON in the infer request's header, the first {json_len} bytes ({HEADER_LENGTH}): {e}; \
             check that {HEADER_LENGTH} is the JSON's length"
        )),
        None => ServeError::bad(format!("malformed JSON in the infer request: {e}")),
    })?;
    let params = request.parameters.iter().map(|(k, v)| (k.as_str(), v.0.clone()));
    let options = CallOptions::from_params_and_header(params, sequence_header)?;

    // Inputs: JSON `data`, or the next `binary_data_size` bytes after the JSON.
    let mut binary = &body[json_len..];
    let mut inputs = Vec::with_capacity(request.inputs.len());
    for input in &request.inputs {
        let tensor = decode_input(model, model_inputs, input, &mut binary)?;
        inputs.push((input.name.clone(), tensor));
    }
    if !binary.is_empty() {
        return Err(ServeError::bad(format!(
            "{} bytes of binary data follow the last input's (check binary_data_size)",
            binary.len()
        )));
    }
    Ok(DecodedInfer { request, options, inputs })
}

/// Bytes of JSON at the start of a body of `body_len` bytes: the value of the
/// Inference-Header-Content-Length header when there is one, else all of them.
fn json_length(header_length: Option<&[u8]>, body_len: usize) -> Result<usize, ServeError> {
    let Some(value) = header_length else {
        return Ok(body_len);
    };
    let n = std::str::from_utf8(value).ok().and_then(|v| v.trim().parse::<usize>().ok()).ok_or_else(|| {
        ServeError::bad(format!("{HEADER_LENGTH} must be a byte count, got {:?}", String::from_utf8_lossy(value)))
    })?;
    if n > body_len {
        return Err(ServeError::bad(format!("{HEADER_LENGTH} is {n} but the body has only {body_len} bytes")));
    }
    Ok(n)
}

/// One input's tensor, checked against the model's inputs: from its JSON
/// `data`, or from its `binary_data_size` bytes at the front of `binary`
/// (which then moves past them).
fn decode_input(
    model: &str,
    model_inputs: &[TensorMeta],
    input: &InputTensor,
    binary: &mut &[u8],
) -> Result<Tensor, ServeError> {
    let data = InputData { name: &input.name, datatype: &input.datatype, shape: &input.shape };
    let (meta, shape, elements) = check_input(model, model_inputs, &data)?;
    let in_input = |e: String| ServeError::bad(format!("input `{}`: {e}", input.name));
    match (input.parameters.get("binary_data_size"), &input.data) {
        (Some(size), _) => {
            let size = usize::try_from(size.0.as_u64("binary_data_size")?).unwrap_or(usize::MAX);
            if size > binary.len() {
                return Err(in_input(format!(
                    "binary_data_size is {size} but only {} bytes of binary data remain",
                    binary.len()
                )));
            }
            if meta.dtype == baton::DType::Bytes {
                let (bytes, rest) = binary.split_at(size);
                *binary = rest;
                return Tensor::from_length_prefixed(shape, bytes).map_err(|e| in_input(e.to_string()));
            }
            let expected = elements * meta.dtype.size();
            if size != expected {
                return Err(in_input(format!(
                    "binary_data_size is {size} but shape {:?} of {} takes {expected} bytes",
                    input.shape, input.datatype
                )));
            }
            let (bytes, rest) = binary.split_at(size);
            *binary = rest;
            Tensor::from_bytes(meta.dtype, shape, bytes).map_err(|e| in_input(e.to_string()))
        }
        (None, Some(data)) => {
            if data.0.len() != elements {
                return Err(ServeError::bad(format!(
                    "input `{}` has shape {:?} ({elements} elements) but its data holds {}",
                    input.name,
                    input.shape,
                    data.0.len()
                )));
            }
            json::tensor_from_data(meta.dtype, shape, data).map_err(in_input)
        }
        (None, None) => {
            Err(ServeError::bad(format!("input `{}` has neither `data` nor a binary_data_size parameter", input.name)))
        }
    }
}
