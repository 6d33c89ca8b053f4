//! Tensors as the protocol carries them: a name, a datatype name (`FP32`,
//! `INT64`, ...), a shape, and the elements' little-endian bytes, row-major —
//! the layout of the binary tensor extension and of `raw_input_contents`.
//! A BYTES tensor's data is its strings, each a 4-byte little-endian length
//! and its bytes, the same wire form.

use bytes::Bytes;

use crate::vocabulary::{element_size, BYTES};

/// One named tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub name: String,
    /// The protocol's datatype name: BOOL, UINT8, INT8, INT16, INT32, INT64, FP16, FP32, FP64, ...
    pub datatype: String,
    pub shape: Vec<i64>,
    /// Little-endian elements, row-major.
    pub data: Bytes,
}

impl Tensor {
    pub fn new(name: impl Into<String>, datatype: impl Into<String>, shape: Vec<i64>, data: impl Into<Bytes>) -> Self {
        Tensor { name: name.into(), datatype: datatype.into(), shape, data: data.into() }
    }

    /// An FP32 tensor of `values`.
    pub fn from_f32(name: impl Into<String>, shape: Vec<i64>, values: &[f32]) -> Self {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::new(name, "FP32", shape, data)
    }

    /// A BYTES tensor of `strings` (any bytes, not only UTF-8).
    pub fn from_strings<S: AsRef<[u8]>>(
        name: impl Into<String>,
        shape: Vec<i64>,
        strings: impl IntoIterator<Item = S>,
    ) -> Self {
        let mut data = Vec::new();
        for s in strings {
            let s = s.as_ref();
            data.extend_from_slice(&(s.len() as u32).to_le_bytes());
            data.extend_from_slice(s);
        }
        Tensor::new(name, BYTES, shape, data)
    }

    /// The strings of a BYTES tensor.
    pub fn to_strings(&self) -> Result<Vec<Bytes>, String> {
        if self.datatype != BYTES {
            return Err(format!("tensor `{}` is {}, not BYTES", self.name, self.datatype));
        }
        let mut strings = Vec::new();
        let mut rest = self.data.clone();
        while !rest.is_empty() {
            let index = strings.len();
            if rest.len() < 4 {
                return Err(format!("BYTES element {index}: a 4-byte length prefix is cut short"));
            }
            let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if rest.len() - 4 < len {
                return Err(format!(
                    "BYTES element {index}: its length prefix says {len} bytes but {} follow",
                    rest.len() - 4
                ));
            }
            let _ = rest.split_to(4);
            strings.push(rest.split_to(len));
        }
        Ok(strings)
    }

