//! Fuzz targets of Baton's hostile-input surfaces, one function per target.
//!
//! Each function takes arbitrary bytes and feeds them to one surface that reads
//! input Baton does not control: pipeline files ([`config_loader`]), KServe v2
//! infer request bodies in JSON ([`v2_json_request`]), with binary tensors
//! ([`v2_binary_request`]) and over gRPC ([`v2_grpc_request`]), and batch stitching of tensors of odd shapes
//! ([`stitch_shapes`]). Errors are the expected answer to most inputs; a panic
//! (including a failed invariant check here) is a finding, and so is an
//! allocation out of proportion to the input, which the fuzzer catches with
//! its memory limits.
//!
//! The cargo-fuzz harness in `fuzz/` calls these functions from thin
//! `fuzz_targets/*.rs`; the replay test of this crate feeds them every file of
//! `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`, so `cargo test`
//! keeps what the fuzzer found fixed without a nightly toolchain.
//!
//! ```
//! baton_fuzz_targets::run("stitch_shapes", &[0, 0, 1, 0, 2, 1, 3]);
//! baton_fuzz_targets::config_loader(b"[pipeline]\nname = 3\n");
//! ```

use std::sync::OnceLock;

use baton::engine::{Dim, EngineRegistry, ModelSignature, TensorSpec};
use baton::spec::PipelineSpec;
use baton::tensor::{checked_len, stitch, stitch_padded};
use baton::{DType, FunctionStage, PipelineConfig, Tensor, TensorError};
use baton_server::http::decode_infer;
use baton_server::model::{ErrorKind, TensorMeta};

/// The fuzz targets by name, as `fuzz/fuzz_targets/` and `fuzz/corpus/` name them.
pub const TARGETS: [&str; 5] =
    ["config_loader", "v2_json_request", "v2_binary_request", "v2_grpc_request", "stitch_shapes"];

/// Runs target `name` on `data`. Panics on an unknown name.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "config_loader" => config_loader(data),
        "v2_json_request" => v2_json_request(data),
        "v2_binary_request" => v2_binary_request(data),
        "v2_grpc_request" => v2_grpc_request(data),
        "stitch_shapes" => stitch_shapes(data),
        other => panic!("no fuzz target named `{other}` (targets: {})", TARGETS.join(", ")),
    }
}

// ---------------------------------------------------------------- config loader

/// Most state bytes per stream the config target lets a pipeline file ask for.
/// A file may legitimately ask for gigabytes of zeroed state when its
/// `streams.max_state_bytes` allows it; the target caps the limit so that a
/// tiny file asking for that is not reported as a finding.
pub const CONFIG_STATE_BYTES: usize = 16 << 20;

fn spec(name: &str, dtype: DType, shape: &[i64]) -> TensorSpec {
    let shape = shape.iter().map(|&d| if d < 0 { Dim::Dynamic(None) } else { Dim::Fixed(d as usize) }).collect();
    TensorSpec { name: name.to_string(), dtype, shape }
}

/// The engines the config target validates against: the cost-model engine under
/// its own kind and under `onnx` (signatures from the stage's `params`, no
/// model file read), and a few function stages with fixed signatures.
fn registry() -> &'static EngineRegistry {
    static REGISTRY: OnceLock<EngineRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let function = |inputs: Vec<TensorSpec>, outputs: Vec<TensorSpec>| {
            FunctionStage::new(ModelSignature { inputs, outputs }, |_, _| Err("not run by the fuzz target".into()))
        };
        EngineRegistry::new()
            .with("cost_model", baton_engines::CostModelProvider::new())
            .with("onnx", baton_engines::CostModelProvider::new())
            .with_function(
                "identity",
                function(vec![spec("x", DType::F32, &[-1, -1])], vec![spec("y", DType::F32, &[-1, -1])]),
            )
            .with_function(
                "crops",
                function(
                    vec![spec("image", DType::U8, &[-1, -1, -1, 3]), spec("mask", DType::F32, &[-1, 1, -1, -1])],
                    vec![spec("crops", DType::U8, &[-1, 48, -1, 3]), spec("boxes", DType::I64, &[-1, 4])],
                ),
            )
            .with_function(
                "decode",
                function(
                    vec![spec("logits", DType::F32, &[-1, -1, -1])],
                    vec![spec("text", DType::I64, &[-1, -1]), spec("flag", DType::Bool, &[-1, 1])],
                ),
            )
    })
}

