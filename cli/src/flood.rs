//! `baton flood URL --model NAME`: floods a KServe v2 server from many
//! connections and prints each answer status's count and latency
//! (`baton_bench::flood`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use baton_bench::flood::{self, FloodOptions};
use baton_bench::parse_duration;

/// `baton flood` arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct FloodArgs {
    /// The server: http://HOST:PORT or grpc://HOST:PORT.
    pub url: String,
    /// The model to infer.
    #[arg(long)]
    pub model: String,
    /// Connections open at once (each reopened when the server closes it).
    #[arg(long, default_value_t = 1000)]
    pub connections: usize,
    /// gRPC: concurrent calls per connection (HTTP sends one at a time per connection).
    #[arg(long, default_value_t = 1)]
    pub streams: usize,
    /// How long to send.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Stop after this many requests (before `--duration` if reached).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Rows per request (dimension 0 of every input).
    #[arg(long, default_value_t = 1)]
    pub rows: usize,
    /// The client's network threads.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// A request without its whole answer after this long is counted as `client timeout`.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Write the report as JSON to this file too.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl FloodArgs {
    pub fn options(self) -> FloodOptions {
        FloodOptions {
            url: self.url,
            model: self.model,
            connections: self.connections,
            streams: self.streams,
            duration: self.duration,
            requests: self.requests,
            rows: self.rows,
            client_threads: self.client_threads,
            request_timeout: self.request_timeout,
        }
    }
}

pub fn run(args: FloodArgs) -> ExitCode {
    let json = args.json.clone();
    match flood_and_report(&args.options(), json.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn flood_and_report(options: &FloodOptions, json: Option<&std::path::Path>) -> Result<(), String> {
    let request = flood::request_for(options)?;
    let report = flood::flood(options, &request)?;
    flood::print(&report);
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).expect("a serializable report");
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
