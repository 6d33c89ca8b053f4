//! `baton flood URL`: many connections sending requests back to back, as a
//! hostile or overeager client floods a server, with every answer's latency
//! counted under its status (`200`, `429`, `503`, `OK`, `RESOURCE_EXHAUSTED`, …).
//! wrk and h2load report one latency over all answers, so a server's fast
//! refusals hide its slow accepted answers (and the reverse); here each status
//! has its own percentiles.
//!
//! - HTTP (`http://`): `connections` HTTP/1.1 connections, each with one
//!   request outstanding, written as soon as it opens (wrk's model). A
//!   connection the server closes (a 503 past its connection cap,
//!   `Connection: close`) is opened again.
//! - gRPC (`grpc://`): `connections` HTTP/2 connections with `streams`
//!   concurrent ModelInfer calls each (h2load's `-c` and `-m`), at most the
//!   server's SETTINGS_MAX_CONCURRENT_STREAMS (as h2load), so that no call's
//!   latency holds a wait inside this client for a stream to open.
//!
//! A request's latency runs from handing it to the connection to its whole
//! answer. Every request sent is counted exactly once: under its status, or
//! under `transport error` (the connection failed under it) or
//! `client timeout` (no answer within `--request-timeout`). Connections that
//! failed to open are counted apart and are not requests.
//!
//! Protocol: each connection is one task; it stops sending once the deadline
//! passes or the `--requests` budget (one shared counter, claimed before each
//! send) is spent, and its tally is merged into the report when it ends.

mod grpc;
mod http1;
mod tally;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_kserve_client::{InferRequest, Protocol, ServerUrl};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use crate::load;
use crate::remote::{wire_tensor, ClientSettings, Remote};

pub use tally::{StatusRow, Tally};

/// What `baton flood` sends, where, and for how long.
#[derive(Clone, Debug)]
pub struct FloodOptions {
    pub url: String,
    pub model: String,
    pub connections: usize,
    /// gRPC: concurrent calls per connection.
    pub streams: usize,
    pub duration: Duration,
    /// Stop after this many requests in all (before the duration if reached).
    pub requests: Option<u64>,
    pub rows: usize,
    pub client_threads: usize,
    pub request_timeout: Duration,
}

/// A flood's outcome: requests sent and answers by status.
#[derive(Clone, Debug, Serialize)]
pub struct FloodReport {
    pub url: String,
    pub model: String,
    pub connections: usize,
    /// The most calls a connection had under way at once: `--streams`, or
    /// the server's stream limit where lower (1 over HTTP).
    pub streams: usize,
    pub seconds: f64,
    pub sent: u64,
    /// Every status seen, most frequent first.
    pub statuses: Vec<StatusRow>,
    /// Connection attempts that failed (not requests).
    pub connect_failures: u64,
    pub connections_opened: u64,
}

/// The shared stop rule: a deadline and an optional request budget.
#[derive(Debug)]
pub(crate) struct Budget {
    deadline: Instant,
    left: Option<AtomicU64>,
}

impl Budget {
    fn new(duration: Duration, requests: Option<u64>) -> Budget {
        Budget { deadline: Instant::now() + duration, left: requests.map(AtomicU64::new) }
    }

    /// Whether the deadline passed or the request budget is spent.
    pub(crate) fn expired(&self) -> bool {
        Instant::now() >= self.deadline || self.left.as_ref().is_some_and(|n| n.load(Ordering::Acquire) == 0)
    }

    /// Claims one request; false once the deadline passed or the budget is spent.
    pub(crate) fn claim(&self) -> bool {
        if Instant::now() >= self.deadline {
            return false;
        }
        match &self.left {
            None => true,
            Some(left) => left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok(),
        }
    }
}

/// The request the flood repeats: every input of the model (as the server
/// describes it) with `options.rows` rows of seeded random values.
pub fn request_for(options: &FloodOptions) -> Result<InferRequest, String> {
    let settings = ClientSettings { timeout: options.request_timeout, tls_ca: None };
    let remote = Remote::new(&options.url, &options.model, 1, &[], settings)?;
    let mut rng = StdRng::seed_from_u64(0);
    let inputs = remote
        .input_specs()?
        .iter()
        .map(|spec| Ok(wire_tensor(spec.name.clone(), load::generate(spec, options.rows, &mut rng)?)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(InferRequest::new(options.model.clone(), inputs))
}

/// Floods `options.url` with `request` and tallies the answers.
pub fn flood(options: &FloodOptions, request: &InferRequest) -> Result<FloodReport, String> {
    let url = ServerUrl::parse(&options.url).map_err(|e| e.to_string())?;
    if url.tls {
        return Err(format!("{}: baton flood speaks plain text only (http:// or grpc://)", options.url));
    }
    if options.connections == 0 || options.streams == 0 {
        return Err("--connections and --streams must be at least 1".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads.max(1))
        .thread_name("flood")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the client threads: {e}"))?;
    let budget = Arc::new(Budget::new(options.duration, options.requests));
    let started = Instant::now();
    let tally = runtime.block_on(async {
        let mut connections = tokio::task::JoinSet::new();
        for _ in 0..options.connections {
            let budget = Arc::clone(&budget);
            let authority = url.authority.clone();
            let timeout = options.request_timeout;
            match url.protocol {
                Protocol::Http => {
                    let call = http1::Call::new(&authority, request);
                    connections.spawn(http1::connection(authority, call, budget, timeout));
                }
                Protocol::Grpc => {
                    let call = grpc::Call::new(&authority, request);
                    connections.spawn(grpc::connection(authority, call, options.streams, budget, timeout));
                }
            }
        }
        let mut all = Tally::default();
        while let Some(done) = connections.join_next().await {
            all.merge(done.map_err(|e| format!("a connection task failed: {e}"))?);
        }
        Ok::<Tally, String>(all)
    })?;
    Ok(tally.report(options, started.elapsed()))
}

/// Prints the report as a table.
pub fn print(report: &FloodReport) {
    print!("{}", tally::table(report));
}
