//! BYTES tensors to and from ONNX Runtime's string tensors.
//!
//! ONNX Runtime keeps each element of a string tensor as a C++ `std::string`,
//! which holds any bytes, NUL included; its memory is ONNX Runtime's, so
//! string inputs and outputs cannot be bound to Baton's buffers and a session
//! with any runs unbound (see [`super::bound`]). The `ort` crate's own string
//! calls go through Rust `String`s (UTF-8 only, and NUL-terminated copies on
//! the way in), so these use ONNX Runtime's C API directly: each input string
//! is copied once into the buffer `GetResizedStringTensorElementBuffer` sizes
//! for it, and the outputs come back with one `GetStringTensorContent` call
//! into the heap of the BYTES tensor that keeps them (see
//! [`baton::tensor::strings`]). Bytes that are not UTF-8 pass through unchanged
//! both ways; what a kernel makes of them is the kernel's (ONNX Runtime's
//! `StringNormalizer`, say, works on UTF-8 text).

use baton::Tensor;
use ort::memory::Allocator;
use ort::value::{DynTensor, DynValue, TensorElementType, ValueType};
use ort::AsPointer;

use super::bound::check;

/// An ONNX Runtime string tensor holding a copy of the strings of `tensor` (a BYTES tensor).
pub(super) fn input(tensor: &Tensor) -> Result<DynTensor, String> {
    let strings = tensor.as_strings().map_err(|e| e.to_string())?;
    let mut value = DynTensor::new(&Allocator::default(), TensorElementType::String, tensor.shape().to_vec())
        .map_err(|e| format!("cannot make a string tensor: {e}"))?;
    let ptr = value.ptr_mut();
    for (index, s) in strings.iter().enumerate() {
        let mut buffer: *mut std::ffi::c_char = std::ptr::null_mut();
        // SAFETY: a string tensor of `strings.len()` elements; ONNX Runtime sizes element
        // `index` to `s.len()` bytes and hands back its buffer, written here before any use.
        check(unsafe { (ort::api().GetResizedStringTensorElementBuffer)(ptr, index, s.len(), &mut buffer) })?;
        if !s.is_empty() {
            // SAFETY: the buffer holds `s.len()` bytes (above) and is ONNX Runtime's, apart from `s`.
            unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), buffer.cast::<u8>(), s.len()) };
        }
    }
    Ok(value)
}

/// A BYTES tensor holding the strings of an ONNX Runtime string tensor output.
pub(super) fn output(value: &DynValue) -> Result<Tensor, String> {
    let ValueType::Tensor { ty: TensorElementType::String, shape, .. } = value.dtype() else {
        return Err(format!("a string tensor was expected, ONNX Runtime returned {}", value.dtype()));
    };
    let shape = shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("ONNX Runtime returned dimension {d}")))
        .collect::<Result<Vec<usize>, String>>()?;
    let elements: usize = shape.iter().product();
    let mut total = 0usize;
    // SAFETY: a string tensor value (checked above).
    check(unsafe { (ort::api().GetStringTensorDataLength)(value.ptr(), &mut total) })?;
    let mut heap = vec![0u8; total];
    let mut starts = vec![0usize; elements];
    if elements > 0 {
        // SAFETY: `heap` holds the `total` bytes ONNX Runtime reported and `starts` one offset per element.
        check(unsafe {
            (ort::api().GetStringTensorContent)(
                value.ptr(),
                heap.as_mut_ptr().cast(),
                total,
                starts.as_mut_ptr(),
                elements,
            )
        })?;
    }
    Tensor::from_string_starts(shape, heap, &starts).map_err(|e| e.to_string())
}
