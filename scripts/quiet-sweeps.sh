#!/usr/bin/env bash
# The scheduling workloads' load sweeps (docs/scheduler-proof.md) on a quiet machine with more
# cores than the runs need: the whole bench process (the pipeline's workers, the scheduler and
# the load generator) is confined to two CPUs on distinct physical cores, so the 2-core
# workloads run as on the development machine but with nothing else beside them.
#
#   scripts/quiet-sweeps.sh DIR [WORKLOADS]     WORKLOADS: any of b,c,a (default b,c)
#
# Results into DIR: per workload the bench's table (.txt), its CSV and its plot, plus
# machine.txt (CPUs, load). BATON_BIN / COLLAB_BIN name the binaries (default: this checkout's
# release builds; scripts/device-run.sh's unpacked ones on a lent machine). ROUNDS (default 8)
# is --repeat; CORES overrides the two CPUs (e.g. CORES=0,1); A_CAPACITY is workload a's
# sessions/s at 100% (default 24, greedy's open-loop capacity on the development machine).
# BENCH_FLAGS adds flags to workloads b's and c's `baton bench` (e.g. --latency-from-schedule).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${1:?usage: scripts/quiet-sweeps.sh DIR [b,c,a]}
WORKLOADS=${2:-b,c}
BATON=${BATON_BIN:-target/release/baton}
COLLAB=${COLLAB_BIN:-target/release/examples/collab}
ROUNDS=${ROUNDS:-8}
mkdir -p "$DIR"
want() { [[ ,$WORKLOADS, == *,$1,* ]]; }
source scripts/lib/loads.sh

# The last two CPUs on distinct physical cores (SMT siblings would share one core's units; CPU 0
# takes most of the machine's interrupts and housekeeping). On the lent 16-core guest, greedy's p99
# at 50% load on workload b was 36.5 ms on CPUs 0,1, 7.6 ms on 8,9 and 51.7 ms on 14,15: its vCPUs
# are not quiet enough for these figures (docs/journal/2026-11-24-scheduler-attempts.md, attempt 14).
if [[ -z ${CORES:-} ]]; then
    CORES=$(lscpu -p=CPU,CORE | grep -v '^#' | sort -t, -k2,2n -u | tail -2 | cut -d, -f1 | paste -sd,)
fi
[[ $CORES == *,* ]] || { echo "error: need two CPUs on distinct cores, found '$CORES'" >&2; exit 1; }
{
    echo "cores used: $CORES of $(nproc)"
    lscpu | grep -E 'Model name|^CPU\(s\)|Thread|MHz' || true
    echo "load before: $(cat /proc/loadavg)"
} | tee "$DIR/machine.txt"

pinned() { # NAME COMMAND...: runs the command on $CORES, its table into DIR/NAME.txt
    local name=$1
    shift
    echo "$ taskset -c $CORES $*" | tee -a "$DIR/commands.txt"
    taskset -c "$CORES" "$@" 2>&1 | tee "$DIR/$name.txt"
}

if want b; then
    # shellcheck disable=SC2046 # the load options are flags
    pinned many_nodes "$BATON" bench configs/many_nodes.toml --sweep 50,70,90 --repeat "$ROUNDS" $(load_flags many_nodes) \
        --duration 3s --warmup 0.5s --policy greedy,collaborative ${BENCH_FLAGS:-} \
        --csv "$DIR/many_nodes.csv" --plot "$DIR/many_nodes.svg"
fi
if want c; then
    # shellcheck disable=SC2046 # the load options are flags
    pinned mixed_streams "$BATON" bench configs/mixed_streams.toml $(load_flags mixed_streams) \
        --sweep 50,70,90 --repeat "$ROUNDS" --capacity-concurrency "$(capacity_concurrency mixed_streams)" \
        --duration 3s --warmup 0.5s --policy greedy,collaborative ${BENCH_FLAGS:-} \
        --csv "$DIR/mixed_streams.csv" --plot "$DIR/mixed_streams.svg"
fi
if want a; then
    pinned collab_early "$COLLAB" --image-first --sweep 50,70,90 --capacity-rate "${A_CAPACITY:-24}" --duration 30 \
        --policies greedy,collaborative --plot "$DIR/collab_early.svg"
fi
echo "load after: $(cat /proc/loadavg)" | tee -a "$DIR/machine.txt"
