#!/usr/bin/env bash
# The agent path (release build), printed as a table: one long-lived slayer-search (`--batch -`
# and `mcp`) answering 500 requests on a 200 x 20 catalog with 10,000 memories, per-request
# median and p95 for `--channels entities,text` and all three channels, with and without another
# process saving a memory every 100 ms. Embedding rows are random unit vectors (the question is
# embedded for real by the local model).
#
#   scripts/bench_agent.sh [MEMORIES] [REQUESTS]     (default 10000 500)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
memories=${1:-10000}
requests=${2:-500}

# --tests too, so features resolve as in `cargo test` and nothing is compiled twice.
scripts/fetch-duckdb.sh > /dev/null
cargo build --release --locked -q --workspace --bins --tests
scripts/fetch-model.sh > /dev/null
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT
export SLAYER_NO_EMBED=1
export SLAYER_STORE="$work/agent.db"
python3 scripts/gen_catalog.py 200 20 > "$work/catalog.jsonl"
"$bin/slayer-index" -q load "$work/catalog.jsonl" > /dev/null
python3 scripts/bench_data.py memories "$memories" > "$work/memories.jsonl"
"$bin/slayer-memory" -q import "$work/memories.jsonl" > /dev/null
rows=$(python3 scripts/bench_data.py fill-rows "$SLAYER_STORE")

echo "slayer-search as a long-lived process: 200 models x 20 columns, $memories memories ($rows embedding rows), $requests requests, $(nproc) cores"
echo
printf '| %-5s | %-22s | %-16s | %11s | %8s | %6s |\n' "mode" "channels" "concurrent writer" "median ms" "p95 ms" "writes"
printf '|%s|%s|%s|%s|%s|%s|\n' "-------" "------------------------" "------------------" "-------------" "----------" "--------"
for mode in batch mcp; do
    for channels in entities,text entities,text,dense; do
        for writer in 0 1; do
            read -r median p95 writes < <(python3 scripts/bench_agent.py "$bin" "$mode" "$channels" "$writer" "$requests")
            printf '| %-5s | %-22s | %-16s | %11s | %8s | %6s |\n' "$mode" "$channels" \
                "$([ "$writer" = 1 ] && echo "save every 100 ms" || echo "none")" "$median" "$p95" "$writes"
        done
    done
done
