//! A pipeline served as a model, and the protocol-independent pieces of an
//! inference (see [`crate::flow`] for their order): request parameters, input
//! checks and output selection in the protocol's terms, the runtime call, and
//! the mapping of runtime errors to the protocol's kinds of failure.

use std::time::Duration;

use baton::request::StreamChunk;
use baton::{DType, Dim, Outputs, Request, RequestError, Runtime, Tensor, TensorSpec};

use crate::flow::PickedOutput;
use crate::sequence_ids::{IdKind, Lease, Sequence, SequenceId, StringIds, STRING_KEYS};

/// What kind of failure a request met; each protocol maps it to its status
/// ([`ErrorKind::http_status`], [`ErrorKind::grpc_code`]).
pub use baton_kserve_client::vocabulary::ErrorKind;
/// The header (HTTP) or metadata key (gRPC) that carries a request's sequence
/// id, so that a proxy can keep every chunk of a stream on the replica holding
/// its state by hashing on it; the server takes the id from it too.
pub use baton_kserve_client::vocabulary::SEQUENCE_ID_HEADER;

/// Every model is served as this one version.
pub const VERSION: &str = "1";
/// The platform string of model metadata.
pub const PLATFORM: &str = "baton";

/// The protocol's name of a dtype (`FP32`, `INT64`, `BOOL`, ...).
pub fn datatype_name(dtype: DType) -> &'static str {
    dtype.kserve_name()
}

/// The dtype of a protocol datatype name, if Baton supports it.
pub fn parse_datatype(name: &str) -> Option<DType> {
    DType::from_kserve_name(name)
}

/// A failed call: its kind and a message for the client.
#[derive(Clone, Debug)]
pub struct ServeError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ServeError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ServeError { kind, message: message.into() }
    }

    pub fn bad(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadRequest, message)
    }

    /// The call `call` (as the protocol names it) is not supported.
    pub fn unsupported(call: &str) -> Self {
        Self::new(ErrorKind::Unsupported, format!("{call} is not supported by Baton"))
    }
}

impl From<RequestError> for ServeError {
    fn from(error: RequestError) -> Self {
        let kind = match &error {
            RequestError::InvalidInput(_) => ErrorKind::BadRequest,
            RequestError::QueueFull { .. } | RequestError::NodeQueueFull { .. } => ErrorKind::Overloaded,
            RequestError::DeadlineExceeded { .. } => ErrorKind::Deadline,
            RequestError::ShuttingDown => ErrorKind::Unavailable,
            // Out of state memory is a capacity limit; the other stream errors
            // (not open, closed before it ran) are the client's.
            RequestError::StateMemoryFull { .. } => ErrorKind::Overloaded,
            RequestError::Stream { .. } => ErrorKind::BadRequest,
            _ => ErrorKind::Internal,
        };
        ServeError { kind, message: error.to_string() }
    }
}

/// A request parameter's value, as either protocol carries it.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(String),
}

impl Param {
    fn describe(&self) -> String {
        match self {
            Param::Bool(b) => format!("the bool {b}"),
            Param::Int(i) => format!("the integer {i}"),
            Param::UInt(u) => format!("the integer {u}"),
            Param::Double(d) => format!("the number {d}"),
            Param::Str(s) => format!("the string {s:?}"),
        }
    }

    pub(crate) fn as_u64(&self, name: &str) -> Result<u64, ServeError> {
        match *self {
            Param::UInt(u) => Ok(u),
            Param::Int(i) if i >= 0 => Ok(i as u64),
            Param::Double(d) if d >= 0.0 && d.fract() == 0.0 && d < 1.8e19 => Ok(d as u64),
            _ => Err(ServeError::bad(format!(
                "parameter `{name}` must be a non-negative integer, got {}",
                self.describe()
            ))),
        }
    }

    pub(crate) fn as_bool(&self, name: &str) -> Result<bool, ServeError> {
        match *self {
            Param::Bool(b) => Ok(b),
            Param::Int(i) if i == 0 || i == 1 => Ok(i == 1),
            Param::UInt(u) if u <= 1 => Ok(u == 1),
            _ => Err(ServeError::bad(format!("parameter `{name}` must be a bool, got {}", self.describe()))),
        }
    }
}

