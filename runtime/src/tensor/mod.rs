//! Owned tensors and batch stitching.
//!
//! A [`Tensor`] is a dtype, a shape and a view into a shared, 64-byte aligned
//! byte buffer. Cloning one is cheap (a reference count), and so is taking a
//! range of rows ([`Tensor::rows`]): splitting a batch's outputs per request
//! shares the batch buffer instead of copying it. Stitching requests into a
//! batch ([`stitch`]) is one allocation and one `memcpy` per part.
//!
//! [`DType::Bytes`] tensors hold byte strings of any length; [`strings`] says how.
//!
//! ```
//! use baton::{Tensor, tensor::stitch};
//! let a = Tensor::from_vec(vec![1, 2], vec![1.0f32, 2.0]).unwrap();
//! let b = Tensor::from_vec(vec![1, 2], vec![3.0f32, 4.0]).unwrap();
//! let batch = stitch(&[&a, &b]).unwrap();
//! assert_eq!(batch.shape(), &[2, 2]);
//! assert_eq!(batch.rows(1..2).as_slice::<f32>().unwrap(), &[3.0, 4.0]);
//! ```

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::Arc;

use smallvec::SmallVec;

mod dtype;
mod memory;
mod pool;
mod stitch;
pub mod strings;
pub use dtype::{DType, Element};
pub use memory::{CopyKind, DeviceMemory, HostMemory};
pub use pool::{stitch_pooled, PooledTensor, TensorPool};
pub use stitch::{padded_extent, stitch, stitch_padded};
pub use strings::{Strings, StringsBuilder};

/// Why a tensor could not be built or stitched.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    #[error("shape {shape:?} holds {expected} elements but {got} were given")]
    ElementCount { shape: Vec<usize>, expected: usize, got: usize },
    #[error("shape {shape:?} is too large ({reason})")]
    TooLarge { shape: Vec<usize>, reason: &'static str },
    #[error("dtype mismatch: tensor is {actual}, asked for {asked}")]
    DType { actual: DType, asked: DType },
    #[error("bool tensor holds byte {byte} at element {index}; only 0 and 1 are valid")]
    InvalidBool { index: usize, byte: u8 },
    #[error("cannot stitch tensors of {first} and {other}")]
    StitchDType { first: DType, other: DType },
    #[error("cannot stitch shapes {first:?} and {other:?}: all dims but the first must match")]
    StitchShape { first: Vec<usize>, other: Vec<usize> },
    #[error("cannot stitch a scalar (rank 0) tensor along dim 0")]
    StitchScalar,
    #[error("nothing to stitch")]
    StitchEmpty,
    #[error("cannot pad axis {axis} of rank-{rank} tensors: padded axes are 1 to rank - 1")]
    PadAxis { axis: usize, rank: usize },
    #[error("device memory: {0}")]
    Device(String),
    #[error("{0} is not defined for BYTES tensors")]
    NotFixedSize(&'static str),
    #[error("BYTES element {index}: a 4-byte length prefix is due at byte {offset} but only {remaining} bytes remain")]
    BytesPrefix { index: usize, offset: usize, remaining: usize },
    #[error("BYTES element {index}: its length prefix at byte {offset} says {len} bytes but only {remaining} follow")]
    BytesLength { index: usize, offset: usize, len: usize, remaining: usize },
    #[error("BYTES data holds {extra} bytes after the shape's {expected} elements")]
    BytesTrailing { expected: usize, extra: usize },
    #[error("BYTES element {index} has {len} bytes, more than a 4-byte length prefix can say")]
    BytesTooLong { index: usize, len: usize },
}

/// Largest tensor Baton will allocate: 16 GiB. Guards against shapes that
/// claim absurd sizes before any allocation is tried.
pub const MAX_TENSOR_BYTES: usize = 16 << 30;

/// Number of elements of `shape`, or an error if it overflows or exceeds [`MAX_TENSOR_BYTES`].
///
/// A zero-size dim does not excuse the others: the shape must fit the limit
/// with its zero dims counted as 1 (`[0, 10^12]` is refused), so that rows,
/// strides and paddings computed from any of its dims stay in range.
pub fn checked_len(shape: &[usize], dtype: DType) -> Result<usize, TensorError> {
    let too_large = |reason| TensorError::TooLarge { shape: shape.to_vec(), reason };
    let extent = shape
        .iter()
        .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d.max(1)))
        .ok_or_else(|| too_large("byte size overflows"))?;
    if extent > MAX_TENSOR_BYTES {
        return Err(too_large("over the 16 GiB limit"));
    }
    Ok(shape.iter().product())
}

