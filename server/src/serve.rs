//! Serving pipelines until SIGTERM / ctrl-c: loading them, running the
//! server, and the exit code (what `baton serve` runs; its command-line
//! arguments live in the `baton` command, `cli/src/serve_args.rs`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use baton::{EngineRegistry, Runtime};

use crate::{install_recorder, Server, ServerConfig};

/// What to serve and how.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Pipeline files, each served as a model named by its pipeline name, version 1;
    /// and ONNX files (`.onnx`), each served as a model named by its file stem,
    /// its Triton config completed from the model.
    pub pipelines: Vec<PathBuf>,
    /// A model repository: a directory of pipeline files, `NAME.toml` each model `NAME`.
    pub model_repository: Option<PathBuf>,
    /// Which repository models load at start and how they load later.
    pub model_control: crate::control::ModelControl,
    /// Threads for the network front ends (tokio workers).
    pub threads: usize,
    /// Addresses, limits and timeouts.
    pub config: ServerConfig,
}

/// A listen address: `HOST:PORT`, a bare port (on 127.0.0.1), `localhost:PORT`, or `off` (`None`).
pub fn parse_listen_addr(s: &str) -> Result<Option<SocketAddr>, String> {
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

/// A warning for each endpoint bound beyond this machine (not loopback) in plain text.
pub fn plain_text_warnings(config: &ServerConfig) -> Vec<String> {
    let endpoints = [
        ("HTTP", config.http, config.http_tls.is_some(), !config.http_restricted.is_empty(), "--http-server-cert"),
        ("gRPC", config.grpc, config.grpc_tls.is_some(), !config.grpc_restricted.is_empty(), "--grpc-server-cert"),
    ];
    endpoints
        .into_iter()
        .filter_map(|(what, addr, tls, keyed, flag)| {
            let addr = addr.filter(|a| !a.ip().is_loopback() && !tls)?;
            let keys = if keyed { " (restricted endpoints' keys included)" } else { "" };
            Some(format!(
                "{what} on {addr} is plain text: anyone on the network can read its requests{keys}; \
                 give {flag} and its key for TLS"
            ))
        })
        .collect()
}

/// Runs `baton serve` with the standard engines (`onnx`, `cost_model`).
pub fn run(options: ServeOptions) -> ExitCode {
    run_with(options, &baton_engines::standard_registry())
}

/// Runs `baton serve` with the given engines: exit 0 after a graceful shutdown,
/// 2 when a pipeline does not load, 1 when the server cannot start.
pub fn run_with(options: ServeOptions, engines: &EngineRegistry) -> ExitCode {
    // Before any runtime starts: runtimes register their metrics at start.
    install_recorder();
    let mut runtimes: Vec<Runtime> = Vec::new();
    let mut onnx_models = Vec::new();
    for path in &options.pipelines {
        if path.extension().is_some_and(|x| x.eq_ignore_ascii_case("onnx")) {
            match crate::triton::load_file(path, engines) {
                Ok(loaded) => onnx_models.extend(crate::triton::into_models(loaded)),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
            continue;
        }
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
    for warning in plain_text_warnings(&options.config) {
        eprintln!("warning: {warning}");
    }
    let mut server = Server::new(options.config).models(runtimes).served(onnx_models);
    if let Some(dir) = &options.model_repository {
        server = server.repository(dir, engines.clone());
    }
    server = server.model_control(options.model_control.clone());
    let started = server.run_blocking(options.threads, |running| {
        let models = running.models().list();
        let names: Vec<String> =
            models.iter().map(|m| format!("{} (version {})", m.name, m.versions.join(", "))).collect();
        let show = |a: Option<SocketAddr>, prefix: &str, suffix: &str| {
            a.map_or_else(|| "off".to_string(), |a| format!("{prefix}{a}{suffix}"))
        };
        eprintln!(
            "baton serve: models {} | HTTP {} | gRPC {} | metrics {}",
            if names.is_empty() { "none loaded".to_string() } else { names.join(", ") },
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
        assert_eq!(parse_listen_addr("off").unwrap(), None);
        assert_eq!(parse_listen_addr("9000").unwrap(), Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(parse_listen_addr("localhost:9000").unwrap(), Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(parse_listen_addr("0.0.0.0:80").unwrap(), Some("0.0.0.0:80".parse().unwrap()));
        assert!(parse_listen_addr("nowhere").is_err());
    }

    #[test]
    fn plain_text_beyond_loopback_is_warned_about() {
        assert!(plain_text_warnings(&ServerConfig::default()).is_empty(), "127.0.0.1 needs no TLS");
        let open = ServerConfig { http: Some("0.0.0.0:8000".parse().unwrap()), ..ServerConfig::default() };
        let warnings = plain_text_warnings(&open);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("HTTP on 0.0.0.0:8000 is plain text"), "{warnings:?}");
        let tls = crate::tls::TlsFiles { cert: "c".into(), key: "k".into(), client_ca: None };
        let encrypted = ServerConfig { http_tls: Some(tls), ..open };
        assert!(plain_text_warnings(&encrypted).is_empty());
    }
}
