#!/usr/bin/env bash
# The main job: set-up (idempotent, cached), then the collaborating-networks
# pipeline (configs/collab.toml) on real pretrained models: 16 user sessions,
# each streaming its speech through silero-vad chunk by chunk (state written
# back per stream) and sending its image with the final chunk to PP-OCRv4;
# a recommender joins both. Runs them as concurrent streams through the
# scheduler and prints per-session results and a latency summary.
# Extra arguments go to the demo (e.g. --repeat 8, --policy dynamic).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
cargo build --release --locked -p baton-cli -p baton-examples --example collab
echo "==> baton check configs/collab.toml"
target/release/baton check configs/collab.toml
echo "==> 16 sessions x 4 concurrent streams"
target/release/examples/collab --repeat 4 "$@"
