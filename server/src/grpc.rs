//! The Open Inference Protocol (KServe v2) over gRPC, with tonic:
//! `inference.GRPCInferenceService`'s ServerLive, ServerReady, ModelReady,
//! ServerMetadata, ModelMetadata, ModelInfer and ModelStreamInfer, and
//! Triton's ModelConfig, ModelStatistics and model repository calls
//! (proto/grpc_service.proto, Triton's field numbers). ModelInfer and each
//! request of ModelStreamInfer run through the shared flow ([`crate::flow`]);
//! this module is its gRPC codec. Inputs come as
//! `raw_input_contents` (as tritonclient sends them) or typed `contents`;
//! outputs go back as `raw_output_contents`, sharing the runtime's output
//! buffers (no copy). Triton's other calls (shared memory, trace and log
//! settings) answer UNIMPLEMENTED with a message naming the call.
//!
//! ModelStreamInfer's protocol: one reader task takes the stream's requests
//! in arrival order and starts a task per request, so requests run
//! concurrently; a request of a sequence (`sequence_id`, an integer or a string) first waits until
//! the previous request of its sequence has been answered on the stream, so
//! each sequence's requests reach the runtime, and their answers the client,
//! in the order sent. Every request gets exactly one answer on the stream
//! (an error goes in `error_message`); the response stream ends when the
//! client's stream has ended and every answer is sent.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use baton::{DType, Tensor};
use baton_kserve_client::vocabulary::EXTENSIONS;
use bytes::Bytes;
use tonic::{Code, Request, Response, Status};

use crate::flow::{self, Decode, Decoded, Encode, PickedOutput};
use crate::metrics::count;
use crate::model::{self, CallOptions, InputData, Model, Models, Param, ServeError, TensorMeta, SEQUENCE_ID_HEADER};
use crate::pb;
use crate::pb::grpc_inference_service_server::GrpcInferenceService;
use crate::pb::infer_parameter::ParameterChoice;
use crate::stats::Report;

/// The service implementation.
#[derive(Clone)]
pub(crate) struct Service {
    pub models: Arc<Models>,
}

fn status(error: ServeError) -> Status {
    Status::new(error.kind.grpc_code(), error.message)
}

/// The gRPC code's canonical name, as a metrics label.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::NotFound => "NOT_FOUND",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::Unavailable => "UNAVAILABLE",
        Code::Internal => "INTERNAL",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Cancelled => "CANCELLED",
        _ => "OTHER",
    }
}

fn param(choice: &ParameterChoice) -> Param {
    match choice {
        ParameterChoice::BoolParam(b) => Param::Bool(*b),
        ParameterChoice::Int64Param(i) => Param::Int(*i),
        ParameterChoice::StringParam(s) => Param::Str(s.clone()),
        ParameterChoice::DoubleParam(d) => Param::Double(*d),
        ParameterChoice::Uint64Param(u) => Param::UInt(*u),
    }
}

/// A request's parameters, as [`CallOptions`] reads them.
fn params(request: &pb::ModelInferRequest) -> impl Iterator<Item = (&str, Param)> {
    request.parameters.iter().filter_map(|(k, p)| p.parameter_choice.as_ref().map(|c| (k.as_str(), param(c))))
}

/// A tensor's bytes owned by the tensor: a `Bytes` without copying.
struct TensorBytes(Tensor);

