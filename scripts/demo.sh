#!/usr/bin/env bash
# The main job: set-up (idempotent, cached), then a shipped pipeline on real
# ONNX models: validate it, print a few answers, then run it under load and
# print the latency summary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
cargo build --release --locked -p baton-cli
baton=target/release/baton
pipeline=${1:-configs/diamond.toml}
echo "==> baton check $pipeline"
"$baton" check "$pipeline"
echo "==> two requests, outputs as JSON"
"$baton" run "$pipeline" --requests 2 --print 2
echo "==> 20000 requests from 8 concurrent submitters"
"$baton" run "$pipeline" --requests 20000 --concurrency 8
