//! The cost_model simulation engine through its provider, as the runtime uses it.

mod common;

use std::time::{Duration, Instant};

use baton::{DType, Dim, EngineError, EngineProvider, Tensor};
use baton_engines::{standard_registry, CostModelProvider};
use common::cost_stage;

#[test]
fn registry_serves_the_declared_signature() {
    let stage = cost_stage(
        r#"
        inputs = [{ name = "x", dtype = "f32", shape = [-1, 4] }, { name = "mask", dtype = "bool", shape = ["N", 4] }]
        outputs = [{ name = "y", dtype = "f16", shape = [-1, 2] }]
        "#,
    );
    let sig = standard_registry().get("cost_model").unwrap().inspect(&stage).unwrap();
    let names: Vec<&str> = sig.inputs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["x", "mask"]);
    assert_eq!(sig.inputs[1].dtype, DType::Bool);
    assert_eq!(sig.inputs[1].shape, vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(4)]);
    assert_eq!(sig.outputs[0].shape, vec![Dim::Dynamic(None), Dim::Fixed(2)]);
    assert_eq!(sig.outputs[0].dtype, DType::F16);
}

#[test]
fn output_shapes_take_the_batch_and_resolve_dynamic_dims() {
    let stage = cost_stage(
        r#"
        inputs = [{ name = "img", dtype = "u8", shape = [-1, 3, -1, -1] }]
        outputs = [
            { name = "same", dtype = "f32", shape = [-1, 3, -1, -1] },
            { name = "fixed", dtype = "f32", shape = [-1, 7] },
            { name = "deeper", dtype = "i64", shape = [-1, 2, -1, -1, -1] },
        ]
        "#,
    );
    let mut engine = CostModelProvider::new().create(&stage).unwrap();
    let img = Tensor::zeros(DType::U8, vec![5, 3, 12, 9]).unwrap();
    let out = engine.run(&[&img]).unwrap();
    assert_eq!(out[0].shape(), &[5, 3, 12, 9], "dynamic dims come from the first input");
    assert_eq!(out[1].shape(), &[5, 7]);
    assert_eq!(out[2].shape(), &[5, 2, 12, 9, 1], "a dim the input does not have is 1");
    assert_eq!(out[0].dtype(), DType::F32);
    assert_eq!(out[2].dtype(), DType::I64);
}

#[test]
fn outputs_copy_rows_of_the_first_matching_input_else_zeros() {
    let stage = cost_stage(
        r#"
        inputs = [
            { name = "a", dtype = "f32", shape = [-1, 4] },
            { name = "b", dtype = "f32", shape = [-1, 2, 2] },
            { name = "ids", dtype = "i64", shape = [-1, 2] },
        ]
        outputs = [
            { name = "reshaped", dtype = "f32", shape = [-1, 2, 2] },
            { name = "ids_out", dtype = "i64", shape = [-1, 2] },
            { name = "other_width", dtype = "f32", shape = [-1, 3] },
            { name = "flags", dtype = "bool", shape = [-1, 4] },
        ]
        "#,
    );
    let mut engine = CostModelProvider::new().create(&stage).unwrap();
    let a = Tensor::from_vec(vec![2, 4], (1..=8).map(|i| i as f32).collect()).unwrap();
    let b = Tensor::from_vec(vec![2, 2, 2], (1..=8).map(|i| -(i as f32)).collect()).unwrap();
    let ids = Tensor::from_vec(vec![2, 2], vec![10i64, 11, 12, 13]).unwrap();
    let out = engine.run(&[&a, &b, &ids]).unwrap();
    assert_eq!(out.len(), 4);
    assert_eq!(out[0].shape(), &[2, 2, 2]);
    assert_eq!(
        out[0].as_slice::<f32>().unwrap(),
        a.as_slice::<f32>().unwrap(),
        "first f32 input with 4 per row is `a`"
    );
    assert_eq!(out[1].as_slice::<i64>().unwrap(), &[10, 11, 12, 13]);
    assert_eq!(out[2].as_slice::<f32>().unwrap(), &[0.0; 6]);
    assert_eq!(out[3].as_slice::<bool>().unwrap(), &[false; 8]);
}

#[test]
fn row_copying_follows_a_sliced_batch() {
    let stage = cost_stage(
        r#"
        inputs = [{ name = "x", dtype = "i32", shape = [-1, 3] }]
        outputs = [{ name = "y", dtype = "i32", shape = [-1, 3] }]
        "#,
    );
    let mut engine = CostModelProvider::new().create(&stage).unwrap();
    let full = Tensor::from_vec(vec![4, 3], (0..12).collect::<Vec<i32>>()).unwrap();
    let out = engine.run(&[&full.rows(1..3)]).unwrap();
    assert_eq!(out[0].shape(), &[2, 3]);
    assert_eq!(out[0].as_slice::<i32>().unwrap(), &[3, 4, 5, 6, 7, 8]);
}

