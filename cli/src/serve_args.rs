//! `baton serve`'s command-line arguments, turned into the server's
//! [`ServeOptions`] (the server crate itself takes no command line).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use baton_server::control::{ControlMode, ModelControl};
use baton_server::{parse_listen_addr, ServeOptions, ServerConfig};

/// `baton serve PIPELINE.toml [PIPELINE2.toml ...]`
#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// Pipeline files, each served as a model named by its pipeline name, version 1;
    /// and ONNX files (`model.onnx`), each served as a model named by its file stem.
    #[arg(required_unless_present = "model_repository", value_name = "PIPELINE.toml|MODEL.onnx")]
    pub pipelines: Vec<PathBuf>,
    /// A model repository: a directory of pipeline files, `NAME.toml` each model `NAME`,
    /// all loaded at start; the model repository extension loads and unloads them.
    #[arg(long, value_name = "DIR")]
    pub model_repository: Option<PathBuf>,
    /// Model control: `none` loads every repository model at start; `explicit`
    /// loads only the --load-model ones; `poll` loads every one and follows the
    /// repository's files every --repository-poll-secs (the load/unload calls refused).
    #[arg(long, default_value = "none", value_parser = control_mode, value_name = "MODE")]
    pub model_control_mode: ControlMode,
    /// With `--model-control-mode explicit`: a repository model to load at start (`*`: all); repeatable.
    #[arg(long = "load-model", value_name = "NAME")]
    pub load_model: Vec<String>,
    /// With `--model-control-mode poll`: seconds between looks at the repository's files.
    #[arg(long, default_value_t = 15, value_name = "SECONDS")]
    pub repository_poll_secs: u64,
    /// HTTP (KServe v2 REST) address: HOST:PORT, a bare PORT (on 127.0.0.1), or `off`.
    #[arg(long, default_value = "127.0.0.1:8000", value_parser = listen_addr, value_name = "ADDR")]
    pub http: ListenAddr,
    /// gRPC (inference.GRPCInferenceService) address: HOST:PORT, PORT, or `off`.
    #[arg(long, default_value = "127.0.0.1:8001", value_parser = listen_addr, value_name = "ADDR")]
    pub grpc: ListenAddr,
    /// Prometheus /metrics address: HOST:PORT, PORT, or `off`.
    #[arg(long, default_value = "127.0.0.1:8002", value_parser = listen_addr, value_name = "ADDR")]
    pub metrics: ListenAddr,
    /// Largest request body (HTTP) or message (gRPC), bytes; over it: 413.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    pub max_body_bytes: usize,
    /// Inferences in flight server-wide past which requests get 429 (with
    /// Retry-After) or RESOURCE_EXHAUSTED at once (each pipeline's
    /// `max_in_flight` applies too). Default: sized from the loaded models'
    /// capacity, each node's workers × max_batch × 5, at least 256.
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// Concurrent requests (HTTP/2 streams) one gRPC connection may have open.
    #[arg(long, default_value_t = 128, value_name = "N")]
    pub grpc_max_concurrent_streams: u32,
    /// Threads for the network front ends (tokio workers); default 2.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub threads: usize,
    /// Seconds a graceful shutdown waits for accepted requests.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub shutdown_grace: u64,
    /// Connections open at once (HTTP and gRPC each) past which new ones are closed (HTTP: after a 503).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_connections: usize,
    /// Seconds an HTTP request's head may take to arrive, from its first byte.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub header_read_timeout: f64,
    /// Seconds an HTTP request's body may take to arrive, from its head (408 past it).
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub body_read_timeout: f64,
    /// Seconds an HTTP connection may sit idle (no request in flight or arriving) before it is closed;
    /// also gRPC's HTTP/2 keep-alive ping interval.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub keep_alive_timeout: f64,
}

/// A listen address, or none (`off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenAddr(pub Option<SocketAddr>);

fn control_mode(s: &str) -> Result<ControlMode, String> {
    ControlMode::from_name(s).ok_or_else(|| format!("{s:?} is not a model control mode (none, explicit, poll)"))
}

fn listen_addr(s: &str) -> Result<ListenAddr, String> {
    parse_listen_addr(s).map(ListenAddr)
}

impl ServeArgs {
    /// What these arguments ask the server to serve, and how.
    pub fn options(&self) -> ServeOptions {
        ServeOptions {
            pipelines: self.pipelines.clone(),
            model_repository: self.model_repository.clone(),
            model_control: ModelControl {
                mode: self.model_control_mode,
                load: self.load_model.clone(),
                poll_every: Duration::from_secs(self.repository_poll_secs),
            },
            threads: self.threads,
            config: ServerConfig {
                http: self.http.0,
                grpc: self.grpc.0,
                metrics: self.metrics.0,
                max_body_bytes: self.max_body_bytes,
                max_in_flight: self.max_in_flight,
                grpc_max_concurrent_streams: self.grpc_max_concurrent_streams,
                shutdown_grace: Duration::from_secs(self.shutdown_grace),
                max_connections: self.max_connections,
                header_read_timeout: seconds(self.header_read_timeout),
                body_read_timeout: seconds(self.body_read_timeout),
                keep_alive_timeout: seconds(self.keep_alive_timeout),
            },
        }
    }
}

/// A timeout flag's seconds (a negative or non-number one: none, i.e. very long).
fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(u64::from(u32::MAX)))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn the_defaults_are_the_servers() {
        let options = Cli::try_parse_from(["serve", "p.toml"]).unwrap().serve.options();
        assert_eq!(options.pipelines, [PathBuf::from("p.toml")]);
        assert_eq!(format!("{:?}", options.config), format!("{:?}", ServerConfig::default()));
    }

    #[test]
    fn addresses_and_timeouts_are_read() {
        let cli = Cli::try_parse_from(["serve", "p.toml", "--http", "off", "--grpc", "9001", "--body-read-timeout=-1"]);
        let options = cli.unwrap().serve.options();
        assert_eq!(options.config.http, None);
        assert_eq!(options.config.grpc, Some("127.0.0.1:9001".parse().unwrap()));
        assert_eq!(options.config.body_read_timeout, Duration::from_secs(u64::from(u32::MAX)));
        assert!(Cli::try_parse_from(["serve", "p.toml", "--http", "nowhere"]).is_err());
    }

    #[test]
    fn model_control_flags_are_read() {
        let args = ["serve", "--model-repository", "r", "--model-control-mode", "explicit", "--load-model", "a"];
        let options = Cli::try_parse_from(args.into_iter().chain(["--load-model", "b"])).unwrap().serve.options();
        assert_eq!(options.model_control.mode, ControlMode::Explicit);
        assert_eq!(options.model_control.load, ["a", "b"]);
        let cli = Cli::try_parse_from(["serve", "--model-repository", "r", "--model-control-mode", "poll"]);
        assert_eq!(cli.unwrap().serve.options().model_control.poll_every, Duration::from_secs(15));
        assert!(Cli::try_parse_from(["serve", "p.toml", "--model-control-mode", "sometimes"]).is_err());
    }
}
