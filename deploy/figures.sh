#!/usr/bin/env bash
# The fleet figures of docs/fleet.md, measured with the remote bench
# (`baton bench --url`) against deploy/fleet.sh's replicas and Envoy.
#
#   deploy/figures.sh OUT_DIR [proxy|scale|streams|kill|term ...]   (default: all)
#
# proxy:   one replica direct vs through Envoy, HTTP and gRPC, c=1 and c=64
# scale:   1, 2 and 3 replicas through Envoy, gRPC and HTTP, c=64
# streams: streams (8 chunks) under load through Envoy: failed chunks must be 0
# kill:    kill -9 of one of two replicas under load (c=16, HTTP through Envoy)
# term:    SIGTERM of one of two replicas under load (c=16, HTTP through Envoy)
#
# Each run's JSON goes to OUT_DIR; a line per figure is printed. Needs root for
# the network namespaces (else loopback addresses), a baton binary (BATON).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=$(realpath -m "${1:?usage: figures.sh OUT_DIR [figure ...]}")
shift
FIGURES=${*:-proxy scale streams kill term}
mkdir -p "$OUT"
BATON=${BATON:-$PWD/target/release/baton}
export BATON FLEET_DIR=${FLEET_DIR:-/tmp/baton-fleet-figures} FLEET_PROXY_ADDR=${FLEET_PROXY_ADDR:-127.0.17.1}
DURATION=${DURATION:-5s}
trap 'deploy/fleet.sh down >/dev/null 2>&1 || true' EXIT

addr() { if [[ $(cat "$FLEET_DIR/mode") == netns ]]; then echo "10.77.$1.2"; else echo "127.0.0.$(($1 + 1))"; fi; }

bench() { # NAME URL MODEL CONCURRENCY [more bench arguments]: one run, its JSON in OUT/NAME.json
    local name=$1 url=$2 model=$3 c=$4
    shift 4
    "$BATON" bench --url "$url" --model "$model" --concurrency "$c" --warmup 1s --duration "$DURATION" \
        --json "$OUT/$name.json" "$@" >"$OUT/$name.txt" 2>&1 || true
}

summary() { # NAME: load, req/s, p50, p99, failures of each point
    python3 - "$OUT/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["points"]:
    l = p["latency"]
    print(f'  c={p["load"]:.0f}: {p["throughput_rps"]:.0f} req/s, p50 {l["p50_us"]} us, p99 {l["p99_us"]} us, errors {p["errors"]}')
print(f'  failures: {r["settings"]["failures"]}')
PY
}

answered() { # successful infers replica I answered
    curl -sf "http://$(addr "$1"):8002/metrics" |
        awk '/^baton_server_requests_total\{/ && index($0, "endpoint=\"infer\"") && (index($0, "code=\"200\"") || index($0, "code=\"OK\"")) { s += $NF } END { print s + 0 }'
}

for figure in $FIGURES; do
    case $figure in
    proxy)
        deploy/fleet.sh up 1
        for proto in http grpc; do
            port=$([[ $proto == http ]] && echo 8000 || echo 8001)
            proxy=$([[ $proto == http ]] && echo 9000 || echo 9001)
            bench "proxy-direct-$proto" "$proto://$(addr 1):$port" mlp 1,64
            bench "proxy-envoy-$proto" "$proto://$FLEET_PROXY_ADDR:$proxy" mlp 1,64
            echo "proxy $proto direct:"; summary "proxy-direct-$proto"
            echo "proxy $proto envoy:"; summary "proxy-envoy-$proto"
        done
        deploy/fleet.sh down ;;
    scale)
        for n in 1 2 3; do
            deploy/fleet.sh up "$n"
            bench "scale-$n-grpc" grpc://$FLEET_PROXY_ADDR:9001 mlp 64
            bench "scale-$n-http" http://$FLEET_PROXY_ADDR:9000 mlp 64
            echo "scale $n replica(s) grpc:"; summary "scale-$n-grpc"
            echo "scale $n replica(s) http:"; summary "scale-$n-http"
            deploy/fleet.sh down
        done ;;
    streams)
        deploy/fleet.sh up 2
        bench streams-http http://$FLEET_PROXY_ADDR:9000 stateful 16 --stream-chunks 8
        bench streams-grpc grpc://$FLEET_PROXY_ADDR:9001 stateful 16 --stream-chunks 8
        echo "streams http (8 chunks, c=16) through Envoy:"; summary streams-http
        echo "streams grpc (8 chunks, c=16) through Envoy:"; summary streams-grpc
        deploy/fleet.sh down ;;
    kill | term)
        signal=$([[ $figure == kill ]] && echo KILL || echo TERM)
        deploy/fleet.sh up 2
        DURATION=10s bench "$figure" http://$FLEET_PROXY_ADDR:9000 mlp 16 &
        load=$!
        # Under load on both replicas: replica 1 has answered 2000 more requests than at the start.
        start=$(answered 1)
        deadline=$((SECONDS + 60))
        until (($(answered 1) > start + 2000)); do
            ((SECONDS < deadline)) || { echo "no load reached replica 1" >&2; exit 1; }
            sleep 0.05
        done
        deploy/fleet.sh signal 1 "$signal"
        ms=$(deploy/fleet.sh wait-out 1)
        wait "$load" || true
        echo "$figure: SIG$signal to replica 1 under load; out of Envoy's ring after $ms ms"
        summary "$figure"
        deploy/fleet.sh down ;;
    *) echo "unknown figure $figure" >&2; exit 2 ;;
    esac
done