impl AsRef<[u8]> for TensorBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// Builds a tensor from typed `contents`, checking the element count and ranges.
fn from_contents(
    dtype: DType,
    shape: Vec<usize>,
    elements: usize,
    c: &pb::InferTensorContents,
) -> Result<Tensor, String> {
    fn narrow<S: Copy + std::fmt::Display, T: baton::Element + TryFrom<S>>(
        shape: Vec<usize>,
        values: &[S],
    ) -> Result<Tensor, String> {
        let values = values
            .iter()
            .enumerate()
            .map(|(i, &v)| T::try_from(v).map_err(|_| format!("element {i} ({v}) is out of the datatype's range")))
            .collect::<Result<Vec<T>, String>>()?;
        Tensor::from_vec(shape, values).map_err(|e| e.to_string())
    }
    let (len, field) = match dtype {
        DType::F32 => (c.fp32_contents.len(), "fp32_contents"),
        DType::F64 => (c.fp64_contents.len(), "fp64_contents"),
        DType::I64 => (c.int64_contents.len(), "int64_contents"),
        DType::I32 | DType::I16 | DType::I8 => (c.int_contents.len(), "int_contents"),
        DType::U8 | DType::U16 | DType::U32 => (c.uint_contents.len(), "uint_contents"),
        DType::U64 => (c.uint64_contents.len(), "uint64_contents"),
        DType::Bool => (c.bool_contents.len(), "bool_contents"),
        DType::Bytes => (c.bytes_contents.len(), "bytes_contents"),
        DType::F16 => return Err("FP16 tensors must come as raw_input_contents (typed contents have no FP16)".into()),
        DType::BF16 => return Err("BF16 tensors must come as raw_input_contents (typed contents have no BF16)".into()),
    };
    if len != elements {
        return Err(format!("the shape holds {elements} elements but {field} has {len}"));
    }
    let result = match dtype {
        DType::F32 => Tensor::from_slice(shape, &c.fp32_contents),
        DType::F64 => Tensor::from_slice(shape, &c.fp64_contents),
        DType::I64 => Tensor::from_slice(shape, &c.int64_contents),
        DType::I32 => Tensor::from_slice(shape, &c.int_contents),
        DType::I16 => return narrow::<i32, i16>(shape, &c.int_contents),
        DType::I8 => return narrow::<i32, i8>(shape, &c.int_contents),
        DType::U8 => return narrow::<u32, u8>(shape, &c.uint_contents),
        DType::U16 => return narrow::<u32, u16>(shape, &c.uint_contents),
        DType::U32 => Tensor::from_slice(shape, &c.uint_contents),
        DType::U64 => Tensor::from_slice(shape, &c.uint64_contents),
        DType::Bool => Tensor::from_slice(shape, &c.bool_contents),
        DType::Bytes => Tensor::from_strings(shape, &c.bytes_contents),
        DType::F16 | DType::BF16 => unreachable!("refused above"),
    };
    result.map_err(|e| e.to_string())
}

/// Whether typed contents carry any value.
fn holds_values(c: &pb::InferTensorContents) -> bool {
    let lengths = [
        c.bool_contents.len(),
        c.int_contents.len(),
        c.int64_contents.len(),
        c.uint_contents.len(),
        c.uint64_contents.len(),
        c.fp32_contents.len(),
        c.fp64_contents.len(),
        c.bytes_contents.len(),
    ];
    lengths.iter().any(|&n| n > 0)
}

/// Reads a ModelInfer request for a model `model` taking `model_inputs`: its
/// parameters, and each input from its `raw_input_contents` entry or its typed
/// `contents`. Every shape is checked against the bytes or values the request
/// carries before any tensor is allocated.
pub fn decode_infer(
    model: &str,
    model_inputs: &[TensorMeta],
    request: &pb::ModelInferRequest,
) -> Result<(CallOptions, Vec<(String, Tensor)>), ServeError> {
    decode_infer_with_sequence(model, model_inputs, request, None)
}

/// [`decode_infer`] of a request whose [`SEQUENCE_ID_HEADER`] metadata is
/// `sequence_header` (see [`CallOptions::from_params_and_header`]).
pub fn decode_infer_with_sequence(
    model: &str,
    model_inputs: &[TensorMeta],
    request: &pb::ModelInferRequest,
    sequence_header: Option<&[u8]>,
) -> Result<(CallOptions, Vec<(String, Tensor)>), ServeError> {
    let options = CallOptions::from_params_and_header(params(request), sequence_header)?;
    let raw = &request.raw_input_contents;
    if !raw.is_empty() && raw.len() != request.inputs.len() {
        return Err(ServeError::bad(format!(
            "raw_input_contents has {} entries for {} inputs: give every input's bytes there, or none",
            raw.len(),
            request.inputs.len()
        )));
    }
    let mut inputs = Vec::with_capacity(request.inputs.len());
    for (i, input) in request.inputs.iter().enumerate() {
        let data = InputData { name: &input.name, datatype: &input.datatype, shape: &input.shape };
        let (meta, shape, elements) = model::check_input(model, model_inputs, &data)?;
        if raw.get(i).is_some() && input.contents.as_ref().is_some_and(holds_values) {
            return Err(ServeError::bad(format!(
                "input `{}` has both raw_input_contents and typed contents: give its data once",
                input.name
            )));
        }
        let tensor = if let (Some(bytes), DType::Bytes) = (raw.get(i), meta.dtype) {
            Tensor::from_length_prefixed(shape, bytes)
                .map_err(|e| ServeError::bad(format!("input `{}`: raw_input_contents: {e}", input.name)))?
        } else if let Some(bytes) = raw.get(i) {
            let expected = elements * meta.dtype.size();
            if bytes.len() != expected {
                return Err(ServeError::bad(format!(
                    "input `{}`: raw_input_contents holds {} bytes but shape {:?} of {} takes {expected}",
                    input.name,
                    bytes.len(),
                    input.shape,
                    input.datatype
                )));
            }
            Tensor::from_bytes(meta.dtype, shape, bytes)
                .map_err(|e| ServeError::bad(format!("input `{}`: {e}", input.name)))?
        } else if let Some(contents) = &input.contents {
            from_contents(meta.dtype, shape, elements, contents)
                .map_err(|e| ServeError::bad(format!("input `{}`: {e}", input.name)))?
        } else {
            return Err(ServeError::bad(format!(
                "input `{}` has no data (neither contents nor raw_input_contents)",
                input.name
            )));
        };
        inputs.push((input.name.clone(), tensor));
    }
    Ok((options, inputs))
}

