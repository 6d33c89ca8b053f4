//! The CUDA runtime's functions Baton calls itself: pinned host memory, device
//! memory and copies, and a device's memory use. They are read from the CUDA
//! runtime library the GPU build of ONNX Runtime loaded ([`crate::cuda::preload`]):
//! nothing is loaded here, so without a loaded GPU build there is no CUDA runtime
//! ([`CudaRuntime::loaded`] is `None`) and buffers stay in Rust's allocator.
//!
//! Memory Baton hands to the GPU:
//! - [`PinnedMemory`]: page-locked host memory for the buffers a GPU node's
//!   batches are stitched into and its host outputs written to; the GPU copies
//!   it by DMA directly, where pageable memory is first staged by the driver.
//! - [`CudaMemory`]: device memory for tensors that stay on the device between
//!   GPU nodes (docs/gpu.md, "Host ↔ device copies"), stitched and padded there.
//!
//! Copies are complete when they return: `cudaMemcpy` on the default stream,
//! and after a copy within the device or a `cudaMemset` (which may return
//! before the device did them) a `cudaStreamSynchronize` of that stream, since
//! ONNX Runtime's CUDA stream does not wait for the default stream. So a
//! stitched batch is in place before its run starts, as ONNX Runtime's own
//! input copies are.

use std::ffi::{c_int, c_uint, c_void, CStr};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use baton::tensor::{CopyKind, DeviceMemory, HostMemory};

/// The CUDA runtime the GPU build loads (see [`crate::cuda::CUDA_LIBRARIES`]).
const CUDART: &CStr = c"libcudart.so.13";

/// The CUDA runtime's functions (signatures as its headers give them; errors are non-zero).
pub struct CudaRuntime {
    set_device: unsafe extern "C" fn(c_int) -> c_int,
    mem_get_info: unsafe extern "C" fn(*mut usize, *mut usize) -> c_int,
    host_alloc: unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> c_int,
    free_host: unsafe extern "C" fn(*mut c_void) -> c_int,
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int,
    free: unsafe extern "C" fn(*mut c_void) -> c_int,
    memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int,
    memset: unsafe extern "C" fn(*mut c_void, c_int, usize) -> c_int,
    stream_synchronize: unsafe extern "C" fn(*mut c_void) -> c_int,
}

impl CudaRuntime {
    /// The CUDA runtime's functions, if the library is already loaded in this process.
    pub fn loaded() -> Option<&'static CudaRuntime> {
        static RUNTIME: OnceLock<Option<CudaRuntime>> = OnceLock::new();
        RUNTIME.get_or_init(Self::look_up).as_ref()
    }

    fn look_up() -> Option<CudaRuntime> {
        // SAFETY: RTLD_NOLOAD opens nothing new: it returns the library already
        // loaded, or null. The handle is kept for the life of the process.
        let handle = unsafe { libc::dlopen(CUDART.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            return None;
        }
        let symbol = |name: &CStr| -> Option<*mut c_void> {
            // SAFETY: `handle` is a live library handle and `name` a C string.
            let f = unsafe { libc::dlsym(handle, name.as_ptr()) };
            (!f.is_null()).then_some(f)
        };
        macro_rules! function {
            ($name:literal: $ty:ty) => {
                // SAFETY: the CUDA runtime's function of this name has this signature.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(symbol($name)?) }
            };
        }
        Some(CudaRuntime {
            set_device: function!(c"cudaSetDevice": unsafe extern "C" fn(c_int) -> c_int),
            mem_get_info: function!(c"cudaMemGetInfo": unsafe extern "C" fn(*mut usize, *mut usize) -> c_int),
            host_alloc: function!(c"cudaHostAlloc": unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> c_int),
            free_host: function!(c"cudaFreeHost": unsafe extern "C" fn(*mut c_void) -> c_int),
            malloc: function!(c"cudaMalloc": unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int),
            free: function!(c"cudaFree": unsafe extern "C" fn(*mut c_void) -> c_int),
            memcpy: function!(c"cudaMemcpy": unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int),
            memset: function!(c"cudaMemset": unsafe extern "C" fn(*mut c_void, c_int, usize) -> c_int),
            stream_synchronize: function!(c"cudaStreamSynchronize": unsafe extern "C" fn(*mut c_void) -> c_int),
        })
    }

    /// `(free, total)` bytes of `device`, or `None` when the runtime reports an error.
    /// The first call creates the device's primary context (its own memory).
    pub fn memory_info(&self, device: usize) -> Option<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both pointers are to live `usize`s.
        let ok = unsafe { (self.set_device)(device as c_int) == 0 && (self.mem_get_info)(&mut free, &mut total) == 0 };
        ok.then_some((free as u64, total as u64))
    }
}

