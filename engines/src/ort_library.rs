//! Finding and loading the ONNX Runtime shared library, once per process.
//!
//! `ort` is built with `load-dynamic`: nothing links against ONNX Runtime at
//! build time, and the library is opened at first use. `ort` panics when it
//! cannot find the library, so this module looks for the file itself and
//! returns a clear error instead:
//!
//! 1. `ORT_DYLIB_PATH`, if set (and not empty): that file, which must exist;
//! 2. otherwise the project cache that `scripts/setup.sh` fills,
//!    [`CACHE_RELATIVE_PATH`], searched under `$BATON_HOME` (if set), the
//!    current directory and its ancestors, the current executable's directory
//!    and its ancestors, and this crate's workspace root (known at build time).
//!
//! The ONNX Runtime environment is created lazily on first use and kept for the
//! life of the process (ONNX Runtime allows one per process); a failure is kept
//! too, so every later call returns the same error. Which build it loads is
//! decided by the first caller: [`gpu_environment`] (a CUDA node, readied at
//! load before any stage is inspected) loads the GPU build (see [`crate::cuda`]),
//! [`environment`] the CPU build, or whichever build is already loaded (the GPU
//! build runs CPU nodes too). A pipeline with no CUDA node never loads the GPU build.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ort::environment::Environment;

use crate::cuda;

/// Which ONNX Runtime build the process loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// PyPI's `onnxruntime`: the CPU provider only.
    Cpu,
    /// PyPI's `onnxruntime-gpu`: the CPU and CUDA providers.
    Gpu,
}

/// The process's ONNX Runtime: its environment and build, or why it could not be loaded.
static LOADED: OnceLock<Result<(Environment, Build), String>> = OnceLock::new();

/// The ONNX Runtime version Baton is tested against (what `scripts/setup.sh` fetches).
pub const ORT_VERSION: &str = "1.31.1";

/// Where `scripts/setup.sh` puts the library, relative to the repository root.
pub const CACHE_RELATIVE_PATH: &str = ".cache/onnxruntime/1.31.1/libonnxruntime.so.1.31.1";

/// The process-wide ONNX Runtime environment, created on first call.
///
/// Finds the library (see the module docs), loads it and builds an
/// environment named `baton`. Errors are kept: later calls return the same
/// message without trying again.
pub fn environment() -> Result<&'static Environment, String> {
    LOADED
        .get_or_init(|| {
            let path = find_library()?;
            let build =
                if path.with_file_name(cuda::CUDA_PROVIDER_LIBRARY).is_file() { Build::Gpu } else { Build::Cpu };
            load(&path, build)
        })
        .as_ref()
        .map(|(env, _)| env)
        .map_err(Clone::clone)
}

/// The process-wide environment of ONNX Runtime's GPU build, for a node on CUDA
/// `device`. The first call finds the build and the CUDA libraries, checks the
/// GPU (see [`crate::cuda`]), preloads the libraries and loads the build; a check
/// that fails loads nothing, so the process can still load the CPU build. An
/// error, too, when the CPU build is already loaded (one build per process).
pub fn gpu_environment(device: usize) -> Result<&'static Environment, String> {
    let dev = Path::new("/dev");
    let loaded = match LOADED.get() {
        Some(loaded) => loaded,
        None => {
            let path = cuda::locate_gpu_build(std::env::var_os("ORT_DYLIB_PATH"), &search_roots())?;
            let libraries =
                cuda::locate_cuda_libraries(&cuda::cuda_library_dirs(std::env::var_os("BATON_CUDA_LIBS"), &path))?;
            cuda::check_device(dev, device)?;
            LOADED.get_or_init(|| cuda::preload(&libraries).and_then(|()| load(&path, Build::Gpu)))
        }
    };
    match loaded {
        Ok((env, Build::Gpu)) => cuda::check_device(dev, device).map(|()| env),
        Ok((_, Build::Cpu)) => Err("ONNX Runtime's CPU build is already loaded in this process (by a pipeline \
                                    loaded earlier), and a process holds one build: load pipelines with CUDA \
                                    nodes first, or in a process of their own"
            .to_string()),
        Err(e) => Err(e.clone()),
    }
}

/// Loads the library at `path` and builds the environment named `baton`.
fn load(path: &Path, build: Build) -> Result<(Environment, Build), String> {
    let builder = ort::init_from(path).map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", path.display()))?;
    let env = builder
        .with_name("baton")
        .build()
        .map_err(|e| format!("cannot create the ONNX Runtime environment (library {}): {e}", path.display()))?;
    tracing::info!(library = %path.display(), ?build, "ONNX Runtime loaded");
    Ok((env, build))
}

/// The ONNX Runtime library this process would load, from `ORT_DYLIB_PATH` or the project cache.
pub fn find_library() -> Result<PathBuf, String> {
    locate(std::env::var_os("ORT_DYLIB_PATH"), &search_roots())
}