/// What a request's parameters ask of the runtime.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallOptions {
    /// `priority` non-zero: a priority task.
    pub priority: bool,
    /// `priority` as a level (Triton's: 1 the most urgent, 0 the default level).
    pub priority_level: u64,
    /// `timeout`, µs (0: none): the request's deadline, from arrival.
    pub timeout: Option<Duration>,
    /// `sequence_id` (a non-zero integer, or a non-empty string) with
    /// `sequence_start` / `sequence_end`: a chunk of a stream.
    pub sequence: Option<Sequence>,
    /// `binary_data_output` (HTTP's binary tensor extension): all outputs as binary.
    pub binary_output: bool,
}

impl CallOptions {
    /// Reads the parameters Baton understands; others are ignored (custom parameters).
    pub fn from_params<'a>(params: impl IntoIterator<Item = (&'a str, Param)>) -> Result<CallOptions, ServeError> {
        Self::from_params_and_header(params, None)
    }

    /// [`CallOptions::from_params`], with `header` the value of the request's
    /// [`SEQUENCE_ID_HEADER`] when it has one: the sequence id when no
    /// `sequence_id` parameter gives one; when one does, the two must agree.
    pub fn from_params_and_header<'a>(
        params: impl IntoIterator<Item = (&'a str, Param)>,
        header: Option<&[u8]>,
    ) -> Result<CallOptions, ServeError> {
        let mut options = CallOptions::default();
        let (mut id, mut start, mut end) = (None, false, false);
        for (name, value) in params {
            match name {
                "priority" => {
                    options.priority_level = match value {
                        Param::Bool(b) => u64::from(b),
                        other => other.as_u64(name)?,
                    };
                    options.priority = options.priority_level != 0;
                }
                "timeout" => {
                    let us = value.as_u64(name)?;
                    options.timeout = (us > 0).then(|| Duration::from_micros(us));
                }
                "sequence_id" => {
                    id = Some(match value {
                        Param::Str(s) if s.is_empty() => SequenceId::Int(0),
                        Param::Str(s) => SequenceId::Str(s),
                        other => SequenceId::Int(other.as_u64(name)?),
                    })
                }
                "sequence_start" => start = value.as_bool(name)?,
                "sequence_end" => end = value.as_bool(name)?,
                "binary_data_output" => options.binary_output = value.as_bool(name)?,
                _ => {}
            }
        }
        if let Some(value) = header {
            let from_header = header_id(value)?;
            match id {
                Some(param) if param != from_header => {
                    return Err(ServeError::bad(format!(
                        "header {SEQUENCE_ID_HEADER} ({from_header}) and parameter sequence_id ({param}) disagree"
                    )));
                }
                _ => id = Some(from_header),
            }
        }
        match id {
            Some(SequenceId::Int(0)) | None if start || end => {
                Err(ServeError::bad("sequence_start / sequence_end need a non-zero sequence_id"))
            }
            Some(SequenceId::Int(0)) | None => Ok(options),
            Some(id) => {
                options.sequence = Some(Sequence { id, start, end });
                Ok(options)
            }
        }
    }
}

/// The sequence id a [`SEQUENCE_ID_HEADER`] value gives: an unsigned integer
/// when it reads as one, else the (trimmed, non-empty UTF-8) string.
fn header_id(value: &[u8]) -> Result<SequenceId, ServeError> {
    let text = std::str::from_utf8(value).map(str::trim).ok().filter(|v| !v.is_empty() && *v != "0");
    let text = text.ok_or_else(|| {
        ServeError::bad(format!(
            "header {SEQUENCE_ID_HEADER} must be a non-zero unsigned integer or a non-empty string, got {:?}",
            String::from_utf8_lossy(value)
        ))
    })?;
    Ok(text.parse::<u64>().map_or_else(|_| SequenceId::Str(text.to_string()), SequenceId::Int))
}

/// One model tensor as the protocol's metadata shows it.
#[derive(Clone, Debug)]
pub struct TensorMeta {
    pub name: String,
    pub dtype: DType,
    pub datatype: &'static str,
    /// -1 for a dynamic dimension.
    pub shape: Vec<i64>,
    spec: TensorSpec,
}

impl TensorMeta {
    pub fn new(spec: &TensorSpec) -> Self {
        TensorMeta {
            name: spec.name.clone(),
            dtype: spec.dtype,
            datatype: datatype_name(spec.dtype),
            shape: spec
                .shape
                .iter()
                .map(|d| match d {
                    Dim::Fixed(n) => *n as i64,
                    Dim::Dynamic(_) => -1,
                })
                .collect(),
            spec: spec.clone(),
        }
    }
}

/// One input as it arrived, before it becomes a tensor.
pub struct InputData<'a> {
    pub name: &'a str,
    pub datatype: &'a str,
    pub shape: &'a [i64],
}

