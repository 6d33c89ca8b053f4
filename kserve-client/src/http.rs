//! The protocol over HTTP/1.1: health, model metadata, and inference with the
//! binary tensor data extension both ways — the request's JSON head followed
//! by every input's bytes (`Inference-Header-Content-Length` says where the
//! head ends), and `binary_data_output` asking the same of the answer. An
//! answer with JSON `data` instead (a server that ignores the request) is read too.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use serde_json::{json, Map, Value};
use std::time::Duration;

use crate::conn::{Connector, Http1Pool, SendError};
use crate::tensor::bytes_from_json;
use crate::vocabulary::HEADER_LENGTH;
use crate::{
    ClientOptions, Error, InferRequest, InferResponse, ModelMetadata, ServerUrl, Status, Tensor, TensorMetadata,
    SEQUENCE_ID_HEADER,
};

pub(crate) struct HttpClient {
    url: ServerUrl,
    options: ClientOptions,
    pool: Http1Pool,
}

/// One answer, read whole.
struct Answer {
    status: u16,
    header_length: Option<HeaderValue>,
    body: Bytes,
}

impl HttpClient {
    pub fn new(url: ServerUrl, options: ClientOptions, connector: Connector) -> Self {
        let pool = Http1Pool::new(connector, options.max_idle);
        HttpClient { url, options, pool }
    }

    pub fn url(&self) -> &ServerUrl {
        &self.url
    }

    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// Sends one request within the client's deadline.
    async fn call(&self, request: Request<Full<Bytes>>, endpoint: &str) -> Result<Answer, Error> {
        self.call_within(request, endpoint, self.options.timeout).await
    }

    /// Sends one request within `deadline`.
    async fn call_within(
        &self,
        request: Request<Full<Bytes>>,
        endpoint: &str,
        deadline: Duration,
    ) -> Result<Answer, Error> {
        let sent = tokio::time::timeout(deadline, self.pool.send(request)).await;
        let (parts, body) = match sent {
            Err(_) => return Err(Error::Timeout { endpoint: endpoint.to_string(), deadline }),
            Ok(Err(SendError::Connect(message))) => {
                return Err(Error::Connect { endpoint: endpoint.to_string(), message });
            }
            Ok(Err(SendError::Transport(message))) => {
                return Err(Error::Transport { endpoint: endpoint.to_string(), message });
            }
            Ok(Ok(answer)) => answer,
        };
        Ok(Answer { status: parts.status.as_u16(), header_length: parts.headers.get(HEADER_LENGTH).cloned(), body })
    }

