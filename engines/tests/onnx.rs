//! The onnx engine on real ONNX Runtime with the test models in models/ (scripts/setup.sh).

mod common;

use baton::{DType, Dim, Engine, EngineProvider, Tensor, TensorSpec};
use baton_engines::{ort_library, standard_registry, OnnxEngine, OnnxProvider};
use common::{model, onnx_stage, temp_dir};
use half::f16;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::TensorRef;

fn n() -> Dim {
    Dim::Dynamic(Some("N".into()))
}

fn spec(name: &str, dtype: DType, shape: Vec<Dim>) -> TensorSpec {
    TensorSpec { name: name.into(), dtype, shape }
}

#[test]
fn mlp_signature_is_read() {
    let sig = OnnxProvider::new().inspect(&onnx_stage(model("mlp"))).unwrap();
    assert_eq!(sig.inputs, vec![spec("input", DType::F32, vec![n(), Dim::Fixed(256)])]);
    assert_eq!(sig.outputs, vec![spec("output", DType::F32, vec![n(), Dim::Fixed(10)])]);
}

#[test]
fn dtypes_signature_maps_every_dtype() {
    let sig = OnnxProvider::new().inspect(&onnx_stage(model("dtypes"))).unwrap();
    let want = |names: [&str; 5]| -> Vec<TensorSpec> {
        let dtypes = [DType::F16, DType::I64, DType::I32, DType::U8, DType::Bool];
        names.iter().zip(dtypes).map(|(name, dt)| spec(name, dt, vec![n(), Dim::Fixed(4)])).collect()
    };
    assert_eq!(sig.inputs, want(["f16", "i64", "i32", "u8", "flag"]));
    assert_eq!(sig.outputs, want(["f16_out", "i64_out", "i32_out", "u8_out", "flag_out"]));
}

#[test]
fn fixed_batch_signature_has_a_fixed_batch_dim() {
    let sig = OnnxProvider::new().inspect(&onnx_stage(model("fixed_batch"))).unwrap();
    assert_eq!(sig.inputs, vec![spec("x", DType::F32, vec![Dim::Fixed(1), Dim::Fixed(8)])]);
    assert_eq!(sig.outputs, vec![spec("y", DType::F32, vec![Dim::Fixed(1), Dim::Fixed(8)])]);
}

#[test]
fn create_keeps_signature_order_for_several_inputs_and_outputs() {
    let engine = OnnxEngine::new(&onnx_stage(model("two_io"))).unwrap();
    let names = |specs: &[TensorSpec]| specs.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&engine.signature().inputs), ["a", "b"]);
    assert_eq!(names(&engine.signature().outputs), ["sum", "proj"]);

    let mut engine: Box<dyn Engine> = Box::new(engine);
    let a = Tensor::from_vec(vec![2, 16], (0..32).map(|i| i as f32).collect()).unwrap();
    let b = Tensor::from_vec(vec![2, 16], (0..32).map(|i| 100.0 * i as f32).collect()).unwrap();
    let out = engine.run(&[&a, &b]).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].shape(), &[2, 16]);
    assert_eq!(out[1].shape(), &[2, 4]);
    let want: Vec<f32> = (0..32).map(|i| 101.0 * i as f32).collect();
    assert_eq!(out[0].as_slice::<f32>().unwrap(), &want[..], "`sum` = a + b comes first");
}

#[test]
fn mlp_at_batch_3_matches_direct_ort_bitwise() {
    let data: Vec<f32> = (0..3 * 256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    let input = Tensor::from_slice(vec![3, 256], &data).unwrap();
    let mut engine = standard_registry().get("onnx").unwrap().create(&onnx_stage(model("mlp"))).unwrap();
    let out = engine.run(&[&input]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].shape(), &[3, 10]);

    let env = ort_library::environment().unwrap();
    let mut session = Session::builder(env)
        .unwrap()
        .with_optimization_level(GraphOptimizationLevel::All)
        .unwrap()
        .with_intra_threads(1)
        .unwrap()
        .with_inter_threads(1)
        .unwrap()
        .commit_from_file(model("mlp"))
        .unwrap();
    let direct =
        session.run(ort::inputs!["input" => TensorRef::from_array_view(([3usize, 256], &data[..])).unwrap()]).unwrap();
    let (shape, want) = direct["output"].try_extract_tensor::<f32>().unwrap();
    assert_eq!(&shape[..], &[3, 10]);
    let bits = |xs: &[f32]| xs.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    assert_eq!(bits(out[0].as_slice::<f32>().unwrap()), bits(want));
    assert!(want.iter().any(|&x| x != 0.0), "a zero output would compare equal too easily");
}

