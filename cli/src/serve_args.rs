//! `baton serve`'s command-line arguments, turned into the server's
//! [`ServeOptions`] (the server crate itself takes no command line).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use baton_server::access::{Restriction, Restrictions};
use baton_server::control::{ControlMode, ModelControl};
use baton_server::tls::TlsFiles;
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
    /// HTTP endpoint groups that need a key header: `GROUP[,GROUP...]:KEY=VALUE`, groups
    /// health, metadata, inference, shared-memory, model-config, model-repository,
    /// statistics, trace, logging. Repeatable; a call without the header gets 403.
    #[arg(long, value_parser = Restriction::parse, value_name = "GROUPS:KEY=VALUE")]
    pub http_restricted_api: Vec<Restriction>,
    /// gRPC endpoint groups that need a key metadata entry (as --http-restricted-api);
    /// a call without it gets PERMISSION_DENIED.
    #[arg(long, value_parser = Restriction::parse, value_name = "GROUPS:KEY=VALUE")]
    pub grpc_restricted_protocol: Vec<Restriction>,
    /// HTTP over TLS: the server's certificate chain (PEM); needs --http-server-key.
    #[arg(long, value_name = "FILE", requires = "http_server_key")]
    pub http_server_cert: Option<PathBuf>,
    /// The private key of --http-server-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "http_server_cert")]
    pub http_server_key: Option<PathBuf>,
    /// Mutual TLS on HTTP: client certificates must chain to a certificate in this PEM file.
    #[arg(long, value_name = "FILE", requires = "http_server_cert")]
    pub http_root_cert: Option<PathBuf>,
    /// gRPC over TLS (Triton's flag): needs --grpc-server-cert and --grpc-server-key.
    #[arg(long, requires_all = ["grpc_server_cert", "grpc_server_key"])]
    pub grpc_use_ssl: bool,
    /// Mutual TLS on gRPC (Triton's flag): needs --grpc-root-cert too.
    #[arg(long, requires_all = ["grpc_server_cert", "grpc_server_key", "grpc_root_cert"])]
    pub grpc_use_ssl_mutual: bool,
    /// gRPC's certificate chain (PEM); giving it and --grpc-server-key turns TLS on.
    #[arg(long, value_name = "FILE", requires = "grpc_server_key")]
    pub grpc_server_cert: Option<PathBuf>,
    /// The private key of --grpc-server-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "grpc_server_cert")]
    pub grpc_server_key: Option<PathBuf>,
    /// Mutual TLS on gRPC: client certificates must chain to a certificate in this PEM file.
    #[arg(long, value_name = "FILE", requires = "grpc_server_cert")]
    pub grpc_root_cert: Option<PathBuf>,
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
    /// What these arguments ask the server to serve, and how; an error names
    /// the flags that do not go together.
    pub fn options(&self) -> Result<ServeOptions, String> {
        let tls = |cert: &Option<PathBuf>, key: &Option<PathBuf>, client_ca: &Option<PathBuf>| {
            Some(TlsFiles { cert: cert.clone()?, key: key.clone()?, client_ca: client_ca.clone() })
        };
        let http_restricted = Restrictions::new(self.http_restricted_api.iter().cloned())
            .map_err(|e| format!("--http-restricted-api: {e}"))?;
        let grpc_restricted = Restrictions::new(self.grpc_restricted_protocol.iter().cloned())
            .map_err(|e| format!("--grpc-restricted-protocol: {e}"))?;
        Ok(ServeOptions {
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
                http_tls: tls(&self.http_server_cert, &self.http_server_key, &self.http_root_cert),
                grpc_tls: tls(&self.grpc_server_cert, &self.grpc_server_key, &self.grpc_root_cert),
                http_restricted,
                grpc_restricted,
            },
        })
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
        let options = Cli::try_parse_from(["serve", "p.toml"]).unwrap().serve.options().unwrap();
        assert_eq!(options.pipelines, [PathBuf::from("p.toml")]);
        assert_eq!(format!("{:?}", options.config), format!("{:?}", ServerConfig::default()));
    }

    #[test]
    fn addresses_and_timeouts_are_read() {
        let cli = Cli::try_parse_from(["serve", "p.toml", "--http", "off", "--grpc", "9001", "--body-read-timeout=-1"]);
        let options = cli.unwrap().serve.options().unwrap();
        assert_eq!(options.config.http, None);
        assert_eq!(options.config.grpc, Some("127.0.0.1:9001".parse().unwrap()));
        assert_eq!(options.config.body_read_timeout, Duration::from_secs(u64::from(u32::MAX)));
        assert!(Cli::try_parse_from(["serve", "p.toml", "--http", "nowhere"]).is_err());
    }

    #[test]
    fn model_control_flags_are_read() {
        let args = ["serve", "--model-repository", "r", "--model-control-mode", "explicit", "--load-model", "a"];
        let options =
            Cli::try_parse_from(args.into_iter().chain(["--load-model", "b"])).unwrap().serve.options().unwrap();
        assert_eq!(options.model_control.mode, ControlMode::Explicit);
        assert_eq!(options.model_control.load, ["a", "b"]);
        let cli = Cli::try_parse_from(["serve", "--model-repository", "r", "--model-control-mode", "poll"]);
        assert_eq!(cli.unwrap().serve.options().unwrap().model_control.poll_every, Duration::from_secs(15));
        assert!(Cli::try_parse_from(["serve", "p.toml", "--model-control-mode", "sometimes"]).is_err());
    }

    #[test]
    fn restrictions_and_tls_files_are_read() {
        let cli = Cli::try_parse_from([
            "serve",
            "p.toml",
            "--http-restricted-api",
            "model-repository,statistics:admin-key=s3cret",
            "--http-restricted-api",
            "inference:infer-key=k",
            "--grpc-restricted-protocol=health:h=1",
            "--grpc-use-ssl",
            "--grpc-server-cert=c.pem",
            "--grpc-server-key=k.pem",
            "--http-server-cert=hc.pem",
            "--http-server-key=hk.pem",
            "--http-root-cert=ca.pem",
        ]);
        let config = cli.unwrap().serve.options().unwrap().config;
        let allowed = |r: &Restrictions, group, key: &str, value: &'static str| {
            r.check(group, |k| (k == key).then_some(value.as_bytes())).is_ok()
        };
        use baton_server::access::Group;
        assert!(allowed(&config.http_restricted, Group::Statistics, "admin-key", "s3cret"));
        assert!(!allowed(&config.http_restricted, Group::Inference, "admin-key", "s3cret"));
        assert!(allowed(&config.http_restricted, Group::Inference, "infer-key", "k"));
        assert!(!allowed(&config.grpc_restricted, Group::Health, "h", "2"));
        assert_eq!(config.grpc_tls.unwrap().cert, PathBuf::from("c.pem"));
        assert_eq!(config.http_tls.unwrap().client_ca, Some(PathBuf::from("ca.pem")));
        assert!(!format!("{:?}", config.http_restricted).contains("s3cret"), "Debug shows a key's value");
        let twice = ["serve", "p.toml", "--http-restricted-api=health:a=1", "--http-restricted-api=health:b=2"];
        let error = Cli::try_parse_from(twice).unwrap().serve.options().unwrap_err();
        assert!(error.contains("--http-restricted-api") && error.contains("`health`"), "{error}");
        for alone in [&["--grpc-use-ssl"][..], &["--http-server-cert=c.pem"], &["--grpc-use-ssl-mutual"]] {
            let args = ["serve", "p.toml"].iter().chain(alone);
            assert!(Cli::try_parse_from(args).is_err(), "{alone:?} alone is accepted");
        }
    }
}