#[test]
fn fail_every_n_fails_exactly_every_nth_run() {
    let stage = cost_stage(
        r#"
        inputs = [{ name = "x", dtype = "f32", shape = [-1, 1] }]
        outputs = [{ name = "y", dtype = "f32", shape = [-1, 1] }]
        fail_every = 3
        "#,
    );
    let mut engine = CostModelProvider::new().create(&stage).unwrap();
    let x = Tensor::zeros(DType::F32, vec![1, 1]).unwrap();
    let results: Vec<Result<Vec<Tensor>, EngineError>> = (0..7).map(|_| engine.run(&[&x])).collect();
    let failed: Vec<usize> = results.iter().enumerate().filter(|(_, r)| r.is_err()).map(|(i, _)| i + 1).collect();
    assert_eq!(failed, [3, 6]);
    let err = results[2].as_ref().unwrap_err().to_string();
    assert!(err.contains("injected failure") && err.contains("sim.stages[0]"), "{err}");
}

#[test]
fn invalid_inputs_are_rejected_and_not_counted_as_runs() {
    let stage = cost_stage(
        r#"
        inputs = [{ name = "x", dtype = "f32", shape = [-1, 4] }]
        outputs = [{ name = "y", dtype = "f32", shape = [-1, 4] }]
        fail_every = 2
        "#,
    );
    let mut engine = CostModelProvider::new().create(&stage).unwrap();
    let wrong_width = Tensor::zeros(DType::F32, vec![1, 5]).unwrap();
    let err = engine.run(&[&wrong_width]).unwrap_err().to_string();
    assert!(err.contains("`x`") && err.contains("[?, 4]") && err.contains("[1, 5]"), "{err}");
    let wrong_dtype = Tensor::zeros(DType::F64, vec![1, 4]).unwrap();
    assert!(engine.run(&[&wrong_dtype]).unwrap_err().to_string().contains("`x`"));
    assert!(engine.run(&[]).unwrap_err().to_string().contains("takes 1 inputs but 0"));
    let x = Tensor::zeros(DType::F32, vec![1, 4]).unwrap();
    assert!(engine.run(&[&x]).is_ok(), "first valid run");
    assert!(engine.run(&[&x]).unwrap_err().to_string().contains("injected failure"), "second valid run");
}

#[test]
fn fixed_batch_output_rejects_other_batch_sizes() {
    let stage = cost_stage(
        r#"
        inputs = [{ name = "x", dtype = "f32", shape = [-1, 2] }]
        outputs = [{ name = "y", dtype = "f32", shape = [1, 2] }]
        "#,
    );
    let mut engine = CostModelProvider::new().create(&stage).unwrap();
    assert_eq!(engine.run(&[&Tensor::zeros(DType::F32, vec![1, 2]).unwrap()]).unwrap()[0].shape(), &[1, 2]);
    let err = engine.run(&[&Tensor::zeros(DType::F32, vec![3, 2]).unwrap()]).unwrap_err().to_string();
    assert!(err.contains("`y`") && err.contains("3 rows"), "{err}");
}

#[test]
fn unknown_param_key_errors_naming_stage_and_key() {
    let stage = cost_stage(
        r#"
        inputs = [{ name = "x", dtype = "f32", shape = [-1, 2] }]
        outputs = []
        latency = 100
        "#,
    );
    let err = CostModelProvider::new().inspect(&stage).unwrap_err().to_string();
    assert!(err.contains("sim.stages[0]") && err.contains("unknown key `latency`"), "{err}");
    assert!(CostModelProvider::new().create(&stage).is_err());
}

fn timed_run(params_tail: &str, batch: usize) -> Duration {
    let stage = cost_stage(&format!(
        r#"
        inputs = [{{ name = "x", dtype = "f32", shape = [-1, 2] }}]
        outputs = [{{ name = "y", dtype = "f32", shape = [-1, 2] }}]
        {params_tail}
        "#
    ));
    let mut engine = CostModelProvider::new().create(&stage).unwrap();
    let x = Tensor::zeros(DType::F32, vec![batch, 2]).unwrap();
    let start = Instant::now();
    engine.run(&[&x]).unwrap();
    start.elapsed()
}

#[test]
fn runs_take_at_least_the_curve_latency() {
    // Sleep: constant 3 ms.
    assert!(timed_run("latency_us = 3000\nmode = \"sleep\"", 1) >= Duration::from_micros(3000));
    // Spin, on the curve: batch 4 lies between 1 -> 100 us and 8 -> 800 us, so 400 us.
    let t = timed_run("latency_us = { \"1\" = 100, \"8\" = 800 }\nmode = \"spin\"", 4);
    assert!(t >= Duration::from_micros(400), "{t:?}");
    // Auto mode: extrapolated above the last point, 16 -> 1600 us (sleeps).
    let t = timed_run("latency_us = { \"1\" = 100, \"8\" = 800 }", 16);
    assert!(t >= Duration::from_micros(1600), "{t:?}");
}
