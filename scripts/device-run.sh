#!/usr/bin/env bash
# Runs on the GPU machine (docs/gpu.md), in the repository copy there, after the parts that
# scripts/device-pack.sh made here arrived (one call carrying .device/cK each; ignored paths
# stay on a warm machine between calls).
#
#   scripts/device-run.sh check            what arrived so far, the GPU, the CUDA libraries
#   scripts/device-run.sh run [WHAT]       WHAT: tests | figures | all (default all): checks the
#                                          parts, unpacks them, runs the GPU tests and/or the
#                                          figures (scripts/gpu-figures.sh), results into $OUT
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/baton-out}
mkdir -p "$OUT"
mode=${1:-check}
what=${2:-all}

# The Python environment's CUDA 13 / cuDNN 9 libraries (its nvidia-* wheels), for the engine.
cuda_lib_dirs() {
    python3 - <<'PYEOF'
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
print(":".join(sorted({d for r in roots for d in glob.glob(os.path.join(r, "*", "lib"))})))
PYEOF
}

if [[ $mode == check ]]; then
    ls -la .device/c*/ 2>/dev/null || echo "no parts yet"
    nvidia-smi -L || true
    echo "CUDA library folders: $(cuda_lib_dirs)"
    exit 0
fi
[[ $mode == run ]] || { echo "usage: $0 check | run [tests|figures|all]" >&2; exit 2; }

manifest=$(ls .device/c*/MANIFEST | tail -1)
(cd .device && sha256sum -c --quiet "${manifest#.device/}") || { echo "error: a part is missing or damaged" >&2; exit 1; }
if [[ ! -f .device/unpacked/COMMIT ]]; then
    rm -rf .device/unpacked && mkdir -p .device/unpacked
    # Parts in order of their index (part.0, part.1, ...), whichever cK folder holds each.
    ls .device/c*/part.* | awk -F'part.' '{print $NF" "$0}' | sort -n | cut -d' ' -f2 | xargs cat |
        xz -d | tar -x -C .device/unpacked
fi
U=$PWD/.device/unpacked
echo "binaries built at commit $(cat "$U/COMMIT"); working tree at $(git rev-parse HEAD 2>/dev/null || echo '?')"

# The test binary finds the repository by the path it was built at: make that path this copy.
build_root=$(cat "$U/BUILD_ROOT")
if [[ ! -e $build_root ]]; then
    mkdir -p "$(dirname "$build_root")" && ln -s "$PWD" "$build_root"
fi
# The test models (a link to another checkout's folder where they were packed).
if [[ -L models || ! -d models ]]; then
    rm -f models && mkdir models && tar -xf "$U/models.tar" -C models
fi

export ORT_DYLIB_PATH=$U/ort/libonnxruntime.so.1.31.1
export BATON_CUDA_LIBS
BATON_CUDA_LIBS=$(cuda_lib_dirs)
export BATON_BIN=$U/bin/baton COLLAB_BIN=$U/bin/collab
{
    nvidia-smi || true
    echo "BATON_CUDA_LIBS=$BATON_CUDA_LIBS"
    echo "-- libonnxruntime_providers_cuda.so, libraries not found on those folders:"
    LD_LIBRARY_PATH=$BATON_CUDA_LIBS ldd "$U/ort/libonnxruntime_providers_cuda.so" | grep 'not found' || echo none
} 2>&1 | tee "$OUT/machine.txt"

status=0
if [[ $what == tests || $what == all ]]; then
    echo "==> GPU tests"
    "$U/bin/gpu-tests" --test-threads 1 --nocapture 2>&1 | tee "$OUT/gpu-tests.log" || status=1
fi
if [[ $what == figures || $what == all ]]; then
    echo "==> figures"
    scripts/gpu-figures.sh "$OUT" || status=1
fi
exit $status
