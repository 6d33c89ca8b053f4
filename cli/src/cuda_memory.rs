//! Free and total memory of a CUDA device (`cudaMemGetInfo`), read through
//! the CUDA runtime library the GPU build of ONNX Runtime already loaded
//! (`libcudart.so.13`, preloaded by `baton_engines::cuda`). Nothing is loaded
//! here: where the library is not in the process, there is no reading.

use std::ffi::{c_int, c_void, CStr};

/// The CUDA runtime's `cudaSetDevice` and `cudaMemGetInfo`.
pub struct DeviceMemory {
    set_device: unsafe extern "C" fn(c_int) -> c_int,
    get_info: unsafe extern "C" fn(*mut usize, *mut usize) -> c_int,
}

/// The CUDA runtime the GPU build loads (see `baton_engines::cuda::CUDA_LIBRARIES`).
const CUDART: &CStr = c"libcudart.so.13";

impl DeviceMemory {
    /// The CUDA runtime's functions, if the library is already loaded in this process.
    pub fn loaded() -> Option<DeviceMemory> {
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
        let (set_device, get_info) = (symbol(c"cudaSetDevice")?, symbol(c"cudaMemGetInfo")?);
        // SAFETY: these are the CUDA runtime's functions of these signatures
        // (`cudaError_t cudaSetDevice(int)`, `cudaError_t cudaMemGetInfo(size_t*, size_t*)`).
        unsafe {
            Some(DeviceMemory {
                set_device: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int) -> c_int>(set_device),
                get_info: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut usize, *mut usize) -> c_int>(
                    get_info,
                ),
            })
        }
    }

    /// `(free, total)` bytes of `device`, or `None` when the runtime reports an error.
    /// The first call creates the device's primary context (its own memory).
    pub fn info(&self, device: usize) -> Option<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both pointers are to live `usize`s; the functions are the CUDA runtime's.
        let ok = unsafe { (self.set_device)(device as c_int) == 0 && (self.get_info)(&mut free, &mut total) == 0 };
        ok.then_some((free as u64, total as u64))
    }
}
