#!/usr/bin/env bash
# The figures of docs/remote.md, each side by side in one run, on one machine
# with a network namespace standing in for the far host (veth pair,
# 10.19.0.1 here, 10.19.0.2 there). Needs root (ip netns) and release builds:
#   cargo build --release -p baton-cli -p baton-examples --bin baton --example collab
# Usage: deploy/remote-figures.sh [hop|collab|placement]...   (default: all three)
#   hop:       per-hop cost: the MLP as a remote node against the same node local
#              (baton bench, greedy policy, c=1 p50 and c=64 throughput)
#   collab:    the collab pipeline split over two hosts (home pinned to core 0,
#              far to core 1) against one process on cores 0-1 (capacity mode)
#   placement: the diamond split by the critical-cut placement against METIS's,
#              end-to-end p50 and p99 (baton bench, c=1 and c=16)
# Environment: DURATION (bench seconds per point, default 5s), OUT (default target/remote-figures).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
BATON="$root/target/release/baton"
COLLAB="$root/target/release/examples/collab"
DURATION=${DURATION:-5s}
OUT=${OUT:-$root/target/remote-figures}
NS="baton-fig-$$"
HERE=10.19.0.1
THERE=10.19.0.2
mkdir -p "$OUT"
server=""

cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$NS"
ip link add "bfig$$" type veth peer name "bfigf$$"
ip link set "bfigf$$" netns "$NS"
ip addr add "$HERE/24" dev "bfig$$"
ip link set "bfig$$" up
ip netns exec "$NS" ip addr add "$THERE/24" dev "bfigf$$"
ip netns exec "$NS" ip link set "bfigf$$" up
ip netns exec "$NS" ip link set lo up

# serve FILE CORES: baton serve FILE in the namespace on THERE:8001, pinned; returns once it accepts connections.
serve() {
  stop
  ip netns exec "$NS" taskset -c "$2" "$BATON" serve "$1" --grpc "$THERE:8001" --http off --metrics off >"$OUT/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 1 600); do
    if (exec 3<>"/dev/tcp/$THERE/8001") 2>/dev/null; then return 0; fi
    kill -0 "$server" 2>/dev/null || { cat "$OUT/serve.log"; exit 1; }
    sleep 0.1
  done
  echo "baton serve $1 did not start"; exit 1
}
stop() {
  [[ -n "$server" ]] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; }
  server=""
}

# summary BENCH.json: one line per point: load, requests/s, p50 and p99.
summary() {
  python3 -c 'import json, sys
for p in json.load(open(sys.argv[1]))["points"]:
    l = p["latency"]
    print("   c=%d: %8.0f req/s  p50 %d us  p99 %d us  errors %d" % (p["load"], p["throughput_rps"], l["p50_us"], l["p99_us"], p["errors"]))' "$1"
}

hop() {
  echo "== per-hop cost: the MLP node remote (far host, core 1) vs local; bench client and home on core 0"
  sed -e "s#MODELS#$root/models#" >"$OUT/mlp_far.toml" <<'TOML'
[pipeline]
name = "mlp"
[inputs.input]
to = ["mlp.input"]
[outputs.output]
from = "mlp.output"
[nodes.mlp]
stages = [{ model = "MODELS/mlp.onnx" }]
max_batch = 32
TOML
  cat >"$OUT/mlp_near.toml" <<TOML
[pipeline]
name = "mlp_near"
[inputs.input]
to = ["far.input"]
[outputs.output]
from = "far.output"
[nodes.far]
stages = [{ remote = "grpc://$THERE:8001", model = "mlp" }]
max_batch = 32
window = 4
TOML
  echo "-- local: taskset -c 0,1 baton bench configs/mlp.toml (one process on both cores)"
  taskset -c 0,1 "$BATON" bench configs/mlp.toml --concurrency 1,64 --policy greedy --duration "$DURATION" --json "$OUT/hop-local.json" >"$OUT/hop-local.txt"
  summary "$OUT/hop-local.json"
  serve "$OUT/mlp_far.toml" 1
  echo "-- remote: far baton serve on core 1; taskset -c 0 baton bench mlp_near.toml"
  taskset -c 0 "$BATON" bench "$OUT/mlp_near.toml" --concurrency 1,64 --policy greedy --duration "$DURATION" --json "$OUT/hop-remote.json" >"$OUT/hop-remote.txt"
  summary "$OUT/hop-remote.json"
  stop
}

collab() {
  echo "== collab split over two hosts (home core 0, far core 1) vs one process on cores 0-1"
  rm -rf "$OUT/collab-split"
  "$BATON" plan --method partition -k 2 --pipeline configs/collab.toml --hosts "a=$HERE:8001,b=$THERE:8001" --out "$OUT/collab-split" | tail -n 3
  echo "-- one process: taskset -c 0,1 collab --capacity 16"
  taskset -c 0,1 "$COLLAB" --capacity 16 | tail -n 6
  serve "$OUT/collab-split/b.toml" 1
  echo "-- split: far baton serve b.toml on core 1; taskset -c 0 collab --config a.toml --capacity 16"
  taskset -c 0 "$COLLAB" --config "$OUT/collab-split/a.toml" --capacity 16 | tail -n 6
  stop
}

placement() {
  echo "== diamond: critical-cut placement vs METIS's, home core 0, far core 1"
  for p in critical metis; do
    rm -rf "$OUT/diamond-$p"
    "$BATON" plan --method partition -k 2 --pipeline configs/diamond.toml --hosts "a=$HERE:8001,b=$THERE:8001" \
      --placement "$p" --out "$OUT/diamond-$p" | grep placement
    serve "$OUT/diamond-$p/b.toml" 1
    taskset -c 0 "$BATON" bench "$OUT/diamond-$p/a.toml" --concurrency 1,16 --policy greedy --duration "$DURATION" \
      --json "$OUT/placement-$p.json" >"$OUT/placement-$p.txt"
    summary "$OUT/placement-$p.json"
    stop
  done
}

for figure in "${@:-hop collab placement}"; do
  for f in $figure; do "$f"; done
done
