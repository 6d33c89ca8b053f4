//! GPU execution on ONNX Runtime's CUDA provider (docs/gpu.md).
//!
//! Without a GPU (no `/dev/nvidia0`) or without the GPU build
//! (`scripts/setup.sh --gpu`), the tests that need one print why and pass
//! without running; the error a CUDA node gets there is itself tested. On a
//! machine with both, they show: the MLP, the two-input model, silero-vad and
//! PP-OCRv4 on CUDA equal ONNX Runtime on the CPU within 1e-3 of the output's scale; the
//! collab pipeline on the GPU names every session's category; a chain of two
//! GPU nodes copies nothing between host and device between them.
//!
//! A process holds one ONNX Runtime build, so every test here that loads
//! anything first asks for the GPU build ([`gpu`]): the CPU references then
//! run on its CPU provider.

use std::path::{Path, PathBuf};

use baton::execution::{CudaOptions, Execution};
use baton::{Engine, PipelineSpec, Request, Runtime, StageRequest, Tensor};
use baton_e2e::{model, repo_root, Direct, TestFile};
use baton_engines::OnnxEngine;
use baton_stages::collab::session::Sessions;
use rand::SeedableRng;

/// Whether this machine can run CUDA nodes (the GPU build loaded); else prints why not.
fn gpu(test: &str) -> bool {
    match baton_engines::ort_library::gpu_environment(0) {
        Ok(_) => true,
        Err(why) => {
            eprintln!("{test}: skipped, no GPU to run on: {why}");
            false
        }
    }
}

/// CUDA device 0 without TF32, so results compare with the CPU's f32 within 1e-3.
fn cuda() -> Execution {
    Execution::Cuda { device: 0, options: CudaOptions { tf32: Some(false), ..CudaOptions::default() } }
}

fn stage(model: PathBuf, execution: Execution) -> StageRequest {
    StageRequest {
        location: "gpu-test.stages[0]".into(),
        model: Some(model),
        params: Default::default(),
        intra_threads: 1,
        inter_threads: 1,
        execution,
        batch_sizes: baton::BatchSizes::none(),
        device_outputs: Vec::new(),
    }
}

/// Largest |got - want| over the elements, relative to the largest |want|: the error at the
/// output's own scale. (An element-by-element relative error would weigh the near-zero pixels of
/// a probability map, where any two convolution algorithms differ in the last bits.)
fn scaled_error(got: &Tensor, want: &Tensor) -> f64 {
    assert_eq!(got.shape(), want.shape());
    let (g, w) = (got.as_slice::<f32>().unwrap(), want.as_slice::<f32>().unwrap());
    let scale = w.iter().fold(0.0f64, |m, &x| m.max(f64::from(x).abs())).max(1e-6);
    let largest = g.iter().zip(w).map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs()).fold(0.0, f64::max);
    largest / scale
}

/// Runs `model` with Baton's onnx engine on CUDA and with ONNX Runtime on the CPU, on the same
/// inputs; every f32 output must agree within 1e-3 of its scale ([`scaled_error`]).
fn cuda_equals_cpu(name: &str, inputs: &[(&str, Tensor)]) {
    let path = model(name);
    let mut engine = OnnxEngine::new(&stage(path.clone(), cuda())).unwrap_or_else(|e| panic!("{e}"));
    let ordered: Vec<&Tensor> = engine
        .signature()
        .inputs
        .iter()
        .map(|spec| &inputs.iter().find(|(n, _)| *n == spec.name).expect("an input per model input").1)
        .collect();
    let outputs = engine.run(&ordered).unwrap_or_else(|e| panic!("{e}"));
    let named: Vec<(&str, &Tensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    let reference = Direct::load(name).run(&named);
    for (spec, got) in engine.signature().outputs.iter().zip(&outputs) {
        let want = &reference.iter().find(|(n, _)| *n == spec.name).unwrap().1;
        if got.dtype() == baton::DType::F32 {
            let err = scaled_error(got, want);
            assert!(err <= 1e-3, "{name}: output `{}` differs from the CPU by {err:.2e} of its scale", spec.name);
            eprintln!("{name}: `{}` within {err:.2e} of its scale of the CPU", spec.name);
        } else {
            assert_eq!(got.as_bytes(), want.as_bytes(), "{name}: output `{}`", spec.name);
        }
    }
}

fn rng() -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(7)
}

