//! The `baton serve` command line: arguments, loading the pipelines, running
//! the server until SIGTERM / ctrl-c, and the exit code.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use baton::{EngineRegistry, Runtime};

use crate::{install_recorder, Server, ServerConfig};

/// `baton serve PIPELINE.toml [PIPELINE2.toml ...]`
#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// Pipeline files; each is served as a model named by its pipeline name, version 1.
    #[arg(required_unless_present = "model_repository", value_name = "PIPELINE.toml")]
    pub pipelines: Vec<PathBuf>,
    /// A model repository: a directory of pipeline files, `NAME.toml` each model `NAME`,
    /// all loaded at start; the model repository extension loads and unloads them.
    #[arg(long, value_name = "DIR")]
    pub model_repository: Option<PathBuf>,
    /// HTTP (KServe v2 REST) address: HOST:PORT, a bare PORT (on 127.0.0.1), or `off`.
    #[arg(long, default_value = "127.0.0.1:8000", value_parser = parse_addr, value_name = "ADDR")]
    pub http: ListenAddr,
    /// gRPC (inference.GRPCInferenceService) address: HOST:PORT, PORT, or `off`.
    #[arg(long, default_value = "127.0.0.1:8001", value_parser = parse_addr, value_name = "ADDR")]
    pub grpc: ListenAddr,
    /// Prometheus /metrics address: HOST:PORT, PORT, or `off`.
    #[arg(long, default_value = "127.0.0.1:8002", value_parser = parse_addr, value_name = "ADDR")]
    pub metrics: ListenAddr,
    /// Largest request body (HTTP) or message (gRPC), bytes; over it: 413.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    pub max_body_bytes: usize,
    /// Inferences in flight server-wide past which requests get 429 at once
    /// (each pipeline's `max_in_flight` applies too).
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<usize>,
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

/// `HOST:PORT`, a bare port (127.0.0.1), or `off`.
fn parse_addr(s: &str) -> Result<ListenAddr, String> {
    parse_socket(s).map(ListenAddr)
}

fn parse_socket(s: &str) -> Result<Option<SocketAddr>, String> {
    if s == "off" {
        return Ok(None);
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)));
    }
    if let Some(port) = s.strip_prefix("localhost:") {
        let port = port.parse::<u16>().map_err(|e| format!("bad port in {s:?}: {e}"))?;
        return Ok(Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)));
    }
    s.parse::<SocketAddr>().map(Some).map_err(|e| format!("{s:?} is not HOST:PORT, PORT or `off`: {e}"))
}

impl ServeArgs {
    /// The server config these arguments ask for.
    pub fn config(&self) -> ServerConfig {
        ServerConfig {
            http: self.http.0,
            grpc: self.grpc.0,
            metrics: self.metrics.0,
            max_body_bytes: self.max_body_bytes,
            max_in_flight: self.max_in_flight,
            shutdown_grace: Duration::from_secs(self.shutdown_grace),
            max_connections: self.max_connections,
            header_read_timeout: seconds(self.header_read_timeout),
            body_read_timeout: seconds(self.body_read_timeout),
            keep_alive_timeout: seconds(self.keep_alive_timeout),
        }
    }
}

/// A timeout flag's seconds (a negative or non-number one: none, i.e. very long).
fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(u64::from(u32::MAX)))
}

/// Runs `baton serve` with the standard engines (`onnx`, `cost_model`).
pub fn run(args: ServeArgs) -> ExitCode {
    run_with(args, &baton_engines::standard_registry())
}

/// Runs `baton serve` with the given engines: exit 0 after a graceful shutdown,
/// 2 when a pipeline does not load, 1 when the server cannot start.
pub fn run_with(args: ServeArgs, engines: &EngineRegistry) -> ExitCode {
    // Before any runtime starts: runtimes register their metrics at start.
    install_recorder();
    let mut runtimes: Vec<Runtime> = Vec::new();
    for path in &args.pipelines {
        match Runtime::from_file(path, engines) {
            Ok(runtime) => runtimes.push(runtime),
            Err(e) => {
                let message = e.to_string();
                if message.contains(&path.display().to_string()) {
                    eprintln!("error: {message}");
                } else {
                    eprintln!("error: {}: {message}", path.display());
                }
                return ExitCode::from(2);
            }
        }
    }
    let mut server = Server::new(args.config()).models(runtimes);
    if let Some(dir) = &args.model_repository {
        server = server.repository(dir, engines.clone());
    }
    let started = server.run_blocking(args.threads, |running| {
        let models = running.models().list();
        let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
        let show = |a: Option<SocketAddr>, prefix: &str, suffix: &str| {
            a.map_or_else(|| "off".to_string(), |a| format!("{prefix}{a}{suffix}"))
        };
        eprintln!(
            "baton serve: models {} (version 1) | HTTP {} | gRPC {} | metrics {}",
            names.join(", "),
            show(running.http_addr(), "http://", "/v2"),
            show(running.grpc_addr(), "", ""),
            show(running.metrics_addr(), "http://", "/metrics"),
        );
    });
    match started {
        Ok(()) => {
            eprintln!("baton serve: shut down");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(parse_socket("off").unwrap(), None);
        assert_eq!(parse_socket("9000").unwrap(), Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(parse_socket("localhost:9000").unwrap(), Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(parse_socket("0.0.0.0:80").unwrap(), Some("0.0.0.0:80".parse().unwrap()));
        assert!(parse_socket("nowhere").is_err());
    }
}
