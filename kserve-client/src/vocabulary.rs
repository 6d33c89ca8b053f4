//! The Open Inference Protocol's (KServe v2) words, in one place for both
//! ends of it: this client, the server (`baton-server`) and the remote engine
//! (`baton-engines`). The kinds of failure and their HTTP statuses and gRPC
//! codes, the datatype names and sizes, the protocol extensions, and the
//! headers and parameters Baton reads and writes.

/// What kind of failure a call met, over either protocol: a server maps its
/// failures to a kind and the kind to a status ([`ErrorKind::http_status`],
/// [`ErrorKind::grpc_code`]); a client maps the status it got back to a kind
/// ([`ErrorKind::of_http_status`], [`ErrorKind::of_grpc_code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Malformed request, unknown tensor, wrong datatype or shape, bad
    /// parameter (400 / INVALID_ARGUMENT); or a client refused to send it.
    BadRequest,
    /// Unknown model, version or endpoint (404 / NOT_FOUND).
    NotFound,
    /// Body over the size limit (413 / RESOURCE_EXHAUSTED).
    TooLarge,
    /// The server is full: an in-flight bound (a pipeline's `max_in_flight`,
    /// the server's `--max-in-flight`) or stream state memory (429 / RESOURCE_EXHAUSTED).
    Overloaded,
    /// A deadline passed: the request's `timeout` while it was queued
    /// (504 / DEADLINE_EXCEEDED), or a client's own deadline.
    Deadline,
    /// The server is shutting down, or a proxy has no server for it (503 / UNAVAILABLE).
    Unavailable,
    /// The server failed, e.g. a node failed running the batch (500 / INTERNAL,
    /// and any status without a kind of its own).
    Internal,
    /// A call of the protocol (or of Triton's extensions) the server does not
    /// support, named in the message (501 / UNIMPLEMENTED).
    Unsupported,
    /// Client side: no connection could be made.
    Connect,
    /// Client side: the connection broke before the whole answer came.
    Transport,
    /// Client side: the answer does not follow the protocol.
    Protocol,
}

impl ErrorKind {
    /// The HTTP status a server answers this kind with. The client-side kinds
    /// are what a gateway answers when the server behind it failed so (502).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::BadRequest => 400,
            ErrorKind::NotFound => 404,
            ErrorKind::TooLarge => 413,
            ErrorKind::Overloaded => 429,
            ErrorKind::Deadline => 504,
            ErrorKind::Unavailable => 503,
            ErrorKind::Internal => 500,
            ErrorKind::Unsupported => 501,
            ErrorKind::Connect | ErrorKind::Transport | ErrorKind::Protocol => 502,
        }
    }

    /// The gRPC code a server answers this kind with (the client-side kinds as for [`ErrorKind::http_status`]).
    pub fn grpc_code(self) -> tonic::Code {
        use tonic::Code;
        match self {
            ErrorKind::BadRequest => Code::InvalidArgument,
            ErrorKind::NotFound => Code::NotFound,
            ErrorKind::TooLarge | ErrorKind::Overloaded => Code::ResourceExhausted,
            ErrorKind::Deadline => Code::DeadlineExceeded,
            ErrorKind::Unavailable | ErrorKind::Connect | ErrorKind::Transport => Code::Unavailable,
            ErrorKind::Internal | ErrorKind::Protocol => Code::Internal,
            ErrorKind::Unsupported => Code::Unimplemented,
        }
    }

    /// The kind of an HTTP error status a server answered.
    pub fn of_http_status(status: u16) -> ErrorKind {
        match status {
            400 => ErrorKind::BadRequest,
            404 => ErrorKind::NotFound,
            413 => ErrorKind::TooLarge,
            429 => ErrorKind::Overloaded,
            503 => ErrorKind::Unavailable,
            504 => ErrorKind::Deadline,
            _ => ErrorKind::Internal,
        }
    }

    /// The kind of a gRPC error code a server answered (UNIMPLEMENTED reads as
    /// NOT_FOUND: an endpoint the server does not have).
    pub fn of_grpc_code(code: tonic::Code) -> ErrorKind {
        use tonic::Code;
        match code {
            Code::InvalidArgument => ErrorKind::BadRequest,
            Code::NotFound | Code::Unimplemented => ErrorKind::NotFound,
            Code::ResourceExhausted => ErrorKind::Overloaded,
            Code::DeadlineExceeded => ErrorKind::Deadline,
            Code::Unavailable => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        }
    }
}

/// One datatype of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datatype {
    /// Its name on the wire (`FP32`).
    pub name: &'static str,
    /// Bytes per element.
    pub size: usize,
    /// Triton's model configuration `DataType` name (`TYPE_FP32`).
    pub config_type: &'static str,
}

