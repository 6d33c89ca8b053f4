#!/usr/bin/env bash
# Validates every manifest in deploy/k8s/ offline (deploy/k8s/validate.py):
# Kubernetes' kinds against the schemas of Kubernetes $K8S_VERSION shipped in
# kubernetes-validate (strict: unknown fields are errors), KServe's kinds
# against the models of KServe's Python SDK (generated from its CRDs).
# Both are pinned and sha256-checked, fetched once into .cache/ (a virtual
# environment, and the SDK's kserve/models from its wheel); after that it runs
# without the network. Exit 0 when every document is valid.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
K8S_VERSION=${K8S_VERSION:-1.32.0}
VENV=$PWD/.cache/kubernetes-validate/1.32.0
KSERVE=$PWD/.cache/kserve-sdk/0.15.2
KSERVE_WHEEL_SHA256=51d7576debfe0fbb2a9dfa08c9b9ee2350a03669950c5edbe107669b70612c93

if [[ ! -f $VENV/.complete ]]; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --no-deps --only-binary=:all: --require-hashes \
        -r deploy/k8s/requirements.txt >&2
    touch "$VENV/.complete"
fi
if [[ ! -f $KSERVE/.complete ]]; then
    rm -rf "$KSERVE"
    mkdir -p "$KSERVE/wheel"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$KSERVE/wheel" kserve==0.15.2 >&2
    echo "$KSERVE_WHEEL_SHA256  $KSERVE/wheel/kserve-0.15.2-py3-none-any.whl" | sha256sum --check --quiet >&2
    (cd "$KSERVE" && python3 -m zipfile -e wheel/kserve-0.15.2-py3-none-any.whl unpacked >&2)
    mv "$KSERVE/unpacked/kserve/models" "$KSERVE/models"
    rm -rf "$KSERVE/unpacked" "$KSERVE/wheel"
    touch "$KSERVE/.complete"
fi
"$VENV/bin/python" deploy/k8s/validate.py "$K8S_VERSION" "$KSERVE/models" deploy/k8s/*.yaml