/// Checks an input's name, datatype and shape against the inputs of model `model`;
/// returns the model input, its concrete shape and the element count. A shape
/// whose size overflows or passes [`baton::tensor::MAX_TENSOR_BYTES`] is refused
/// here, before anything is allocated for it.
pub fn check_input<'m>(
    model: &str,
    inputs: &'m [TensorMeta],
    input: &InputData,
) -> Result<(&'m TensorMeta, Vec<usize>, usize), ServeError> {
    let Some(meta) = inputs.iter().find(|m| m.name == input.name) else {
        let known: Vec<&str> = inputs.iter().map(|m| m.name.as_str()).collect();
        return Err(ServeError::bad(format!(
            "unknown input `{}` for model `{model}` (it takes: {})",
            input.name,
            known.join(", ")
        )));
    };
    if input.datatype != meta.datatype {
        let hint = if parse_datatype(input.datatype).is_none() { " (not a datatype Baton supports)" } else { "" };
        return Err(ServeError::bad(format!(
            "input `{}` has datatype {}{hint} but model `{model}` takes {}",
            input.name, input.datatype, meta.datatype
        )));
    }
    let shape = input.shape.iter().map(|&d| usize::try_from(d)).collect::<Result<Vec<usize>, _>>().map_err(|_| {
        ServeError::bad(format!("input `{}` has a negative dimension in {:?}", input.name, input.shape))
    })?;
    if !meta.spec.accepts(&shape) {
        return Err(ServeError::bad(format!(
            "input `{}` has shape {:?} but model `{model}` takes {:?} (-1: any size)",
            input.name, input.shape, meta.shape
        )));
    }
    let elements = baton::tensor::checked_len(&shape, meta.dtype)
        .map_err(|e| ServeError::bad(format!("input `{}`: {e}", input.name)))?;
    Ok((meta, shape, elements))
}

/// A pipeline served as a model.
pub struct Model {
    pub name: String,
    pub inputs: Vec<TensorMeta>,
    pub outputs: Vec<TensorMeta>,
    /// Its Triton-shaped configuration (derived from the pipeline).
    pub config: crate::config::ModelConfig,
    /// The server's own statistics of it (Triton's statistics extension).
    pub stats: crate::stats::ModelStats,
    /// The version this is ([`VERSION`] for a pipeline), and every version served under its name.
    pub version: String,
    pub versions: Vec<String>,
    /// A Triton model's completed config, shown instead of [`Model::config`]'s.
    pub triton: Option<std::sync::Arc<crate::triton::ShownConfig>>,
    /// A Triton model's queue policy (default deadline); none for a pipeline.
    pub policy: crate::triton::RequestPolicy,
    runtime: Runtime,
    /// The sequence ids it takes, and the stream keys of its string ids.
    id_kind: IdKind,
    string_ids: StringIds,
    /// The files a load call sent, removed when the last version holding them goes
    /// (declared after `runtime`: dropped after it, once its engines let go).
    sent: Option<std::sync::Arc<crate::fence::SentFiles>>,
}

impl Model {
    pub fn new(runtime: Runtime) -> Self {
        let spec = runtime.spec();
        Model {
            name: spec.name.clone(),
            inputs: spec.inputs.iter().map(|i| TensorMeta::new(&i.spec)).collect(),
            outputs: spec.outputs.iter().map(|o| TensorMeta::new(&o.spec)).collect(),
            config: crate::config::ModelConfig::of(spec),
            stats: crate::stats::ModelStats::default(),
            version: VERSION.to_string(),
            versions: vec![VERSION.to_string()],
            triton: None,
            policy: crate::triton::RequestPolicy::default(),
            id_kind: IdKind::Any,
            string_ids: StringIds::new(IdKind::Any, Duration::from_millis(spec.streams.idle_timeout_ms)),
            runtime,
            sent: None,
        }
    }

    /// This model, keeping the sent files it was loaded from while it lives.
    pub fn holding(mut self, sent: std::sync::Arc<crate::fence::SentFiles>) -> Self {
        self.sent = Some(sent);
        self
    }