/// A 64-byte aligned buffer, written only while one owner can reach it
/// (when it is made, or through a [`TensorPool`]), then shared read-only.
/// Host memory unless its origin is a [`DeviceMemory`].
struct Buffer {
    ptr: NonNull<u8>,
    len: usize,
    origin: Origin,
}

/// Where a buffer's memory came from, and goes back to.
enum Origin {
    /// Rust's allocator.
    Rust,
    /// Host memory of another kind (see [`HostMemory`]).
    Host(Arc<dyn HostMemory>),
    /// A device's memory, not readable from the host (see [`DeviceMemory`]).
    Device(Arc<dyn DeviceMemory>),
}

// SAFETY: the buffer owns its allocation and is only written while one owner can reach it.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

const ALIGN: usize = 64;

impl Buffer {
    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), ALIGN).expect("tensor size checked against MAX_TENSOR_BYTES")
    }

    fn zeroed(len: usize) -> Buffer {
        let layout = Self::layout(len);
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        Buffer { ptr, len, origin: Origin::Rust }
    }

    /// A zeroed buffer of `len` bytes from `memory`, else from Rust's allocator.
    fn zeroed_in(len: usize, memory: Option<&Arc<dyn HostMemory>>) -> Buffer {
        let Some(memory) = memory else { return Self::zeroed(len) };
        match memory.allocate(len.max(1)) {
            Some(ptr) if (ptr.as_ptr() as usize).is_multiple_of(ALIGN) => {
                // SAFETY: `allocate` gave at least `len.max(1)` bytes.
                unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
                Buffer { ptr, len, origin: Origin::Host(Arc::clone(memory)) }
            }
            Some(ptr) => {
                // SAFETY: from this `allocate`, with this length, not used again.
                unsafe { memory.free(ptr, len.max(1)) };
                Self::zeroed(len)
            }
            None => Self::zeroed(len),
        }
    }

    /// A buffer of `len` bytes of device memory (contents undefined).
    fn on_device(len: usize, memory: &Arc<dyn DeviceMemory>) -> Result<Buffer, TensorError> {
        let ptr = memory
            .allocate(len.max(1))
            .ok_or_else(|| TensorError::Device(format!("cannot allocate {len} bytes on device {}", memory.device())))?;
        Ok(Buffer { ptr, len, origin: Origin::Device(Arc::clone(memory)) })
    }

    /// The device memory this buffer is in, if it is not host memory.
    fn device(&self) -> Option<&Arc<dyn DeviceMemory>> {
        match &self.origin {
            Origin::Device(memory) => Some(memory),
            _ => None,
        }
    }

    /// Builds a buffer of `len` bytes by concatenating `parts`, whose lengths must sum to `len`.
    fn concat<'a>(len: usize, parts: impl Iterator<Item = &'a [u8]>) -> Buffer {
        let layout = Self::layout(len);
        // SAFETY: layout has non-zero size; every byte is written below before use.
        let ptr = unsafe { alloc::alloc(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        let mut offset = 0;
        for part in parts {
            assert!(offset + part.len() <= len, "parts overflow the buffer");
            // SAFETY: in bounds (checked above); source and destination do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), ptr.as_ptr().add(offset), part.len()) };
            offset += part.len();
        }
        if offset < len {
            // SAFETY: in bounds; the tail must be initialized too.
            unsafe { std::ptr::write_bytes(ptr.as_ptr().add(offset), 0, len - offset) };
        }
        Buffer { ptr, len, origin: Origin::Rust }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialized bytes for the buffer's life.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        match &self.origin {
            // SAFETY: allocated in this module with the same layout.
            Origin::Rust => unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) },
            // SAFETY: from this memory's `allocate`, with this length (at least 1).
            Origin::Host(memory) => unsafe { memory.free(self.ptr, self.len.max(1)) },
            // SAFETY: as above.
            Origin::Device(memory) => unsafe { memory.free(self.ptr, self.len.max(1)) },
        }
    }
}

/// A tensor's dims, held inline up to rank 6 (so making a view or a batch's
/// tensor allocates nothing).
type Shape = SmallVec<[usize; 6]>;

