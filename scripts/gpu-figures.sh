#!/usr/bin/env bash
# The GPU figures of docs/gpu.md, each a side-by-side in one run, into DIR (default /tmp/baton-figures).
# Runs on a machine with a GPU and ONNX Runtime's GPU build (scripts/setup.sh --gpu, or as
# scripts/device-run.sh sets it up: ORT_DYLIB_PATH, BATON_CUDA_LIBS, BATON_BIN, COLLAB_BIN).
#
#   1. MLP 4096 wide on CUDA: Baton (greedy, collaborative) vs raw ONNX Runtime-CUDA, c=1 p50 and saturation;
#      then the same node replaying a CUDA graph per batch size (cuda_graph = true)
#   2. PP-OCRv4 detection (3x640x640) and recognition (3x48x320) on CUDA: the same; then, at the
#      concurrencies whose batches change size, the same node with one session for every size
#      (session_per_size = false) against its default of a session per size
#   3. the collab pipeline placed by the planner from profiles measured here (PLACED, default
#      .device/placed.toml; else configs/collab-gpu.toml): capacity (sessions/s) against the
#      all-CPU placement of the same planner on this machine's cores (PLACED_CPU, default
#      .device/placed-cpu.toml; else configs/collab.toml); final-chunk p99 at 90% of the GPU
#      capacity, collaborative vs greedy; and the GPU placement's capacity with the text node's
#      images padded to 160 x 960 (`multiple`: one detector shape per batch size)
#   4. the MLP of configs/mlp.toml on the CPU with 1, 2, 4, 8, 16 workers vs raw ONNX Runtime on the
#      same cores: N raw loops at once (--raw-loops N, one per worker core, batch 32), their rows/s
#      summed (N loops sharing the memory bandwidth, not N x one loop)
#   5. (not in the default list) cores kept awake on this machine's CPUs: collab_early's stream load at
#      10 and 50% of its closed-loop capacity, three rounds alternating the runtime with and without
#      --keep-cores-awake on the same arrivals (scripts/awake-ab.sh; docs/scheduling.md, "Cores kept
#      awake"); about a minute
#
# FIGURES=1,2,3,4 picks some (FIGURES=5 the fifth); DURATION (default 5s) is each bench point's length; OPEN_LOOP_S
# (default 20) each open-loop collab run's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${1:-/tmp/baton-figures}
mkdir -p "$DIR" .device/configs
BATON=${BATON_BIN:-target/release/baton}
COLLAB=${COLLAB_BIN:-target/release/examples/collab}
FIGURES=${FIGURES:-1,2,3,4}
DURATION=${DURATION:-5s}
want() { [[ ,$FIGURES, == *,$1,* ]]; }
log() { echo "$ $*" | tee -a "$DIR/commands.txt"; }
run() { log "$@"; "$@"; }

if want 1 || want 2; then
    [[ -f models/mlp4096.onnx && -f models/ocr_det_640.onnx && -f models/ocr_rec_320.onnx ]] ||
        run python3 scripts/make_gpu_models.py models
fi

# Ratios against the start's raw sweep (`--raw-ratios start`): raw measured beside every point
# would add about 2 s a point, past the device run's rehearsed time.
bench_gpu() { # NAME CONFIG CONCURRENCY RAW_BATCHES
    run "$BATON" bench "$2" --concurrency "$3" --policy greedy,collaborative --raw --raw-ratios start --raw-batches "$4" \
        --duration "$DURATION" --client-threads 8 --json "$DIR/$1.json" --csv "$DIR/$1.csv" 2>&1 | tee "$DIR/$1.txt"
}

if want 1; then
    bench_gpu mlp4096 configs/gpu/mlp4096.toml 1,32,256,512 1,32,64,128
    # A CUDA graph per batch size: each session bound once to buffers of its own.
    config=.device/configs/mlp4096-graphs.toml
    sed -e 's/^cuda = { tf32 = false }/cuda = { tf32 = false, cuda_graph = true }/' \
        -e "s|\"\.\./\.\./models/|\"$PWD/models/|" configs/gpu/mlp4096.toml > "$config"
    grep -q 'cuda_graph = true' "$config"
    bench_gpu mlp4096-graphs "$config" 1,32,256,512 1,32,64,128
fi
if want 2; then
    bench_gpu ocr-det configs/gpu/ocr-det.toml 1,4,16,64 1,2,4,8
    bench_gpu ocr-rec configs/gpu/ocr-rec.toml 1,8,32,256 1,8,16,32
    # One session for all sizes: each change of size rebuilds cuDNN's convolution plans.
    for model in ocr-det:4,16 ocr-rec:8,32; do
        name=${model%%:*}
        config=.device/configs/$name-one-session.toml
        sed -e 's/^provider = "cuda"/provider = "cuda"\nsession_per_size = false/' \
            -e "s|\"\.\./\.\./models/|\"$PWD/models/|" "configs/gpu/$name.toml" > "$config"
        run "$BATON" bench "$config" --concurrency "${model#*:}" --policy greedy --duration "$DURATION" \
            --client-threads 8 --json "$DIR/$name-one-session.json" 2>&1 | tee "$DIR/$name-one-session.txt"
    done
