#!/usr/bin/env bash
# Benchmarks of slayer-search (release build), printed as a table.
#
#   scripts/bench_search.sh [SIZES]      (default "1000 10000 100000" memories)
#
# A synthetic catalog of 200 models x 20 columns plus N memories (each tagged with 1-3 of the
# catalog's models). Per size: whole-process latency of `--question` and `--entity` searches
# (median and p95 of 50 calls), peak RSS of one question search, `--batch` throughput over 500
# requests, and what the original's design (a fresh index per call) would cost, measured as
# `slayer-index rebuild` of the same docs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sizes=${1:-"1000 10000 100000"}

# --tests too, so features resolve as in `cargo test` and nothing is compiled twice.
scripts/fetch-duckdb.sh > /dev/null
cargo build --release --locked -q --workspace --bins --tests
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT
# Memories are embedded on import by default; these benchmarks measure the store and the index.
export SLAYER_NO_EMBED=1
python3 scripts/gen_catalog.py 200 20 > "$work/catalog.jsonl"

gen_memories() { # N
    python3 scripts/bench_data.py memories "$1"
}

stats() { # file of microseconds -> "median p95" in ms
    sort -n "$1" | awk '{a[NR]=$1} END {printf "%.1f %.1f", a[int((NR+1)/2)]/1000, a[int(NR*0.95+0.5)]/1000}'
}

time_calls() { # out-file args...
    local out=$1; shift
    : > "$out"
    for i in $(seq 1 50); do
        local s=$(date +%s%N)
        "$bin/slayer-search" "$@" > /dev/null
        echo $(( ($(date +%s%N) - s) / 1000 )) >> "$out"
    done
}

echo "slayer-search: 200 models x 20 columns, $(nproc) cores"
echo
printf '| %9s | %-22s | %-22s | %9s | %12s | %20s |\n' "memories" "question med/p95 ms" "entity med/p95 ms" "peak MiB" "batch req/s" "index per call (s)"
printf '|%s|%s|%s|%s|%s|%s|\n' "-----------" "------------------------" "------------------------" "-----------" "--------------" "----------------------"
for n in $sizes; do
    export SLAYER_STORE="$work/s$n.db"
    "$bin/slayer-index" -q load "$work/catalog.jsonl" > /dev/null
    gen_memories "$n" > "$work/m$n.jsonl"
    "$bin/slayer-memory" -q import "$work/m$n.jsonl" > /dev/null
    "$bin/slayer-search" --question warmup > /dev/null
    time_calls "$work/q" --question "which refunds by customer region?"
    time_calls "$work/e" --entity bench.model_007 --entity bench.model_042
    /usr/bin/time -f "%M" -o "$work/rss" "$bin/slayer-search" --question "which refunds by customer region?" > /dev/null
    python3 - > "$work/batch.jsonl" <<'PY'
import json
qs = ["refund by region", "invoice currency", "shipment warehouse status", "coupon discount tax"]
for i in range(500):
    print(json.dumps({"question": qs[i % 4]} if i % 2 else {"entities": [f"bench.model_{i % 200:03d}"]}))
PY
    s=$(date +%s%N)
    "$bin/slayer-search" --batch "$work/batch.jsonl" > /dev/null
    batch_ms=$(( ($(date +%s%N) - s) / 1000000 ))
    s=$(date +%s%N)
    "$bin/slayer-index" -q rebuild
    rebuild_ms=$(( ($(date +%s%N) - s) / 1000000 ))
    printf '| %9s | %-22s | %-22s | %9.1f | %12s | %20s |\n' "$n" "$(stats "$work/q")" "$(stats "$work/e")" \
        "$(awk -v k="$(cat "$work/rss")" 'BEGIN{print k/1024}')" "$(awk -v ms="$batch_ms" 'BEGIN{printf "%d", 500000/ms}')" \
        "$(awk -v ms="$rebuild_ms" 'BEGIN{printf "%.2f", ms/1000}')"
done