    fn request(&self, method: Method, path: &str, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body.clone()));
        *request.method_mut() = method;
        *request.uri_mut() = path.parse().expect("paths built here are valid URIs");
        let headers = request.headers_mut();
        headers.insert(HOST, HeaderValue::from_str(&self.url.authority).expect("HOST:PORT was checked"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        request
    }

    /// An error answer as an error naming the endpoint, with the server's message.
    fn server_error(endpoint: &str, answer: &Answer) -> Error {
        let message = serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&answer.body).trim().to_string());
        Error::Server { endpoint: endpoint.to_string(), status: Status::Http(answer.status), message }
    }

    pub async fn health(&self, which: &str) -> Result<bool, Error> {
        let path = format!("/v2/health/{which}");
        let endpoint = self.endpoint(&path);
        let answer = self.call(self.request(Method::GET, &path, Bytes::new()), &endpoint).await?;
        Ok(answer.status == 200)
    }

    pub async fn model_metadata(&self, model: &str) -> Result<ModelMetadata, Error> {
        let path = format!("/v2/models/{}", encode_path(model));
        let endpoint = self.endpoint(&path);
        let answer = self.call(self.request(Method::GET, &path, Bytes::new()), &endpoint).await?;
        if answer.status != 200 {
            return Err(Self::server_error(&endpoint, &answer));
        }
        let malformed = |message: String| Error::Protocol { endpoint: endpoint.clone(), message };
        let v: Value = serde_json::from_slice(&answer.body).map_err(|e| malformed(format!("not JSON: {e}")))?;
        let tensors = |key: &str| -> Result<Vec<TensorMetadata>, Error> {
            let list = v.get(key).and_then(Value::as_array).ok_or_else(|| malformed(format!("no `{key}` list")))?;
            list.iter()
                .map(|t| {
                    let name = t.get("name").and_then(Value::as_str);
                    let datatype = t.get("datatype").and_then(Value::as_str);
                    let shape = t
                        .get("shape")
                        .and_then(Value::as_array)
                        .and_then(|s| s.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>());
                    match (name, datatype, shape) {
                        (Some(n), Some(d), Some(s)) => {
                            Ok(TensorMetadata { name: n.to_string(), datatype: d.to_string(), shape: s })
                        }
                        _ => Err(malformed(format!("a `{key}` entry lacks name, datatype or shape: {t}"))),
                    }
                })
                .collect()
        };
        let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(ModelMetadata {
            name: text("name"),
            versions: v
                .get("versions")
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            platform: text("platform"),
            inputs: tensors("inputs")?,
            outputs: tensors("outputs")?,
        })
    }

    pub async fn infer(&self, request: &InferRequest) -> Result<InferResponse, Error> {
        let path = infer_path(request);
        let endpoint = self.endpoint(&path);
        let (head, body) = encode_infer(request);
        let mut http = self.request(Method::POST, &path, body);
        let headers = http.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
        headers.insert(HEADER_LENGTH, HeaderValue::from(head));
        if let Some(sequence) = request.sequence {
            headers.insert(SEQUENCE_ID_HEADER, HeaderValue::from(sequence.id));
        }
        let answer = self.call_within(http, &endpoint, request.timeout.unwrap_or(self.options.timeout)).await?;
        if answer.status != 200 {
            return Err(Self::server_error(&endpoint, &answer));
        }
        decode_answer(&answer).map_err(|message| Error::Protocol { endpoint, message })
    }
}

/// The infer endpoint's path of the request's model (and version).
pub(crate) fn infer_path(request: &InferRequest) -> String {
    if request.version.is_empty() {
        format!("/v2/models/{}/infer", encode_path(&request.model))
    } else {
        format!("/v2/models/{}/versions/{}/infer", encode_path(&request.model), encode_path(&request.version))
    }
}

