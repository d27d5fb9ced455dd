#!/usr/bin/env bash
# The query planner (`slayer-search --plan auto`, seed 002) on both benchmarks (docs/quality/planner.md):
# planner off, pseudo-relevance feedback without a reranker, PRF + the local reranker, and (BIRD)
# terms injected from the question's evidence as an agent would pass its own hints (as
# synonyms, and as anchors beside the question's words).
#
#   scripts/eval-plan.sh            BIRD dev (both catalogs, 1,534 questions) and SciFact (300)
#   scripts/eval-plan.sh --quick    300 BIRD questions on the described catalog, SciFact smoke
#
# Stores are the ones eval-schema.sh and eval-scifact.sh build (made here when missing, embedded
# once). BIRD rows: --datasource, --max-entities 50, the question alone unless the row says
# "+ evidence" (appended to the question, the unplanned way to use the hint); the median
# whole-process time of 30 one-shot searches beside each. SciFact rows: --max-memories 100, the
# wall time of 300 searches in one --batch process.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=false
[ "${1:-}" = "--quick" ] && quick=true
bird="${BIRD_DIR:-$root/../shared/data/bird-dev}"
scifact="${SCIFACT_DIR:-$root/../shared/data/beir-scifact}"
bin="${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
if [ -z "${SLAYER_BIN:-}" ]; then
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins
fi
scripts/fetch-model.sh > /dev/null
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL SLAYER_STORE SLAYER_LLM_MODEL
secs() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN{printf "%.1f", (e-s)/1e9}'; }

# name|channels|request fields|extra flags of eval_schema.py
configs=(
    'off|entities,text,dense|{}|'
    'off + evidence|entities,text,dense|{}|--evidence'
    'prf|entities,text,dense|{"plan": "auto", "rerank": "none"}|'
    'prf + local rerank|entities,text,dense|{"plan": "auto", "rerank": "local"}|'
    'injected (evidence)|entities,text,dense|{"plan": "auto", "rerank": "none"}|--inject-evidence'
    'injected (evidence) + local rerank|entities,text,dense|{"plan": "auto", "rerank": "local"}|--inject-evidence'
    'anchors (question + evidence)|entities,text,dense|{"plan": "auto", "rerank": "none"}|--inject-anchors'
    'anchors (question + evidence) + local rerank|entities,text,dense|{"plan": "auto", "rerank": "local"}|--inject-anchors'
)

work="${SLAYER_EVAL_DIR:-$root/target/eval-schema}"
mkdir -p "$work"
py="python3 scripts/eval_schema.py"
limit=""
catalogs="desc plain"
if $quick; then limit="--limit 300"; catalogs="desc"; fi
echo "BIRD dev (schema linking)"
printf '| catalog | configuration | T@1 | T@5 | T+c@5 | C@5 | C@10 | C@20 | median search |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for catalog in $catalogs; do
    store="$work/$catalog.db"
    if [ ! -f "$store" ]; then
        "$bin/slayer-index" --store "$store" -q load "$bird/catalog-$catalog.jsonl" > /dev/null
    fi
    "$bin/slayer-embed" --store "$store" -q refresh --all --format jsonl > /dev/null
    for config in "${configs[@]}"; do
        IFS='|' read -r name channels fields extra <<< "$config"
        run="plan-$catalog-${name//[^a-z]/_}"
        # shellcheck disable=SC2086
        $py requests "$bird/questions.jsonl" "$channels" --plan "$fields" $extra $limit > "$work/requests-$run.jsonl"
        "$bin/slayer-search" --store "$store" --batch "$work/requests-$run.jsonl" \
            > "$work/responses-$run.jsonl" || true
        # shellcheck disable=SC2086
        read -r _ _ metrics < <($py score "$bird/questions.jsonl" "$work/responses-$run.jsonl" $limit)
        declare -A m=()
        for kv in $metrics; do m[${kv%%=*}]=${kv#*=}; done
        # shellcheck disable=SC2086
        median=$($py latency "$bird/questions.jsonl" "$channels" "$store" "$bin/slayer-search" $extra --n 30 --plan "$fields")
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s ms |\n' "$catalog" "$name" \
            "${m[T@1]}" "${m[T@5]}" "${m[T+c@5]}" "${m[C@5]}" "${m[C@10]}" "${m[C@20]}" "$median"
        unset m
    done
done

echo
echo "SciFact (memories)"
if $quick; then work="${SLAYER_EVAL_DIR_SCIFACT:-$root/target/eval-smoke}"; else work="${SLAYER_EVAL_DIR_SCIFACT:-$root/target/eval}"; fi
store="$work/scifact.db"
if [ ! -f "$store" ]; then
    # Built where this part reads it: SLAYER_EVAL_DIR (the schema part's folder) would send
    # eval-scifact.sh elsewhere.
    if $quick; then SLAYER_EVAL_DIR="$work" SLAYER_BIN="$bin" scripts/eval-scifact.sh --smoke > /dev/null; else SLAYER_EVAL_DIR="$work" SLAYER_BIN="$bin" scripts/eval-scifact.sh > /dev/null; fi
fi
py="python3 scripts/eval_scifact.py"
qrels="$scifact/qrels/test.tsv"
limit=""
$quick && limit="--queries 20"
printf '| configuration | nDCG@10 | recall@100 | MRR@10 | 300 searches (`--batch`) |\n|---|---|---|---|---|\n'
for config in "${configs[@]}"; do
    IFS='|' read -r name channels fields extra <<< "$config"
    [ -n "$extra" ] && continue   # no evidence in SciFact: nothing to append or inject
    # shellcheck disable=SC2086
    $py requests "$scifact/queries.jsonl" "$qrels" "$channels" --plan "$fields" $limit > "$work/requests-plan.jsonl"
    s=$(date +%s%N)
    "$bin/slayer-search" --store "$store" --batch "$work/requests-plan.jsonl" > "$work/responses-plan.jsonl"
    took=$(secs "$s")
    # shellcheck disable=SC2086
    read -r ndcg recall mrr < <($py score "$qrels" "$work/responses-plan.jsonl" $limit)
    printf '| %s | %s | %s | %s | %s s |\n' "$name" "$ndcg" "$recall" "$mrr" "$took"
done
