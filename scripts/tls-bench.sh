#!/usr/bin/env bash
# What TLS costs: `baton bench --url` against the same pipeline served twice
# side by side, once in plain text and once over TLS (a throwaway CA and
# certificate made with openssl), at the same concurrency, alternating the
# two for ROUNDS rounds so the machine's drift hits both alike. Prints each
# round's throughput and the TLS / plain ratio.
#
#   scripts/tls-bench.sh [PIPELINE.toml] [CONCURRENCY] [ROUNDS] [PROTOCOL]
#   defaults: configs/mlp.toml 16 3 http   (PROTOCOL http or grpc)
set -euo pipefail
cd "$(dirname "$0")/.."
pipeline=${1:-configs/mlp.toml}
concurrency=${2:-16}
rounds=${3:-3}
protocol=${4:-http}
source scripts/lib/serve.sh

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=baton bench CA" \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -days 1 -extfile "$work/san.ext" -out "$work/server.pem" 2>/dev/null

name=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$pipeline" | head -1)
serve() { # PORT_BASE EXTRA...
    local base=$1
    shift
    start_serve "serve-$base" "$pipeline" --http "127.0.0.1:$base" --grpc "127.0.0.1:$((base + 1))" --metrics off "$@"
}
serve 18400
serve 18410 --http-server-cert "$work/server.pem" --http-server-key "$work/server.key" \
    --grpc-use-ssl --grpc-server-cert "$work/server.pem" --grpc-server-key "$work/server.key"
for port in 18400 18410; do wait_ready "$work/serve-$port.log"; done

if [ "$protocol" = grpc ]; then
    plain_url=grpc://127.0.0.1:18401
    tls_url=grpcs://localhost:18411
else
    plain_url=http://127.0.0.1:18400
    tls_url=https://localhost:18410
fi
throughput() { # URL EXTRA...
    local url=$1
    shift
    "$baton" bench --url "$url" --model "$name" --concurrency "$concurrency" --duration 4s --warmup 1s \
        --csv "$work/run.csv" "$@" > /dev/null
    python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0]["throughput_rps"])' "$work/run.csv"
}
echo "round plain_rps tls_rps tls/plain   ($protocol, $pipeline, c=$concurrency)"
for round in $(seq "$rounds"); do
    plain=$(throughput "$plain_url")
    tls=$(throughput "$tls_url" --tls-ca "$work/ca.pem")
    python3 -c 'import sys; r,p,t=sys.argv[1:]; print(f"{r} {float(p):.0f} {float(t):.0f} {float(t)/float(p):.3f}")' \
        "$round" "$plain" "$tls"
done
