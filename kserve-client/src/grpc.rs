//! The protocol over gRPC: tonic's client generated from the server's proto,
//! on one shared HTTP/2 connection ([`crate::conn::Http2Conn`]). Inputs go as
//! `raw_input_contents`; outputs are read from `raw_output_contents`, or from
//! typed `contents` when a server sends those. Each call carries the
//! deadline as `grpc-timeout` and is also cut off locally when it passes.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use tonic::metadata::MetadataValue;

use crate::conn::{Connector, H2Service, Http2Conn, SendError};
use crate::pb::grpc_inference_service_client::GrpcInferenceServiceClient;
use crate::pb::infer_parameter::ParameterChoice;
use crate::pb::{self, InferParameter};
use crate::tensor::bytes_from_contents;
use crate::{
    ClientOptions, Error, InferRequest, InferResponse, ModelMetadata, ServerUrl, Status, Tensor, TensorMetadata,
    SEQUENCE_ID_HEADER,
};

pub(crate) struct GrpcClient {
    url: ServerUrl,
    options: ClientOptions,
    conn: Http2Conn,
    origin: tonic::codegen::http::Uri,
}

impl GrpcClient {
    pub fn new(url: ServerUrl, options: ClientOptions, connector: Connector) -> Self {
        let conn = Http2Conn::new(connector);
        let origin = format!("http://{}", url.authority).parse().expect("HOST:PORT was checked");
        GrpcClient { url, options, conn, origin }
    }

    pub fn url(&self) -> &ServerUrl {
        &self.url
    }

    /// Runs `rpc` on the connection within the client's deadline, mapping failures to errors naming `method`.
    async fn call<T, R, F, Fut>(&self, method: &str, message: T, rpc: F) -> Result<tonic::Response<R>, Error>
    where
        F: FnOnce(GrpcInferenceServiceClient<H2Service>, tonic::Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        self.call_within(method, message, self.options.timeout, rpc).await
    }

    /// Runs `rpc` within `deadline` (sent as `grpc-timeout` too).
    async fn call_within<T, R, F, Fut>(
        &self,
        method: &str,
        message: T,
        deadline: Duration,
        rpc: F,
    ) -> Result<tonic::Response<R>, Error>
    where
        F: FnOnce(GrpcInferenceServiceClient<H2Service>, tonic::Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        let endpoint = format!("{} {method}", self.url);
        let attempt = async {
            let service = self.conn.sender().await.map_err(|e| match e {
                SendError::Connect(message) | SendError::Transport(message) => {
                    Error::Connect { endpoint: endpoint.clone(), message }
                }
            })?;
            let client = GrpcInferenceServiceClient::with_origin(service, self.origin.clone())
                .max_decoding_message_size(usize::MAX)
                .max_encoding_message_size(usize::MAX);
            let mut request = tonic::Request::new(message);
            request.set_timeout(deadline);
            rpc(client, request).await.map_err(|status| status_error(&endpoint, status))
        };
        match tokio::time::timeout(deadline, attempt).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout { endpoint, deadline }),
        }
    }

    pub async fn server_live(&self) -> Result<bool, Error> {
        let r =
            self.call("ServerLive", pb::ServerLiveRequest {}, |mut c, r| async move { c.server_live(r).await }).await;
        Ok(r?.into_inner().live)
    }

    pub async fn server_ready(&self) -> Result<bool, Error> {
        let r = self
            .call("ServerReady", pb::ServerReadyRequest {}, |mut c, r| async move { c.server_ready(r).await })
            .await;
        Ok(r?.into_inner().ready)
    }

    pub async fn model_metadata(&self, model: &str) -> Result<ModelMetadata, Error> {
        let message = pb::ModelMetadataRequest { name: model.to_string(), version: String::new() };
        let r = self.call("ModelMetadata", message, |mut c, r| async move { c.model_metadata(r).await }).await?;
        let m = r.into_inner();
        let tensors = |list: Vec<pb::model_metadata_response::TensorMetadata>| {
            list.into_iter().map(|t| TensorMetadata { name: t.name, datatype: t.datatype, shape: t.shape }).collect()
        };
        Ok(ModelMetadata {
            name: m.name,
            versions: m.versions,
            platform: m.platform,
            inputs: tensors(m.inputs),
            outputs: tensors(m.outputs),
        })
    }

    pub async fn infer(&self, request: &InferRequest) -> Result<InferResponse, Error> {
        let message = encode_infer(request);
        let sequence = request.sequence.map(|s| MetadataValue::from(s.id));
        let deadline = request.timeout.unwrap_or(self.options.timeout);
        let r = self
            .call_within("ModelInfer", message, deadline, |mut c, mut r| async move {
                if let Some(id) = sequence {
                    r.metadata_mut().insert(SEQUENCE_ID_HEADER, id);
                }
                c.model_infer(r).await
            })
            .await?;
        decode_answer(r.into_inner())
            .map_err(|message| Error::Protocol { endpoint: format!("{} ModelInfer", self.url), message })
    }
}