/// A ModelInfer request as received, with its [`SEQUENCE_ID_HEADER`] metadata when it has one.
struct GrpcInfer<'a> {
    request: pb::ModelInferRequest,
    sequence_header: Option<&'a [u8]>,
}

/// What a ModelInfer answer echoes of its request.
struct GrpcReply {
    id: String,
}

impl Decode for GrpcInfer<'_> {
    type Reply = GrpcReply;

    fn decode(self, model: &Model) -> Result<Decoded<GrpcReply>, ServeError> {
        let GrpcInfer { request, sequence_header } = self;
        let (options, inputs) = decode_infer_with_sequence(&model.name, &model.inputs, &request, sequence_header)?;
        let requested = request.outputs.into_iter().map(|o| o.name).collect();
        Ok(Decoded { options, inputs, requested, reply: GrpcReply { id: request.id } })
    }
}

impl Encode for GrpcReply {
    type Answer = pb::ModelInferResponse;

    /// The outputs as `raw_output_contents`, sharing the tensors' buffers
    /// (BYTES outputs written out length-prefixed).
    fn encode(self, model: &Model, picked: Vec<PickedOutput>) -> pb::ModelInferResponse {
        let mut outputs = Vec::with_capacity(picked.len());
        let mut raw_output_contents = Vec::with_capacity(picked.len());
        for PickedOutput { output, tensor, .. } in picked {
            outputs.push(pb::model_infer_response::InferOutputTensor {
                name: model.outputs[output].name.clone(),
                datatype: model::datatype_name(tensor.dtype()).to_string(),
                shape: tensor.shape().iter().map(|&d| d as i64).collect(),
                parameters: Default::default(),
                contents: None,
            });
            raw_output_contents.push(match tensor.dtype() {
                DType::Bytes => {
                    let mut wire = Vec::with_capacity(tensor.wire_len());
                    tensor
                        .write_length_prefixed(&mut wire)
                        .expect("strings under 4 GiB: the message limit bounds them");
                    Bytes::from(wire)
                }
                _ => Bytes::from_owner(TensorBytes(tensor)),
            });
        }
        pb::ModelInferResponse {
            model_name: model.name.clone(),
            model_version: model.version.clone(),
            id: self.id,
            parameters: Default::default(),
            outputs,
            raw_output_contents,
        }
    }
}

impl Service {
    /// Counts the answer under `endpoint` and passes it on.
    fn counted<T>(
        &self,
        endpoint: &'static str,
        model: &str,
        result: Result<T, Status>,
    ) -> Result<Response<T>, Status> {
        let label = if self.models.knows(model) { model } else { "" };
        let code = result.as_ref().map_or_else(|s| s.code(), |_| Code::Ok);
        count("grpc", endpoint, label, code_name(code));
        result.map(Response::new)
    }
}

#[tonic::async_trait]
impl GrpcInferenceService for Service {
    async fn server_live(&self, _: Request<pb::ServerLiveRequest>) -> Result<Response<pb::ServerLiveResponse>, Status> {
        self.counted("health", "", Ok(pb::ServerLiveResponse { live: true }))
    }

    async fn server_ready(
        &self,
        _: Request<pb::ServerReadyRequest>,
    ) -> Result<Response<pb::ServerReadyResponse>, Status> {
        self.counted("health", "", Ok(pb::ServerReadyResponse { ready: self.models.ready() }))
    }

