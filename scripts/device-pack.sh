#!/usr/bin/env bash
# Packs what a GPU machine without registries needs to run Baton's GPU tests and figures
# (docs/gpu.md), into .device/ (git-ignored), in parts that each travel in one call:
#
#   .device/c1 .. .device/cN   each <= 56 MiB: release binaries (stripped), the GPU test
#                              binary, the test models, and ONNX Runtime's GPU build
#                              (libonnxruntime.so + its CUDA provider, xz'd and split)
#   .device/MANIFEST           sha256 of every part, checked on the device
#
# Needs scripts/setup.sh --gpu first (the GPU build in .cache/onnxruntime-gpu/). The CUDA and
# cuDNN libraries are not packed: the device's Python environment has them (device-run.sh
# points the engine at them). Usage: scripts/device-pack.sh   (then see docs/gpu.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
GPU=.cache/onnxruntime-gpu/1.31.1
PART_BYTES=$((56 * 1024 * 1024))   # + the working tree (~5 MiB): under 64 MiB a call
[[ -f $GPU/libonnxruntime_providers_cuda.so ]] || { echo "error: no GPU build in $GPU; run scripts/setup.sh --gpu" >&2; exit 1; }
grep -qxF /.device .gitignore || echo /.device >> .gitignore

echo "==> building release binaries and the GPU test binary"
cargo build --release --locked -p baton-cli -p baton-examples --bin baton --example collab
gpu_test=$(cargo test --release --locked -p baton-e2e --test gpu --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])')
[[ -x $gpu_test ]] || { echo "error: the GPU test binary was not built" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/ort"
cp target/release/baton target/release/examples/collab "$stage/bin/"
cp "$gpu_test" "$stage/bin/gpu-tests"
strip "$stage/bin/"*
# Where the binaries were built: the test binary finds the repository by this path.
echo "$ROOT" > "$stage/BUILD_ROOT"
git rev-parse HEAD > "$stage/COMMIT"
tar -C "$(readlink -f models)" -cf "$stage/models.tar" --exclude='*.stamp' .
cp "$GPU/libonnxruntime.so.1.31.1" "$GPU/libonnxruntime_providers_shared.so" "$GPU/libonnxruntime_providers_cuda.so" "$stage/ort/"
echo "==> compressing (xz -6, a few minutes)"
tar -C "$stage" -cf - bin ort models.tar BUILD_ROOT COMMIT | nice -n 15 xz -6 -T2 > "$stage/payload.tar.xz"

rm -rf .device && mkdir -p .device
split -b "$PART_BYTES" -d -a 1 "$stage/payload.tar.xz" "$stage/part."
n=0
for part in "$stage"/part.*; do
    n=$((n + 1))
    mkdir -p ".device/c$n"
    mv "$part" ".device/c$n/$(basename "$part")"
done
(cd .device && sha256sum c*/part.* > MANIFEST)
cp .device/MANIFEST ".device/c$n/MANIFEST"
du -sh .device/c* | sed 's/^/    /'
echo "packed $n parts; on the device: one call per part carrying .device/cK (K = 1..$n), the last one"
echo "running scripts/device-run.sh (docs/gpu.md gives the exact calls)"