/// Pinned host memory, when the process has loaded the CUDA runtime (else `None`).
/// `BATON_PINNED_MEMORY=0` turns it off (pageable buffers), for comparing the two.
pub fn pinned_memory() -> Option<Arc<dyn HostMemory>> {
    if std::env::var_os("BATON_PINNED_MEMORY").is_some_and(|v| v == "0") {
        return None;
    }
    CudaRuntime::loaded().map(|runtime| Arc::new(PinnedMemory(runtime)) as Arc<dyn HostMemory>)
}

/// Memory on CUDA device `device`, when the process has loaded the CUDA runtime (else `None`).
pub fn device_memory(device: u32) -> Option<Arc<dyn DeviceMemory>> {
    CudaRuntime::loaded().map(|runtime| Arc::new(CudaMemory { runtime, device }) as Arc<dyn DeviceMemory>)
}

/// Page-locked host memory (`cudaHostAlloc`).
pub struct PinnedMemory(&'static CudaRuntime);

impl HostMemory for PinnedMemory {
    fn allocate(&self, len: usize) -> Option<NonNull<u8>> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: cudaHostAllocDefault (0); `ptr` is a live out-pointer.
        let status = unsafe { (self.0.host_alloc)(&mut ptr, len, 0) };
        if status != 0 {
            tracing::warn!(bytes = len, status, "cudaHostAlloc failed; this buffer is pageable memory");
            return None;
        }
        NonNull::new(ptr.cast())
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _len: usize) {
        // SAFETY: the caller passes memory from `allocate`, once.
        unsafe { (self.0.free_host)(ptr.as_ptr().cast()) };
    }
}

/// Memory on one CUDA device (`cudaMalloc`), copied with `cudaMemcpy`.
pub struct CudaMemory {
    runtime: &'static CudaRuntime,
    device: u32,
}

impl CudaMemory {
    fn on_device(&self) -> Result<(), String> {
        // SAFETY: a plain call; selects the device for this thread's following calls.
        match unsafe { (self.runtime.set_device)(self.device as c_int) } {
            0 => Ok(()),
            status => Err(format!("cudaSetDevice({}) failed with error {status}", self.device)),
        }
    }

    /// Waits for the default stream's work (see the module docs).
    fn finish(&self, what: &str) -> Result<(), String> {
        // SAFETY: the null stream is the default stream.
        match unsafe { (self.runtime.stream_synchronize)(std::ptr::null_mut()) } {
            0 => Ok(()),
            status => Err(format!("cudaStreamSynchronize after {what} failed with error {status}")),
        }
    }
}

impl DeviceMemory for CudaMemory {
    fn device(&self) -> u32 {
        self.device
    }

    fn allocate(&self, len: usize) -> Option<NonNull<u8>> {
        self.on_device().ok()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: `ptr` is a live out-pointer.
        let status = unsafe { (self.runtime.malloc)(&mut ptr, len) };
        if status != 0 {
            tracing::warn!(bytes = len, status, device = self.device, "cudaMalloc failed");
            return None;
        }
        NonNull::new(ptr.cast())
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _len: usize) {
        // SAFETY: the caller passes memory from `allocate`, once.
        unsafe { (self.runtime.free)(ptr.as_ptr().cast()) };
    }

    unsafe fn copy(&self, to: *mut u8, from: *const u8, len: usize, kind: CopyKind) -> Result<(), String> {
        self.on_device()?;
        // cudaMemcpyKind: host→device 1, device→host 2, device→device 3.
        let code = match kind {
            CopyKind::HostToDevice => 1,
            CopyKind::DeviceToHost => 2,
            CopyKind::DeviceToDevice => 3,
        };
        // SAFETY: the caller gives `len` valid bytes at both ends, of the kind's memories.
        match unsafe { (self.runtime.memcpy)(to.cast(), from.cast(), len, code) } {
            0 if kind == CopyKind::DeviceToDevice => self.finish("cudaMemcpy"),
            0 => Ok(()),
            status => Err(format!("cudaMemcpy ({kind:?}, {len} bytes) failed with error {status}")),
        }
    }

    unsafe fn zero(&self, to: *mut u8, len: usize) -> Result<(), String> {
        self.on_device()?;
        // SAFETY: the caller gives `len` valid device bytes.
        match unsafe { (self.runtime.memset)(to.cast(), 0, len) } {
            0 => self.finish("cudaMemset"),
            status => Err(format!("cudaMemset ({len} bytes) failed with error {status}")),
        }
    }
}
