#!/usr/bin/env bash
# Fuzzes Baton's hostile-input surfaces with cargo-fuzz (libFuzzer + AddressSanitizer).
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]   # default: all targets, 600 s each, one after another
#   scripts/fuzz.sh replay                   # replay the committed corpus (stable, what `cargo test` runs)
#   scripts/fuzz.sh cmin                     # only minimize every target's corpus
#
# Targets: config_loader, v2_json_request, v2_binary_request, v2_grpc_request, stitch_shapes (fuzz/targets/src/lib.rs).
# Each run starts from fuzz/corpus/TARGET (committed) and fuzz/seeds/TARGET, adds what it finds
# to fuzz/corpus/TARGET, then minimizes that folder with `cargo fuzz cmin` (-set_cover_merge with
# -use_counters=0: the fewest files that keep every edge reached, so the committed corpus stays
# small). A crash, a timeout
# (-timeout), an allocation over -malloc_limit_mb or a resident size over -rss_limit_mb stops the
# run and leaves the input in fuzz/artifacts/TARGET/; reproduce it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-...
# then fix the product code and keep the input as fuzz/regressions/TARGET/NAME-OF-THE-BUG.
#
# cargo-fuzz needs nightly compiler flags (-Zsanitizer); RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them. One fuzzer process at a time (no -jobs/-workers): the machine is shared.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TARGETS=(config_loader v2_json_request v2_binary_request v2_grpc_request stitch_shapes)
target="${1:-all}"
seconds="${2:-600}"

if [[ "$target" == replay ]]; then
    exec cargo test -p baton-fuzz-targets --locked
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi
export RUSTC_BOOTSTRAP=1

# Libfuzzer flags shared by runs and minimization: inputs up to 8 KiB, 10 s per input,
# 256 MiB per allocation, 512 MiB resident.
LIMITS=(-max_len=8192 -timeout=10 -malloc_limit_mb=256 -rss_limit_mb=512)
# Minimizing runs every input in one process, whose resident size grows with AddressSanitizer's
# quarantine (up to 256 MiB) whatever the inputs do: more room there, the same per-allocation limit.
MERGE_LIMITS=(-max_len=8192 -timeout=10 -malloc_limit_mb=256 -rss_limit_mb=2048)

fuzz_one() {
    local t="$1"
    mkdir -p "fuzz/corpus/$t"
    echo "== $t: ${seconds}s"
    (cd fuzz && cargo fuzz run "$t" "corpus/$t" "seeds/$t" -- "${LIMITS[@]}" -max_total_time="$seconds" -print_final_stats=1)
    minimize_one "$t"
}

minimize_one() {
    local t="$1"
    echo "== $t: minimizing the corpus"
    (cd fuzz && cargo fuzz cmin "$t" "corpus/$t" -- "${MERGE_LIMITS[@]}" -set_cover_merge=1 -use_counters=0)
    echo "== $t: $(find "fuzz/corpus/$t" -type f | wc -l) corpus files, $(cat "fuzz/corpus/$t"/* | wc -c) bytes"
}

if [[ "$target" == cmin ]]; then
    for t in "${TARGETS[@]}"; do minimize_one "$t"; done
elif [[ "$target" == all ]]; then
    for t in "${TARGETS[@]}"; do fuzz_one "$t"; done
elif [[ " ${TARGETS[*]} " == *" $target "* ]]; then
    fuzz_one "$target"
else
    echo "unknown target \`$target\` (targets: ${TARGETS[*]}, all, cmin, replay)" >&2
    exit 2
fi