/// A dense, row-major tensor: dtype, shape and a shared byte buffer.
#[derive(Clone)]
pub struct Tensor {
    dtype: DType,
    shape: Shape,
    buffer: Arc<Buffer>,
    /// Byte offset of this tensor's first element in `buffer`.
    offset: usize,
    /// A BYTES tensor's strings, which its elements' slots point into (see
    /// [`strings`]); `None` for every other dtype, and for BYTES tensors whose
    /// strings are all empty.
    heap: Option<Arc<Vec<u8>>>,
}

impl Tensor {
    /// A tensor from a vector of elements laid out row-major in `shape`.
    pub fn from_vec<T: Element>(shape: Vec<usize>, data: Vec<T>) -> Result<Tensor, TensorError> {
        Self::from_slice(shape, &data)
    }

    /// A tensor copied from a slice of elements laid out row-major in `shape`.
    pub fn from_slice<T: Element>(shape: Vec<usize>, data: &[T]) -> Result<Tensor, TensorError> {
        let expected = checked_len(&shape, T::DTYPE)?;
        if expected != data.len() {
            return Err(TensorError::ElementCount { shape, expected, got: data.len() });
        }
        // SAFETY: Element guarantees T is plain data of DTYPE.size() bytes.
        let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
        Ok(Self::from_bytes_unchecked(T::DTYPE, shape, bytes))
    }

    /// A tensor from raw little-endian bytes. Checks the length, and for `bool` that every byte is 0 or 1.
    /// Not for BYTES tensors (see [`Tensor::from_strings`], [`Tensor::from_length_prefixed`]).
    pub fn from_bytes(dtype: DType, shape: Vec<usize>, bytes: &[u8]) -> Result<Tensor, TensorError> {
        if !dtype.is_fixed_size() {
            return Err(TensorError::NotFixedSize("building a tensor from raw element bytes"));
        }
        let expected = checked_len(&shape, dtype)?;
        if bytes.len() != expected * dtype.size() {
            return Err(TensorError::ElementCount { shape, expected, got: bytes.len() / dtype.size() });
        }
        if dtype == DType::Bool {
            if let Some((index, &byte)) = bytes.iter().enumerate().find(|(_, &b)| b > 1) {
                return Err(TensorError::InvalidBool { index, byte });
            }
        }
        Ok(Self::from_bytes_unchecked(dtype, shape, bytes))
    }

    fn from_bytes_unchecked(dtype: DType, shape: impl Into<Shape>, bytes: &[u8]) -> Tensor {
        let buffer = Buffer::concat(bytes.len(), std::iter::once(bytes));
        Tensor { dtype, shape: shape.into(), buffer: Arc::new(buffer), offset: 0, heap: None }
    }

