#!/usr/bin/env bash
# Benchmarks of slayer-index load (release build), printed as a table.
#
#   scripts/bench.sh [MODELS] [COLUMNS]     (default 200 x 20)
#
# Scenarios: a cold load into an empty store; the same records again (must write nothing to
# the index); the records with one column description changed (one doc re-rendered and
# re-indexed). Wall time and peak RSS come from GNU time; each scenario runs 3 times on a fresh
# copy of its starting store and the median is shown.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
models=${1:-200}
columns=${2:-20}

scripts/fetch-duckdb.sh > /dev/null
cargo build --release --locked -q --workspace --bins --tests
bin="${CARGO_TARGET_DIR:-$root/target}/release/slayer-index"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT

python3 scripts/gen_catalog.py "$models" "$columns" > "$work/catalog.jsonl"
python3 scripts/gen_catalog.py "$models" "$columns" --touch 7 > "$work/touched.jsonl"
"$bin" --store "$work/base.db" -q load "$work/catalog.jsonl" > /dev/null

measure() { # name input start-store(empty = none)
    local name=$1 input=$2 start=$3 runs=() rss=() changed="" i
    for i in 1 2 3; do
        rm -rf "$work/run.db" "$work/run.db-wal" "$work/run.db-shm" "$work/run.db.index"
        if [ -n "$start" ]; then
            cp "$work/base.db" "$work/run.db"
            cp -r "$work/base.db.index" "$work/run.db.index"
        fi
        local meta_before=""
        [ -f "$work/run.db.index/meta.json" ] && meta_before=$(cat "$work/run.db.index/meta.json")
        /usr/bin/time -f "%e %M" -o "$work/time" "$bin" --store "$work/run.db" -q load "$input" > "$work/out.jsonl"
        read -r wall kb < "$work/time"
        runs+=("$wall"); rss+=("$kb")
        changed=$(wc -l < "$work/out.jsonl")
        if [ -n "$meta_before" ] && [ "$meta_before" = "$(cat "$work/run.db.index/meta.json")" ]; then
            index_written="no"
        else
            index_written="yes"
        fi
    done
    local med_wall med_rss
    med_wall=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
    med_rss=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n 2p)
    printf '| %-34s | %8s | %9.1f | %12s | %13s |\n' "$name" "$med_wall" "$(awk -v k="$med_rss" 'BEGIN{print k/1024}')" "$changed" "$index_written"
}

docs=$(( 1 + models * (columns + 2) ))
echo "slayer-index load: $models models x $columns columns ($docs docs), $(nproc) cores"
echo
printf '| %-34s | %8s | %9s | %12s | %13s |\n' "scenario" "wall s" "peak MiB" "docs changed" "index written"
printf '|%s|%s|%s|%s|%s|\n' "------------------------------------" "----------" "-----------" "--------------" "---------------"
measure "cold load into an empty store" "$work/catalog.jsonl" ""
measure "re-load identical records" "$work/catalog.jsonl" base
measure "re-load, one description changed" "$work/touched.jsonl" base
