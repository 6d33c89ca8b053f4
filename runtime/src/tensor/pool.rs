//! Reusable tensor storage for tensors made batch after batch at the same sizes
//! (a worker's stitched inputs, an engine's outputs).
//!
//! A [`TensorPool`] keeps up to `limit` buffers. [`TensorPool::take`] hands out
//! a writable [`PooledTensor`] over the smallest kept buffer that is large
//! enough and that no tensor shares any more, else over a new buffer (kept
//! when there is room). Once the batch's tensors and every view of them are
//! dropped (the requests answered), the buffer is free again, so a steady
//! stream of batches of the same sizes allocates nothing.
//!
//! Protocol: the pool holds one `Arc` of each buffer. A buffer whose strong
//! count is 1 is reachable only through the pool, which is borrowed mutably
//! by `take`: it may be written. `take` then clones the `Arc` into the one
//! [`PooledTensor`], the only handle that writes it, and that handle becomes
//! an ordinary (shared, read-only) [`Tensor`] with [`PooledTensor::into_tensor`].
//! Tensors on other threads drop their clones with a release decrement; the
//! acquire fence after seeing a count of 1 orders their last reads before the
//! pool's next writes. Nothing makes `Weak` references to buffers.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use super::{checked_len, Buffer, CopyKind, DType, DeviceMemory, HostMemory, Shape, Tensor, TensorError};

/// Buffers for tensors of recurring sizes; see the module docs.
pub struct TensorPool {
    buffers: Vec<Arc<Buffer>>,
    limit: usize,
    /// Where new host buffers come from (`None`: Rust's allocator).
    memory: Option<Arc<dyn HostMemory>>,
    /// The device whose memory the buffers are in, for a pool on a device.
    device: Option<Arc<dyn DeviceMemory>>,
}

impl TensorPool {
    /// A pool keeping at most `limit` buffers (beyond that, `take` allocates buffers it does not keep).
    pub fn new(limit: usize) -> Self {
        TensorPool { buffers: Vec::new(), limit, memory: None, device: None }
    }

    /// A pool whose new buffers come from `memory` (pinned memory for a GPU, say).
    pub fn in_memory(limit: usize, memory: Option<Arc<dyn HostMemory>>) -> Self {
        TensorPool { buffers: Vec::new(), limit, memory, device: None }
    }

    /// A pool of buffers in a device's memory: its tensors are device tensors
    /// ([`Tensor::device`]), written with [`PooledTensor::write_at`].
    pub fn on_device(limit: usize, device: Arc<dyn DeviceMemory>) -> Self {
        TensorPool { buffers: Vec::new(), limit, memory: None, device: Some(device) }
    }

    /// The device this pool's buffers are on (`None`: host memory).
    pub fn device(&self) -> Option<u32> {
        self.device.as_ref().map(|d| d.device())
    }

    /// Buffers the pool keeps (free or in use).
    pub fn kept(&self) -> usize {
        self.buffers.len()
    }

    /// A writable tensor of `dtype` and `shape` whose buffer holds at least
    /// `capacity_rows` rows (more than the tensor's own: room for padding
    /// rows, see [`Tensor::with_rows_after`]). Its bytes hold whatever the
    /// buffer held before: write them all.
    pub fn take(&mut self, dtype: DType, shape: &[usize], capacity_rows: usize) -> Result<PooledTensor, TensorError> {
        if !dtype.is_fixed_size() {
            return Err(TensorError::NotFixedSize("a pooled buffer"));
        }
        let len = checked_len(shape, dtype)? * dtype.size();
        let row_bytes = shape.iter().skip(1).product::<usize>() * dtype.size();
        let capacity = match shape.first() {
            Some(&rows) if capacity_rows > rows => {
                let mut wide: Shape = shape.into();
                wide[0] = capacity_rows;
                checked_len(&wide, dtype)?;
                capacity_rows * row_bytes
            }
            _ => len,
        };
        // Buffers come in power-of-two byte sizes, so one serves every smaller tensor and a
        // pool of batches of many sizes holds a few buffers instead of replacing them.
        let capacity = capacity.checked_next_power_of_two().unwrap_or(capacity);
        let free = self
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.len >= capacity && Arc::strong_count(b) == 1)
            .min_by_key(|(_, b)| b.len)
            .map(|(i, _)| i);
        let buffer = match free {
            Some(i) => {
                // Pairs with the release decrements of the tensors that held the buffer.
                fence(Ordering::Acquire);
                Arc::clone(&self.buffers[i])
            }
            None => {
                let buffer = Arc::new(match &self.device {
                    Some(device) => Buffer::on_device(capacity, device)?,
                    None => Buffer::zeroed_in(capacity, self.memory.as_ref()),
                });
                if self.buffers.len() < self.limit {
                    self.buffers.push(Arc::clone(&buffer));
                } else if let Some(i) = self.smallest_free() {
                    self.buffers[i] = Arc::clone(&buffer);
                }
                buffer
            }
        };
        Ok(PooledTensor(Tensor { dtype, shape: shape.into(), buffer, offset: 0, heap: None }))
    }

    fn smallest_free(&self) -> Option<usize> {
        let free = self.buffers.iter().enumerate().filter(|(_, b)| Arc::strong_count(b) == 1);
        free.min_by_key(|(_, b)| b.len).map(|(i, _)| i)
    }
}

