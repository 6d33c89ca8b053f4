//! JSON tensors of the HTTP protocol: the infer request and response bodies,
//! tensor `data` (flat or nested, row-major) read into typed tensors, and
//! tensors written back as flat JSON arrays. BYTES elements are JSON strings,
//! read into one byte buffer as they are parsed.

use std::collections::HashMap;
use std::fmt;

use baton::{DType, Tensor};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};
use serde::Deserialize;

use crate::model::Param;

/// One JSON scalar of a tensor's data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A string: `len` bytes from `start` of its [`FlatData`]'s text.
    Str {
        start: usize,
        len: usize,
    },
}

/// A tensor's `data`, flattened row-major from however deep the JSON nests it:
/// its scalars, and the bytes of its strings one after another.
#[derive(Debug, Default)]
pub struct FlatData(pub Vec<Scalar>, pub Vec<u8>);

impl<'de> Deserialize<'de> for FlatData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut out = FlatData::default();
        deserializer.deserialize_any(Flatten(&mut out))?;
        Ok(out)
    }
}

/// Appends every scalar of a (nested) JSON array to a [`FlatData`].
struct Flatten<'a>(&'a mut FlatData);

impl Flatten<'_> {
    fn push(self, scalar: Scalar) {
        self.0 .0.push(scalar);
    }
}

