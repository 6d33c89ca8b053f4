#!/usr/bin/env bash
# `baton simulate`'s fidelity against real runs (docs/simulate.md, "Fidelity"), in one command:
# for each pipeline, a profile, its closed-loop capacity, real open-loop runs at 30, 50 and 70%
# of it (ROUNDS seeds each), the model's measured terms from those runs, and the simulation of
# the same loads; then the table of simulated ÷ real against the bars. The wake-up and hand-off
# terms are what a simulation at concurrency 1 leaves out of the real concurrency-1 runs.
#
#   scripts/fidelity.sh DIR [PIPELINES]     PIPELINES: any of mlp,diamond,many_nodes,mixed_streams,collab_early
#
# Everything lands in DIR (profiles, bench JSON, simulations, terms.json, table.md, load.log, and
# model_P.flags: the flags of P's model as fitted, which scripts/evidence.sh runs under other loads), and
# queues.md: per node and load, where its tasks waited, real against the model (the wait's p99, its
# part before the node was picked, the wake-up's and the hand-on's p99). With ROUNDS=10 or more, also
# ceiling.md: how often two disjoint sets of five real runs meet the bars against each other, beside
# how often the model meets them against one set (scripts/fidelity_ceiling.py).
# BATON_BIN names the binary (default: this checkout's release build). ROUNDS (default 5) real
# runs per pipeline; LOADS (default 30,50,70) percentages of the capacity. SIMULATE_ONLY=1
# keeps DIR's measurements and simulates them again (after a change to the model); SIM_FLAGS adds
# flags to the load simulations (a term under trial, e.g. SIM_FLAGS="--slice-us 1000"); WAKE_DELAYS=1
# draws the workers' wake-ups from the runtime's record in the capacity runs instead of --wake-us
# (WAKE_DELAYS=light: from the light open load's record, whose workers park between requests);
# BATCH_TIMES=1 stretches the batches as that record says instead of the compute scales;
# TICK_DELAYS=1 draws the scheduler ticks' lateness from that record (every simulation).
# COMPUTE_OFFSET=0 keeps one compute scale per node (the concurrency-1 ratio, no --compute-offset);
# ONE_SCALE_AT=capacity gives the nodes without a compute line the capacity's ratio, not concurrency 1's
# (ONE_SCALE_AT=both: the mean of the two);
# GROWING_STRETCH=1 lets a compute line have a negative offset (its stretch growing with the rows);
# PROFILE_CENTRE=median holds the compute against the profile's medians, not its timed runs' means
# (the simulator's draws' mean; scripts/fidelity_terms.py, profile_centre);
# PROFILE_AT_MEAN=1 holds a point's compute against the profile at its mean batch, not over the
# batch sizes it ran (scripts/fidelity_terms.py, profile_ran);
# COMPUTE_CLOCK=wall measures the compute terms on the batches' wall time, not their sampled CPU time;
# CPU_FIT=capacity fits the CPU terms through the capacity runs alone (not the open-loop runs too).
# CALIBRATE=N (default 0): N rounds of the compute terms through the model at the capacity runs'
# concurrencies (scripts/fidelity_terms.py's docs); 0 keeps the measured ones. LATENCY_FROM_SCHEDULE=1 counts
# the real open-loop runs' latencies from each request's scheduled time (`--latency-from-schedule`),
# as the simulator's arrivals are never late. GENERATOR_POLICY (normal or realtime; default normal)
# is the open loop's generator thread's policy (`--generator-policy`), and GENERATOR_NICE (default 0)
# its nice (`--generator-nice`), in the real runs and, with SEND_CPU=1, in the model's generator
# thread. CLIENT_SEND=1 (with SEND_CPU=1) gives the closed-loop
# simulations the clients' sends in turn (`--client-send-us`). Each pipeline's measurements start
# with the machine's core stalls (`baton stalls`, 5 s, into DIR/P.stalls.json), and every simulation
# of P takes cores away as the campaign's records pooled say (`--core-stalls`; STALLS=0: none;
# STALLS_POOLED=0: P's own record, or where it stalled more than twice the campaign's median share and
# so caught a loud moment, the others pooled, STALLS_LOUD=keep: its own); each simulation takes the
# records less the stalls their watching threads' CPU clocks counted, which the measured CPU times
# already hold (STALLS_COUNTED=keep: the whole records): where a record read the clock across each
# stall, each stall's uncounted part; STALLS_IDLE=1: a stall also holds the idle threads on its core
# (`--stalls-hold-idle`). The records also measure the OS's time slice (`slice_us`), and every
# simulation takes the median of the campaign's (`--slice-us`; SLICE=0: none). STALLS_DUTIES (default 1) lists
# the duties recorded (`baton stalls --duty D`; D other than 1 into DIR/P.stalls-dD.json), STALLS_DUTY
# (default 1) the one the simulations take; a campaign starts with one record the simulations
# do not take (DIR/settle_stalls.json; SETTLE=0: none). Each pipeline also runs one light open load (10% of
# its capacity, DIR/light_P.json), whose sends' mean lag behind their schedule is the generator's
# wake (`--send-wake-us` with SEND_CPU=1; SEND_WAKE=sleeps: the stall record's timed sleeps
# instead, SEND_WAKE=0: none). Every simulation takes the real-time workers' wake-up from the
# light load's record of them (`--realtime-wake-us`, its mean; RT_WAKE=0: none, RT_WAKE=light or
# all: drawn from that run's record, or from it and the capacity runs', `--realtime-wake-delays`).
# Each node's hand-on (which holds its worker) is the light open load's, where the closed loop's
# answers wake no waiting client (HAND_ON_AT=one: concurrency 1's).
# HAND_ON=1 (with NODE_HOPS=0) gives each node the
# worker's measured hand-on time per batch (`--hand-on-us`). LIGHT_TERMS=1 takes the wake and
# hop terms from the light open load (real less its simulation with the base terms) instead of
# concurrency 1. Each node has its own hop (what its own time per task at concurrency 1 exceeds
# the model's: its measured hand-on as `--hand-on-us`, the rest as `--route-us`) and the one hop
# term the rest; NODE_HOPS=0: the one hop term alone, as before 2026-12-02. The wake term comes
# from the light open load (its queue per task beyond the model's), where the workers park between
# requests as in the open-loop loads; LIGHT_WAKE=0 takes it from concurrency 1, as before.
# KEEP_AWAKE=1 runs every real run with the cores kept awake (`baton bench --keep-cores-awake`).
# SPARSE=1 gives the open-loop simulations each node's sparse stretch from the light load
# (`--sparse-stretch`); RT_ROUTE=0 leaves out the real-time batches' own route (`--realtime-route-us`).
# Each profile measures its nodes' idle gaps (`baton profile --idle-gaps`, IDLE_GAP_US), and every
# simulation takes the extra a batch pays after its node sat idle (`--idle-gaps`), the compute terms
# fitted without what the model's gaps add at the capacity runs' concurrencies (IDLE_GAPS=0: neither;
# neither for a profile that holds no gaps, measured before); RT_GAPS=1 gives the real-time batches
# theirs too (`--realtime-idle-gaps`), their --realtime-scale fitted without what the model's gaps
# add to them at the capacity runs' concurrencies. SPIN_WAKES=1
# gives the wake term to parked workers alone (`--spin-wakes`; the term from the light load then
# over its share of parked wake-ups). Every simulation frees each worker as its hand-on ends, the
# hop term then delaying the outputs alone (`--hop-frees-worker`; HOP_FREES=0: the worker held
# through the hop, as before 2026-12-07's twenty-seventh sitting). PROFILE_BATCHES lists the batch sizes the profiles measure
# (`baton profile --batches`; default its own).
set -euo pipefail
# The whole script is one block, read before it runs: an edit to this file while a campaign
# runs does not reach that campaign.
{
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${1:?usage: scripts/fidelity.sh DIR [PIPELINES]}
PIPELINES=${2:-mlp,diamond,many_nodes,mixed_streams,collab_early}
BATON=${BATON_BIN:-target/release/baton}
ROUNDS=${ROUNDS:-5}
LOADS=${LOADS:-30,50,70}
CALIBRATE=${CALIBRATE:-0}
STALLS_DUTIES=${STALLS_DUTIES:-1}
mkdir -p "$DIR"

source scripts/lib/loads.sh
bench() { # NAME ARGS...: one `baton bench` run into DIR/NAME.json and .txt; a failed run is logged, not fatal
    local name=$1
    shift
    # shellcheck disable=SC2046 # the flag is a word or none
    "$BATON" bench "$@" $([[ -n ${LATENCY_FROM_SCHEDULE:-} ]] && echo --latency-from-schedule) \
        $([[ ${KEEP_AWAKE:-} == 1 ]] && echo --keep-cores-awake) \
        --generator-policy "${GENERATOR_POLICY:-normal}" --generator-nice "${GENERATOR_NICE:-0}" --json "$DIR/$name.json" >"$DIR/$name.txt" 2>&1 || echo "$name: exit $?" >>"$DIR/load.log"
}
logged() { # NAME: appends the load average to load.log
    echo "$(date -u +%T) $1 $(cut -d' ' -f1-3 /proc/loadavg)" >>"$DIR/load.log"
}

measure() { # PIPELINE CONFIG CONCURRENCY LOAD_FLAGS...: the profile, the capacity runs, the real runs
    local p=$1 cfg=$2 c=$3
    shift 3
    local duty record
    for duty in ${STALLS_DUTIES//,/ }; do
        logged "$p stalls at duty $duty"
        record=$DIR/$p.stalls.json
        [[ $duty == 1 ]] || record=$DIR/$p.stalls-d$duty.json
        "$BATON" stalls --duty "$duty" --out "$record" >"${record%.json}.txt" 2>&1
    done
    logged "$p profile"
    # shellcheck disable=SC2046 # the flag is two words or none
    "$BATON" profile "$cfg" --out "$DIR/$p.profile.json" --idle-gaps "${IDLE_GAP_US:-100,300,1000,3000,10000,30000}" \
        $([[ -n ${PROFILE_BATCHES:-} ]] && echo --batches "$PROFILE_BATCHES") >"$DIR/$p.profile.log" 2>&1
    for k in 1 2 3; do
        logged "$p capacity $k"
        bench "cap_${p}_$k" "$cfg" "$@" --concurrency "1,$c" --duration 3s --warmup 1s --seed "$k"
    done
    local rates
    # A light open load (10% of the capacity), where the generator sleeps before nearly every
    # send: its mean lag behind the schedule is the generator's wake (`--send-wake-us`).
    logged "$p light"
    bench "light_${p}" "$cfg" "$@" --rate "$(python3 scripts/fidelity_terms.py rates "$DIR" "$p" 10)" \
        --duration 3s --warmup 1s --seed 9
    rates=$(python3 scripts/fidelity_terms.py rates "$DIR" "$p" "$LOADS")
    for k in $(seq 1 "$ROUNDS"); do
        logged "$p real $k"
        bench "real_${p}_$k" "$cfg" "$@" --rate "$rates" --duration 4s --warmup 1s --seed "$k"
    done
}

echo "${SIM_FLAGS:-}" >"$DIR/sim_flags.txt"
# A first stall record the simulations do not take: in three campaigns of three the first record
# saw 2-4 times the stalled time of the later ones (docs/simulate.md, "Measured terms").
if [[ -z ${SIMULATE_ONLY:-} && ${SETTLE:-1} == 1 ]]; then
    logged "settle"
    "$BATON" stalls --out "$DIR/settle_stalls.json" >"$DIR/settle_stalls.txt" 2>&1
fi
if [[ -z ${SIMULATE_ONLY:-} ]]; then
    for p in ${PIPELINES//,/ }; do
        # shellcheck disable=SC2046 # the load flags are words
        set -- $(load_flags "$p")
        measure "$p" "configs/$p.toml" "$(capacity_concurrency "$p")" "$@"
    done
fi
# Every pipeline is measured before any is simulated: the simulations take the campaign's stall
# records pooled.
for p in ${PIPELINES//,/ }; do
    cfg=configs/$p.toml
    # shellcheck disable=SC2046 # the load flags are words
    set -- $(load_flags "$p")
    # Terms every simulation of P takes; the idle gaps where its profile measured them.
    model=()
    idle_gaps=0
    if [[ ${IDLE_GAPS:-1} == 1 ]] && grep -q '"idle_gaps"' "$DIR/$p.profile.json"; then
        idle_gaps=1
        model+=(--idle-gaps)
        [[ ${RT_GAPS:-} != 1 ]] || model+=(--realtime-idle-gaps)
    fi
    [[ ${SPIN_WAKES:-} != 1 ]] || model+=(--spin-wakes)
    [[ ${HOP_FREES:-1} != 1 ]] || model+=(--hop-frees-worker)
    rates=$(python3 scripts/fidelity_terms.py rates "$DIR" "$p" "$LOADS")
    # The compute terms start from the capacity runs' compute over the profile and are calibrated
    # through the model at the same concurrencies (CALIBRATE rounds); the last simulation's
    # concurrency-1 point gives the wake and hop terms.
    rm -f "$DIR/scales_$p.json" "$DIR/realtime_gaps_$p.json"
    for round in $(seq 0 "$CALIBRATE"); do
        ((round == 0)) || python3 scripts/fidelity_terms.py calibrate "$DIR" "$p" >>"$DIR/load.log"
        # shellcheck disable=SC2046 # the terms are flags
        "$BATON" simulate "$cfg" --profile "$DIR/$p.profile.json" "${model[@]}" "$@" --concurrency "1,$(capacity_concurrency "$p")" \
            --duration 20s --warmup 1s \
            --seed 1 $(python3 scripts/fidelity_terms.py base "$DIR" "$p") --json "$DIR/sim1_$p.json" >/dev/null 2>&1
    done
    if ((idle_gaps)); then
        # The real compute at concurrency 1 holds the nodes' idle gaps, which the model adds
        # itself: the compute terms are fitted again without what the model's gaps add there.
        # shellcheck disable=SC2046 # the terms are flags
        "$BATON" simulate "$cfg" --profile "$DIR/$p.profile.json" "$@" --concurrency "1,$(capacity_concurrency "$p")" \
            --duration 20s --warmup 1s --seed 1 $(python3 scripts/fidelity_terms.py base "$DIR" "$p") \
            --json "$DIR/sim1_warm_$p.json" >/dev/null 2>&1
        python3 scripts/fidelity_terms.py idle-correct "$DIR" "$p" >>"$DIR/load.log"
        # shellcheck disable=SC2046 # the terms are flags
        "$BATON" simulate "$cfg" --profile "$DIR/$p.profile.json" "${model[@]}" "$@" \
            --concurrency "1,$(capacity_concurrency "$p")" --duration 20s --warmup 1s \
            --seed 1 $(python3 scripts/fidelity_terms.py base "$DIR" "$p") --json "$DIR/sim1_$p.json" >/dev/null 2>&1
    fi
    if [[ ${LIGHT_TERMS:-} == 1 || ${LIGHT_WAKE:-1} == 1 ]]; then
        # The light open load with the base terms: what it leaves out of the real light run
        # gives the wake and hop terms instead of concurrency 1.
        # shellcheck disable=SC2046 # the terms are flags
        "$BATON" simulate "$cfg" --profile "$DIR/$p.profile.json" "${model[@]}" "$@" \
            --rate "$(python3 scripts/fidelity_terms.py rates "$DIR" "$p" 10)" --duration 20s --warmup 1s --seed 1 \
            $(python3 scripts/fidelity_terms.py base-open "$DIR" "$p") --json "$DIR/simlight_$p.json" >/dev/null 2>&1
    fi
    # The model of P as this campaign measured it, kept for other loads (scripts/evidence.sh).
    echo "${model[*]} $(python3 scripts/fidelity_terms.py terms "$DIR" "$p" "$cfg") ${SIM_FLAGS:-}" >"$DIR/model_$p.flags"
    # shellcheck disable=SC2046 # the terms are flags
    "$BATON" simulate "$cfg" --profile "$DIR/$p.profile.json" "$@" --rate "$rates" --duration 20s \
        --warmup 1s --seed 1 $(cat "$DIR/model_$p.flags") --json "$DIR/sim_$p.json" >"$DIR/sim_$p.txt" 2>&1
done
logged end
python3 scripts/fidelity_terms.py table "$DIR" "$PIPELINES" | tee "$DIR/table.md"
python3 scripts/fidelity_terms.py queues "$DIR" "$PIPELINES" >"$DIR/queues.md"
# With two sets of five rounds or more: the real runs' medians against each other beside the model.
rounds=$(find "$DIR" -maxdepth 1 -name "real_${PIPELINES%%,*}_*.json" | wc -l)
((rounds < 10)) || python3 scripts/fidelity_ceiling.py "$DIR" "$PIPELINES" | tee "$DIR/ceiling.md"
exit
}
