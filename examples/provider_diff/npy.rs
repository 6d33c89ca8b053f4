//! Writing f32 tensors as NumPy `.npy` files (format 1.0, little-endian `<f4`, C order), so the
//! tensors around a divergence can be examined offline (`numpy.load`).

use std::path::Path;

/// Tensors above this many bytes are not written (the output folder has to travel back).
pub const MAX_BYTES: usize = 16 << 20;

/// The `.npy` bytes of a tensor of `shape` holding `data`.
pub fn encode(shape: &[usize], data: &[f32]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Magic (6) + version (2) + header length (2) + header, padded with spaces and a newline to 64.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len() * 4);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for x in data {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Writes the tensor to `path` unless it is larger than [`MAX_BYTES`]; says which it did.
pub fn write(path: &Path, shape: &[usize], data: &[f32]) -> Result<bool, String> {
    if data.len() * 4 > MAX_BYTES {
        return Ok(false);
    }
    std::fs::write(path, encode(shape, data)).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(true)
}

/// Writes tensors into a folder within a byte budget, remembering what it wrote and skipped.
pub struct Saver {
    dir: std::path::PathBuf,
    budget: usize,
    /// File names written, in order.
    pub written: Vec<String>,
    /// File names left out (over [`MAX_BYTES`] or past the budget).
    pub skipped: Vec<String>,
}

impl Saver {
    /// A saver into `dir` that writes at most `budget` bytes in all.
    pub fn new(dir: &Path, budget: usize) -> Saver {
        Saver { dir: dir.to_path_buf(), budget, written: Vec::new(), skipped: Vec::new() }
    }

    /// Writes `file` (a name made safe with [`safe`]) unless it was written already, is over
    /// [`MAX_BYTES`] or past the budget; an I/O error is returned.
    pub fn save(&mut self, file: &str, shape: &[usize], data: &[f32]) -> Result<(), String> {
        let file = safe(file);
        if self.written.contains(&file) {
            return Ok(());
        }
        let bytes = data.len() * 4;
        if bytes > self.budget || !write(&self.dir.join(&file), shape, data)? {
            self.skipped.push(file);
            return Ok(());
        }
        self.budget -= bytes;
        self.written.push(file);
        Ok(())
    }
}

/// A file-name-safe form of a tensor name.
pub fn safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_padded_to_64_and_data_follows() {
        let bytes = encode(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(&bytes[10 + header_len..10 + header_len + 4], &1.0f32.to_le_bytes());
        assert_eq!(bytes.len(), 10 + header_len + 24);
    }

    #[test]
    fn one_dimensional_shapes_keep_the_comma() {
        let bytes = encode(&[3], &[0.0; 3]);
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert!(std::str::from_utf8(&bytes[10..10 + header_len]).unwrap().contains("'shape': (3,)"));
    }
}
