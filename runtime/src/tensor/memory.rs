//! Memory other than Rust's allocator's that tensors can live in: pinned host memory and a device's.

use std::ptr::NonNull;

/// Host memory from somewhere other than Rust's allocator, for a [`TensorPool`]'s
/// buffers: pinned (page-locked) memory that a GPU copies to and from directly,
/// without staging it through a driver buffer.
pub trait HostMemory: Send + Sync {
    /// `len` bytes (at least 1), aligned to 64 bytes; `None` when none can be had
    /// (the pool then takes Rust's allocator's).
    fn allocate(&self, len: usize) -> Option<NonNull<u8>>;
    /// Returns memory `allocate` gave.
    ///
    /// # Safety
    /// `ptr` came from this `allocate` with this `len` and is not used again.
    unsafe fn free(&self, ptr: NonNull<u8>, len: usize);
}

/// Which way a [`DeviceMemory`] copy goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

/// A device's memory (a GPU's), for tensors that stay on the device between the
/// nodes that run there: a [`TensorPool`] on it stitches and pads batches there.
/// A tensor in device memory has a shape and dtype the host reads, and elements
/// it does not ([`Tensor::as_bytes`] panics; [`Tensor::to_host`] copies them).
pub trait DeviceMemory: Send + Sync {
    /// The device's index (CUDA device N).
    fn device(&self) -> u32;
    /// `len` bytes (at least 1) of device memory, aligned to 64 bytes; `None` when none can be had.
    fn allocate(&self, len: usize) -> Option<NonNull<u8>>;
    /// Returns memory `allocate` gave.
    ///
    /// # Safety
    /// `ptr` came from this `allocate` with this `len` and is not used again.
    unsafe fn free(&self, ptr: NonNull<u8>, len: usize);
    /// Copies `len` bytes, complete when it returns.
    ///
    /// # Safety
    /// `from` and `to` hold `len` bytes each, in the memories `kind` names.
    unsafe fn copy(&self, to: *mut u8, from: *const u8, len: usize, kind: CopyKind) -> Result<(), String>;
    /// Sets `len` bytes of device memory to zero.
    ///
    /// # Safety
    /// `to` holds `len` bytes of this device's memory.
    unsafe fn zero(&self, to: *mut u8, len: usize) -> Result<(), String>;
}