#[test]
fn the_mlp_on_cuda_equals_onnx_runtime_on_the_cpu() {
    if !gpu("mlp") {
        return;
    }
    cuda_equals_cpu("mlp.onnx", &[("input", baton_e2e::random_f32(&mut rng(), 32, 256))]);
}

#[test]
fn the_two_input_model_on_cuda_equals_onnx_runtime_on_the_cpu() {
    if !gpu("two_io") {
        return;
    }
    let mut rng = rng();
    let a = baton_e2e::random_f32(&mut rng, 8, 16);
    let b = baton_e2e::random_f32(&mut rng, 8, 16);
    cuda_equals_cpu("two_io.onnx", &[("a", a), ("b", b)]);
}

#[test]
fn silero_vad_on_cuda_equals_onnx_runtime_on_the_cpu() {
    if !gpu("silero-vad") {
        return;
    }
    let mut rng = rng();
    let chunk = baton_e2e::random_f32(&mut rng, 16, 576);
    let state = baton_e2e::random_f32(&mut rng, 16, 2 * 128).reshape(vec![16, 2, 128]).unwrap();
    // The batch-first wrapper the collab pipeline runs.
    cuda_equals_cpu("real/vad_batched.onnx", &[("chunk", chunk), ("state", state)]);
}

/// Two of the committed text images (`data/images/`) as the detector's input, resized to
/// 96x160 and normalized as the OCR pipeline does. On a real image the probability map's
/// scale is 1; on noise it is about 2e-6, where the CPU provider's own sigmoid rounds in
/// steps of 6e-8 (docs/gpu.md, "Finding where CUDA and the CPU differ").
fn det_images() -> Tensor {
    use baton_stages::ocr::{det_input, image::resize_linear, load_png, DetSettings, LimitType};
    let settings = DetSettings { limit_type: LimitType::Max, limit_side_len: 160, ..DetSettings::default() };
    let parts: Vec<Tensor> = ["s00.png", "s01.png"]
        .iter()
        .map(|name| {
            let image = load_png(repo_root().join("data/images").join(name)).expect("a committed image");
            det_input(&resize_linear(&image, 160, 96), &settings).0
        })
        .collect();
    baton::tensor::stitch(&parts.iter().collect::<Vec<_>>()).unwrap()
}

#[test]
fn pp_ocrv4_on_cuda_equals_onnx_runtime_on_the_cpu() {
    if !gpu("PP-OCRv4") {
        return;
    }
    let det = det_images();
    assert_eq!(det.shape(), &[2, 3, 96, 160]);
    cuda_equals_cpu("real/ch_PP-OCRv4_det_infer.onnx", &[("x", det)]);
    let mut rng = rng();
    let rec = baton_e2e::random_f32(&mut rng, 4, 3 * 48 * 320);
    cuda_equals_cpu("real/ch_PP-OCRv4_rec_infer.onnx", &[("x", rec.reshape(vec![4, 3, 48, 320]).unwrap())]);
}