    /// Version `version` of a Triton model, served with its completed config and queue policy.
    pub fn triton(
        runtime: Runtime,
        version: u64,
        versions: Vec<String>,
        shown: std::sync::Arc<crate::triton::ShownConfig>,
        policy: crate::triton::RequestPolicy,
    ) -> Self {
        let mut model = Model::new(runtime);
        model.config.max_batch_size = u32::try_from(shown.config.max_batch_size).unwrap_or(0);
        model.version = version.to_string();
        model.versions = versions;
        model.triton = Some(shown);
        // Control inputs are the server's to fill: metadata leaves them out and a client's are refused.
        if let Some(sequencing) = &policy.sequence {
            model.inputs.retain(|i| !sequencing.is_control(&i.name));
            model.id_kind = sequencing.id_kind();
            let idle = Duration::from_millis(model.runtime.spec().streams.idle_timeout_ms);
            model.string_ids = StringIds::new(model.id_kind, idle);
        }
        // A reshaped tensor shows (and is checked against) the config's dims, not the model's shape.
        for r in &policy.reshape {
            let list = if r.input { &mut model.inputs } else { &mut model.outputs };
            if let Some(meta) = list.iter_mut().find(|m| m.name == r.name) {
                *meta = TensorMeta::new(&r.client_spec(meta.dtype));
            }
        }
        model.policy = policy;
        model
    }

    /// The platform metadata shows: `baton` for a pipeline, the Triton config's for a Triton model.
    pub fn platform(&self) -> &str {
        self.triton.as_ref().map_or(PLATFORM, |t| t.config.platform.as_str())
    }

    /// The config the HTTP config endpoint shows (model_config.proto as JSON).
    pub fn config_json(&self) -> serde_json::Value {
        self.triton.as_ref().map_or_else(|| self.config.to_json(), |t| t.json.clone())
    }