#[test]
fn dtypes_model_round_trips_every_dtype() {
    let mut engine = OnnxEngine::new(&onnx_stage(model("dtypes"))).unwrap();
    let f16s: Vec<f16> =
        [0.5f32, -1.25, 3.0, 100.0, 0.0, -0.75, 7.5, 2048.0].iter().map(|&x| f16::from_f32(x)).collect();
    let i64s: Vec<i64> = vec![-5, 0, 7, i64::MAX - 1, 1 << 40, -1, 2, 3];
    let i32s: Vec<i32> = vec![-5, 0, 7, i32::MAX - 1, 1 << 20, -1, 2, 3];
    let u8s: Vec<u8> = vec![0, 1, 2, 127, 128, 200, 254, 255];
    let flags: Vec<bool> = vec![true, false, false, true, true, true, false, false];
    let inputs = [
        Tensor::from_slice(vec![2, 4], &f16s).unwrap(),
        Tensor::from_slice(vec![2, 4], &i64s).unwrap(),
        Tensor::from_slice(vec![2, 4], &i32s).unwrap(),
        Tensor::from_slice(vec![2, 4], &u8s).unwrap(),
        Tensor::from_slice(vec![2, 4], &flags).unwrap(),
    ];
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let out = engine.run(&refs).unwrap();
    assert_eq!(out.len(), 5);
    for t in &out {
        assert_eq!(t.shape(), &[2, 4]);
    }
    let doubled: Vec<f16> = f16s.iter().map(|x| f16::from_f32(x.to_f32() * 2.0)).collect();
    assert_eq!(out[0].as_slice::<f16>().unwrap(), &doubled[..]);
    assert_eq!(out[1].as_slice::<i64>().unwrap(), &i64s.iter().map(|x| x + 1).collect::<Vec<_>>()[..]);
    assert_eq!(out[2].as_slice::<i32>().unwrap(), &i32s.iter().map(|x| x + 1).collect::<Vec<_>>()[..]);
    assert_eq!(out[3].as_slice::<u8>().unwrap(), &u8s[..]);
    assert_eq!(out[4].as_slice::<bool>().unwrap(), &flags.iter().map(|x| !x).collect::<Vec<_>>()[..]);
}

#[test]
fn a_stopped_run_fails_and_runs_go_through_again_once_cleared() {
    let mut engine = OnnxProvider::new().create(&onnx_stage(model("mlp"))).unwrap();
    let stop = engine.stop_handle().expect("ONNX Runtime runs can be stopped");
    let x = Tensor::from_vec(vec![2, 256], vec![0.5f32; 512]).unwrap();
    let before = engine.run(&[&x]).unwrap();
    // A stop asked before the run ends it at its first kernel (ORT looks before each one).
    stop.stop();
    let err = engine.run(&[&x]).unwrap_err().to_string();
    assert!(err.contains("terminate"), "{err}");
    stop.clear();
    let after = engine.run(&[&x]).unwrap();
    assert_eq!(after[0].as_slice::<f32>().unwrap(), before[0].as_slice::<f32>().unwrap());
}

#[test]
fn engine_moves_to_another_thread_and_runs_there() {
    let mut engine = OnnxProvider::new().create(&onnx_stage(model("fixed_batch"))).unwrap();
    let out = std::thread::spawn(move || {
        let x = Tensor::from_vec(vec![1, 8], (1..=8).map(|i| i as f32).collect()).unwrap();
        engine.run(&[&x]).unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(out[0].as_slice::<f32>().unwrap(), &[3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0]);
}

#[test]
fn missing_model_file_errors_naming_the_path() {
    let dir = temp_dir("missing");
    let path = dir.join("nope.onnx");
    let stage = onnx_stage(path.clone());
    let provider = OnnxProvider::new();
    let err = provider.inspect(&stage).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()) && err.contains("test.stages[0]"), "{err}");
    let err = provider.create(&stage).err().unwrap().to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
}

