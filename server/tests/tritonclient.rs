//! The server driven by the real clients of the protocol: Triton's Python
//! `tritonclient[http,grpc]`, from the `.venv-client` that scripts/setup.sh
//! makes (scripts/setup-client.sh). Each test starts a server in-process on
//! free 127.0.0.1 ports and runs one script of server/tests/python/ against
//! it; the scripts compare answers with onnxruntime run directly in Python.

mod common;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_server::ServerConfig;
use common::{repo_root, scratch_dir, TestServer};

/// How long one script may run.
const SCRIPT_LIMIT: Duration = Duration::from_secs(60);

fn python() -> PathBuf {
    let python = repo_root().join(".venv-client/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it runs scripts/setup-client.sh, which installs tritonclient[http,grpc], \
         numpy and onnxruntime into .venv-client)",
        python.display()
    );
    python
}

/// The serving tests' config: a 4 MB body limit.
fn config() -> ServerConfig {
    ServerConfig { max_body_bytes: 4_000_000, ..ServerConfig::ephemeral() }
}

/// Serves `pipelines` (with a 4 MB body limit) and runs `server/tests/python/SCRIPT` against it.
fn run_script(script: &str, pipelines: &[&str]) {
    run_script_on(script, &TestServer::start_with(pipelines, config()), &[]);
}

/// Runs `server/tests/python/SCRIPT` against `server`, with `extra` arguments.
fn run_script_on(script: &str, server: &TestServer, extra: &[&str]) {
    let python = python();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(script);
    let mut child = Command::new(&python)
        .arg(&path)
        .args(["--http", &server.http.to_string(), "--grpc", &server.grpc.to_string()])
        .args(["--metrics", &server.metrics.to_string()])
        .args(extra)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    // Drain the pipes while waiting, so a chatty script cannot block on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > SCRIPT_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    print!("{out}");
    match status {
        Some(s) if s.success() => {}
        Some(s) => panic!("{script} failed ({s}):\n{out}\n{err}"),
        None => panic!("{script} ran past {SCRIPT_LIMIT:?}: killed\n{out}\n{err}"),
    }
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
    let dir = scratch_dir("repository");
    std::fs::write(dir.join("slowrepo.toml"), slow_repository_pipeline()).unwrap();
    let server = TestServer::start_with_repository(&["mlp.toml"], Some(&dir), config());
    run_script_on("test_repository.py", &server, &["--repo", dir.to_str().unwrap()]);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tritonclient_bytes_tensors_over_http_json_binary_and_grpc_equal_onnxruntime() {
    run_script("test_strings.py", &["strings.toml"]);
}
