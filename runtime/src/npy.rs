//! numpy's `.npy` tensor files (versions 1-3, little-endian, C order).

use crate::tensor::{DType, Tensor};

/// Parses numpy's `.npy` format (versions 1-3, little-endian, C order).
pub fn read_npy(bytes: &[u8]) -> Result<Tensor, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (bad magic)".into());
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => return Err(format!("unsupported .npy version {v}")),
    };
    let header = bytes.get(start..start + header_len).ok_or("truncated .npy header")?;
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text")?;
    let field = |key: &str| -> Result<&str, String> {
        let at = header.find(&format!("'{key}'")).ok_or(format!("the .npy header has no '{key}'"))?;
        Ok(header[at + key.len() + 2..].trim_start().trim_start_matches(':').trim_start())
    };
    let descr = field("descr")?;
    let descr = descr.trim_start_matches('\'').split('\'').next().unwrap_or("");
    let dtype = match descr {
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        "<f2" => DType::F16,
        "<i8" => DType::I64,
        "<i4" => DType::I32,
        "<i2" => DType::I16,
        "|i1" => DType::I8,
        "|u1" => DType::U8,
        "<u2" => DType::U16,
        "<u4" => DType::U32,
        "<u8" => DType::U64,
        "|b1" => DType::Bool,
        other => return Err(format!("unsupported .npy dtype '{other}'")),
    };
    if field("fortran_order")?.starts_with("True") {
        return Err("Fortran-order .npy files are not supported".into());
    }
    let shape_text = field("shape")?;
    let shape_text = shape_text.trim_start_matches('(').split(')').next().unwrap_or("");
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| format!("bad .npy shape '{shape_text}'")))
        .collect::<Result<_, _>>()?;
    Tensor::from_bytes(dtype, shape, &bytes[start + header_len..]).map_err(|e| e.to_string())
}

/// Reads a `.npy` file.
pub fn read_npy_file(path: &std::path::Path) -> Result<Tensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    read_npy(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_v1_f32_round_trips() {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let padded = format!("{header:<117}\n");
        bytes.extend((padded.len() as u16).to_le_bytes());
        bytes.extend(padded.as_bytes());
        for x in 0..6 {
            bytes.extend((x as f32).to_le_bytes());
        }
        let t = read_npy(&bytes).unwrap();
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.as_slice::<f32>().unwrap(), &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn npy_with_short_data_is_an_error() {
        let header = "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }\n";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend(1i64.to_le_bytes());
        assert!(read_npy(&bytes).unwrap_err().contains("4 elements"));
    }
}