#[test]
fn stage_without_model_errors() {
    let mut stage = onnx_stage(model("mlp"));
    stage.model = None;
    let err = OnnxProvider::new().inspect(&stage).unwrap_err().to_string();
    assert_eq!(err, "stage test.stages[0]: the onnx engine needs `model = \"path.onnx\"`");
}

#[test]
fn unknown_params_key_errors_naming_it() {
    let mut stage = onnx_stage(model("mlp"));
    stage.params = "batch = 8".parse().unwrap();
    let err = OnnxProvider::new().inspect(&stage).unwrap_err().to_string();
    assert!(err.contains("`batch`"), "{err}");
    let err = OnnxProvider::new().create(&stage).err().unwrap().to_string();
    assert!(err.contains("`batch`"), "{err}");
}

#[test]
fn unloadable_model_errors_naming_the_path_and_ort_reason() {
    let dir = temp_dir("garbage");
    let path = dir.join("garbage.onnx");
    std::fs::write(&path, b"this is not a protobuf").unwrap();
    let err = OnnxProvider::new().inspect(&onnx_stage(path.clone())).unwrap_err().to_string();
    let canonical = path.canonicalize().unwrap();
    assert!(err.contains(&canonical.display().to_string()), "{err}");
    assert!(err.contains("Protobuf parsing failed"), "ONNX Runtime's reason is kept: {err}");
}

#[test]
fn inspect_caches_signatures_per_model_file() {
    let dir = temp_dir("cache");
    let path = dir.join("model.onnx");
    std::fs::copy(model("fixed_batch"), &path).unwrap();
    let stage = onnx_stage(path.clone());
    let provider = OnnxProvider::new();
    let first = provider.inspect(&stage).unwrap();
    // Corrupt the file: only a cached signature can still be returned.
    std::fs::write(&path, b"corrupted").unwrap();
    assert_eq!(provider.inspect(&stage).unwrap(), first);
    // The same file through another spelling of its path hits the same entry.
    let dotted = path.parent().unwrap().join(".").join("model.onnx");
    assert_eq!(provider.inspect(&onnx_stage(dotted)).unwrap(), first);
    // A fresh provider has no cache and must load (and fail on) the corrupted file.
    assert!(OnnxProvider::new().inspect(&stage).is_err());
}

#[test]
fn wrong_inputs_are_errors_not_panics() {
    let mut engine = OnnxEngine::new(&onnx_stage(model("mlp"))).unwrap();
    let ints = Tensor::zeros(DType::I32, vec![2, 256]).unwrap();
    let err = engine.run(&[&ints]).unwrap_err().to_string();
    assert!(err.contains("`input`") && err.contains("f32") && err.contains("i32"), "{err}");

    let x = Tensor::zeros(DType::F32, vec![2, 256]).unwrap();
    let err = engine.run(&[&x, &x]).unwrap_err().to_string();
    assert!(err.contains("1 inputs but 2"), "{err}");

    // A shape the model does not accept: ONNX Runtime's own message comes through.
    let narrow = Tensor::zeros(DType::F32, vec![2, 255]).unwrap();
    let err = engine.run(&[&narrow]).unwrap_err().to_string();
    assert!(err.contains("ONNX Runtime failed") && err.contains("Got invalid dimensions for input"), "{err}");
    // The engine still works afterwards.
    assert_eq!(engine.run(&[&x]).unwrap()[0].shape(), &[2, 10]);
}

/// `rows` rows of the MLP's input, each a different deterministic pattern.
fn mlp_rows(rows: usize, seed: usize) -> Tensor {
    let data: Vec<f32> = (0..rows * 256).map(|i| (((i + seed) * 37 % 101) as f32 - 50.0) / 25.0).collect();
    Tensor::from_slice(vec![rows, 256], &data).unwrap()
}

fn with_sizes(sizes: &[usize]) -> baton::StageRequest {
    baton::StageRequest { batch_sizes: baton::BatchSizes::new(sizes.to_vec()).unwrap(), ..onnx_stage(model("mlp")) }
}

