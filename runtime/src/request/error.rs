//! Why a request was not answered with outputs.

/// Why a request was not answered with outputs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The request's inputs do not fit the pipeline (name, dtype, shape, rows).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A batch holding this request failed in a node.
    #[error("node `{node}` failed: {message}")]
    Node { node: String, message: String },
    /// The deadline passed while the request waited in a node's queue.
    #[error("deadline exceeded while queued at node `{node}`")]
    DeadlineExceeded { node: String },
    /// The runtime is shutting down (or was shut down) and did not run the request.
    #[error("the runtime is shutting down")]
    ShuttingDown,
    /// Admission is full: too many requests in flight.
    #[error("queue full: {limit} requests already in flight (pipeline.max_in_flight)")]
    QueueFull { limit: usize },
    /// Admission is full at a node the request enters at: `limit` tasks wait there (its `max_queue`).
    #[error("queue full: node `{node}` has {limit} tasks waiting (nodes.{node}.max_queue)")]
    NodeQueueFull { node: String, limit: usize },
    /// The request's stream cannot take this chunk (not open, or closed before it ran).
    #[error("stream {id}: {message}")]
    Stream { id: u64, message: String },
    /// Opening the request's stream would pass `streams.max_state_bytes` (a capacity
    /// limit, like a full queue: the stream's own fault only in that it came last).
    #[error("stream {id}: {message}")]
    StateMemoryFull { id: u64, message: String },
    /// The ticket was dropped before the request ran.
    #[error("cancelled: the ticket was dropped")]
    Cancelled,
    /// A request split into jobs (`[fairness] granule`) failed because job
    /// `index` (its rows `start..end`) failed; `error` says why.
    #[error("job {index} (rows {start}..{end}) failed: {error}")]
    Job { index: usize, start: usize, end: usize, error: Box<RequestError> },
}
