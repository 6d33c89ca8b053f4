#!/usr/bin/env bash
# Serving tests' client venv (.venv-client): Triton's Python clients (tritonclient[http,grpc]),
# numpy and onnxruntime, pinned in scripts/requirements-client.txt. Used by server/tests/tritonclient.rs.
# Idempotent and cached: reinstalls only when requirements-client.txt changes. Called by setup.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=.venv-client
PY=$VENV/bin/python
req_sha=$(sha256sum scripts/requirements-client.txt | cut -d' ' -f1)
if [[ ! -x $PY || "$(cat $VENV/.requirements.sha256 2>/dev/null)" != "$req_sha" ]]; then
    echo "==> creating/updating $VENV (tritonclient, numpy, onnxruntime)"
    [[ -x $PY ]] || python3 -m venv "$VENV"
    "$PY" -m pip install -q --disable-pip-version-check -r scripts/requirements-client.txt
    "$PY" -c "import tritonclient.http, tritonclient.grpc, numpy, onnxruntime"
    echo "$req_sha" > $VENV/.requirements.sha256
fi

touch .gitignore
[[ ! -s .gitignore || -z $(tail -c1 .gitignore) ]] || echo >> .gitignore
grep -qxF "/$VENV" .gitignore || echo "/$VENV" >> .gitignore
