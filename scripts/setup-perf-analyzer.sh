#!/usr/bin/env bash
# Triton's load generator, perf_analyzer, for the serving tests (server/tests/perf_analyzer.rs)
# and BENCHMARKS.md: the binary from the pinned tritonclient 2.41.0 manylinux wheel, with the two
# shared libraries it needs and the system lacks: libb64.so.0d (Debian's libb64-0d, unpacked
# with dpkg-deb, not installed) and libcudart.so.12 (PyPI's nvidia-cuda-runtime-cu12 wheel).
# Every download is sha256-pinned and cached in .cache/perf_analyzer/; the result is
# .cache/perf_analyzer/bin/perf_analyzer and .cache/perf_analyzer/lib/ (run it with
# LD_LIBRARY_PATH=.cache/perf_analyzer/lib). Idempotent; called by setup.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DIR=.cache/perf_analyzer
DL=$DIR/dl
PY=.venv/bin/python
[[ -x $PY ]] || PY=python3

TRITON_WHEEL=tritonclient-2.41.0-py3-none-manylinux1_x86_64.whl
TRITON_SHA256=cf4ed5df836fa99937678a9fd852f86ba05c7b83656dd0a540e20afdb9ab4629
CUDART_WHEEL=nvidia_cuda_runtime_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl
CUDART_SHA256=64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5
B64_DEB=libb64-0d_1.2-5+b1_amd64.deb
B64_SHA256=b0e1d6fde8bdccc18c3884144aede064dc82464dd4777275fa80e74c05583e82

if [[ -x $DIR/bin/perf_analyzer && -f $DIR/lib/libb64.so.0d && -f $DIR/lib/libcudart.so.12 ]]; then
    exit 0
fi
echo "==> fetching perf_analyzer (tritonclient 2.41.0) and its libraries"
mkdir -p "$DL" "$DIR/bin" "$DIR/lib"

# check FILE SHA256: the file's sha256 is the pin, or it is removed and set-up fails.
check() {
    local got
    got=$(sha256sum "$1" | cut -d' ' -f1)
    if [[ $got != "$2" ]]; then
        echo "error: sha256 mismatch for $1" >&2
        echo "  expected $2" >&2
        echo "  got      $got" >&2
        rm -f "$1"
        echo "  removed it; re-run to download again (or fix the pin in scripts/setup-perf-analyzer.sh)" >&2
        exit 1
    fi
}

pip_get() { # WHEEL SPEC PLATFORM
    [[ -f $DL/$1 ]] || "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
        --platform "$3" --python-version 3.11 "$2" -d "$DL"
}
pip_get "$TRITON_WHEEL" tritonclient==2.41.0 manylinux1_x86_64
pip_get "$CUDART_WHEEL" nvidia-cuda-runtime-cu12==12.4.127 manylinux2014_x86_64
if [[ ! -f $DL/$B64_DEB ]]; then
    (cd "$DL" && apt-get download libb64-0d=1.2-5+b1)
fi
check "$DL/$TRITON_WHEEL" "$TRITON_SHA256"
check "$DL/$CUDART_WHEEL" "$CUDART_SHA256"
check "$DL/$B64_DEB" "$B64_SHA256"

# unzip_member WHEEL MEMBER DEST
unzip_member() {
    "$PY" - "$@" <<'PYEOF'
import os, shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest + ".tmp", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(dest + ".tmp", 0o755)
os.replace(dest + ".tmp", dest)
PYEOF
}
unzip_member "$DL/$CUDART_WHEEL" nvidia/cuda_runtime/lib/libcudart.so.12 "$DIR/lib/libcudart.so.12"
tmp=$(mktemp -d)
dpkg-deb -x "$DL/$B64_DEB" "$tmp"
cp "$tmp/usr/lib/x86_64-linux-gnu/libb64.so.0d" "$DIR/lib/libb64.so.0d"
rm -rf "$tmp"
unzip_member "$DL/$TRITON_WHEEL" tritonclient-2.41.0.data/data/bin/perf_analyzer "$DIR/bin/perf_analyzer"
LD_LIBRARY_PATH=$DIR/lib "$DIR/bin/perf_analyzer" --version >/dev/null 2>&1 ||
    LD_LIBRARY_PATH=$DIR/lib "$DIR/bin/perf_analyzer" --help >/dev/null 2>&1 || {
    echo "error: $DIR/bin/perf_analyzer does not run:" >&2
    LD_LIBRARY_PATH=$DIR/lib ldd "$DIR/bin/perf_analyzer" | grep 'not found' >&2 || true
    exit 1
}
