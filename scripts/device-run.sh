#!/usr/bin/env bash
# Runs on the GPU machine (docs/gpu.md), in the repository copy there, after the parts that
# scripts/device-pack.sh made here arrived (one call carrying .device/cK each; ignored paths
# stay on a warm machine between calls).
#
#   scripts/device-run.sh check            what arrived so far, the GPU, the CUDA libraries
#   scripts/device-run.sh run tests        the GPU tests, where CUDA and the CPU differ on the OCR
#                                          detector, ORT traces per batch size, node profiles on
#                                          both providers and the placement planned from them
#   scripts/device-run.sh run figures      scripts/gpu-figures.sh (the placed collab pipeline too)
#   scripts/device-run.sh run all          both
#   scripts/device-run.sh run pinned       the GPU tests, then the OCR models at mixed batch sizes
#                                          with pinned and with pageable host buffers, side by side
#
# Everything a run measured goes into one archive, $OUT/results-WHAT.tgz (a call brings back
# at most 8 files), and its summary to stdout. DURATION and FIGURES pass to gpu-figures.sh;
# DIAG=0 leaves out the detector's numerics and the ORT traces, COLLAB=0 the collab pipeline's
# profile and placements, PROFILES=0 the GPU models' profiles (each logged by an earlier run).
set -uo pipefail
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
    # The figures' GPU models are made here (the 4096-wide MLP is 200 MB, too large to carry),
    # in a session of their own so they go on after this call returns.
    if [[ ! -f models-gpu/.done ]] && ! pgrep -f make_gpu_models >/dev/null; then
        mkdir -p models-gpu && setsid bash -c 'python3 scripts/make_gpu_models.py models-gpu --mlp-only \
            > models-gpu/log 2>&1 && touch models-gpu/.done' < /dev/null > /dev/null 2>&1 &
        echo "making the GPU models in the background"
    fi
    exit 0
fi
[[ $mode == run ]] || { echo "usage: $0 check | run [tests|figures|all]" >&2; exit 2; }

manifest=$(ls .device/c*/MANIFEST 2>/dev/null | tail -1)
[[ -n $manifest ]] || { echo "error: no MANIFEST: the last carry folder has not arrived" >&2; exit 1; }
(cd .device && sha256sum -c --quiet "${manifest#.device/}") || { echo "error: a part is missing or damaged" >&2; exit 1; }
U=$PWD/.device/unpacked
commit=$(awk '{print $1}' "$manifest" | sha256sum | cut -c1-16)
if [[ "$(cat "$U/.parts" 2>/dev/null)" != "$commit" ]]; then
    rm -rf "$U" && mkdir -p "$U/ort"
    parts() { ls .device/c*/"$1".part.* | awk -F'part.' '{print $NF" "$0}' | sort -n | cut -d' ' -f2; }
    parts app | xargs cat | xz -d | tar -x -C "$U" || { echo "error: cannot unpack the app parts" >&2; exit 1; }
    parts ort | xargs cat | xz -d | tar -x -C "$U/ort" || { echo "error: cannot unpack the ORT parts" >&2; exit 1; }
    echo "$commit" > "$U/.parts"
fi
echo "binaries built at commit $(cat "$U/COMMIT"); working tree at $(git rev-parse HEAD 2>/dev/null || echo '?')"

# The test binary finds the repository by the path it was built at: make that path this copy.
build_root=$(cat "$U/BUILD_ROOT")
if [[ ! -e $build_root ]]; then
    mkdir -p "$(dirname "$build_root")" && ln -s "$PWD" "$build_root"
fi
if [[ -L models || ! -d models/real ]]; then
    rm -rf models && mkdir models && tar -xf "$U/models.tar" -C models