/// Parses and validates pipeline file text as [`config_loader`] does: `None`
/// when it is not UTF-8, else the validated pipeline or the error.
pub fn load_config(data: &[u8]) -> Option<Result<PipelineSpec, baton::ConfigError>> {
    let text = std::str::from_utf8(data).ok()?;
    let mut config = match PipelineConfig::parse(text) {
        Ok(config) => config,
        Err(e) => {
            assert!(!e.message.is_empty(), "a parse error says what is wrong");
            return Some(Err(e));
        }
    };
    for node in config.nodes.values_mut() {
        for stage in &mut node.stages {
            stage.model = None;
        }
        for state in &mut node.state {
            state.initial = None;
        }
    }
    config.streams.max_state_bytes = config.streams.max_state_bytes.min(CONFIG_STATE_BYTES);
    let result = PipelineSpec::build(&config, None, registry());
    if let Err(e) = &result {
        assert!(!e.message.is_empty(), "a validation error says what is wrong ({})", e.location);
    }
    Some(result)
}

/// Pipeline file text → parse → validation into a [`PipelineSpec`], with the
/// engines of [`registry`]. Model files and `.npy` initial states are left out
/// (their paths depend on the machine), `streams.max_state_bytes` is capped at
/// [`CONFIG_STATE_BYTES`]. A pipeline that validates must have a topological
/// order that is a permutation with every node after its parents, and every
/// node must run for a request carrying every input.
pub fn config_loader(data: &[u8]) {
    let Some(Ok(spec)) = load_config(data) else { return };
    let n = spec.nodes.len();
    let mut position = vec![usize::MAX; n];
    for (i, &node) in spec.topo_order.iter().enumerate() {
        assert_eq!(position[node], usize::MAX, "node {node} twice in the topological order");
        position[node] = i;
    }
    assert!(position.iter().all(|&p| p < n), "topological order {:?} misses nodes", spec.topo_order);
    for (node, parents) in spec.parents().iter().enumerate() {
        for &p in parents {
            assert!(position[p] < position[node], "parent {p} after child {node} in {:?}", spec.topo_order);
        }
    }
    let runs = spec.running_nodes(&vec![true; spec.inputs.len()]);
    assert!(runs.iter().all(|&r| r), "with every input present every node runs: {runs:?}");
    for node in &spec.nodes {
        for state in &node.state {
            assert!(state.initial.as_bytes().len() <= CONFIG_STATE_BYTES, "state over max_state_bytes");
        }
    }
    let _ = spec.describe();
}

// ---------------------------------------------------------------- v2 requests

/// The model the request targets decode for: one input of each dtype, with
/// fixed and dynamic dims.
fn model_inputs() -> &'static [TensorMeta] {
    static INPUTS: OnceLock<Vec<TensorMeta>> = OnceLock::new();
    INPUTS.get_or_init(|| {
        [
            spec("x", DType::F32, &[-1, 4]),
            spec("f64", DType::F64, &[-1, -1]),
            spec("half", DType::F16, &[-1, 2]),
            spec("ids", DType::I64, &[-1, -1]),
            spec("i32", DType::I32, &[-1, 2]),
            spec("i16", DType::I16, &[-1, -1]),
            spec("i8", DType::I8, &[-1]),
            spec("image", DType::U8, &[-1, -1, -1, 3]),
            spec("flag", DType::Bool, &[-1, -1]),
        ]
        .iter()
        .map(TensorMeta::new)
        .collect()
    })
}

