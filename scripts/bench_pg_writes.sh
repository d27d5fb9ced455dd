#!/usr/bin/env bash
# The write path into a PostgreSQL store against the same writes into an SQLite file (issue 65):
# `slayer-memory import` of N memories and `slayer-index import dbt --load` of a generated
# project of M models, each into an empty store, side by side, as a table.
#
#   scripts/bench_pg_writes.sh [MEMORIES] [MODELS]     (default 100000 and 2000)
#
# A throwaway PostgreSQL cluster on a unix socket (scripts/pg_cluster.sh), as the tests start.
# Embeddings are left out of both (SLAYER_NO_EMBED=1): the model's time is the same for both
# stores and would hide the store's. Wall time and peak RSS from GNU time, median of 3 runs, each
# into a new store (a new schema on the server, a new file).
#
# SLAYER_BIN=<dir>: the binaries in <dir>, no cargo build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
memories=${1:-100000}
models=${2:-2000}
runs=3

if [ -n "${SLAYER_BIN:-}" ]; then
    bin=$(cd "$SLAYER_BIN" && pwd)
else
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins --tests
    bin="${CARGO_TARGET_DIR:-$root/target}/release"
fi
unset SLAYER_FORMAT SLAYER_STORE
export SLAYER_NO_EMBED=1

. scripts/pg_cluster.sh
pg_cluster_start bench_pg_writes
work=$(mktemp -d)
trap 'pg_cluster_stop; rm -rf "$work"' EXIT
echo "CREATE DATABASE bench;" | pg_sql postgres

python3 scripts/gen_memories.py "$memories" > "$work/memories.jsonl"
python3 scripts/gen_dbt.py "$work/dbt" "$models" 20

# One timed write into a new store: prints "seconds peak_MiB".
timed() { # store cache-dir binary args...
    local store=$1 cache=$2
    shift 2
    local b=$1
    shift
    SLAYER_STORE=$store SLAYER_CACHE_DIR=$cache /usr/bin/time -f "%e %M" -o "$work/time" \
        "$bin/$b" -q "$@" > /dev/null
    awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$work/time"
}
median() { sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'; }

measure() { # label binary args...
    local label=$1
    shift
    local r sqlite=() pg=()
    for r in $(seq 1 "$runs"); do
        sqlite+=("$(timed "$work/s-$label-$r.db" "$work/c-s-$label-$r" "$@")")
        pg+=("$(timed "$(pg_url bench)?schema=w_${label}_$r" "$work/c-p-$label-$r" "$@")")
    done
    local s p
    s=$(printf '%s\n' "${sqlite[@]}" | median)
    p=$(printf '%s\n' "${pg[@]}" | median)
    echo "$label ${s% *} ${s#* } ${p% *} ${p#* }"
}

{
    echo "| write | SQLite s | SQLite MiB | PostgreSQL s | PostgreSQL MiB | PG / SQLite |"
    echo "|---|---|---|---|---|---|"
    for row in "memories slayer-memory import $work/memories.jsonl" \
        "models slayer-index import dbt $work/dbt --load"; do
        # shellcheck disable=SC2086
        set -- $row
        label=$1
        shift
        read -r _ st sm pt pm < <(measure "$label" "$@")
        name=$([ "$label" = memories ] && echo "import $memories memories" || echo "import dbt --load, $models models")
        echo "| $name | $st | $sm | $pt | $pm | $(awk -v a="$pt" -v b="$st" 'BEGIN {printf "%.2f", a / b}') |"
    done
}
