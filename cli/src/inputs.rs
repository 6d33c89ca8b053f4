//! Request inputs for `baton run`: read from `.npy` / `.json` files, or generated.
//!
//! `.png` files become grayscale `u8 [1, H, W]`. `.json` files hold `{"shape": [1, 4], "data": [..]}` (data flat, row-major)
//! or a nested array (its nesting is the shape). `.npy` files are numpy's
//! format, little-endian, C order. Generated inputs are seeded random values
//! shaped by the pipeline (dynamic dims become 1 unless `--rows` sets dim 0).

use std::path::Path;

use baton::{DType, Tensor, TensorSpec};
use rand::SeedableRng;
use serde_json::Value;

/// Reads a tensor file; the dtype is taken from the file (`.npy`) or from the pipeline's input (`.json`).
pub fn read_tensor(path: &Path, spec: &TensorSpec) -> Result<Tensor, String> {
    let shown = path.display();
    match path.extension().and_then(|e| e.to_str()) {
        Some("npy") => {
            let bytes = std::fs::read(path).map_err(|e| format!("{shown}: {e}"))?;
            baton::npy::read_npy(&bytes).map_err(|e| format!("{shown}: {e}"))
        }
        Some("json") => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
            let value: Value = serde_json::from_str(&text).map_err(|e| format!("{shown}: {e}"))?;
            tensor_from_json(&value, spec.dtype).map_err(|e| format!("{shown}: {e}"))
        }
        Some("png") => {
            // A grayscale image as u8 [1, H, W] (colour images keep their first channel).
            let img = baton_stages::ocr::load_png(path).map_err(|e| format!("{shown}: {e}"))?;
            let gray: Vec<u8> = img.data.chunks(img.channels).map(|p| p[0]).collect();
            Tensor::from_vec(vec![1, img.height, img.width], gray).map_err(|e| e.to_string())
        }
        _ => Err(format!("{shown}: use a .npy, .json or .png file")),
    }
}

/// A tensor from JSON: `{"shape": [..], "data": [..]}` or a nested array.
pub fn tensor_from_json(value: &Value, dtype: DType) -> Result<Tensor, String> {
    let (shape, flat) = match value {
        Value::Object(map) => {
            let shape = map.get("shape").and_then(Value::as_array).ok_or("expected a \"shape\" array")?;
            let shape: Vec<usize> = shape
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize).ok_or("shape dims must be integers >= 0"))
                .collect::<Result<_, _>>()?;
            let data = map.get("data").and_then(Value::as_array).ok_or("expected a \"data\" array")?;
            (shape, data.iter().collect::<Vec<_>>())
        }
        Value::Array(_) => {
            let mut shape = Vec::new();
            let mut probe = value;
            while let Value::Array(items) = probe {
                shape.push(items.len());
                match items.first() {
                    Some(first) => probe = first,
                    None => break,
                }
            }
            let mut flat = Vec::new();
            flatten(value, &mut flat);
            (shape, flat)
        }
        _ => return Err("expected an object {\"shape\", \"data\"} or a nested array".into()),
    };
    if dtype == DType::Bytes {
        let strings = flat.iter().map(|v| v.as_str().ok_or("BYTES data must be strings"));
        let strings = strings.collect::<Result<Vec<&str>, _>>()?;
        return Tensor::from_strings(shape, strings).map_err(|e| e.to_string());
    }
    let numbers: Vec<f64> = flat
        .iter()
        .map(|v| {
            v.as_f64().or_else(|| v.as_bool().map(|b| f64::from(u8::from(b)))).ok_or("data must be numbers or booleans")
        })
        .collect::<Result<_, _>>()?;
    tensor_from_f64(dtype, shape, &numbers)
}

fn flatten<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| flatten(v, out)),
        other => out.push(other),
    }
}

/// Converts numbers to a tensor of `dtype`.
pub fn tensor_from_f64(dtype: DType, shape: Vec<usize>, data: &[f64]) -> Result<Tensor, String> {
    Tensor::from_f64(dtype, shape, data).map_err(|e| e.to_string())
}

/// A seeded generator.
pub fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// The tensor as JSON: `{"dtype", "shape", "data"}` (BYTES elements as strings, bytes
/// that are not UTF-8 replaced by U+FFFD).
pub fn tensor_to_json(tensor: &Tensor) -> Value {
    let data: Vec<Value> = match tensor.dtype() {
        DType::Bytes => {
            let strings = tensor.as_strings().expect("a BYTES tensor");
            strings.iter().map(|s| Value::from(String::from_utf8_lossy(s).into_owned())).collect()
        }
        DType::Bool => tensor.to_f64_vec().into_iter().map(|x| Value::Bool(x != 0.0)).collect(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
            tensor.to_f64_vec().into_iter().map(Value::from).collect()
        }
        _ => tensor.to_f64_vec().into_iter().map(|x| Value::from(x as i64)).collect(),
    };
    serde_json::json!({ "dtype": tensor.dtype().name(), "shape": tensor.shape(), "data": data })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_tensors_read_and_write_json_strings() {
        let t = tensor_from_json(&serde_json::json!([["a", ""], ["é", "x"]]), DType::Bytes).unwrap();
        assert_eq!(t, Tensor::from_strings(vec![2, 2], ["a", "", "é", "x"]).unwrap());
        assert_eq!(tensor_to_json(&t)["data"], serde_json::json!(["a", "", "é", "x"]));
        assert!(tensor_from_json(&serde_json::json!([1]), DType::Bytes).is_err());
    }

    #[test]
    fn json_nested_and_flat_forms_agree() {
        let nested: Value = serde_json::from_str("[[1, 2], [3, 4]]").unwrap();
        let flat: Value = serde_json::from_str(r#"{"shape": [2, 2], "data": [1, 2, 3, 4]}"#).unwrap();
        assert_eq!(tensor_from_json(&nested, DType::I32).unwrap(), tensor_from_json(&flat, DType::I32).unwrap());
    }
}