fi
if want 3; then
    PLACED=${PLACED:-.device/placed.toml}
    PLACED_CPU=${PLACED_CPU:-.device/placed-cpu.toml}
    [[ -f $PLACED ]] || PLACED=configs/collab-gpu.toml
    [[ -f $PLACED_CPU ]] || PLACED_CPU=configs/collab.toml
    capacity() { # CONFIG -> sessions/s of 64 unpaced sessions, collaborative
        run "$COLLAB" --config "$1" --capacity 64 --policies collaborative | tee -a "$DIR/collab-capacity.txt" |
            sed -n 's/.*= \([0-9.]*\) sessions\/s.*/\1/p' | tail -1
    }
    gpu_capacity=$(capacity "$PLACED")
    cpu_capacity=$(capacity "$PLACED_CPU")
    echo "collab capacity: GPU ($PLACED) $gpu_capacity sessions/s, CPU ($PLACED_CPU) $cpu_capacity sessions/s" |
        tee -a "$DIR/collab-capacity.txt"
    # The planner's GPU placement with the text node's images padded to one size (a detector
    # shape per batch size; configs/collab-gpu.toml pads so already).
    if [[ $PLACED == .device/placed.toml ]] && ! grep -q '^multiple' "$PLACED"; then
        bucketed=.device/placed-bucketed.toml
        sed '/^\[\[nodes\.text\.pad\]\]/a multiple = [160, 960]' "$PLACED" > "$bucketed"
        echo "collab capacity: GPU, images padded to 160 x 960 ($bucketed) $(capacity "$bucketed") sessions/s" |
            tee -a "$DIR/collab-capacity.txt"
    fi
    rate=$(python3 -c "print(round($gpu_capacity * 90 / 100, 2))")
    run "$COLLAB" --config "$PLACED" --rate "$rate" --duration "${OPEN_LOOP_S:-20}" \
        --policies collaborative,greedy 2>&1 | tee "$DIR/collab-gpu-90.txt"
fi
if want 4; then
    cores=$(nproc)
    for workers in 1 2 4 8 16; do
        ((workers < cores)) || workers=$((cores - 1))
        config=.device/configs/mlp-cpu-$workers.toml
        list=$(seq -s, 1 "$workers")
        sed -e "s/^cores = \[1\].*/cores = [$list]\nworkers = $workers/" -e "s|\"\.\./models/|\"$PWD/models/|" configs/mlp.toml > "$config"
        clients=$(seq -s, $((workers + 1)) $((cores - 1)))
        client_cores=()
        [[ -n $clients ]] && client_cores=(--client-cores "$clients")
        run "$BATON" bench "$config" --concurrency $((workers * 64)) --policy greedy,collaborative \
            --raw --raw-ratios start --raw-loops "$workers" --raw-batches 32 \
            --duration "$DURATION" --client-threads 4 "${client_cores[@]}" \
            --json "$DIR/mlp-cpu-$workers.json" 2>&1 | tee "$DIR/mlp-cpu-$workers.txt"
    done
    # workers, raw rows/s of N loops at once, each policy's rows/s and its ratio to that raw.
    python3 - "$DIR" <<'PY' | tee "$DIR/mlp-cpu-summary.txt"
import glob, json, re, sys
files = sorted(glob.glob(f"{sys.argv[1]}/mlp-cpu-*.json"), key=lambda f: int(re.findall(r"(\d+)\.json$", f)[0]))
print("workers  raw rows/s (N loops)  policy         rows/s  x raw")
for f in files:
    r = json.load(open(f))
    for p in r["points"]:
        # The raw figure the ratio divides by: measured beside the point (the default), else the sweep's.
        beside = p.get("raw_beside")
        raw = (beside["before"]["rows_per_s"] + beside["after"]["rows_per_s"]) / 2 if beside else r["raw"]["bottleneck"]["rows_per_s"]
        print(f"{r['raw']['loops']:>7}  {raw:>20,.0f}  {p['policy']:<13} {p['rows_per_s']:>8,.0f}  {p['ratio_to_raw']:.2f}")
PY
fi
if want 5; then
    run env DURATION="$DURATION" BATON_BIN="$BATON" scripts/awake-ab.sh "$DIR/awake" configs/collab_early.toml 10,50 \
        --stream-chunks 16 --stream-inputs chunk --stream-fraction 0.2
fi
echo "figures in $DIR (commands in $DIR/commands.txt)"
