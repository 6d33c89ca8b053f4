#!/usr/bin/env bash
# Runs examples/provider_diff on the GPU machine (docs/gpu.md, "Finding where CUDA and the CPU
# differ"): the PP-OCRv4 detector, CUDA vs the CPU provider, under every variant that tells the
# suspected causes apart, on the GPU test's own input and on real text images, then the
# profiles at batch 1-8. Results into $OUT (diff-test-random/, diff-image/, trace-640/).
#
# Needs, carried: .device/diag (scripts/provider-diff-pack.sh) and ONNX Runtime's GPU build:
# ORT_DYLIB_PATH if set, else .device/unpacked/ort (unpacked here from the parts of
# scripts/device-pack.sh when scripts/device-run.sh has not done it yet).
# BATON_CUDA_LIBS, if unset, is the Python environment's nvidia/*/lib folders (as device-run.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/baton-out}
mkdir -p "$OUT"
D=.device/diag
U=$PWD/.device/unpacked
[[ -x $D/provider_diff ]] || { echo "error: $D/provider_diff missing: carry .device/diag (scripts/provider-diff-pack.sh)" >&2; exit 2; }

if [[ -z ${ORT_DYLIB_PATH:-} && ! -f $U/ort/libonnxruntime.so.1.31.1 ]]; then
    manifest=$(ls .device/c*/MANIFEST 2>/dev/null | tail -1)
    [[ -n $manifest ]] || { echo "error: no GPU build: neither ORT_DYLIB_PATH nor the parts of scripts/device-pack.sh" >&2; exit 2; }
    (cd .device && sha256sum -c --quiet "${manifest#.device/}") || { echo "error: a part is missing or damaged" >&2; exit 2; }
    rm -rf "$U" && mkdir -p "$U"
    ls .device/c*/part.* | awk -F'part.' '{print $NF" "$0}' | sort -n | cut -d' ' -f2 | xargs cat | xz -d | tar -x -C "$U"
fi
export ORT_DYLIB_PATH=${ORT_DYLIB_PATH:-$U/ort/libonnxruntime.so.1.31.1}
if [[ -z ${BATON_CUDA_LIBS:-} ]]; then
    BATON_CUDA_LIBS=$(python3 -c 'import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
print(":".join(sorted({d for r in roots for d in glob.glob(os.path.join(r, "*", "lib"))})))')
fi
export BATON_CUDA_LIBS
echo "ORT_DYLIB_PATH=$ORT_DYLIB_PATH"
echo "BATON_CUDA_LIBS=$BATON_CUDA_LIBS"

# Each variant isolates one suspect; see docs/gpu.md for the tokens.
V=default,tf32_off,tf32_off+conv_heuristic,tf32_off+conv_default,tf32_off+no_graph_opt
V=$V,tf32_off+cuda_no_opt,tf32_off+ref_no_opt,tf32_off+opt_basic,tf32_off+opt_extended,tf32_off+nhwc
V=$V,tf32_off+fuse_conv_bias,tf32_off+max_workspace_off,tf32_off+conv_default+no_graph_opt,on_cpu+cuda_no_opt
MODEL=(--model "$D/ch_PP-OCRv4_det_infer.onnx" --all-outputs "$D/det_all.onnx" --require-gpu)

status=0
run() { echo "+ $*" | tee -a "$OUT/provider-diff-commands.txt"; "$@" || status=1; }
# 1. The GPU test's exact input (tests/tests/gpu.rs: uniform noise, 2x3x96x160).
run timeout 240 "$D/provider_diff" "${MODEL[@]}" --input test-random --batch 2 --size 96x160 \
    --variants "$V" --save-mib 24 --out "$OUT/diff-test-random"
# 2. Real text images (data/images, 160x672, as the OCR pipeline normalizes them).
run timeout 240 "$D/provider_diff" "${MODEL[@]}" --input image --batch 2 --variants "$V" --save-mib 24 --out "$OUT/diff-image"
# 3. Profiles of the default CUDA session at 640x640, batch 1, 2, 4, 8 (figure 2's shape).
run timeout 180 "$D/provider_diff" --model "$D/ch_PP-OCRv4_det_infer.onnx" --require-gpu --input image \
    --size 640x640 --batch 1 --variants default --trace-sizes 1,2,4,8 --save-mib 4 --out "$OUT/trace-640"
du -sh "$OUT"/diff-* "$OUT"/trace-640 2>/dev/null
exit $status
