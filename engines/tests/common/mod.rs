//! Helpers shared by the integration tests: repository paths and stage requests.
#![allow(dead_code)]

use std::path::PathBuf;

use baton::StageRequest;

/// The repository root (the workspace folder above this crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// `models/NAME.onnx` in the repository (made by scripts/setup.sh).
pub fn model(name: &str) -> PathBuf {
    let path = repo_root().join("models").join(format!("{name}.onnx"));
    assert!(path.is_file(), "{} is missing: run scripts/setup.sh", path.display());
    path
}

/// A stage request for the onnx engine on `model`, one intra and one inter thread.
pub fn onnx_stage(model: PathBuf) -> StageRequest {
    StageRequest {
        location: "test.stages[0]".into(),
        model: Some(model),
        params: baton::StageParams::default(),
        intra_threads: 1,
        inter_threads: 1,
        execution: baton::Execution::Cpu,
        batch_sizes: baton::BatchSizes::none(),
        device_outputs: Vec::new(),
    }
}

/// A stage request for the cost model with `params` written as TOML.
pub fn cost_stage(params: &str) -> StageRequest {
    StageRequest {
        location: "sim.stages[0]".into(),
        model: None,
        params: params.parse().expect("test params are valid TOML"),
        intra_threads: 1,
        inter_threads: 1,
        execution: baton::Execution::Cpu,
        batch_sizes: baton::BatchSizes::none(),
        device_outputs: Vec::new(),
    }
}

/// A fresh, empty folder under the system temp dir, removed with its files when dropped.
pub fn temp_dir(tag: &str) -> baton_scratch::Scratch {
    baton_scratch::Scratch::new(&format!("engines-{tag}"))
}
