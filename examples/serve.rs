//! Embedding Baton's server: load a pipeline with the standard engines and
//! serve it over KServe v2 (HTTP and gRPC) with Prometheus metrics, as
//! `baton serve configs/mlp.toml` does, until SIGTERM or ctrl-c.
//!
//! Run with `cargo run --release -p baton-examples --example serve` after
//! `scripts/setup.sh`, then e.g.
//! `curl -s localhost:8000/v2/models/mlp` or `curl -s localhost:8002/metrics`.

use std::path::Path;

use baton::Runtime;
use baton_server::{Server, ServerConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // No options: `--help` says what this does, anything else is refused.
    clap::Command::new("serve")
        .about("Serves configs/mlp.toml over KServe v2 (HTTP :8000, gRPC :8001, metrics :8002) until ctrl-c")
        .get_matches();
    // The metrics recorder first: a runtime registers its metrics when it starts.
    baton_server::install_recorder();

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let engines = baton_engines::standard_registry(); // "onnx" and "cost_model"; add your function stages here
    let runtime = Runtime::from_file(&root.join("configs/mlp.toml"), &engines)?;

    // 127.0.0.1:8000 (HTTP), :8001 (gRPC), :8002 (/metrics); 64 MiB body limit.
    let config = ServerConfig { max_in_flight: Some(4096), ..ServerConfig::default() };
    Server::new(config).model(runtime).run_blocking(2, |running| {
        let http = running.http_addr().expect("HTTP is on");
        println!("serving model mlp: HTTP {http}, gRPC {:?}", running.grpc_addr());
        println!("metrics: http://{}/metrics", running.metrics_addr().expect("metrics are on"));
        println!("try: curl -s {http}/v2/models/mlp; stop with ctrl-c");
    })?;
    println!("shut down gracefully");
    Ok(())
}
