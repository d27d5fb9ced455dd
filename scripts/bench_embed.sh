#!/usr/bin/env bash
# Benchmarks of slayer-embed and of search's channel 3 (release build), printed as tables.
#
#   scripts/bench_embed.sh
#
# 1. Local model throughput on catalog docs (20 models x 20 columns = 421 docs), 1 vs 2 threads.
# 2. `refresh --all` on an unchanged store of ~104,000 docs (100,000 memories + a 200 x 20
#    catalog), run with no model installed: any provider call would fail the run.
# 3. Whole-process `slayer-search --question` at 10,000 memories with channel 3 on (every doc
#    holds a 384-dim row) and off, and the model's load alone (`slayer-embed text`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/fetch-duckdb.sh > /dev/null
cargo build --release --locked -q --workspace --bins --tests
scripts/fetch-model.sh > /dev/null
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL
export SLAYER_NO_EMBED=1

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
stats() { # file of microseconds -> "median p95" in ms
    sort -n "$1" | awk '{a[NR]=$1} END {printf "%.1f / %.1f", a[int((NR+1)/2)]/1000, a[int(NR*0.95+0.5)]/1000}'
}

echo "slayer-embed: $(nproc) cores"
echo
echo "| local model, 421 catalog docs, batch 32 | wall | docs/s |"
echo "|---|---|---|"
python3 scripts/gen_catalog.py 20 20 > "$work/small.jsonl"
export SLAYER_STORE="$work/small.db"
"$bin/slayer-index" -q load "$work/small.jsonl" > /dev/null
docs=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from docs').fetchone()[0])" "$SLAYER_STORE")
for threads in 1 2; do
    python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from embeddings'); c.commit()" "$SLAYER_STORE"
    s=$(date +%s%N)
    "$bin/slayer-embed" -q refresh --all --threads "$threads" > /dev/null
    ms=$(ms_since "$s")
    printf '| --threads %s | %.1f s | %.1f |\n' "$threads" "$(awk -v m="$ms" 'BEGIN{print m/1000}')" "$(awk -v m="$ms" -v d="$docs" 'BEGIN{print d*1000/m}')"
done

echo
python3 scripts/gen_catalog.py 200 20 > "$work/catalog.jsonl"
gen_memories() { # N
    python3 scripts/bench_data.py memories "$1"
}
# Rows for every doc: the right hash (so refresh sees them unchanged) and a random unit vector.
fill_rows() { # store
    python3 scripts/bench_data.py fill-rows "$1"
}

export SLAYER_STORE="$work/big.db"
"$bin/slayer-index" -q load "$work/catalog.jsonl" > /dev/null
gen_memories 100000 > "$work/m100k.jsonl"
"$bin/slayer-memory" -q import "$work/m100k.jsonl" > /dev/null
rows=$(fill_rows "$SLAYER_STORE")
: > "$work/refresh"
for i in 1 2 3; do
    s=$(date +%s%N)
    SLAYER_MODEL_DIR=/nonexistent "$bin/slayer-embed" -q refresh --all > "$work/out.jsonl"
    echo $(( ($(date +%s%N) - s) / 1000 )) >> "$work/refresh"
done
unchanged=$(grep -c '"unchanged"' "$work/out.jsonl")
echo "| refresh --all, unchanged store | docs | median of 3 | provider calls |"
echo "|---|---|---|---|"
printf '| %s rows | %s unchanged | %.2f s | 0 (no model installed) |\n' "$rows" "$unchanged" \
    "$(sort -n "$work/refresh" | awk 'NR==2{print $1/1000000}')"

echo
export SLAYER_STORE="$work/s10k.db"
"$bin/slayer-index" -q load "$work/catalog.jsonl" > /dev/null
head -10000 "$work/m100k.jsonl" | "$bin/slayer-memory" -q import - > /dev/null
fill_rows "$SLAYER_STORE" > /dev/null
time_calls() { # out-file env-assignments... -- args...
    local out=$1; shift
    : > "$out"
    for i in $(seq 1 20); do
        local s=$(date +%s%N)
        env "$@" > /dev/null
        echo $(( ($(date +%s%N) - s) / 1000 )) >> "$out"
    done
}
time_calls "$work/on" "$bin/slayer-search" --question "which refunds by customer region?"
time_calls "$work/off" SLAYER_MODEL_DIR=/nonexistent "$bin/slayer-search" --question "which refunds by customer region?"
time_calls "$work/load" "$bin/slayer-embed" text "which refunds by customer region?"
echo "| 10,000 memories + 4,401 entity docs, 384-dim rows | median / p95 ms (20 calls) |"
echo "|---|---|"
echo "| slayer-search --question, channel 3 on | $(stats "$work/on") |"
echo "| slayer-search --question, channel 3 off (no model) | $(stats "$work/off") |"
echo "| slayer-embed text (model load + one short text) | $(stats "$work/load") |"