#[test]
fn a_batch_padded_to_a_fixed_size_equals_the_batch_run_at_its_own_rows() {
    let mut padded = OnnxEngine::new(&with_sizes(&[1, 2, 4, 8])).unwrap();
    let mut plain = OnnxEngine::new(&onnx_stage(model("mlp"))).unwrap();
    for rows in [1, 3, 5, 8] {
        let input = mlp_rows(rows, rows);
        let got = padded.run(&[&input]).unwrap();
        let want = plain.run(&[&input]).unwrap();
        assert_eq!(got[0].shape(), &[rows, 10], "padding rows are cut from the outputs");
        // Row by row: a padded batch runs other kernels' blockings, so compare within f32 rounding.
        for (g, w) in got[0].as_slice::<f32>().unwrap().iter().zip(want[0].as_slice::<f32>().unwrap()) {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{rows} rows: {g} vs {w}");
        }
    }
}

fn in_pieces(sizes: &[usize], piece: usize) -> baton::StageRequest {
    let sizes =
        if sizes.is_empty() { baton::BatchSizes::none() } else { baton::BatchSizes::new(sizes.to_vec()).unwrap() };
    baton::StageRequest { batch_sizes: sizes.with_piece_rows(Some(piece)), ..onnx_stage(model("mlp")) }
}

#[test]
fn a_batch_run_in_pieces_equals_the_batch_run_whole_and_makes_one_run_a_piece() {
    let mut plain = OnnxEngine::new(&onnx_stage(model("mlp"))).unwrap();
    for sizes in [&[][..], &[1, 2, 4, 8, 16][..]] {
        let mut pieces = OnnxEngine::new(&in_pieces(sizes, 4)).unwrap();
        pieces.take_ort_runs();
        // Twice each: the first run of a piece's shape is unbound (learning), the second bound.
        for rows in [1, 3, 4, 5, 11, 16, 11, 16] {
            let input = mlp_rows(rows, rows);
            let got = pieces.run(&[&input]).unwrap();
            let want = plain.run(&[&input]).unwrap();
            assert_eq!(pieces.take_ort_runs(), rows.div_ceil(4) as u64, "{rows} rows in pieces of 4 ({sizes:?})");
            assert_eq!(got[0].shape(), &[rows, 10], "{sizes:?}");
            for (g, w) in got[0].as_slice::<f32>().unwrap().iter().zip(want[0].as_slice::<f32>().unwrap()) {
                assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{rows} rows ({sizes:?}): {g} vs {w}");
            }
        }
    }
}

#[test]
fn a_row_of_a_batch_in_pieces_is_answered_as_that_row_alone() {
    // Each row's answer is the row's alone: a batch of 11 rows in pieces of 4 answers row 9
    // as a batch of that one row does.
    let mut pieces = OnnxEngine::new(&in_pieces(&[], 4)).unwrap();
    let mut plain = OnnxEngine::new(&onnx_stage(model("mlp"))).unwrap();
    let input = mlp_rows(11, 3);
    let got = pieces.run(&[&input]).unwrap();
    let alone = plain.run(&[&input.rows(9..10).compact()]).unwrap();
    let row9 = got[0].rows(9..10);
    for (g, w) in row9.as_slice::<f32>().unwrap().iter().zip(alone[0].as_slice::<f32>().unwrap()) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
    }
}

#[test]
fn every_batch_size_runs_once_when_the_engine_is_made() {
    let engine = OnnxEngine::new(&with_sizes(&[1, 2, 4, 8])).unwrap();
    let rows: Vec<usize> = engine.warmed_sizes().iter().map(|w| w.rows).collect();
    assert_eq!(rows, [1, 2, 4, 8]);
    assert!(OnnxEngine::new(&onnx_stage(model("mlp"))).unwrap().warmed_sizes().is_empty());
}

