#!/usr/bin/env bash
# A soak (not CI): MINUTES of mixed HTTP and gRPC traffic against one
# `baton serve` whose MLP node fails 1% of its runs, panics on 0.1% and runs
# 20x slow on 1%, with, every minute, a burst of slow clients (half-sent
# request heads) and a gRPC flood (h2load). Prints the server's RSS every
# 30 s, then checks: no request lost (no client timed out or saw its
# connection drop, every h2load request done, nothing left in flight at the
# end), and RSS at the end within 10% of its peak in the first 5 minutes.
#
#   scripts/soak.sh [MINUTES] [RATE]     defaults: 30 minutes, 300 requests/s per protocol
# Needs h2load (apt-get install nghttp2-client).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
rate=${2:-300}
source scripts/lib/serve.sh
need_tools h2load
seconds=$((minutes * 60))

sed "s|\.\./models/|$PWD/models/|" configs/mlp.toml > "$work/soak.toml"
printf '\n[nodes.mlp.faults]\nerror = 0.01\npanic = 0.001\nslow = 0.01\nslow_factor = 20.0\nseed = 7\n' >> "$work/soak.toml"
.venv-client/bin/python - "$work" <<'EOF'
import struct, sys
import numpy as np
from tritonclient.grpc import service_pb2
r = service_pb2.ModelInferRequest(model_name="mlp")
i = r.inputs.add(); i.name = "input"; i.datatype = "FP32"; i.shape.extend([1, 256])
r.raw_input_contents.append(np.ones((1, 256), np.float32).tobytes())
m = r.SerializeToString()
open(f"{sys.argv[1]}/grpc.bin", "wb").write(b"\0" + struct.pack(">I", len(m)) + m)
EOF

start_serve serve "$work/soak.toml" --http 127.0.0.1:18600 --grpc 127.0.0.1:18601 --metrics 127.0.0.1:18602 \
    --header-read-timeout 5
wait_ready "$work/serve.log"
rss() { rss_mib "$server"; }

for url in http://127.0.0.1:18600 grpc://127.0.0.1:18601; do
    "$baton" bench --url "$url" --model mlp --rate "$rate" --duration "${seconds}s" --warmup 0s \
        --json "$work/bench-${url%%:*}.json" > "$work/bench-${url%%:*}.txt" 2>&1 &
    pids+=($!)
done

slow_clients() { # 50 connections that send half a head and stall (the server closes them)
    .venv-client/bin/python - <<'EOF'
import socket
conns = []
for _ in range(50):
    s = socket.create_connection(("127.0.0.1", 18600))
    s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Le")
    conns.append(s)
for s in conns:
    s.settimeout(30)
    try:
        s.recv(1)
    except OSError:
        pass
EOF
}

echo "second rss_mib"
peak_early=0
h2_failed=0
start=$(date +%s)
next_report=0
while :; do
    now=$(( $(date +%s) - start ))
    [ "$now" -ge "$seconds" ] && break
    if [ "$now" -ge "$next_report" ]; then
        r=$(rss)
        echo "$now $r"
        if [ "$now" -le 300 ] && [ "$r" -gt "$peak_early" ]; then peak_early=$r; fi
        if [ $((next_report % 60)) -eq 30 ]; then
            slow_clients &
            h2load -n 50000 -c 2 -m 1000 -d "$work/grpc.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
                http://127.0.0.1:18601/inference.GRPCInferenceService/ModelInfer > "$work/h2load.txt" 2>&1 || true
            grep -q "50000 done" "$work/h2load.txt" || { h2_failed=$((h2_failed + 1)); grep "requests:" "$work/h2load.txt"; }
        fi
        next_report=$((next_report + 30))
    fi
    sleep 1
done
for pid in "${pids[@]:1}"; do wait "$pid" || true; done
end_rss=$(rss)
in_flight=$(curl -s http://127.0.0.1:18602/metrics | awk '/^baton_in_flight/ {s += $2} END {print s + 0}')
echo "== bench (each protocol)"
for p in http grpc; do
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["settings"]; print(sys.argv[2], "answered", s["answered"], "failures", s["failures"])' \
        "$work/bench-$p.json" "$p"
done
echo "RSS MiB: peak in the first 5 min $peak_early, at the end $end_rss; in flight at the end $in_flight; h2load bursts with requests not done: $h2_failed"
lost=$(python3 -c '
import json, sys
bad = 0
for p in ("http", "grpc"):
    f = json.load(open(f"{sys.argv[1]}/bench-{p}.json"))["settings"]["failures"]
    bad += sum(n for k, n in f.items() if "timeout" in k.lower() or "transport" in k.lower() or "connect" in k.lower())
print(bad)' "$work")
ok=1
[ "$lost" -eq 0 ] || { echo "FAIL: $lost requests timed out or lost their connection"; ok=0; }
[ "$in_flight" -eq 0 ] || { echo "FAIL: $in_flight requests still in flight"; ok=0; }
[ "$h2_failed" -eq 0 ] || { echo "FAIL: $h2_failed h2load bursts lost requests"; ok=0; }
python3 -c 'import sys; e,p=map(int,sys.argv[1:]); sys.exit(0 if e <= p * 1.10 else 1)' "$end_rss" "$peak_early" \
    || { echo "FAIL: RSS at the end over 110% of the early peak"; ok=0; }
[ "$ok" -eq 1 ] && echo "PASS"
