//! `ORT_DYLIB_PATH` pointing at a missing file. In its own test binary (its
//! own process) because the ONNX Runtime environment is process-wide and
//! created once: no other test here may load ONNX Runtime first.

mod common;

use baton::{DType, EngineProvider, Tensor};
use baton_engines::{standard_registry, OnnxProvider};
use common::{cost_stage, model, onnx_stage};

/// The only test in this binary, so nothing races on the environment variable.
#[test]
fn missing_ort_dylib_path_is_an_error_naming_it_and_stays_one() {
    let bogus = "/nonexistent/baton-test/libonnxruntime.so.1.31.1";
    std::env::set_var("ORT_DYLIB_PATH", bogus);

    // Providers (and the standard registry) are still created without ONNX Runtime.
    let registry = standard_registry();
    let provider = OnnxProvider::new();
    let stage = onnx_stage(model("mlp"));

    let first = provider.inspect(&stage).unwrap_err().to_string();
    assert!(first.contains("ORT_DYLIB_PATH") && first.contains(bogus), "{first}");
    let err = registry.get("onnx").unwrap().create(&stage).err().unwrap().to_string();
    assert!(err.contains(bogus), "{err}");

    // The failure is kept: pointing the variable at the real library does not retry.
    std::env::set_var("ORT_DYLIB_PATH", common::repo_root().join(baton_engines::ort_library::CACHE_RELATIVE_PATH));
    assert_eq!(provider.inspect(&stage).unwrap_err().to_string(), first);

    // Cost-model stages do not need ONNX Runtime at all.
    let sim = cost_stage(
        r#"
        inputs = [{ name = "x", dtype = "f32", shape = [-1, 2] }]
        outputs = [{ name = "y", dtype = "f32", shape = [-1, 2] }]
        "#,
    );
    let mut engine = registry.get("cost_model").unwrap().create(&sim).unwrap();
    let x = Tensor::zeros(DType::F32, vec![3, 2]).unwrap();
    assert_eq!(engine.run(&[&x]).unwrap()[0].shape(), &[3, 2]);
}
