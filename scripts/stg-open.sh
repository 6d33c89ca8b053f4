#!/usr/bin/env bash
# The open STG instances (CSV rows whose optimum is not proven) at m = 2, 4, 8: the MILP with a
# time limit per instance, every schedule replayed by the simulator (planners/examples/stg_open.rs).
# Not part of CI: with the default 60 s per instance it ran about 13 min on the 2 shared cores here
# (docs/planners.md, "Open STG instances").
#
#   scripts/stg-open.sh [STG_DIR] [OUT_DIR]     defaults: ../shared/data/stg, docs/planners
#
# PROCS (default 2,4,8), LIMIT (seconds per instance, default 60) and INSTANCES (names, default
# every open one) override the run.
# Writes OUT_DIR/stg_open.txt (the markdown table) and OUT_DIR/stg_open.csv.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
STG=${1:-../shared/data/stg}
OUT=${2:-docs/planners}
mkdir -p "$OUT"
cargo build -p baton-planners --example stg_open
target/debug/examples/stg_open "$STG" --procs "${PROCS:-2,4,8}" --time-limit "${LIMIT:-60}" \
    ${INSTANCES:+--instances "$INSTANCES"} --csv "$OUT/stg_open.csv" | tee "$OUT/stg_open.txt"
