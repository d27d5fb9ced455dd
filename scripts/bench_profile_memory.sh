#!/usr/bin/env bash
# Time and peak memory of slayer-profile on one Parquet fact table as its rows grow (issue 65),
# printed as a table: docs/performance/profile-memory.md.
#
#   scripts/bench_profile_memory.sh [ROWS...]     (default 1000000 10000000 50000000)
#
# The files (20 columns, about 55 bytes a row: 10^7 rows make 540 MB) are written by the
# gen_fact_parquet example into $BENCH_DIR (default ${TMPDIR:-/tmp}/slayer-profile-memory) and
# kept there for the next run (5*10^7 rows take 2.7 GB and two minutes to write). Each build
# profiles each file ROUNDS times (default 3), the builds taking turns, and the median wall
# time and peak RSS (GNU time) are printed. BASE_BIN names another slayer-profile to time in
# the same run (e.g. one built from main), labelled BASE_LABEL (default "before"); LIMITS="64MiB 1GiB" adds rows of this build
# under those --memory-limit values; SKIP_BUILD=1 times the binary already built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000 50000000)
rounds=${ROUNDS:-3}
dir="${BENCH_DIR:-${TMPDIR:-/tmp}/slayer-profile-memory}"
mkdir -p "$dir"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q -p slayer-profile --bins --examples
fi
target="${CARGO_TARGET_DIR:-$root/target}/release"
for rows in "${sizes[@]}"; do
    [ -s "$dir/fact_$rows.parquet" ] || "$target/examples/gen_fact_parquet" "$dir/fact_$rows.parquet" "$rows"
done

# label|binary|extra arguments
builds=()
[ -n "${BASE_BIN:-}" ] && builds+=("${BASE_LABEL:-before}|$BASE_BIN|")
builds+=("this|$target/slayer-profile|")
for limit in ${LIMITS:-}; do builds+=("this, --memory-limit $limit|$target/slayer-profile|--memory-limit $limit"); done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -n | sed -n "$(( (rounds + 1) / 2 ))p"; }

echo "slayer-profile on a Parquet fact table: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f", $2/1048576}' /proc/meminfo) GiB, $(date -u +%F)"
echo
printf '| %-12s | %7s | %-28s | %8s | %9s |\n' "rows" "file MB" "build" "wall s" "peak MiB"
printf '|%s|%s|%s|%s|%s|\n' "--------------" "---------" "------------------------------" "----------" "-----------"
for rows in "${sizes[@]}"; do
    file="$dir/fact_$rows.parquet"
    mb=$(( $(stat -c %s "$file") / 1000000 ))
    : > "$work/times"
    for round in $(seq "$rounds"); do
        for i in "${!builds[@]}"; do
            IFS='|' read -r label bin args <<< "${builds[$i]}"
            # shellcheck disable=SC2086 # the extra arguments are words
            /usr/bin/time -f "%e %M" -o "$work/time" "$bin" -q --no-progress $args "$file" > "$work/out.jsonl"
            echo "$i $(cat "$work/time")" >> "$work/times"
        done
    done
    for i in "${!builds[@]}"; do
        IFS='|' read -r label bin args <<< "${builds[$i]}"
        wall=$(awk -v i="$i" '$1 == i {print $2}' "$work/times" | median)
        kb=$(awk -v i="$i" '$1 == i {print $3}' "$work/times" | median)
        printf '| %12s | %7s | %-28s | %8s | %9.0f |\n' "$rows" "$mb" "$label" "$wall" "$(awk -v k="$kb" 'BEGIN {print k / 1024}')"
    done
done