    /// The config gRPC's ModelConfig answers, encoded (a Triton model's with every field).
    pub fn config_bytes(&self) -> Vec<u8> {
        use prost::Message;
        self.triton.as_ref().map_or_else(|| self.config.to_pb().encode_to_vec(), |t| t.config.encode_to_vec())
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub fn into_runtime(self) -> Runtime {
        self.runtime
    }

    /// Rows a request's inputs carry: the first input's first dimension when the
    /// model batches, else 1.
    pub fn rows(&self, inputs: &[(String, Tensor)]) -> u64 {
        match inputs.first() {
            Some((_, t)) if self.config.max_batch_size > 0 => t.shape().first().map_or(1, |&n| n as u64),
            _ => 1,
        }
    }

    /// Checks an input's name, datatype and shape against the model; returns the
    /// model input, its concrete shape and the element count.
    pub fn check_input(&self, input: &InputData) -> Result<(&TensorMeta, Vec<usize>, usize), ServeError> {
        check_input(&self.name, &self.inputs, input)
    }

    /// Indices of the requested outputs (all, in model order, when none are named).
    pub fn select_outputs<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<Vec<usize>, ServeError> {
        let mut selected = Vec::new();
        for name in names {
            let Some(i) = self.outputs.iter().position(|o| o.name == name) else {
                let known: Vec<&str> = self.outputs.iter().map(|m| m.name.as_str()).collect();
                return Err(ServeError::bad(format!(
                    "unknown output `{name}` for model `{}` (it gives: {})",
                    self.name,
                    known.join(", ")
                )));
            };
            if selected.contains(&i) {
                return Err(ServeError::bad(format!("output `{name}` is requested twice")));
            }
            selected.push(i);
        }
        if selected.is_empty() {
            selected = (0..self.outputs.len()).collect();
        }
        Ok(selected)
    }

    /// The selected outputs of an answer, in selection order. An output the request's
    /// inputs do not lead to (optional inputs left out) is an error when it was asked
    /// for by name (`explicit`), and left out of the answer otherwise.
    pub fn pick_outputs(
        &self,
        outputs: &Outputs,
        selected: &[usize],
        explicit: bool,
    ) -> Result<Vec<PickedOutput>, ServeError> {
        let mut picked = Vec::with_capacity(selected.len());
        for (position, &output) in selected.iter().enumerate() {
            let name = &self.outputs[output].name;
            match outputs.get(name) {
                Some(tensor) => {
                    let tensor = match self.policy.reshape.iter().find(|r| !r.input && r.name == *name) {
                        Some(r) => {
                            r.apply(tensor).map_err(|e| ServeError::new(ErrorKind::Internal, format!("output {e}")))?
                        }
                        None => tensor.clone(),
                    };
                    picked.push(PickedOutput { output, position, tensor })
                }
                None if explicit => {
                    return Err(ServeError::bad(format!(
                        "output `{name}` is not produced for this request: the optional inputs it needs were left out"
                    )));
                }
                None => {}
            }
        }
        Ok(picked)
    }

    /// The stream chunk of `sequence` (its key: the integer id, or a string id's
    /// key, leased while the request runs; see [`crate::sequence_ids`]).
    fn stream_chunk(&self, sequence: &Sequence) -> Result<(StreamChunk, Option<Lease<'_>>), ServeError> {
        let Sequence { id, start, end } = sequence;
        let mismatch = |got: &str| {
            let takes = if self.id_kind == IdKind::Str { "string" } else { "unsigned integer" };
            let corrid = self.policy.sequence.as_ref().and_then(|s| s.corrid()).unwrap_or_default();
            ServeError::bad(format!(
                "model `{}` takes {takes} sequence ids (its CORRID control input {corrid}); sequence_id {id} is {got}",
                self.name
            ))
        };
        match id {
            SequenceId::Int(_) if self.id_kind == IdKind::Str => Err(mismatch("an integer")),
            SequenceId::Str(_) if self.id_kind == IdKind::Int => Err(mismatch("a string")),
            SequenceId::Int(key) if self.id_kind == IdKind::Any && *key >= STRING_KEYS => {
                Err(ServeError::bad(format!(
                    "sequence_id {key}: model `{}` keeps integer sequence ids below {STRING_KEYS} (those above key \
                     its string sequence ids)",
                    self.name
                )))
            }
            SequenceId::Int(key) => Ok((StreamChunk { id: *key, start: *start, end: *end }, None)),
            SequenceId::Str(name) => {
                let lease = self.string_ids.lease(name, *start, *end, std::time::Instant::now()).ok_or_else(|| {
                    ServeError::bad(format!(
                        "unknown sequence {id}: this server holds no state for it; restart it from its first chunk \
                         (sequence_start)"
                    ))
                })?;
                Ok((StreamChunk { id: lease.key, start: *start, end: *end }, Some(lease)))
            }
        }
    }

    /// The string ids of open sequences this model holds (see [`crate::sequence_ids`]).
    pub fn string_sequences(&self) -> usize {
        self.string_ids.len()
    }

    /// Runs one request. Awaiting the answer; dropping the future cancels the request.
    pub async fn infer(&self, mut inputs: Vec<(String, Tensor)>, options: &CallOptions) -> Result<Outputs, ServeError> {
        let (chunk, _lease) = match &options.sequence {
            Some(sequence) => {
                let (chunk, lease) = self.stream_chunk(sequence)?;
                (Some(chunk), lease)
            }
            None => (None, None),
        };
        if let Some(sequencing) = &self.policy.sequence {
            let (Some(chunk), Some(sequence)) = (chunk, &options.sequence) else {
                return Err(ServeError::bad(format!(
                    "model `{}` is a sequence model: the request needs a non-zero sequence_id",
                    self.name
                )));
            };
            inputs.extend(sequencing.control_tensors(chunk, &sequence.id).map_err(ServeError::bad)?);
        }
        for r in self.policy.reshape.iter().filter(|r| r.input) {
            if let Some((_, tensor)) = inputs.iter_mut().find(|(name, _)| *name == r.name) {
                *tensor = r.apply(tensor).map_err(|e| ServeError::bad(format!("input {e}")))?;
            }
        }
        // Optional inputs left out: their defaults, in the model's shape (after reshaping).
        for d in &self.policy.defaults {
            if !inputs.iter().any(|(name, _)| *name == d.name) {
                let rows = self.rows(&inputs) as usize;
                inputs.push((d.name.clone(), d.fill(rows).map_err(ServeError::bad)?));
            }
        }
        let mut request = Request {
            inputs,
            priority: self.policy.levels.map_or(options.priority, |l| l.is_priority(options.priority_level)),
            deadline: None,
            stream: chunk,
            tenant: None,
            worker_kind: None,
        };
        if let Some(timeout) = self.policy.timeout(options.timeout) {
            request = request.timeout(timeout);
        }
        self.runtime.submit(request).await.map_err(|error| match (error, &options.sequence) {
            // A later chunk whose stream this server does not hold (never opened here,
            // ended, expired, or opened on a replica that is gone): its state is lost.
            (error @ RequestError::Stream { .. }, Some(sequence)) if !sequence.start => {
                let what = match &sequence.id {
                    SequenceId::Int(id) => format!("stream {id}"),
                    id @ SequenceId::Str(_) => format!("sequence {id}"),
                };
                ServeError::bad(format!(
                    "unknown {what}: this server holds no state for it; restart it from its first chunk \
                     (sequence_start) ({error})"
                ))
            }
            (error, _) => error.into(),
        })
    }
}

pub use crate::models::{InFlightPlace, Models};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatype_names_round_trip() {
        for d in DType::ALL.into_iter().chain([DType::Bytes]) {
            assert_eq!(parse_datatype(datatype_name(d)), Some(d));
        }
        assert_eq!(parse_datatype("BYTES"), Some(DType::Bytes));
        assert_eq!(parse_datatype("UINT16"), Some(DType::U16));
        assert_eq!(parse_datatype("BF16"), Some(DType::BF16));
        assert_eq!(parse_datatype("FP8"), None);
    }