/// Percent-encodes what a path segment cannot hold as is.
fn encode_path(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The request's body: its JSON head (whose length is returned too), then every input's bytes.
pub(crate) fn encode_infer(request: &InferRequest) -> (usize, Bytes) {
    let mut parameters = Map::new();
    parameters.insert("binary_data_output".into(), json!(true));
    if let Some(s) = request.sequence {
        parameters.insert("sequence_id".into(), json!(s.id));
        parameters.insert("sequence_start".into(), json!(s.start));
        parameters.insert("sequence_end".into(), json!(s.end));
    }
    if request.priority {
        parameters.insert("priority".into(), json!(1));
    }
    if let Some(t) = request.server_timeout {
        parameters.insert("timeout".into(), json!(t.as_micros().min(u64::MAX as u128) as u64));
    }
    let inputs: Vec<Value> = request
        .inputs
        .iter()
        .map(|t| {
            json!({
                "name": t.name, "shape": t.shape, "datatype": t.datatype,
                "parameters": {"binary_data_size": t.data.len()},
            })
        })
        .collect();
    let mut head = json!({ "parameters": parameters, "inputs": inputs });
    if !request.id.is_empty() {
        head["id"] = json!(request.id);
    }
    if !request.outputs.is_empty() {
        head["outputs"] =
            request.outputs.iter().map(|name| json!({"name": name, "parameters": {"binary_data": true}})).collect();
    }
    let head = serde_json::to_vec(&head).expect("JSON values serialize");
    let mut body = Vec::with_capacity(head.len() + request.inputs.iter().map(|t| t.data.len()).sum::<usize>());
    body.extend_from_slice(&head);
    for t in &request.inputs {
        body.extend_from_slice(&t.data);
    }
    (head.len(), Bytes::from(body))
}

/// Reads an infer answer: its JSON head, and each output from its binary part or its JSON `data`.
fn decode_answer(answer: &Answer) -> Result<InferResponse, String> {
    let head_len = match &answer.header_length {
        None => answer.body.len(),
        Some(v) => {
            let n = v.to_str().ok().and_then(|s| s.trim().parse::<usize>().ok());
            match n {
                Some(n) if n <= answer.body.len() => n,
                _ => return Err(format!("{HEADER_LENGTH} {v:?} does not fit a body of {} bytes", answer.body.len())),
            }
        }
    };
    let head: Value =
        serde_json::from_slice(&answer.body[..head_len]).map_err(|e| format!("the JSON head does not parse: {e}"))?;
    let mut binary = answer.body.slice(head_len..);
    let outputs = head.get("outputs").and_then(Value::as_array).ok_or("the answer has no `outputs` list")?;
    let mut tensors = Vec::with_capacity(outputs.len());
    for o in outputs {
        let name = o.get("name").and_then(Value::as_str).ok_or("an output has no name")?;
        let datatype = o.get("datatype").and_then(Value::as_str).ok_or(format!("output `{name}` has no datatype"))?;
        let shape = o
            .get("shape")
            .and_then(Value::as_array)
            .and_then(|s| s.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>())
            .ok_or(format!("output `{name}` has no integer shape"))?;
        let size = o.get("parameters").and_then(|p| p.get("binary_data_size")).and_then(Value::as_u64);
        let data = match (size, o.get("data")) {
            (Some(size), _) => {
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                if size > binary.len() {
                    return Err(format!("output `{name}`: binary_data_size {size} but {} bytes remain", binary.len()));
                }
                binary.split_to(size)
            }
            (None, Some(data)) => {
                Bytes::from(bytes_from_json(datatype, data).map_err(|e| format!("output `{name}`: {e}"))?)
            }
            (None, None) => return Err(format!("output `{name}` has neither data nor binary_data_size")),
        };
        let tensor = Tensor::new(name, datatype, shape, data);
        tensor.check().map_err(|e| format!("output `{name}`: {e}"))?;
        tensors.push(tensor);
    }
    if !binary.is_empty() {
        return Err(format!("{} bytes of binary data follow the last output's", binary.len()));
    }
    let text = |key: &str| head.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    Ok(InferResponse { model: text("model_name"), version: text("model_version"), id: text("id"), outputs: tensors })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_body_is_the_json_head_then_the_inputs_bytes() {
        let request =
            InferRequest::new("m", vec![Tensor::from_f32("x", vec![1, 2], &[1.0, 2.0])]).sequence(9, true, false);
        let (head_len, body) = encode_infer(&request);
        let head: Value = serde_json::from_slice(&body[..head_len]).unwrap();
        assert_eq!(head["inputs"][0]["parameters"]["binary_data_size"], 8);
        assert_eq!(head["parameters"]["sequence_id"], 9);
        assert_eq!(head["parameters"]["sequence_start"], true);
        assert_eq!(&body[head_len..], &request.inputs[0].data[..]);
    }

    #[test]
    fn answers_are_read_from_binary_parts_and_json_data() {
        let head = br#"{"model_name":"m","model_version":"1","outputs":[
            {"name":"a","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}},
            {"name":"b","datatype":"INT64","shape":[2],"data":[1,2]}]}"#;
        let mut body = head.to_vec();
        body.extend_from_slice(&2.5f32.to_le_bytes());
        let answer =
            Answer { status: 200, header_length: Some(HeaderValue::from(head.len())), body: Bytes::from(body.clone()) };
        let r = decode_answer(&answer).unwrap();
        assert_eq!(r.output("a").unwrap().to_f32().unwrap(), vec![2.5]);
        assert_eq!(r.output("b").unwrap().data.len(), 16);
        body.push(0);
        let extra = Answer { status: 200, header_length: Some(HeaderValue::from(head.len())), body: Bytes::from(body) };
        assert!(decode_answer(&extra).unwrap_err().contains("1 bytes of binary data follow"));
    }

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(encode_path("mlp"), "mlp");
        assert_eq!(encode_path("a b/c"), "a%20b%2Fc");
    }
}