/// A tensor being written: the one handle to its buffer besides its pool's (see the module docs).
pub struct PooledTensor(Tensor);

impl PooledTensor {
    /// Writes `source`'s elements at byte `offset` of the buffer, wherever either lies
    /// (host or this pool's device). Returns the bytes that crossed between host and device.
    pub fn write_at(&mut self, offset: usize, source: &Tensor) -> Result<u64, TensorError> {
        let len = source.len() * source.dtype.size();
        assert!(offset + len <= self.0.buffer.len, "write past the pooled buffer");
        // SAFETY: in bounds (above); this handle is the buffer's only writer (module docs).
        let to = unsafe { self.0.buffer.ptr.as_ptr().add(offset) };
        let kind = match (self.0.buffer.device(), source.buffer.device()) {
            (None, None) => {
                // SAFETY: host memory at both ends, `len` bytes each, not overlapping (different buffers).
                unsafe { std::ptr::copy_nonoverlapping(source.data_ptr(), to, len) };
                return Ok(0);
            }
            (Some(_), None) => CopyKind::HostToDevice,
            (None, Some(_)) => CopyKind::DeviceToHost,
            (Some(_), Some(_)) => CopyKind::DeviceToDevice,
        };
        let memory = self.0.buffer.device().or(source.buffer.device()).expect("one end is on a device");
        // SAFETY: `len` bytes at both ends, in the memories `kind` names.
        unsafe { memory.copy(to, source.data_ptr(), len, kind) }.map_err(TensorError::Device)?;
        Ok(if kind == CopyKind::DeviceToDevice { 0 } else { len as u64 })
    }

    /// Writes `bytes` from host memory at byte `offset` of the buffer (host or device).
    pub fn write_bytes_at(&mut self, offset: usize, bytes: &[u8]) -> Result<(), TensorError> {
        assert!(offset + bytes.len() <= self.0.buffer.len, "write past the pooled buffer");
        // SAFETY: in bounds (above); this handle is the buffer's only writer.
        let to = unsafe { self.0.buffer.ptr.as_ptr().add(offset) };
        match self.0.buffer.device() {
            // SAFETY: host memory, `bytes.len()` bytes at both ends.
            None => unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), to, bytes.len()) },
            // SAFETY: host source, device destination, `bytes.len()` bytes each.
            Some(memory) => unsafe { memory.copy(to, bytes.as_ptr(), bytes.len(), CopyKind::HostToDevice) }
                .map_err(TensorError::Device)?,
        }
        Ok(())
    }

    /// Zeroes `len` bytes from byte `offset` of the buffer (host or device).
    pub fn zero_at(&mut self, offset: usize, len: usize) -> Result<(), TensorError> {
        assert!(offset + len <= self.0.buffer.len, "zeroing past the pooled buffer");
        // SAFETY: in bounds (above); this handle is the buffer's only writer.
        let to = unsafe { self.0.buffer.ptr.as_ptr().add(offset) };
        match self.0.buffer.device() {
            // SAFETY: `len` host bytes.
            None => unsafe { std::ptr::write_bytes(to, 0, len) },
            // SAFETY: `len` device bytes.
            Some(memory) => unsafe { memory.zero(to, len) }.map_err(TensorError::Device)?,
        }
        Ok(())
    }

    /// The address of the tensor's first element (host or device), for an engine to write into.
    pub fn data_ptr_mut(&mut self) -> *mut u8 {
        self.0.buffer.ptr.as_ptr()
    }

    /// The device the buffer is on (`None`: host memory).
    pub fn device(&self) -> Option<u32> {
        self.0.device()
    }

    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    /// The tensor as written so far, to read while this handle keeps it: a view made of it
    /// ([`Tensor::rows`]) must be dropped before the next write through this handle.
    pub fn as_tensor(&self) -> &Tensor {
        &self.0
    }

    /// The finished tensor, shared and read-only from now on.
    pub fn into_tensor(self) -> Tensor {
        self.0
    }
}