impl<'de> de::DeserializeSeed<'de> for Flatten<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Flatten<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("numbers, bools or strings, in a flat or nested array")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.push(Scalar::Bool(v));
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.push(Scalar::Int(v));
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.push(Scalar::UInt(v));
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.push(Scalar::Float(v));
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        let start = self.0 .1.len();
        self.0 .1.extend_from_slice(v.as_bytes());
        self.push(Scalar::Str { start, len: v.len() });
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if let Some(hint) = seq.size_hint() {
            self.0 .0.reserve(hint);
        }
        while seq.next_element_seed(Flatten(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// A parameter value in JSON: bool, number or string.
#[derive(Debug)]
pub struct JsonParam(pub Param);

impl<'de> Deserialize<'de> for JsonParam {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Param;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a bool, number or string")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Param, E> {
                Ok(Param::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Param, E> {
                Ok(Param::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Param, E> {
                Ok(Param::UInt(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Param, E> {
                Ok(Param::Double(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Param, E> {
                Ok(Param::Str(v.to_string()))
            }
        }
        deserializer.deserialize_any(V).map(JsonParam)
    }
}

pub type Parameters = HashMap<String, JsonParam>;

/// The infer request's JSON (the whole body, or its header part with binary tensors).
#[derive(Debug, Deserialize)]
pub struct InferRequest {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub parameters: Parameters,
    pub inputs: Vec<InputTensor>,
    #[serde(default)]
    pub outputs: Vec<RequestedOutput>,
}

#[derive(Debug, Deserialize)]
pub struct InputTensor {
    pub name: String,
    pub shape: Vec<i64>,
    pub datatype: String,
    #[serde(default)]
    pub parameters: Parameters,
    #[serde(default)]
    pub data: Option<FlatData>,
}

#[derive(Debug, Deserialize)]
pub struct RequestedOutput {
    pub name: String,
    #[serde(default)]
    pub parameters: Parameters,
}

/// Builds a tensor of `dtype` and `shape` from JSON data: strings for BYTES
/// ([`tensor_from_strings`]), else scalars ([`tensor_from_scalars`]).
pub fn tensor_from_data(dtype: DType, shape: Vec<usize>, data: &FlatData) -> Result<Tensor, String> {
    match dtype {
        DType::Bytes => tensor_from_strings(shape, data),
        _ => tensor_from_scalars(dtype, shape, &data.0),
    }
}

/// Builds a BYTES tensor of `shape` from JSON data, every element of which must be a string.
pub fn tensor_from_strings(shape: Vec<usize>, data: &FlatData) -> Result<Tensor, String> {
    let mut builder = baton::tensor::StringsBuilder::with_capacity(data.0.len(), data.1.len());
    for (i, s) in data.0.iter().enumerate() {
        match *s {
            Scalar::Str { start, len } => builder.push(&data.1[start..start + len]),
            _ => return Err(format!("element {i} ({}) is not a string (BYTES elements are JSON strings)", show(s))),
        }
    }
    builder.finish(shape).map_err(|e| e.to_string())
}

/// Builds a tensor of `dtype` and `shape` from JSON scalars, checking each fits the dtype.
pub fn tensor_from_scalars(dtype: DType, shape: Vec<usize>, data: &[Scalar]) -> Result<Tensor, String> {
    fn ints<T: baton::Element + TryFrom<i64> + TryFrom<u64>>(
        shape: Vec<usize>,
        data: &[Scalar],
        dtype: DType,
    ) -> Result<Tensor, String> {
        let values = data
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let v = match *s {
                    Scalar::Int(v) => T::try_from(v).ok(),
                    Scalar::UInt(v) => T::try_from(v).ok(),
                    // Whole numbers written as floats (1.0) are accepted.
                    Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => T::try_from(f as i64).ok(),
                    _ => None,
                };
                v.ok_or_else(|| {
                    format!("element {i} ({}) is not a {} value", show(s), crate::model::datatype_name(dtype))
                })
            })
            .collect::<Result<Vec<T>, String>>()?;
        Tensor::from_vec(shape, values).map_err(|e| e.to_string())
    }
    /// `conv` gives `None` for a value past the dtype's finite range (it would become infinite).
    fn floats<T: baton::Element>(
        shape: Vec<usize>,
        data: &[Scalar],
        dtype: DType,
        conv: impl Fn(f64) -> Option<T>,
    ) -> Result<Tensor, String> {
        let values = data
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let v = match *s {
                    Scalar::Int(v) => v as f64,
                    Scalar::UInt(v) => v as f64,
                    Scalar::Float(v) => v,
                    Scalar::Bool(_) | Scalar::Str { .. } => {
                        return Err(format!("element {i} ({}) is not a number", show(s)))
                    }
                };
                conv(v).ok_or_else(|| {
                    format!("element {i} ({}) is out of the {} range", show(s), crate::model::datatype_name(dtype))
                })
            })
            .collect::<Result<Vec<T>, String>>()?;
        Tensor::from_vec(shape, values).map_err(|e| e.to_string())
    }
    match dtype {
        DType::F32 => floats(shape, data, dtype, |v| Some(v as f32).filter(|f| f.is_finite())),
        DType::F64 => floats(shape, data, dtype, Some),
        DType::F16 => floats(shape, data, dtype, |v| Some(half::f16::from_f64(v)).filter(|f| f.is_finite())),
        DType::BF16 => floats(shape, data, dtype, |v| Some(half::bf16::from_f64(v)).filter(|f| f.is_finite())),
        DType::I64 => ints::<i64>(shape, data, dtype),
        DType::I32 => ints::<i32>(shape, data, dtype),
        DType::I16 => ints::<i16>(shape, data, dtype),
        DType::I8 => ints::<i8>(shape, data, dtype),
        DType::U8 => ints::<u8>(shape, data, dtype),
        DType::U16 => ints::<u16>(shape, data, dtype),
        DType::U32 => ints::<u32>(shape, data, dtype),
        DType::U64 => ints::<u64>(shape, data, dtype),
        DType::Bool => {
            let values = data
                .iter()
                .enumerate()
                .map(|(i, s)| match *s {
                    Scalar::Bool(b) => Ok(b),
                    _ => Err(format!("element {i} ({}) is not a bool", show(s))),
                })
                .collect::<Result<Vec<bool>, String>>()?;
            Tensor::from_vec(shape, values).map_err(|e| e.to_string())
        }
        DType::Bytes => Err("BYTES elements are JSON strings".into()),
    }
}

fn show(s: &Scalar) -> String {
    match s {
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int(v) => v.to_string(),
        Scalar::UInt(v) => v.to_string(),
        Scalar::Float(v) => v.to_string(),
        Scalar::Str { .. } => "a string".into(),
    }
}

/// A tensor's elements written as a flat JSON array (non-finite floats as
/// `null`; BYTES elements as strings, bytes that are not UTF-8 replaced: see
/// [`needs_binary`] for how the HTTP codec keeps them).
pub struct TensorData<'a>(pub &'a Tensor);

impl Serialize for TensorData<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        const CHECKED: &str = "dtype checked";
        match t.dtype() {
            DType::F32 => serializer.collect_seq(t.as_slice::<f32>().expect(CHECKED)),
            DType::F64 => serializer.collect_seq(t.as_slice::<f64>().expect(CHECKED)),
            DType::F16 => serializer.collect_seq(t.as_slice::<half::f16>().expect(CHECKED).iter().map(|v| v.to_f32())),
            DType::BF16 => {
                serializer.collect_seq(t.as_slice::<half::bf16>().expect(CHECKED).iter().map(|v| v.to_f32()))
            }
            DType::I64 => serializer.collect_seq(t.as_slice::<i64>().expect(CHECKED)),
            DType::I32 => serializer.collect_seq(t.as_slice::<i32>().expect(CHECKED)),
            DType::I16 => serializer.collect_seq(t.as_slice::<i16>().expect(CHECKED)),
            DType::I8 => serializer.collect_seq(t.as_slice::<i8>().expect(CHECKED)),
            DType::U8 => serializer.collect_seq(t.as_slice::<u8>().expect(CHECKED)),
            DType::U16 => serializer.collect_seq(t.as_slice::<u16>().expect(CHECKED)),
            DType::U32 => serializer.collect_seq(t.as_slice::<u32>().expect(CHECKED)),
            DType::U64 => serializer.collect_seq(t.as_slice::<u64>().expect(CHECKED)),
            DType::Bool => serializer.collect_seq(t.as_slice::<bool>().expect(CHECKED)),
            DType::Bytes => serializer.collect_seq(t.as_strings().expect(CHECKED).iter().map(String::from_utf8_lossy)),
        }
    }
}

/// Whether a tensor cannot be written as JSON without loss: a BYTES tensor
/// holding a string that is not UTF-8 (a JSON string carries only text).
pub fn needs_binary(tensor: &Tensor) -> bool {
    tensor.as_strings().is_ok_and(|s| s.iter().any(|b| std::str::from_utf8(b).is_err()))
}

/// One output of the infer response.
#[derive(serde::Serialize)]
pub struct OutputTensor<'a> {
    pub name: &'a str,
    pub datatype: &'static str,
    pub shape: &'a [usize],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<BinarySize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<TensorData<'a>>,
}

/// `{"binary_data_size": N}`: the output's bytes follow the JSON header.
#[derive(serde::Serialize)]
pub struct BinarySize {
    pub binary_data_size: usize,
}

/// The infer response's JSON.
#[derive(serde::Serialize)]
pub struct InferResponse<'a> {
    pub model_name: &'a str,
    pub model_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    pub outputs: Vec<OutputTensor<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_flat_data_flatten_alike() {
        let nested: FlatData = serde_json::from_str("[[1, 2.5], [true, -3]]").unwrap();
        assert_eq!(nested.0, vec![Scalar::UInt(1), Scalar::Float(2.5), Scalar::Bool(true), Scalar::Int(-3)]);
        let flat: FlatData = serde_json::from_str("[1, 2, 3]").unwrap();
        assert_eq!(flat.0.len(), 3);
        assert!(serde_json::from_str::<FlatData>("[{}]").is_err());
    }

    #[test]
    fn json_strings_become_bytes_tensors_and_other_elements_are_named() {
        let data: FlatData = serde_json::from_str(r#"[["ab", ""], ["\u00e9\n", "x"]]"#).unwrap();
        let t = tensor_from_data(DType::Bytes, vec![2, 2], &data).unwrap();
        assert_eq!(t, Tensor::from_strings(vec![2, 2], ["ab", "", "é\n", "x"]).unwrap());
        assert_eq!(serde_json::to_string(&TensorData(&t)).unwrap(), r#"["ab","","é\n","x"]"#);
        assert!(!needs_binary(&t));
        let mixed: FlatData = serde_json::from_str(r#"["a", 1.5]"#).unwrap();
        let e = tensor_from_data(DType::Bytes, vec![2], &mixed).unwrap_err();
        assert_eq!(e, "element 1 (1.5) is not a string (BYTES elements are JSON strings)");
        let e = tensor_from_data(DType::F32, vec![2], &mixed).unwrap_err();
        assert_eq!(e, "element 0 (a string) is not a number");
        assert!(tensor_from_data(DType::Bytes, vec![3], &mixed).is_err(), "count checked against the shape");
        assert!(needs_binary(&Tensor::from_strings(vec![1], [b"\xff"]).unwrap()));
    }

    #[test]
    fn scalars_become_typed_tensors_with_range_checks() {
        let t = tensor_from_scalars(DType::F32, vec![1, 2], &[Scalar::UInt(1), Scalar::Float(0.5)]).unwrap();
        assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 0.5]);
        let t = tensor_from_scalars(DType::I8, vec![2], &[Scalar::Int(-128), Scalar::Float(3.0)]).unwrap();
        assert_eq!(t.as_slice::<i8>().unwrap(), &[-128, 3]);
        assert!(tensor_from_scalars(DType::U8, vec![1], &[Scalar::Int(256)]).is_err());
        assert!(tensor_from_scalars(DType::I64, vec![1], &[Scalar::Float(0.5)]).is_err());
        assert!(tensor_from_scalars(DType::Bool, vec![1], &[Scalar::Int(1)]).is_err());
        assert!(tensor_from_scalars(DType::F32, vec![1], &[Scalar::Bool(true)]).is_err());
        let e = tensor_from_scalars(DType::F32, vec![2], &[Scalar::Float(1.0), Scalar::Float(1e39)]).unwrap_err();
        assert!(e.contains("element 1 (") && e.contains("is out of the FP32 range"), "{e}");
        assert!(tensor_from_scalars(DType::F32, vec![1], &[Scalar::Float(-3.4e38)]).is_ok(), "FP32's own range");
        assert!(tensor_from_scalars(DType::F16, vec![1], &[Scalar::Float(70000.0)]).is_err());
        let t = tensor_from_scalars(DType::Bool, vec![2], &[Scalar::Bool(true), Scalar::Bool(false)]).unwrap();
        assert_eq!(serde_json::to_string(&TensorData(&t)).unwrap(), "[true,false]");
    }

    #[test]
    fn unsigned_and_bf16_elements_round_trip_through_json() {
        let data: FlatData = serde_json::from_str("[0, 65535]").unwrap();
        let t = tensor_from_data(DType::U16, vec![2], &data).unwrap();
        assert_eq!(t.as_slice::<u16>().unwrap(), &[0, 65535]);
        assert_eq!(serde_json::to_string(&TensorData(&t)).unwrap(), "[0,65535]");
        let data: FlatData = serde_json::from_str("[4294967295, 7.0]").unwrap();
        let t = tensor_from_data(DType::U32, vec![2], &data).unwrap();
        assert_eq!(t.as_slice::<u32>().unwrap(), &[u32::MAX, 7]);
        assert_eq!(serde_json::to_string(&TensorData(&t)).unwrap(), "[4294967295,7]");
        let data: FlatData = serde_json::from_str("[18446744073709551615, 1]").unwrap();
        let t = tensor_from_data(DType::U64, vec![2], &data).unwrap();
        assert_eq!(t.as_slice::<u64>().unwrap(), &[u64::MAX, 1]);
        assert_eq!(serde_json::to_string(&TensorData(&t)).unwrap(), "[18446744073709551615,1]");
        let data: FlatData = serde_json::from_str("[1.5, -2, 0.25]").unwrap();
        let t = tensor_from_data(DType::BF16, vec![3], &data).unwrap();
        let expected: Vec<half::bf16> = [1.5, -2.0, 0.25].map(half::bf16::from_f64).to_vec();
        assert_eq!(t.as_slice::<half::bf16>().unwrap(), expected.as_slice());
        assert_eq!(serde_json::to_string(&TensorData(&t)).unwrap(), "[1.5,-2.0,0.25]");
    }

    #[test]
    fn unsigned_and_bf16_elements_out_of_range_are_named() {
        let e = tensor_from_scalars(DType::U16, vec![2], &[Scalar::UInt(1), Scalar::UInt(65536)]).unwrap_err();
        assert_eq!(e, "element 1 (65536) is not a UINT16 value");
        let e = tensor_from_scalars(DType::U32, vec![1], &[Scalar::UInt(1 << 32)]).unwrap_err();
        assert_eq!(e, "element 0 (4294967296) is not a UINT32 value");
        let e = tensor_from_scalars(DType::U64, vec![1], &[Scalar::Int(-1)]).unwrap_err();
        assert_eq!(e, "element 0 (-1) is not a UINT64 value");
        let e = tensor_from_scalars(DType::BF16, vec![1], &[Scalar::Float(1e39)]).unwrap_err();
        assert!(e.contains("element 0 (") && e.contains("is out of the BF16 range"), "{e}");
        assert!(
            tensor_from_scalars(DType::BF16, vec![1], &[Scalar::Float(3.0e38)]).is_ok(),
            "BF16 reaches f32's range"
        );
    }
}
