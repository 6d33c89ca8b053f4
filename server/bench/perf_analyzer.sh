#!/usr/bin/env bash
# Triton's perf_analyzer against `baton serve configs/mlp.toml` (release build) on
# 127.0.0.1: HTTP binary tensors, HTTP JSON tensors and gRPC, closed loop at each
# concurrency, batch 1 (one 1x256 FP32 row a request), server-side figures from
# Baton's statistics extension. perf_analyzer comes from scripts/setup-perf-analyzer.sh.
#
# usage: server/bench/perf_analyzer.sh
#   env: MODES="http-binary http-json grpc", CONCS="1 4 16 64", WINDOW_MS=3000 (measurement window), STABILITY=25 (-s, %), PORT=18000 (HTTP;
#        gRPC PORT+1, metrics PORT+2), BATON=path/to/baton (default target/release/baton)
# Writes each run's CSV to .cache/bench/perf_analyzer/ and prints one line per point.
# Bounded: at most 10 windows a point (-r 10), each WINDOW_MS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PA=.cache/perf_analyzer/bin/perf_analyzer
[[ -x $PA ]] || { echo "error: $PA is missing: run scripts/setup.sh" >&2; exit 1; }
BATON=${BATON:-target/release/baton}
[[ -x $BATON ]] || cargo build --release --locked -p baton-cli --bin baton
PORT=${PORT:-18000}
OUT=.cache/bench/perf_analyzer
mkdir -p "$OUT"
"$BATON" serve configs/mlp.toml --http $PORT --grpc $((PORT + 1)) --metrics $((PORT + 2)) > "$OUT/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$PORT/v2/health/ready" >/dev/null && break
    kill -0 $pid 2>/dev/null || { cat "$OUT/serve.log" >&2; exit 1; }
    sleep 0.1
done
for mode in ${MODES:-http-binary http-json grpc}; do
    case $mode in
        http-binary) flags=(-i http -u 127.0.0.1:$PORT) ;;
        http-json) flags=(-i http -u 127.0.0.1:$PORT --input-tensor-format json --output-tensor-format json) ;;
        grpc) flags=(-i grpc -u 127.0.0.1:$((PORT + 1))) ;;
    esac
    for c in ${CONCS:-1 4 16 64}; do
        csv=$OUT/$mode-c$c.csv
        LD_LIBRARY_PATH=.cache/perf_analyzer/lib "$PA" -m mlp "${flags[@]}" -b 1 \
            --concurrency-range "$c:$c" -p "${WINDOW_MS:-3000}" -s "${STABILITY:-25}" -r 10 -f "$csv" > "$OUT/$mode-c$c.log" 2>&1 ||
            { echo "error: perf_analyzer $mode c=$c failed:" >&2; cat "$OUT/$mode-c$c.log" >&2; exit 1; }
        # CSV columns: Concurrency, Inferences/Second, ..., p50/p90/p95/p99 latency (µs).
        python3 - "$mode" "$csv" <<'PYEOF'
import csv, sys
mode, path = sys.argv[1:]
row = next(csv.DictReader(open(path)))
print(f"{mode:12s} c={row['Concurrency']:>3s}  {float(row['Inferences/Second']):9.1f} infer/s  "
      f"p50 {int(row['p50 latency'])/1000:.3f} ms  p99 {int(row['p99 latency'])/1000:.3f} ms  "
      f"server queue {int(row['Server Queue'])} us  compute infer {int(row['Server Compute Infer'])} us")
PYEOF
    done
done
