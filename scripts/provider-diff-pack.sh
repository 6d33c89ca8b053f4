#!/usr/bin/env bash
# Packs what examples/provider_diff needs on the GPU machine (docs/gpu.md, "Finding where CUDA and
# the CPU differ") into .device/diag/ (git-ignored), to carry in one call beside the parts that
# scripts/device-pack.sh made (which bring ONNX Runtime's GPU build):
#
#   .device/diag/provider_diff                    the binary, stripped (the dev profile: optimized,
#                                                 opt-level 1-2; RELEASE=1 for the release build)
#   .device/diag/ch_PP-OCRv4_det_infer.onnx       the detector
#   .device/diag/det_all.onnx, det_all.nodes.json its all-outputs copy (scripts/make_all_outputs.py)
#
# Usage: scripts/provider-diff-pack.sh   (needs scripts/setup.sh first: the models and .venv)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
D=.device/diag
grep -qxF /.device .gitignore || echo /.device >> .gitignore
if [[ ${RELEASE:-0} == 1 ]]; then
    cargo build --release --locked -p baton-examples --example provider_diff && bin=target/release/examples/provider_diff
else
    cargo build --locked -p baton-examples --example provider_diff && bin=target/debug/examples/provider_diff
fi
rm -rf "$D" && mkdir -p "$D"
cp "$bin" "$D/" && strip "$D/provider_diff"
cp models/real/ch_PP-OCRv4_det_infer.onnx "$D/"
.venv/bin/python scripts/make_all_outputs.py "$D/ch_PP-OCRv4_det_infer.onnx" "$D/det_all.onnx"
ls -la "$D"
du -sh "$D"