#[test]
fn a_batch_padded_to_a_fixed_size_on_cuda_equals_the_cpu_and_every_size_ran_at_load() {
    if !gpu("padded") {
        return;
    }
    for own in [false, true] {
        let sizes = baton::BatchSizes::gpu_default(8).with_session_per_size(own);
        let request = StageRequest { batch_sizes: sizes, ..stage(model("mlp.onnx"), cuda()) };
        let mut engine = OnnxEngine::new(&request).unwrap_or_else(|e| panic!("{e}"));
        let warmed: Vec<usize> = engine.warmed_sizes().iter().map(|w| w.rows).collect();
        assert_eq!(warmed, [1, 2, 3, 4, 6, 8]);
        for w in engine.warmed_sizes() {
            eprintln!(
                "padded (session per size: {own}): warm-up of {} rows took {:.1} ms",
                w.rows,
                w.took.as_secs_f64() * 1e3
            );
        }
        let mut direct = Direct::load("mlp.onnx");
        for rows in [3, 5, 7] {
            let input = baton_e2e::random_f32(&mut rng(), rows, 256);
            let got = engine.run(&[&input]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(got[0].shape()[0], rows, "padding rows are cut from the outputs");
            let want = direct.run(&[("input", &input)]);
            let err = scaled_error(&got[0], &want[0].1);
            assert!(err <= 1e-3, "{rows} rows padded on CUDA differ from the CPU by {err:.2e}");
        }
        let runs = engine.runs_per_session();
        let want: Vec<(usize, u64)> =
            if own { vec![(1, 0), (2, 0), (3, 0), (4, 1), (6, 1), (8, 1)] } else { vec![(usize::MAX, 3)] };
        assert_eq!(runs, want, "3, 5 and 7 rows run at sizes 4, 6 and 8");
    }
}

#[test]
fn cuda_graphs_per_size_equal_the_cpu_and_keep_held_outputs() {
    if !gpu("cuda graphs") {
        return;
    }
    let options = CudaOptions { tf32: Some(false), cuda_graph: true, ..CudaOptions::default() };
    let sizes = baton::BatchSizes::gpu_default(8).with_session_per_size(true).with_fixed_buffers(true);
    let request =
        StageRequest { batch_sizes: sizes, ..stage(model("mlp.onnx"), Execution::Cuda { device: 0, options }) };
    let mut engine = OnnxEngine::new(&request).unwrap_or_else(|e| panic!("{e}"));
    for w in engine.warmed_sizes() {
        eprintln!("cuda graphs: warm-up and capture of {} rows took {:.1} ms", w.rows, w.took.as_secs_f64() * 1e3);
    }
    let mut direct = Direct::load("mlp.onnx");
    let mut rng = rng();
    let held: Vec<(usize, Tensor, Tensor)> = [3, 5, 7, 3, 8, 1]
        .into_iter()
        .map(|rows| {
            let input = baton_e2e::random_f32(&mut rng, rows, 256);
            let got = engine.run(&[&input]).unwrap_or_else(|e| panic!("{e}")).remove(0);
            (rows, got, direct.run(&[("input", &input)]).remove(0).1)
        })
        .collect();
    for (rows, got, want) in &held {
        assert_eq!(got.shape()[0], *rows, "padding rows are cut from the outputs");
        let err = scaled_error(got, want);
        assert!(err <= 1e-3, "{rows} rows through a CUDA graph differ from the CPU by {err:.2e}");
    }
    let runs = engine.runs_per_session();
    assert_eq!(runs, [(1, 1), (2, 0), (3, 0), (4, 2), (6, 1), (8, 2)], "each batch in its padded size's graph");
}

#[test]
fn bound_runs_on_cuda_reuse_their_output_buffers_and_keep_held_outputs() {
    if !gpu("bound") {
        return;
    }
    let mut engine = OnnxEngine::new(&stage(model("mlp.onnx"), cuda())).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = rng();
    let (a, b) = (baton_e2e::random_f32(&mut rng, 4, 256), baton_e2e::random_f32(&mut rng, 4, 256));
    let mut outputs = Vec::new();
    for _ in 0..2 {
        outputs.clear();
        engine.run_into(&[&a], &mut outputs).unwrap_or_else(|e| panic!("{e}"));
    }
    let first = outputs[0].as_bytes().as_ptr();
    let held = outputs.pop().unwrap();
    engine.run_into(&[&b], &mut outputs).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(outputs[0].as_bytes().as_ptr(), first);
    assert_ne!(outputs[0], held, "a held output keeps its batch's values");
    drop(held);
    outputs.clear();
    engine.run_into(&[&a], &mut outputs).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outputs[0].as_bytes().as_ptr(), first, "a free output buffer is reused");
}

/// `configs/collab.toml` with every ONNX node on CUDA device 0 (see configs/collab-gpu.toml).
#[test]
fn the_collab_pipeline_on_the_gpu_names_every_session_s_category() {
    if !gpu("collab") {
        return;
    }
    let root = repo_root();
    let runtime = Runtime::from_file(&root.join("configs/collab-gpu.toml"), &baton_stages::collab::registry())
        .unwrap_or_else(|e| panic!("{e}"));
    let data = Sessions::load(&root.join("data")).expect("committed sessions");
    let results = baton_e2e::stream_every_session(&runtime, &data);
    for session in &data.sessions {
        let category = &data.categories[results[&session.id].category];
        assert_eq!(category, &session.expected_category, "{}: recommended {category}", session.id);
    }
}