/// Concatenates `parts` along dim 0 into a buffer of `pool` (as [`super::stitch`]
/// does into a new one), with room for `capacity_rows` rows: rows past the
/// parts' are zeros. One part with no room asked for is returned as it is.
/// BYTES tensors are stitched as [`super::stitch`] does, with no room.
pub fn stitch_pooled(pool: &mut TensorPool, parts: &[&Tensor], capacity_rows: usize) -> Result<Tensor, TensorError> {
    let first = super::stitch::check_stitch(parts)?;
    if first.dtype == DType::Bytes {
        return super::stitch(parts);
    }
    let rows: usize = parts.iter().map(|p| p.shape[0]).sum();
    if parts.len() == 1 && capacity_rows <= rows && first.device() == pool.device() {
        return Ok(first.clone());
    }
    let mut shape: Shape = first.shape.clone();
    shape[0] = rows;
    let mut out = pool.take(first.dtype, &shape, capacity_rows)?;
    let mut offset = 0;
    for part in parts {
        out.write_at(offset, part)?;
        offset += part.len() * part.dtype.size();
    }
    let row_bytes = first.shape[1..].iter().product::<usize>() * first.dtype.size();
    out.zero_at(offset, capacity_rows.saturating_sub(rows) * row_bytes)?;
    Ok(out.into_tensor())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[f32]) -> Tensor {
        Tensor::from_slice(vec![1, values.len()], values).unwrap()
    }

    #[test]
    fn a_buffer_is_reused_once_no_tensor_holds_it() {
        let mut pool = TensorPool::new(4);
        let (a, b) = (row(&[1.0, 2.0]), row(&[3.0, 4.0]));
        let first = stitch_pooled(&mut pool, &[&a, &b], 2).unwrap();
        let first_ptr = first.as_bytes().as_ptr();
        // Still held: a second batch gets another buffer.
        let second = stitch_pooled(&mut pool, &[&b, &a], 2).unwrap();
        assert_ne!(second.as_bytes().as_ptr(), first_ptr);
        assert_eq!(first.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
        let view = first.rows(1..2);
        drop(first);
        // A view still holds the buffer.
        let third = stitch_pooled(&mut pool, &[&a, &a], 2).unwrap();
        assert_ne!(third.as_bytes().as_ptr(), first_ptr);
        drop((view, third));
        let fourth = stitch_pooled(&mut pool, &[&b, &b], 2).unwrap();
        assert_eq!(fourth.as_slice::<f32>().unwrap(), &[3.0, 4.0, 3.0, 4.0]);
        // Three batches were held at once at most; the fourth reused one of their buffers.
        assert_eq!(pool.kept(), 3);
    }

    #[test]
    fn room_for_padding_rows_is_zeroed_and_reachable_by_widening() {
        let mut pool = TensorPool::new(2);
        let (a, b, c) = (row(&[1.0]), row(&[2.0]), row(&[3.0]));
        let batch = stitch_pooled(&mut pool, &[&a, &b, &c], 4).unwrap();
        drop(batch);
        // The same buffer again, now with fewer rows: the stale third row must read as zero.
        let batch = stitch_pooled(&mut pool, &[&c, &b], 4).unwrap();
        assert_eq!(batch.shape(), &[2, 1]);
        let wide = batch.with_rows_after(4).expect("the buffer holds four rows");
        assert_eq!(wide.as_slice::<f32>().unwrap(), &[3.0, 2.0, 0.0, 0.0]);
        assert!(batch.with_rows_after(5).is_none());
    }

    /// Host memory from Rust's allocator that counts what is outstanding.
    #[derive(Default)]
    struct Counted(std::sync::atomic::AtomicIsize);

    impl HostMemory for Counted {
        fn allocate(&self, len: usize) -> Option<std::ptr::NonNull<u8>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let layout = std::alloc::Layout::from_size_align(len, 64).unwrap();
            std::ptr::NonNull::new(unsafe { std::alloc::alloc(layout) })
        }

        unsafe fn free(&self, ptr: std::ptr::NonNull<u8>, len: usize) {
            self.0.fetch_sub(1, Ordering::SeqCst);
            unsafe { std::alloc::dealloc(ptr.as_ptr(), std::alloc::Layout::from_size_align(len, 64).unwrap()) }
        }
    }

    #[test]
    fn buffers_of_a_pool_in_other_memory_come_from_it_and_go_back_to_it() {
        let memory = Arc::new(Counted::default());
        let mut pool = TensorPool::in_memory(2, Some(memory.clone() as Arc<dyn HostMemory>));
        let (a, b) = (row(&[1.0, 2.0]), row(&[3.0, 4.0]));
        let batch = stitch_pooled(&mut pool, &[&a, &b], 4).unwrap();
        assert_eq!(
            batch.with_rows_after(4).unwrap().as_slice::<f32>().unwrap(),
            &[1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(memory.0.load(Ordering::SeqCst), 1);
        drop(batch);
        let again = stitch_pooled(&mut pool, &[&b, &a], 4).unwrap();
        assert_eq!(memory.0.load(Ordering::SeqCst), 1, "the free buffer is reused, not allocated again");
        drop((again, pool));
        assert_eq!(memory.0.load(Ordering::SeqCst), 0, "every buffer went back to its memory");
    }

    /// "Device" memory that is host memory underneath, counting copies by kind.
    #[derive(Default)]
    struct FakeDevice {
        copies: parking_lot::Mutex<Vec<(CopyKind, usize)>>,
    }

    impl DeviceMemory for FakeDevice {
        fn device(&self) -> u32 {
            3
        }
        fn allocate(&self, len: usize) -> Option<std::ptr::NonNull<u8>> {
            std::ptr::NonNull::new(unsafe { std::alloc::alloc(std::alloc::Layout::from_size_align(len, 64).unwrap()) })
        }
        unsafe fn free(&self, ptr: std::ptr::NonNull<u8>, len: usize) {
            unsafe { std::alloc::dealloc(ptr.as_ptr(), std::alloc::Layout::from_size_align(len, 64).unwrap()) }
        }
        unsafe fn copy(&self, to: *mut u8, from: *const u8, len: usize, kind: CopyKind) -> Result<(), String> {
            self.copies.lock().push((kind, len));
            unsafe { std::ptr::copy_nonoverlapping(from, to, len) };
            Ok(())
        }
        unsafe fn zero(&self, to: *mut u8, len: usize) -> Result<(), String> {
            unsafe { std::ptr::write_bytes(to, 0, len) };
            Ok(())
        }
    }

    #[test]
    fn device_tensors_are_stitched_and_padded_on_the_device_and_read_through_a_copy() {
        let device = Arc::new(FakeDevice::default());
        let mut on_device = TensorPool::on_device(2, device.clone());
        // Two requests' outputs made on the device (each uploaded once here).
        let upload = |pool: &mut TensorPool, values: &[f32]| {
            let host = row(values);
            let mut t = pool.take(DType::F32, host.shape(), 0).unwrap();
            assert_eq!(t.write_at(0, &host).unwrap(), 8, "host to device crosses");
            t.into_tensor()
        };
        let mut producer = TensorPool::on_device(2, device.clone());
        let (a, b) = (upload(&mut producer, &[1.0, 2.0]), upload(&mut producer, &[3.0, 4.0]));
        assert_eq!((a.device(), b.device()), (Some(3), Some(3)));
        device.copies.lock().clear();
        let batch = stitch_pooled(&mut on_device, &[&a, &b], 4).unwrap();
        assert_eq!(batch.device(), Some(3));
        assert_eq!(
            *device.copies.lock(),
            [(CopyKind::DeviceToDevice, 8), (CopyKind::DeviceToDevice, 8)],
            "stitching copies device to device only"
        );
        let wide = batch.with_rows_after(4).unwrap().to_host().unwrap();
        assert_eq!(wide.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(batch.rows(1..2), row(&[3.0, 4.0]), "a device view compares by its elements");
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| batch.as_bytes().len()));
        assert!(result.is_err(), "a device tensor's elements are not host-readable");
    }

    #[test]
    fn a_full_pool_still_hands_out_tensors() {
        let mut pool = TensorPool::new(1);
        let held = pool.take(DType::F32, &[2, 2], 0).unwrap().into_tensor();
        let other = pool.take(DType::F32, &[2, 2], 0).unwrap().into_tensor();
        assert_ne!(held.as_bytes().as_ptr(), other.as_bytes().as_ptr());
        assert_eq!(pool.kept(), 1);
    }
}
