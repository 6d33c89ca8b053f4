//! `optional` inputs: an input a request may leave out. An ONNX graph runs
//! without an input only when the graph holds a default for it: an initializer
//! of the same name as the graph input (ONNX Runtime's overridable
//! initializer). Such an input may be `optional: true`; the engine then takes
//! it as an input (`overridable_inputs`), and a request that leaves it out
//! gets the initializer's value, read here from the model file, repeated
//! along the batch dim when the model batches (so requests that send it and
//! requests that leave it out batch together, each with its own value).
//! `optional: true` on an input without a default is refused, naming the
//! input, the file and why.
//!
//! Only the fields needed of `onnx.proto` are decoded (hand-written prost types).

use std::path::Path;

use baton::{DType, Tensor};
use prost::Message;

use super::mapping::Source;
use super::pbtxt::ConfigError;
use super::tpb;

#[derive(Clone, PartialEq, prost::Message)]
struct ModelProto {
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct GraphProto {
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    input: Vec<ValueInfoProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ValueInfoProto {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(float, repeated, tag = "4")]
    float_data: Vec<f32>,
    #[prost(int32, repeated, tag = "5")]
    int32_data: Vec<i32>,
    #[prost(int64, repeated, tag = "7")]
    int64_data: Vec<i64>,
    #[prost(string, tag = "8")]
    name: String,
    #[prost(bytes = "vec", tag = "9")]
    raw_data: Vec<u8>,
    #[prost(double, repeated, tag = "10")]
    double_data: Vec<f64>,
    #[prost(uint64, repeated, tag = "11")]
    uint64_data: Vec<u64>,
    #[prost(int32, tag = "14")]
    data_location: i32,
}

/// An optional input and the value a request that leaves it out gets.
#[derive(Clone, Debug, PartialEq)]
pub struct Defaulted {
    pub name: String,
    /// The initializer's value: one row (leading dim 1) when `batched`.
    default: Tensor,
    batched: bool,
}

impl Defaulted {
    /// The default for a request of `rows` rows.
    pub fn fill(&self, rows: usize) -> Result<Tensor, String> {
        if !self.batched || rows == 1 {
            return Ok(self.default.clone());
        }
        let mut shape = self.default.shape().to_vec();
        shape[0] = rows;
        let bytes = self.default.as_bytes().repeat(rows);
        Tensor::from_bytes(self.default.dtype(), shape, &bytes).map_err(|e| format!("input `{}`: {e}", self.name))
    }
}

/// The defaults of `config`'s optional inputs, read from ONNX file `model`.
pub fn defaults(config: &tpb::ModelConfig, model: &Path, source: Source) -> Result<Vec<Defaulted>, ConfigError> {
    let optional: Vec<(usize, &tpb::ModelInput)> =
        config.input.iter().enumerate().filter(|(_, t)| t.optional).collect();
    if optional.is_empty() {
        return Ok(Vec::new());
    }
    let bytes =
        std::fs::read(model).map_err(|e| ConfigError::file(source.file, format!("{}: {e}", model.display())))?;
    let graph = ModelProto::decode(bytes.as_slice())
        .map_err(|e| ConfigError::file(source.file, format!("{} is not an ONNX model: {e}", model.display())))?
        .graph
        .unwrap_or_default();
    let batched = config.max_batch_size > 0;
    let mut out = Vec::new();
    for (i, input) in optional {
        let at = format!("input[{i}].optional");
        let init = graph.initializer.iter().find(|t| t.name == input.name);
        let init = match init {
            Some(init) if graph.input.iter().any(|g| g.name == input.name) => init,
            _ => {
                return Err(source.error(
                    &at,
                    format!(
                        "input `{}` has no default in {}: ONNX Runtime runs a graph without an input only when an \
                         initializer of the same name gives its value (an overridable initializer)",
                        input.name,
                        model.display()
                    ),
                ))
            }
        };
        let default =
            tensor(init).map_err(|why| source.error(&at, format!("the default of `{}`: {why}", input.name)))?;
        // The model's shape: the default goes in after the request's inputs are reshaped.
        let dims = input.reshape.as_ref().map_or(&input.dims, |r| &r.shape);
        let default = if batched { one_row(default, dims) } else { Ok(default) }
            .map_err(|why| source.error(&at, format!("the default of `{}`: {why}", input.name)))?;
        out.push(Defaulted { name: input.name.clone(), default, batched });
    }
    Ok(out)
}

/// A batched model's default as one row: `[1, dims...]` as it is, `dims` with a row dim added.
fn one_row(default: Tensor, dims: &[i64]) -> Result<Tensor, String> {
    let shape = default.shape().to_vec();
    if shape.len() == dims.len() + 1 && shape[0] == 1 {
        return Ok(default);
    }
    if shape.len() == dims.len() {
        return default.reshape(std::iter::once(1).chain(shape).collect()).map_err(|e| e.to_string());
    }
    Err(format!("its shape {shape:?} is neither dims {dims:?} nor one row of them, to repeat along the batch dim"))
}

/// The value of initializer `t` (fixed-size element types; raw or typed data).
fn tensor(t: &TensorProto) -> Result<Tensor, String> {
    if t.data_location == 1 {
        return Err("its data lies in an external file, which Baton does not read".into());
    }
    let dtype = match t.data_type {
        1 => DType::F32,
        2 => DType::U8,
        3 => DType::I8,
        4 => DType::U16,
        5 => DType::I16,
        6 => DType::I32,
        7 => DType::I64,
        9 => DType::Bool,
        10 => DType::F16,
        11 => DType::F64,
        12 => DType::U32,
        13 => DType::U64,
        16 => DType::BF16,
        other => return Err(format!("ONNX element type {other} is not supported for a default")),
    };
    let shape = t.dims.iter().map(|&d| usize::try_from(d)).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    let bytes: Vec<u8> = if !t.raw_data.is_empty() {
        t.raw_data.clone()
    } else {
        match dtype {
            DType::F32 => t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            DType::F64 => t.double_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            DType::I64 => t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            DType::I32 => t.int32_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            DType::U64 => t.uint64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            DType::U32 => t.uint64_data.iter().flat_map(|v| (*v as u32).to_le_bytes()).collect(),
            // Narrower types sit in int32_data, one element each (f16 and bf16 as their bits).
            _ => {
                let width = dtype.size();
                t.int32_data.iter().flat_map(|v| v.to_le_bytes()[..width].to_vec()).collect()
            }
        }
    };
    Tensor::from_bytes(dtype, shape, &bytes).map_err(|e| e.to_string())
}
