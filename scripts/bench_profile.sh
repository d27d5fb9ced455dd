#!/usr/bin/env bash
# Benchmarks of slayer-profile (release build), printed as a table.
#
#   scripts/bench_profile.sh [ROWS]     (default 1000000)
#
# Sources (generated once into a temp folder by the gen_bench_sources example): one DuckDB
# table of ROWS rows x 20 columns, and a SQLite database of 50 tables x 2,000 rows x 8 columns.
# Each source is profiled with --threads 1 and --threads 2; wall time and peak RSS from GNU
# time, median of 3 runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rows=${1:-1000000}

# --tests too, so features resolve as in `cargo test` and DuckDB is not compiled twice.
scripts/fetch-duckdb.sh > /dev/null
cargo build --release --locked -q --workspace --bins --tests --examples
target="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$target/examples/gen_bench_sources" "$work" "$rows" 2> /dev/null

measure() { # label source threads
    local label=$1 source=$2 threads=$3 walls=() rss=() i
    for i in 1 2 3; do
        /usr/bin/time -f "%e %M" -o "$work/time" "$target/slayer-profile" -q --no-progress --threads "$threads" "$source" > "$work/out.jsonl"
        read -r wall kb < "$work/time"
        walls+=("$wall"); rss+=("$kb")
    done
    local w m
    w=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p)
    m=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n 2p)
    printf '| %-40s | %7s | %8s | %9.1f |\n' "$label" "$threads" "$w" "$(awk -v k="$m" 'BEGIN{print k/1024}')"
    echo "$w" > "$work/last"
}

echo "slayer-profile: $(nproc) cores"
echo
printf '| %-40s | %7s | %8s | %9s |\n' "source" "threads" "wall s" "peak MiB"
printf '|%s|%s|%s|%s|\n' "------------------------------------------" "---------" "----------" "-----------"
for src in "duckdb: 1 table, $rows rows x 20 cols|$work/wide.duckdb" "sqlite: 50 tables x 2000 rows x 8 cols|$work/many.sqlite"; do
    label=${src%%|*}; file=${src##*|}
    measure "$label" "$file" 1; one=$(cat "$work/last")
    measure "$label" "$file" 2; two=$(cat "$work/last")
    echo "|   speed-up of --threads 2 over 1: $(awk -v a="$one" -v b="$two" 'BEGIN{printf "%.2fx", a/b}')"
done