#[test]
fn with_a_session_per_size_each_padded_size_runs_in_its_own_session() {
    let stage = with_sizes(&[1, 2, 4, 8]);
    let stage = baton::StageRequest { batch_sizes: stage.batch_sizes.with_session_per_size(true), ..stage };
    let mut own = OnnxEngine::new(&stage).unwrap();
    let mut shared = OnnxEngine::new(&with_sizes(&[1, 2, 4, 8])).unwrap();
    assert_eq!(own.warmed_sizes().iter().map(|w| w.rows).collect::<Vec<_>>(), [1, 2, 4, 8]);
    assert_eq!(own.runs_per_session(), [(1, 0), (2, 0), (4, 0), (8, 0)], "warm-up runs are not counted");
    for rows in [1, 3, 5, 8, 2, 11] {
        let input = mlp_rows(rows, rows);
        let got = own.run(&[&input]).unwrap();
        let want = shared.run(&[&input]).unwrap();
        assert_eq!(got[0].shape(), &[rows, 10]);
        assert_eq!(got[0], want[0], "{rows} rows: the same padded shape gives the same result in either session");
    }
    // 3 -> 4, 5 and 8 -> 8, 11 (past the largest size) runs in the largest size's session.
    assert_eq!(own.runs_per_session(), [(1, 1), (2, 1), (4, 1), (8, 3)]);
    assert_eq!(shared.runs_per_session(), [(usize::MAX, 6)]);
}

/// The MLP at sizes 1, 2, 4 and 8, a session each, each bound once to fixed buffers.
fn with_fixed_buffers() -> baton::StageRequest {
    let stage = with_sizes(&[1, 2, 4, 8]);
    let batch_sizes = stage.batch_sizes.with_session_per_size(true).with_fixed_buffers(true);
    baton::StageRequest { batch_sizes, ..stage }
}

#[test]
fn at_fixed_buffers_each_batch_is_copied_in_and_its_outputs_out_so_they_outlive_later_batches() {
    let mut fixed = OnnxEngine::new(&with_fixed_buffers()).unwrap();
    let mut plain = OnnxEngine::new(&onnx_stage(model("mlp"))).unwrap();
    let warmed: Vec<usize> = fixed.warmed_sizes().iter().map(|w| w.rows).collect();
    assert_eq!(warmed, [1, 2, 4, 8], "each size warmed (twice, reported once)");
    // 4 rows then 3 in the size-4 session: its padding row holds the earlier batch's last row.
    let batches = [(1, 0), (3, 1), (5, 2), (8, 3), (4, 4), (3, 5), (2, 6), (8, 7)];
    let held: Vec<(Tensor, Tensor)> = batches
        .iter()
        .map(|&(rows, seed)| {
            let input = mlp_rows(rows, seed);
            let got = fixed.run(&[&input]).unwrap().remove(0);
            assert_eq!(got.shape(), &[rows, 10]);
            (got, plain.run(&[&input]).unwrap().remove(0))
        })
        .collect();
    for ((got, want), (rows, _)) in held.iter().zip(batches) {
        assert_eq!(got, want, "{rows} rows: still the batch's own result after the later batches ran");
    }
    assert_eq!(fixed.runs_per_session(), [(1, 1), (2, 1), (4, 3), (8, 3)]);
}

#[test]
fn a_batch_of_other_shapes_at_fixed_buffers_is_an_error_naming_both() {
    let mut fixed = OnnxEngine::new(&with_fixed_buffers()).unwrap();
    // Past the largest size: it would run in the size-8 session, whose buffers hold 8 rows.
    let err = fixed.run(&[&mlp_rows(11, 0)]).unwrap_err().to_string();
    assert!(err.contains("[8, 256]") && err.contains("[11, 256]") && err.contains("fixed buffers"), "{err}");
    // The session still runs its own shape.
    assert_eq!(fixed.run(&[&mlp_rows(6, 0)]).unwrap()[0].shape(), &[6, 10]);
}

#[test]
fn fixed_buffers_refuse_a_model_whose_batch_dim_is_fixed_naming_the_stage() {
    let stage = baton::StageRequest {
        batch_sizes: baton::BatchSizes::new(vec![1, 2]).unwrap().with_session_per_size(true).with_fixed_buffers(true),
        ..onnx_stage(model("fixed_batch"))
    };
    let err = OnnxEngine::new(&stage).err().expect("refused").to_string();
    assert!(err.contains(&stage.location) && err.contains("dynamic first dim"), "{err}");
}

