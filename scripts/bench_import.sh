#!/usr/bin/env bash
# Import + load time of a generated dbt project (issue 31's target: 2,000 models x 30 columns in
# at most 3 s), as a table.
#
#   scripts/bench_import.sh [MODELS] [COLUMNS]     (default 2000 x 30)
#   SLAYER_INDEX_BIN=/path/to/slayer-index scripts/bench_import.sh   (another build)
#
# Scenarios, each the median of 3 runs under GNU time (wall s, peak MiB): `import dbt` alone
# (records to /dev/null), `import dbt | load` into an empty store, `import dbt --load` into an
# empty store, and `import dbt --load` again onto the loaded store (nothing changes); the legacy
# spec and the latest spec of the same semantic layer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
models=${1:-2000}
columns=${2:-30}

# SLAYER_INDEX_BIN=PATH measures another build (an A/B: run once per build, same machine).
if [ -n "${SLAYER_INDEX_BIN:-}" ]; then
    bin=$SLAYER_INDEX_BIN
else
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins
    bin="${CARGO_TARGET_DIR:-$root/target}/release/slayer-index"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT

python3 scripts/gen_dbt.py "$work/legacy" "$models" "$columns"
python3 scripts/gen_dbt.py "$work/latest" "$models" "$columns" --latest

median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

measure() { # name command (run with $store set to a fresh path)
    local name=$1 cmd=$2 walls=() rss=() i
    for i in 1 2 3; do
        rm -rf "$work/s.db"* "$work/s.db.index"
        [ -n "${prepare:-}" ] && eval "$prepare"
        /usr/bin/time -f "%e %M" -o "$work/time" bash -c "$cmd" > /dev/null 2>&1
        read -r wall kb < <(tail -n 1 "$work/time")
        walls+=("$wall"); rss+=("$kb")
    done
    printf '| %-8s | %-34s | %6s | %8.1f |\n' "$spec" "$name" "$(median "${walls[@]}")" \
        "$(python3 -c "print($(median "${rss[@]}") / 1024)")"
}

echo "dbt project: $models models x $columns columns"
printf '| %-8s | %-34s | %6s | %8s |\n' spec scenario "wall s" "peak MiB"
printf '|----------|------------------------------------|--------|----------|\n'
for spec in legacy latest; do
    p="$work/$spec"
    s="$work/s.db"
    prepare=""
    measure "import" "'$bin' import dbt '$p' -q"
    measure "import | load" "set -o pipefail; '$bin' import dbt '$p' -q | '$bin' --store '$s' -q load"
    measure "import --load" "'$bin' --store '$s' import dbt '$p' -q --load"
    prepare="'$bin' --store '$s' import dbt '$p' -q --load > /dev/null"
    measure "import --load (unchanged, again)" "'$bin' --store '$s' import dbt '$p' -q --load"
done