    async fn model_ready(
        &self,
        request: Request<pb::ModelReadyRequest>,
    ) -> Result<Response<pb::ModelReadyResponse>, Status> {
        let r = request.into_inner();
        let result =
            self.models.model_ready(&r.name, &r.version).map(|ready| pb::ModelReadyResponse { ready }).map_err(status);
        self.counted("ready", &r.name, result)
    }

    async fn server_metadata(
        &self,
        _: Request<pb::ServerMetadataRequest>,
    ) -> Result<Response<pb::ServerMetadataResponse>, Status> {
        let response = pb::ServerMetadataResponse {
            name: "baton".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extensions: EXTENSIONS.iter().map(|e| e.to_string()).collect(),
        };
        self.counted("metadata", "", Ok(response))
    }

    async fn model_metadata(
        &self,
        request: Request<pb::ModelMetadataRequest>,
    ) -> Result<Response<pb::ModelMetadataResponse>, Status> {
        let r = request.into_inner();
        let tensors = |list: &[model::TensorMeta]| {
            list.iter()
                .map(|t| pb::model_metadata_response::TensorMetadata {
                    name: t.name.clone(),
                    datatype: t.datatype.to_string(),
                    shape: t.shape.clone(),
                })
                .collect()
        };
        let result = self
            .models
            .find(&r.name, &r.version)
            .map(|m| pb::ModelMetadataResponse {
                name: m.name.clone(),
                versions: m.versions.clone(),
                platform: m.platform().to_string(),
                inputs: tensors(&m.inputs),
                outputs: tensors(&m.outputs),
            })
            .map_err(status);
        self.counted("metadata", &r.name, result)
    }

    async fn model_infer(
        &self,
        request: Request<pb::ModelInferRequest>,
    ) -> Result<Response<pb::ModelInferResponse>, Status> {
        let sequence_header = request.metadata().get(SEQUENCE_ID_HEADER).map(|v| v.as_bytes().to_vec());
        self.infer_counted(request.into_inner(), sequence_header.as_deref()).await.map(Response::new)
    }

    type ModelStreamInferStream = Pin<
        Box<
            dyn tonic::codegen::tokio_stream::Stream<Item = Result<pb::ModelStreamInferResponse, Status>>
                + Send
                + 'static,
        >,
    >;

