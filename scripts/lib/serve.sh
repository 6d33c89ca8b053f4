# Shared set-up of the scripts that run `baton serve` and load it (flood.sh,
# soak.sh, tls-bench.sh); sourced from the repository root:
#
#   source scripts/lib/serve.sh
#   need_tools h2load wrk                # or exit naming the package
#   start_serve NAME ARGS...             # `baton serve ARGS...` in the background, logged to
#                                        # $work/NAME.log; its pid in `server`
#   wait_ready "$work/NAME.log"          # until its banner, or print the log and exit
#   rss_mib PID
#
# It sets `baton` (the release binary, built if missing), `work` (a temporary
# folder) and `pids` (background processes), and on exit kills those and
# removes the folder.

baton=target/release/baton
[ -x "$baton" ] || cargo build --release --locked -p baton-cli --bin baton
work=$(mktemp -d)
pids=()
serve_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap serve_cleanup EXIT

need_tools() { # TOOL... : each must be on PATH (Debian packages: nghttp2-client for h2load, wrk)
    local tool
    for tool in "$@"; do
        command -v "$tool" > /dev/null || { echo "$tool is missing: apt-get install nghttp2-client wrk" >&2; exit 1; }
    done
}

start_serve() { # NAME ARGS...
    local name=$1
    shift
    "$baton" serve "$@" > "$work/$name.log" 2>&1 &
    server=$!
    pids+=("$server")
}

wait_ready() { # LOG : waits up to 30 s for the server's banner
    local _
    for _ in $(seq 300); do
        grep -q "baton serve: models" "$1" && return 0
        sleep 0.1
    done
    cat "$1" >&2
    exit 1
}

rss_mib() { # PID
    awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$1/status"
}
