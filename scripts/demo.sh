#!/usr/bin/env bash
# The main job: set-up (idempotent, cached), then the collaborating-networks
# pipeline (configs/collab.toml) on real pretrained models: 16 user sessions,
# each streaming its speech through silero-vad chunk by chunk (state written
# back per stream) and sending its image with the final chunk to PP-OCRv4;
# a recommender joins both. Runs them as concurrent streams through the
# scheduler and prints per-session results and a latency summary.
# `--quick` (first argument): one stream per session (what CI runs).
# Other arguments go to the demo (e.g. --repeat 8, --policy dynamic).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repeat=4
if [[ ${1:-} == --quick ]]; then
    repeat=1
    shift
fi
scripts/setup.sh
# Every binary this script runs: the `baton` CLI and the collab example.
cargo build --release --locked -p baton-cli -p baton-examples --bin baton --example collab
for bin in target/release/baton target/release/examples/collab; do
    [[ -x $bin ]] || { echo "error: the build did not produce $bin" >&2; exit 1; }
done
echo "==> baton check configs/collab.toml"
target/release/baton check configs/collab.toml
echo "==> 16 sessions x $repeat concurrent streams"
target/release/examples/collab --repeat "$repeat" "$@"