/// PP-OCRv4's detector (input `x`: [N, 3, H, W], H and W dynamic) at `sizes`, with `params`.
fn det_stage(sizes: &[usize], params: &str) -> baton::StageRequest {
    baton::StageRequest {
        batch_sizes: baton::BatchSizes::new(sizes.to_vec()).unwrap(),
        params: params.parse().unwrap(),
        ..onnx_stage(model("real/ch_PP-OCRv4_det_infer"))
    }
}

#[test]
fn a_model_with_dynamic_image_dims_warms_every_size_at_the_declared_dims_and_only_then() {
    let engine = OnnxEngine::new(&det_stage(&[1, 2], "warm_up_dims = { x = [3, 32, 64] }")).unwrap();
    assert_eq!(engine.warmed_sizes().iter().map(|w| w.rows).collect::<Vec<_>>(), [1, 2]);
    let undeclared = OnnxEngine::new(&det_stage(&[1, 2], "")).unwrap();
    assert!(undeclared.warmed_sizes().is_empty(), "an image's size is not known without them");
}

#[test]
fn warm_up_dims_errors_name_the_key_and_what_is_wrong() {
    let provider = OnnxProvider::new();
    let cases: [(&str, &[&str]); 4] = [
        ("warm_up_dims = { y = [3, 32, 64] }", &["warm_up_dims.y", "no input `y`", "its inputs: x"]),
        ("warm_up_dims = { x = [3, 32] }", &["warm_up_dims.x", "3 dims after the batch dim"]),
        ("warm_up_dims = { x = [1, 32, 64] }", &["warm_up_dims.x", "dim 1 of input `x` is fixed at 3"]),
        ("warm_up_dims = { x = [3, 0, 64] }", &["warm_up_dims.x", "each at least 1"]),
    ];
    for (params, want) in cases {
        let err = provider.inspect(&det_stage(&[1], params)).unwrap_err().to_string();
        assert!(want.iter().all(|w| err.contains(w)), "{params}: {err}");
    }
    let mlp =
        baton::StageRequest { params: "warm_up_dims = { input = [128] }".parse().unwrap(), ..onnx_stage(model("mlp")) };
    let err = provider.inspect(&mlp).unwrap_err().to_string();
    assert!(err.contains("dim 1 of input `input` is fixed at 256"), "{err}");
}

#[test]
fn a_model_with_a_fixed_batch_dim_runs_its_own_rows_whatever_the_sizes() {
    let stage = baton::StageRequest {
        batch_sizes: baton::BatchSizes::new(vec![1, 2, 4]).unwrap(),
        ..onnx_stage(model("fixed_batch"))
    };
    let mut engine = OnnxEngine::new(&stage).unwrap();
    assert!(engine.warmed_sizes().is_empty(), "sizes of a fixed batch dim are not run");
    let spec = &engine.signature().inputs[0];
    let shape: Vec<usize> = spec.shape.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { 1 }).collect();
    let input = Tensor::zeros(spec.dtype, shape.clone()).unwrap();
    let out = engine.run(&[&input]).unwrap();
    assert_eq!(out[0].shape()[0], shape[0]);
}

#[test]
fn outputs_are_written_into_the_same_buffers_once_the_last_batch_s_are_dropped() {
    let mut engine = OnnxEngine::new(&onnx_stage(model("mlp"))).unwrap();
    let input = mlp_rows(4, 0);
    let mut outputs = Vec::new();
    // The first run of a shape learns the output shapes; later ones bind.
    engine.run_into(&[&input], &mut outputs).unwrap();
    outputs.clear();
    engine.run_into(&[&input], &mut outputs).unwrap();
    let first = outputs[0].as_bytes().as_ptr();
    let want = outputs[0].clone();
    outputs.clear();
    drop(want);
    engine.run_into(&[&input], &mut outputs).unwrap();
    assert_eq!(outputs[0].as_bytes().as_ptr(), first, "a free buffer is reused");
    let held = outputs.pop().unwrap();
    engine.run_into(&[&mlp_rows(4, 9)], &mut outputs).unwrap();
    assert_ne!(outputs[0].as_bytes().as_ptr(), held.as_bytes().as_ptr(), "a held output is never overwritten");
    assert_ne!(outputs[0], held, "the held output keeps the earlier batch's values");
}