    async fn model_stream_infer(
        &self,
        request: Request<tonic::Streaming<pb::ModelInferRequest>>,
    ) -> Result<Response<Self::ModelStreamInferStream>, Status> {
        let inbound = request.into_inner();
        let (answers, receiver) = tokio::sync::mpsc::channel(64);
        tokio::spawn(self.clone().serve_stream(inbound, answers));
        let stream = tonic::codegen::tokio_stream::wrappers::ReceiverStream::new(receiver);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn model_config(
        &self,
        request: Request<pb::ModelConfigRequest>,
    ) -> Result<Response<pb::ModelConfigResponse>, Status> {
        let r = request.into_inner();
        let result = self
            .models
            .find(&r.name, &r.version)
            .map(|m| pb::ModelConfigResponse { config: m.config_bytes().into() })
            .map_err(status);
        self.counted("config", &r.name, result)
    }

    async fn model_statistics(
        &self,
        request: Request<pb::ModelStatisticsRequest>,
    ) -> Result<Response<pb::ModelStatisticsResponse>, Status> {
        let r = request.into_inner();
        let models = if r.name.is_empty() {
            Ok(self.models.list())
        } else {
            self.models.find(&r.name, &r.version).map(|m| vec![m])
        };
        let result = models
            .map(|models| pb::ModelStatisticsResponse {
                model_stats: models.iter().map(|m| Report::of(m).to_pb()).collect(),
            })
            .map_err(status);
        self.counted("stats", &r.name, result)
    }

    async fn repository_index(
        &self,
        request: Request<pb::RepositoryIndexRequest>,
    ) -> Result<Response<pb::RepositoryIndexResponse>, Status> {
        let r = request.into_inner();
        let result = self
            .models
            .index()
            .map(|index| pb::RepositoryIndexResponse {
                models: index
                    .into_iter()
                    .filter(|e| !r.ready || e.state == "READY")
                    .map(|e| pb::repository_index_response::ModelIndex {
                        name: e.name,
                        version: e.version,
                        state: e.state.into(),
                        reason: e.reason,
                    })
                    .collect(),
            })
            .map_err(status);
        self.counted("repository", "", result)
    }

    async fn repository_model_load(
        &self,
        request: Request<pb::RepositoryModelLoadRequest>,
    ) -> Result<Response<pb::RepositoryModelLoadResponse>, Status> {
        let r = request.into_inner();
        use pb::model_repository_parameter::ParameterChoice;
        let mut checked = Ok((None, Vec::new()));
        for (key, p) in &r.parameters {
            let Ok((config, files)) = &mut checked else { break };
            match (key.as_str(), &p.parameter_choice) {
                ("config", Some(ParameterChoice::StringParam(c))) => *config = Some(c.clone()),
                ("config", _) => {
                    checked =
                        Err(ServeError::bad("the load parameter `config` must be a string (the model config as JSON)"))
                }
                (key, Some(ParameterChoice::BytesParam(bytes))) if key.starts_with("file:") => {
                    files.push((key["file:".len()..].to_string(), bytes.to_vec()))
                }
                (key, _) if key.starts_with("file:") => {
                    checked = Err(ServeError::bad(format!("the load parameter `{key}` must be bytes (the file)")))
                }
                _ => {}
            }
        }
        let result = match checked {
            Ok((config, files)) => self.models.api_load_files(&r.model_name, config, files).await,
            Err(e) => Err(e),
        };
        self.counted("repository", &r.model_name, result.map(|()| pb::RepositoryModelLoadResponse {}).map_err(status))
    }

    async fn repository_model_unload(
        &self,
        request: Request<pb::RepositoryModelUnloadRequest>,
    ) -> Result<Response<pb::RepositoryModelUnloadResponse>, Status> {
        let r = request.into_inner();
        let result = self.models.api_unload(&r.model_name).await;
        self.counted("repository", &r.model_name, result.map(|()| pb::RepositoryModelUnloadResponse {}).map_err(status))
    }

    async fn system_shared_memory_status(
        &self,
        _: Request<pb::SystemSharedMemoryStatusRequest>,
    ) -> Result<Response<pb::SystemSharedMemoryStatusResponse>, Status> {
        self.unsupported("SystemSharedMemoryStatus (system shared memory)")
    }

    async fn system_shared_memory_register(
        &self,
        _: Request<pb::SystemSharedMemoryRegisterRequest>,
    ) -> Result<Response<pb::SystemSharedMemoryRegisterResponse>, Status> {
        self.unsupported("SystemSharedMemoryRegister (system shared memory)")
    }

    async fn system_shared_memory_unregister(
        &self,
        _: Request<pb::SystemSharedMemoryUnregisterRequest>,
    ) -> Result<Response<pb::SystemSharedMemoryUnregisterResponse>, Status> {
        self.unsupported("SystemSharedMemoryUnregister (system shared memory)")
    }

    async fn cuda_shared_memory_status(
        &self,
        _: Request<pb::CudaSharedMemoryStatusRequest>,
    ) -> Result<Response<pb::CudaSharedMemoryStatusResponse>, Status> {
        self.unsupported("CudaSharedMemoryStatus (CUDA shared memory)")
    }

    async fn cuda_shared_memory_register(
        &self,
        _: Request<pb::CudaSharedMemoryRegisterRequest>,
    ) -> Result<Response<pb::CudaSharedMemoryRegisterResponse>, Status> {
        self.unsupported("CudaSharedMemoryRegister (CUDA shared memory)")
    }

    async fn cuda_shared_memory_unregister(
        &self,
        _: Request<pb::CudaSharedMemoryUnregisterRequest>,
    ) -> Result<Response<pb::CudaSharedMemoryUnregisterResponse>, Status> {
        self.unsupported("CudaSharedMemoryUnregister (CUDA shared memory)")
    }

    async fn trace_setting(
        &self,
        _: Request<pb::TraceSettingRequest>,
    ) -> Result<Response<pb::TraceSettingResponse>, Status> {
        self.unsupported("TraceSetting (trace settings)")
    }

    async fn log_settings(
        &self,
        _: Request<pb::LogSettingsRequest>,
    ) -> Result<Response<pb::LogSettingsResponse>, Status> {
        self.unsupported("LogSettings (log settings)")
    }
}

/// The `sequence_id` of a request, when it has a non-zero one, and whether it ends its sequence.
fn sequence_of(request: &pb::ModelInferRequest) -> Option<(crate::sequence_ids::SequenceId, bool)> {
    let options = CallOptions::from_params(params(request)).ok()?;
    options.sequence.map(|s| (s.id, s.end))
}

type StreamAnswers = tokio::sync::mpsc::Sender<Result<pb::ModelStreamInferResponse, Status>>;

impl Service {
    /// One inference, timed, counted and answered as ModelInfer answers it;
    /// `sequence_header`: its [`SEQUENCE_ID_HEADER`] metadata, when it has one.
    async fn infer_counted(
        &self,
        mut request: pb::ModelInferRequest,
        sequence_header: Option<&[u8]>,
    ) -> Result<pb::ModelInferResponse, Status> {
        let name = std::mem::take(&mut request.model_name);
        let version = std::mem::take(&mut request.model_version);
        let request = GrpcInfer { request, sequence_header };
        let result = flow::infer(&self.models, "grpc", &name, &version, request).await.map_err(status);
        self.counted("infer", &name, result).map(Response::into_inner)
    }