/// A chain embed → branch_a, both on CUDA device 0: `embed.h` stays on the device.
const CHAIN: &str = r#"
[inputs.x]
to = ["embed.x"]
[outputs.a]
from = "branch_a.a"
[nodes.embed]
stages = [{ model = "@MODELS@/embed.onnx" }]
provider = "cuda"
cuda = { tf32 = false }
[nodes.branch_a]
stages = [{ model = "@MODELS@/branch_a.onnx" }]
provider = "cuda"
cuda = { tf32 = false }
[[edges]]
from = "embed.h"
to = "branch_a.h"
"#;

fn write_chain() -> TestFile {
    TestFile::write("gpu", "chain.toml", &CHAIN.replace("@MODELS@", &repo_root().join("models").display().to_string()))
}

#[test]
fn a_chain_of_two_gpu_nodes_copies_nothing_between_them() {
    if !gpu("chain") {
        return;
    }
    let runtime = Runtime::from_file(&write_chain(), &baton_e2e::registry()).unwrap_or_else(|e| panic!("{e}"));
    let x = baton_e2e::random_f32(&mut rng(), 1, 32);
    let out = runtime.submit(Request::new().input("x", x.clone())).wait().unwrap();
    let want =
        Direct::load("branch_a.onnx").run_one(&[("h", &Direct::load("embed.onnx").run_one(&[("x", &x)], "h"))], "a");
    assert!(scaled_error(out.get("a").unwrap(), &want) <= 1e-3);
    let stats = runtime.node_stats();
    let by_name = |n: &str| stats.iter().find(|s| s.name == n).unwrap();
    // The request's input goes in once and its output comes out once; `h` is never copied.
    assert_eq!(by_name("embed").host_device_bytes, 32 * 4, "embed copies x in and nothing out");
    assert_eq!(by_name("branch_a").host_device_bytes, want.as_bytes().len() as u64, "branch_a copies a out only");
}

/// Runs `baton check FILE` with `env` set: the binary `BATON_BIN` names (on a machine
/// without cargo), else through cargo (as config_errors.rs does).
fn baton_check(file: &Path, env: &[(&str, &Path)]) -> std::process::Output {
    let mut command = match std::env::var_os("BATON_BIN") {
        Some(bin) => std::process::Command::new(bin),
        None => {
            let mut cargo = std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
            cargo.args(["run", "-q", "-p", "baton-cli", "--"]);
            cargo
        }
    };
    command.current_dir(repo_root()).arg("check").arg(file);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("baton runs")
}

#[test]
fn a_cuda_node_without_the_gpu_build_is_one_error_naming_the_node_and_the_fix() {
    // ORT_DYLIB_PATH at a core library with no CUDA provider beside it (the CPU build's
    // layout): whatever this machine has, the GPU build is not there.
    let cpu_build = TestFile::write("gpu-cpu-build", "libonnxruntime.so.1.31.1", "");
    let out = baton_check(&write_chain(), &[("ORT_DYLIB_PATH", &cpu_build)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit 2 on a pipeline that cannot load; stderr:\n{stderr}");
    assert_eq!(stderr.lines().filter(|l| !l.trim().is_empty()).count(), 1, "one error:\n{stderr}");
    assert!(stderr.contains("nodes.branch_a.provider") || stderr.contains("nodes.embed.provider"), "{stderr}");
    assert!(stderr.contains("not the GPU build") && stderr.contains("scripts/setup.sh --gpu"), "{stderr}");
}

#[test]
fn a_cuda_node_on_a_machine_without_a_gpu_is_one_error_naming_the_node() {
    if Path::new("/dev/nvidia0").exists() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let err = PipelineSpec::from_file(&write_chain(), &baton_e2e::registry()).err().expect("refused").to_string();
    assert!(err.contains("nodes.branch_a.provider") || err.contains("nodes.embed.provider"), "{err}");
    // Without the GPU build the fix is the set-up; with it, the missing GPU is named.
    assert!(err.contains("scripts/setup.sh --gpu") || err.contains("no NVIDIA GPU on this machine"), "{err}");
}
