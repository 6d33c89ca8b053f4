#!/usr/bin/env bash
# Packs what a GPU machine without registries needs to run Baton's GPU session (docs/gpu.md)
# into .device/ (git-ignored), in parts that each travel in one call:
#
#   .device/c1 .. .device/cN   each <= 56 MiB (with the ~5 MiB working tree, under a call's 64 MiB):
#                              parts of two archives, filled in order, the small last ones together,
#       ort.part.K   ONNX Runtime's GPU build (libonnxruntime.so + its CUDA provider), xz'd once
#                    and cached in .cache/device/ort-gpu-1.31.1.tar.xz (it never changes)
#       app.part.K   release binaries (stripped: baton, collab, provider_diff, the GPU test
#                    binary), the test models, the detector's all-outputs copy, BUILD_ROOT, COMMIT
#   .device/MANIFEST           sha256 of every part, checked on the device
#
# The ORT parts come first and the app parts last, so the app shares the last folder with the
# ORT archive's remainder. Needs scripts/setup.sh --gpu first. The CUDA and
# cuDNN libraries are not packed: the device's Python environment has them (device-run.sh
# points the engine at them). Usage: scripts/device-pack.sh   (then see docs/gpu.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
GPU=.cache/onnxruntime-gpu/1.31.1
PART_BYTES=$((56 * 1024 * 1024))   # + the working tree (~5 MiB): under 64 MiB a call
[[ -f $GPU/libonnxruntime_providers_cuda.so ]] || { echo "error: no GPU build in $GPU; run scripts/setup.sh --gpu" >&2; exit 1; }
grep -qxF /.device .gitignore || echo /.device >> .gitignore

ORT_ARCHIVE=.cache/device/ort-gpu-1.31.1.tar.xz
if [[ ! -f $ORT_ARCHIVE ]]; then
    echo "==> compressing ONNX Runtime's GPU build (once; xz -6, several minutes)"
    mkdir -p .cache/device
    tar -C "$GPU" -cf - libonnxruntime.so.1.31.1 libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so |
        xz -6 -T2 > "$ORT_ARCHIVE.tmp"
    mv "$ORT_ARCHIVE.tmp" "$ORT_ARCHIVE"
fi

echo "==> building release binaries and the GPU test binary"
cargo build --release --locked -p baton-cli -p baton-examples --bin baton --example collab --example provider_diff
gpu_test=$(cargo test --release --locked -p baton-e2e --test gpu --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])')
[[ -x $gpu_test ]] || { echo "error: the GPU test binary was not built" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/diag"
cp target/release/baton target/release/examples/collab target/release/examples/provider_diff "$stage/bin/"
cp "$gpu_test" "$stage/bin/gpu-tests"
strip "$stage/bin/"*
# Where the binaries were built: the test binary finds the repository by this path.
echo "$ROOT" > "$stage/BUILD_ROOT"
git rev-parse HEAD > "$stage/COMMIT"
# The models the GPU tests and figures read (not the CPU tests' slow.onnx, the unbatched
# silero-vad or the text angle classifier: every MiB is device time).
tar -C "$(readlink -f models)" -cf "$stage/models.tar" --exclude='*.stamp' --exclude=slow.onnx \
    --exclude=silero_vad.onnx --exclude='ch_ppocr_mobile_v2.0_cls_infer.onnx' .
# The detector's copy with every intermediate tensor as an output (provider_diff).
det=models/real/ch_PP-OCRv4_det_infer.onnx
if [[ ! -f .cache/device/det_all.onnx || $det -nt .cache/device/det_all.onnx ]]; then
    mkdir -p .cache/device
    .venv/bin/python scripts/make_all_outputs.py "$det" .cache/device/det_all.onnx
fi
cp .cache/device/det_all.onnx .cache/device/det_all.nodes.json "$stage/diag/"
echo "==> compressing the binaries and models"
tar -C "$stage" -cf - bin diag models.tar BUILD_ROOT COMMIT | xz -6 -T2 > "$stage/app.tar.xz"

rm -rf .device && mkdir -p .device
split -b "$PART_BYTES" -d -a 2 "$stage/app.tar.xz" "$stage/app.part."
split -b "$PART_BYTES" -d -a 2 "$ORT_ARCHIVE" "$stage/ort.part."
# Fill carry folders in order, each up to PART_BYTES: parts are whole, so one per folder
# unless small ones fit together.
n=1
used=0
for part in "$stage"/ort.part.* "$stage"/app.part.*; do
    size=$(stat -c %s "$part")
    if ((used > 0 && used + size > PART_BYTES)); then
        n=$((n + 1))
        used=0
    fi
    mkdir -p ".device/c$n"
    mv "$part" ".device/c$n/"
    used=$((used + size))
done
(cd .device && sha256sum c*/*.part.* > MANIFEST)
cp .device/MANIFEST ".device/c$n/MANIFEST"
du -sh .device/c* | sed 's/^/    /'
echo "packed $n carry folders; on the device: one call per folder carrying .device/cK (K = 1..$n),"
echo "the last one running scripts/device-run.sh (docs/gpu.md gives the exact calls)"
