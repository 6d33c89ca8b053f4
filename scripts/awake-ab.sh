#!/usr/bin/env bash
# Cores kept awake against not (docs/scheduling.md, "Cores kept awake"), on the same arrivals:
# ROUNDS (default 3) rounds, each running PIPELINE at the open-loop rates PERCENTS of its
# closed-loop capacity at concurrency 32 once without and once with `--keep-cores-awake`; then,
# per round and rate, the kept-awake run's mean, p99 and busiest node's compute per batch ÷ the
# other's.
#
#   scripts/awake-ab.sh DIR PIPELINE PERCENTS [LOAD FLAGS...]
#   e.g. scripts/awake-ab.sh /tmp/awake configs/collab_early.toml 10,50 \
#            --stream-chunks 16 --stream-inputs chunk --stream-fraction 0.2
#
# DURATION (default 3s) is each point's length; BATON_BIN the binary (default this checkout's
# release build). Everything lands in DIR: the capacity run, each round's JSON, summary.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${1:?usage: scripts/awake-ab.sh DIR PIPELINE PERCENTS [LOAD FLAGS...]}
PIPELINE=${2:?give the pipeline file}
PERCENTS=${3:?give the load percentages, e.g. 10,50}
shift 3
BATON=${BATON_BIN:-target/release/baton}
DURATION=${DURATION:-3s}
ROUNDS=${ROUNDS:-3}
mkdir -p "$DIR"
log() { echo "$ $*" | tee -a "$DIR/commands.txt"; }
run() { log "$@"; "$@"; }

run "$BATON" bench "$PIPELINE" "$@" --concurrency 32 --duration "$DURATION" \
    --json "$DIR/capacity.json" >"$DIR/capacity.txt" 2>&1
rates=$(python3 - "$DIR/capacity.json" "$PERCENTS" <<'PY'
import json, sys
capacity = json.load(open(sys.argv[1]))["points"][0]["throughput_rps"]
print(",".join(f"{capacity * float(p) / 100:.0f}" for p in sys.argv[2].split(",")))
PY
)
for round in $(seq 1 "$ROUNDS"); do
    for kept in no yes; do
        flags=()
        [[ $kept == yes ]] && flags=(--keep-cores-awake)
        run "$BATON" bench "$PIPELINE" "$@" --rate "$rates" --duration "$DURATION" --seed "$round" \
            --latency-from-schedule "${flags[@]}" --json "$DIR/round-$round-$kept.json" \
            >"$DIR/round-$round-$kept.txt" 2>&1
    done
done
python3 - "$DIR" "$ROUNDS" <<'PY' | tee "$DIR/summary.txt"
import json, sys
d, rounds = sys.argv[1], int(sys.argv[2])
print("kept awake ÷ not, same arrivals")
print("round  rate/s  throughput  mean   p99  compute  (node)")
for k in range(1, rounds + 1):
    no, yes = (json.load(open(f"{d}/round-{k}-{x}.json"))["points"] for x in ("no", "yes"))
    for a, b in zip(no, yes):
        # The node with the most compute per request in the run without: where the halts weigh most.
        heavy = max(a["nodes"], key=lambda n: n["mean_compute_us"] * n["tasks"])
        other = next(n for n in b["nodes"] if n["name"] == heavy["name"])
        ratio = lambda f: f(b) / f(a) if f(a) else float("nan")
        print(f"{k:>5}  {a['load']:>6.0f}  {ratio(lambda p: p['throughput_rps']):>10.3f}"
              f"  {ratio(lambda p: p['latency']['mean_us']):>4.2f}  {ratio(lambda p: p['latency']['p99_us']):>4.2f}"
              f"  {other['mean_compute_us'] / heavy['mean_compute_us']:>7.2f}  ({heavy['name']})")
PY
