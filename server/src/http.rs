//! The Open Inference Protocol (KServe v2) over HTTP/1.1, with axum: health,
//! server and model metadata, readiness, inference with JSON tensors and
//! Triton's binary tensor data extension, and a minimal statistics endpoint.
//!
//! Errors are answered as the protocol says, `{"error": "..."}` with the
//! status of [`crate::model::ErrorKind::http_status`].

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use baton::Tensor;
use serde_json::json;

use crate::json::{self, BinarySize, InferRequest, OutputTensor, TensorData};
use crate::metrics::{count, http_code, infer_time};
use crate::model::{
    check_input, CallOptions, ErrorKind, InputData, Models, Param, ServeError, TensorMeta, PLATFORM,
    SEQUENCE_ID_HEADER, VERSION,
};

/// The binary tensor data extension's header: bytes of JSON before the binary tensors.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

/// Protocol extensions Baton implements.
pub const EXTENSIONS: [&str; 4] = ["binary_tensor_data", "parameters", "sequence", "statistics"];

/// What every handler shares.
pub(crate) struct App {
    pub models: Arc<Models>,
    pub max_body_bytes: usize,
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
        .route("/v2/models/{name}/stats", get(model_stats))
        .route("/v2/models/{name}/versions/{version}/stats", get(model_stats_v))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app)
}