    /// Answers a call Baton does not support, naming it.
    fn unsupported<T>(&self, call: &str) -> Result<Response<T>, Status> {
        self.counted("unsupported", "", Err(status(ServeError::unsupported(call))))
    }

    /// ModelStreamInfer's reader (see the module docs for the protocol).
    async fn serve_stream(self, mut inbound: tonic::Streaming<pb::ModelInferRequest>, answers: StreamAnswers) {
        // Per open sequence: resolves once its latest request has been answered.
        let mut previous: HashMap<crate::sequence_ids::SequenceId, tokio::sync::oneshot::Receiver<()>> = HashMap::new();
        loop {
            let request = match inbound.message().await {
                Ok(Some(request)) => request,
                Ok(None) => break,
                Err(e) => {
                    let _ = answers.send(Err(e)).await;
                    break;
                }
            };
            let (answered, answered_rx) = tokio::sync::oneshot::channel::<()>();
            let before = match sequence_of(&request) {
                Some((id, end)) => {
                    let before = previous.remove(&id);
                    if !end {
                        previous.insert(id, answered_rx);
                    }
                    before
                }
                None => None,
            };
            let (service, answers) = (self.clone(), answers.clone());
            tokio::spawn(async move {
                if let Some(before) = before {
                    let _ = before.await;
                }
                let id = request.id.clone();
                let answer = match service.infer_counted(request, None).await {
                    Ok(response) => {
                        pb::ModelStreamInferResponse { error_message: String::new(), infer_response: Some(response) }
                    }
                    Err(e) => pb::ModelStreamInferResponse {
                        error_message: e.message().to_string(),
                        infer_response: Some(pb::ModelInferResponse { id, ..Default::default() }),
                    },
                };
                let _ = answers.send(Ok(answer)).await;
                drop(answered);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(f: impl FnOnce(&mut pb::InferTensorContents)) -> pb::InferTensorContents {
        let mut c = pb::InferTensorContents::default();
        f(&mut c);
        c
    }

    #[test]
    fn unsigned_contents_become_typed_tensors() {
        let c = contents(|c| c.uint_contents = vec![0, 65535]);
        let t = from_contents(DType::U16, vec![2], 2, &c).unwrap();
        assert_eq!(t.as_slice::<u16>().unwrap(), &[0, 65535]);
        let c = contents(|c| c.uint_contents = vec![u32::MAX, 3]);
        let t = from_contents(DType::U32, vec![2], 2, &c).unwrap();
        assert_eq!(t.as_slice::<u32>().unwrap(), &[u32::MAX, 3]);
        let c = contents(|c| c.uint64_contents = vec![u64::MAX]);
        let t = from_contents(DType::U64, vec![1], 1, &c).unwrap();
        assert_eq!(t.as_slice::<u64>().unwrap(), &[u64::MAX]);
    }

    #[test]
    fn unsigned_contents_out_of_range_or_in_the_wrong_field_are_named() {
        let c = contents(|c| c.uint_contents = vec![1, 65536]);
        let e = from_contents(DType::U16, vec![2], 2, &c).unwrap_err();
        assert_eq!(e, "element 1 (65536) is out of the datatype's range");
        let c = contents(|c| c.uint_contents = vec![1]);
        let e = from_contents(DType::U64, vec![1], 1, &c).unwrap_err();
        assert_eq!(e, "the shape holds 1 elements but uint64_contents has 0");
        let e = from_contents(DType::BF16, vec![1], 1, &contents(|c| c.fp32_contents = vec![1.0])).unwrap_err();
        assert!(e.contains("BF16 tensors must come as raw_input_contents"), "{e}");
    }
}