/// Checks a decode's result: errors are bad requests with a message; decoded
/// tensors fit the model's inputs, and all of them together hold at most 8
/// bytes per body byte (no shape makes a small body allocate much).
fn check_decoded(result: Result<Vec<(String, Tensor)>, baton_server::model::ServeError>, body_len: usize) {
    match result {
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::BadRequest, "{}", e.message);
            assert!(!e.message.is_empty());
        }
        Ok(inputs) => {
            let mut bytes = 0usize;
            for (name, tensor) in &inputs {
                let meta = model_inputs().iter().find(|m| &m.name == name).expect("decoded inputs are model inputs");
                assert_eq!(tensor.dtype(), meta.dtype, "input `{name}`");
                assert_eq!(tensor.shape().len(), meta.shape.len(), "input `{name}`");
                for (&d, &m) in tensor.shape().iter().zip(&meta.shape) {
                    assert!(m < 0 || d as i64 == m, "input `{name}` {:?} against {:?}", tensor.shape(), meta.shape);
                }
                assert_eq!(tensor.as_bytes().len(), tensor.len() * tensor.dtype().size());
                bytes += tensor.as_bytes().len();
            }
            assert!(bytes <= 8 * body_len, "{bytes} tensor bytes from a {body_len}-byte body");
        }
    }
}

/// A KServe v2 infer request body in JSON (no binary part).
pub fn v2_json_request(data: &[u8]) {
    check_decoded(decode_infer("fuzz", model_inputs(), None, data).map(|d| d.inputs), data.len());
}

/// A KServe v2 infer request with binary tensors: the bytes up to the first
/// newline are the Inference-Header-Content-Length header's value, the rest is
/// the body (JSON header, then the binary tensors). Without a newline the
/// whole input is the body and the header is absent.
pub fn v2_binary_request(data: &[u8]) {
    let (header, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (Some(&data[..i]), &data[i + 1..]),
        None => (None, data),
    };
    check_decoded(decode_infer("fuzz", model_inputs(), header, body).map(|d| d.inputs), body.len());
}

/// A KServe v2 gRPC ModelInfer request, protobuf-encoded: inputs from
/// `raw_input_contents` or typed `contents`.
pub fn v2_grpc_request(data: &[u8]) {
    let Ok(request) = <baton_server::pb::ModelInferRequest as prost::Message>::decode(data) else { return };
    let result = baton_server::grpc::decode_infer("fuzz", model_inputs(), &request);
    check_decoded(result.map(|(_, inputs)| inputs), data.len());
}

// ---------------------------------------------------------------- stitching

/// Reads the fuzz input byte by byte, zeros once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// A dim: mostly small (0 to 7), sometimes absurd.
    fn dim(&mut self) -> usize {
        const ABSURD: [usize; 8] =
            [1 << 31, 1 << 40, 1_000_000_000_000, usize::MAX, usize::MAX / 2, 1 << 62, 4097, 65_536];
        match self.byte() {
            b @ 0..=239 => usize::from(b % 8),
            b => ABSURD[usize::from(b - 240) % ABSURD.len()],
        }
    }
}

/// Largest tensor, bytes, the stitch target builds as a part.
const PART_BYTES: usize = 1 << 16;
/// Largest padded batch, elements, the stitch target asks for: padding up to
/// the largest part along each axis can legitimately ask for far more than the
/// parts hold (bounded by [`baton::tensor::MAX_TENSOR_BYTES`] only).
const PADDED_ELEMENTS: usize = 1 << 20;