    /// The elements of an FP32 tensor.
    pub fn to_f32(&self) -> Result<Vec<f32>, String> {
        if self.datatype != "FP32" {
            return Err(format!("tensor `{}` is {}, not FP32", self.name, self.datatype));
        }
        Ok(self.data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    /// Elements the shape holds, or why it holds none.
    pub fn elements(&self) -> Result<usize, String> {
        self.shape.iter().try_fold(1usize, |n, &d| {
            let d = usize::try_from(d).map_err(|_| format!("negative dimension in shape {:?}", self.shape))?;
            n.checked_mul(d).ok_or_else(|| format!("shape {:?} overflows", self.shape))
        })
    }

    /// The bytes match the shape and datatype (for BYTES: whole length-prefixed strings, as many as the shape holds).
    pub fn check(&self) -> Result<(), String> {
        if self.datatype == BYTES {
            let (expected, got) = (self.elements()?, self.to_strings()?.len());
            if expected != got {
                return Err(format!(
                    "shape {:?} holds {expected} BYTES elements but the tensor holds {got}",
                    self.shape
                ));
            }
            return Ok(());
        }
        let size = element_size(&self.datatype)
            .ok_or_else(|| format!("datatype {} is not supported by this client", self.datatype))?;
        let expected = self.elements()?.checked_mul(size).ok_or("the tensor's size overflows")?;
        if self.data.len() != expected {
            return Err(format!(
                "shape {:?} of {} takes {expected} bytes but the tensor holds {}",
                self.shape,
                self.datatype,
                self.data.len()
            ));
        }
        Ok(())
    }
}

/// Writes JSON `data` (a flat or nested array) of `datatype` as little-endian bytes.
pub(crate) fn bytes_from_json(datatype: &str, data: &serde_json::Value) -> Result<Vec<u8>, String> {
    let mut flat = Vec::new();
    flatten(data, &mut flat);
    if datatype == BYTES {
        let strings = flat
            .iter()
            .enumerate()
            .map(|(i, v)| v.as_str().ok_or_else(|| format!("element {i} ({v}) is not a string")));
        let strings = strings.collect::<Result<Vec<&str>, String>>()?;
        return Ok(Tensor::from_strings("", vec![], strings).data.to_vec());
    }
    let mut out = Vec::with_capacity(flat.len() * element_size(datatype).unwrap_or(1));
    for (i, v) in flat.iter().enumerate() {
        let bad = || format!("element {i} ({v}) is not a {datatype} value");
        let int = || v.as_i64().or_else(|| v.as_u64().map(|u| u as i64)).ok_or_else(bad);
        let float = || v.as_f64().or_else(|| v.is_null().then_some(f64::NAN)).ok_or_else(bad);
        match datatype {
            "BOOL" => out.push(v.as_bool().ok_or_else(bad)? as u8),
            "UINT8" => out.push(u8::try_from(int()?).map_err(|_| bad())?),
            "INT8" => out.extend(i8::try_from(int()?).map_err(|_| bad())?.to_le_bytes()),
            "INT16" => out.extend(i16::try_from(int()?).map_err(|_| bad())?.to_le_bytes()),
            "INT32" => out.extend(i32::try_from(int()?).map_err(|_| bad())?.to_le_bytes()),
            "INT64" => out.extend(int()?.to_le_bytes()),
            "FP16" => out.extend(half::f16::from_f64(float()?).to_le_bytes()),
            "FP32" => out.extend((float()? as f32).to_le_bytes()),
            "FP64" => out.extend(float()?.to_le_bytes()),
            other => return Err(format!("JSON data of datatype {other} is not supported by this client")),
        }
    }
    Ok(out)
}

fn flatten<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>) {
    match v {
        serde_json::Value::Array(items) => items.iter().for_each(|i| flatten(i, out)),
        other => out.push(other),
    }
}

/// Writes gRPC typed `contents` of `datatype` as little-endian bytes.
pub(crate) fn bytes_from_contents(datatype: &str, c: &crate::pb::InferTensorContents) -> Result<Vec<u8>, String> {
    fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        values.iter().flat_map(|&v| f(v)).collect()
    }
    let narrow =
        |bits: u32| {
            let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
            c.int_contents
                .iter()
                .map(|&v| {
                    if (lo..=hi).contains(&(v as i64)) {
                        Ok(v)
                    } else {
                        Err(format!("{v} is out of INT{bits}'s range"))
                    }
                })
                .collect::<Result<Vec<i32>, String>>()
        };
    Ok(match datatype {
        "BOOL" => c.bool_contents.iter().map(|&b| b as u8).collect(),
        "UINT8" => c
            .uint_contents
            .iter()
            .map(|&v| u8::try_from(v).map_err(|_| format!("{v} is not a UINT8")))
            .collect::<Result<_, _>>()?,
        "INT8" => narrow(8)?.iter().map(|&v| v as i8 as u8).collect(),
        "INT16" => le(&narrow(16)?, |v| (v as i16).to_le_bytes()),
        "INT32" => le(&c.int_contents, i32::to_le_bytes),
        "INT64" => le(&c.int64_contents, i64::to_le_bytes),
        "FP32" => le(&c.fp32_contents, f32::to_le_bytes),
        "FP64" => le(&c.fp64_contents, f64::to_le_bytes),
        "BYTES" => Tensor::from_strings("", vec![], &c.bytes_contents).data.to_vec(),
        other => return Err(format!("typed contents of datatype {other} are not supported by this client")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_checks_its_bytes_against_its_shape() {
        let t = Tensor::from_f32("x", vec![2, 2], &[1.0, 2.0, 3.0, 4.0]);
        assert!(t.check().is_ok());
        assert_eq!(t.to_f32().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        let short = Tensor::new("x", "FP32", vec![2, 3], t.data.clone());
        assert!(short.check().unwrap_err().contains("takes 24 bytes but the tensor holds 16"));
        assert!(Tensor::new("x", "BYTES", vec![1], vec![0u8]).check().unwrap_err().contains("BYTES"));
        assert!(Tensor::new("x", "INT4", vec![1], vec![0u8]).check().unwrap_err().contains("INT4"));
        assert!(Tensor::new("x", "FP32", vec![-1], vec![]).check().unwrap_err().contains("negative"));
    }

    #[test]
    fn bytes_tensors_are_length_prefixed_strings_checked_against_the_shape() {
        let t = Tensor::from_strings("s", vec![3], [&b"ab"[..], b"", b"\xff"]);
        assert_eq!(&t.data[..], b"\x02\0\0\0ab\0\0\0\0\x01\0\0\0\xff");
        assert!(t.check().is_ok());
        assert_eq!(t.to_strings().unwrap(), [&b"ab"[..], b"", b"\xff"]);
        let e = Tensor::new("s", "BYTES", vec![4], t.data.clone()).check().unwrap_err();
        assert!(e.contains("holds 4 BYTES elements but the tensor holds 3"), "{e}");
        let e = Tensor::new("s", "BYTES", vec![3], t.data.slice(..t.data.len() - 1)).check().unwrap_err();
        assert!(e.contains("element 2") && e.contains("says 1 bytes but 0 follow"), "{e}");
        let json = bytes_from_json("BYTES", &serde_json::json!([["ab", ""], ["\u{ff}"]])).unwrap();
        assert_eq!(Tensor::new("s", "BYTES", vec![3], json).to_strings().unwrap()[2], "\u{ff}".as_bytes());
        assert!(bytes_from_json("BYTES", &serde_json::json!(["a", 1])).unwrap_err().contains("element 1"));
    }

    #[test]
    fn json_data_becomes_little_endian_bytes() {
        let data = serde_json::json!([[1, -2], [3, 4]]);
        assert_eq!(bytes_from_json("INT16", &data).unwrap(), vec![1, 0, 0xfe, 0xff, 3, 0, 4, 0]);
        assert_eq!(bytes_from_json("FP32", &serde_json::json!([0.5])).unwrap(), 0.5f32.to_le_bytes());
        assert_eq!(bytes_from_json("BOOL", &serde_json::json!([true, false])).unwrap(), vec![1, 0]);
        assert!(bytes_from_json("UINT8", &serde_json::json!([256])).unwrap_err().contains("element 0"));
    }
}