/// `NAME SIZE, ...` as [`Datatype`]s, each with Triton's `TYPE_NAME`.
macro_rules! datatypes {
    ($($name:ident $size:literal),* $(,)?) => {
        [$(Datatype { name: stringify!($name), size: $size, config_type: concat!("TYPE_", stringify!($name)) }),*]
    };
}

/// The protocol's fixed-size datatypes (`BYTES`, variable-sized, is not among
/// them). Baton's tensors carry those `baton::DType::kserve_name` names; a
/// client may send the others.
pub const DATATYPES: [Datatype; 13] = datatypes![
    BOOL 1, UINT8 1, INT8 1, UINT16 2, INT16 2, FP16 2, BF16 2, UINT32 4, INT32 4, FP32 4, UINT64 8, INT64 8, FP64 8
];

/// The datatype named `name`, if it is a fixed-size one.
pub fn datatype(name: &str) -> Option<Datatype> {
    DATATYPES.into_iter().find(|d| d.name == name)
}

/// The variable-sized datatype: byte strings, each carried on the wire (binary
/// tensor data, `raw_input_contents`) as a 4-byte little-endian length and its bytes.
pub const BYTES: &str = "BYTES";

/// Triton's model configuration name for [`BYTES`].
pub const BYTES_CONFIG_TYPE: &str = "TYPE_STRING";

/// Triton's model configuration `DataType` name of a datatype (`FP32` → `TYPE_FP32`, `BYTES` → `TYPE_STRING`).
pub fn config_type(name: &str) -> Option<&'static str> {
    match name {
        BYTES => Some(BYTES_CONFIG_TYPE),
        _ => datatype(name).map(|d| d.config_type),
    }
}

/// The datatype whose model configuration name is `config_type` (the reverse of [`config_type`]).
pub fn of_config_type(config_type: &str) -> Option<&'static str> {
    match config_type {
        BYTES_CONFIG_TYPE => Some(BYTES),
        _ => DATATYPES.iter().find(|d| d.config_type == config_type).map(|d| d.name),
    }
}

/// Bytes per element of a datatype (`None`: BYTES or unknown).
pub fn element_size(name: &str) -> Option<usize> {
    datatype(name).map(|d| d.size)
}

/// The protocol extensions Baton's server implements (over both protocols),
/// as server metadata lists them.
pub const EXTENSIONS: [&str; 6] =
    ["binary_tensor_data", "parameters", "sequence", "statistics", "model_configuration", "model_repository"];

/// The header (and gRPC metadata key) carrying a request's sequence id, for
/// proxies that keep a stream's chunks on one replica by hashing on it. The
/// server reads it too (and refuses a request whose parameter disagrees).
pub const SEQUENCE_ID_HEADER: &str = "baton-sequence-id";

/// The binary tensor data extension's header: bytes of JSON before the binary tensors.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_baton_dtype_is_a_datatype_of_its_size() {
        for dtype in baton::DType::ALL {
            assert_eq!(element_size(dtype.kserve_name()), Some(dtype.size()), "{dtype:?}");
            let config = datatype(dtype.kserve_name()).map(|d| d.config_type);
            assert_eq!(config, Some(format!("TYPE_{}", dtype.kserve_name())).as_deref());
        }
        assert_eq!(element_size("BYTES"), None);
        assert_eq!(baton::DType::from_kserve_name(BYTES), Some(baton::DType::Bytes));
    }

    #[test]
    fn config_type_names_round_trip_bytes_included() {
        for name in DATATYPES.iter().map(|d| d.name).chain([BYTES]) {
            assert_eq!(of_config_type(config_type(name).unwrap()), Some(name));
        }
        assert_eq!(config_type(BYTES), Some("TYPE_STRING"));
        assert_eq!(of_config_type("TYPE_BYTES"), None);
    }

    #[test]
    fn a_server_status_reads_back_as_its_kind() {
        let server_kinds = [
            ErrorKind::BadRequest,
            ErrorKind::NotFound,
            ErrorKind::Overloaded,
            ErrorKind::Deadline,
            ErrorKind::Unavailable,
            ErrorKind::Internal,
        ];
        for kind in server_kinds {
            assert_eq!(ErrorKind::of_http_status(kind.http_status()), kind);
            assert_eq!(ErrorKind::of_grpc_code(kind.grpc_code()), kind);
        }
        assert_eq!(ErrorKind::of_http_status(ErrorKind::TooLarge.http_status()), ErrorKind::TooLarge);
    }
}
