#!/usr/bin/env bash
# Metric lookup on public semantic layers through the real binaries: does the search put the
# named measure an analyst's question asks for near the top of `entities`?
#
#   scripts/eval-metrics.sh             this build: every channel and text only
#   BASE_BIN=DIR scripts/eval-metrics.sh    also another build's binaries (e.g. main before a
#                                       change), each build importing and embedding its own
#                                       stores, in the same run, one column each
#   scripts/eval-metrics.sh --original  also the Python original (motley-slayer 1.4.1, with the
#                                       same local embedding model and without it) over the
#                                       same catalog records (scripts/eval_metrics_original.py;
#                                       its venv is made once, ~6 min per run on 2 cores)
#
# Each project of tests/fixtures/metric-eval (dbt, Cube and Apache Ossie projects, see their
# SOURCE.md) is imported with `slayer-index import <format> --datasource <project> --load` into a
# fresh store, its catalog exported to <work>/<build>/<project>/catalog.jsonl (what
# scripts/eval_metrics_original.py reads), and embedded with the local model. Every question of
# questions.jsonl runs through `slayer-search --batch` with --datasource <project> and
# max_entities 10, twice: every channel (the default) and text only (entities,text). The scores
# (scripts/eval_metrics.py: hit@1, hit@3, hit@5, MRR@10) are printed per project and overall,
# twice: ranked among every entity returned (models and columns take positions), then among the
# measures alone. Each question whose first entity is not gold is written to
# <work>/<build>/misses-<name>.txt with its gold ids, its ranks, the top 5 entities and the top
# 5 measures.
# METRIC_SET=DIR scores another question set laid out the same way: tests/fixtures/metric-heldout
# is the held-out set (issue 64), read only to report; its digest is printed and checked against
# the one docs/quality/metrics.md records.
# Work: $SLAYER_EVAL_DIR (default target/eval-metrics, target/eval-metrics-<set> for another
# set). Binaries: $SLAYER_BIN (default: built here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
original=false
[ "${1:-}" = "--original" ] && original=true
fixtures="$(cd "${METRIC_SET:-$root/tests/fixtures/metric-eval}" && pwd)"
questions="$fixtures/questions.jsonl"
set_name=$(basename "$fixtures")
default_work="$root/target/eval-metrics"
[ "$set_name" = metric-eval ] || default_work="$root/target/eval-metrics-${set_name#metric-}"
work="${SLAYER_EVAL_DIR:-$default_work}"
bin="${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
if [ -z "${SLAYER_BIN:-}" ]; then
    cargo build --release --locked -q --workspace --bins
fi
scripts/fetch-model.sh > /dev/null
python3 scripts/eval_metrics.py selftest > /dev/null
echo "question set: $fixtures, digest $(python3 scripts/eval_metrics.py digest "$fixtures")"
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL SLAYER_STORE
py="python3 scripts/eval_metrics.py"
mkdir -p "$work"

# The format of a project folder: its name's prefix (dbt_, cube_, ossie_, slayer_).
format_of() {
    case "$1" in
        dbt_*) echo dbt ;;
        cube_*) echo cube ;;
        ossie_*) echo ossie ;;
        slayer_*) echo slayer ;;
        *) echo "eval-metrics: $1: no format prefix (dbt_, cube_, ossie_, slayer_)" >&2; exit 2 ;;
    esac
}

projects=()
for dir in "$fixtures"/*/; do
    projects+=("$(basename "$dir")")
done

# evaluate LABEL BIN: import, export, embed and ask every question with one build's binaries.
evaluate() {
    local label=$1 b=$2 out="$work/$1"
    mkdir -p "$out"
    : > "$out/import.txt"
    for project in "${projects[@]}"; do
        format=$(format_of "$project")
        pwork="$out/$project"
        store="$pwork/store.db"
        rm -rf "$pwork"
        mkdir -p "$pwork"
        # Exit 1 means an object was skipped (named on stderr): the rest is imported, so go on.
        rc=0
        "$b/slayer-index" --store "$store" -q import "$format" "$fixtures/$project" \
            --datasource "$project" --load --report "$pwork/import-report.json" \
            > /dev/null 2> "$pwork/import-warnings.txt" || rc=$?
        if [ "$rc" -gt 1 ]; then
            echo "eval-metrics: $project: import $format failed (exit $rc):" >&2
            cat "$pwork/import-warnings.txt" >&2
            exit 1
        fi
        "$b/slayer-index" --store "$store" export > "$pwork/catalog.jsonl"
        "$b/slayer-embed" --store "$store" -q refresh --all --format jsonl > "$pwork/embed.jsonl"
        measures=$(python3 -c 'import json,sys; print(sum(len(r.get("measures") or []) for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "model"))' "$pwork/catalog.jsonl")
        printf '%s: %s: import %s exit %s, %s named measures, %s docs embedded\n' "$label" \
            "$project" "$format" "$rc" "$measures" \
            "$(grep -c '"embedded"' "$pwork/embed.jsonl" || true)" >> "$out/import.txt"
    done
    cat "$out/import.txt"
    # name:channels (`default` leaves the field out: every channel runs).
    for config in all:default text:entities,text; do
        name=${config%%:*}
        channels=${config#*:}
        args=()
        for project in "${projects[@]}"; do
            pwork="$out/$project"
            $py requests "$questions" "$project" "$channels" > "$pwork/requests-$name.jsonl"
            "$b/slayer-search" --store "$pwork/store.db" --batch "$pwork/requests-$name.jsonl" \
                > "$pwork/responses-$name.jsonl" || true
            args+=("$project=$pwork/responses-$name.jsonl")
        done
        $py score "$questions" "${args[@]}" --misses "$out/misses-$name.txt" \
            --json "$out/scores-$name.json" > "$out/scores-$name.md"
        tables+=("$label $name ($( [ "$channels" = default ] && echo entities,text,dense || echo "$channels"))=$out/scores-$name.json")
    done
}

tables=()
if [ -n "${BASE_BIN:-}" ]; then
    evaluate base "$BASE_BIN"
fi
evaluate this "$bin"
if $original; then
    venv="${SLAYER_ORIGINAL_VENV:-$root/target/venv-original}"
    [ -x "$venv/bin/python" ] || python3 scripts/eval_metrics_original.py setup "$venv" > /dev/null
    for emb in on off; do
        SLAYER_ORIGINAL_VENV="$venv" python3 scripts/eval_metrics_original.py run "$questions" \
            --catalog-dir "$work/this" --embeddings "$emb" --out "$work/original-$emb.jsonl" \
            --json "$work/scores-original-$emb.json" > /dev/null 2> "$work/original-$emb.log"
    done
    tables+=("original (text + dense)=$work/scores-original-on.json")
    tables+=("original (text)=$work/scores-original-off.json")
fi
echo
$py table "${tables[@]}" | tee "$work/table.md"
echo
echo "Misses (first entity not gold; with the rank among measures): $work/this/misses-all.txt, $work/this/misses-text.txt"
