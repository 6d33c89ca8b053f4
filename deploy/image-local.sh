#!/usr/bin/env bash
# Builds the image of deploy/Dockerfile's last stage here, without a Docker
# daemon or a registry, then runs it and checks its probes:
#
# - base: Debian 12 (bookworm) minbase made by debootstrap from the Debian
#   mirror apt uses (cached in .cache/rootfs/bookworm, made once);
# - contents as the Dockerfile's final stage: the baton binary built here
#   (target/release/baton), ONNX Runtime's library (.cache/onnxruntime, from
#   PyPI's wheel by scripts/setup.sh), the fleet's pipelines and their models,
#   user 10001, ORT_DYLIB_PATH, the same entrypoint and command;
# - built and committed with buildah (vfs storage) as baton:0.1.0-local;
# - run with `buildah run --isolation chroot` as user 10001 on $IMAGE_ADDR
#   (default 127.0.17.2, a loopback address of its own; ports 8000-8002): /v2/health/live and /v2/health/ready answer 200, an
#   inference answers, and SIGTERM drains (readiness 503) and exits 0.
#
# The Dockerfile's first stages (a Rust toolchain image compiling Baton, a
# Python image fetching ONNX Runtime) need images from Docker Hub, which this
# machine does not reach, and a cold release build; their output is what this
# script takes from the working tree instead.
#
# Skips (exit 0, printing why) without buildah, debootstrap or root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
skip() { echo "SKIP image-local: $*"; exit 0; }
fail() { echo "FAIL image-local: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || skip "needs root (buildah's vfs storage, chroot isolation)"
command -v buildah >/dev/null || skip "no buildah (apt-get install buildah)"
command -v debootstrap >/dev/null || skip "no debootstrap (apt-get install debootstrap)"
buildah --storage-driver vfs info >/dev/null 2>&1 || skip "buildah cannot run here (buildah --storage-driver vfs info fails)"
BATON=${BATON:-target/release/baton}
[[ -x $BATON ]] || skip "no $BATON (cargo build --release -p baton-cli)"
ORT=.cache/onnxruntime/1.31.1/libonnxruntime.so.1.31.1
[[ -f $ORT ]] || skip "no $ORT (scripts/setup.sh)"
B=(buildah --storage-driver vfs)
ADDR=${IMAGE_ADDR:-127.0.17.2}
for port in 8000 8001 8002; do
    ! ss -ltnH "src $ADDR:$port" | grep -q . || fail "$ADDR:$port is in use: set IMAGE_ADDR to a free loopback address"
done

ROOTFS=$PWD/.cache/rootfs/bookworm
if [[ ! -d $ROOTFS ]]; then
    mkdir -p "$(dirname "$ROOTFS")"
    rm -rf "$ROOTFS.part"
    debootstrap --variant=minbase bookworm "$ROOTFS.part" http://deb.debian.org/debian >&2
    mv "$ROOTFS.part" "$ROOTFS"
fi

descendants() { local c; for c in $(ps -o pid= --ppid "$1"); do echo "$c"; descendants "$c"; done; }
run=
cleanup() { # stops what this script started (by pid), removes the working container
    if [[ -n $run ]]; then
        local pid
        for pid in $(descendants "$run") "$run"; do kill -KILL "$pid" 2>/dev/null || true; done
    fi
    "${B[@]}" rm "$ctr" >/dev/null 2>&1 || true
}
ctr=$("${B[@]}" from scratch)
trap cleanup EXIT
mnt=$("${B[@]}" mount "$ctr")
cp -a "$ROOTFS/." "$mnt/"
chroot "$mnt" useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin baton
install -D -m 0755 "$BATON" "$mnt/usr/local/bin/baton"
install -D -m 0644 "$ORT" "$mnt/opt/onnxruntime/libonnxruntime.so.1.31.1"
install -D -m 0644 models/mlp.onnx "$mnt/opt/baton/models/mlp.onnx"
install -D -m 0644 models/stateful.onnx "$mnt/opt/baton/models/stateful.onnx"
install -D -m 0644 -t "$mnt/opt/baton/deploy/pipelines" deploy/pipelines/*.toml
"${B[@]}" umount "$ctr" >/dev/null
"${B[@]}" config --env ORT_DYLIB_PATH=/opt/onnxruntime/libonnxruntime.so.1.31.1 --user 10001:10001 \
    --port 8000 --port 8001 --port 8002 --entrypoint '["/usr/local/bin/baton"]' \
    --cmd 'serve /opt/baton/deploy/pipelines/mlp.toml /opt/baton/deploy/pipelines/stateful.toml --http=0.0.0.0:8000 --grpc=0.0.0.0:8001 --metrics=0.0.0.0:8002 --threads=1 --shutdown-grace=30' \
    "$ctr"
"${B[@]}" commit --quiet "$ctr" baton:0.1.0-local >/dev/null
size=$("${B[@]}" images --format '{{.Size}}' baton:0.1.0-local | head -n1)
echo "built baton:0.1.0-local ($size)"

# Run the image as its user and probe it (chroot isolation: the host's network).
log=$(mktemp)
"${B[@]}" run --isolation chroot --user 10001:10001 "$ctr" -- /usr/local/bin/baton serve \
    /opt/baton/deploy/pipelines/mlp.toml /opt/baton/deploy/pipelines/stateful.toml \
    --http "$ADDR:8000" --grpc "$ADDR:8001" --metrics "$ADDR:8002" --threads 1 --shutdown-grace 5 \
    >"$log" 2>&1 &
run=$!
deadline=$((SECONDS + 120))
until curl -sf -o /dev/null http://$ADDR:8000/v2/health/ready; do
    kill -0 "$run" 2>/dev/null || { cat "$log" >&2; fail "the container exited"; }
    ((SECONDS < deadline)) || { cat "$log" >&2; fail "not ready after 120 s"; }
    sleep 0.2
done
[[ $(curl -s -o /dev/null -w '%{http_code}' http://$ADDR:8000/v2/health/live) == 200 ]] || fail "liveness"
echo "ok: liveness and readiness probes answer 200"
answer=$(curl -sf -H 'Content-Type: application/json' http://$ADDR:8000/v2/models/stateful/infer \
    -d '{"parameters": {"sequence_id": 1, "sequence_start": true, "sequence_end": true}, "inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6, 7, 8]}]}')
grep -q '"name":"y"' <<<"$answer" || fail "inference: $answer"
# The server: the `baton` process among the descendants of the buildah run started above.
server=
for pid in $(descendants "$run"); do [[ $(ps -o comm= -p "$pid") == baton ]] && server=$pid; done
[[ -n $server ]] || fail "no baton process under the buildah run ($run)"
echo "ok: an inference answers; the server runs as $(ps -o user= -p "$server") (uid $(ps -o uid= -p "$server" | tr -d ' '))"
# SIGTERM to the server: it drains and exits 0.
kill -TERM "$server"
status=0
wait "$run" || status=$?
run=
((status == 0)) || fail "exit status $status after SIGTERM"
grep -q "shut down" "$log" || { cat "$log" >&2; fail "no graceful shutdown in the log"; }
echo "ok: SIGTERM: graceful shutdown, exit 0"
echo "PASS image-local"