/// Tensors of odd shapes and dtypes (zero-size dims, rank mismatches,
/// different trailing dims, absurd dims) through [`stitch`], [`stitch_padded`],
/// [`Tensor::rows`], [`Tensor::crop_to`] and [`Tensor::reshape`]. A shape whose
/// size overflows or passes the limit must fail as [`TensorError::TooLarge`];
/// a stitched batch must hold exactly its parts, row range by row range.
pub fn stitch_shapes(data: &[u8]) {
    let mut input = Bytes(data);
    let op = input.byte();
    let dtype = DType::ALL[usize::from(input.byte()) % DType::ALL.len()];
    let count = 1 + usize::from(input.byte() % 4);
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        let b = input.byte();
        let part_dtype = if b & 0x80 != 0 { DType::ALL[usize::from(b) % DType::ALL.len()] } else { dtype };
        let rank = usize::from(input.byte() % 5);
        let shape: Vec<usize> = (0..rank).map(|_| input.dim()).collect();
        let elements = match checked_len(&shape, part_dtype) {
            Ok(n) => n,
            Err(e) => {
                assert!(matches!(e, TensorError::TooLarge { .. }), "{e}");
                assert!(Tensor::zeros(part_dtype, shape).is_err());
                continue;
            }
        };
        let len = elements * part_dtype.size();
        if len > PART_BYTES {
            continue;
        }
        let bytes: Vec<u8> =
            (0..len).map(|_| if part_dtype == DType::Bool { input.byte() & 1 } else { input.byte() }).collect();
        let tensor = Tensor::from_bytes(part_dtype, shape, &bytes).expect("length and bool bytes are right");
        assert_eq!(tensor.as_bytes(), bytes.as_slice());
        parts.push(tensor);
    }
    let refs: Vec<&Tensor> = parts.iter().collect();
    match op % 4 {
        0 => {
            if let Ok(batch) = stitch(&refs) {
                check_batch(&batch, &refs, false);
            }
        }
        1 => {
            let axes: Vec<usize> = (0..1 + input.byte() % 3).map(|_| usize::from(input.byte() % 6)).collect();
            let multiples: Vec<usize> = axes.iter().map(|_| 1 + usize::from(input.byte() % 3)).collect();
            let value = f64::from(input.byte() as i8) * 0.5;
            // Each padded axis rounds up to a multiple of at most 3: at most 3 times its largest.
            let padded: usize = (0..refs.first().map_or(0, |t| t.shape().len()))
                .map(|d| refs.iter().filter_map(|t| t.shape().get(d)).copied().max().unwrap_or(0).max(1))
                .fold(refs.len(), usize::saturating_mul)
                .saturating_mul(3usize.pow(axes.len() as u32));
            if padded > PADDED_ELEMENTS {
                return;
            }
            if let Ok(batch) = stitch_padded(&refs, &axes, &multiples, value) {
                check_batch(&batch, &refs, true);
            }
        }
        2 => {
            for part in &parts {
                if part.shape().is_empty() {
                    continue;
                }
                let n = part.shape()[0];
                let a = usize::from(input.byte()) % (n + 1);
                let b = a + usize::from(input.byte()) % (n - a + 1);
                let rows = part.rows(a..b);
                let row = part.as_bytes().len().checked_div(n).unwrap_or(0);
                assert_eq!(rows.as_bytes(), &part.as_bytes()[a * row..b * row]);
                assert_eq!(rows.compact(), rows);
                if b > a {
                    assert_eq!(rows.rows(0..b - a), rows);
                    assert_eq!(rows.rows(1..b - a), part.rows(a + 1..b));
                }
            }
        }
        _ => {
            for part in &parts {
                let rank = if input.byte() & 1 == 0 { part.shape().len() } else { usize::from(input.byte() % 5) };
                let shape: Vec<usize> = (0..rank).map(|_| input.dim()).collect();
                if let Ok(crop) = part.crop_to(&shape) {
                    assert_eq!(crop.shape(), shape.as_slice());
                    assert_eq!(crop.crop_to(&shape).unwrap(), crop);
                }
                if let Ok(reshaped) = part.reshape(shape.clone()) {
                    assert_eq!(reshaped.as_bytes(), part.as_bytes());
                    assert_eq!(reshaped.shape(), shape.as_slice());
                }
            }
        }
    }
}