    /// A tensor of zeros (all-false for `bool`, empty strings for BYTES).
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Result<Tensor, TensorError> {
        let len = checked_len(&shape, dtype)? * dtype.size();
        Ok(Tensor {
            dtype,
            shape: Shape::from_vec(shape),
            buffer: Arc::new(Buffer::zeroed(len)),
            offset: 0,
            heap: None,
        })
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size of dim 0 (the batch dim), or 1 for a scalar.
    pub fn batch_rows(&self) -> usize {
        self.shape.first().copied().unwrap_or(1)
    }

    /// Bytes of one row (all dims but the first).
    fn row_bytes(&self) -> usize {
        self.shape.iter().skip(1).product::<usize>() * self.dtype.size()
    }

    /// The tensor's bytes, row-major, little-endian. For a BYTES tensor, its
    /// elements' slots (see [`strings`]), not their strings ([`Tensor::as_strings`]).
    ///
    /// Panics for a tensor in device memory (see [`Tensor::to_host`]).
    pub fn as_bytes(&self) -> &[u8] {
        if let Some(memory) = self.buffer.device() {
            panic!(
                "the elements of a tensor on device {} are not readable on the host: copy it with to_host",
                memory.device()
            );
        }
        let len = self.len() * self.dtype.size();
        &self.buffer.bytes()[self.offset..self.offset + len]
    }

    /// The elements as a typed slice, if `T` matches the dtype.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], TensorError> {
        if T::DTYPE != self.dtype {
            return Err(TensorError::DType { actual: self.dtype, asked: T::DTYPE });
        }
        let bytes = self.as_bytes();
        // SAFETY: the buffer is 64-byte aligned and the offset is a multiple of the
        // element size (whole rows of this dtype), the dtype matches, and bool
        // bytes were checked when the tensor was built.
        Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), self.len()) })
    }

    /// Elements converted to `f64`, for printing and comparisons. Panics for a BYTES tensor.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        crate::with_element_type!(self.dtype, T => {
            self.as_slice::<T>().expect("dtype matched").iter().map(|&x| x.to_f64()).collect()
        })
    }

    /// A tensor of `dtype` holding `values` converted like `as` (see [`Element::from_f64`]).
    pub fn from_f64(dtype: DType, shape: Vec<usize>, values: &[f64]) -> Result<Tensor, TensorError> {
        if !dtype.is_fixed_size() {
            return Err(TensorError::NotFixedSize("building a tensor from numbers"));
        }
        crate::with_element_type!(dtype, T => {
            Tensor::from_vec(shape, values.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>())
        })
    }

    /// Rows `range` of dim 0, sharing this tensor's buffer (no copy).
    ///
    /// Panics if the range is out of bounds or the tensor is a scalar.
    pub fn rows(&self, range: Range<usize>) -> Tensor {
        assert!(!self.shape.is_empty(), "rows() of a scalar tensor");
        assert!(range.start <= range.end && range.end <= self.shape[0], "rows {range:?} out of 0..{}", self.shape[0]);
        let mut shape = self.shape.clone();
        shape[0] = range.end - range.start;
        Tensor {
            dtype: self.dtype,
            shape,
            buffer: Arc::clone(&self.buffer),
            offset: self.offset + range.start * self.row_bytes(),
            heap: self.heap.clone(),
        }
    }

    /// The device this tensor's elements are on (`None`: host memory).
    pub fn device(&self) -> Option<u32> {
        self.buffer.device().map(|m| m.device())
    }

    /// The address of the first element, in host or device memory (see [`Tensor::device`]),
    /// for engines that hand it to a runtime.
    pub fn data_ptr(&self) -> *const u8 {
        // SAFETY: the offset is within the buffer (every view is).
        unsafe { self.buffer.ptr.as_ptr().add(self.offset) }
    }

    /// This tensor in host memory: itself when it is there, else a copy of its elements.
    pub fn to_host(&self) -> Result<Tensor, TensorError> {
        let Some(memory) = self.buffer.device() else { return Ok(self.clone()) };
        let len = self.len() * self.dtype.size();
        let buffer = Buffer::zeroed(len);
        // SAFETY: `len` bytes at the view's start on the device, into a new host buffer of `len`.
        unsafe { memory.copy(buffer.ptr.as_ptr(), self.data_ptr(), len, CopyKind::DeviceToHost) }
            .map_err(TensorError::Device)?;
        Ok(Tensor { dtype: self.dtype, shape: self.shape.clone(), buffer: Arc::new(buffer), offset: 0, heap: None })
    }

    /// This view widened to `rows` rows of dim 0 over what its buffer holds
    /// after it (other rows of the batch it was cut from, or a pool's zeroed
    /// room), without copying; `None` when the buffer ends sooner. For padding
    /// a batch whose extra rows' results are dropped.
    pub fn with_rows_after(&self, rows: usize) -> Option<Tensor> {
        let first = *self.shape.first()?;
        if rows < first {
            return None;
        }
        let end = self.offset.checked_add(rows.checked_mul(self.row_bytes())?)?;
        (end <= self.buffer.len).then(|| {
            let mut shape = self.shape.clone();
            shape[0] = rows;
            Tensor {
                dtype: self.dtype,
                shape,
                buffer: Arc::clone(&self.buffer),
                offset: self.offset,
                heap: self.heap.clone(),
            }
        })
    }

    /// The same tensor in a buffer of its own: copies if it is a view into a
    /// larger buffer (so keeping it does not keep the larger buffer alive).
    ///
    /// A tensor in device memory comes back in host memory (see [`Tensor::to_host`]).
    pub fn compact(&self) -> Tensor {
        if self.buffer.device().is_some() {
            return self.to_host().expect("a device tensor copied to the host");
        }
        if self.dtype == DType::Bytes {
            if strings::is_compact(self) {
                return self.clone();
            }
            return strings::stitch_strings(&[self], self.shape.clone()).expect("a BYTES tensor's own strings");
        }
        let bytes = self.as_bytes();
        if self.offset == 0 && bytes.len() == self.buffer.len {
            return self.clone();
        }
        Self::from_bytes_unchecked(self.dtype, self.shape.clone(), bytes)
    }

    /// The same data with another shape of equal element count.
    pub fn reshape(&self, shape: Vec<usize>) -> Result<Tensor, TensorError> {
        let expected = checked_len(&shape, self.dtype)?;
        if expected != self.len() {
            return Err(TensorError::ElementCount { shape, expected, got: self.len() });
        }
        Ok(Tensor { shape: Shape::from_vec(shape), ..self.clone() })
    }
}

