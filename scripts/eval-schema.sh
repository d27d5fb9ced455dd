#!/usr/bin/env bash
# Schema linking on BIRD dev through the real binaries (see docs/quality/bird.md): does the search
# put the tables and columns a question's SQL needs near the top of `entities`?
#
#   scripts/eval-schema.sh              both catalogs, both settings, every channel set
#   scripts/eval-schema.sh --quick      the described catalog, question only, 300 questions
#   scripts/eval-schema.sh --ablations  each ranking lever off in turn (slayer-search --tuning),
#                                       all channels, on the two settings of the targets
#
# Each catalog (catalog-desc.jsonl, catalog-plain.jsonl) is loaded into a fresh store and
# embedded with the local model once (a rerun reuses the stores and embeds nothing). Every
# question runs through `slayer-search --batch` with --datasource <its database> and
# --max-entities 50, per channel set and setting (question; question + evidence); the scores are
# T@k, T+c@k and C@k as the data's README defines them (scripts/eval_schema.py), with the median
# whole-process time of 30 one-shot searches beside each row. The all-channel runs also ask for
# the schema answer (docs/spec/search.md §9.13) and score it: table, column and join-pair recall,
# its columns and tokens. Then each all-channel run again without --datasource (every store holds
# all eleven databases): routing (docs/spec/fusion.md §8.7) against the filtered search.
# Data: $BIRD_DIR (default ../shared/data/bird-dev). Work: $SLAYER_EVAL_DIR (default
# target/eval-schema). Binaries: $SLAYER_BIN (default: built here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=false
ablations=false
[ "${1:-}" = "--quick" ] && quick=true
[ "${1:-}" = "--ablations" ] && ablations=true
data="${BIRD_DIR:-$root/../shared/data/bird-dev}"
work="${SLAYER_EVAL_DIR:-$root/target/eval-schema}"
bin="${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
if [ -z "${SLAYER_BIN:-}" ]; then
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins --tests
fi
scripts/fetch-model.sh > /dev/null
python3 scripts/eval_schema.py selftest > /dev/null
mkdir -p "$work"
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL SLAYER_STORE
py="python3 scripts/eval_schema.py"
secs() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN{printf "%.1f", (e-s)/1e9}'; }

ensure_store() {
    local catalog=$1 store="$work/$1.db" s
    if [ ! -f "$store" ]; then
        "$bin/slayer-index" --store "$store" -q load "$data/catalog-$catalog.jsonl" > /dev/null
    fi
    s=$(date +%s%N)
    "$bin/slayer-embed" --store "$store" -q refresh --all --format jsonl > "$work/embed-$catalog.jsonl"
    echo "$catalog: $(grep -c '"embedded"' "$work/embed-$catalog.jsonl" || true) docs embedded in $(secs "$s") s" >> "$work/times.txt"
}