/// Folders under which [`CACHE_RELATIVE_PATH`] is looked for, in order, without duplicates.
pub fn search_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(home) = std::env::var_os("BATON_HOME").filter(|h| !h.is_empty()) {
        roots.push(PathBuf::from(home));
    }
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        roots.extend(exe_dir.ancestors().map(Path::to_path_buf));
    }
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let mut unique: Vec<PathBuf> = Vec::with_capacity(roots.len());
    for root in roots {
        // `engines/..` and the repository root are the same folder: compare canonical forms.
        let key = root.canonicalize().unwrap_or_else(|_| root.clone());
        if !unique.iter().any(|u| u.canonicalize().unwrap_or_else(|_| u.clone()) == key) {
            unique.push(root);
        }
    }
    unique
}

/// The library named by `dylib_env` (the value of `ORT_DYLIB_PATH`) if given, else the
/// first `root/CACHE_RELATIVE_PATH` that exists. Pure apart from file-existence checks.
pub fn locate(dylib_env: Option<OsString>, roots: &[PathBuf]) -> Result<PathBuf, String> {
    if let Some(path) = dylib_env.filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "ORT_DYLIB_PATH is set to {}, but no such file exists; point it at libonnxruntime.so.{ORT_VERSION} \
                 or unset it to use the project cache (scripts/setup.sh)",
                path.display()
            ))
        };
    }
    for root in roots {
        let candidate = root.join(CACHE_RELATIVE_PATH);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let looked: Vec<String> = roots.iter().map(|r| r.join(CACHE_RELATIVE_PATH).display().to_string()).collect();
    Err(format!(
        "ONNX Runtime {ORT_VERSION} shared library not found (looked in: {}); run scripts/setup.sh to fetch it, \
         or set ORT_DYLIB_PATH",
        looked.join(", ")
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) use baton_scratch::Scratch;

    /// A fresh, empty folder under the system temp dir.
    pub(crate) fn temp_dir(tag: &str) -> Scratch {
        Scratch::new(&format!("ort-lib-{tag}"))
    }

    #[test]
    fn env_path_wins_when_the_file_exists() {
        let dir = temp_dir("env");
        let lib = dir.join("libonnxruntime.so");
        std::fs::write(&lib, b"").unwrap();
        let cached = temp_dir("env-cache");
        std::fs::create_dir_all(cached.join(CACHE_RELATIVE_PATH).parent().unwrap()).unwrap();
        std::fs::write(cached.join(CACHE_RELATIVE_PATH), b"").unwrap();
        assert_eq!(locate(Some(lib.clone().into()), &[cached.to_path_buf()]).unwrap(), lib);
    }

    #[test]
    fn missing_env_path_is_an_error_naming_it() {
        let err = locate(Some("/no/such/dir/libonnxruntime.so".into()), &[]).unwrap_err();
        assert!(err.contains("ORT_DYLIB_PATH") && err.contains("/no/such/dir/libonnxruntime.so"), "{err}");
    }

    #[test]
    fn empty_env_value_counts_as_unset() {
        let root = temp_dir("empty-env");
        std::fs::create_dir_all(root.join(CACHE_RELATIVE_PATH).parent().unwrap()).unwrap();
        std::fs::write(root.join(CACHE_RELATIVE_PATH), b"").unwrap();
        assert_eq!(locate(Some(OsString::new()), &[root.to_path_buf()]).unwrap(), root.join(CACHE_RELATIVE_PATH));
    }

    #[test]
    fn first_root_holding_the_cache_is_used() {
        let empty = temp_dir("roots-empty");
        let full = temp_dir("roots-full");
        std::fs::create_dir_all(full.join(CACHE_RELATIVE_PATH).parent().unwrap()).unwrap();
        std::fs::write(full.join(CACHE_RELATIVE_PATH), b"").unwrap();
        assert_eq!(locate(None, &[empty.to_path_buf(), full.to_path_buf()]).unwrap(), full.join(CACHE_RELATIVE_PATH));
    }

    #[test]
    fn not_found_lists_every_place_and_the_fix() {
        let a = temp_dir("nf-a");
        let b = temp_dir("nf-b");
        let err = locate(None, &[a.to_path_buf(), b.to_path_buf()]).unwrap_err();
        assert!(err.starts_with("ONNX Runtime 1.31.1 shared library not found"), "{err}");
        assert!(err.contains(&a.join(CACHE_RELATIVE_PATH).display().to_string()), "{err}");
        assert!(err.contains(&b.join(CACHE_RELATIVE_PATH).display().to_string()), "{err}");
        assert!(err.contains("scripts/setup.sh") && err.contains("ORT_DYLIB_PATH"), "{err}");
    }

    #[test]
    fn search_roots_include_the_workspace_root_once() {
        let roots = search_roots();
        let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
        let hits = roots.iter().filter(|r| r.canonicalize().ok().as_deref() == Some(ws.as_path())).count();
        assert_eq!(hits, 1, "{roots:?}");
    }
}
