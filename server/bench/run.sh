#!/usr/bin/env bash
# Load test of `baton serve` (HTTP, KServe v2 JSON) on 127.0.0.1, side by side with
# a real Triton (PyTriton: Triton core + dynamic batcher, max batch 32, 1 ms queue
# delay) on the same model (models/mlp.onnx) with the same wrk script and request:
# ../shared/peers/load/{bench_http.sh,post.lua} and ../shared/peers/triton_req.json.
#
# usage: server/bench/run.sh [baton|triton|both]     (default both)
#   env: CONCS="1 4 16 64" (closed-loop connections), DUR=10s (per point),
#        BATON=path/to/baton (default: cargo build --release -p baton-cli),
#        THREADS=2 (baton serve --threads)
# Writes one JSON line per point to .cache/bench/results_*.jsonl and prints tables.
# Measuring only: installs wrk (apt) and the PyTriton venv (.cache/bench/pytriton-venv,
# nvidia-pytriton 0.7.0 + onnxruntime 1.31.1) when missing; run scripts/setup.sh first.
# Bounded: each point runs DUR (wrk -d), each request times out after 5 s.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
WHICH=${1:-both}
PEERS=${PEERS:-$ROOT/../shared/peers}
OUT=$ROOT/.cache/bench
export CONCS=${CONCS:-"1 4 16 64"} DUR=${DUR:-10s}
mkdir -p "$OUT"
[[ -f $PEERS/load/bench_http.sh && -f $PEERS/triton_req.json ]] || {
    echo "error: $PEERS/load/bench_http.sh and triton_req.json (the peers' recipe) are needed" >&2; exit 1; }
[[ -f models/mlp.onnx ]] || { echo "error: models/mlp.onnx is missing: run scripts/setup.sh" >&2; exit 1; }
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
BODY=$PEERS/triton_req.json

wait_ready() {  # URL PID
    for _ in $(seq 1 240); do
        [[ $(curl -s -o /dev/null -w "%{http_code}" "$1" || true) == 200 ]] && return 0
        kill -0 "$2" 2>/dev/null || { echo "error: server exited early" >&2; return 1; }
        sleep 0.5
    done
    echo "error: server not ready at $1" >&2; return 1
}

port_free() {  # wait until nothing listens on 127.0.0.1:8000-8002
    for _ in $(seq 1 60); do ss -ltn | grep -qE "127.0.0.1:800[012] " || return 0; sleep 0.5; done
    echo "error: ports 8000-8002 stay busy" >&2; return 1
}

table() {  # FILE TITLE
    echo
    echo "$2"
    python3 - "$1" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| conc | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | sock err | mean batch |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['conc']} | {r['rps']:,.0f} | {r['p50_ms']:.3f} | {r['p90_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.2f} "
          f"| {r['non2xx']} | {r['sock_err']} | {r.get('mean_batch', float('nan')):.2f} |")
EOF
}

run_baton() {
    local bin=${BATON:-}
    if [[ -z $bin ]]; then
        cargo build --release -q -p baton-cli
        bin=target/release/baton
    fi
    port_free
    "$bin" serve configs/mlp.toml --http 127.0.0.1:8000 --grpc 127.0.0.1:8001 --metrics 127.0.0.1:8002 \
        --threads "${THREADS:-2}" > "$OUT/baton_serve.log" 2>&1 &
    local pid=$!
    wait_ready http://127.0.0.1:8000/v2/models/mlp/ready $pid
    "$PEERS/load/bench_http.sh" baton_http http://127.0.0.1:8000/v2/models/mlp/infer "$BODY" \
        http://127.0.0.1:8000/v2/models/mlp/stats | tee "$OUT/results_baton.jsonl"
    curl -s http://127.0.0.1:8002/metrics > "$OUT/baton_metrics.txt"
    kill -TERM $pid
    local rc=0
    wait $pid || rc=$?
    echo "baton serve exited with $rc after SIGTERM" >&2
    table "$OUT/results_baton.jsonl" "Baton (baton serve configs/mlp.toml, HTTP JSON)"
}

run_triton() {
    local venv=$OUT/pytriton-venv
    if [[ ! -x $venv/bin/python || ! -f $venv/.ok ]]; then
        echo "==> creating $venv (nvidia-pytriton 0.7.0, onnxruntime 1.31.1)" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check nvidia-pytriton==0.7.0 onnxruntime==1.31.1
        touch "$venv/.ok"
    fi
    # The recipe's server writes a token file beside itself: run a copy in a writable folder.
    mkdir -p "$OUT/peers" "$OUT/home"
    cp "$PEERS/pytriton_server.py" "$OUT/peers/"
    port_free
    (
        cd "$OUT/peers"
        export HOME=$OUT/home
        LD_LIBRARY_PATH=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))') \
            exec "$venv/bin/python" pytriton_server.py --delay-us 1000 --max-batch 32 --model "$ROOT/models/mlp.onnx"
    ) > "$OUT/pytriton.log" 2>&1 &
    local pid=$!
    wait_ready http://127.0.0.1:8000/v2/models/mlp/ready $pid
    TOKEN=$(cat "$OUT/peers/pytriton.token") "$PEERS/load/bench_http.sh" pytriton_http_d1000us \
        http://127.0.0.1:8000/v2/models/mlp/infer "$BODY" http://127.0.0.1:8000/v2/models/mlp/stats \
        | tee "$OUT/results_pytriton.jsonl"
    kill -TERM $pid
    wait $pid || true
    table "$OUT/results_pytriton.jsonl" "PyTriton 0.7.0 (Triton core + dynamic batcher, max batch 32, 1 ms delay, HTTP JSON)"
}

case $WHICH in
    baton) run_baton ;;
    triton) run_triton ;;
    both) run_baton; run_triton ;;
    *) echo "usage: $0 [baton|triton|both]" >&2; exit 2 ;;
esac
