//! What a CUDA node needs before ONNX Runtime's GPU build can run it: the build
//! itself (its core library with `libonnxruntime_providers_cuda.so` beside it),
//! the CUDA 13 and cuDNN 9 libraries it loads, and a GPU.
//!
//! `scripts/setup.sh --gpu` puts the build in [`GPU_CACHE_RELATIVE_DIR`] and the
//! CUDA libraries in its `cuda/` folder. The engine finds both with no manual
//! step: the build like the CPU build (`ORT_DYLIB_PATH`, else the project cache
//! under the usual roots, see [`crate::ort_library`]), and the CUDA libraries in
//! the folders of `BATON_CUDA_LIBS` (colon-separated; a Python environment's
//! `nvidia/*/lib` folders, say) and then the cache's `cuda/`. They are preloaded
//! in dependency order ([`CUDA_LIBRARIES`]) before ONNX Runtime is, so when ORT
//! opens its CUDA provider, the dynamic loader finds each one already loaded by
//! its name.
//!
//! Every check here is a plain file-system check, made before anything is
//! loaded: a machine without a GPU or without the libraries gets one clear
//! error naming what is missing and the fix, and keeps its CPU build usable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::ort_library::ORT_VERSION;

/// Where `scripts/setup.sh --gpu` puts ONNX Runtime's GPU build, relative to the repository root.
pub const GPU_CACHE_RELATIVE_DIR: &str = ".cache/onnxruntime-gpu/1.31.1";

/// The GPU build's core library, in [`GPU_CACHE_RELATIVE_DIR`].
pub const GPU_CORE_LIBRARY: &str = "libonnxruntime.so.1.31.1";

/// ONNX Runtime's CUDA provider library, which ORT opens from its core library's folder.
pub const CUDA_PROVIDER_LIBRARY: &str = "libonnxruntime_providers_cuda.so";

/// The CUDA and cuDNN libraries the CUDA provider loads, in dependency order
/// (each after the ones it needs), and whether each is required.
pub const CUDA_LIBRARIES: &[(&str, bool)] = &[
    ("libcudart.so.13", true),
    ("libcublasLt.so.13", true),
    ("libcublas.so.13", true),
    ("libcurand.so.10", true),
    ("libcufft.so.12", false),
    ("libnvrtc-builtins.so.13.0", false),
    ("libnvrtc.so.13", false),
    ("libcudnn_graph.so.9", true),
    ("libcudnn_engines_precompiled.so.9", true),
    ("libcudnn_engines_runtime_compiled.so.9", true),
    ("libcudnn_engines_tensor_ir.so.9", false),
    ("libcudnn_heuristic.so.9", true),
    ("libcudnn_ops.so.9", true),
    ("libcudnn_cnn.so.9", true),
    ("libcudnn_adv.so.9", true),
    ("libcudnn_ext.so.9", false),
    ("libcudnn.so.9", true),
];

/// The fix for a missing piece of the GPU build, said in every such error.
const FIX: &str = "run scripts/setup.sh --gpu (or set ORT_DYLIB_PATH to the GPU build's libonnxruntime.so and \
                   BATON_CUDA_LIBS to the folders holding the CUDA 13 / cuDNN 9 libraries)";

/// The GPU build's core library: `ORT_DYLIB_PATH` (whose folder must hold the CUDA
/// provider) if set, else the first root holding the cache with its provider.
pub fn locate_gpu_build(dylib_env: Option<OsString>, roots: &[PathBuf]) -> Result<PathBuf, String> {
    if let Some(path) = dylib_env.filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        let folder = path.parent().unwrap_or(Path::new("."));
        return if !path.is_file() {
            Err(format!("ORT_DYLIB_PATH is set to {}, but no such file exists; {FIX}", path.display()))
        } else if !folder.join(CUDA_PROVIDER_LIBRARY).is_file() {
            Err(format!(
                "ONNX Runtime's CUDA provider ({CUDA_PROVIDER_LIBRARY}) is not beside ORT_DYLIB_PATH ({}): that is \
                 not the GPU build; {FIX}",
                path.display()
            ))
        } else {
            Ok(path)
        };
    }
    for root in roots {
        let dir = root.join(GPU_CACHE_RELATIVE_DIR);
        if dir.join(GPU_CORE_LIBRARY).is_file() && dir.join(CUDA_PROVIDER_LIBRARY).is_file() {
            return Ok(dir.join(GPU_CORE_LIBRARY));
        }
    }
    let looked: Vec<String> = roots.iter().map(|r| r.join(GPU_CACHE_RELATIVE_DIR).display().to_string()).collect();
    Err(format!(
        "ONNX Runtime {ORT_VERSION}'s GPU build ({CUDA_PROVIDER_LIBRARY}) not found (looked in: {}); {FIX}",
        looked.join(", ")
    ))
}

/// The folders the CUDA libraries are looked for in: `BATON_CUDA_LIBS`'s, then the build's `cuda/`.
pub fn cuda_library_dirs(cuda_libs_env: Option<OsString>, core_library: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = cuda_libs_env.map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    dirs.retain(|d| !d.as_os_str().is_empty());
    if let Some(folder) = core_library.parent() {
        dirs.push(folder.join("cuda"));
    }
    dirs
}

/// Each CUDA library found, in [`CUDA_LIBRARIES`] order (optional ones only when found);
/// a required one missing from every folder is an error listing all missing ones.
pub fn locate_cuda_libraries(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for &(name, required) in CUDA_LIBRARIES {
        match dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
            Some(path) => found.push(path),
            None if required => missing.push(name),
            None => {}
        }
    }
    if missing.is_empty() {
        Ok(found)
    } else {
        let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        Err(format!(
            "the CUDA 13 / cuDNN 9 libraries {} were not found (looked in: {}); {FIX}",
            missing.join(", "),
            if looked.is_empty() { "nowhere".to_string() } else { looked.join(", ") }
        ))
    }
}