fi
# The GPU models made in the background by `check` (else made now, when needed).
gpu_models() {
    for _ in $(seq 120); do [[ -f models-gpu/.done ]] || ! pgrep -f make_gpu_models >/dev/null && break; sleep 1; done
    [[ -f models-gpu/.done ]] && cp -n models-gpu/*.onnx models/ 2>/dev/null
    if [[ ! -f models/mlp4096.onnx ]]; then
        step gpu-models 150 python3 scripts/make_gpu_models.py models
    elif [[ ! -f models/ocr_det_640.onnx || ! -f models/ocr_rec_320.onnx ]]; then
        # The fixed-shape OCR models only (seconds): keep the MLP made in the background.
        step gpu-models 60 python3 - <<'PY'
import importlib.util, os
spec = importlib.util.spec_from_file_location("m", "scripts/make_gpu_models.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
m.fixed("models/real/ch_PP-OCRv4_det_infer.onnx", "models/ocr_det_640.onnx", (3, 640, 640))
m.fixed("models/real/ch_PP-OCRv4_rec_infer.onnx", "models/ocr_rec_320.onnx", (3, 48, 320))
PY
    fi
}

export ORT_DYLIB_PATH=$U/ort/libonnxruntime.so.1.31.1
export BATON_CUDA_LIBS
BATON_CUDA_LIBS=$(cuda_lib_dirs)
export BATON_BIN=$U/bin/baton COLLAB_BIN=$U/bin/collab
R=/tmp/baton-results-$what
rm -rf "$R" && mkdir -p "$R"
{
    nvidia-smi || true
    nproc
    echo "BATON_CUDA_LIBS=$BATON_CUDA_LIBS"
    echo "-- libonnxruntime_providers_cuda.so, libraries not found on those folders:"
    LD_LIBRARY_PATH=$BATON_CUDA_LIBS ldd "$U/ort/libonnxruntime_providers_cuda.so" | grep 'not found' || echo none
} > "$R/machine.txt" 2>&1

status=0
step() { # NAME SECONDS COMMAND...: runs with a time limit, output to $R/NAME.log and stdout's tail
    local name=$1 limit=$2
    shift 2
    echo "==> $name ($(date +%T))"
    echo "$ $*" >> "$R/commands.txt"
    timeout "$limit" "$@" > "$R/$name.log" 2>&1 || { echo "   $name: exit $?"; status=1; }
    tail -n "${TAIL:-15}" "$R/$name.log"
}

if [[ $what == tests || $what == all ]]; then
    step gpu-tests 240 "$U/bin/gpu-tests" --test-threads 1 --nocapture
    if [[ ${DIAG:-1} != 0 ]]; then
        # Where CUDA and the CPU differ on the OCR detector: real images, then the GPU test's old noise input.
        V=default,tf32_off,tf32_off+no_graph_opt,tf32_off+ref_no_opt,on_cpu+cuda_no_opt
        D=(--model models/real/ch_PP-OCRv4_det_infer.onnx --all-outputs "$U/diag/det_all.onnx" --require-gpu)
        TAIL=25 step diff-image 150 "$U/bin/provider_diff" "${D[@]}" --input image --batch 2 --variants "$V" \
            --save-mib 1 --out "$R/diff-image"
        TAIL=25 step diff-noise 150 "$U/bin/provider_diff" "${D[@]}" --input test-random --batch 2 --size 96x160 \
            --variants default,tf32_off,on_cpu+cuda_no_opt --save-mib 1 --out "$R/diff-noise"
        # ONNX Runtime's trace of one detector batch per size at 640x640 (figure 2's shape).
        step traces 150 "$U/bin/provider_diff" --model models/real/ch_PP-OCRv4_det_infer.onnx --require-gpu \
            --input image --size 640x640 --batch 1 --variants default --trace-sizes 1,2,4,8,16 --save-mib 0 \
            --out "$R/traces"
    fi
    B=$U/bin/baton
    if [[ ${COLLAB:-1} != 0 ]]; then
        # Each node's cost per batch size on both providers, and the placements planned from them
        # (on 12 of the cores: the rest for the load generator and the GPU nodes' host threads).
        TAIL=30 step profile-collab 240 "$B" profile configs/collab.toml --providers cpu,cuda --dim 640 --runs 6 \
            --warmup 1 --out "$R/collab-h100.profile.json"
        plan=("$B" plan --method ilp --pipeline configs/collab.toml --profile "$R/collab-h100.profile.json" --objective period --cores 12)
        TAIL=30 step plan-gpu 60 "${plan[@]}" --out .device/placed.toml
        TAIL=30 step plan-cpu 60 "${plan[@]}" --providers cpu --out .device/placed-cpu.toml
        cp .device/placed*.toml "$R/" 2>/dev/null
        step check-placed 60 "$B" check .device/placed.toml
    fi
    if [[ ${PROFILES:-1} != 0 ]]; then
        gpu_models
        for model in mlp4096 ocr-det ocr-rec; do
            step "profile-$model" 90 "$B" profile "configs/gpu/$model.toml" --batches 1,2,4,8,16,32,64,128 --runs 10 \
                --warmup 2 --out "$R/$model-h100.profile.json"
        done
    fi
fi
if [[ $what == pinned ]]; then
    step gpu-tests 240 "$U/bin/gpu-tests" --test-threads 1 --nocapture
    gpu_models
    for model in ocr-det ocr-rec; do
        for pinned in 1 0; do
            TAIL=30 BATON_PINNED_MEMORY=$pinned step "$model-pinned-$pinned" 120 "$U/bin/baton" bench \
                "configs/gpu/$model.toml" --concurrency 1,4,16,64 --policy greedy --duration 2s --client-threads 8 \
                --json "$R/$model-pinned-$pinned.json"
        done
    done
    # The collab pipeline as placed in an earlier run (carried in devrun/): capacity both ways.
    if [[ -f devrun/placed.toml ]]; then
        for pinned in 1 0; do
            BATON_PINNED_MEMORY=$pinned step "collab-pinned-$pinned" 90 "$U/bin/collab" --config devrun/placed.toml \
                --capacity 64 --policies collaborative
        done
    fi
fi
pack() { find "$R" -name '*.npy' -size +256k -delete; tar -C "$R" -czf "$OUT/results-$what.tgz" .; }
if [[ $what == figures || $what == all ]]; then
    gpu_models
    # Placements from an earlier call on this machine, else carried in devrun/ (untracked) by the session.
    for f in placed.toml placed-cpu.toml; do
        [[ -f .device/$f || ! -f devrun/$f ]] || cp "devrun/$f" ".device/$f"
    done
    cp .device/placed*.toml "$R/" 2>/dev/null
    # One figure at a time, the archive rewritten after each: a call cut short keeps what ran.
    for figure in $(echo "${FIGURES:-1,2,3,4}" | tr , ' '); do
        TAIL=40 FIGURES=$figure step "figure-$figure" 400 scripts/gpu-figures.sh "$R/figures"
        pack
    done
fi
pack
ls -la "$OUT"
exit $status
