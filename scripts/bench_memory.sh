#!/usr/bin/env bash
# Benchmarks of slayer-memory (release build), printed as a table.
#
#   scripts/bench_memory.sh [IMPORT_N] [STORE_N]     (default 100000 and 10000)
#
# 1. `slayer-memory import` of IMPORT_N synthetic memories into a store holding the demo shop
#    catalog: wall time, throughput, peak RSS (one transaction; docs rendered; index synced).
# 2. Whole-process latency of one `slayer-memory save` (resolution, allocation, doc, index
#    sync) on a store already holding STORE_N memories: median and max of 20 saves.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
import_n=${1:-100000}
store_n=${2:-10000}

# --tests too, so features resolve as in `cargo test` and nothing is compiled twice.
scripts/fetch-duckdb.sh > /dev/null
cargo build --release --locked -q --workspace --bins --tests
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT
# Memories are embedded on import by default; these benchmarks measure the store and the index.
export SLAYER_NO_EMBED=1

python3 scripts/gen_memories.py "$import_n" > "$work/import.jsonl"
python3 scripts/gen_memories.py "$store_n" > "$work/store.jsonl"

export SLAYER_STORE="$work/a.db"
"$bin/slayer-index" -q import-slayer examples/shop/slayer > /dev/null
/usr/bin/time -f "%e %M" -o "$work/time" "$bin/slayer-memory" -q import "$work/import.jsonl" > /dev/null
read -r wall kb < "$work/time"

export SLAYER_STORE="$work/b.db"
"$bin/slayer-index" -q import-slayer examples/shop/slayer > /dev/null
"$bin/slayer-memory" -q import "$work/store.jsonl" > /dev/null
times=()
for i in $(seq 1 20); do
    start=$(date +%s%N)
    "$bin/slayer-memory" -q save --learning "Latency probe $i: returned orders keep totals" \
        --entities "shop.orders.status, revenue:sum" > /dev/null
    times+=($(( ($(date +%s%N) - start) / 1000 )))
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 10p)
max=$(printf '%s\n' "${times[@]}" | sort -n | tail -1)

echo "slayer-memory: $(nproc) cores"
echo
printf '| %-52s | %10s | %14s | %9s |\n' "scenario" "wall" "throughput" "peak MiB"
printf '|%s|%s|%s|%s|\n' "------------------------------------------------------" "------------" "----------------" "-----------"
printf '| %-52s | %9ss | %10s /s | %9.1f |\n' "import $import_n memories (one transaction + index)" "$wall" \
    "$(awk -v n="$import_n" -v w="$wall" 'BEGIN{printf "%d", n/w}')" "$(awk -v k="$kb" 'BEGIN{print k/1024}')"
printf '| %-52s | %8.1fms | %14s | %9s |\n' "save on a store of $store_n memories (median of 20)" \
    "$(awk -v u="$median" 'BEGIN{print u/1000}')" "max $(awk -v u="$max" 'BEGIN{printf "%.1f", u/1000}')ms" "-"
