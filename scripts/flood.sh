#!/usr/bin/env bash
# Floods `baton serve PIPELINE` (its defaults) the way a hostile client would,
# and prints what the server's memory and answers did:
#
#   1. gRPC: h2load -n N -c 4 -m 50000 with ModelInfer requests (Debian's
#      nghttp2-client): requests answered, by status, and the server's RSS
#      idle, at its peak, and 10 s after the flood;
#   2. HTTP: wrk -c 2000 -d 10s --latency with binary-tensor infer requests:
#      latency percentiles, non-2xx answers, RSS after;
#   3. HTTP at c=64 unloaded (wrk -c 64), the reference for the accepted p99;
#   4. the same three loads with `baton flood`, which splits latency by answer
#      status (wrk and h2load give one latency over refusals and answers).
#
#   scripts/flood.sh [PIPELINE.toml] [REQUESTS]      defaults: configs/mlp.toml 400000
# Needs h2load and wrk (apt-get install nghttp2-client wrk); not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
pipeline=${1:-configs/mlp.toml}
requests=${2:-400000}
source scripts/lib/serve.sh
need_tools h2load wrk

# The request bodies: one mlp row, as gRPC (length-prefixed ModelInferRequest) and as HTTP binary tensors.
.venv-client/bin/python - "$work" <<'EOF'
import json, struct, sys
import numpy as np
from tritonclient.grpc import service_pb2
work = sys.argv[1]
x = np.random.default_rng(0).standard_normal((1, 256)).astype(np.float32)
r = service_pb2.ModelInferRequest(model_name="mlp")
i = r.inputs.add(); i.name = "input"; i.datatype = "FP32"; i.shape.extend([1, 256])
r.raw_input_contents.append(x.tobytes())
m = r.SerializeToString()
open(f"{work}/grpc.bin", "wb").write(b"\0" + struct.pack(">I", len(m)) + m)
head = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 256],
                               "parameters": {"binary_data_size": 1024}}],
                   "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
open(f"{work}/http.bin", "wb").write(head + x.tobytes())
open(f"{work}/http.len", "w").write(str(len(head)))
EOF
cat > "$work/infer.lua" <<EOF
local f = io.open("$work/http.bin", "rb"); local body = f:read("*all"); f:close()
wrk.method = "POST"; wrk.body = body
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = "$(cat "$work/http.len")"
local codes = {}
response = function(status) codes[status] = (codes[status] or 0) + 1 end
done = function() for c, n in pairs(codes) do io.write(string.format("status %d: %d\n", c, n)) end end
EOF

start_serve serve "$pipeline" --http 127.0.0.1:18500 --grpc 127.0.0.1:18501 --metrics 127.0.0.1:18502
wait_ready "$work/serve.log"
rss() { rss_mib "$server"; }
watch_peak() { # prints the highest RSS seen until the file $work/stop appears
    local peak=0 now
    while [ ! -e "$work/stop" ]; do now=$(rss); [ "$now" -gt "$peak" ] && peak=$now; sleep 0.1; done
    echo "$peak"
}
idle=$(rss)
echo "== gRPC flood: h2load -n $requests -c 4 -m 50000 (idle RSS ${idle} MiB)"
rm -f "$work/stop"; watch_peak > "$work/peak" &
h2load -n "$requests" -c 4 -m 50000 -d "$work/grpc.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:18501/inference.GRPCInferenceService/ModelInfer" > "$work/h2load.txt" 2>&1 || true
touch "$work/stop"; wait %2 2>/dev/null || true
grep -E "^(finished in|requests:|status codes:|time for request:)" "$work/h2load.txt" || tail -20 "$work/h2load.txt"
after=$(rss)
sleep 10
echo "RSS MiB: idle $idle, peak $(cat "$work/peak"), at the end $after, 10 s later $(rss)"
grep -E 'baton_server_requests_total\{.*protocol="grpc".*endpoint="infer"' \
    <(curl -s http://127.0.0.1:18502/metrics) | sed 's/^/  /'

echo "== HTTP unloaded reference: wrk -c 64 -d 5s"
wrk -t 2 -c 64 -d 5s --latency -s "$work/infer.lua" http://127.0.0.1:18500/v2/models/mlp/infer \
    | grep -E "^ +(50|75|90|99)%|Requests/sec|status|Non-2xx"
echo "== HTTP flood: wrk -c 2000 -d 10s"
wrk -t 2 -c 2000 -d 10s --latency -s "$work/infer.lua" http://127.0.0.1:18500/v2/models/mlp/infer \
    | grep -E "^ +(50|75|90|99)%|Requests/sec|status|Non-2xx|Socket errors"
sleep 10
echo "RSS MiB 10 s after the HTTP flood: $(rss)"

echo "== split by status (baton flood): gRPC -c 4 -m 50000, HTTP c=64 unloaded, HTTP c=2000"
"$baton" flood grpc://127.0.0.1:18501 --model mlp --connections 4 --streams 50000 --requests "$requests" --duration 300s
"$baton" flood http://127.0.0.1:18500 --model mlp --connections 64 --duration 5s --client-threads 2
"$baton" flood http://127.0.0.1:18500 --model mlp --connections 2000 --duration 10s --client-threads 2