/// Whether the machine shows NVIDIA GPU `device` (its `/dev/nvidiaN`), looking under `dev` (`/dev`).
pub fn check_device(dev: &Path, device: usize) -> Result<(), String> {
    if dev.join(format!("nvidia{device}")).exists() {
        return Ok(());
    }
    let present: Vec<String> = std::fs::read_dir(dev)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| {
                    n.strip_prefix("nvidia").is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
                })
                .collect()
        })
        .unwrap_or_default();
    if present.is_empty() {
        Err(format!(
            "no NVIDIA GPU on this machine (no {}): run this pipeline on a machine with one, or use \
             `provider = \"cpu\"`",
            dev.join("nvidia0").display()
        ))
    } else {
        Err(format!(
            "CUDA device {device} is not on this machine (it has {}); set `device` to one of them",
            present.join(", ")
        ))
    }
}

/// Loads each library (in the order given) and keeps it loaded for the life of the process.
pub fn preload(libraries: &[PathBuf]) -> Result<(), String> {
    for library in libraries {
        ort::util::preload_dylib(library.as_path())
            .map_err(|e| format!("cannot load the CUDA library {}: {e}; {FIX}", library.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ort_library::tests::temp_dir;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn the_gpu_build_is_found_in_the_cache_only_with_its_cuda_provider() {
        let half = temp_dir("half");
        touch(&half.join(GPU_CACHE_RELATIVE_DIR).join(GPU_CORE_LIBRARY));
        let full = temp_dir("full");
        touch(&full.join(GPU_CACHE_RELATIVE_DIR).join(GPU_CORE_LIBRARY));
        touch(&full.join(GPU_CACHE_RELATIVE_DIR).join(CUDA_PROVIDER_LIBRARY));
        let found = locate_gpu_build(None, &[half.to_path_buf(), full.to_path_buf()]).unwrap();
        assert_eq!(found, full.join(GPU_CACHE_RELATIVE_DIR).join(GPU_CORE_LIBRARY));
    }

    #[test]
    fn a_missing_gpu_build_names_the_places_and_the_setup_fix() {
        let empty = temp_dir("empty");
        let err = locate_gpu_build(None, &[empty.to_path_buf()]).unwrap_err();
        assert!(err.contains(CUDA_PROVIDER_LIBRARY), "{err}");
        assert!(err.contains(&empty.join(GPU_CACHE_RELATIVE_DIR).display().to_string()), "{err}");
        assert!(err.contains("scripts/setup.sh --gpu"), "{err}");
    }

    #[test]
    fn ort_dylib_path_to_the_cpu_build_is_not_taken_for_the_gpu_build() {
        let dir = temp_dir("cpu-build");
        touch(&dir.join("libonnxruntime.so.1.31.1"));
        let err = locate_gpu_build(Some(dir.join("libonnxruntime.so.1.31.1").into()), &[]).unwrap_err();
        assert!(err.contains("not the GPU build") && err.contains("scripts/setup.sh --gpu"), "{err}");
        touch(&dir.join(CUDA_PROVIDER_LIBRARY));
        assert_eq!(
            locate_gpu_build(Some(dir.join("libonnxruntime.so.1.31.1").into()), &[]).unwrap(),
            dir.join("libonnxruntime.so.1.31.1")
        );
    }

    #[test]
    fn cuda_libraries_come_from_the_first_folder_holding_each_in_dependency_order() {
        let env_dir = temp_dir("env-libs");
        let cache = temp_dir("cache-libs");
        for &(name, required) in CUDA_LIBRARIES {
            if required {
                touch(&cache.join("cuda").join(name));
            }
        }
        touch(&env_dir.join("libcublas.so.13"));
        let dirs = cuda_library_dirs(Some(env_dir.to_path_buf().into()), &cache.join(GPU_CORE_LIBRARY));
        assert_eq!(dirs, vec![env_dir.to_path_buf(), cache.join("cuda")]);
        let found = locate_cuda_libraries(&dirs).unwrap();
        let required = CUDA_LIBRARIES.iter().filter(|(_, r)| *r).count();
        assert_eq!(found.len(), required, "optional libraries are left out when absent");
        assert_eq!(found[0], cache.join("cuda/libcudart.so.13"));
        assert_eq!(found[2], env_dir.join("libcublas.so.13"), "BATON_CUDA_LIBS comes first");
        assert_eq!(found.last().unwrap(), &cache.join("cuda/libcudnn.so.9"), "cuDNN's front library last");
    }

    #[test]
    fn missing_cuda_libraries_are_all_named_with_the_fix() {
        let dir = temp_dir("few-libs");
        touch(&dir.join("libcudart.so.13"));
        let err = locate_cuda_libraries(&[dir.to_path_buf()]).unwrap_err();
        assert!(err.contains("libcublas.so.13") && err.contains("libcudnn.so.9"), "{err}");
        assert!(!err.contains("libcudart.so.13"), "{err}");
        assert!(err.contains("scripts/setup.sh --gpu"), "{err}");
    }

    #[test]
    fn a_machine_without_a_gpu_says_so() {
        let dev = temp_dir("dev-none");
        let err = check_device(&dev, 0).unwrap_err();
        assert!(err.contains("no NVIDIA GPU"), "{err}");
        touch(&dev.join("nvidia0"));
        touch(&dev.join("nvidiactl"));
        check_device(&dev, 0).unwrap();
        let err = check_device(&dev, 1).unwrap_err();
        assert!(err.contains("CUDA device 1") && err.contains("nvidia0") && !err.contains("nvidiactl"), "{err}");
    }
}