/// A stitched batch holds its parts in order: rows `r..r + rows` of the batch
/// are part `i` (cropped back to the part's shape when padded).
fn check_batch(batch: &Tensor, parts: &[&Tensor], padded: bool) {
    let total: usize = parts.iter().map(|p| p.shape()[0]).sum();
    assert_eq!(batch.shape()[0], total, "batch rows against the parts' rows");
    let mut start = 0;
    for part in parts {
        let rows = batch.rows(start..start + part.shape()[0]);
        let rows = if padded { rows.crop_to(part.shape()).expect("a padded batch covers each part") } else { rows };
        assert_eq!(&rows, *part, "rows {start}.. of the batch");
        start += part.shape()[0];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(target: &str, name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../seeds").join(target).join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn config_seeds_reach_valid_pipelines() {
        // The fuzzer starts from these: each must get through validation, so mutations explore deep checks.
        for name in
            ["cost_diamond.toml", "cost_count.toml", "cost_stateful.toml", "cost_state_shape.toml", "cost_ocr.toml"]
        {
            let spec = load_config(&seed("config_loader", name)).unwrap().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!spec.nodes.is_empty());
        }
        let Some(Err(err)) = load_config(&seed("config_loader", "cycle.toml")) else { panic!("cycle.toml validated") };
        assert!(err.message.contains("cycle"), "{err}");
    }

    #[test]
    fn request_seeds_decode() {
        for (target, name, header) in [
            ("v2_json_request", "nested.json", None),
            ("v2_json_request", "image.json", None),
            ("v2_binary_request", "flag.bin", Some(())),
        ] {
            let data = seed(target, name);
            let (header, body) = match header {
                Some(()) => {
                    let i = data.iter().position(|&b| b == b'\n').unwrap();
                    (Some(&data[..i]), &data[i + 1..])
                }
                None => (None, &data[..]),
            };
            let decoded =
                decode_infer("fuzz", model_inputs(), header, body).unwrap_or_else(|e| panic!("{name}: {}", e.message));
            assert!(!decoded.inputs.is_empty());
        }
    }

    #[test]
    fn grpc_seeds_decode_and_absurd_ones_are_refused() {
        let decode = |name: &str| {
            let request =
                <baton_server::pb::ModelInferRequest as prost::Message>::decode(&seed("v2_grpc_request", name)[..])
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            baton_server::grpc::decode_infer("fuzz", model_inputs(), &request)
        };
        for name in ["x_raw.pb", "ids_contents.pb", "image_contents.pb", "flag_raw.pb"] {
            let (_, inputs) = decode(name).unwrap_or_else(|e| panic!("{name}: {}", e.message));
            assert_eq!(inputs.len(), 1, "{name}");
        }
        for name in ["huge_shape.pb", "negative_dim.pb", "raw_count.pb", "half_contents.pb", "params.pb"] {
            let err = decode(name).err().unwrap_or_else(|| panic!("{name} decoded"));
            assert_eq!(err.kind, ErrorKind::BadRequest, "{name}");
        }
    }

    #[test]
    fn absurd_request_shapes_are_refused_before_allocating() {
        for (name, binary) in [("huge_shape.json", false), ("huge_shape.bin", true), ("huge_header.bin", true)] {
            let target = if binary { "v2_binary_request" } else { "v2_json_request" };
            let data = seed(target, name);
            let (header, body) = match data.iter().position(|&b| b == b'\n') {
                Some(i) if binary => (Some(&data[..i]), &data[i + 1..]),
                _ => (None, &data[..]),
            };
            let err =
                decode_infer("fuzz", model_inputs(), header, body).err().unwrap_or_else(|| panic!("{name} decoded"));
            assert_eq!(err.kind, ErrorKind::BadRequest, "{name}");
        }
    }
}
