//! The server driven by the real clients of the protocol: Triton's Python
//! `tritonclient[http,grpc]`, from the `.venv-client` that scripts/setup.sh
//! makes (scripts/setup-client.sh). Each test starts a server in-process on
//! free 127.0.0.1 ports and runs one script of server/tests/python/ against
//! it; the scripts compare answers with onnxruntime run directly in Python.

mod common;

use baton_scratch::Scratch;
use baton_server::ServerConfig;
use common::{repo_root, run_script_on, TestServer};

/// The serving tests' config: a 4 MB body limit.
fn config() -> ServerConfig {
    ServerConfig { max_body_bytes: 4_000_000, ..ServerConfig::ephemeral() }
}

/// Serves `pipelines` (with a 4 MB body limit) and runs `server/tests/python/SCRIPT` against it.
fn run_script(script: &str, pipelines: &[&str]) {
    run_script_on(script, &TestServer::start_with(pipelines, config()), &[]);
}

#[test]
fn tritonclient_infer_http_json_binary_and_grpc_equal_onnxruntime_all_datatypes() {
    run_script("test_infer.py", &["mlp.toml", "two_io.toml", "dtypes.toml"]);
}

#[test]
fn tritonclient_stateful_sequence_equals_onnxruntime_step_by_step() {
    run_script("test_sequence.py", &["stateful.toml"]);
}

#[test]
fn tritonclient_error_cases() {
    run_script("test_errors.py", &["mlp.toml"]);
}

#[test]
fn tritonclient_overload_gets_429_and_resource_exhausted() {
    run_script("test_overload.py", &["slow_small.toml"]);
}

#[test]
fn tritonclient_metrics_consistent_with_traffic() {
    run_script("test_metrics.py", &["mlp_metrics.toml"]);
}

#[test]
fn tritonclient_health_bodies_config_statistics_stream_and_unsupported_calls() {
    run_script("test_extensions.py", &["mlp.toml", "mlp_stats.toml", "stateful.toml"]);
}

/// A model repository pipeline: models/slow.onnx one request a batch, every run
/// slowed 100-fold (~0.1 s), so requests are in flight while the test reloads it.
fn slow_repository_pipeline() -> String {
    let model = repo_root().join("models/slow.onnx");
    format!(
        "[pipeline]\nname = \"slowrepo\"\n\n[inputs.x]\nto = [\"slow.x\"]\n\n[outputs.y]\nfrom = \"slow.y\"\n\n\
         [nodes.slow]\nstages = [{{ model = {:?} }}]\nmax_batch = 1\nintra_threads = 1\n\n\
         [nodes.slow.faults]\nslow = 1.0\nslow_factor = 100.0\n",
        model.display().to_string()
    )
}

#[test]
fn tritonclient_model_repository_index_load_swap_unload() {
    let dir = Scratch::new("repository");
    std::fs::write(dir.join("slowrepo.toml"), slow_repository_pipeline()).unwrap();
    let server = TestServer::start_with_repository(&["mlp.toml"], Some(&dir), config());
    run_script_on("test_repository.py", &server, &["--repo", dir.to_str().unwrap()]);
}

#[test]
fn tritonclient_bytes_tensors_over_http_json_binary_and_grpc_equal_onnxruntime() {
    run_script("test_strings.py", &["strings.toml"]);
}