fn json_body(status: StatusCode, value: &serde_json::Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

fn error_response(error: &ServeError) -> Response {
    let status = StatusCode::from_u16(error.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_body(status, &json!({ "error": error.message }))
}

/// Counts the response and passes it on.
fn counted(endpoint: &'static str, model: &str, response: Response) -> Response {
    count("http", endpoint, model, http_code(response.status()));
    response
}

/// The model label of a request: its name when the model exists, else empty.
fn label<'a>(app: &App, name: &'a str) -> &'a str {
    if app.models.get(name).is_some() {
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
    counted("health", "", StatusCode::OK.into_response())
}

async fn ready(State(app): AppState) -> Response {
    let status = if app.models.ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    counted("health", "", status.into_response())
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
                "versions": [VERSION],
                "platform": PLATFORM,
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
    let response = match app.models.find(&name, &version) {
        Ok(_) if app.models.ready() => StatusCode::OK.into_response(),
        Ok(_) => error_response(&ServeError::new(ErrorKind::Unavailable, "the server is shutting down")),
        Err(e) => error_response(&e),
    };
    counted("ready", label(&app, &name), response)
}

async fn model_stats(state: AppState, Path(name): Path<String>) -> Response {
    model_stats_v(state, Path((name, String::new()))).await
}

/// Triton's statistics extension, minimally: inference (rows) and execution
/// (batches) counts summed over the pipeline's nodes (their ratio is the mean
/// batch size), queue and compute time, and the per-node figures.
async fn model_stats_v(State(app): AppState, Path((name, version)): Path<(String, String)>) -> Response {
    let response = match app.models.find(&name, &version) {
        Ok(model) => {
            let nodes = model.runtime().node_stats();
            let sum = |f: fn(&baton::NodeStats) -> u64| nodes.iter().map(f).sum::<u64>();
            let body = json!({ "model_stats": [{
                "name": model.name,
                "version": VERSION,
                "inference_count": sum(|n| n.rows),
                "execution_count": sum(|n| n.executions),
                "inference_stats": {
                    "queue": { "count": sum(|n| n.tasks), "ns": sum(|n| n.queue_ns) },
                    "compute_infer": { "count": sum(|n| n.executions), "ns": sum(|n| n.compute_ns) },
                },
                "nodes": nodes.iter().map(|n| json!({
                    "name": n.name, "executions": n.executions, "rows": n.rows, "tasks": n.tasks,
                    "failed_batches": n.failed_batches, "queue_ns": n.queue_ns, "compute_ns": n.compute_ns,
                })).collect::<Vec<_>>(),
            }]});
            json_body(StatusCode::OK, &body)
        }
        Err(e) => error_response(&e),
    };
    counted("stats", label(&app, &name), response)
}

async fn not_found() -> Response {
    let error = ServeError::new(ErrorKind::NotFound, "no such endpoint (see the KServe v2 protocol: /v2/...)");
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

async fn infer_v(
    State(app): AppState,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let response = match run_infer(&app, &name, &version, &headers, body).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    };
    let model = label(&app, &name);
    if !model.is_empty() {
        infer_time("http", model, started.elapsed());
    }
    counted("infer", model, response)
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
    let header_len = match header_length {
        None => body.len(),
        Some(value) => {
            let n = std::str::from_utf8(value).ok().and_then(|v| v.trim().parse::<usize>().ok()).ok_or_else(|| {
                ServeError::bad(format!(
                    "{HEADER_LENGTH} must be a byte count, got {:?}",
                    String::from_utf8_lossy(value)
                ))
            })?;
            if n > body.len() {
                return Err(ServeError::bad(format!(
                    "{HEADER_LENGTH} is {n} but the body has only {} bytes",
                    body.len()
                )));
            }
            n
        }
    };
    let request: InferRequest = serde_json::from_slice(&body[..header_len])
        .map_err(|e| ServeError::bad(format!("malformed JSON in the infer request: {e}")))?;
    let params = request.parameters.iter().map(|(k, v)| (k.as_str(), v.0.clone()));
    let options = CallOptions::from_params_and_header(params, sequence_header)?;

    // Inputs: JSON `data`, or the next `binary_data_size` bytes after the JSON.
    let mut binary = &body[header_len..];
    let mut inputs = Vec::with_capacity(request.inputs.len());
    for input in &request.inputs {
        let data = InputData { name: &input.name, datatype: &input.datatype, shape: &input.shape };
        let (meta, shape, elements) = check_input(model, model_inputs, &data)?;
        let tensor = match (input.parameters.get("binary_data_size"), &input.data) {
            (Some(size), _) => {
                let size = usize::try_from(size.0.as_u64("binary_data_size")?).unwrap_or(usize::MAX);
                if size > binary.len() {
                    return Err(ServeError::bad(format!(
                        "input `{}`: binary_data_size is {size} but only {} bytes of binary data remain",
                        input.name,
                        binary.len()
                    )));
                }
                let expected = elements * meta.dtype.size();
                if size != expected {
                    return Err(ServeError::bad(format!(
                        "input `{}`: binary_data_size is {size} but shape {:?} of {} takes {expected} bytes",
                        input.name, input.shape, input.datatype
                    )));
                }
                let (bytes, rest) = binary.split_at(size);
                binary = rest;
                Tensor::from_bytes(meta.dtype, shape, bytes)
                    .map_err(|e| ServeError::bad(format!("input `{}`: {e}", input.name)))?
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
                json::tensor_from_scalars(meta.dtype, shape, &data.0)
                    .map_err(|e| ServeError::bad(format!("input `{}`: {e}", input.name)))?
            }
            (None, None) => {
                return Err(ServeError::bad(format!(
                    "input `{}` has neither `data` nor a binary_data_size parameter",
                    input.name
                )));
            }
        };
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

async fn run_infer(
    app: &App,
    name: &str,
    version: &str,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServeError> {
    let model = app.models.find(name, version)?;
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::new(
                ErrorKind::TooLarge,
                format!("request body over the server's limit of {} bytes (--max-body-bytes)", app.max_body_bytes),
            )
        } else {
            ServeError::bad(format!("could not read the request body: {}", rejection.body_text()))
        }
    })?;
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING) {
        if !encoding.as_bytes().eq_ignore_ascii_case(b"identity") {
            return Err(ServeError::bad(format!(
                "Content-Encoding {encoding:?} is not supported: send the request uncompressed"
            )));
        }
    }
    let header = |name: &str| headers.get(name).map(|v| v.as_bytes());
    let decoded = decode_infer_with_sequence(
        &model.name,
        &model.inputs,
        header(HEADER_LENGTH),
        header(SEQUENCE_ID_HEADER),
        &body,
    )?;
    let DecodedInfer { request, options, inputs } = decoded;

    // Outputs: the requested ones (all when none), each as JSON or binary.
    let selected = model.select_outputs(request.outputs.iter().map(|o| o.name.as_str()))?;
    let binary_flags = if request.outputs.is_empty() {
        vec![options.binary_output; selected.len()]
    } else {
        request
            .outputs
            .iter()
            .map(|o| match o.parameters.get("binary_data") {
                Some(p) => p.0.as_bool("binary_data"),
                None => Ok(options.binary_output),
            })
            .collect::<Result<Vec<bool>, ServeError>>()?
    };
    for output in &request.outputs {
        if let Some(p) = output.parameters.get("classification") {
            if !matches!(p.0, Param::Int(0) | Param::UInt(0)) {
                return Err(ServeError::bad(format!(
                    "output `{}`: the classification extension is not supported by Baton",
                    output.name
                )));
            }
        }
    }

    let _admitted = app.models.admit()?;
    let answer = model.infer(inputs, &options).await?;
    let picked = model.pick_outputs(&answer, &selected, !request.outputs.is_empty())?;
    let outputs: Vec<(&str, &Tensor, bool)> = picked
        .iter()
        .map(|(i, tensor)| {
            let binary = binary_flags[selected.iter().position(|s| s == i).expect("picked from selected")];
            (model.outputs[*i].name.as_str(), tensor, binary)
        })
        .collect();
    let response = json::InferResponse {
        model_name: &model.name,
        model_version: VERSION,
        id: request.id.as_deref(),
        outputs: outputs
            .iter()
            .map(|&(name, tensor, binary)| OutputTensor {
                name,
                datatype: crate::model::datatype_name(tensor.dtype()),
                shape: tensor.shape(),
                parameters: binary.then(|| BinarySize { binary_data_size: tensor.as_bytes().len() }),
                data: (!binary).then_some(TensorData(tensor)),
            })
            .collect(),
    };
    let mut body = serde_json::to_vec(&response).expect("the response serializes");
    if !outputs.iter().any(|o| o.2) {
        return Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response());
    }
    let json_len = body.len();
    body.reserve(outputs.iter().filter(|o| o.2).map(|o| o.1.as_bytes().len()).sum());
    for (_, tensor, _) in outputs.iter().filter(|o| o.2) {
        body.extend_from_slice(tensor.as_bytes());
    }
    let mut response = ([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response();
    response.headers_mut().insert(HEADER_LENGTH, HeaderValue::from(json_len));
    Ok(response)
}
