#!/usr/bin/env bash
# The scheduling workloads' evidence in virtual time (docs/simulate.md, "Workloads a, b and c"):
# the collaborative rule against greedy on the same arrivals, swept over the load with many seeds,
# in the model a fidelity campaign measured (scripts/fidelity.sh DIR: its profiles, its capacity
# runs and the terms it fitted, kept in DIR/model_P.flags).
#
#   scripts/evidence.sh DIR [WORKLOADS]     WORKLOADS: any of a,b,c (default b,c)
#
# b is `many_nodes`, c is `mixed_streams`, each under the load its fidelity runs had. For each
# workload, SEEDS (default 20) simulations of SWEEP (default 50,60,70,80,90,95: percents of the
# campaign's measured capacity) with both policies, DURATION (default 10s) a point, into
# DIR/evidence_P_SEED.json; then DIR/evidence_P.md, each class's p50 and p99 as collaborative ÷
# greedy with its 95% interval over the seeds, and DIR/evidence_P.svg, its plot
# (scripts/seed_ratios.py). BATON_BIN names the binary (default: this checkout's release build).
#
# a is `collab_early` under the collab example's sessions (`--sessions data/sessions.json`), 60 s
# a point (A_DURATION) after 5 s of warm-up. Its OCR's time depends on the image, so its model
# takes a profile of the pipeline on the sessions' images, DIR/collab_early.images.profile.json,
# and its 100% is the
# sessions/s the example's capacity mode measures, DIR/collab_early.sessions_capacity (the median
# of 3 runs of `examples/collab --image-first --answer-callback --capacity 32`, EXAMPLE_BIN);
# both are measured here when missing (about 4 minutes: run them on a quiet machine; write the
# capacity file first to sweep the sessions/s a real sweep took as its 100%). The rest of the
# model is the campaign's (DIR/model_collab_early.flags, its compute scales measured on the
# bench's zero images).
# CONFIG runs another file of the same pipeline in place of configs/P.toml (a design under trial,
# with one workload), its results named evidence_P_TAG* (TAG, default "trial"); SIM_FLAGS adds
# flags to every simulation (a term on trial), its results named the same way.
set -euo pipefail
# The whole script is one block, read before it runs: an edit while it runs does not reach it.
{
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${1:?usage: scripts/evidence.sh DIR [a,b,c]}
WORKLOADS=${2:-b,c}
BATON=${BATON_BIN:-target/release/baton}
SEEDS=${SEEDS:-20}
SWEEP=${SWEEP:-50,60,70,80,90,95}
DURATION=${DURATION:-10s}
source scripts/lib/loads.sh

pipeline_of() { case $1 in a) echo collab_early ;; b) echo many_nodes ;; c) echo mixed_streams ;; *) echo "unknown workload '$1' (a, b or c)" >&2; exit 2 ;; esac; }

# Workload a's measurements, made once into DIR: the profile on the sessions' images and the
# sessions/s at 100%.
sessions_measured() {
    local profile=$DIR/collab_early.images.profile.json capacity=$DIR/collab_early.sessions_capacity
    if [[ ! -f $profile ]]; then
        echo "measuring $profile (the OCR on the sessions' images)" >&2
        "$BATON" profile configs/collab_early.toml --out "$profile" --runs 96 --warmup 16 \
            --idle-gaps "${IDLE_GAP_US:-100,300,1000,3000,10000,30000}" \
            --input "text.image=$(find data/images -name 's*.png' | sort | paste -sd,)" >/dev/null
    fi
    if [[ ! -f $capacity ]]; then
        echo "measuring $capacity (3 runs of the example's capacity mode)" >&2
        for _ in 1 2 3; do
            "${EXAMPLE_BIN:-target/release/examples/collab}" --image-first --answer-callback --capacity 32 --policies greedy 2>/dev/null |
                sed -n 's/^capacity .* = \([0-9.]*\) sessions\/s$/\1/p'
        done | sort -g | sed -n 2p >"$capacity"
        [[ -s $capacity ]] || { echo "error: the example printed no capacity" >&2; rm -f "$capacity"; exit 1; }
    fi
}

for w in ${WORKLOADS//,/ }; do
    p=$(pipeline_of "$w")
    [[ -f $DIR/model_$p.flags ]] || { echo "error: $DIR/model_$p.flags is missing: run scripts/fidelity.sh $DIR $p first" >&2; exit 1; }
    if [[ $w == a ]]; then
        sessions_measured
        capacity=$(cat "$DIR/collab_early.sessions_capacity")
        profile=$DIR/collab_early.images.profile.json load=(--sessions data/sessions.json)
        duration=${A_DURATION:-60s} warmup=5s
        unit="sessions/s"
    else
        capacity=$(python3 scripts/fidelity_terms.py rates "$DIR" "$p" 100)
        # shellcheck disable=SC2207 # the load options are words
        profile=$DIR/$p.profile.json load=($(load_flags "$p")) duration=$DURATION warmup=1s
        unit="requests/s"
    fi
    cfg=${CONFIG:-configs/$p.toml}
    trial=${CONFIG:-${SIM_FLAGS:-}}
    name=evidence_$p${trial:+_${TAG:-trial}}
    files=()
    for seed in $(seq 1 "$SEEDS"); do
        out=$DIR/${name}_$seed.json
        # shellcheck disable=SC2046,SC2086 # the model's terms and SIM_FLAGS are flags
        "$BATON" simulate "$cfg" --profile "$profile" "${load[@]}" \
            --sweep "$SWEEP" --capacity-rate "$capacity" --duration "$duration" --warmup "$warmup" \
            --policy greedy,collaborative --seed "$seed" $(cat "$DIR/model_$p.flags") ${SIM_FLAGS:-} --json "$out" >/dev/null
        files+=("$out")
    done
    {
        echo "Workload $w (\`$cfg\`), capacity $capacity $unit, sweep $SWEEP %, $SEEDS seeds of $duration${SIM_FLAGS:+, with $SIM_FLAGS}:"
        echo
        python3 scripts/seed_ratios.py --svg "$DIR/$name.svg" --unit "$unit" --title "workload $w ($p): collaborative ÷ greedy, $SEEDS seeds" "${files[@]}"
    } | tee "$DIR/$name.md"
done
exit
}
