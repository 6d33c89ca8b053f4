#!/usr/bin/env bash
# The main job: set-up (idempotent, cached), then the collaborating-networks
# pipeline on real pretrained models serving user sessions as users send
# them: each session sends its image when it starts (PP-OCRv4), then streams
# its speech in real time, a 512-sample chunk every 32 ms (silero-vad, state
# written back per stream); a recommender joins both. Sessions arrive at
# RATE per second (Poisson, the same arrivals for each policy) for DURATION
# seconds, first under the collaborative rule, then under greedy; each
# answer is taken when it is ready (in Runtime::submit_then's callback).
# Prints every session's category and final-chunk latency under both
# policies with its recognised text, then the side-by-side table and
# collaborative/greedy ratios, and draws the latency distributions to
# target/demo/latency.svg. Exits non-zero if a session fails or gets a
# wrong category.
#
# usage: scripts/demo.sh [--quick | --unpaced] [collab options...]
#   (none)      6 sessions/s for 25 s per policy (about a minute)
#   --quick     4 sessions/s for 5 s per policy (what CI runs)
#   --unpaced   the unpaced run instead: 16 sessions x 4 concurrent streams at
#               once under one policy (`--repeat N`, `--policy NAME`)
#   Other options go to the collab example and take precedence, e.g.
#   `scripts/demo.sh --rate 8 --duration 30`; `target/release/examples/collab --help`
#   lists them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ ${1:-} == --help || ${1:-} == -h ]]; then
    sed -n '2,/^set -e/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
fi
rate=6
duration=25
mode=paced
case ${1:-} in
    --quick) rate=4 duration=5; shift ;;
    --unpaced) mode=unpaced; shift ;;
esac
scripts/setup.sh
# Every binary this script runs: the `baton` CLI and the collab example.
cargo build --release --locked -p baton-cli -p baton-examples --bin baton --example collab
for bin in target/release/baton target/release/examples/collab; do
    [[ -x $bin ]] || { echo "error: the build did not produce $bin" >&2; exit 1; }
done
if [[ $mode == unpaced ]]; then
    echo "==> baton check configs/collab.toml"
    target/release/baton check configs/collab.toml
    echo "==> unpaced: 16 sessions, each as several concurrent streams (4 unless --repeat), as fast as they are answered"
    exec target/release/examples/collab "$@" --repeat 4
fi
echo "==> baton check configs/collab_early.toml"
target/release/baton check configs/collab_early.toml
echo "==> paced sessions, collaborative then greedy (node stats on stderr)"
# The options given first win (the example takes the first value of an option).
target/release/examples/collab "$@" --image-first --answer-callback --rate "$rate" --duration "$duration" \
    --policies collaborative,greedy --print-sessions --latency-plot target/demo/latency.svg
