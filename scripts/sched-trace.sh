#!/usr/bin/env bash
# Records the kernel's scheduling events (sched_switch, sched_wakeup) for a while in the middle
# of a command's run, then prints where threads waited for a core (scripts/sched_waits.py).
# Needs root (tracefs). The tracing costs each switch about a µs: compare the traced run's
# figures with an untraced one's.
#
#   scripts/sched-trace.sh OUT.txt DELAY_S SECONDS COMMAND...
#   scripts/sched-trace.sh /tmp/trace.txt 3 0.5 target/release/baton bench configs/diamond.toml \
#       --rate 60000 --duration 4s --warmup 1s --latency-from-schedule
set -euo pipefail
out=$1 delay=$2 seconds=$3
shift 3
T=/sys/kernel/tracing
[[ -e $T/trace ]] || mount -t tracefs nodev "$T"
echo 0 >"$T/tracing_on"
echo >"$T/trace"
echo 131072 >"$T/buffer_size_kb"
echo 'sched:sched_switch sched:sched_wakeup' >"$T/set_event"
"$@" &
pid=$!
sleep "$delay"
echo 1 >"$T/tracing_on"
sleep "$seconds"
echo 0 >"$T/tracing_on"
wait "$pid"
cp "$T/trace" "$out"
echo >"$T/set_event"
echo >"$T/trace"
python3 "$(dirname "$0")/sched_waits.py" "$out"