/// A failed call's status as an error: a broken connection is told apart from the server's answer.
fn status_error(endpoint: &str, status: tonic::Status) -> Error {
    let transport = std::error::Error::source(&status).is_some_and(|s| s.downcast_ref::<hyper::Error>().is_some());
    if transport {
        return Error::Transport { endpoint: endpoint.to_string(), message: status.to_string() };
    }
    Error::Server {
        endpoint: endpoint.to_string(),
        status: Status::Grpc(status.code()),
        message: status.message().to_string(),
    }
}

fn parameter(choice: ParameterChoice) -> InferParameter {
    InferParameter { parameter_choice: Some(choice) }
}

pub(crate) fn encode_infer(request: &InferRequest) -> pb::ModelInferRequest {
    let mut parameters = HashMap::new();
    if let Some(s) = request.sequence {
        parameters.insert("sequence_id".to_string(), parameter(ParameterChoice::Uint64Param(s.id)));
        parameters.insert("sequence_start".to_string(), parameter(ParameterChoice::BoolParam(s.start)));
        parameters.insert("sequence_end".to_string(), parameter(ParameterChoice::BoolParam(s.end)));
    }
    if request.priority {
        parameters.insert("priority".to_string(), parameter(ParameterChoice::Uint64Param(1)));
    }
    if let Some(t) = request.server_timeout {
        let us = t.as_micros().min(i64::MAX as u128) as i64;
        parameters.insert("timeout".to_string(), parameter(ParameterChoice::Int64Param(us)));
    }
    pb::ModelInferRequest {
        model_name: request.model.clone(),
        model_version: request.version.clone(),
        id: request.id.clone(),
        parameters,
        inputs: request
            .inputs
            .iter()
            .map(|t| pb::model_infer_request::InferInputTensor {
                name: t.name.clone(),
                datatype: t.datatype.clone(),
                shape: t.shape.clone(),
                parameters: HashMap::new(),
                contents: None,
            })
            .collect(),
        outputs: request
            .outputs
            .iter()
            .map(|name| pb::model_infer_request::InferRequestedOutputTensor {
                name: name.clone(),
                parameters: HashMap::new(),
            })
            .collect(),
        raw_input_contents: request.inputs.iter().map(|t| t.data.clone()).collect(),
    }
}

fn decode_answer(answer: pb::ModelInferResponse) -> Result<InferResponse, String> {
    let raw = answer.raw_output_contents;
    if !raw.is_empty() && raw.len() != answer.outputs.len() {
        return Err(format!("{} raw_output_contents for {} outputs", raw.len(), answer.outputs.len()));
    }
    let mut outputs = Vec::with_capacity(answer.outputs.len());
    for (i, o) in answer.outputs.into_iter().enumerate() {
        let data = match (raw.get(i), &o.contents) {
            (Some(bytes), _) => bytes.clone(),
            (None, Some(contents)) => {
                bytes_from_contents(&o.datatype, contents).map_err(|e| format!("output `{}`: {e}", o.name))?.into()
            }
            (None, None) => return Err(format!("output `{}` has no data", o.name)),
        };
        let tensor = Tensor::new(o.name, o.datatype, o.shape, data);
        tensor.check().map_err(|e| format!("output `{}`: {e}", tensor.name))?;
        outputs.push(tensor);
    }
    Ok(InferResponse { model: answer.model_name, version: answer.model_version, id: answer.id, outputs })
}