if $ablations; then
    # name|tuning: each lever of docs/spec/fusion.md §8.6 off in turn, then all of them.
    levers=(
        'defaults|{}'
        'no name field|{"name_weight": 0}'
        'no model evidence|{"model_evidence": {"models": 0}}'
        'no connecting keys|{"model_evidence": {"key_weight": 0}}'
        'no named leaves|{"model_evidence": {"question_weight": 0}}'
        'evidence weight 1 (not 2)|{"model_evidence": {"model_weight": 1}}'
        'no leaf draw on the model|{"model_evidence": {"leaf_weight": 0}}'
        'entity dense weight 1 (not 0.5)|{"entity_weights": {}}'
        'all three off|{"name_weight": 0, "model_evidence": {"models": 0}, "entity_weights": {}}'
    )
    printf '| lever | desc, question: T@5 / T+c@5 / C@10 | plain, question + evidence: T@5 / T+c@5 / C@10 |\n|---|---|---|\n'
    for lever in "${levers[@]}"; do
        name=${lever%%|*}
        tuning=${lever#*|}
        row="| $name |"
        for run in desc:question plain:evidence; do
            catalog=${run%%:*}
            evidence=""
            [ "${run#*:}" = evidence ] && evidence="--evidence"
            ensure_store "$catalog"
            # shellcheck disable=SC2086
            $py requests "$data/questions.jsonl" entities,text,dense $evidence --tuning "$tuning" \
                > "$work/ablation-requests.jsonl"
            "$bin/slayer-search" --store "$work/$catalog.db" --batch "$work/ablation-requests.jsonl" \
                > "$work/ablation-responses.jsonl" || true
            read -r _ _ metrics < <($py score "$data/questions.jsonl" "$work/ablation-responses.jsonl")
            declare -A m=()
            for kv in $metrics; do m[${kv%%=*}]=${kv#*=}; done
            row="$row ${m[T@5]} / ${m[T+c@5]} / ${m[C@10]} |"
            unset m
        done
        echo "$row"
    done
    exit 0
fi

limit=""
catalogs="desc plain"
settings="question evidence"
configs="text:entities,text dense:dense all:entities,text,dense"
if $quick; then
    limit="--limit 300"
    catalogs="desc"
    settings="question"
    configs="text:entities,text all:entities,text,dense"
fi

printf '| catalog | setting | channels | T@1 | T@3 | T@5 | T@10 | T+c@5 | C@5 | C@10 | C@20 | median search |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for catalog in $catalogs; do
    store="$work/$catalog.db"
    ensure_store "$catalog"
    for setting in $settings; do
        evidence=""
        [ "$setting" = evidence ] && evidence="--evidence"
        for config in $configs; do
            name=${config%%:*}
            channels=${config#*:}
            run="$catalog-$setting-$name"
            schema=""
            [ "$name" = all ] && schema="--schema"
            # shellcheck disable=SC2086
            $py requests "$data/questions.jsonl" "$channels" $evidence $limit $schema > "$work/requests-$run.jsonl"
            "$bin/slayer-search" --store "$store" --batch "$work/requests-$run.jsonl" \
                > "$work/responses-$run.jsonl" || true
            # shellcheck disable=SC2086
            $py score "$data/questions.jsonl" "$work/responses-$run.jsonl" $limit --by-difficulty \
                > "$work/scores-$run.txt"
            # shellcheck disable=SC2086
            median=$($py latency "$data/questions.jsonl" "$channels" "$store" "$bin/slayer-search" $evidence --n 30)
            read -r _ _ metrics < <(head -1 "$work/scores-$run.txt")
            declare -A m=()
            for kv in $metrics; do m[${kv%%=*}]=${kv#*=}; done
            printf '| %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s ms |\n' \
                "$catalog" "$setting" "$name" "$channels" "${m[T@1]}" "${m[T@3]}" "${m[T@5]}" \
                "${m[T@10]}" "${m[T+c@5]}" "${m[C@5]}" "${m[C@10]}" "${m[C@20]}" "$median"
            unset m
        done
    done
done
echo
echo "Schema answer (all channels; S-cols and S-tokens are means per question):"
printf '| catalog | setting | datasource | T@5 (flat) | C@10 (flat) | S-T | S-C | S-J | S-cols | S-tokens |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for catalog in $catalogs; do
    for setting in $settings; do
        evidence=""
        [ "$setting" = evidence ] && evidence="--evidence"
        for where in given none; do
            run="$catalog-$setting-all"
            if [ "$where" = none ]; then
                run="$catalog-$setting-all-nods"
                # shellcheck disable=SC2086
                $py requests "$data/questions.jsonl" entities,text,dense $evidence $limit --schema \
                    --no-datasource > "$work/requests-$run.jsonl"
                "$bin/slayer-search" --store "$work/$catalog.db" --batch "$work/requests-$run.jsonl" \
                    > "$work/responses-$run.jsonl" || true
                # shellcheck disable=SC2086
                $py score "$data/questions.jsonl" "$work/responses-$run.jsonl" $limit --by-difficulty \
                    > "$work/scores-$run.txt"
            fi
            read -r _ _ metrics < <(head -1 "$work/scores-$run.txt")
            declare -A m=()
            for kv in $metrics; do m[${kv%%=*}]=${kv#*=}; done
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$catalog" "$setting" \
                "$where" "${m[T@5]}" "${m[C@10]}" "${m[S-T]}" "${m[S-C]}" "${m[S-J]}" "${m[S-cols]}" \
                "${m[S-tokens]}"
            unset m
        done
    done
done
echo
echo "Per difficulty (T@5 / T+c@5 / C@10; with a schema answer, S-C / S-J), from $work/scores-*.txt:"
for f in "$work"/scores-*.txt; do
    run=$(basename "$f" .txt)
    awk -v run="${run#scores-}" '{
        split("", m); for (i = 3; i <= NF; i++) { split($i, kv, "="); m[kv[1]] = kv[2] }
        schema = ("S-C" in m) ? sprintf("; %s / %s", m["S-C"], m["S-J"]) : ""
        printf "  %-28s %-12s n=%-5s %s / %s / %s%s\n", run, $1, $2, m["T@5"], m["T+c@5"], m["C@10"], schema
    }' "$f"
done
