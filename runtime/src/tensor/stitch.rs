//! Batches from requests' tensors: stitching along dim 0 (padded where shapes differ) and cropping back.

use std::sync::Arc;

use super::{checked_len, Buffer, DType, Tensor, TensorError};

/// Concatenates tensors along dim 0. All parts must share dtype and every dim but the first.
pub fn stitch(parts: &[&Tensor]) -> Result<Tensor, TensorError> {
    let first = check_stitch(parts)?;
    if parts.len() == 1 {
        return Ok(first.clone());
    }
    let mut shape = first.shape.clone();
    shape[0] = parts.iter().map(|p| p.shape[0]).sum();
    if first.dtype == DType::Bytes {
        return super::strings::stitch_strings(parts, shape);
    }
    let len = checked_len(&shape, first.dtype)? * first.dtype.size();
    let buffer = Buffer::concat(len, parts.iter().map(|p| p.as_bytes()));
    Ok(Tensor { dtype: first.dtype, shape, buffer: Arc::new(buffer), offset: 0, heap: None })
}

/// The first of `parts` once they are checked to stitch along dim 0: one dtype,
/// every dim but the first alike, rows that add up without overflow.
pub(super) fn check_stitch<'a>(parts: &[&'a Tensor]) -> Result<&'a Tensor, TensorError> {
    let first = *parts.first().ok_or(TensorError::StitchEmpty)?;
    if first.shape.is_empty() {
        return Err(TensorError::StitchScalar);
    }
    let mut rows = 0usize;
    for part in parts {
        if part.dtype != first.dtype {
            return Err(TensorError::StitchDType { first: first.dtype, other: part.dtype });
        }
        if part.shape.is_empty() || part.shape[1..] != first.shape[1..] {
            return Err(TensorError::StitchShape { first: first.shape.to_vec(), other: part.shape.to_vec() });
        }
        rows = rows
            .checked_add(part.shape[0])
            .ok_or_else(|| TensorError::TooLarge { shape: first.shape.to_vec(), reason: "the parts' rows overflow" })?;
    }
    Ok(first)
}

/// Calls `$body` with `$t` bound to the Rust element type of a Baton dtype
/// (`half::f16` for `F16`, `half::bf16` for `BF16`), for code generic over element types:
/// `baton::with_element_type!(tensor.dtype(), T => tensor.as_slice::<T>().map(|s| s.len()))`.
#[macro_export]
macro_rules! with_element_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::DType::F64 => {
                type $t = f64;
                $body
            }
            $crate::DType::F16 => {
                type $t = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $t = $crate::half::bf16;
                $body
            }
            $crate::DType::I64 => {
                type $t = i64;
                $body
            }
            $crate::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::DType::I16 => {
                type $t = i16;
                $body
            }
            $crate::DType::I8 => {
                type $t = i8;
                $body
            }
            $crate::DType::U8 => {
                type $t = u8;
                $body
            }
            $crate::DType::U16 => {
                type $t = u16;
                $body
            }
            $crate::DType::U32 => {
                type $t = u32;
                $body
            }
            $crate::DType::U64 => {
                type $t = u64;
                $body
            }
            $crate::DType::Bool => {
                type $t = bool;
                $body
            }
            $crate::DType::Bytes => panic!("BYTES tensors have no fixed-size element type: read them with as_strings"),
        }
    };
}

/// Bytes of one element of `dtype` holding `value` (converted like `as`; bool: non-zero).
fn element_bytes(dtype: DType, value: f64) -> Vec<u8> {
    match dtype {
        DType::F32 => (value as f32).to_le_bytes().to_vec(),
        DType::F64 => value.to_le_bytes().to_vec(),
        DType::F16 => half::f16::from_f64(value).to_le_bytes().to_vec(),
        DType::BF16 => half::bf16::from_f64(value).to_le_bytes().to_vec(),
        DType::I64 => (value as i64).to_le_bytes().to_vec(),
        DType::I32 => (value as i32).to_le_bytes().to_vec(),
        DType::I16 => (value as i16).to_le_bytes().to_vec(),
        DType::I8 => (value as i8).to_le_bytes().to_vec(),
        DType::U8 => vec![value as u8],
        DType::U16 => (value as u16).to_le_bytes().to_vec(),
        DType::U32 => (value as u32).to_le_bytes().to_vec(),
        DType::U64 => (value as u64).to_le_bytes().to_vec(),
        DType::Bool => vec![u8::from(value != 0.0)],
        DType::Bytes => vec![0; DType::Bytes.size()],
    }
}

