//! Errors of a call, each naming the endpoint it came from, and the kind of
//! failure (the same kinds over HTTP and gRPC) a caller can act on.

use std::time::Duration;

/// A status a server answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Http(u16),
    Grpc(tonic::Code),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Http(code) => write!(f, "HTTP {code}"),
            Status::Grpc(code) => write!(f, "gRPC {code:?}"),
        }
    }
}

/// What went wrong, in terms a caller can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is wrong (400 / INVALID_ARGUMENT), or the client refused to send it.
    BadRequest,
    /// Unknown model, version or endpoint (404 / NOT_FOUND).
    NotFound,
    /// Over a size limit (413).
    TooLarge,
    /// The server is full (429 / RESOURCE_EXHAUSTED).
    Overloaded,
    /// A deadline passed: the server's (504 / DEADLINE_EXCEEDED) or the client's.
    Deadline,
    /// The server is shutting down or a proxy has no server for it (503 / UNAVAILABLE).
    Unavailable,
    /// The server failed (500 / INTERNAL, and other statuses).
    Internal,
    /// No connection could be made.
    Connect,
    /// The connection broke before the whole answer came.
    Transport,
    /// The answer does not follow the protocol.
    Protocol,
}

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bad server URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("{endpoint}: request not sent: {message}")]
    Request { endpoint: String, message: String },
    #[error("{endpoint}: cannot connect: {message}")]
    Connect { endpoint: String, message: String },
    #[error("{endpoint}: no answer within the deadline of {deadline:?}")]
    Timeout { endpoint: String, deadline: Duration },
    #[error("{endpoint}: {status}: {message}")]
    Server { endpoint: String, status: Status, message: String },
    #[error("{endpoint}: the connection failed before the answer came: {message}")]
    Transport { endpoint: String, message: String },
    #[error("{endpoint}: malformed answer: {message}")]
    Protocol { endpoint: String, message: String },
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Url { .. } | Error::Request { .. } => ErrorKind::BadRequest,
            Error::Connect { .. } => ErrorKind::Connect,
            Error::Timeout { .. } => ErrorKind::Deadline,
            Error::Transport { .. } => ErrorKind::Transport,
            Error::Protocol { .. } => ErrorKind::Protocol,
            Error::Server { status: Status::Http(code), .. } => match code {
                400 => ErrorKind::BadRequest,
                404 => ErrorKind::NotFound,
                413 => ErrorKind::TooLarge,
                429 => ErrorKind::Overloaded,
                503 => ErrorKind::Unavailable,
                504 => ErrorKind::Deadline,
                _ => ErrorKind::Internal,
            },
            Error::Server { status: Status::Grpc(code), .. } => match code {
                tonic::Code::InvalidArgument => ErrorKind::BadRequest,
                tonic::Code::NotFound | tonic::Code::Unimplemented => ErrorKind::NotFound,
                tonic::Code::ResourceExhausted => ErrorKind::Overloaded,
                tonic::Code::DeadlineExceeded => ErrorKind::Deadline,
                tonic::Code::Unavailable => ErrorKind::Unavailable,
                _ => ErrorKind::Internal,
            },
        }
    }

    /// The server's message (or the client's description of the failure).
    pub fn message(&self) -> &str {
        match self {
            Error::Url { reason: m, .. }
            | Error::Request { message: m, .. }
            | Error::Connect { message: m, .. }
            | Error::Server { message: m, .. }
            | Error::Transport { message: m, .. }
            | Error::Protocol { message: m, .. } => m.as_str(),
            Error::Timeout { .. } => "deadline passed",
        }
    }
}
