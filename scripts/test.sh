#!/usr/bin/env bash
# The test command: set-up (idempotent, cached), then every test of the workspace.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
cargo test --workspace --locked "$@"