/// Copies the leading `block` of `src` (shape `src_shape`) into the leading
/// corner of `dst` (shape `dst_shape`): both at least as large as `block` on
/// every axis, same rank, row-major, `elem` bytes per element.
fn copy_block(src: &[u8], src_shape: &[usize], dst: &mut [u8], dst_shape: &[usize], block: &[usize], elem: usize) {
    let rank = block.len();
    if rank == 0 || block.contains(&0) {
        return;
    }
    let strides = |shape: &[usize]| -> Vec<usize> {
        let mut s = vec![elem; rank];
        for d in (0..rank - 1).rev() {
            s[d] = s[d + 1] * shape[d + 1];
        }
        s
    };
    let (src_strides, dst_strides) = (strides(src_shape), strides(dst_shape));
    let run = block[rank - 1] * elem;
    let mut index = vec![0usize; rank - 1];
    loop {
        let from: usize = index.iter().zip(&src_strides).map(|(i, s)| i * s).sum();
        let to: usize = index.iter().zip(&dst_strides).map(|(i, s)| i * s).sum();
        dst[to..to + run].copy_from_slice(&src[from..from + run]);
        // Next index over the outer axes, the last one fastest.
        let mut axis = rank - 1;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < block[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// The extent a padded axis whose largest part is `largest` takes: rounded up to a multiple
/// of `multiple` (0 or 1: `largest` as it is).
pub fn padded_extent(largest: usize, multiple: usize) -> usize {
    let m = multiple.max(1);
    largest.div_ceil(m) * m
}

/// Concatenates tensors along dim 0, padding `axes` up to the largest part with `value`,
/// each rounded up to its entry of `multiples` where there is one (above 1). Every other
/// dim but the first must agree.
pub fn stitch_padded(
    parts: &[&Tensor],
    axes: &[usize],
    multiples: &[usize],
    value: f64,
) -> Result<Tensor, TensorError> {
    let first = parts.first().ok_or(TensorError::StitchEmpty)?;
    if first.shape.is_empty() {
        return Err(TensorError::StitchScalar);
    }
    if first.dtype == DType::Bytes {
        return Err(TensorError::NotFixedSize("padded stitching"));
    }
    if let Some(&axis) = axes.iter().find(|&&a| a == 0 || a >= first.shape.len()) {
        return Err(TensorError::PadAxis { axis, rank: first.shape.len() });
    }
    let mut shape = first.shape.clone();
    shape[0] = 0;
    for part in parts {
        if part.dtype != first.dtype {
            return Err(TensorError::StitchDType { first: first.dtype, other: part.dtype });
        }
        let agrees = part.shape.len() == shape.len()
            && (1..shape.len()).all(|d| axes.contains(&d) || part.shape[d] == first.shape[d]);
        if !agrees {
            return Err(TensorError::StitchShape { first: first.shape.to_vec(), other: part.shape.to_vec() });
        }
        shape[0] = shape[0]
            .checked_add(part.shape[0])
            .ok_or_else(|| TensorError::TooLarge { shape: first.shape.to_vec(), reason: "the parts' rows overflow" })?;
        for &a in axes {
            shape[a] = shape[a].max(part.shape[a]);
        }
    }
    for (&a, &m) in axes.iter().zip(multiples) {
        shape[a] = padded_extent(shape[a], m);
    }
    let elem = first.dtype.size();
    let len = checked_len(&shape, first.dtype)? * elem;
    let fill = element_bytes(first.dtype, value);
    let mut bytes: Vec<u8> = fill.iter().copied().cycle().take(len).collect();
    let row = shape[1..].iter().product::<usize>() * elem;
    let mut offset = 0;
    for part in parts {
        let rows = part.shape[0];
        let mut block = shape.clone();
        block[0] = rows;
        copy_block(part.as_bytes(), &part.shape, &mut bytes[offset..offset + rows * row], &block, &part.shape, elem);
        offset += rows * row;
    }
    Ok(Tensor::from_bytes_unchecked(first.dtype, shape.to_vec(), &bytes))
}

impl Tensor {
    /// The leading block of this tensor of shape `shape` (same rank, no dim larger): a copy.
    pub fn crop_to(&self, shape: &[usize]) -> Result<Tensor, TensorError> {
        if shape == &self.shape[..] {
            return Ok(self.clone());
        }
        if shape.len() != self.shape.len() || shape.iter().zip(&self.shape).any(|(a, b)| a > b) {
            return Err(TensorError::StitchShape { first: self.shape.to_vec(), other: shape.to_vec() });
        }
        let elem = self.dtype.size();
        let mut out = vec![0u8; checked_len(shape, self.dtype)? * elem];
        copy_block(self.as_bytes(), &self.shape, &mut out, shape, shape, elem);
        // A BYTES tensor's slots are copied; they still point into its strings.
        Ok(Tensor { heap: self.heap.clone(), ..Tensor::from_bytes_unchecked(self.dtype, shape.to_vec(), &out) })
    }
}