    #[test]
    fn parameters_map_to_options() {
        let o = CallOptions::from_params([
            ("priority", Param::UInt(1)),
            ("timeout", Param::Int(2500)),
            ("sequence_id", Param::Int(7)),
            ("sequence_start", Param::Bool(true)),
            ("custom", Param::Str("x".into())),
        ])
        .unwrap();
        assert!(o.priority);
        assert_eq!(o.priority_level, 1);
        assert_eq!(o.timeout, Some(Duration::from_micros(2500)));
        assert_eq!(o.sequence, Some(Sequence { id: SequenceId::Int(7), start: true, end: false }));
        let o =
            CallOptions::from_params([("sequence_id", Param::Str("abc".into())), ("sequence_end", Param::Bool(true))])
                .unwrap();
        assert_eq!(o.sequence, Some(Sequence { id: SequenceId::Str("abc".into()), start: false, end: true }));
        assert_eq!(CallOptions::from_params([("sequence_id", Param::Str(String::new()))]).unwrap().sequence, None);
        assert!(CallOptions::from_params([("sequence_end", Param::Bool(true))]).is_err());
        assert!(CallOptions::from_params([("timeout", Param::Int(-1))]).is_err());
        assert_eq!(CallOptions::from_params([("priority", Param::Int(0))]).unwrap(), CallOptions::default());
    }

    #[test]
    fn the_sequence_header_gives_the_id_and_must_agree_with_the_parameter() {
        let header = |params: Vec<(&'static str, Param)>, value: &str| {
            CallOptions::from_params_and_header(params, Some(value.as_bytes()))
        };
        let o = header(vec![("sequence_start", Param::Bool(true))], "42").unwrap();
        assert_eq!(o.sequence, Some(Sequence { id: SequenceId::Int(42), start: true, end: false }));
        let o = header(vec![("sequence_id", Param::UInt(42))], " 42 ").unwrap();
        assert_eq!(o.sequence, Some(Sequence { id: SequenceId::Int(42), start: false, end: false }));
        let e = header(vec![("sequence_id", Param::UInt(7))], "42").unwrap_err();
        assert!(e.message.contains("(42) and parameter sequence_id (7) disagree"), "{}", e.message);
        let o = header(vec![("sequence_id", Param::Str("abc".into()))], "abc").unwrap();
        assert_eq!(o.sequence.map(|s| s.id), Some(SequenceId::Str("abc".into())));
        let e = header(vec![("sequence_id", Param::Str("abc".into()))], "42").unwrap_err();
        assert!(e.message.contains("(42) and parameter sequence_id (\"abc\") disagree"), "{}", e.message);
        for bad in ["0", " ", ""] {
            let e = header(vec![], bad).unwrap_err();
            assert!(e.message.contains(SEQUENCE_ID_HEADER), "{}", e.message);
        }
    }

    #[test]
    fn runtime_errors_map_to_kinds() {
        let kind = |e: RequestError| ServeError::from(e).kind;
        assert_eq!(kind(RequestError::QueueFull { limit: 1 }), ErrorKind::Overloaded);
        assert_eq!(kind(RequestError::InvalidInput("x".into())), ErrorKind::BadRequest);
        assert_eq!(kind(RequestError::DeadlineExceeded { node: "n".into() }), ErrorKind::Deadline);
        assert_eq!(kind(RequestError::ShuttingDown), ErrorKind::Unavailable);
        assert_eq!(kind(RequestError::Node { node: "n".into(), message: "m".into() }), ErrorKind::Internal);
        let memory = RequestError::StateMemoryFull { id: 1, message: "out of state memory at node `n`: ...".into() };
        assert_eq!(kind(memory), ErrorKind::Overloaded);
        assert_eq!(kind(RequestError::Stream { id: 1, message: "not open".into() }), ErrorKind::BadRequest);
    }
}
