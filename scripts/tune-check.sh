#!/usr/bin/env bash
# A tuned pipeline file against the shipped one in real runs (docs/simulate.md, "`baton tune`"):
# both files alternating, on the same seeds, at each rate; then per rate and file the medians
# and how many runs met the SLO, and each file's real goodput (the highest rate met in most runs).
#
#   scripts/tune-check.sh DIR SHIPPED TUNED RATES SLO [LOAD FLAGS...]
#   e.g. scripts/tune-check.sh /tmp/tc configs/many_nodes.toml tuned.toml 600,1000,1400 \
#            priority_p99=15ms,others_p99=30ms --rows 4 --priority-fraction 0.1
#
# Everything lands in DIR (bench JSON and text, load.log, table.md). BATON_BIN names the binary
# (default: this checkout's release build); ROUNDS (default 5) runs per file; DURATION (default 3s)
# and WARMUP (default 1s) each run's measured interval and warm-up.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ $# -ge 5 ]] || { sed -n 2,12p "$0" >&2; exit 2; }
DIR=$1 SHIPPED=$2 TUNED=$3 RATES=$4 SLO=$5
shift 5
BATON=${BATON_BIN:-target/release/baton}
ROUNDS=${ROUNDS:-5}
mkdir -p "$DIR"
for k in $(seq 1 "$ROUNDS"); do
    for file in shipped tuned; do
        cfg=$SHIPPED
        [[ $file == tuned ]] && cfg=$TUNED
        echo "$(date -u +%T) $file $k $(cut -d' ' -f1-3 /proc/loadavg)" >>"$DIR/load.log"
        "$BATON" bench "$cfg" "$@" --rate "$RATES" --duration "${DURATION:-3s}" --warmup "${WARMUP:-1s}" \
            --seed "$k" --json "$DIR/${file}_$k.json" >"$DIR/${file}_$k.txt" 2>&1 ||
            echo "$file $k: exit $?" >>"$DIR/load.log"
    done
done
python3 scripts/tune_check.py "$DIR" "$SLO" | tee "$DIR/table.md"