impl PartialEq for Tensor {
    /// Equal dtypes, shapes and elements (a tensor in device memory compares by a host copy).
    fn eq(&self, other: &Tensor) -> bool {
        if self.dtype != other.dtype || self.shape != other.shape {
            return false;
        }
        if let (Ok(a), Ok(b)) = (self.as_strings(), other.as_strings()) {
            return a.iter().eq(b.iter());
        }
        match (self.to_host(), other.to_host()) {
            (Ok(a), Ok(b)) => a.as_bytes() == b.as_bytes(),
            _ => false,
        }
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor({} {:?}", self.dtype, self.shape)?;
        if let Some(device) = self.device() {
            write!(f, " on device {device}")?;
        } else if let Ok(strings) = self.as_strings() {
            if strings.len() <= 16 {
                let shown: Vec<_> = strings.iter().map(String::from_utf8_lossy).collect();
                write!(f, " {shown:?}")?;
            }
        } else if self.len() <= 16 {
            write!(f, " {:?}", self.to_f64_vec())?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stitch_then_split_round_trips_every_dtype() {
        for dtype in DType::ALL {
            let a = Tensor::from_bytes(dtype, vec![1, 3], &vec![1u8; 3 * dtype.size()]).unwrap();
            let b = Tensor::zeros(dtype, vec![2, 3]).unwrap();
            let batch = stitch(&[&a, &b]).unwrap();
            assert_eq!(batch.shape(), &[3, 3]);
            assert_eq!(batch.rows(0..1), a);
            assert_eq!(batch.rows(1..3), b);
        }
    }

    #[test]
    fn rows_of_rows_share_the_buffer_and_keep_offsets() {
        let t = Tensor::from_vec(vec![4, 2], (0..8).map(|x| x as i64).collect()).unwrap();
        let mid = t.rows(1..3);
        assert_eq!(mid.as_slice::<i64>().unwrap(), &[2, 3, 4, 5]);
        assert_eq!(mid.rows(1..2).as_slice::<i64>().unwrap(), &[4, 5]);
        assert!(Arc::ptr_eq(&mid.buffer, &t.buffer));
    }

    #[test]
    fn stitch_rejects_mismatched_trailing_dims_and_dtypes() {
        let a = Tensor::zeros(DType::F32, vec![1, 3]).unwrap();
        let b = Tensor::zeros(DType::F32, vec![1, 4]).unwrap();
        let c = Tensor::zeros(DType::I32, vec![1, 3]).unwrap();
        assert!(matches!(stitch(&[&a, &b]), Err(TensorError::StitchShape { .. })));
        assert!(matches!(stitch(&[&a, &c]), Err(TensorError::StitchDType { .. })));
        assert_eq!(stitch(&[]), Err(TensorError::StitchEmpty));
    }

    #[test]
    fn absurd_shapes_fail_before_allocating() {
        let err = Tensor::zeros(DType::F32, vec![1_000_000, 1_000_000]).unwrap_err();
        assert!(matches!(err, TensorError::TooLarge { .. }), "{err}");
        let err = Tensor::zeros(DType::F32, vec![usize::MAX, 2]).unwrap_err();
        assert!(err.to_string().contains("overflows"), "{err}");
    }

    #[test]
    fn zero_size_dims_cannot_hide_absurd_dims() {
        // [0, 2^40, 2^40] holds no element but its row size overflows: refused, not a panic in `rows`.
        let err = Tensor::zeros(DType::F32, vec![0, 1 << 40, 1 << 40]).unwrap_err();
        assert!(matches!(err, TensorError::TooLarge { .. }), "{err}");
        let err = Tensor::zeros(DType::U8, vec![0, 1_000_000_000_000]).unwrap_err();
        assert_eq!(err.to_string(), "shape [0, 1000000000000] is too large (over the 16 GiB limit)");
        assert!(checked_len(&[usize::MAX, 0], DType::U8).is_err());
        let empty = Tensor::zeros(DType::F32, vec![0, 4]).unwrap();
        assert_eq!((empty.len(), empty.rows(0..0).shape()), (0, &[0usize, 4][..]));
        assert_eq!(checked_len(&[3, 0, 5], DType::I64), Ok(0));
    }

    #[test]
    fn stitch_padded_refuses_axes_out_of_range() {
        let a = Tensor::zeros(DType::U8, vec![1, 2]).unwrap();
        let b = Tensor::zeros(DType::U8, vec![1, 3]).unwrap();
        assert_eq!(stitch_padded(&[&a, &b], &[2], &[], 0.0), Err(TensorError::PadAxis { axis: 2, rank: 2 }));
        assert_eq!(stitch_padded(&[&a, &b], &[0], &[], 0.0), Err(TensorError::PadAxis { axis: 0, rank: 2 }));
        assert_eq!(stitch_padded(&[&a, &b], &[1], &[], 0.0).unwrap().shape(), &[2, 3]);
    }

    #[test]
    fn bool_bytes_are_validated() {
        let err = Tensor::from_bytes(DType::Bool, vec![3], &[0, 1, 2]).unwrap_err();
        assert_eq!(err, TensorError::InvalidBool { index: 2, byte: 2 });
    }

    #[test]
    fn wrong_element_count_names_both_counts() {
        let err = Tensor::from_vec(vec![2, 2], vec![1.0f32; 3]).unwrap_err();
        assert_eq!(err.to_string(), "shape [2, 2] holds 4 elements but 3 were given");
    }

    #[test]
    fn typed_access_checks_dtype() {
        let t = Tensor::from_vec(vec![2], vec![1i32, 2]).unwrap();
        assert!(t.as_slice::<f32>().is_err());
        assert_eq!(t.as_slice::<i32>().unwrap(), &[1, 2]);
    }

    #[test]
    fn stitch_padded_pads_then_crop_restores_each_part() {
        let a = Tensor::from_vec(vec![1, 2, 3], (1..=6).map(|x| x as f32).collect()).unwrap();
        let b = Tensor::from_vec(vec![2, 1, 2], vec![7.0f32, 8.0, 9.0, 10.0]).unwrap();
        let batch = stitch_padded(&[&a, &b], &[1, 2], &[], -1.0).unwrap();
        assert_eq!(batch.shape(), &[3, 2, 3]);
        assert_eq!(
            batch.as_slice::<f32>().unwrap(),
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, -1.0, -1.0, -1.0, -1.0, 9.0, 10.0, -1.0, -1.0, -1.0, -1.0]
        );
        assert_eq!(batch.rows(0..1).crop_to(&[1, 2, 3]).unwrap(), a);
        assert_eq!(batch.rows(1..3).crop_to(&[2, 1, 2]).unwrap(), b);
    }

    #[test]
    fn stitch_padded_rounds_each_padded_axis_up_to_its_multiple() {
        let a = Tensor::from_vec(vec![1, 2, 3], (1..=6).map(|x| x as f32).collect()).unwrap();
        let b = Tensor::from_vec(vec![1, 1, 2], vec![7.0f32, 8.0]).unwrap();
        // Largest 2 x 3: axis 1 to a multiple of 4, axis 2 of 1 (as it is).
        let batch = stitch_padded(&[&a, &b], &[1, 2], &[4, 1], 0.0).unwrap();
        assert_eq!(batch.shape(), &[2, 4, 3]);
        assert_eq!(batch.rows(0..1).crop_to(&[1, 2, 3]).unwrap(), a);
        assert_eq!(batch.rows(1..2).crop_to(&[1, 1, 2]).unwrap(), b);
        let v = batch.as_slice::<f32>().unwrap();
        assert!(v[6..12].iter().chain(&v[14..]).all(|&x| x == 0.0), "padding is the value");
        // An extent already on a multiple stays.
        assert_eq!(stitch_padded(&[&a], &[1, 2], &[2, 3], 0.0).unwrap().shape(), &[1, 2, 3]);
    }

    #[test]
    fn stitch_padded_still_requires_unpadded_dims_to_agree() {
        let a = Tensor::zeros(DType::U8, vec![1, 2, 3]).unwrap();
        let b = Tensor::zeros(DType::U8, vec![1, 3, 3]).unwrap();
        assert!(stitch_padded(&[&a, &b], &[2], &[], 0.0).is_err());
        assert_eq!(stitch_padded(&[&a, &b], &[1], &[], 0.0).unwrap().shape(), &[2, 3, 3]);
    }
}
