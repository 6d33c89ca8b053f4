#!/usr/bin/env bash
# The fleet end to end: two replicas in their own network namespaces behind
# the real Envoy (deploy/fleet.sh). Checks, over HTTP and gRPC through Envoy:
# plain requests all answered and spread over both replicas; streams under
# load with no chunk reaching a replica without its state; and after
# `kill -9` of the replica holding a stream, the stream's next chunk answered
# "unknown stream ... restart it", never from fresh state.
#
# Skips (exit 0, printing why) where it cannot run: no Envoy, no baton binary.
# Without network namespaces it runs on loopback addresses (fleet.sh says why).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

skip() { echo "SKIP test-fleet: $*"; exit 0; }
fail() { echo "FAIL test-fleet: $*" >&2; exit 1; }

deploy/fetch-envoy.sh >/dev/null 2>&1 || skip "Envoy cannot be fetched or run here (deploy/fetch-envoy.sh)"
BATON=${BATON:-}
for b in target/release/baton target/debug/baton; do [[ -z $BATON && -x $b ]] && BATON=$PWD/$b; done
[[ -n $BATON ]] || skip "no baton binary (cargo build -p baton-cli)"
export BATON
command -v curl >/dev/null || skip "no curl"
if [[ $(id -u) != 0 ]]; then export FLEET_NETNS=0; fi

export FLEET_DIR=${TMPDIR:-/tmp}/baton-fleet-test-$$ FLEET_NAME=bft$$
export FLEET_PROXY_ADDR=${FLEET_PROXY_ADDR:-127.0.17.1}
trap 'deploy/fleet.sh down' EXIT
deploy/fleet.sh up 2
mode=$(cat "$FLEET_DIR/mode")
addr() { if [[ $mode == netns ]]; then echo "10.77.$1.2"; else echo "127.0.0.$(($1 + 1))"; fi; }

# Successful infer answers of MODEL counted by replica I (HTTP 200, gRPC OK).
answered() {
    curl -sf "http://$(addr "$1"):8002/metrics" |
        awk -v m="model=\"$2\"" '/^baton_server_requests_total\{/ && index($0, "endpoint=\"infer\"") && index($0, m) && (index($0, "code=\"200\"") || index($0, "code=\"OK\"")) { s += $NF } END { print s + 0 }'
}

run_bench() { # URL MODEL CHUNKS: a short closed-loop run; fails on any failed request
    "$BATON" bench --url "$1" --model "$2" --warmup 0.2s --duration 1s --concurrency 8 \
        --stream-chunks "$3" --json "$FLEET_DIR/bench.json" >"$FLEET_DIR/bench.out" 2>&1 ||
        { cat "$FLEET_DIR/bench.out" >&2; fail "bench $1 $2 (chunks $3) had failures"; }
}

for url in http://$FLEET_PROXY_ADDR:9000 grpc://$FLEET_PROXY_ADDR:9001; do
    before1=$(answered 1 mlp) before2=$(answered 2 mlp)
    run_bench "$url" mlp 0
    (($(answered 1 mlp) > before1 && $(answered 2 mlp) > before2)) || fail "$url: mlp load did not reach both replicas"
    before1=$(answered 1 stateful) before2=$(answered 2 stateful)
    run_bench "$url" stateful 8
    (($(answered 1 stateful) > before1 && $(answered 2 stateful) > before2)) ||
        fail "$url: streams did not spread over both replicas"
    echo "ok: $url: plain requests and streams (8 chunks, 8 clients) through Envoy, no failure, both replicas used"
done

# A stream opened through Envoy on replica 1, whose replica is then killed.
chunk() { # ID START: one chunk of stream ID through Envoy; prints the status, then the body
    curl -s -o "$FLEET_DIR/chunk.json" -w '%{http_code}\n' -H 'Content-Type: application/json' \
        -H "baton-sequence-id: $1" http://$FLEET_PROXY_ADDR:9000/v2/models/stateful/infer \
        -d "{\"parameters\": {\"sequence_start\": $2}, \"inputs\": [{\"name\": \"x\", \"shape\": [1, 8], \"datatype\": \"FP32\", \"data\": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]}]}"
}
id=
for candidate in $(seq 1000 1100); do
    before=$(answered 1 stateful)
    [[ $(chunk "$candidate" true) == 200 ]] || fail "start chunk of stream $candidate: $(cat "$FLEET_DIR/chunk.json")"
    if (($(answered 1 stateful) > before)); then id=$candidate; break; fi
done
[[ -n $id ]] || fail "no stream of 100 landed on replica 1"
[[ $(chunk "$id" false) == 200 ]] || fail "second chunk of stream $id: $(cat "$FLEET_DIR/chunk.json")"
deploy/fleet.sh signal 1 KILL
ms=$(deploy/fleet.sh wait-out 1)
status=$(chunk "$id" false)
[[ $status == 400 ]] && grep -q "unknown stream" "$FLEET_DIR/chunk.json" && grep -q "restart it" "$FLEET_DIR/chunk.json" ||
    fail "chunk of stream $id after its replica was killed: $status $(cat "$FLEET_DIR/chunk.json")"
echo "ok: after kill -9 of its replica (out of Envoy's ring in $ms ms), stream $id's next chunk: 400 unknown stream, restart it"
[[ $(chunk "$id" true) == 200 ]] || fail "restarting stream $id: $(cat "$FLEET_DIR/chunk.json")"
echo "ok: the stream restarted on the surviving replica"
echo "PASS test-fleet ($mode)"
