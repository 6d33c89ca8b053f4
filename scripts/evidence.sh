#!/usr/bin/env bash
# The scheduling workloads' evidence in virtual time (docs/simulate.md, "Workloads a, b and c"):
# the collaborative rule against greedy on the same arrivals, swept over the load with many seeds,
# in the model a fidelity campaign measured (scripts/fidelity.sh DIR: its profiles, its capacity
# runs and the terms it fitted, kept in DIR/model_P.flags).
#
#   scripts/evidence.sh DIR [WORKLOADS]     WORKLOADS: any of b,c (default b,c)
#
# b is `many_nodes`, c is `mixed_streams`, each under the load its fidelity runs had. For each
# workload, SEEDS (default 20) simulations of SWEEP (default 50,60,70,80,90,95: percents of the
# campaign's measured capacity) with both policies, DURATION (default 10s) a point, into
# DIR/evidence_P_SEED.json; then DIR/evidence_P.md, each class's p50 and p99 as collaborative ÷
# greedy with its 95% interval over the seeds, and DIR/evidence_P.svg, its plot
# (scripts/seed_ratios.py). BATON_BIN names the binary (default: this checkout's release build).
# CONFIG runs another file of the same pipeline in place of configs/P.toml (a design under trial,
# with one workload), its results named evidence_P_TAG* (TAG, default "trial").
set -euo pipefail
# The whole script is one block, read before it runs: an edit while it runs does not reach it.
{
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${1:?usage: scripts/evidence.sh DIR [b,c]}
WORKLOADS=${2:-b,c}
BATON=${BATON_BIN:-target/release/baton}
SEEDS=${SEEDS:-20}
SWEEP=${SWEEP:-50,60,70,80,90,95}
DURATION=${DURATION:-10s}
source scripts/lib/loads.sh

pipeline_of() { case $1 in b) echo many_nodes ;; c) echo mixed_streams ;; *) echo "unknown workload '$1' (b or c)" >&2; exit 2 ;; esac; }

for w in ${WORKLOADS//,/ }; do
    p=$(pipeline_of "$w")
    [[ -f $DIR/model_$p.flags ]] || { echo "error: $DIR/model_$p.flags is missing: run scripts/fidelity.sh $DIR $p first" >&2; exit 1; }
    capacity=$(python3 scripts/fidelity_terms.py rates "$DIR" "$p" 100)
    cfg=${CONFIG:-configs/$p.toml}
    name=evidence_$p${CONFIG:+_${TAG:-trial}}
    files=()
    for seed in $(seq 1 "$SEEDS"); do
        out=$DIR/${name}_$seed.json
        # shellcheck disable=SC2046 # the load options and the model's terms are flags
        "$BATON" simulate "$cfg" --profile "$DIR/$p.profile.json" $(load_flags "$p") \
            --sweep "$SWEEP" --capacity-rate "$capacity" --duration "$DURATION" --warmup 1s \
            --policy greedy,collaborative --seed "$seed" $(cat "$DIR/model_$p.flags") --json "$out" >/dev/null
        files+=("$out")
    done
    {
        echo "Workload $w (\`$cfg\`), capacity $capacity requests/s, sweep $SWEEP %, $SEEDS seeds of $DURATION:"
        echo
        python3 scripts/seed_ratios.py --svg "$DIR/$name.svg" --title "workload $w ($p): collaborative ÷ greedy, $SEEDS seeds" "${files[@]}"
    } | tee "$DIR/$name.md"
done
exit
}
