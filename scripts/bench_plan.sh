#!/usr/bin/env bash
# The query planner's cost (`slayer-search --plan auto`, seed 002), printed as a table: whole
# process, 200 x 20 catalog, N memories (default 10,000) with an embedding row for every doc
# (random unit vectors; the question is embedded for real), median and p95 of 30 calls per
# configuration, calls interleaved so machine noise hits every row alike.
#
#   scripts/bench_plan.sh [N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-10000}
bin="${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
if [ -z "${SLAYER_BIN:-}" ]; then
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins --tests
fi
scripts/fetch-model.sh > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT SLAYER_LLM_MODEL
export SLAYER_NO_EMBED=1 SLAYER_STORE="$work/s.db"
python3 scripts/gen_catalog.py 200 20 > "$work/catalog.jsonl"
"$bin/slayer-index" -q load "$work/catalog.jsonl" > /dev/null
python3 scripts/bench_data.py memories "$n" > "$work/m.jsonl"
"$bin/slayer-memory" -q import "$work/m.jsonl" > /dev/null
rows=$(python3 scripts/bench_data.py fill-rows "$SLAYER_STORE")
question="which refunds by customer region, not test?"
inject='{"anchors": ["refund", "region"], "synonyms": ["customer", "payment"], "negatives": {"soft": ["test"]}}'
configs=(
    "off, entities+text|--channels entities,text"
    "off, all channels|"
    "auto, rerank none|--plan auto --rerank none"
    "auto, rerank local|--plan auto --rerank local"
    "auto, injected, rerank none|--plan auto --rerank none --inject $inject"
    "auto, injected, rerank local|--plan auto --rerank local --inject $inject"
)
"$bin/slayer-search" --question warmup > /dev/null
for i in "${!configs[@]}"; do : > "$work/t$i"; done
for _ in $(seq 1 30); do
    for i in "${!configs[@]}"; do
        IFS='|' read -r _ flags <<< "${configs[$i]}"
        args=()
        if [ -n "$flags" ]; then
            # The injected JSON is one argument: split the flags on the first spaces only.
            read -r -a args <<< "${flags%% --inject *}"
            [[ "$flags" == *" --inject "* ]] && args+=(--inject "${flags#* --inject }")
        fi
        s=$(date +%s%N)
        "$bin/slayer-search" --question "$question" "${args[@]}" > /dev/null
        echo $(( ($(date +%s%N) - s) / 1000 )) >> "$work/t$i"
    done
done
stats() { sort -n "$1" | awk '{a[NR]=$1} END {printf "%.1f | %.1f", a[int((NR+1)/2)]/1000, a[int(NR*0.95+0.5)]/1000}'; }
echo "slayer-search --plan: 200 models x 20 columns, $n memories, $rows embedding rows, $(nproc) cores"
echo
printf '| configuration | median ms | p95 ms |\n|---|---|---|\n'
for i in "${!configs[@]}"; do
    IFS='|' read -r name _ <<< "${configs[$i]}"
    printf '| %s | %s |\n' "$name" "$(stats "$work/t$i")"
done
