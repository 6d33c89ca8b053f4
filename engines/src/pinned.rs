//! Pinned (page-locked) host memory from the CUDA runtime, for the buffers a GPU
//! node's batches are stitched into and its outputs written to: the GPU copies
//! them by DMA directly, where pageable memory is first staged by the driver.
//!
//! The CUDA runtime (`libcudart`) is the one the GPU build of ONNX Runtime
//! loaded ([`crate::cuda::preload`]); it is looked up, not loaded again, so
//! without a loaded GPU build there is no pinned memory and buffers come from
//! Rust's allocator.

use std::ffi::{c_int, c_uint, c_void};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use baton::tensor::HostMemory;

/// The CUDA runtime's page-locked allocation.
struct Pinned {
    host_alloc: unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> c_int,
    free_host: unsafe extern "C" fn(*mut c_void) -> c_int,
}

impl HostMemory for Pinned {
    fn allocate(&self, len: usize) -> Option<NonNull<u8>> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: cudaHostAlloc(void**, size_t, unsigned) with cudaHostAllocDefault (0).
        let status = unsafe { (self.host_alloc)(&mut ptr, len, 0) };
        if status != 0 {
            tracing::warn!(bytes = len, status, "cudaHostAlloc failed; this buffer is pageable memory");
            return None;
        }
        NonNull::new(ptr.cast())
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _len: usize) {
        // SAFETY: the caller passes memory from `allocate`, once.
        unsafe { (self.free_host)(ptr.as_ptr().cast()) };
    }
}

/// Pinned host memory, when the process has loaded the CUDA runtime (else `None`).
pub fn pinned_memory() -> Option<Arc<dyn HostMemory>> {
    static PINNED: OnceLock<Option<Arc<Pinned>>> = OnceLock::new();
    let pinned = PINNED.get_or_init(|| {
        let flags = libloading::os::unix::RTLD_NOW | libc::RTLD_NOLOAD;
        let found = crate::cuda::CUDA_RUNTIME_SONAMES.iter().find_map(|name| {
            // SAFETY: RTLD_NOLOAD only looks up a library already loaded; loading runs nothing new.
            unsafe { libloading::os::unix::Library::open(Some(*name), flags) }.ok()
        })?;
        // SAFETY: the CUDA runtime's documented signatures.
        let pinned = unsafe {
            Pinned { host_alloc: *found.get(b"cudaHostAlloc\0").ok()?, free_host: *found.get(b"cudaFreeHost\0").ok()? }
        };
        // The library stays loaded for the process's life (ONNX Runtime's CUDA provider holds it too).
        std::mem::forget(found);
        Some(Arc::new(pinned))
    });
    pinned.clone().map(|p| p as Arc<dyn HostMemory>)
}
