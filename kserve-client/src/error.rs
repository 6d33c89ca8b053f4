//! Errors of a call, each naming the endpoint it came from, and the kind of
//! failure (the same kinds over HTTP and gRPC, [`crate::vocabulary::ErrorKind`])
//! a caller can act on.

use std::time::Duration;

pub use crate::vocabulary::ErrorKind;

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
            Error::Server { status: Status::Http(code), .. } => ErrorKind::of_http_status(*code),
            Error::Server { status: Status::Grpc(code), .. } => ErrorKind::of_grpc_code(*code),
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
