#!/usr/bin/env bash
# Baton dev setup: Python venv (.venv), ONNX Runtime shared library (.cache/onnxruntime),
# the ONNX test models (models/), the real pretrained models (models/real/) and their
# shape-annotated copies for the partitioner (.cache/shapes/), and the
# serving tests' client venv (.venv-client, by scripts/setup-client.sh) and Triton's perf_analyzer
# (.cache/perf_analyzer, by scripts/setup-perf-analyzer.sh).
# `--gpu` also fetches ONNX Runtime's GPU build and the CUDA 13 / cuDNN 9 libraries
# (.cache/onnxruntime-gpu, by scripts/setup-gpu.sh; see docs/gpu.md).
# Idempotent and cached: safe to run any number of times.
set -euo pipefail
gpu=0
for arg in "$@"; do
    case $arg in
        --gpu) gpu=1 ;;
        *) echo "usage: scripts/setup.sh [--gpu]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

ORT_VERSION=1.31.1
ORT_WHEEL=onnxruntime-${ORT_VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl
ORT_WHEEL_SHA256=5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f
ORT_DIR=.cache/onnxruntime/$ORT_VERSION
ORT_LIB=$ORT_DIR/libonnxruntime.so.$ORT_VERSION
PY=.venv/bin/python
did=0

sha() { sha256sum "$1" | cut -d' ' -f1; }

# a. Python venv with pinned packages; reinstall only when requirements.txt changes.
req_sha=$(sha scripts/requirements.txt)
if [[ ! -x $PY || "$(cat .venv/.requirements.sha256 2>/dev/null)" != "$req_sha" ]]; then
    echo "==> creating/updating .venv"
    [[ -x $PY ]] || python3 -m venv .venv
    "$PY" -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
    echo "$req_sha" > .venv/.requirements.sha256
    did=1
fi

# b. ONNX Runtime shared library, extracted from the pinned, hash-checked PyPI wheel.
if [[ ! -f $ORT_LIB ]]; then
    echo "==> fetching ONNX Runtime $ORT_VERSION"
    mkdir -p .cache/wheels "$ORT_DIR"
    if [[ ! -f .cache/wheels/$ORT_WHEEL ]]; then
        "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
            --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
            "onnxruntime==$ORT_VERSION" -d .cache/wheels
    fi
    got=$(sha ".cache/wheels/$ORT_WHEEL")
    if [[ $got != "$ORT_WHEEL_SHA256" ]]; then
        echo "error: sha256 mismatch for .cache/wheels/$ORT_WHEEL" >&2
        echo "  expected $ORT_WHEEL_SHA256" >&2
        echo "  got      $got" >&2
        rm -f ".cache/wheels/$ORT_WHEEL"
        echo "  removed it; re-run to download again (or fix the pin in scripts/setup.sh)" >&2
        exit 1
    fi
    "$PY" - "$ORT_WHEEL" "$ORT_LIB" <<'PYEOF'
import shutil, sys, zipfile
wheel, dest = sys.argv[1:]
member = "onnxruntime/capi/" + dest.rsplit("/", 1)[1]
with zipfile.ZipFile(".cache/wheels/" + wheel) as z, z.open(member) as src, open(dest + ".tmp", "wb") as dst:
    shutil.copyfileobj(src, dst)
PYEOF
    mv "$ORT_LIB.tmp" "$ORT_LIB"
    # SONAME is libonnxruntime.so.1; provide the usual aliases for linkers/loaders.
    ln -sf "libonnxruntime.so.$ORT_VERSION" "$ORT_DIR/libonnxruntime.so.1"
    ln -sf "libonnxruntime.so.$ORT_VERSION" "$ORT_DIR/libonnxruntime.so"
    did=1
fi

# c. Test models; regenerate only when missing or when make_models.py changed.
gen_sha=$(sha scripts/make_models.py)
if [[ "$(cat models/.stamp 2>/dev/null)" != "$gen_sha" ]]; then
    echo "==> generating models/"
    mkdir -p models && rm -f models/*.onnx
    "$PY" scripts/make_models.py models/
    echo "$gen_sha" > models/.stamp
    did=1
fi

# c2. Real pretrained models (silero-vad, PP-OCRv4 via rapidocr) from pinned, sha256-checked PyPI
#     wheels (cached in .cache/wheels), plus the batch-first VAD wrapper, into models/real/;
#     redone only when an output is missing or when fetch_real_models.py changed.
real_sha=$(sha scripts/fetch_real_models.py)
real_ok=1
for f in silero_vad.onnx vad_batched.onnx ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx \
         rapidocr_config.yaml manifest.json; do
    [[ -f models/real/$f ]] || real_ok=0
done
if [[ $real_ok == 0 || "$(cat models/real/.stamp 2>/dev/null)" != "$real_sha" ]]; then
    echo "==> fetching real models into models/real/"
    "$PY" scripts/fetch_real_models.py models/real
    echo "$real_sha" > models/real/.stamp
    did=1
fi

# c3. Shape-annotated copies of the real models for the graph partitioner (.cache/shapes);
#     redone only when a copy is missing or annotate_shapes.py changed.
shapes_sha=$(sha scripts/annotate_shapes.py)
shapes_ok=1
for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx silero_vad.onnx; do
    [[ -f .cache/shapes/$f ]] || shapes_ok=0
done
if [[ $shapes_ok == 0 || "$(cat .cache/shapes/.stamp 2>/dev/null)" != "$shapes_sha" ]]; then
    echo "==> annotating model shapes into .cache/shapes/"
    "$PY" scripts/annotate_shapes.py models/real .cache/shapes
    echo "$shapes_sha" > .cache/shapes/.stamp
    did=1
fi

# d. .gitignore entries for everything this script produces.
touch .gitignore
[[ ! -s .gitignore || -z $(tail -c1 .gitignore) ]] || echo >> .gitignore  # ensure trailing newline
for pat in /target /.venv /.cache /models /.device; do
    grep -qxF "$pat" .gitignore || { echo "$pat" >> .gitignore; did=1; }
done

# e. The serving tests' client venv (.venv-client: tritonclient, numpy, onnxruntime); its own script.
scripts/setup-client.sh
scripts/setup-perf-analyzer.sh
[[ $gpu == 0 ]] || scripts/setup-gpu.sh

[[ $did == 1 ]] || echo "everything is up to date"
echo "ONNX Runtime library: $ROOT/$ORT_LIB"
